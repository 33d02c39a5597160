// The validated, normalized form of a tgv_problem that every backend consumes.
// Layout detection happens once, in validate.cpp; backends never look at raw
// strides again.
#pragma once

#include <cstdint>

namespace tgv::detail {

// Which dimension of an operand is contiguous.
//   x: K-major (rows = tokens) or MN-major (tokens contiguous)
//   W: K-major (rows = weight rows) or MN-major (weight rows contiguous)
enum class Major : uint8_t { K = 0, MN = 1 };

// A rows x K matrix per batch: element (l, r, k) lives at
//   ptr + l*batch_stride + (major == K ? r*ld + k : k*ld + r)
struct Operand {
  const void* ptr = nullptr;
  Major major = Major::K;
  int64_t ld = 0;            // stride of the non-contiguous dimension, elements
  int64_t batch_stride = 0;  // elements; 0 broadcasts one matrix over the batch
};

// out (l, m, n) lives at ptr + l*batch_stride + (row_major ? m*ld + n : n*ld + m)
struct Output {
  void* ptr = nullptr;
  bool row_major = true;
  int64_t ld = 0;
  int64_t batch_stride = 0;
};

// Element types (tgv_dtype values): inputs bf16 or fp16, out bf16, fp16 or fp32.
enum class DType : uint8_t { BF16 = 0, FP16 = 1, FP32 = 2 };
inline constexpr int64_t dtype_bytes(DType t) { return t == DType::FP32 ? 4 : 2; }

// The gated epilogues (tgv_epilogue values): W is [gate; up] along N and out
// has N/2 columns.
enum class Act : uint8_t { None = 0, SiluMul = 1, GeluTanhMul = 2 };

struct GemmDesc {
  int64_t m = 0, n = 0, k = 0, l = 0;
  Operand x;  // M x K
  Operand w;  // N x K
  const void* bias = nullptr;
  Output out;  // M x out_cols()

  DType in_type = DType::BF16;   // x, W, bias
  DType out_type = DType::BF16;  // out, residual
  Act act = Act::None;
  Output residual;  // ptr == nullptr: none; else out's orientation, its own ld and batch stride

  bool empty() const { return m == 0 || n == 0 || l == 0; }
  int64_t out_cols() const { return act == Act::None ? n : n / 2; }
  bool has_residual() const { return residual.ptr != nullptr; }
  // bf16 in and out, no residual, no gated epilogue: what every backend serves.
  bool plain() const {
    return in_type == DType::BF16 && out_type == DType::BF16 && act == Act::None && !has_residual();
  }
};

}  // namespace tgv::detail

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

struct GemmDesc {
  int64_t m = 0, n = 0, k = 0, l = 0;
  Operand x;  // M x K
  Operand w;  // N x K
  const void* bias = nullptr;
  Output out;  // M x N

  bool empty() const { return m == 0 || n == 0 || l == 0; }
};

}  // namespace tgv::detail

#include "api/validate.hpp"

#include <cstdint>
#include <limits>

#include "common/error.hpp"
#include "common/strfmt.hpp"
#include "tactics/tactics.hpp"

namespace tgv::detail {
namespace {

constexpr int64_t kElementBytes = 2;  // bf16
constexpr int64_t kAlignBytes = 16;   // TMA base and stride granule
constexpr int64_t kStrideGranule = kAlignBytes / kElementBytes;
constexpr int64_t kMaxDim = std::numeric_limits<int32_t>::max();

const char* dtype_name(int32_t dtype) {
  switch (dtype) {
    case TGV_DTYPE_BF16: return "bf16";
    case TGV_DTYPE_FP16: return "fp16";
    case TGV_DTYPE_FP32: return "fp32";
    case TGV_DTYPE_FP8_E4M3: return "fp8_e4m3";
    default: return nullptr;
  }
}

void check_size(const char* name, int64_t value) {
  if (value < 0) throw_invalid(strfmt("%s=%lld: sizes must be >= 0", name, (long long)value));
  if (value > kMaxDim)
    throw_invalid(strfmt("%s=%lld: exceeds the largest supported size %lld", name, (long long)value,
                         (long long)kMaxDim));
}

void check_pointer(const char* name, const void* ptr) {
  if (ptr == nullptr) throw_invalid(strfmt("%s is NULL", name));
  auto address = reinterpret_cast<uintptr_t>(ptr);
  if (address % kAlignBytes != 0)
    throw_invalid(strfmt("%s=%p: not 16-byte aligned (TMA and vector loads need 16-byte aligned bases)", name, ptr));
}

void check_stride(const char* name, int64_t stride) {
  if (stride < 0) throw_invalid(strfmt("%s=%lld: strides must be >= 0", name, (long long)stride));
}

// Detects the layout of a rows x k input from its two inner strides. Argument
// names are spelled out only on the error paths: this runs on every call.
Operand detect_input(const char* op, char row_dim, const void* ptr, int64_t rows, int64_t k, int64_t l,
                     int64_t stride_l, int64_t stride_r, int64_t stride_k) {
  if (stride_l < 0 || stride_r < 0 || stride_k < 0) {
    const char dim = stride_l < 0 ? 'l' : stride_r < 0 ? row_dim : 'k';
    const int64_t value = stride_l < 0 ? stride_l : stride_r < 0 ? stride_r : stride_k;
    throw_invalid(strfmt("%s_stride_%c=%lld: strides must be >= 0", op, dim, (long long)value));
  }
  Operand o;
  o.ptr = ptr;
  if (stride_k == 1 && (rows == 1 || stride_r >= k)) {
    o.major = Major::K;
    o.ld = rows == 1 ? k : stride_r;
    if (o.ld % kStrideGranule != 0)
      throw_invalid(strfmt("%s_stride_%c=%lld: the row stride of K-major %s must be a multiple of 8 elements (16 bytes)",
                           op, row_dim, (long long)stride_r, op));
  } else if (stride_r == 1 && stride_k >= rows) {
    o.major = Major::MN;
    o.ld = stride_k;
    if (o.ld % kStrideGranule != 0)
      throw_invalid(strfmt("%s_stride_k=%lld: the column stride of %c-major %s must be a multiple of 8 elements "
                           "(16 bytes)",
                           op, (long long)stride_k, row_dim, op));
  } else {
    throw_invalid(strfmt("%s strides (%s_stride_%c=%lld, %s_stride_k=%lld) match no supported layout: %s must be "
                         "K-major (%s_stride_k == 1, %s_stride_%c >= k) or %c-major (%s_stride_%c == 1, %s_stride_k >= %c)",
                         op, op, row_dim, (long long)stride_r, op, (long long)stride_k, op, op, op, row_dim, row_dim,
                         op, row_dim, op, row_dim));
  }
  o.batch_stride = l > 1 ? stride_l : 0;
  if (o.batch_stride % kStrideGranule != 0)
    throw_invalid(strfmt("%s_stride_l=%lld: batch strides of inputs must be multiples of 8 elements (16 bytes)", op,
                         (long long)stride_l));
  return o;
}

Output detect_output(const tgv_problem& p) {
  check_stride("out_stride_l", p.out_stride_l);
  check_stride("out_stride_m", p.out_stride_m);
  check_stride("out_stride_n", p.out_stride_n);
  Output o;
  o.ptr = p.out;
  if (p.out_stride_n == 1 && (p.m == 1 || p.out_stride_m >= p.n)) {
    o.row_major = true;
    o.ld = p.m == 1 ? p.n : p.out_stride_m;
  } else if (p.out_stride_m == 1 && (p.n == 1 || p.out_stride_n >= p.m)) {
    o.row_major = false;
    o.ld = p.n == 1 ? p.m : p.out_stride_n;
  } else {
    throw_invalid(strfmt("out strides (out_stride_m=%lld, out_stride_n=%lld) match no supported layout: out must be "
                         "row-major (out_stride_n == 1, out_stride_m >= n) or column-major (out_stride_m == 1, "
                         "out_stride_n >= m)",
                         (long long)p.out_stride_m, (long long)p.out_stride_n));
  }
  if (p.l > 1) {
    const int64_t rows = o.row_major ? p.m : p.n, cols = o.row_major ? p.n : p.m;
    const __int128 span = __int128(rows - 1) * o.ld + cols;  // 128 bits: a huge ld cannot wrap
    if (p.out_stride_l < span)
      throw_invalid(strfmt("out_stride_l=%lld: batches of out would overlap (one batch spans %.0f elements)",
                           (long long)p.out_stride_l, double(span)));
  }
  o.batch_stride = p.l > 1 ? p.out_stride_l : 0;
  return o;
}

struct ByteRange {
  uintptr_t begin, end;
  bool overlaps(const ByteRange& other) const { return begin < other.end && other.begin < end; }
};

// Bytes an operand can touch: from its base to its last element, inclusive.
// Computed in 128 bits: sizes below 2^31 times strides below 2^63 cannot wrap
// there, and an operand reaching past the 64-bit address space is an error.
ByteRange extent(const char* name, const void* ptr, int64_t l, int64_t stride_l, int64_t d1, int64_t stride_1,
                 int64_t d2, int64_t stride_2) {
  const __int128 last = __int128(l - 1) * stride_l + __int128(d1 - 1) * stride_1 + __int128(d2 - 1) * stride_2;
  const __int128 end = __int128(reinterpret_cast<uintptr_t>(ptr)) + (last + 1) * kElementBytes;
  if (end > __int128(UINTPTR_MAX))
    throw_invalid(strfmt("%s=%p: its strides reach past the end of the address space", name, ptr));
  return {reinterpret_cast<uintptr_t>(ptr), static_cast<uintptr_t>(end)};
}

}  // namespace

GemmDesc validate_problem(const tgv_problem& p) {
  check_size("m", p.m);
  check_size("n", p.n);
  check_size("k", p.k);
  check_size("l", p.l);
  const char* dtype = dtype_name(p.dtype);
  if (dtype == nullptr) throw_invalid(strfmt("dtype=%d is not a tgv_dtype", p.dtype));
  if (p.dtype != TGV_DTYPE_BF16)
    throw_unsupported(strfmt("dtype=%d (%s) is not supported: tgv-gemm computes bf16 only", p.dtype, dtype));

  GemmDesc d;
  d.m = p.m;
  d.n = p.n;
  d.k = p.k;
  d.l = p.l;
  if (d.empty()) return d;

  if (p.k == 0 || p.k % kStrideGranule != 0)
    throw_invalid(strfmt("k=%lld: must be a positive multiple of 8 (TMA moves rows in 16-byte units)", (long long)p.k));

  check_pointer("x", p.x);
  check_pointer("w", p.w);
  check_pointer("out", p.out);
  if (p.bias != nullptr) check_pointer("bias", p.bias);

  d.x = detect_input("x", 'm', p.x, p.m, p.k, p.l, p.x_stride_l, p.x_stride_m, p.x_stride_k);
  d.w = detect_input("w", 'n', p.w, p.n, p.k, p.l, p.w_stride_l, p.w_stride_n, p.w_stride_k);
  d.out = detect_output(p);
  d.bias = p.bias;

  const ByteRange out = extent("out", p.out, p.l, d.out.batch_stride, p.m, p.out_stride_m, p.n, p.out_stride_n);
  const ByteRange x = extent("x", p.x, p.l, d.x.batch_stride, p.m, p.x_stride_m, p.k, p.x_stride_k);
  const ByteRange w = extent("w", p.w, p.l, d.w.batch_stride, p.n, p.w_stride_n, p.k, p.w_stride_k);
  if (out.overlaps(x)) throw_invalid(strfmt("out=%p overlaps x=%p: out must not alias an input", p.out, p.x));
  if (out.overlaps(w)) throw_invalid(strfmt("out=%p overlaps w=%p: out must not alias an input", p.out, p.w));
  if (p.bias != nullptr && out.overlaps(extent("bias", p.bias, 1, 0, 1, 0, p.n, 1)))
    throw_invalid(strfmt("out=%p overlaps bias=%p: out must not alias an input", p.out, p.bias));
  return d;
}

void validate_options(const tgv_options& o, int32_t num_tactics) {
  if (o.backend != TGV_BACKEND_AUTO && o.backend != TGV_BACKEND_TGV && o.backend != TGV_BACKEND_CUBLAS)
    throw_invalid(strfmt("backend=%d is not a tgv_backend (0 auto, 1 tgv, 2 cublas)", o.backend));
  if (o.tactic < -1 || o.tactic >= num_tactics)
    throw_invalid(strfmt("tactic=%d: must be -1 (auto) or an id in [0, %d)", o.tactic, num_tactics));
  if (o.tactic >= 0 && o.backend == TGV_BACKEND_CUBLAS)
    throw_invalid(strfmt("tactic=%d names a tgv kernel, but backend=cublas", o.tactic));
  if (o.pdl != 0 && o.pdl != 1) throw_invalid(strfmt("pdl=%d: must be 0 or 1", o.pdl));
  if (o.split_k < 0 || o.split_k > kMaxSplitK)
    throw_invalid(strfmt("split_k=%d: must be 0 (auto) or a factor in [1, %d]", o.split_k, kMaxSplitK));
  if (o.split_k > 1 && o.backend == TGV_BACKEND_CUBLAS)
    throw_invalid(strfmt("split_k=%d applies to the tgv backend, but backend=cublas", o.split_k));
  if (o.stages != 0 && (o.stages < 2 || o.stages > kMaxStages))
    throw_invalid(strfmt("stages=%d: must be 0 (chosen by the library) or a pipeline depth in [2, %d]", o.stages,
                         kMaxStages));
  if (o.stages > 0 && o.backend == TGV_BACKEND_CUBLAS)
    throw_invalid(strfmt("stages=%d applies to the tgv backend, but backend=cublas", o.stages));
}

}  // namespace tgv::detail

#include "api/validate.hpp"

#include <cstdint>
#include <limits>

#include "common/error.hpp"
#include "common/strfmt.hpp"
#include "tactics/tactics.hpp"

namespace tgv::detail {
namespace {

constexpr int64_t kElementBytes = 2;  // bf16 or fp16 inputs
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

// Detects the layout of an L x M x cols result (out, or a residual laid out
// like it) from its strides.
Output detect_output(const char* op, void* ptr, int64_t m, int64_t cols, int64_t l, int64_t stride_l,
                     int64_t stride_m, int64_t stride_n) {
  if (stride_l < 0 || stride_m < 0 || stride_n < 0) {
    const char dim = stride_l < 0 ? 'l' : stride_m < 0 ? 'm' : 'n';
    const int64_t value = stride_l < 0 ? stride_l : stride_m < 0 ? stride_m : stride_n;
    throw_invalid(strfmt("%s_stride_%c=%lld: strides must be >= 0", op, dim, (long long)value));
  }
  Output o;
  o.ptr = ptr;
  if (stride_n == 1 && (m == 1 || stride_m >= cols)) {
    o.row_major = true;
    o.ld = m == 1 ? cols : stride_m;
  } else if (stride_m == 1 && (cols == 1 || stride_n >= m)) {
    o.row_major = false;
    o.ld = cols == 1 ? m : stride_n;
  } else {
    throw_invalid(strfmt("%s strides (%s_stride_m=%lld, %s_stride_n=%lld) match no supported layout: %s must be "
                         "row-major (%s_stride_n == 1, %s_stride_m >= %lld) or column-major (%s_stride_m == 1, "
                         "%s_stride_n >= m)",
                         op, op, (long long)stride_m, op, (long long)stride_n, op, op, op, (long long)cols, op, op));
  }
  if (l > 1) {
    const int64_t rows = o.row_major ? m : cols, line = o.row_major ? cols : m;
    const __int128 span = __int128(rows - 1) * o.ld + line;  // 128 bits: a huge ld cannot wrap
    if (stride_l < span)
      throw_invalid(strfmt("%s_stride_l=%lld: batches of %s would overlap (one batch spans %.0f elements)", op,
                           (long long)stride_l, op, double(span)));
  }
  o.batch_stride = l > 1 ? stride_l : 0;
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
                 int64_t d2, int64_t stride_2, int64_t element_bytes = kElementBytes) {
  const __int128 last = __int128(l - 1) * stride_l + __int128(d1 - 1) * stride_1 + __int128(d2 - 1) * stride_2;
  const __int128 end = __int128(reinterpret_cast<uintptr_t>(ptr)) + (last + 1) * element_bytes;
  if (end > __int128(UINTPTR_MAX))
    throw_invalid(strfmt("%s=%p: its strides reach past the end of the address space", name, ptr));
  return {reinterpret_cast<uintptr_t>(ptr), static_cast<uintptr_t>(end)};
}

// dtype, out_dtype and epilogue, and what they ask of n; fills d's types.
void check_types_and_epilogue(const tgv_problem& p, GemmDesc& d) {
  const char* dtype = dtype_name(p.dtype);
  if (dtype == nullptr) throw_invalid(strfmt("dtype=%d is not a tgv_dtype", p.dtype));
  if (p.dtype != TGV_DTYPE_BF16 && p.dtype != TGV_DTYPE_FP16)
    throw_unsupported(strfmt("dtype=%d (%s) is not supported for x, w and bias: tgv-gemm takes bf16 or fp16 inputs "
                             "(fp32 is an out_dtype)",
                             p.dtype, dtype));
  const char* out_dtype = dtype_name(p.out_dtype);
  if (out_dtype == nullptr) throw_invalid(strfmt("out_dtype=%d is not a tgv_dtype", p.out_dtype));
  if (p.out_dtype != TGV_DTYPE_FP32 && p.out_dtype != p.dtype)
    throw_unsupported(strfmt("out_dtype=%d (%s) with dtype=%d (%s) is not supported: out is the input type (%s) or "
                             "fp32",
                             p.out_dtype, out_dtype, p.dtype, dtype, dtype));
  d.in_type = static_cast<DType>(p.dtype);
  d.out_type = static_cast<DType>(p.out_dtype);
  if (p.epilogue != TGV_EPILOGUE_NONE && p.epilogue != TGV_EPILOGUE_SILU_MUL && p.epilogue != TGV_EPILOGUE_GELU_TANH_MUL)
    throw_invalid(strfmt("epilogue=%d is not a tgv_epilogue (0 none, 1 silu_mul, 2 gelu_tanh_mul)", p.epilogue));
  d.act = static_cast<Act>(p.epilogue);
  if (d.act == Act::None) return;
  const char* name = d.act == Act::SiluMul ? "silu_mul" : "gelu_tanh_mul";
  if (p.n % 2 != 0)
    throw_invalid(strfmt("n=%lld: epilogue=%s needs an even n (w stacks n/2 gate rows over n/2 up rows)",
                         (long long)p.n, name));
  if (p.residual != nullptr)
    throw_invalid(strfmt("residual=%p with epilogue=%s: a residual is added only without a gated epilogue",
                         p.residual, name));
}

// The residual: out's shape, dtype and orientation; out itself (same pointer,
// same strides) or disjoint from it.
Output check_residual(const tgv_problem& p, const GemmDesc& d, const ByteRange& out) {
  check_pointer("residual", p.residual);
  const int64_t cols = d.out_cols();
  Output r = detect_output("residual", const_cast<void*>(p.residual), p.m, cols, p.l, p.residual_stride_l,
                           p.residual_stride_m, p.residual_stride_n);
  if (r.row_major != d.out.row_major)
    throw_invalid(strfmt("residual strides (residual_stride_m=%lld, residual_stride_n=%lld) make it %s, but out is "
                         "%s: residual must be laid out like out",
                         (long long)p.residual_stride_m, (long long)p.residual_stride_n,
                         r.row_major ? "row-major" : "column-major", d.out.row_major ? "row-major" : "column-major"));
  const ByteRange res = extent("residual", p.residual, p.l, r.batch_stride, p.m, p.residual_stride_m, cols,
                               p.residual_stride_n, dtype_bytes(d.out_type));
  const bool same = r.ptr == d.out.ptr && r.ld == d.out.ld && r.batch_stride == d.out.batch_stride;
  if (!same && res.overlaps(out))
    throw_invalid(strfmt("residual=%p (residual_stride_l=%lld, _m=%lld, _n=%lld) partially overlaps out=%p "
                         "(out_stride_l=%lld, _m=%lld, _n=%lld): residual must be out exactly (same pointer and "
                         "strides) or not overlap it",
                         p.residual, (long long)p.residual_stride_l, (long long)p.residual_stride_m,
                         (long long)p.residual_stride_n, p.out, (long long)p.out_stride_l, (long long)p.out_stride_m,
                         (long long)p.out_stride_n));
  return r;
}

}  // namespace

GemmDesc validate_problem(const tgv_problem& p) {
  check_size("m", p.m);
  check_size("n", p.n);
  check_size("k", p.k);
  check_size("l", p.l);
  GemmDesc d;
  d.m = p.m;
  d.n = p.n;
  d.k = p.k;
  d.l = p.l;
  check_types_and_epilogue(p, d);
  if (d.empty()) return d;

  if (p.k == 0 || p.k % kStrideGranule != 0)
    throw_invalid(strfmt("k=%lld: must be a positive multiple of 8 (TMA moves rows in 16-byte units)", (long long)p.k));

  check_pointer("x", p.x);
  check_pointer("w", p.w);
  check_pointer("out", p.out);
  if (p.bias != nullptr) check_pointer("bias", p.bias);

  d.x = detect_input("x", 'm', p.x, p.m, p.k, p.l, p.x_stride_l, p.x_stride_m, p.x_stride_k);
  d.w = detect_input("w", 'n', p.w, p.n, p.k, p.l, p.w_stride_l, p.w_stride_n, p.w_stride_k);
  const int64_t cols = d.out_cols();
  d.out = detect_output("out", p.out, p.m, cols, p.l, p.out_stride_l, p.out_stride_m, p.out_stride_n);
  d.bias = p.bias;

  const int64_t out_bytes = dtype_bytes(d.out_type);
  const ByteRange out =
      extent("out", p.out, p.l, d.out.batch_stride, p.m, p.out_stride_m, cols, p.out_stride_n, out_bytes);
  const ByteRange x = extent("x", p.x, p.l, d.x.batch_stride, p.m, p.x_stride_m, p.k, p.x_stride_k);
  const ByteRange w = extent("w", p.w, p.l, d.w.batch_stride, p.n, p.w_stride_n, p.k, p.w_stride_k);
  if (out.overlaps(x)) throw_invalid(strfmt("out=%p overlaps x=%p: out must not alias an input", p.out, p.x));
  if (out.overlaps(w)) throw_invalid(strfmt("out=%p overlaps w=%p: out must not alias an input", p.out, p.w));
  if (p.bias != nullptr && out.overlaps(extent("bias", p.bias, 1, 0, 1, 0, p.n, 1)))
    throw_invalid(strfmt("out=%p overlaps bias=%p: out must not alias an input", p.out, p.bias));
  if (p.residual != nullptr) d.residual = check_residual(p, d, out);
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
  if ((o.split_k < 0 && o.split_k != kSplitKStream) || o.split_k > kMaxSplitK)
    throw_invalid(strfmt("split_k=%d: must be 0 (auto), a factor in [1, %d] or %d (TGV_SPLIT_K_STREAM, stream-K)",
                         o.split_k, kMaxSplitK, kSplitKStream));
  if ((o.split_k > 1 || o.split_k == kSplitKStream) && o.backend == TGV_BACKEND_CUBLAS)
    throw_invalid(strfmt("split_k=%d applies to the tgv backend, but backend=cublas", o.split_k));
  if (o.stages != 0 && (o.stages < 2 || o.stages > kMaxStages))
    throw_invalid(strfmt("stages=%d: must be 0 (chosen by the library) or a pipeline depth in [2, %d]", o.stages,
                         kMaxStages));
  if (o.stages > 0 && o.backend == TGV_BACKEND_CUBLAS)
    throw_invalid(strfmt("stages=%d applies to the tgv backend, but backend=cublas", o.stages));
}

}  // namespace tgv::detail

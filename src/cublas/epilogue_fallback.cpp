#include "cublas/epilogue_fallback.hpp"

#include "common/cuda_check.hpp"
#include "common/error.hpp"
#include "common/stream_buffer.hpp"
#include "common/strfmt.hpp"
#include "cublas/cublaslt_backend.hpp"

namespace tgv::detail {
namespace {

// Per (device, stream), allocated on the stream's first such call, also under
// capture (common/stream_buffer.hpp).
float* scratch_for(int device, cudaStream_t stream) {
  return static_cast<float*>(stream_buffer(StreamBufferPurpose::EpilogueScratch, device, stream, kScratchBytes));
}

// Element offset of token row m0 in an operand (K-major: whole rows).
int64_t token_offset(const Operand& o, int64_t m0) { return o.major == Major::K ? m0 * o.ld : m0; }

const void* offset(const void* p, int64_t elements, int64_t bytes) {
  return static_cast<const char*>(p) + elements * bytes;
}

}  // namespace

void cublaslt_epilogue_gemm(const GemmDesc& g, cudaStream_t stream) {
  if (g.plain()) throw Error(TGV_ERROR_INTERNAL, "cublaslt_epilogue_gemm called for a plain problem");
  // cuBLASLt alone where it can: the residual as C with beta = 1, the bias in its
  // epilogue (row-major out; its bias type is D's, so only with out of the
  // input type) or none. The rest: fp32 into scratch, then our kernel.
  const bool bias_ok = g.bias == nullptr || (g.out.row_major && g.out_type == g.in_type);
  if (g.act == Act::None && bias_ok) {
    cublaslt_gemm(g, stream);
    return;
  }
  const int64_t row_bytes = g.n * 4;
  const int64_t fits = int64_t(kScratchBytes) / row_bytes;  // tokens of fp32 x . W^T that fit
  const bool whole = g.l * g.m <= fits;
  const int64_t chunk = whole ? g.m : fits / 8 * 8;
  if (chunk == 0)
    throw_unsupported(strfmt("n=%lld: %s needs cuBLASLt's fp32 result in the library's %lld-byte scratch, and 8 "
                             "tokens of %lld rows do not fit",
                             (long long)g.n, "this epilogue", (long long)kScratchBytes, (long long)g.n));
  int device = 0;
  TGV_CUDA_CHECK(cudaGetDevice(&device));
  float* scratch = scratch_for(device, stream);

  // The raw GEMM: fp32, row-major [token][W row], packed, nothing added.
  GemmDesc raw = g;
  raw.bias = nullptr;
  raw.act = Act::None;
  raw.residual = Output{};
  raw.out_type = DType::FP32;
  raw.out.ptr = scratch;
  raw.out.row_major = true;
  raw.out.ld = g.n;
  const int64_t in_bytes = dtype_bytes(g.in_type);
  if (whole) {
    raw.out.batch_stride = g.l > 1 ? g.m * g.n : 0;
    cublaslt_gemm(raw, stream);
    launch_epilogue_apply(g, scratch, 0, g.l, 0, g.m, stream);
    return;
  }
  raw.l = 1;
  raw.out.batch_stride = 0;
  raw.x.batch_stride = raw.w.batch_stride = 0;
  for (int64_t b = 0; b < g.l; ++b) {
    for (int64_t m0 = 0; m0 < g.m; m0 += chunk) {
      raw.m = g.m - m0 < chunk ? g.m - m0 : chunk;
      raw.x.ptr = offset(g.x.ptr, b * g.x.batch_stride + token_offset(g.x, m0), in_bytes);
      raw.w.ptr = offset(g.w.ptr, b * g.w.batch_stride, in_bytes);
      cublaslt_gemm(raw, stream);
      launch_epilogue_apply(g, scratch, b, 1, m0, raw.m, stream);
    }
  }
}

}  // namespace tgv::detail

// cuBLASLt's bias epilogue adds a vector along the rows of D. A column-major
// out is D = x . W^T, whose rows are tokens, so there the bias goes in through
// C instead: out is prefilled with the broadcast bias and the GEMM runs with
// beta = 1. The sum is rounded to bf16 once, as with the epilogue.
#include <cuda_bf16.h>

#include "common/cuda_check.hpp"
#include "cublas/cublaslt_backend.hpp"

namespace tgv::detail {
namespace {

__global__ void bias_fill_col_major(__nv_bfloat16* out, const __nv_bfloat16* bias, int64_t m, int64_t n, int64_t ld,
                                    int64_t batch_stride, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i % m, rest = i / m;
    const int64_t col = rest % n, batch = rest / n;
    out[batch * batch_stride + col * ld + row] = bias[col];
  }
}

}  // namespace

void launch_bias_fill_col_major(const GemmDesc& g, cudaStream_t stream) {
  const int64_t total = g.m * g.n * g.l;
  const int threads = 256;
  const int64_t blocks = (total + threads - 1) / threads;
  bias_fill_col_major<<<static_cast<unsigned>(blocks < 65536 ? blocks : 65536), threads, 0, stream>>>(
      static_cast<__nv_bfloat16*>(g.out.ptr), static_cast<const __nv_bfloat16*>(g.bias), g.m, g.n, g.out.ld,
      g.out.batch_stride, total);
  TGV_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tgv::detail

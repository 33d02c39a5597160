// The copy of a staged cuBLASLt result into a row-major out whose rows are not
// 16-byte aligned (algo_key.hpp: staging_ld). The staging rows are aligned, so
// the GEMM can store through TMA; this kernel then pays M*N*2 bytes read and
// written, a few microseconds at decode sizes.
#include <cstdint>

#include "common/cuda_check.hpp"
#include "cublas/cublaslt_backend.hpp"

namespace tgv::detail {
namespace {

// One block row per output row; bf16 moved as raw 16-bit words (no rounding).
__global__ void staged_copy(uint16_t* out, int64_t ld_out, const uint16_t* staging, int64_t ld_staging, int64_t n) {
  const int64_t row = blockIdx.y;
  const uint16_t* src = staging + row * ld_staging;
  uint16_t* dst = out + row * ld_out;
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < n; j += int64_t(gridDim.x) * blockDim.x)
    dst[j] = src[j];
}

}  // namespace

void launch_staged_copy(void* out, int64_t ld_out, const void* staging, int64_t ld_staging, int64_t m, int64_t n,
                        cudaStream_t stream) {
  const int threads = 256;
  const int64_t per_row = (n + threads - 1) / threads;
  const dim3 grid(static_cast<unsigned>(per_row < 16 ? per_row : 16), static_cast<unsigned>(m));
  staged_copy<<<grid, threads, 0, stream>>>(static_cast<uint16_t*>(out), ld_out, static_cast<const uint16_t*>(staging),
                                            ld_staging, n);
  TGV_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tgv::detail

// The L2 eviction read of the cuBLASLt timing (lt_timing.hpp).
#include <cstdint>

#include "common/cuda_check.hpp"
#include "cublas/lt_timing.hpp"

namespace tgv::detail {
namespace {

// The buffer is all zeros, so the store never happens; the compiler cannot
// know that and keeps every load.
__global__ void l2_flush_read(const uint4* buffer, size_t count, unsigned* sink) {
  unsigned acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    const uint4 v = buffer[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = acc;
}

}  // namespace

void launch_l2_flush_read(const void* buffer, size_t bytes, cudaStream_t stream) {
  const size_t count = bytes / sizeof(uint4);
  // The sink is the buffer's first word: never written, since every word is zero.
  l2_flush_read<<<1024, 512, 0, stream>>>(static_cast<const uint4*>(buffer), count,
                                          const_cast<unsigned*>(static_cast<const unsigned*>(buffer)));
  TGV_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tgv::detail

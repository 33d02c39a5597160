#include "fill.hpp"

#include <algorithm>

#include "cuda_check.hpp"

namespace {

constexpr int kThreads = 256;
constexpr size_t kMaxBlocks = 8192;  // grid-stride past this: enough to fill any GPU

// SplitMix64's finalizer: consecutive inputs give unrelated outputs.
__device__ uint64_t mix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

__global__ void fill_uniform_bf16_kernel(__nv_bfloat16* data, size_t count, uint64_t seed, float scale) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const float unit = static_cast<float>(mix64(seed ^ mix64(i)) >> 40) * 0x1p-24f;  // [0, 1)
    data[i] = __float2bfloat16((2.0f * unit - 1.0f) * scale);
  }
}

}  // namespace

void fill_uniform_bf16(__nv_bfloat16* data, size_t count, uint64_t seed, float scale, cudaStream_t stream) {
  if (count == 0) return;
  const size_t blocks = std::min(kMaxBlocks, (count + kThreads - 1) / kThreads);
  fill_uniform_bf16_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(data, count, seed, scale);
  CUDA_CHECK_LAUNCH("fill_uniform_bf16_kernel");
}

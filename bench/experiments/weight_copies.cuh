// Rotating copies of a weight of `bytes` for the read experiments (row_segments.cu,
// balance.cu): at least four L2s in all, so every timed read comes from HBM, each
// copy filled with distinct nonzero words.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "../cuda_check.hpp"

__global__ void fill_words_kernel(uint4* w, size_t count, uint32_t seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed ^ uint32_t(i >> 32) * 40503u;
    w[i] = make_uint4(h, h * 747796405u, h ^ 0x9e3779b9u, h + seed);
  }
}

inline std::vector<uint4*> weight_copies(const cudaDeviceProp& prop, size_t bytes) {
  const int copies = int(std::max<size_t>(2, (4 * size_t(prop.l2CacheSize) + bytes - 1) / bytes));
  std::vector<uint4*> w(copies);
  for (int c = 0; c < copies; ++c) {
    CUDA_CHECK(cudaMalloc(&w[c], bytes));
    fill_words_kernel<<<4 * prop.multiProcessorCount, 256>>>(w[c], bytes / 16, 12345u + c);
  }
  return w;
}

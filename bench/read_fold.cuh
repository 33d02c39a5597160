// Reads that no compiler can drop: every 16-byte word loaded feeds an XOR that is
// written to memory. Shared by the read-bandwidth probe and the stream floor.
#pragma once

#include <cstddef>
#include <cstdint>

__device__ __forceinline__ uint32_t fold(uint4 v) { return v.x ^ v.y ^ v.z ^ v.w; }

// XOR of data[first], data[first + stride], ... below `end`, kUnroll independent
// loads in flight per thread: DRAM latency is covered by loads in flight, not threads.
template <int kUnroll>
__device__ __forceinline__ uint32_t xor_strided(const uint4* __restrict__ data, size_t first, size_t end,
                                                size_t stride) {
  uint32_t acc = 0;
  size_t i = first;
  for (; i + (kUnroll - 1) * stride < end; i += kUnroll * stride) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) v[u] = data[i + u * stride];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc ^= fold(v[u]);
  }
  for (; i < end; i += stride) acc ^= fold(data[i]);
  return acc;
}

// One atomic per warp: the whole warp's XOR into *sink. Call with every lane active.
__device__ __forceinline__ void xor_into(uint32_t* sink, uint32_t acc) {
  for (int offset = 16; offset > 0; offset /= 2) acc ^= __shfl_xor_sync(0xffffffffu, acc, offset);
  if (threadIdx.x % 32 == 0) atomicXor(sink, acc);
}

// Grid-stride XOR of `count` words into *sink: the read-bandwidth probe, and the
// reference the stream floor kernel's XOR is checked against.
template <int kUnroll>
__global__ void xor_grid_stride_kernel(const uint4* __restrict__ data, size_t count, uint32_t* sink) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  xor_into(sink, xor_strided<kUnroll>(data, static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x, count, stride));
}

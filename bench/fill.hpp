// Pseudo-random bf16 fill on the device, without curand: element i is a hash of
// (seed, i), so a buffer's contents depend only on its seed and size.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

// Every element ~U(-scale, scale).
void fill_uniform_bf16(__nv_bfloat16* data, size_t count, uint64_t seed, float scale, cudaStream_t stream);

// row-segments (perf-notes §37): does the H200's HBM3e stream a weight slower when
// each step reads a short run from each of many rows, the way our GEMM's stages
// do (64 rows x 256 contiguous bytes per stage at cta_k = 128), than when it
// reads long contiguous runs (the stream floor)? No MMA, no TMA: plain 16-byte
// loads in the order a stage walk would issue them.
//
//   row-segments [N K]      (default 28672 4096, the Llama-3.1-8B gate_up weight)
//
// CTA c takes the 64-row slabs c, c + grid, ... of W (N x K bf16, row-major);
// within a slab it walks K in steps of S bytes, each step S bytes of each of the
// 64 rows (S = the row's whole length: the slab contiguous). "rotated": CTA c
// starts its walk at step (7 c) mod steps and wraps. "contiguous": CTA c reads
// [c, c + 1) / grid of the whole weight as one run (the stream floor's order).
// Every variant XORs every word of W once; the XORs must agree. Times: the
// median over 5 rounds of 20 back-to-back kernels over rotating copies of W
// (>= 4x L2 in all), us per kernel, and the bandwidth that implies.
// Build: bench/experiments/row-segments.sh (here), run on the device.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../cuda_check.hpp"
#include "../read_fold.cuh"
#include "weight_copies.cuh"

constexpr int kThreads = 512;
constexpr int kUnroll = 8;  // 512 x 8 x 16 B = 64 KB in flight per SM
constexpr int kSlabRows = 64;

// Word j of a slab's walk (words of 16 B): step j / (64 seg_words), within it
// row-major over 64 rows x seg_words (a power of two: shifts, not divisions,
// which would bound the loop by the ALUs). row_words: a row's words; rot: the
// first step. log_sw = log2(seg_words).
__device__ __forceinline__ uint32_t slab_word(uint32_t j, int log_sw, uint32_t row_words, uint32_t steps,
                                              uint32_t rot) {
  const int log_step = log_sw + 6;  // 64 rows
  uint32_t s = (j >> log_step) + rot;
  if (s >= steps) s -= steps;
  const uint32_t within = j & ((1u << log_step) - 1);
  return (within >> log_sw) * row_words + (s << log_sw) + (within & ((1u << log_sw) - 1));
}

// log_sw < 0: each slab read as one contiguous run (its rows in order).
__global__ void __launch_bounds__(kThreads, 1) slabs_kernel(const uint4* __restrict__ w, int slabs, int row_words,
                                                         int log_sw, int rotate, uint32_t* sink) {
  const uint32_t steps = log_sw < 0 ? 1 : uint32_t(row_words) >> log_sw;
  const uint32_t slab_size = uint32_t(kSlabRows) * row_words;
  uint32_t acc = 0;
  for (int slab = blockIdx.x; slab < slabs; slab += gridDim.x) {
    const uint4* base = w + size_t(slab) * slab_size;
    const uint32_t rot = rotate ? uint32_t((7ull * blockIdx.x) % steps) : 0;
    auto at = [&](uint32_t j) { return log_sw < 0 ? j : slab_word(j, log_sw, row_words, steps, rot); };
    uint32_t j = threadIdx.x;
    for (; j + (kUnroll - 1) * kThreads < slab_size; j += kUnroll * kThreads) {
      uint4 v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) v[u] = base[at(j + u * kThreads)];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) acc ^= fold(v[u]);
    }
    for (; j < slab_size; j += kThreads) acc ^= fold(base[at(j)]);
  }
  xor_into(sink, acc);
}

__global__ void __launch_bounds__(kThreads, 1) contiguous_kernel(const uint4* __restrict__ w, size_t count,
                                                              uint32_t* sink) {
  const size_t begin = count * blockIdx.x / gridDim.x, end = count * (blockIdx.x + 1) / gridDim.x;
  xor_into(sink, xor_strided<kUnroll>(w, begin + threadIdx.x, end, kThreads));
}

int main(int argc, char** argv) {
  const long long n = argc > 2 ? std::atoll(argv[1]) : 28672, k = argc > 2 ? std::atoll(argv[2]) : 4096;
  if (n % kSlabRows != 0 || (k * 2) % 4096 != 0) {
    std::fprintf(stderr, "row-segments: N must be a multiple of 64 and K of 2048 (the widest step, 4 KB)\n");
    return 2;
  }
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const size_t bytes = size_t(n) * k * 2, count = bytes / 16;
  const std::vector<uint4*> w = weight_copies(prop, bytes);
  const int copies = int(w.size());
  uint32_t* sink = nullptr;
  CUDA_CHECK(cudaMalloc(&sink, sizeof(uint32_t)));
  const int grid = prop.multiProcessorCount, slabs = int(n / kSlabRows), row_words = int(k * 2 / 16);
  std::printf("# row-segments | %s | %d SMs | W %lld x %lld bf16 (%.1f MB), %d copies\n", prop.name, grid, n, k,
              bytes / 1e6, copies);
  std::printf("%-26s %10s %10s %12s\n", "variant", "us", "GB/s", "xor");
  struct Variant {
    const char* name;
    int seg_bytes;  // 0: contiguous
    int rotate;
  };
  const Variant variants[] = {{"contiguous", 0, 0},          {"slabs S=128 B", 128, 0},   {"slabs S=256 B", 256, 0},
                              {"slabs S=256 B rotated", 256, 1}, {"slabs S=512 B", 512, 0}, {"slabs S=1 KB", 1024, 0},
                              {"slabs S=2 KB", 2048, 0},      {"slabs S=4 KB", 4096, 0},   {"slabs S=whole row", -1, 0}};
  uint32_t reference = 0;
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  for (const Variant& v : variants) {
    int log_sw = -1;  // whole rows
    if (v.seg_bytes > 0)
      for (log_sw = 0; (16 << log_sw) < v.seg_bytes;) ++log_sw;
    auto launch = [&](int call) {
      if (v.seg_bytes == 0)
        contiguous_kernel<<<grid, kThreads>>>(w[call % copies], count, sink);
      else
        slabs_kernel<<<grid, kThreads>>>(w[call % copies], slabs, row_words, log_sw, v.rotate, sink);
    };
    // The XOR of copy 0, read once: every variant must agree with the first.
    CUDA_CHECK(cudaMemset(sink, 0, sizeof(uint32_t)));
    launch(0);
    CUDA_CHECK_LAUNCH("row-segments kernel");
    uint32_t x = 0;
    CUDA_CHECK(cudaMemcpy(&x, sink, sizeof(uint32_t), cudaMemcpyDeviceToHost));
    if (v.seg_bytes == 0) reference = x;
    std::vector<float> us;
    for (int round = 0; round < 5; ++round) {
      CUDA_CHECK(cudaEventRecord(start));
      for (int call = 0; call < 20; ++call) launch(call + 1);
      CUDA_CHECK(cudaEventRecord(stop));
      CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      us.push_back(ms * 1e3f / 20);
    }
    std::sort(us.begin(), us.end());
    std::printf("%-26s %10.2f %10.0f %12s\n", v.name, us[2], bytes / (us[2] * 1e3), x == reference ? "ok" : "MISMATCH");
  }
  return 0;
}

// balance (perf-notes §54): does a one-wave weight read end sooner when the SMs
// claim its pieces as they go than when each takes an equal share?
//
// tgv-trace (perf-notes §54) shows the CTAs of a one-wave GEMM streaming equal
// weight slices at per-SM rates up to 1.3x apart, the same SMs slow replay after
// replay: the grid ends with its slowest SM while the rest idle. Here without the
// GEMM (plain 16-byte loads, as the stream floor): G CTAs read W (N x K bf16)
//   static      CTA c reads the contiguous [c, c + 1) / G of W (the stream floor,
//               and what a split-1 GEMM grid of G tiles does)
//   dynamic U   every CTA claims U-byte pieces from a counter in global memory
//               (atomicAdd, the next claim in flight while it reads the current
//               piece) until W is spent: fast SMs take more pieces
// Every variant XORs every word of W once; the XORs must agree. Times: the median
// over 5 rounds of 20 back-to-back kernels over rotating copies of W (>= 4x L2),
// us per kernel, and the bandwidth that implies.
//
//   balance N K G...     (default 6144 4096 96 132: the Llama-3.1-8B qkv weight)
// Build: bench/experiments/balance.sh (here), run on the device.
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

__global__ void __launch_bounds__(kThreads, 1) static_kernel(const uint4* __restrict__ w, size_t count,
                                                          uint32_t* sink) {
  const size_t begin = count * blockIdx.x / gridDim.x, end = count * (blockIdx.x + 1) / gridDim.x;
  xor_into(sink, xor_strided<kUnroll>(w, begin + threadIdx.x, end, kThreads));
}

// counter: zero before the launch. The CTA reads a piece as the static kernel
// reads its share (64 KB per unrolled step); thread 0 claims the next piece
// before the current one's reads, so the atomic's latency hides behind them.
__global__ void __launch_bounds__(kThreads, 1) dynamic_kernel(const uint4* __restrict__ w, size_t count,
                                                           uint32_t piece_words, unsigned* counter,
                                                           uint32_t* sink) {
  __shared__ unsigned claimed[2];
  const unsigned pieces = unsigned((count + piece_words - 1) / piece_words);
  if (threadIdx.x == 0) claimed[0] = atomicAdd(counter, 1u);
  __syncthreads();
  uint32_t acc = 0;
  unsigned cur = claimed[0];
  for (int i = 0; cur < pieces; ++i) {
    // Slot (i + 1) & 1 was last read two barriers ago.
    if (threadIdx.x == 0) claimed[(i + 1) & 1] = atomicAdd(counter, 1u);
    const size_t begin = size_t(cur) * piece_words;
    const size_t end = begin + piece_words < count ? begin + piece_words : count;
    acc ^= xor_strided<kUnroll>(w, begin + threadIdx.x, end, kThreads);
    __syncthreads();
    cur = claimed[(i + 1) & 1];
  }
  xor_into(sink, acc);
}

int main(int argc, char** argv) {
  const long long n = argc > 2 ? std::atoll(argv[1]) : 6144, k = argc > 2 ? std::atoll(argv[2]) : 4096;
  std::vector<int> grids;
  for (int a = 3; a < argc; ++a) grids.push_back(std::atoi(argv[a]));
  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  if (grids.empty()) grids = {96, prop.multiProcessorCount};
  const size_t bytes = size_t(n) * k * 2, count = bytes / 16;
  const std::vector<uint4*> w = weight_copies(prop, bytes);
  const int copies = int(w.size());
  uint32_t* sink = nullptr;
  CUDA_CHECK(cudaMalloc(&sink, sizeof(uint32_t)));
  constexpr int kCalls = 20, kRounds = 5;
  unsigned* counters = nullptr;  // one per call of a round, zeroed before the round
  CUDA_CHECK(cudaMalloc(&counters, (kCalls + 1) * sizeof(unsigned)));
  std::printf("# balance | %s | %d SMs | W %lld x %lld bf16 (%.1f MB), %d copies\n", prop.name,
              prop.multiProcessorCount, n, k, bytes / 1e6, copies);
  std::printf("%-6s %-22s %10s %10s %12s\n", "grid", "variant", "us", "GB/s", "xor");
  cudaEvent_t start, stop;
  CUDA_CHECK(cudaEventCreate(&start));
  CUDA_CHECK(cudaEventCreate(&stop));
  const int piece_kb[] = {0, 64, 128, 256, 512};  // 0: static
  uint32_t reference = 0;
  bool have_reference = false;
  for (int grid : grids) {
    for (int kb : piece_kb) {
      const uint32_t piece_words = uint32_t(kb) * 1024 / 16;
      auto launch = [&](int call, unsigned* counter) {
        if (kb == 0)
          static_kernel<<<grid, kThreads>>>(w[call % copies], count, sink);
        else
          dynamic_kernel<<<grid, kThreads>>>(w[call % copies], count, piece_words, counter, sink);
      };
      CUDA_CHECK(cudaMemset(sink, 0, sizeof(uint32_t)));
      CUDA_CHECK(cudaMemset(counters, 0, (kCalls + 1) * sizeof(unsigned)));
      launch(0, counters + kCalls);
      CUDA_CHECK_LAUNCH("balance kernel");
      uint32_t x = 0;
      CUDA_CHECK(cudaMemcpy(&x, sink, sizeof(uint32_t), cudaMemcpyDeviceToHost));
      if (!have_reference) reference = x, have_reference = true;
      std::vector<float> us;
      for (int round = 0; round < kRounds; ++round) {
        CUDA_CHECK(cudaMemset(counters, 0, (kCalls + 1) * sizeof(unsigned)));
        CUDA_CHECK(cudaEventRecord(start));
        for (int call = 0; call < kCalls; ++call) launch(call + 1, counters + call);
        CUDA_CHECK(cudaEventRecord(stop));
        CUDA_CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
        us.push_back(ms * 1e3f / kCalls);
      }
      std::sort(us.begin(), us.end());
      char name[32];
      if (kb == 0)
        std::snprintf(name, sizeof name, "static");
      else
        std::snprintf(name, sizeof name, "dynamic %d KB/CTA", kb);
      std::printf("%-6d %-22s %10.2f %10.0f %12s\n", grid, name, us[kRounds / 2], bytes / (us[kRounds / 2] * 1e3),
                  x == reference ? "ok" : "MISMATCH");
    }
  }
  return 0;
}

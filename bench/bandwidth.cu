#include "bandwidth.hpp"

#include <cstdint>

#include "cuda_check.hpp"
#include "fill.hpp"
#include "read_fold.cuh"
#include "timing.hpp"

namespace {

constexpr int kThreads = 256;
constexpr int kUnroll = 4;  // independent loads in flight per thread, to cover DRAM latency
constexpr int kRuns = 15;

}  // namespace

double measure_read_bandwidth(size_t bytes, cudaStream_t stream) {
  const size_t count = bytes / sizeof(uint4);
  uint4* data = nullptr;
  uint32_t* sink = nullptr;
  CUDA_CHECK(cudaMalloc(&data, count * sizeof(uint4)));
  CUDA_CHECK(cudaMalloc(&sink, sizeof(uint32_t)));
  // Fresh allocations read back as zeros; read real data, as the GEMMs do.
  fill_uniform_bf16(reinterpret_cast<__nv_bfloat16*>(data), count * sizeof(uint4) / sizeof(__nv_bfloat16),
                    0x5EED0001, 1.0f, stream);
  CUDA_CHECK(cudaMemsetAsync(sink, 0, sizeof(uint32_t), stream));

  int device = 0, sms = 0, blocks_per_sm = 0;
  CUDA_CHECK(cudaGetDevice(&device));
  CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  CUDA_CHECK(
      cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks_per_sm, xor_grid_stride_kernel<kUnroll>, kThreads, 0));
  const int grid = sms * blocks_per_sm;

  const auto launch = [&] {
    xor_grid_stride_kernel<kUnroll><<<grid, kThreads, 0, stream>>>(data, count, sink);
    CUDA_CHECK_LAUNCH("xor_grid_stride_kernel");
  };
  launch();  // warm-up: module load, clocks
  const double ms = median(time_each(stream, kRuns, launch));

  CUDA_CHECK(cudaFree(sink));
  CUDA_CHECK(cudaFree(data));
  return static_cast<double>(count * sizeof(uint4)) / (ms * 1e-3) / 1e9;
}

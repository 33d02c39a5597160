#include "host_overhead.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "cuda_check.hpp"

double host_us_per_call(const RotatingBuffers& buffers, int64_t m, const tgv::Options& options, cudaStream_t stream,
                        int calls, int rounds) {
  const tgv::Problem problem = buffers.problem(0, m);
  const tgv_options c_options = options.to_c();
  std::vector<double> samples;
  for (int r = 0; r < rounds; ++r) {
    CUDA_CHECK(cudaStreamSynchronize(stream));
    const auto start = std::chrono::steady_clock::now();
    int failed = 0;
    for (int i = 0; i < calls; ++i) failed += tgv_gemm(&problem, &c_options, stream) != TGV_SUCCESS;
    const auto stop = std::chrono::steady_clock::now();
    if (failed) return -1.0;
    samples.push_back(std::chrono::duration<double, std::micro>(stop - start).count() / calls);
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return samples[samples.size() / 2];
}

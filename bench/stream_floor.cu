#include "stream_floor.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cuda_check.hpp"
#include "pdl_launch.hpp"
#include "read_fold.cuh"
#include "spacer.hpp"
#include "timing.hpp"

namespace {

// 512 threads x 8 loads of 16 B: 64 KB in flight per SM, above the ~40 KB that
// one SM's share of HBM bandwidth times DRAM latency (~1 us) needs.
constexpr int kThreads = 512;
constexpr int kUnroll = 8;

// CTA b reads words [b * count / grid, (b + 1) * count / grid): every SM the same
// bytes, whatever N and K are. The PDL protocol is the GEMM's: the weight does not
// depend on the previous kernel, so it streams before griddepcontrol.wait; the
// next kernel may launch once this CTA's loads are issued; only the output, the
// XOR in *sink, waits for the previous kernel (it stands for the GEMM's x and out).
// Without the PDL attribute both griddepcontrol instructions are no-ops.
__global__ void __launch_bounds__(kThreads, 1) stream_floor_kernel(const uint4* __restrict__ w, size_t count,
                                                                uint32_t* sink) {
  const size_t begin = count * blockIdx.x / gridDim.x;
  const size_t end = count * (blockIdx.x + 1) / gridDim.x;
  const uint32_t acc = xor_strided<kUnroll>(w, begin + threadIdx.x, end, kThreads);
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  asm volatile("griddepcontrol.wait;" ::: "memory");
  xor_into(sink, acc);
}

cudaError_t launch(const uint4* w, size_t count, uint32_t* sink, int sm_count, bool pdl, cudaStream_t stream) {
  return launch_maybe_pdl(stream_floor_kernel, dim3(static_cast<unsigned>(sm_count)), dim3(kThreads), pdl, stream, w,
                          count, sink);
}

}  // namespace

StreamFloor measure_stream_floor(const RotatingBuffers& buffers, int calls, int reps, int sm_count,
                                 cudaStream_t stream, const Spacer* spacer) {
  // K % 8 == 0 for every shape the API takes, so a weight is whole 16-byte words.
  const size_t count = static_cast<size_t>(buffers.n() * buffers.k()) * sizeof(__nv_bfloat16) / sizeof(uint4);
  uint32_t* sink = nullptr;  // [0]: the floor kernel's XOR, [1]: the reference's
  CUDA_CHECK(cudaMalloc(&sink, 2 * sizeof(uint32_t)));
  CUDA_CHECK(cudaMemsetAsync(sink, 0, 2 * sizeof(uint32_t), stream));
  const auto weight = [&](int call) { return reinterpret_cast<const uint4*>(buffers.w(call % buffers.sets())); };

  // Once, outside any graph: module load, a launch error reported as itself, and
  // the check that the timed kernel reads every word of the weight exactly once
  // (the same XOR by a grid-stride traversal: a word read twice cancels, one
  // skipped is missing).
  CUDA_CHECK(launch(weight(0), count, sink, sm_count, true, stream));
  xor_grid_stride_kernel<4><<<2 * sm_count, 256, 0, stream>>>(weight(0), count, sink + 1);
  CUDA_CHECK_LAUNCH("xor_grid_stride_kernel");
  uint32_t folded[2] = {0, 0};
  CUDA_CHECK(cudaMemcpyAsync(folded, sink, sizeof(folded), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  if (folded[0] != folded[1]) {
    std::fprintf(stderr,
                 "\ntgv-bench: stream floor N=%lld K=%lld: the kernel's XOR of W is %08x, the reference's %08x: "
                 "it did not read every word exactly once\n",
                 static_cast<long long>(buffers.n()), static_cast<long long>(buffers.k()), folded[0], folded[1]);
    std::exit(1);
  }

  double us[2] = {0, 0};
  for (const bool pdl : {true, false}) {
    const GraphTiming t = time_graph(stream, calls, reps, [&](int call) {
      const cudaError_t e = launch(weight(call), count, sink, sm_count, pdl, stream);
      if (e == cudaSuccess && spacer != nullptr) spacer->launch(stream);
      return e == cudaSuccess ? std::string() : std::string("stream_floor_kernel: ") + cudaGetErrorString(e);
    });
    if (!t.error.empty()) {
      std::fprintf(stderr, "\ntgv-bench: stream floor: %s\n", t.error.c_str());
      std::exit(1);
    }
    us[pdl ? 0 : 1] = t.median_ms * 1e3 / calls - (spacer != nullptr ? spacer->us_alone() : 0.0);
  }
  CUDA_CHECK(cudaFree(sink));
  return {us[0], us[1]};
}

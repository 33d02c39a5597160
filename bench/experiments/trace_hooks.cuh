// What the trace experiments (trace.cu, layer_trace.cu) share: the SM90
// kernel's trace points recorded per CTA (a Hooks type, see
// src/kernels/sm90/hooks.cuh), their inputs, and a CUDA graph's replay time.
// Never part of the library.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/cuda_check.hpp"
#include "kernels/sm90/hooks.cuh"

namespace tgv::trace {

// One record per CTA: globaltimer (ns, comparable across SMs) at entry and
// exit, and the SM's clock64 at each point (finer, comparable within the CTA).
enum TraceSlot : int {
  kTraceEntryNs,
  kTraceExitNs,
  kTraceEntryClk,
  kTraceFirstIssueClk,  // the W producer's first TMA load
  kTraceLastIssueClk,   // after its last, just before launch_dependents
  kTraceFirstFullClk,   // the first stage has landed (consumer 0)
  kTraceLastFullClk,    // the last stage has landed (consumer 0)
  kTraceExitClk,
  kTraceSmid,
  kTraceSlots
};

struct TraceHooks {
  uint64_t* trace;  // kTraceSlots words per CTA
  bool hints;       // the library's L2 policies, or none

  __device__ uint64_t w_hint() const {
    return hints ? kernels::sm90::NoHooks::w_hint() : uint64_t(cute::TMA::CacheHintSm90::EVICT_NORMAL);
  }
  __device__ uint64_t x_hint() const {
    return hints ? kernels::sm90::NoHooks::x_hint() : uint64_t(cute::TMA::CacheHintSm90::EVICT_NORMAL);
  }
  __device__ void point(kernels::sm90::TracePoint point) const {
    using namespace kernels::sm90;
    const uint64_t cta = (uint64_t(blockIdx.z) * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    uint64_t* rec = trace + cta * kTraceSlots;
    uint64_t ns;
    switch (point) {
      case kTraceEntry:
      case kTraceExit: {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
        const bool entry = point == kTraceEntry;
        rec[entry ? kTraceEntryNs : kTraceExitNs] = ns;
        rec[entry ? kTraceEntryClk : kTraceExitClk] = clock64();
        if (entry) {
          uint32_t smid;
          asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
          rec[kTraceSmid] = smid;
        }
        break;
      }
      case kTraceFirstIssue: rec[kTraceFirstIssueClk] = clock64(); break;
      case kTraceLastIssue: rec[kTraceLastIssueClk] = clock64(); break;
      case kTraceFirstFull: rec[kTraceFirstFullClk] = clock64(); break;
      case kTraceLastFull: rec[kTraceLastFullClk] = clock64(); break;
    }
  }
};

// A kernel of one thread, launched without PDL between GEMMs: a norm's place in a model.
__global__ void spacer_kernel(int* counter) { *counter += 1; }

// Nonzero values in [-1000, 1000] * scale, from a hash of the index and seed.
__global__ void fill_bf16(__nv_bfloat16* p, size_t n, uint32_t seed, float scale) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    uint32_t h = uint32_t(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    p[i] = __float2bfloat16((int(h % 2001) - 1000) * scale);
  }
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

// `count` calls of enqueue(i) captured in one CUDA graph, replayed 7 times (each
// right after a replay of `before`, when given): us per call of each replay.
template <class Enqueue>
std::vector<double> replay_us(cudaStream_t stream, int count, Enqueue enqueue, cudaGraphExec_t before = nullptr) {
  cudaGraph_t graph;
  TGV_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < count; ++i) enqueue(i);
  TGV_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  TGV_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t e0, e1;
  TGV_CUDA_CHECK(cudaEventCreate(&e0));
  TGV_CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<double> us;
  for (int r = 0; r < 7; ++r) {
    if (before != nullptr) TGV_CUDA_CHECK(cudaGraphLaunch(before, stream));
    TGV_CUDA_CHECK(cudaEventRecord(e0, stream));
    TGV_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    TGV_CUDA_CHECK(cudaEventRecord(e1, stream));
    TGV_CUDA_CHECK(cudaEventSynchronize(e1));
    float ms;
    TGV_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
    us.push_back(ms * 1e3 / count);
  }
  return us;
}

}  // namespace tgv::trace

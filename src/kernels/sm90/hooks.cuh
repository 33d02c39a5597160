// What an experiment may observe or vary in the SM90 kernel without a field in
// its Params or a branch in its body: timestamps at fixed points of the
// protocol, and the L2 policy of the TMA loads. The kernel takes a Hooks value;
// the library's is NoHooks (every point compiles to nothing, the policies are
// constants), bench/experiments/trace.cu instantiates its own.
#pragma once

#include <cute/arch/copy_sm90_tma.hpp>

#include <cstdint>

namespace tgv::kernels::sm90 {

// The points a Hooks type is told about.
enum TracePoint : int {
  kTraceEntry,       // thread 0, before the barriers are initialized
  kTraceFirstIssue,  // the W producer, before its first TMA load
  kTraceLastIssue,   // the W producer, after its last, before launch_dependents
  kTraceFirstFull,   // consumer thread 0: the first stage has landed
  kTraceLastFull,    // consumer thread 0: the last stage has landed
  kTraceExit,        // consumer thread 0, after its epilogue (or its split-K hand-off)
};

struct NoHooks {
  // Each weight byte is read once: let it leave L2 first. Every CTA reads the
  // same activations: keep them (perf-notes §6).
  __device__ static constexpr uint64_t w_hint() {
    return static_cast<uint64_t>(cute::TMA::CacheHintSm90::EVICT_FIRST);
  }
  __device__ static constexpr uint64_t x_hint() {
    return static_cast<uint64_t>(cute::TMA::CacheHintSm90::EVICT_LAST);
  }
  __device__ void point(TracePoint) const {}
};

}  // namespace tgv::kernels::sm90

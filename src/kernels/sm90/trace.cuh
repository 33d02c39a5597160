// Per-CTA timestamps of the SM90 kernel, for experiment builds only
// (bench/experiments/trace.cu defines TGV_TRACE; the library never does, and
// then every trace point compiles to nothing). They answer where a GEMM's
// time goes that the weight stream does not explain: launch skew across SMs,
// the first load's latency, the epilogue, the overlap of PDL neighbours.
#pragma once

#include <cstdint>

namespace tgv::kernels::sm90 {

// One record per CTA: globaltimer (ns, comparable across SMs) at entry and
// exit, and the SM's clock64 at each step (finer, comparable within the CTA).
enum TraceSlot : int {
  kTraceEntryNs,
  kTraceExitNs,
  kTraceEntryClk,
  kTraceFirstIssueClk,  // the W producer's first TMA load
  kTraceLastIssueClk,   // its last, just before launch_dependents
  kTraceFirstFullClk,   // the first stage has landed (consumer 0)
  kTraceLastFullClk,    // the last stage has landed (consumer 0)
  kTraceExitClk,
  kTraceSmid,
  kTraceSlots
};

__device__ __forceinline__ uint64_t trace_globaltimer() {
  uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ void trace_point(uint64_t* trace, TraceSlot slot) {
  if (trace == nullptr) return;
  const uint64_t cta = (uint64_t(blockIdx.z) * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  uint64_t* rec = trace + cta * kTraceSlots;
  if (slot == kTraceEntryNs || slot == kTraceExitNs) {
    rec[slot] = trace_globaltimer();
    rec[slot == kTraceEntryNs ? kTraceEntryClk : kTraceExitClk] = clock64();
    if (slot == kTraceEntryNs) {
      uint32_t smid;
      asm volatile("mov.u32 %0, %%smid;" : "=r"(smid));
      rec[kTraceSmid] = smid;
    }
  } else {
    rec[slot] = clock64();
  }
}

}  // namespace tgv::kernels::sm90

// The stream-K fix-up's global memory: fp32 partial tiles and per-tile arrival
// counters, one workspace per (device, stream), as cuBLASLt's: two streams
// running stream-K GEMMs at once (two-batch overlap) must not share counters.
// Kernels on one stream never overlap in it, also under PDL: a kernel touches
// it only after griddepcontrol.wait, i.e. after its predecessor completed.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace tgv::detail {

struct StreamKWorkspace {
  float* partials = nullptr;     // 2 slots per SM, kStreamKMaxTileFloats each
  uint32_t* counters = nullptr;  // kStreamKMaxTiles, zero between kernels
};

// Allocated and zeroed on the stream's first stream-K call, also when that
// call is being captured (relaxed capture mode, on a private stream). The
// kernel returns every counter it raises to zero, so the workspace stays
// ready for the next call, eager or replayed from a graph.
StreamKWorkspace stream_k_workspace(int device, int num_sms, cudaStream_t stream);

}  // namespace tgv::detail

// Device memory the library keeps per (purpose, device, stream) for the
// process: cuBLASLt's split-K workspace, the epilogue path's fp32 scratch,
// stream-K's partials and counters. Per stream because two streams running at
// once (two-batch overlap in an engine) must not share it; kernels on one
// stream run in order, so they may.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace tgv::detail {

enum class StreamBufferPurpose { CublasWorkspace, EpilogueScratch, StreamK };

// The buffer for the key, allocated on its first call with `bytes` (later
// calls get that one) and, with `zeroed`, cleared before it is returned.
// Allocated also when that first call is being captured into a CUDA graph:
// in relaxed capture mode, on a private stream, cudaMalloc and the clearing
// neither join nor break the capture (torch.cuda.graph captures on a stream of
// its own, so a stream's first call is often a captured one).
void* stream_buffer(StreamBufferPurpose purpose, int device, cudaStream_t stream, size_t bytes, bool zeroed = false);

}  // namespace tgv::detail

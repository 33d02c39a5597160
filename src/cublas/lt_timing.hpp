// Measures cuBLASLt algorithm candidates for one call, off the caller's stream.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace tgv::detail {

// One cublasLtMatmul, less the algorithm, workspace, output and stream.
struct LtOperation {
  cublasLtHandle_t handle = nullptr;
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;  // C is laid out as D
  const void* a_ptr = nullptr;
  const void* b_ptr = nullptr;
  float beta = 0.0f;
  // Launched after each GEMM, inside its timing (a staged call's copy to out):
  // reads the GEMM's output `d`, writes `extra`.
  std::function<void(const void* d, void* extra, cudaStream_t)> after;
};

// Where the timed calls write and what they must not find in L2.
struct LtTimingBuffers {
  size_t out_span_bytes = 0;  // D's extent, strides included
  uintptr_t out_offset = 0;   // the call's out pointer modulo 256: scratch D sits as misaligned
  uint64_t workspace_bytes = 0;
  uint64_t weight_bytes = 0;  // the weight operand's extent: flushed from L2 between runs
  size_t extra_bytes = 0;     // scratch for LtOperation::after
};

// The median time in microseconds of each candidate (a negative entry: it
// failed to launch), measured on a private stream of `device` with scratch
// output and workspace, each run preceded by a read of a buffer twice the L2
// size so that the weights come from HBM as they do in decode. Inputs are the
// call's own, read concurrently with whatever the caller's stream still does
// (their values do not change the time); nothing the caller can see is
// written, and the caller's stream is neither waited for nor synchronized.
// Runs with this thread in relaxed capture mode, so a capture in another
// thread is neither invalidated nor in the way. Empty when the scratch memory
// could not be had (the caller keeps the heuristic's choice). Serialized per
// device: two measurements at once would disturb each other.
std::vector<float> time_lt_candidates(int device, const LtOperation& call,
                                      const std::vector<cublasLtMatmulHeuristicResult_t>& candidates,
                                      const LtTimingBuffers& buffers);

// Reads `bytes` of `buffer` (16-byte aligned, a multiple of 16) and discards
// them: evicts the weights from L2 with clean lines only, so the timed GEMM
// pays no write-backs that a real decode step would not.
void launch_l2_flush_read(const void* buffer, size_t bytes, cudaStream_t stream);

}  // namespace tgv::detail

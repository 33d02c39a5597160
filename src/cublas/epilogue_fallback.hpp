// Epilogues, fp32/fp16 outputs and fp16 inputs where the tgv kernels cannot
// serve them (Blackwell, layouts the sm_90 kernel is not compiled for):
// cuBLASLt computes x . W^T in fp32 into a per-stream scratch buffer, then one
// kernel of ours applies bias, gating or residual in fp32 and rounds once into
// out. A call without bias, residual or gating needs no scratch: cuBLASLt
// writes out in its type directly.
//
// Scratch: kScratchBytes (32 MiB) per (device, stream), allocated on the
// stream's first such call (under CUDA-graph capture too, in relaxed capture
// mode) and kept for the process (like the cuBLASLt workspace). A call computes as many tokens at a
// time as fit, L x M x N fp32 when that fits, else per batch in chunks of
// floor(32 MiB / (4 N)) tokens, rounded down to a multiple of 8; n above
// 1 048 576 rows cannot fit 8 tokens and is refused (NOT_SUPPORTED).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/gemm_desc.hpp"

namespace tgv::detail {

inline constexpr size_t kScratchBytes = size_t(32) << 20;

// Runs a validated, non-empty, non-plain GEMM (g.plain() false) on `stream`.
void cublaslt_epilogue_gemm(const GemmDesc& g, cudaStream_t stream);

// out(b, i, c) for b in [b0, b0 + nb), i in [m0, m0 + mc), every column c of
// out, from scratch holding x . W^T in fp32: token i of batch b at
// scratch + (b - b0) * mc * n + (i - m0) * n, n columns.
void launch_epilogue_apply(const GemmDesc& g, const float* scratch, int64_t b0, int64_t nb, int64_t m0, int64_t mc,
                           cudaStream_t stream);

}  // namespace tgv::detail

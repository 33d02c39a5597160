// Runtime parameters of the SM100/SM103 kernel, shared by the launcher (host) and
// the kernel (device). The tile shape and the cluster size are template
// parameters; everything here varies without another instance.
#pragma once

#include <cstdint>

#include "tactics/tactics.hpp"

namespace tgv::kernels::sm100 {

// Reduction depth of one pipeline stage: fixed at 128 by the reference design.
// A stage is two 64-column chunks, each one 128-byte swizzle span of bf16 (the
// widest box a swizzled TMA load may have, and one UMMA K-major SW128 atom row).
inline constexpr int kCtaK = 128;
inline constexpr int kChunkK = 64;
using detail::kMaxStages;         // barrier slots reserved in SharedStorage
using detail::kSmemReserveBytes;  // SharedStorage sits here, the ring right after it

struct Params {
  void* out;
  const void* bias;  // nullptr: no bias
  int32_t m, n;      // tokens, weight rows
  int32_t num_k_blocks, stages;
  // K a multiple of kChunkK: the operand is mapped 4-D (chunk column, row,
  // chunk, batch) and a stage is one TMA box instead of one per chunk.
  int32_t w_folded, x_folded;
  int32_t out_row_major;
  int32_t out_vectorized;  // 16-byte stores are aligned for every row and batch
  int64_t out_ld, out_batch_stride;
  // The epilogues. A bf16 call with none of them (bf16 out, no residual, no
  // gating) runs the plain store path.
  int32_t out_type;  // kOutBf16 / kOutFp16 (the input type) or kOutFp32 (kernels/common/epilogue_math.cuh)
  int32_t act;       // kActNone, or a gated epilogue: W is the [16-row group][8 gate | 8 up] map
  int32_t out_cols;  // columns of out: n, or n / 2 when gated
  const void* residual;  // nullptr: none; laid out like out, out's type
  int64_t res_ld, res_batch_stride;
};

}  // namespace tgv::kernels::sm100

// Runtime parameters of the SM90 kernel, shared by the launcher (host) and the
// kernel (device). The tile shape and operand majors are template parameters;
// everything here is free to vary without another instance.
#pragma once

#include <cstdint>

#include "tactics/tactics.hpp"

namespace tgv::kernels::sm90 {

// A stage's reduction depth is cta_k = chunks x kChunkK: one chunk is one
// 128-byte swizzle span of bf16, the widest box a swizzled TMA load may have.
inline constexpr int kChunkK = 64;
using detail::kMaxStages;  // barrier slots reserved beside the ring

struct Params {
  void* out;
  const void* bias;  // nullptr: no bias
  int32_t m, n;      // tokens, weight rows
  int32_t num_k_blocks, cta_k, stages;
  int32_t split_k;  // CTAs of a cluster that share one output tile, each over a slice of K
  int32_t out_row_major;
  int32_t out_vectorized;  // 16-byte stores are aligned for every row and batch
  int64_t out_ld, out_batch_stride;
};

}  // namespace tgv::kernels::sm90

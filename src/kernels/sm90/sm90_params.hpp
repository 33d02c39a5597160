// Runtime parameters of the SM90 kernel, shared by the launcher (host) and the
// kernel (device). The tile shape and operand majors are template parameters;
// everything here is free to vary without another instance.
#pragma once

#include <cstdint>

#include "tactics/tactics.hpp"

namespace tgv::kernels::sm90 {

// A stage's reduction depth is a whole number of kChunkK chunks (see tactics.hpp).
inline constexpr int kChunkK = detail::kSm90ChunkK;
using detail::kMaxStages;  // barrier slots reserved beside the ring

enum class L2Policy : int32_t { Normal, EvictFirst, EvictLast };

struct Params {
  void* out;
  const void* bias;  // nullptr: no bias
  int32_t m, n;      // tokens, weight rows
  int32_t num_k_blocks, stages;
  int32_t split_k;
  // K-major operands whose K is a multiple of kChunkK are mapped 4-D (chunk
  // column, row, chunk, batch): a stage is then one TMA box, not one per chunk.
  int32_t w_folded, x_folded;
  L2Policy w_policy, x_policy;  // of the TMA loads  // CTAs of a cluster that share one output tile, each over a slice of K
  int32_t out_row_major;
  int32_t out_vectorized;  // 16-byte stores are aligned for every row and batch
  int64_t out_ld, out_batch_stride;
#ifdef TGV_TRACE
  uint64_t* trace;  // experiment builds: kTraceSlots words per CTA (trace.cuh)
#endif
};

}  // namespace tgv::kernels::sm90

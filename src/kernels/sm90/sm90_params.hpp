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

struct Params {
  void* out;
  const void* bias;  // nullptr: no bias
  int32_t m, n;      // tokens, weight rows
  int32_t num_k_blocks, stages;
  // > 0: once the activations load, the W producer keeps at most this many
  // stages in flight (issued, not landed). A deep ring on every SM asks HBM for
  // far more than covers its latency, and the slowest CTAs then finish late
  // (perf-notes §20). A CTA launched beside its PDL predecessor (its
  // griddepcontrol.wait waits) keeps the whole ring in flight, as before.
  int32_t w_lead;
  // Only CTAs of linear id below this may be paced: a plain launch's first
  // wave, a gated launch's whole grid (sm90_pace_ctas, perf-notes §45).
  int32_t pace_ctas;
  // 2: the consumers of a narrow 64-row tile split the ring's stages between
  // two warpgroups (the kernel's K groups); 1: one warpgroup takes them all.
  int32_t k_groups;
  // 1: the W producer lets the next kernel launch as soon as it starts, not after
  // its last load. The grid launches its dependents once every CTA has done so:
  // after a multi-wave grid's last wave has started, after a one-wave grid's start.
  // Set from Plan::trigger_at_entry (sm90_trigger_at_entry: one-wave grids under
  // 48 MB or gated, perf-notes §58-§59); TGV_EXP_EARLY_TRIGGER overrides it.
  int32_t trigger_at_entry;
  // 1: a CTA below pace_ctas is paced even where its griddepcontrol.wait waited
  // (its predecessor still ran): under trigger_at_entry a successor's CTAs wait
  // most of their predecessor's stream, and unpaced they then keep the whole ring
  // in flight (experiment switch, perf-notes §58).
  int32_t pace_waited;
  int32_t split_k;
  // 1 (split_k > 1): the peers push their partial sums into the leader's
  // receive buffer after the ring's reserve and exit; 0: the leader reads them
  // from the peers' drained rings between two cluster barriers.
  int32_t split_push;
  // K-major operands whose K is a multiple of kChunkK are mapped 4-D (chunk
  // column, row, chunk, batch): a stage is then one TMA box, not one per chunk.
  int32_t w_folded, x_folded;
  int32_t out_row_major;
  int32_t out_vectorized;  // 16-byte stores are aligned for every row and batch
  int64_t out_ld, out_batch_stride;
  // The epilogue, read after the main loop only (epilogue_math.cuh values).
  int32_t out_type;  // kOutBf16 / kOutFp16 / kOutFp32
  int32_t act;       // kActNone, or a gated epilogue: W is the [8-row group][gate | up] map
  int32_t out_cols;  // columns of out: n, or n / 2 when gated
  const void* residual;  // nullptr: none; laid out like out
  int32_t res_vectorized;
  int64_t res_ld, res_batch_stride;
  // Stream-K (stream_k != 0; split_k is 1): the grid's sk_ctas CTAs share the
  // flat (tile, K block) space evenly, tile-major, tiles ordered (batch, weight
  // tile, token tile). A tile whose K blocks span several CTAs is summed by the
  // last to finish it, in CTA order, from fp32 partials in a workspace (two
  // slots per CTA) and a per-tile arrival counter that it resets to zero.
  int32_t stream_k;
  int32_t sk_ctas, tiles_n, tiles_m;
  int64_t sk_iters;  // tiles * num_k_blocks
  float* sk_partials;
  uint32_t* sk_counters;  // zero between kernels
  // Hybrid (sk_dp_tiles > 0): the first sk_dp_tiles tiles are taken whole, CTA c
  // the tiles c, c + sk_ctas, ... below it; stream-K (sk_iters, the counters' and
  // slots' CTA arithmetic) covers the tiles after them. sk_dp_tiles is a multiple
  // of sk_ctas, or every tile (sk_iters 0: a persistent grid, no partial sums).
  int32_t sk_dp_tiles;
};

}  // namespace tgv::kernels::sm90

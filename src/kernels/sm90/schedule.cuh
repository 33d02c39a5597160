// Which K blocks of which output tiles one CTA of the SM90 kernel reduces, in
// the order its producers load them and its consumers multiply them.
//
//   default   one segment: the CTA's tile (blockIdx), all of its K blocks or,
//             under split-K, the rank's contiguous slice of them.
//   stream-K  the flat space of (tile, K block) iterations, tile-major, cut
//             into sk_ctas equal contiguous ranges, one per CTA: each CTA
//             streams the same number of weight bytes whatever the tile count,
//             so no SM idles through a partial last wave. A range covers the
//             tail of one tile, whole tiles, the head of another: a segment each.
#pragma once

#include <cstdint>

#include "kernels/sm90/sm90_params.hpp"

// Device code in the kernel, host code in tests/host/test_schedule.cpp, which
// checks the cut's invariants without a GPU.
#if defined(__CUDACC__)
#define TGV_SCHEDULE_FN __host__ __device__ __forceinline__
#else
#define TGV_SCHEDULE_FN inline
#endif

namespace tgv::kernels::sm90 {

struct Segment {
  int tile;              // flat tile id (stream-K's counters)
  int n0, m0, batch;     // the tile's first weight row and token, its batch
  int kb_begin, kb_end;  // the K blocks reduced here
  bool whole;            // every K block of the tile: no partial sums to meet
};

// Stream-K's cut: CTA c owns iterations [begin(c), begin(c + 1)).
TGV_SCHEDULE_FN int64_t sk_begin(const Params& p, int c) { return int64_t(c) * p.sk_iters / p.sk_ctas; }
// The CTA whose range holds iteration i: the largest c with begin(c) <= i.
TGV_SCHEDULE_FN int sk_cta_of(const Params& p, int64_t i) {
  return int(((i + 1) * p.sk_ctas + p.sk_iters - 1) / p.sk_iters) - 1;
}
// A CTA sums into at most two partially covered tiles, its range's first and
// last: slot 2c holds the partial of its first tile, 2c + 1 that of its last.
// `tile` counts from the first stream-K tile (after the hybrid's whole ones).
TGV_SCHEDULE_FN int sk_slot(const Params& p, int c, int tile) {
  return 2 * c + (tile == int(sk_begin(p, c) / p.num_k_blocks) ? 0 : 1);
}

template <int kCtaM, int kCtaN>
struct Schedule {
  int64_t begin = 0, end = 0;  // stream-K, counted from the first stream-K tile
  int first_tile = 0;          // likewise
  int sk_segments = 0;         // the stream-K range's segments, walked first
  int num_segments = 1;

  int cta = 0, token_tile = 0, batch = 0;  // blockIdx

  TGV_SCHEDULE_FN Schedule(const Params& p, int cta_index, int token_tile_index = 0, int batch_index = 0)
      : cta(cta_index), token_tile(token_tile_index), batch(batch_index) {
    if (p.stream_k) {
      begin = sk_begin(p, cta);
      end = sk_begin(p, cta + 1);
      first_tile = int(begin / p.num_k_blocks);
      sk_segments = end > begin ? int((end - 1) / p.num_k_blocks) - first_tile + 1 : 0;
      // The whole tiles c, c + sk_ctas, ... below sk_dp_tiles (CTAs below sk_dp_tiles % sk_ctas take one more).
      num_segments = sk_segments + (p.sk_dp_tiles - cta + p.sk_ctas - 1) / p.sk_ctas;
    }
  }

  TGV_SCHEDULE_FN Segment segment(const Params& p, int j) const {
    Segment s;
    if (!p.stream_k) {
      const int rank = cta % p.split_k;
      s.tile = 0;
      s.n0 = (cta / p.split_k) * kCtaM;
      s.m0 = token_tile * kCtaN;
      s.batch = batch;
      s.kb_begin = rank * p.num_k_blocks / p.split_k;
      s.kb_end = (rank + 1) * p.num_k_blocks / p.split_k;
      s.whole = p.split_k == 1;
      return s;
    }
    if (j < sk_segments) {
      const int rel = first_tile + j;
      s.tile = p.sk_dp_tiles + rel;
      const int64_t tile_begin = int64_t(rel) * p.num_k_blocks;
      s.kb_begin = int((begin > tile_begin ? begin : tile_begin) - tile_begin);
      s.kb_end = int((end < tile_begin + p.num_k_blocks ? end : tile_begin + p.num_k_blocks) - tile_begin);
      s.whole = s.kb_begin == 0 && s.kb_end == p.num_k_blocks;
    } else {  // the hybrid's whole tiles, after the stream-K range
      s.tile = cta + (j - sk_segments) * p.sk_ctas;
      s.kb_begin = 0;
      s.kb_end = p.num_k_blocks;
      s.whole = true;
    }
    const int rest = s.tile / p.tiles_m;
    s.m0 = (s.tile % p.tiles_m) * kCtaN;
    s.n0 = (rest % p.tiles_n) * kCtaM;
    s.batch = rest / p.tiles_n;
    return s;
  }
};

}  // namespace tgv::kernels::sm90

// The SM90 kernel's work decomposition (src/kernels/sm90/schedule.cuh), walked on
// the host for every CTA of a grid: what the kernel's producers load and its
// consumers reduce. A K block reduced twice or never, a partial tile whose
// contributors the fix-up miscounts, or two partial tiles of one CTA in one
// workspace slot would each be a wrong (or hung) result on the GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <set>
#include <vector>

#include "kernels/sm90/schedule.cuh"

namespace {

using tgv::kernels::sm90::Params;
using tgv::kernels::sm90::Schedule;
using tgv::kernels::sm90::Segment;
using tgv::kernels::sm90::sk_cta_of;
using tgv::kernels::sm90::sk_slot;

constexpr int kCtaM = 64, kCtaN = 8;

struct StreamKCase {
  int tiles_n, tiles_m, batches, k_blocks, ctas;
  int dp_waves = 0;  // the hybrid's whole waves (Params::sk_dp_tiles / ctas)
  bool all_whole = false;  // every tile whole, round robin (TGV_EXP_SK_HYBRID=3)
};

Params stream_k_params(const StreamKCase& c) {
  Params p{};
  p.stream_k = 1;
  p.split_k = 1;
  p.sk_ctas = c.ctas;
  p.tiles_n = c.tiles_n;
  p.tiles_m = c.tiles_m;
  p.num_k_blocks = c.k_blocks;
  p.sk_dp_tiles = c.all_whole ? c.tiles_n * c.tiles_m * c.batches : c.dp_waves * c.ctas;
  p.sk_iters = (int64_t(c.tiles_n) * c.tiles_m * c.batches - p.sk_dp_tiles) * c.k_blocks;
  return p;
}

void check_stream_k(const StreamKCase& c) {
  SCOPED_TRACE(testing::Message() << c.tiles_n << " x " << c.tiles_m << " tiles, " << c.batches << " batches, "
                                  << c.k_blocks << " K blocks, " << c.ctas << " CTAs");
  const Params p = stream_k_params(c);
  const int tiles = c.tiles_n * c.tiles_m * c.batches;
  std::vector<int> reduced(size_t(tiles) * c.k_blocks, 0);
  std::map<int, std::set<int>> partial_contributors;
  for (int cta = 0; cta < c.ctas; ++cta) {
    const Schedule<kCtaM, kCtaN> sched(p, cta);
    std::set<int> slots;
    int64_t last_iteration = -1;
    for (int j = 0; j < sched.num_segments; ++j) {
      const Segment s = sched.segment(p, j);
      ASSERT_GE(s.tile, 0);
      ASSERT_LT(s.tile, tiles);
      ASSERT_LT(s.kb_begin, s.kb_end) << "an empty segment at CTA " << cta << ", segment " << j;
      ASSERT_GE(s.kb_begin, 0);
      ASSERT_LE(s.kb_end, c.k_blocks);
      EXPECT_EQ(s.whole, s.kb_begin == 0 && s.kb_end == c.k_blocks);
      // The tile's coordinates: (batch, weight tile, token tile), token tile fastest.
      EXPECT_EQ(s.m0, (s.tile % c.tiles_m) * kCtaN);
      EXPECT_EQ(s.n0, (s.tile / c.tiles_m % c.tiles_n) * kCtaM);
      EXPECT_EQ(s.batch, s.tile / (c.tiles_m * c.tiles_n));
      // In the flat order, one contiguous range per CTA (its stream-K part).
      if (j < sched.sk_segments) {
        const int64_t first = int64_t(s.tile) * c.k_blocks + s.kb_begin;
        EXPECT_EQ(first, last_iteration + 1 == 0 ? first : last_iteration + 1) << "CTA " << cta << "'s range has a gap";
        last_iteration = int64_t(s.tile) * c.k_blocks + s.kb_end - 1;
      } else {
        EXPECT_LT(s.tile, p.sk_dp_tiles) << "a whole tile of the hybrid's beyond its waves";
        EXPECT_TRUE(s.whole);
      }
      for (int kb = s.kb_begin; kb < s.kb_end; ++kb) ++reduced[size_t(s.tile) * c.k_blocks + kb];
      if (!s.whole) {
        partial_contributors[s.tile].insert(cta);
        EXPECT_GE(s.tile, p.sk_dp_tiles) << "a partial tile among the hybrid's whole ones";
        const int slot = sk_slot(p, cta, s.tile - p.sk_dp_tiles);
        EXPECT_TRUE(slot == 2 * cta || slot == 2 * cta + 1) << "CTA " << cta << " writes slot " << slot;
        EXPECT_TRUE(slots.insert(slot).second) << "CTA " << cta << " puts two partial tiles in slot " << slot;
      }
    }
  }
  for (int tile = 0; tile < tiles; ++tile)
    for (int kb = 0; kb < c.k_blocks; ++kb)
      ASSERT_EQ(reduced[size_t(tile) * c.k_blocks + kb], 1) << "tile " << tile << ", K block " << kb;
  // The fix-up's arithmetic: the last to arrive of sk_cta_of(first) .. sk_cta_of(last)
  // finishes the tile, so that range must be exactly the CTAs holding a part of it.
  for (const auto& [tile, ctas] : partial_contributors) {
    const int64_t first = int64_t(tile - p.sk_dp_tiles) * c.k_blocks;
    const int lo = sk_cta_of(p, first), hi = sk_cta_of(p, first + c.k_blocks - 1);
    std::set<int> expected;
    for (int cta = lo; cta <= hi; ++cta) expected.insert(cta);
    EXPECT_EQ(ctas, expected) << "tile " << tile;
    EXPECT_GE(ctas.size(), 2u) << "tile " << tile << " is partial but has one contributor";
  }
}

TEST(Schedule, StreamKReducesEveryKBlockOnceAndCountsEachTilesContributors) {
  for (const StreamKCase& c : {
           StreamKCase{448, 1, 1, 32, 132},  // the 8B gate_up at M = 1: 3.4 waves of 64-row tiles
           StreamKCase{300, 1, 1, 4, 132},   // two waves and a part, short K
           StreamKCase{2, 1, 1, 128, 132},   // few tiles over deep K: tens of CTAs per tile
           StreamKCase{1, 1, 1, 600, 132},   // one tile, every CTA a part of it
           StreamKCase{141, 1, 2, 6, 132},   // two batches
           StreamKCase{37, 3, 2, 9, 131},    // token tiles and batches, a CTA count not dividing anything
           StreamKCase{133, 1, 1, 4, 132},   // one tile more than the CTAs
           StreamKCase{2004, 1, 1, 32, 132}, // an lm_head: 15 waves
       })
    check_stream_k(c);
}

TEST(Schedule, HybridTakesWholeWavesAndSharesTheRest) {
  for (const StreamKCase& c : {
           StreamKCase{448, 1, 1, 32, 132, 2},  // the 8B gate_up: 264 whole, 184 shared
           StreamKCase{448, 1, 1, 32, 132, 3},  // every whole wave: 396 whole, 52 shared
           StreamKCase{300, 1, 1, 4, 132, 1},
           StreamKCase{141, 1, 2, 6, 132, 1},
           StreamKCase{37, 3, 2, 9, 100, 1},
           StreamKCase{2004, 1, 1, 32, 132, 14},
       })
    check_stream_k(c);
}

// Every tile whole, CTA c the tiles c, c + ctas, ...: a tile count that is not a
// multiple of the CTAs leaves the CTAs past tiles % ctas one tile short.
TEST(Schedule, PersistentGridTakesEveryTileWholeOnce) {
  for (const StreamKCase& c : {
           StreamKCase{448, 1, 1, 32, 132, 0, true},  // the 8B gate_up: 52 CTAs of 4 tiles, 80 of 3
           StreamKCase{396, 1, 1, 32, 132, 0, true},  // whole waves only
           StreamKCase{300, 1, 1, 4, 132, 0, true},
           StreamKCase{37, 3, 2, 9, 100, 0, true},
       }) {
    check_stream_k(c);
    const Params p = stream_k_params(c);
    const int tiles = c.tiles_n * c.tiles_m * c.batches;
    for (int cta = 0; cta < c.ctas; ++cta) {
      const Schedule<kCtaM, kCtaN> sched(p, cta);
      EXPECT_EQ(sched.sk_segments, 0);
      EXPECT_EQ(sched.num_segments, tiles / c.ctas + (cta < tiles % c.ctas ? 1 : 0)) << "CTA " << cta;
    }
  }
}

TEST(Schedule, SplitKRanksCoverTheirTilesKBlocksOnce) {
  for (int k_blocks : {1, 4, 7, 32, 33}) {
    for (int split = 1; split <= 8 && split <= k_blocks; ++split) {
      Params p{};
      p.split_k = split;
      p.num_k_blocks = k_blocks;
      std::vector<int> reduced(size_t(3) * k_blocks, 0);
      for (int cta = 0; cta < 3 * split; ++cta) {  // three tiles, each a cluster of `split` ranks
        const Schedule<kCtaM, kCtaN> sched(p, cta, 2, 1);
        ASSERT_EQ(sched.num_segments, 1);
        const Segment s = sched.segment(p, 0);
        EXPECT_EQ(s.n0, cta / split * kCtaM);
        EXPECT_EQ(s.m0, 2 * kCtaN);
        EXPECT_EQ(s.batch, 1);
        EXPECT_EQ(s.whole, split == 1);
        for (int kb = s.kb_begin; kb < s.kb_end; ++kb) ++reduced[size_t(cta / split) * k_blocks + kb];
      }
      for (int i = 0; i < 3 * k_blocks; ++i)
        ASSERT_EQ(reduced[size_t(i)], 1) << "split " << split << ", " << k_blocks << " K blocks, iteration " << i;
    }
  }
}

}  // namespace

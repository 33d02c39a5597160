// The tactic table: ids, shapes, shared-memory fit, and tgv_get_tactic.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "common/error.hpp"
#include "host_util.hpp"
#include "tactics/tactics.hpp"
#include "tgv/tgv.h"

namespace {

using namespace tgv::detail;
using tgv_test::status_is;

TEST(Tactics, CountMatchesCApi) {
  EXPECT_EQ(tgv_num_tactics(), kNumTactics);
  EXPECT_GT(kNumTactics, 0);
}

TEST(Tactics, IdsAreIndices) {
  for (int32_t i = 0; i < kNumTactics; ++i) {
    EXPECT_EQ(tactics()[i].id, i);
    EXPECT_EQ(&tactic(i), &tactics()[i]);
  }
}

TEST(Tactics, ShapesAreLegal) {
  std::set<std::tuple<int32_t, int32_t, int32_t, int32_t, int32_t, int32_t>> seen;
  for (int32_t i = 0; i < kNumTactics; ++i) {
    const Tactic& t = tactics()[i];
    SCOPED_TRACE(::testing::Message() << "tactic " << i << " (" << t.cta_m << "x" << t.cta_n << "x" << t.cta_k << ")");
    EXPECT_TRUE(t.arch == 90 || t.arch == 100) << t.arch;
    EXPECT_EQ(t.arch == 90, i < kNumSm90Tactics) << "the SM90 tactics come first";
    EXPECT_TRUE(t.cta_m == 64 || t.cta_m == 128);
    EXPECT_EQ(t.cta_n % 8, 0);
    EXPECT_GE(t.cta_n, 8);
    EXPECT_LE(t.cta_n, 256);
    EXPECT_TRUE(t.cta_k == 64 || t.cta_k == 128);
    EXPECT_GE(t.cluster, 1);
    if (t.arch == 90) {
      EXPECT_EQ(t.cluster, 1);
      EXPECT_EQ(t.stages, 0);
    } else {
      EXPECT_EQ(t.cta_k, 128);
      EXPECT_TRUE(t.cluster == 1 || t.cluster == 2);
      if (t.cluster == 2) {
        EXPECT_EQ(t.cta_n % 16, 0) << "a CTA pair splits N: 16..256 step 16";
      }
      EXPECT_GE(t.stages, 2);
    }
    EXPECT_TRUE(seen.emplace(t.arch, t.cta_m, t.cta_n, t.cta_k, t.cluster, t.stages).second) << "duplicate tactic";
  }
}

TEST(Tactics, EveryTacticFitsHopperSharedMemory) {
  for (int32_t i = 0; i < kNumTactics; ++i) {
    const Tactic& t = tactics()[i];
    if (t.arch != 90) continue;
    SCOPED_TRACE(::testing::Message() << "tactic " << i);
    EXPECT_EQ(stage_bytes(t), int64_t(t.cta_m + t.cta_n) * t.cta_k * 2);
    const int32_t stages = stages_for(t, kSm90SmemBytes);
    EXPECT_GE(stages, 2);
    EXPECT_LE(stages, kMaxStages);
    EXPECT_LE(smem_bytes_for(t, stages), kSm90SmemBytes);
    // The deepest pipeline: one more stage would not fit (or is over the cap).
    if (stages < kMaxStages) {
      EXPECT_GT(smem_bytes_for(t, stages + 1), kSm90SmemBytes);
    }
  }
}

// The ring a stage count leaves must hold the bf16 epilogue tile (rows padded
// by 8 elements, in either orientation of out) and, with split-K, the fp32
// partial sums: min_stages_for is the fewest stages that do.
TEST(Tactics, MinStagesHoldTheRingsReuse) {
  EXPECT_EQ(sm90_epilogue_bytes(128, 256), 2 * 256 * (128 + 8));  // [token][weight row] is the larger
  EXPECT_EQ(sm90_epilogue_bytes(128, 8), 2 * 128 * (8 + 8));      // [weight row][token] is the larger
  EXPECT_EQ(sm90_partial_bytes(128, 256), 128 * 256 * 4);
  // A tile whose 16-column stages are too thin for its epilogue: 69632 bytes
  // over 12288-byte stages needs 6; its 131072 bytes of partials need 11.
  const Tactic thin{0, 90, 128, 256, 16, 1, 0};
  EXPECT_EQ(min_stages_for(thin, 1), 6);
  EXPECT_EQ(min_stages_for(thin, 2), 11);
  for (int32_t i = 0; i < kNumTactics; ++i) {
    const Tactic& t = tactics()[i];
    SCOPED_TRACE(::testing::Message() << "tactic " << i);
    for (int32_t split : {1, 2, 16}) {
      const int32_t need = min_stages_for(t, split);
      EXPECT_GE(need, 2);
      if (t.arch != 90) {
        EXPECT_EQ(need, 2) << "only the SM90 kernel reuses its ring";
        continue;
      }
      const int64_t held = std::max(sm90_epilogue_bytes(t.cta_m, t.cta_n),
                                    split > 1 ? sm90_partial_bytes(t.cta_m, t.cta_n) : int64_t(0));
      EXPECT_GE(stage_bytes(t) * need, held);
      if (need > 2) {
        EXPECT_LT(stage_bytes(t) * (need - 1), held);
      }
      EXPECT_LE(need, stages_for(t, kSm90SmemBytes)) << "the deepest ring holds it";
    }
  }
}

// Split-K's pushed reduction: narrow tiles keep a receive buffer of (split - 1)
// partial tiles beside the ring, counted in the launch's shared memory and
// not in the ring; wider ones (over kSm90SplitPushMaxBytes) keep the partials
// in the drained ring. 64x8 tiles: 2 KB a peer, pushed up to split 9 (16 KB).
TEST(Tactics, SplitKPushBufferBesideTheRing) {
  for (int32_t i = 0; i < kNumTactics; ++i) {
    const Tactic& t = tactics()[i];
    if (t.arch != 90) continue;
    for (int32_t split = 1; split <= kMaxSplitK; ++split) {
      const int64_t partial = int64_t(t.cta_m) * t.cta_n * 4, all = (split - 1) * partial;
      const int64_t push = sm90_split_push_bytes(t.cta_m, t.cta_n, split);
      EXPECT_EQ(push, all <= kSm90SplitPushMaxBytes ? all : 0) << i << " split " << split;
      EXPECT_EQ(sm90_smem_bytes(t, 4, split), smem_bytes_for(t, 4) + push) << i << " split " << split;
      // Exactly one place holds the peers' sums.
      EXPECT_EQ(sm90_ring_partial_bytes(t.cta_m, t.cta_n, split), split > 1 && push == 0 ? partial : 0);
    }
  }
  const Tactic& narrow = tactics()[0];
  ASSERT_EQ(std::make_tuple(narrow.cta_m, narrow.cta_n), std::make_tuple(64, 8));
  EXPECT_EQ(sm90_split_push_bytes(64, 8, 9), 8 * 2048);
  EXPECT_EQ(sm90_split_push_bytes(64, 8, 10), 0);
  EXPECT_EQ(sm90_split_push_bytes(64, 8, 1), 0);
  EXPECT_EQ(sm90_split_push_bytes(128, 256, 2), 0);
  EXPECT_EQ(min_stages_for(narrow, 8), 2);  // nothing of split-K left in its ring
}

// The SM100 tactics are the reference design's configurations: their stage
// count is fixed, fits a Blackwell block, and a CTA pair loads half the tokens.
TEST(Tactics, Sm100TacticsKeepTheirStages) {
  int32_t count = 0;
  for (int32_t i = 0; i < kNumTactics; ++i) {
    const Tactic& t = tactics()[i];
    if (t.arch != 100) continue;
    ++count;
    SCOPED_TRACE(::testing::Message() << "tactic " << i);
    EXPECT_EQ(stage_bytes(t), int64_t(t.cta_m + t.cta_n / t.cluster) * t.cta_k * 2);
    EXPECT_EQ(stages_for(t, kSm100SmemBytes), t.stages);
    EXPECT_LE(smem_bytes_for(t, t.stages), kSm100SmemBytes);
    EXPECT_EQ(stages_for(t, smem_bytes_for(t, t.stages) - 1), 0) << "a fixed stage count never shrinks";
  }
  EXPECT_EQ(count, kNumSm100Tactics);
}

TEST(Tactics, StagesForSmallSharedMemory) {
  const Tactic& t = tactics()[0];
  EXPECT_EQ(stages_for(t, smem_bytes_for(t, 2)), 2);
  EXPECT_EQ(stages_for(t, smem_bytes_for(t, 2) - 1), 0);  // not even two stages
  EXPECT_EQ(stages_for(t, smem_bytes_for(t, 3)), 3);
  EXPECT_EQ(stages_for(t, int64_t(1) << 30), kMaxStages);
}

TEST(Tactics, GetTacticMatchesTable) {
  for (int32_t i = 0; i < tgv_num_tactics(); ++i) {
    tgv_tactic_info info{};
    ASSERT_TRUE(status_is(tgv_get_tactic(i, &info), TGV_SUCCESS));
    const Tactic& t = tactics()[i];
    EXPECT_EQ(info.id, i);
    EXPECT_EQ(info.arch, t.arch);
    EXPECT_EQ(info.cta_m, t.cta_m);
    EXPECT_EQ(info.cta_n, t.cta_n);
    EXPECT_EQ(info.cta_k, t.cta_k);
    EXPECT_EQ(info.cluster, t.cluster);
    EXPECT_EQ(info.stages, stages_for(t, smem_bytes_of_arch(t.arch)));
  }
}

TEST(Tactics, GetTacticOutOfRange) {
  tgv_tactic_info info{};
  EXPECT_TRUE(status_is(tgv_get_tactic(-1, &info), TGV_ERROR_INVALID_ARGUMENT, {"tactic=-1"}));
  EXPECT_TRUE(status_is(tgv_get_tactic(tgv_num_tactics(), &info), TGV_ERROR_INVALID_ARGUMENT,
                        {"tactic=" + std::to_string(tgv_num_tactics())}));
  EXPECT_TRUE(status_is(tgv_get_tactic(0, nullptr), TGV_ERROR_INVALID_ARGUMENT, {"info is NULL"}));
  EXPECT_THROW(tactic(kNumTactics), tgv::detail::Error);
}

}  // namespace

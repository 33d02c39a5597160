// The dispatcher's cost model (src/plan/cost_model.*): the candidates, their
// pruning with reasons, waves counted in resident clusters, and the pick.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "api/validate.hpp"
#include "host_util.hpp"
#include "plan/cost_model.hpp"
#include "plan/device_info.hpp"
#include "tactics/tactics.hpp"

namespace {

using namespace tgv::detail;
using namespace tgv_test;

DeviceInfo hopper(int32_t sms, bool measured = true) {
  DeviceInfo d;
  d.cc_major = 9;
  d.num_sms = sms;
  d.smem_optin_bytes = kSm90SmemBytes;
  d.name = "test-sm90";
  if (measured && sms == 132) {  // the H200's clusters (bench/experiments/data/cluster-occupancy-h200.txt)
    const int32_t clusters[] = {0, 132, 66, 39, 30, 22, 17, 15, 15, 9, 7, 7, 7, 7, 7, 7, 7};
    for (int i = 0; i < 17; ++i) d.max_clusters[i] = clusters[i];
  }
  return d;
}

GemmDesc desc(int64_t m, int64_t n, int64_t k, int64_t l = 1) { return validate_problem(make_problem(m, n, k, l)); }
int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

TEST(CostModel, CandidatesCoverMWithTheSmallestTokenTile) {
  const DeviceInfo dev = hopper(132);
  for (int64_t m : {1, 7, 8, 9, 16, 17, 33, 64, 65, 128, 200, 256, 300}) {
    const std::vector<Sm90Candidate> cands = sm90_candidates(desc(m, 4096, 4096), dev);
    ASSERT_FALSE(cands.empty()) << m;
    std::set<int32_t> widths;
    for (const Sm90Candidate& c : cands) {
      const Tactic& t = tactic(c.tactic);
      EXPECT_EQ(t.arch, 90);
      EXPECT_GE(c.split_k, 1);
      EXPECT_LE(c.split_k, kMaxModelSplitK);
      widths.insert(t.cta_n);
    }
    ASSERT_EQ(widths.size(), 1u) << m;
    const int32_t cta_n = *widths.begin();
    EXPECT_GE(cta_n, std::min<int64_t>(m, 256)) << m;
    for (int32_t i = 0; i < kNumTactics; ++i) {  // no narrower tile covers M
      if (tactics()[i].arch == 90 && tactics()[i].cta_n >= std::min<int64_t>(m, 256)) {
        EXPECT_GE(tactics()[i].cta_n, cta_n);
      }
    }
    // Two weight-row heights x two stage depths x eight splits.
    EXPECT_EQ(cands.size(), 2u * 2u * kMaxModelSplitK) << m;
  }
}

TEST(CostModel, PrunedCandidatesSayWhy) {
  const DeviceInfo dev = hopper(132);
  // K = 1024: 8 blocks of 128 columns; a split over 2 leaves fewer than 4 each.
  for (const Sm90Candidate& c : sm90_candidates(desc(1, 4096, 1024), dev)) {
    const Tactic& t = tactic(c.tactic);
    const int64_t k_blocks = ceil_div(1024, t.cta_k);
    if (c.split_k > 1 && k_blocks < kMinKBlocksPerSplit * c.split_k) {
      EXPECT_NE(c.pruned.find("fewer than 4"), std::string::npos) << c.pruned;
      EXPECT_EQ(c.us, 0);
    }
  }
  // N = 2112, 64-row tiles: 33 clusters of 4 are more than the 30 an H200 holds.
  bool seen = false;
  for (const Sm90Candidate& c : sm90_candidates(desc(1, 2112, 7168), dev)) {
    const Tactic& t = tactic(c.tactic);
    if (t.cta_m == 64 && t.cta_k == 128 && c.split_k == 4) {
      seen = true;
      EXPECT_EQ(c.pruned, "33 clusters of 4: more than the 30 the device holds at once");
    }
    if (t.cta_m == 128 && t.cta_k == 128 && c.split_k == 5) {  // runnable: off only by kSplitKClustersInPlans
      if (kSplitKClustersInPlans) {
        EXPECT_TRUE(c.pruned.empty()) << c.pruned;
      } else {
        EXPECT_NE(c.pruned.find("split-K clusters are off"), std::string::npos) << c.pruned;
      }
    }
    if (c.pruned.empty()) {
      EXPECT_GT(c.us, 0);
    }
  }
  EXPECT_TRUE(seen);
}

TEST(CostModel, BestIsTheLowestPredictionAmongTheUnpruned) {
  const DeviceInfo dev = hopper(132);
  for (int64_t m : {1, 16, 64, 128})
    for (int64_t n : {256, 2112, 4608, 28672})
      for (int64_t k : {1024, 3584, 7168}) {
        const GemmDesc g = desc(m, n, k);
        const Sm90Candidate best = best_sm90(g, dev);
        ASSERT_GE(best.tactic, 0);
        EXPECT_TRUE(best.pruned.empty());
        for (const Sm90Candidate& c : sm90_candidates(g, dev)) {
          if (c.pruned.empty()) {
            EXPECT_LE(best.us, c.us) << m << " " << n << " " << k;
          }
        }
        if (best.split_k == kSplitKStream) {  // a split-1 winner that stream-K evens out
          EXPECT_TRUE(stream_k_evens_waves(g, tactic(best.tactic), dev)) << m << " " << n << " " << k;
          EXPECT_LT(best.us, predict_sm90_us(g, tactic(best.tactic), 1, dev));
        } else {
          EXPECT_DOUBLE_EQ(best.us, predict_sm90_us(g, tactic(best.tactic), best.split_k, dev));
        }
      }
}

// The planner's own call skips formatting the reasons (half an eager call's
// planning time); it must prune exactly the candidates the explained call does.
TEST(CostModel, UnexplainedCandidatesPruneAlike) {
  for (const DeviceInfo& dev : {hopper(132), hopper(114)})
    for (int64_t m : {1, 3, 16, 32, 64, 256})
      for (int64_t n : {8, 256, 2112, 28672, 262144})
        for (int64_t k : {8, 1152, 7168, 65536}) {
          const GemmDesc g = desc(m, n, k);
          const std::vector<Sm90Candidate> a = sm90_candidates(g, dev), b = sm90_candidates(g, dev, -1, 0, false);
          ASSERT_EQ(a.size(), b.size());
          for (size_t i = 0; i < a.size(); ++i) {
            EXPECT_EQ(a[i].tactic, b[i].tactic);
            EXPECT_EQ(a[i].split_k, b[i].split_k);
            EXPECT_EQ(a[i].pruned.empty(), b[i].pruned.empty()) << m << " " << n << " " << k << ": " << a[i].pruned;
            if (a[i].pruned.empty()) EXPECT_EQ(a[i].us, b[i].us);
            else EXPECT_EQ(b[i].pruned, "pruned");
          }
        }
}

// The H100 ranks the 32-token tile by rates of its own (kH100Rate32Tokens,
// perf-notes §42): on a small grid the 64x32x64 tile, which its sweep measured
// 4-8% faster than 64x32x128 with K groups; the H200 keeps its ranking, and
// the other token tiles rank alike on both.
TEST(CostModel, TheH100Ranks32TokenTilesByItsOwnRates) {
  DeviceInfo h100 = hopper(132);
  h100.peak_hbm_gbps = 3352;
  DeviceInfo h200 = hopper(132);
  h200.peak_hbm_gbps = 4814;
  for (int64_t n : {3072, 3584, 4096}) {
    const Tactic& t100 = tactic(best_sm90(desc(32, n, n), h100).tactic);
    EXPECT_EQ(t100.cta_n, 32);
    EXPECT_EQ(t100.cta_m, 64) << n;
    EXPECT_EQ(t100.cta_k, 64) << n;
    const Tactic& t200 = tactic(best_sm90(desc(32, n, n), h200).tactic);
    EXPECT_EQ(t200.cta_k, 128) << n;
    for (int64_t m : {1, 4, 16}) {
      const Sm90Candidate a = best_sm90(desc(m, n, n), h100), b = best_sm90(desc(m, n, n), h200);
      EXPECT_EQ(a.tactic, b.tactic) << m << " " << n;
      EXPECT_EQ(a.split_k, b.split_k) << m << " " << n;
    }
  }
}

// Stream-K (the hybrid) takes a plain split-1 plan of <= 32 tokens whose last
// wave leaves many SMs idle within five waves or whose tiles are too short to
// fill the ring (perf-notes §41, §50), on either GPU's profile; an explicit
// split, a gated call, 64 tokens and a grid of whole waves keep split 1.
TEST(CostModel, StreamKEvensAFewTileLastWaveAndShortRows) {
  DeviceInfo h100 = hopper(132);
  h100.peak_hbm_gbps = 3352;
  for (const DeviceInfo& dev : {hopper(132), h100}) {
    for (int64_t m : {1, 4, 16, 32}) {
      // 18432 rows: 288 tiles of 64 (24 in the third wave) or 144 of 128 (12 in the second).
      const Sm90Candidate few = best_sm90(desc(m, 18432, 4608), dev);
      ASSERT_GE(few.tactic, 0);
      if (few.split_k == 1) {  // another split of the model's
        continue;
      }
      EXPECT_EQ(few.split_k, kSplitKStream) << m;
      const Tactic& t = tactic(few.tactic);
      EXPECT_LE(ceil_div(18432, t.cta_m) % 132, 85) << m;
      // 1152 columns: nine K blocks of 128, fewer than the ring's stages.
      EXPECT_EQ(best_sm90(desc(m, 262144, 1152), dev).split_k, kSplitKStream) << m;
      // 448 tiles of 64 rows, 3.4 waves: the hybrid's two whole waves, then 184
      // tiles over 132 SMs (2% faster than split 1 on an H100, §50).
      const Sm90Candidate waves = best_sm90(desc(m, 28672, 4096), dev);
      if (tactic(waves.tactic).cta_m == 64 && waves.split_k != 1) {
        EXPECT_EQ(waves.split_k, kSplitKStream) << m;
      }
      // An explicit split is the caller's.
      EXPECT_EQ(best_sm90(desc(m, 18432, 4608), dev, few.tactic, 1).split_k, 1) << m;
      // A gated call keeps split 1: the 8B layer's gate_up ran slower as the hybrid.
      GemmDesc gated = desc(m, 18432, 4608);
      gated.act = Act::SiluMul;
      EXPECT_FALSE(stream_k_evens_waves(gated, t, dev)) << m;
      GemmDesc gated_short = desc(m, 262144, 1152);
      gated_short.act = Act::SiluMul;
      EXPECT_FALSE(stream_k_evens_waves(gated_short, tactic(0), dev)) << m;
    }
    // 64 tokens: the short-row case lost there.
    const Sm90Candidate wide = best_sm90(desc(64, 13824, 1152), dev);
    EXPECT_NE(wide.split_k, kSplitKStream);
    // One wave or less: nothing to even out.
    EXPECT_FALSE(stream_k_evens_waves(desc(1, 8192, 4096), tactic(0), dev));
  }
  // The rule's bounds on one tile (64x8x128, 132 SMs): a last wave of 7 to 85
  // tiles (0.05-0.65 of the SMs) within five waves; short rows at any count.
  const DeviceInfo dev = hopper(132);
  const Tactic& t = tactic(0);
  ASSERT_EQ(t.cta_m, 64);
  ASSERT_EQ(t.cta_n, 8);
  EXPECT_TRUE(stream_k_evens_waves(desc(1, 64 * (264 + 85), 4096), t, dev));
  EXPECT_FALSE(stream_k_evens_waves(desc(1, 64 * (264 + 86), 4096), t, dev));
  EXPECT_FALSE(stream_k_evens_waves(desc(1, 64 * 264, 4096), t, dev));
  EXPECT_TRUE(stream_k_evens_waves(desc(1, 64 * (528 + 7), 4096), t, dev));
  EXPECT_FALSE(stream_k_evens_waves(desc(1, 64 * (528 + 6), 4096), t, dev));
  EXPECT_FALSE(stream_k_evens_waves(desc(1, 64 * (660 + 50), 4096), t, dev));
  EXPECT_TRUE(stream_k_evens_waves(desc(1, 64 * (660 + 50), 1024), t, dev));
}

// The wave quantization the model exists for: 4608 rows are 36 tiles of 128 or
// 72 of 64; three slices of the 128-row tiles fill 108 SMs in one wave (39
// clusters of 3 fit), four would need two waves of clusters (30 fit), and the
// 64-row tiles cannot split. Whatever it picks streams in one wave.
TEST(CostModel, SplitsToFillTheResidentClusters) {
  const Sm90Candidate best = best_sm90(desc(1, 4608, 3584), hopper(132));
  const Tactic& t = tactic(best.tactic);
  EXPECT_LE(ceil_div(4608, t.cta_m) * best.split_k, 132) << t.cta_m << " rows, split " << best.split_k;
  EXPECT_EQ(best.split_k, t.cta_m == 128 ? best.split_k : 1);
  EXPECT_LE(best.split_k, 3);
  // Without the measured table the SMs are shared evenly: 132 / 4 = 33 clusters.
  EXPECT_EQ(resident_clusters(hopper(132, false), 4), 33);
  EXPECT_EQ(resident_clusters(hopper(132), 4), 30);
}

// A grid of more than half and under three quarters of the SMs is priced as
// slower per byte than a grid just above three quarters: under PDL the next
// call cannot start whole beside it (perf-notes §29).
TEST(CostModel, PartialGridsArePricedSlowerPerByte) {
  const DeviceInfo dev = hopper(132);
  int32_t t64 = -1;
  for (int32_t i = 0; i < kNumTactics; ++i)
    if (tactics()[i].arch == 90 && tactics()[i].cta_m == 64 && tactics()[i].cta_n == 8 && tactics()[i].cta_k == 128)
      t64 = i;
  ASSERT_GE(t64, 0);
  const Tactic& t = tactic(t64);
  // 64-row tiles, split 1, one wave without K groups (over 80 CTAs): 98 CTAs
  // are a partial grid, 100 are not.
  auto per_row = [&](const DeviceInfo& d, int64_t ctas) {
    return predict_sm90_us(desc(1, 64 * ctas, 16384), t, 1, d) / double(ctas);
  };
  EXPECT_GT(per_row(dev, 98), 1.2 * per_row(dev, 100));
  // Not on a device whose SMs 98 CTAs do not leave short: 192 SMs.
  const DeviceInfo big = hopper(192, false);
  EXPECT_LT(per_row(big, 90), 1.1 * per_row(big, 100));
}

TEST(CostModel, ExplicitTacticOrSplitFixesThatPart) {
  const DeviceInfo dev = hopper(132);
  const GemmDesc g = desc(8, 4096, 4096);
  for (const Sm90Candidate& c : sm90_candidates(g, dev, 3)) EXPECT_EQ(c.tactic, 3);
  for (const Sm90Candidate& c : sm90_candidates(g, dev, -1, 5)) {
    EXPECT_EQ(c.split_k, 5);
    EXPECT_TRUE(c.pruned.empty()) << "a caller's split is not pruned by the wave rule: " << c.pruned;
  }
  EXPECT_EQ(best_sm90(g, dev, -1, 5).split_k, 5);
}

TEST(CostModel, DeterministicAndFollowsTheDevice) {
  const GemmDesc g = desc(8, 4096, 4096);
  const Sm90Candidate a = best_sm90(g, hopper(132)), b = best_sm90(g, hopper(132));
  EXPECT_EQ(a.tactic, b.tactic);
  EXPECT_EQ(a.split_k, b.split_k);
  EXPECT_EQ(a.us, b.us);
  // 16 SMs: no split fits 32 or 64 tiles; each SM streams more, so the time grows.
  const Sm90Candidate small = best_sm90(g, hopper(16));
  EXPECT_EQ(small.split_k, 1);
  EXPECT_GT(small.us, a.us);
  // Half the memory bandwidth: a weight stream takes longer, for both backends.
  DeviceInfo slow = hopper(132), fast = hopper(132);
  slow.peak_hbm_gbps = 2407;
  fast.peak_hbm_gbps = 4814;
  EXPECT_GT(best_sm90(desc(1, 28672, 4096), slow).us, best_sm90(desc(1, 28672, 4096), fast).us);
  EXPECT_GT(predict_cublas_us(desc(1, 28672, 4096), slow), predict_cublas_us(desc(1, 28672, 4096), fast));
}

TEST(CostModel, CublasGrowsWithTheWeights) {
  const DeviceInfo dev = hopper(132);
  for (int64_t m : {1, 8, 32, 64, 128, 256}) {
    double last = 0;
    for (int64_t n : {128, 1024, 4096, 16384, 65536}) {
      const double us = predict_cublas_us(desc(m, n, 4096), dev);
      EXPECT_GT(us, last) << m << " " << n;
      last = us;
    }
  }
}

}  // namespace

namespace {

// Params::k_groups: two consumer K groups only on grids of at most
// kSm90KGroupMaxCtas CTAs (split-K counts each CTA of a cluster), never under stream-K.
TEST(CostModel, KGroupsOnSmallGridsOnly) {
  const Tactic& t = tactic(0);  // 64x8x128
  ASSERT_EQ(t.cta_m, 64);
  EXPECT_EQ(sm90_k_groups(desc(1, 3072, 2048), t, 1), 2);   // 48 CTAs
  EXPECT_EQ(sm90_k_groups(desc(1, 4096, 2048), t, 1), 2);   // 64
  EXPECT_EQ(sm90_k_groups(desc(1, 5120, 2048), t, 1), 2);   // 80
  EXPECT_EQ(sm90_k_groups(desc(1, 5184, 2048), t, 1), 1);   // 81
  EXPECT_EQ(sm90_k_groups(desc(1, 2560, 4096), t, 2), 2);   // 40 clusters of 2
  EXPECT_EQ(sm90_k_groups(desc(1, 2624, 4096), t, 2), 1);   // 41 clusters of 2: 82 CTAs
  EXPECT_EQ(sm90_k_groups(desc(1, 640, 8192), t, 5), 2);    // 10 x 5
  EXPECT_EQ(sm90_k_groups(desc(1, 1024, 4096), t, kSplitKStream), 1);
  EXPECT_EQ(sm90_k_groups(desc(1, 2048, 2048, 2), t, 1), 2);  // 32 tiles x 2 batches
  EXPECT_EQ(sm90_k_groups(desc(1, 2048, 2048, 3), t, 1), 1);  // 96 CTAs
  EXPECT_EQ(sm90_k_groups(desc(1, 2560, 2048, 2), t, 1), 2);  // 80 CTAs
}

// Params::w_lead: the W stages each resident CTA keeps in flight once x loads
// (perf-notes §20), so that the grid holds about kSm90InflightBytes.
TEST(CostModel, WeightLeadHoldsTheGridsBytesInFlight) {
  const DeviceInfo dev = hopper(132);
  const Tactic& t = tactic(0);  // 64x8x128: 16 KB of weights per stage
  ASSERT_EQ(t.cta_m, 64);
  ASSERT_EQ(t.cta_k, 128);
  const int64_t w_stage = int64_t(t.cta_m) * t.cta_k * 2;
  // 6144 rows: 96 CTAs at 12 stages ask for 18 MB; the lead keeps ~10 MB.
  const int32_t lead = sm90_w_lead(desc(1, 6144, 4096), t, 1, 0, 12, dev);
  EXPECT_EQ(lead, int32_t(ceil_div(int64_t(kSm90InflightBytes), 96 * w_stage)));
  EXPECT_LT(lead, 12);
  EXPECT_GE(96 * lead * w_stage, int64_t(kSm90InflightBytes));
  EXPECT_LT(96 * (lead - 1) * w_stage, int64_t(kSm90InflightBytes));
  // Split-K counts every CTA of the cluster: 2 x 48 CTAs, the same lead.
  EXPECT_EQ(sm90_w_lead(desc(1, 3072, 4096), t, 2, 0, 12, dev), lead);
  // 48 CTAs at 12 stages hold 9.4 MB: the whole ring, no pacing.
  EXPECT_EQ(sm90_w_lead(desc(1, 3072, 2048), t, 1, 0, 12, dev), 0);
  // Past one CTA per SM only the resident ones count: a grid of 448 tiles on 132 SMs.
  const int32_t full = sm90_w_lead(desc(1, 28672, 4096), t, 1, 0, 12, dev);
  EXPECT_EQ(full, int32_t(ceil_div(int64_t(kSm90InflightBytes), 132 * w_stage)));
  // A ring shallow enough for two CTAs per SM: twice as many resident, half the lead (at least 2).
  const int32_t shallow = sm90_w_lead(desc(1, 28672, 4096), t, 1, 0, 6, dev);
  ASSERT_GE(dev.smem_optin_bytes / sm90_smem_bytes(t, 6, 1), 2);
  EXPECT_EQ(shallow, std::max<int32_t>(2, int32_t(ceil_div(int64_t(kSm90InflightBytes), 264 * w_stage))));
  // The first wave the lead is sized for (and the only CTAs it paces): every
  // CTA of a grid under one wave, one per SM past it, two where two rings fit.
  EXPECT_EQ(sm90_resident_ctas(desc(1, 6144, 4096), t, 1, 0, 12, dev), 96);
  EXPECT_EQ(sm90_resident_ctas(desc(1, 3072, 4096), t, 2, 0, 12, dev), 96);
  EXPECT_EQ(sm90_resident_ctas(desc(1, 28672, 4096), t, 1, 0, 12, dev), 132);
  EXPECT_EQ(sm90_resident_ctas(desc(1, 28672, 4096), t, 1, 0, 6, dev), 264);
  EXPECT_EQ(sm90_resident_ctas(desc(1, 28672, 4096), t, kSplitKStream, 120, 12, dev), 120);
  // The CTAs that may be paced: a plain launch's first wave, a gated launch's
  // whole grid (perf-notes §45), none without a lead.
  EXPECT_EQ(sm90_pace_ctas(desc(1, 28672, 4096), t, 1, 0, 12, full, dev), 132);
  EXPECT_EQ(sm90_pace_ctas(desc(1, 6144, 4096), t, 1, 0, 12, lead, dev), 96);
  GemmDesc gated = desc(1, 28672, 4096);
  gated.act = Act::SiluMul;
  EXPECT_EQ(sm90_pace_ctas(gated, t, 1, 0, 12, full, dev), 448);
  EXPECT_EQ(sm90_pace_ctas(desc(1, 28672, 4096), t, 1, 0, 12, 0, dev), 0);
  EXPECT_EQ(sm90_pace_ctas(gated, t, 1, 0, 12, 0, dev), 0);
  // Stream-K: its grid, one CTA per SM.
  EXPECT_EQ(sm90_w_lead(desc(1, 28672, 4096), t, kSplitKStream, 132, 12, dev), full);
  // Never fewer than two stages in flight, and never the whole ring or more.
  for (int64_t n : {64, 1024, 4096, 8192, 65536})
    for (int32_t stages : {2, 3, 6, 12}) {
      const int32_t l = sm90_w_lead(desc(1, n, 4096), t, 1, 0, stages, dev);
      EXPECT_TRUE(l == 0 || (l >= 2 && l < stages)) << n << " " << stages << " " << l;
    }
}

// Params::trigger_at_entry (perf-notes §58): a one-wave grid lets its PDL
// successor launch at entry where its weights are under the bound or it is
// gated; a grid of more CTAs than SMs never does.
TEST(CostModel, EarlyTriggerOnlyForOneWaveSmallOrGatedGrids) {
  const DeviceInfo dev = hopper(132);
  const Tactic& t = tactic(0);  // 64x8x128
  ASSERT_EQ(t.cta_m, 64);
  // 4096x4096 (33.5 MB): 64 CTAs, one wave, under 48 MB.
  EXPECT_TRUE(sm90_trigger_at_entry(desc(1, 4096, 4096), t, 1, 0, dev));
  // Split-K counts every CTA: 64 x 2 is one wave, 64 x 3 is not.
  EXPECT_TRUE(sm90_trigger_at_entry(desc(1, 4096, 4096), t, 2, 0, dev));
  EXPECT_FALSE(sm90_trigger_at_entry(desc(1, 4096, 4096), t, 3, 0, dev));
  // 8192x8192 (134 MB): 128 CTAs, one wave, but over the bound.
  const GemmDesc big = desc(1, 8192, 8192);
  ASSERT_GE(weight_bytes(big), kSm90EarlyTriggerMaxBytes);
  EXPECT_FALSE(sm90_trigger_at_entry(big, t, 1, 0, dev));
  // The same weight gated (the 70B-TP8 gate_up's kind): at entry.
  GemmDesc gated = big;
  gated.act = Act::SiluMul;
  EXPECT_TRUE(sm90_trigger_at_entry(gated, t, 1, 0, dev));
  // Gated but 448 CTAs: more than one wave, never.
  gated = desc(1, 28672, 4096);
  gated.act = Act::SiluMul;
  EXPECT_FALSE(sm90_trigger_at_entry(gated, t, 1, 0, dev));
  // Stream-K: its grid is at most one CTA per SM.
  EXPECT_TRUE(sm90_trigger_at_entry(desc(1, 4096, 4096), t, kSplitKStream, 132, dev));
  EXPECT_FALSE(sm90_trigger_at_entry(desc(1, 8192, 8192), t, kSplitKStream, 132, dev));
  // One wave is counted against the device's SMs: 64 CTAs on 60 SMs are two waves.
  EXPECT_FALSE(sm90_trigger_at_entry(desc(1, 4096, 4096), t, 1, 0, hopper(60)));
}

// TGV_EXP_EARLY_TRIGGER=5's grids (perf-notes §60): ungated, one wave, and
// filling most of the SMs (stream-K fills them all), whatever the weight bytes.
TEST(CostModel, PacedEarlyOnlyForLargeOneWaveGridsThatFillTheSms) {
  const DeviceInfo dev = hopper(132);
  const Tactic& t = tactic(0);  // 64x8x128
  // 8192x8192 (134 MB): 128 CTAs of 132.
  EXPECT_TRUE(sm90_paced_early(desc(1, 8192, 8192), t, 1, 0, dev));
  EXPECT_FALSE(sm90_trigger_at_entry(desc(1, 8192, 8192), t, 1, 0, dev));
  // 5120x25600 (262 MB): 80 CTAs, under the fill (such grids still lost early and paced).
  EXPECT_FALSE(sm90_paced_early(desc(1, 5120, 25600), t, 1, 0, dev));
  // 96 CTAs are just over the fill, 64 under, at any size (50, 12.6, 33.5 MB).
  EXPECT_TRUE(sm90_paced_early(desc(1, 6144, 4096), t, 1, 0, dev));
  EXPECT_TRUE(sm90_paced_early(desc(1, 6144, 1024), t, 1, 0, dev));
  EXPECT_FALSE(sm90_paced_early(desc(1, 4096, 4096), t, 1, 0, dev));
  // Two waves by split-K, never; stream-K over the SMs, always.
  EXPECT_FALSE(sm90_paced_early(desc(1, 8192, 8192), t, 2, 0, dev));
  EXPECT_TRUE(sm90_paced_early(desc(1, 5120, 25600), t, kSplitKStream, 132, dev));
  // Gated grids trigger at entry by the plan's rule already, unpaced when waited.
  GemmDesc gated = desc(1, 8192, 8192);
  gated.act = Act::SiluMul;
  EXPECT_FALSE(sm90_paced_early(gated, t, 1, 0, dev));
  // The fill is of the device's SMs: 128 CTAs on 200 SMs are under it.
  EXPECT_FALSE(sm90_paced_early(desc(1, 8192, 8192), t, 1, 0, hopper(200)));
  // Early and unpaced is what lost (perf-notes §58): such a grid must have a lead to pace by.
  for (const GemmDesc& g : {desc(1, 8192, 8192), desc(1, 6144, 1024), desc(16, 8192, 3584)}) {
    const Tactic& tt = tactic(g.m <= 8 ? 0 : 1);
    const int32_t stages = sm90_plan_stages(g, tt, 1, dev);
    ASSERT_TRUE(sm90_paced_early(g, tt, 1, 0, dev)) << g.n << "x" << g.k;
    EXPECT_GT(sm90_w_lead(g, tt, 1, 0, stages, dev), 0) << g.n << "x" << g.k;
  }
}

}  // namespace

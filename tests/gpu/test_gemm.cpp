// Numerics of tgv_gemm on both backends against the float64 CPU reference,
// with guard bands and poisoned padding (see harness.hpp).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "api/validate.hpp"
#include "common/error.hpp"
#include "gpu/harness.hpp"
#include "plan/device_info.hpp"
#include "plan/plan.hpp"
#include "tactics/tactics.hpp"
#include "tgv/tgv.h"

namespace {

using tgv_test::CaseResult;
using tgv_test::GemmCase;

// Runs a case and reports. The tgv backend may refuse a case only where this
// device cannot run it (a skip, saying why: tgv_cannot_run) or where the
// kernels refuse it by design (a pass once the refusal is checked); on a
// device its family serves, any other refusal fails, and so does a refusal of
// backend auto or cublas, which serve every valid case. A refused call must
// have written nothing (run_case checks).
void expect_case(const GemmCase& c) {
  const CaseResult r = tgv_test::run_case(c);
  for (const std::string& f : r.failures) ADD_FAILURE() << f;
  if (c.backend == TGV_BACKEND_TGV) {
    const std::string cannot = tgv_test::tgv_cannot_run(c), by_design = tgv_test::tgv_refuses_by_design(c);
    if (!cannot.empty() || !by_design.empty()) {
      ASSERT_EQ(r.status, TGV_ERROR_NOT_SUPPORTED)
          << "expected a refusal (" << (cannot.empty() ? by_design : cannot) << "), got " << tgv_status_name(r.status)
          << (r.message.empty() ? "" : ": ") << r.message;
      if (!cannot.empty() && r.failures.empty()) GTEST_SKIP() << "cannot run on this device: " << cannot;
      return;
    }
  }
  ASSERT_EQ(r.status, TGV_SUCCESS) << tgv_status_name(r.status) << ": " << r.message;
  ::testing::Test::RecordProperty("max_abs_err", std::to_string(r.max_abs_err));
}

GemmCase shape(int64_t m, int64_t n, int64_t k, int64_t l = 1) {
  GemmCase c;
  c.m = m, c.n = n, c.k = k, c.l = l;
  return c;
}

// The grid run on each backend. Shapes stay small enough that the float64
// reference of the whole grid takes seconds on 16 cores.
std::vector<GemmCase> grid(int32_t backend) {
  std::vector<GemmCase> cases;
  auto add = [&](GemmCase c) {
    c.backend = backend;
    cases.push_back(c);
  };
  // M = 1 and odd M, N.
  add(shape(1, 4096, 4096));
  add(shape(1, 33, 8));
  add(shape(7, 1000, 136));
  add(shape(33, 1282, 1000));
  add(shape(1000, 7, 4104));
  add(shape(1282, 33, 512));
  add(shape(300, 520, 264));  // M beyond the largest token tile
  // K not a multiple of 128 (nor of 64 where possible).
  add(shape(64, 256, 8));
  add(shape(16, 512, 136));
  add(shape(8, 1282, 4104));
  add(shape(128, 1024, 4096));
  // The largest: ~4.3e9 multiply-adds of reference.
  add(shape(256, 4100, 4104));
  // Batches.
  add(shape(17, 264, 136, 3));
  add(shape(64, 1024, 4096, 3));
  {
    GemmCase c = shape(5, 96, 64, 2);
    c.batch_pad = 24;  // gaps between batches, in inputs and out
    add(c);
  }
  {
    GemmCase c = shape(9, 264, 520, 3);
    c.w_broadcast = true;  // one weight for every batch
    add(c);
    c = shape(9, 264, 520, 3);
    c.x_broadcast = true;
    add(c);
  }
  // Bias.
  for (GemmCase c : {shape(1, 1000, 1000), shape(33, 1282, 4104), shape(128, 256, 64, 2)}) {
    c.bias = true;
    add(c);
  }
  // Every layout combination, on three shapes; the first one padded.
  for (int mask = 0; mask < 8; ++mask) {
    for (int s = 0; s < 3; ++s) {
      GemmCase c = s == 0 ? shape(33, 264, 136, 2) : s == 1 ? shape(1, 1282, 1000) : shape(130, 520, 1000);
      c.x_k_major = !(mask & 1);
      c.w_k_major = !(mask & 2);
      c.out_row_major = !(mask & 4);
      if (s == 0) {
        c.bias = true;
        c.in_pad = 8;
        c.out_pad = 5;
        c.batch_pad = 16;
      }
      if (s == 2) c.bias = true;
      add(c);
    }
  }
  // Padded leading dimensions alone.
  {
    GemmCase c = shape(24, 1000, 512);
    c.in_pad = 8;
    c.out_pad = 3;
    add(c);
    c = shape(7, 264, 1000, 2);
    c.in_pad = 24;
    c.out_pad = 8;
    c.bias = true;
    add(c);
  }
  // PDL off, the legacy stream, CUDA-graph capture.
  {
    GemmCase c = shape(16, 4096, 4096);
    c.pdl = 0;
    add(c);
    c = shape(16, 1000, 1000);
    c.bias = true;
    c.null_stream = true;
    add(c);
    c = shape(16, 4096, 4096);
    c.graph = true;
    add(c);
    c = shape(33, 1282, 1000, 2);
    c.bias = true;
    c.out_row_major = false;
    c.graph = true;
    add(c);
  }
  return cases;
}

class CublasGemm : public ::testing::TestWithParam<GemmCase> {};
TEST_P(CublasGemm, MatchesReference) {
  TGV_REQUIRE_GPU();
  expect_case(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Grid, CublasGemm, ::testing::ValuesIn(grid(TGV_BACKEND_CUBLAS)),
                         [](const auto& info) { return info.param.name(); });

class TgvGemm : public ::testing::TestWithParam<GemmCase> {};
TEST_P(TgvGemm, MatchesReference) {
  TGV_REQUIRE_GPU();
  expect_case(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Grid, TgvGemm, ::testing::ValuesIn(grid(TGV_BACKEND_TGV)),
                         [](const auto& info) { return info.param.name(); });

// The automatic choice, whichever backend it lands on.
class AutoGemm : public ::testing::TestWithParam<GemmCase> {};
TEST_P(AutoGemm, MatchesReference) {
  TGV_REQUIRE_GPU();
  expect_case(GetParam());
}
std::vector<GemmCase> auto_cases() {
  std::vector<GemmCase> cases;
  for (GemmCase c : {shape(1, 4096, 4096), shape(16, 4096, 4096), shape(200, 1282, 1000, 2)}) {
    c.backend = TGV_BACKEND_AUTO;
    c.bias = c.m == 16;
    cases.push_back(c);
  }
  GemmCase c = shape(9, 264, 520, 3);
  c.backend = TGV_BACKEND_AUTO;
  c.w_broadcast = true;  // the tgv kernels refuse it; auto must still serve it
  cases.push_back(c);
  return cases;
}
INSTANTIATE_TEST_SUITE_P(Shapes, AutoGemm, ::testing::ValuesIn(auto_cases()),
                         [](const auto& info) { return info.param.name(); });

// Every tactic, explicitly, on shapes with partial tiles in every dimension.
class TgvTactic : public ::testing::TestWithParam<int32_t> {};
TEST_P(TgvTactic, MatchesReference) {
  TGV_REQUIRE_GPU();
  // K = 1088 is whole 64-column chunks: the folded (one box per stage) maps.
  for (GemmCase c : {shape(37, 1000, 1000), shape(130, 264, 520, 2), shape(9, 333, 1088)}) {
    c.backend = TGV_BACKEND_TGV;
    c.tactic = GetParam();
    c.bias = c.l == 2;
    SCOPED_TRACE(c.name());
    expect_case(c);
    if (IsSkipped() || HasFatalFailure()) return;
  }
}
INSTANTIATE_TEST_SUITE_P(All, TgvTactic, ::testing::Range(0, tgv_num_tactics()));

// Explicit split-K factors on a deep-K, few-CTA shape.
class TgvSplitK : public ::testing::TestWithParam<int32_t> {};
TEST_P(TgvSplitK, MatchesReference) {
  TGV_REQUIRE_GPU();
  GemmCase c = shape(8, 1024, 4096);
  c.backend = TGV_BACKEND_TGV;
  c.split_k = GetParam();
  c.bias = true;
  expect_case(c);
}
INSTANTIATE_TEST_SUITE_P(Factors, TgvSplitK, ::testing::Values(1, 2, 3, 4, 5, 8, 16));

// Stream-K over the grid's cases that it can share out (M within a 64 x 128
// tile, at least 8 K blocks of 128 per the problem): tails, layouts, padding,
// batches, bias, PDL off, the legacy stream and graph capture, each run twice
// and compared bitwise (run_case). A stream-K tile's partial sums meet in CTA
// order whichever CTA finishes it, so a repeated run must be bitwise equal.
std::vector<GemmCase> stream_k_grid() {
  std::vector<GemmCase> cases;
  for (GemmCase c : grid(TGV_BACKEND_TGV)) {
    if (c.m > 128 || ((c.n + 127) / 128) * ((c.k + 127) / 128) * c.l < 8) continue;
    c.split_k = TGV_SPLIT_K_STREAM;
    cases.push_back(c);
  }
  // Few tiles over deep K: each tile's K blocks span tens of CTAs, so most
  // tiles are summed from many partials; token tiles beyond one, bias.
  for (GemmCase c : {shape(8, 128, 16384), shape(8, 192, 8192), shape(33, 200, 6000), shape(100, 72, 4104, 2)}) {
    c.backend = TGV_BACKEND_TGV;
    c.split_k = TGV_SPLIT_K_STREAM;
    c.bias = c.m != 33;
    cases.push_back(c);
  }
  // Two and more waves of 64-row tiles (tactic 0) over one or two batches: the
  // plan takes the first wave whole (the hybrid, kStreamKWholeWaves) and every
  // CTA's stream-K range crosses several tiles; TGV_EXP_SK_HYBRID=0 runs them as
  // plain stream-K, 2 with every whole wave taken.
  for (GemmCase c : {shape(1, 19200, 512), shape(8, 17000, 1024), shape(4, 9000, 768, 2)}) {
    c.backend = TGV_BACKEND_TGV;
    c.tactic = 0;
    c.split_k = TGV_SPLIT_K_STREAM;
    c.bias = c.m == 8;
    cases.push_back(c);
  }
  return cases;
}
class TgvStreamK : public ::testing::TestWithParam<GemmCase> {};
TEST_P(TgvStreamK, MatchesReference) {
  TGV_REQUIRE_GPU();
  expect_case(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Grid, TgvStreamK, ::testing::ValuesIn(stream_k_grid()),
                         [](const auto& info) { return info.param.name(); });

// Every tactic under stream-K: the SM90 ones whose partial tile fits the
// workspace's slots compute; a wider one is refused up front, nothing written.
class TgvStreamKTactic : public ::testing::TestWithParam<int32_t> {};
TEST_P(TgvStreamKTactic, MatchesReferenceOrRefuses) {
  TGV_REQUIRE_GPU();
  tgv_tactic_info info;
  ASSERT_EQ(tgv_get_tactic(GetParam(), &info), TGV_SUCCESS);
  for (GemmCase c : {shape(37, 1000, 1000), shape(130, 264, 520, 2), shape(9, 333, 1088)}) {
    c.backend = TGV_BACKEND_TGV;
    c.tactic = GetParam();
    c.split_k = TGV_SPLIT_K_STREAM;
    c.bias = c.l == 2;
    SCOPED_TRACE(c.name());
    if (const std::string why = tgv_test::tgv_cannot_run(c); !why.empty())
      GTEST_SKIP() << "cannot run on this device: " << why;
    const CaseResult r = tgv_test::run_case(c);
    for (const std::string& f : r.failures) ADD_FAILURE() << f;
    const bool fits = int64_t(info.cta_m) * info.cta_n <= tgv::detail::kStreamKMaxTileFloats;
    EXPECT_EQ(r.status, fits ? TGV_SUCCESS : TGV_ERROR_NOT_SUPPORTED) << tgv_status_name(r.status) << ": " << r.message;
    if (!fits) {
      EXPECT_NE(r.message.find("stream-K"), std::string::npos) << r.message;
    }
  }
}
INSTANTIATE_TEST_SUITE_P(All, TgvStreamKTactic, ::testing::Range(0, tgv_num_tactics()));

// A problem too small to share out (one tile of one K block), and one whose
// token tile is too wide for the workspace's slots: refused, nothing written.
TEST(TgvStreamKLimit, UnsharableProblemsAreRefused) {
  TGV_REQUIRE_GPU();
  for (GemmCase c : {shape(1, 33, 8), shape(200, 1024, 4096)}) {
    c.backend = TGV_BACKEND_TGV;
    c.split_k = TGV_SPLIT_K_STREAM;
    SCOPED_TRACE(c.name());
    if (const std::string why = tgv_test::tgv_cannot_run(c); !why.empty())
      GTEST_SKIP() << "cannot run on this device: " << why;
    const CaseResult r = tgv_test::run_case(c);
    for (const std::string& f : r.failures) ADD_FAILURE() << f;
    EXPECT_EQ(r.status, TGV_ERROR_NOT_SUPPORTED) << tgv_status_name(r.status) << ": " << r.message;
    EXPECT_NE(r.message.find("split_k=-1 (stream-K)"), std::string::npos) << r.message;
  }
}

// Explicit ring depths, the shallowest included, alone and under split-K: the
// ring wraps many times over K, and the epilogue and the split-K partials
// reuse a small ring. A depth whose ring cannot hold them (min_stages_for) must
// be refused up front, writing nothing; every other depth must compute. An
// sm_100 tactic runs its own fixed depth and refuses any other.
class TgvStages : public ::testing::TestWithParam<int32_t> {};
TEST_P(TgvStages, MatchesReference) {
  TGV_REQUIRE_GPU();
  const tgv::detail::Tactic& t = tgv::detail::tactic(GetParam());
  tgv_tactic_info info;
  ASSERT_EQ(tgv_get_tactic(GetParam(), &info), TGV_SUCCESS);
  GemmCase base = shape(9, 333, 4104);
  base.backend = TGV_BACKEND_TGV;
  base.tactic = GetParam();
  base.bias = true;
  if (const std::string why = tgv_test::tgv_cannot_run(base); !why.empty())
    GTEST_SKIP() << "cannot run on this device: " << why;
  if (info.arch != 90) {
    GemmCase c = base;
    c.stages = info.stages;
    SCOPED_TRACE(c.name());
    expect_case(c);
    c.stages = info.stages == 2 ? 3 : 2;
    const CaseResult r = tgv_test::run_case(c);
    for (const std::string& f : r.failures) ADD_FAILURE() << f;
    EXPECT_EQ(r.status, TGV_ERROR_NOT_SUPPORTED) << "stages=" << c.stages << ": " << r.message;
    return;
  }
  for (int32_t stages : {2, 3, 8}) {
    if (stages > info.stages) continue;  // deeper than shared memory holds
    for (int32_t split : {1, 2}) {
      GemmCase c = base;
      c.stages = stages;
      c.split_k = split;
      SCOPED_TRACE(c.name());
      const CaseResult r = tgv_test::run_case(c);
      for (const std::string& f : r.failures) ADD_FAILURE() << f;
      const bool ring_holds = stages >= tgv::detail::min_stages_for(t, split);
      EXPECT_EQ(r.status, ring_holds ? TGV_SUCCESS : TGV_ERROR_NOT_SUPPORTED)
          << tgv_status_name(r.status) << ": " << r.message << " (the ring needs "
          << tgv::detail::min_stages_for(t, split) << " stages)";
    }
  }
}
INSTANTIATE_TEST_SUITE_P(All, TgvStages, ::testing::Range(0, tgv_num_tactics()));

// Grids wide enough that the W producer is paced (Params::w_lead > 0: the
// deepest ring over ~129 CTAs would put more than kSm90InflightBytes in
// flight): every sm_90 tactic with row and K tails, bias and graph capture; the
// narrow token tiles (the ones paced here) also at split 2, stream-K and PDL
// off. Each run twice and compared bitwise. The small grids of the other
// suites run unpaced. K stays short: the float64 reference is the cost.
class TgvPaced : public ::testing::TestWithParam<int32_t> {};
TEST_P(TgvPaced, MatchesReference) {
  TGV_REQUIRE_GPU();
  const tgv::detail::Tactic& t = tgv::detail::tactic(GetParam());
  GemmCase base = shape(9, 8200, 2056);
  base.backend = TGV_BACKEND_TGV;
  base.tactic = GetParam();
  base.bias = true;
  if (const std::string why = tgv_test::tgv_cannot_run(base); !why.empty())
    GTEST_SKIP() << "cannot run on this device: " << why;
  const bool narrow = t.cta_n <= 16;
  struct Variant {
    int32_t split, pdl;
  };
  std::vector<Variant> variants = {{1, 1}};
  if (narrow) variants.insert(variants.end(), {{1, 0}, {2, 1}, {TGV_SPLIT_K_STREAM, 1}});
  int paced = 0;
  for (const Variant& v : variants) {
    GemmCase c = base;
    c.split_k = v.split;
    c.pdl = v.pdl;
    c.graph = v.split == 1 && v.pdl == 1;
    SCOPED_TRACE(c.name());
    tgv_test::GemmFixture f(c);
    tgv::detail::Plan p;
    try {
      p = tgv::detail::plan(tgv::detail::validate_problem(f.problem()), f.options(),
                            tgv::detail::current_device_info());
    } catch (const tgv::detail::Error& e) {
      // A split this tactic's ring cannot hold, or stream-K a wide tile cannot run: refused up front.
      EXPECT_EQ(e.status(), TGV_ERROR_NOT_SUPPORTED) << e.what();
      continue;
    }
    paced += p.w_lead > 0;
    const CaseResult r = tgv_test::run_case(c);
    for (const std::string& fail : r.failures) ADD_FAILURE() << fail;
    EXPECT_EQ(r.status, TGV_SUCCESS) << tgv_status_name(r.status) << ": " << r.message;
  }
  // The narrow token tiles' rings are deep enough to be paced here.
  if (narrow) {
    EXPECT_GT(paced, 0);
  }
}
INSTANTIATE_TEST_SUITE_P(Sm90, TgvPaced, ::testing::Range(0, tgv::detail::kNumSm90Tactics));

// The narrow token tiles' K groups (two consumer warpgroups per 64 rows taking
// the ring's stages in turn, their sums met before the epilogue): K block
// counts that leave the second group one block fewer, one block, or none (a
// single block), K tails, split-K clusters whose ranks hold odd and even
// counts, M- and N-major inputs, column-major out, a batch; every sm_90 tactic,
// so the wide tiles (one group) run the same cases. Bitwise repeat in each.
class TgvKGroups : public ::testing::TestWithParam<int32_t> {};
TEST_P(TgvKGroups, MatchesReference) {
  TGV_REQUIRE_GPU();
  const tgv::detail::Tactic& t = tgv::detail::tactic(GetParam());
  struct Variant {
    int64_t k_blocks, k_tail;
    int32_t split;
    bool x_k_major, w_k_major, out_row_major;
    int64_t l;
  };
  const std::vector<Variant> variants = {
      {1, 0, 1, true, true, true, 1},  {2, 0, 1, true, true, true, 1},   {3, 8, 1, true, true, true, 1},
      {5, 0, 1, false, true, false, 1}, {6, 40, 2, true, true, true, 1}, {7, 0, 2, true, false, true, 2},
      {9, 24, 3, true, true, false, 1},
  };
  for (const Variant& v : variants) {
    // A K tail of k_tail columns makes the last block partial (k_blocks counts it).
    const int64_t k = v.k_blocks * t.cta_k - (v.k_tail ? t.cta_k - v.k_tail : 0);
    // M = the tile less one token, except M-major x (its rows' 16-byte TMA stride).
    GemmCase c = shape(v.x_k_major ? t.cta_n - 1 : t.cta_n, 200, k, v.l);
    c.backend = TGV_BACKEND_TGV;
    c.tactic = GetParam();
    c.split_k = v.split;
    c.x_k_major = v.x_k_major;
    c.w_k_major = v.w_k_major;
    c.out_row_major = v.out_row_major;
    c.bias = true;
    SCOPED_TRACE(c.name());
    if (const std::string why = tgv_test::tgv_cannot_run(c); !why.empty())
      GTEST_SKIP() << "cannot run on this device: " << why;
    const CaseResult r = tgv_test::run_case(c);
    if (r.status == TGV_ERROR_NOT_SUPPORTED) continue;  // a split this tactic's ring cannot hold: refused up front
    for (const std::string& fail : r.failures) ADD_FAILURE() << fail;
    EXPECT_EQ(r.status, TGV_SUCCESS) << tgv_status_name(r.status) << ": " << r.message;
  }
}
INSTANTIATE_TEST_SUITE_P(Sm90, TgvKGroups, ::testing::Range(0, tgv::detail::kNumSm90Tactics));

// K groups over several laps of the ring (perf-notes §39): on an odd ring the
// two groups would alternate laps of a slot and a parity wait could not keep
// them apart, so the kernel runs one group there; on an even one, two. Each
// narrow tile at an odd and an even depth, K blocks three laps and a half of
// the ring, a grid small enough for K groups; against the reference, bitwise
// repeated. (The race itself needed out-of-order landings under other
// kernels' traffic: bench/experiments/split_stress.py, h200-round.sh PART=19.)
TEST(TgvKGroupRings, OddAndEvenRingsOverSeveralLaps) {
  TGV_REQUIRE_GPU();
  int ran = 0;
  for (int32_t id = 0; id < tgv::detail::kNumSm90Tactics; ++id) {
    const tgv::detail::Tactic& t = tgv::detail::tactic(id);
    if (!tgv::detail::sm90_tile_has_k_groups(t.cta_m, t.cta_n)) continue;
    for (int32_t stages : {5, 6}) {
      GemmCase c = shape(t.cta_n - 1, 640, (stages * 7 / 2) * t.cta_k + 8);
      c.backend = TGV_BACKEND_TGV;
      c.tactic = id;
      c.split_k = 1;
      c.stages = stages;
      c.bias = true;
      SCOPED_TRACE(c.name());
      if (const std::string why = tgv_test::tgv_cannot_run(c); !why.empty())
        GTEST_SKIP() << "cannot run on this device: " << why;
      const CaseResult r = tgv_test::run_case(c);
      for (const std::string& fail : r.failures) ADD_FAILURE() << fail;
      EXPECT_EQ(r.status, TGV_SUCCESS) << tgv_status_name(r.status) << ": " << r.message;
      ++ran;
    }
  }
  EXPECT_GT(ran, 0);
}

// The two split-K reductions (the peers' pushed sums, and the leader's reads of
// the peers' rings that TGV_SPLIT_K_PULL=1 forces, as racecheck runs them) add
// the same sums in the same rank order: bitwise the same out, on tiles whose
// partials are pushed (64x8 up to split 9, a 64x16 tile, a 128-row one), each
// also against the float64 reference.
TEST(TgvSplitKReductions, PushedAndPulledAgreeBitwise) {
  TGV_REQUIRE_GPU();
  struct Variant {
    int32_t cta_m, cta_n, split;
    int64_t m;
  };
  auto tactic_of = [](int32_t cta_m, int32_t cta_n) {
    for (int32_t i = 0; i < tgv::detail::kNumTactics; ++i) {
      const tgv::detail::Tactic& t = tgv::detail::tactics()[i];
      if (t.arch == 90 && t.cta_m == cta_m && t.cta_n == cta_n && t.cta_k == 128) return i;
    }
    return -1;
  };
  int ran = 0;
  for (const Variant& v : {Variant{64, 8, 2, 1}, Variant{64, 8, 9, 5}, Variant{64, 16, 4, 13}, Variant{128, 8, 3, 8}}) {
    GemmCase c = shape(v.m, 1000, 4104);
    c.backend = TGV_BACKEND_TGV;
    c.tactic = tactic_of(v.cta_m, v.cta_n);
    ASSERT_GE(c.tactic, 0) << v.cta_m << "x" << v.cta_n << "x128";
    c.split_k = v.split;
    c.bias = true;
    SCOPED_TRACE(c.name());
    ASSERT_GT(tgv::detail::sm90_split_push_bytes(v.cta_m, v.cta_n, v.split), 0);
    if (const std::string why = tgv_test::tgv_cannot_run(c); !why.empty()) GTEST_SKIP() << why;
    tgv_test::GemmFixture f(c);
    std::vector<std::string> failures;
    ASSERT_EQ(f.run(f.options(), failures), TGV_SUCCESS) << tgv_last_error();
    const std::vector<uint16_t> pushed = f.download();
    f.check_result(pushed, failures);
    f.poison();
    ::setenv("TGV_SPLIT_K_PULL", "1", 1);
    const tgv_status pulled_status = f.run(f.options(), failures);
    ::unsetenv("TGV_SPLIT_K_PULL");
    ASSERT_EQ(pulled_status, TGV_SUCCESS) << tgv_last_error();
    const std::vector<uint16_t> pulled = f.download();
    f.check_result(pulled, failures);
    for (const std::string& fail : failures) ADD_FAILURE() << fail;
    int64_t differ = 0;
    for (size_t i = 0; i < pushed.size(); ++i) differ += pushed[i] != pulled[i];
    EXPECT_EQ(differ, 0) << "elements that differ between the pushed and the pulled reduction";
    ++ran;
  }
  EXPECT_EQ(ran, 4);
}

// A factor beyond Hopper's largest cluster (16) is an invalid option on every
// device: refused before anything runs, nothing written.
TEST(TgvSplitKLimit, BeyondClusterLimitIsRefused) {
  TGV_REQUIRE_GPU();
  GemmCase c = shape(8, 1024, 8192);
  c.backend = TGV_BACKEND_TGV;
  c.split_k = 32;
  const CaseResult r = tgv_test::run_case(c);
  for (const std::string& f : r.failures) ADD_FAILURE() << f;
  EXPECT_EQ(r.status, TGV_ERROR_INVALID_ARGUMENT) << tgv_status_name(r.status) << ": " << r.message;
}

// tgv_gemm from several host threads at once, each on its own stream: both
// backends, and two threads racing to build the same new cuBLASLt plan.
TEST(Concurrency, ThreadsOnTheirOwnStreams) {
  TGV_REQUIRE_GPU();
  std::vector<GemmCase> cases;
  for (int i = 0; i < 2; ++i) {  // same fresh shape twice: the plan-cache race
    GemmCase c = shape(24, 2056, 1032);
    c.bias = true;
    cases.push_back(c);
  }
  {
    GemmCase c = shape(130, 520, 1000);
    c.out_row_major = false;
    c.bias = true;
    cases.push_back(c);
    c = shape(16, 4096, 4096);
    c.backend = TGV_BACKEND_TGV;
    cases.push_back(c);
    c = shape(37, 1000, 1000, 2);
    c.backend = TGV_BACKEND_TGV;
    c.bias = true;
    cases.push_back(c);
    c = shape(8, 2048, 4096);
    c.backend = TGV_BACKEND_AUTO;
    cases.push_back(c);
  }
  const std::vector<CaseResult> results = tgv_test::run_cases_on_threads(cases);
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name() + " backend " + std::to_string(cases[i].backend));
    const bool refused = cases[i].backend == TGV_BACKEND_TGV && !tgv_test::tgv_cannot_run(cases[i]).empty();
    EXPECT_EQ(results[i].status, refused ? TGV_ERROR_NOT_SUPPORTED : TGV_SUCCESS) << results[i].message;
    for (const std::string& f : results[i].failures) ADD_FAILURE() << f;
  }
}

// tgv_get_plan reports what tgv_gemm runs: the rules of src/plan on this GPU
// (the tests run without a tuning file: TGV_TUNING_FILE is not set by them).
TEST(GetPlan, FollowsTheDispatchRules) {
  TGV_REQUIRE_GPU();
  if (std::getenv("TGV_TUNING_FILE") != nullptr) GTEST_SKIP() << "a tuning file is set";
  int device = 0, major = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  ASSERT_EQ(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), cudaSuccess);
  tgv_problem p;
  tgv_default_problem(&p, 200, 4096, 4096, 1);
  p.x = p.w = p.out = reinterpret_cast<void*>(uintptr_t(1) << 20);  // planned, never launched
  p.out = reinterpret_cast<void*>(uintptr_t(1) << 40);
  tgv_options o;
  tgv_default_options(&o);
  tgv_plan_info plan;
  ASSERT_EQ(tgv_get_plan(&p, &o, &plan), TGV_SUCCESS) << tgv_last_error();
  EXPECT_EQ(plan.backend, TGV_BACKEND_CUBLAS) << "untuned auto: M > 128 goes to cuBLASLt";
  o.backend = TGV_BACKEND_CUBLAS;
  ASSERT_EQ(tgv_get_plan(&p, &o, &plan), TGV_SUCCESS) << tgv_last_error();
  EXPECT_EQ(plan.backend, TGV_BACKEND_CUBLAS);
  EXPECT_EQ(plan.tactic, -1);
  if (major != 9) return;  // the rest is the Hopper family's cost model
  p.m = 1;
  o.backend = TGV_BACKEND_AUTO;
  ASSERT_EQ(tgv_get_plan(&p, &o, &plan), TGV_SUCCESS) << tgv_last_error();
  EXPECT_EQ(plan.backend, TGV_BACKEND_TGV);
  tgv_tactic_info t{};
  ASSERT_EQ(tgv_get_tactic(plan.tactic, &t), TGV_SUCCESS);
  EXPECT_EQ(t.cta_n, 8) << "M = 1 takes the smallest token tile";
  EXPECT_GE(plan.split_k, 1);
  EXPECT_GE(plan.stages, 2);
  EXPECT_EQ(plan.pdl, 1);
  o.tactic = plan.tactic == 0 ? 6 : 0;
  o.split_k = 1;
  o.stages = 4;
  o.pdl = 0;
  ASSERT_EQ(tgv_get_plan(&p, &o, &plan), TGV_SUCCESS) << tgv_last_error();
  EXPECT_EQ(plan.tactic, o.tactic);
  EXPECT_EQ(plan.split_k, 1);
  EXPECT_EQ(plan.stages, 4);
  EXPECT_EQ(plan.pdl, 0);
}

// A worker thread whose first CUDA call is tgv_gemm (a fresh Python thread
// is one): no context is current in it until the library binds one. cuBLASLt
// launched there failed with EXECUTION_FAILED (found by the Python thread test,
// 2026-12-02). Several threads, same shapes (the second finds the plan cached
// and makes no heuristic call that would bind a context by accident), both
// backends, on the legacy default stream; each output bitwise equal to the
// same call made from this thread.
TEST(Concurrency, FreshThreadsOnTheDefaultStream) {
  TGV_REQUIRE_GPU();
  const int64_t m = 64, n = 1000, k = 136;
  std::vector<uint16_t> hx(m * k), hw(n * k);
  uint32_t state = 12345;
  auto next = [&state] {  // bf16 in [-1, 1), never zero
    state = state * 1664525u + 1013904223u;
    const float v = (int((state >> 9) % 2000) - 999.5f) / 1000.0f;
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    return uint16_t(bits >> 16);
  };
  for (auto& v : hx) v = next();
  for (auto& v : hw) v = next();
  void *x, *w;
  ASSERT_EQ(cudaMalloc(&x, hx.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&w, hw.size() * 2), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(x, hx.data(), hx.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(w, hw.data(), hw.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  const tgv_backend backends[] = {TGV_BACKEND_CUBLAS, TGV_BACKEND_TGV};
  constexpr int kThreadsPerBackend = 3;
  std::vector<void*> outs(1 + 2 * kThreadsPerBackend);
  for (auto& o : outs) {
    ASSERT_EQ(cudaMalloc(&o, m * n * 2), cudaSuccess);
    ASSERT_EQ(cudaMemset(o, 0xFF, m * n * 2), cudaSuccess);  // NaN
  }
  auto call = [&](void* out, tgv_backend backend) {
    tgv_problem p;
    tgv_default_problem(&p, m, n, k, 1);
    p.x = x, p.w = w, p.out = out;
    tgv_options o;
    tgv_default_options(&o);
    o.backend = backend;
    const tgv_status st = tgv_gemm(&p, &o, nullptr);
    return std::make_pair(st, std::string(st == TGV_SUCCESS ? "" : tgv_last_error()));
  };
  for (int b = 0; b < 2; ++b) {
    std::vector<std::pair<tgv_status, std::string>> got(kThreadsPerBackend);
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreadsPerBackend; ++t)
      threads.emplace_back([&, t] { got[t] = call(outs[1 + b * kThreadsPerBackend + t], backends[b]); });
    for (auto& t : threads) t.join();
    ASSERT_EQ(cudaMemset(outs[0], 0xFF, m * n * 2), cudaSuccess);
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    const auto want = call(outs[0], backends[b]);
    ASSERT_EQ(want.first, TGV_SUCCESS) << want.second;
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    std::vector<uint16_t> ref(m * n), mine(m * n);
    ASSERT_EQ(cudaMemcpy(ref.data(), outs[0], m * n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    for (uint16_t v : ref) ASSERT_NE(v & 0x7FFF, 0x7FFF) << "the reference call left NaN";
    for (int t = 0; t < kThreadsPerBackend; ++t) {
      SCOPED_TRACE("backend " + std::to_string(backends[b]) + ", thread " + std::to_string(t));
      EXPECT_EQ(got[t].first, TGV_SUCCESS) << got[t].second;
      ASSERT_EQ(cudaMemcpy(mine.data(), outs[1 + b * kThreadsPerBackend + t], m * n * 2, cudaMemcpyDeviceToHost),
                cudaSuccess);
      EXPECT_EQ(std::memcmp(mine.data(), ref.data(), m * n * 2), 0);
    }
  }
  for (auto* o : outs) cudaFree(o);
  cudaFree(x);
  cudaFree(w);
}

}  // namespace

namespace {

// The Hopper kernel issue's grid, sampled: every M of the list, each N not a
// multiple of the weight tile, every K and L, every layout, bias and PDL on and
// off, each value appearing several times. The tactic is the cost model's for the
// M (the explicit-tactic sweep above covers the rest). Written after the last
// device run of the session that added it (2026-12-02): not yet run on a GPU then.
std::vector<GemmCase> issue_grid() {
  const int64_t ms[] = {1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 63, 64, 65, 127, 128, 129, 200, 256};
  const int64_t ns[] = {1000, 1282, 4100};
  const int64_t ks[] = {8, 136, 1000, 4096, 4104};
  std::vector<GemmCase> cases;
  for (size_t i = 0; i < std::size(ms); ++i) {
    GemmCase c = shape(ms[i], ns[i % 3], ks[i % 5], i % 4 == 3 ? 3 : 1);
    c.backend = TGV_BACKEND_TGV;
    c.x_k_major = (i / 1) % 2 == 0;
    c.w_k_major = (i / 2) % 2 == 0;
    c.out_row_major = (i / 4) % 2 == 0;
    c.bias = i % 3 != 1;
    c.pdl = static_cast<int32_t>(i % 2);
    cases.push_back(c);
  }
  return cases;
}

}  // namespace

class TgvIssueGrid : public ::testing::TestWithParam<GemmCase> {};
TEST_P(TgvIssueGrid, MatchesReference) {
  TGV_REQUIRE_GPU();
  expect_case(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Sampled, TgvIssueGrid, ::testing::ValuesIn(issue_grid()),
                         [](const auto& info) { return info.param.name(); });

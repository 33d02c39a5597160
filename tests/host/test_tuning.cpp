// The tuning file: parsing, staleness, corruption, lookup by M bucket, and how
// the dispatcher uses a tuned choice.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "plan/cost_model.hpp"
#include "plan/plan.hpp"
#include "plan/tuning.hpp"
#include "tactics/tactics.hpp"
#include "tgv/tgv.h"
#include "tuning_file.hpp"

namespace {

using tgv::detail::DeviceInfo;
using tgv::detail::GemmDesc;
using tgv::detail::kSplitKClustersInPlans;
using tgv::detail::TuningTable;

const char* kGpu = "NVIDIA H200";

std::string file(const std::string& entries, const std::string& gpu = kGpu, int sms = 132,
                 const std::string& version = tgv_version_string()) {
  return tgv_test::tuning_file(entries, gpu, sms, version);
}

const std::string kEntries =
    "{\"n\": 4096, \"k\": 4096, \"m\": 8, \"backend\": \"tgv\", \"tactic\": 6, \"split_k\": 2, \"us\": 10.1, "
    "\"cublas_us\": 12.5},"
    "{\"n\": 4096, \"k\": 4096, \"m\": 256, \"backend\": \"cublas\", \"tactic\": -1, \"split_k\": 1, \"us\": 13.0, "
    "\"cublas_us\": 13.0}";

TEST(Tuning, ParsesEntriesAndLooksUpByBucket) {
  TuningTable t;
  std::string error;
  ASSERT_TRUE(t.parse(file(kEntries), kGpu, 132, tgv_version_string(), &error)) << error;
  EXPECT_EQ(t.size(), 2u);
  for (int64_t m : {5, 6, 7, 8}) {  // bucket 8 covers (4, 8]
    const auto* c = t.find(4096, 4096, m);
    ASSERT_NE(c, nullptr) << m;
    EXPECT_FALSE(c->cublas);
    EXPECT_EQ(c->tactic, 6);
    EXPECT_EQ(c->split_k, 2);
  }
  EXPECT_EQ(t.find(4096, 4096, 4), nullptr);
  EXPECT_EQ(t.find(4096, 4096, 9), nullptr);
  ASSERT_NE(t.find(4096, 4096, 200), nullptr);
  EXPECT_TRUE(t.find(4096, 4096, 200)->cublas);
  EXPECT_EQ(t.find(1280, 4096, 8), nullptr);
}

// "stages" was added later: an entry without it is a file from before, whose
// measurements ran the deepest ring (0).
TEST(Tuning, StagesAreReadAndDefaultToTheDeepest) {
  TuningTable t;
  std::string error;
  const std::string entries =
      kEntries + ",{\"n\": 6144, \"k\": 4096, \"m\": 8, \"backend\": \"tgv\", \"tactic\": 0, \"split_k\": 1, "
                 "\"stages\": 8, \"us\": 10.1, \"cublas_us\": 12.5}";
  ASSERT_TRUE(t.parse(file(entries), kGpu, 132, tgv_version_string(), &error)) << error;
  ASSERT_NE(t.find(6144, 4096, 8), nullptr);
  EXPECT_EQ(t.find(6144, 4096, 8)->stages, 8);
  ASSERT_NE(t.find(4096, 4096, 8), nullptr);
  EXPECT_EQ(t.find(4096, 4096, 8)->stages, 0);
  for (const char* bad : {"-1", "\"8\"", "8.5"}) {
    const std::string e = std::string("{\"n\": 6144, \"k\": 4096, \"m\": 8, \"backend\": \"tgv\", \"tactic\": 0, ") +
                          "\"split_k\": 1, \"stages\": " + bad + "}";
    EXPECT_FALSE(t.parse(file(e), kGpu, 132, tgv_version_string(), &error)) << bad;
    EXPECT_NE(error.find("malformed"), std::string::npos) << error;
  }
}

TEST(Tuning, StaleFilesAreRejectedWithTheReason) {
  TuningTable t;
  std::string error;
  EXPECT_FALSE(t.parse(file(kEntries, "NVIDIA H100"), kGpu, 132, tgv_version_string(), &error));
  EXPECT_NE(error.find("stale"), std::string::npos) << error;
  EXPECT_NE(error.find("NVIDIA H100"), std::string::npos) << error;
  EXPECT_FALSE(t.parse(file(kEntries, kGpu, 114), kGpu, 132, tgv_version_string(), &error));
  EXPECT_NE(error.find("114 SMs"), std::string::npos) << error;
  EXPECT_FALSE(t.parse(file(kEntries, kGpu, 132, "0.0.1"), kGpu, 132, tgv_version_string(), &error));
  EXPECT_NE(error.find("0.0.1"), std::string::npos) << error;
  EXPECT_EQ(t.size(), 0u);
}

TEST(Tuning, CorruptFilesAreRejected) {
  TuningTable t;
  std::string error;
  for (const std::string& bad :
       {std::string("{"), std::string("not json"), std::string("[]"), std::string("{\"format\": \"other\"}"),
        file(kEntries).substr(0, 60), file("{\"n\": 4096, \"k\": 4096, \"m\": 6, \"backend\": \"tgv\"}"),
        file("{\"n\": 4096, \"k\": 4096, \"m\": 8, \"backend\": \"magic\"}"),
        file("{\"n\": -1, \"k\": 4096, \"m\": 8, \"backend\": \"cublas\"}")}) {
    EXPECT_FALSE(t.parse(bad, kGpu, 132, tgv_version_string(), &error)) << bad;
    EXPECT_FALSE(error.empty());
    EXPECT_EQ(t.size(), 0u);
  }
}

DeviceInfo h200() {
  DeviceInfo d;
  d.cc_major = 9;
  d.num_sms = 132;
  d.smem_optin_bytes = tgv::detail::kSm90SmemBytes;
  d.name = kGpu;
  return d;
}

GemmDesc desc(int64_t m, int64_t n, int64_t k) {
  GemmDesc g;
  g.m = m, g.n = n, g.k = k, g.l = 1;
  g.x.ld = k, g.w.ld = k, g.out.ld = n;
  return g;
}

tgv_options options(int32_t backend) {
  tgv_options o;
  tgv_default_options(&o);
  o.backend = backend;
  return o;
}

TEST(Tuning, DispatcherFollowsTheTable) {
#ifndef TGV_WITH_SM90
  GTEST_SKIP() << "built without sm_90a kernels";
#endif
  TuningTable t;
  std::string error;
  const std::string entries =
      kEntries + ",{\"n\": 6144, \"k\": 4096, \"m\": 8, \"backend\": \"tgv\", \"tactic\": 6, \"split_k\": 1}";
  ASSERT_TRUE(t.parse(file(entries), kGpu, 132, tgv_version_string(), &error)) << error;
  // A tuned tgv choice replaces the ladder's.
  auto p = tgv::detail::plan(desc(8, 6144, 4096), options(TGV_BACKEND_AUTO), h200(), &t);
  EXPECT_EQ(p.backend, TGV_BACKEND_TGV);
  EXPECT_EQ(p.tactic, 6);
  EXPECT_EQ(p.split_k, 1);
  // A split-K entry runs only while the library plans split-K clusters
  // (kSplitKClustersInPlans, perf-notes §38); else the cost model plans.
  p = tgv::detail::plan(desc(8, 4096, 4096), options(TGV_BACKEND_AUTO), h200(), &t);
  const auto untuned = tgv::detail::plan(desc(8, 4096, 4096), options(TGV_BACKEND_AUTO), h200());
  EXPECT_EQ(p.tactic, kSplitKClustersInPlans ? 6 : untuned.tactic);
  EXPECT_EQ(p.split_k, kSplitKClustersInPlans ? 2 : untuned.split_k);
  EXPECT_EQ(untuned.split_k, 1);
  // Measured slower than cuBLASLt: auto hands the call over ...
  p = tgv::detail::plan(desc(200, 4096, 4096), options(TGV_BACKEND_AUTO), h200(), &t);
  EXPECT_EQ(p.backend, TGV_BACKEND_CUBLAS);
  // ... but backend=tgv still gets our kernel, the cost model's pick.
  p = tgv::detail::plan(desc(200, 4096, 4096), options(TGV_BACKEND_TGV), h200(), &t);
  EXPECT_EQ(p.backend, TGV_BACKEND_TGV);
  EXPECT_EQ(p.tactic, tgv::detail::plan(desc(200, 4096, 4096), options(TGV_BACKEND_TGV), h200()).tactic);
  // Explicit options win over the table.
  tgv_options o = options(TGV_BACKEND_AUTO);
  o.tactic = 0;
  o.split_k = 1;
  p = tgv::detail::plan(desc(8, 4096, 4096), o, h200(), &t);
  EXPECT_EQ(p.tactic, 0);
  EXPECT_EQ(p.split_k, 1);
}

TEST(Tuning, DispatcherFollowsTheTablesStages) {
#ifndef TGV_WITH_SM90
  GTEST_SKIP() << "built without sm_90a kernels";
#endif
  TuningTable t;
  std::string error;
  const std::string entries =
      "{\"n\": 4096, \"k\": 4096, \"m\": 8, \"backend\": \"tgv\", \"tactic\": 0, \"split_k\": 1, \"stages\": 8},"
      "{\"n\": 6144, \"k\": 4096, \"m\": 8, \"backend\": \"tgv\", \"tactic\": 0, \"split_k\": 1}";
  ASSERT_TRUE(t.parse(file(entries), kGpu, 132, tgv_version_string(), &error)) << error;
  const int32_t deepest = tgv::detail::stages_for(tgv::detail::tactic(0), h200().smem_optin_bytes);
  ASSERT_GT(deepest, 8);
  auto p = tgv::detail::plan(desc(8, 4096, 4096), options(TGV_BACKEND_AUTO), h200(), &t);
  EXPECT_EQ(p.tactic, 0);
  EXPECT_EQ(p.split_k, 1);
  EXPECT_EQ(p.stages, 8);
  // An entry from before "stages" existed runs the deepest ring.
  p = tgv::detail::plan(desc(8, 6144, 4096), options(TGV_BACKEND_AUTO), h200(), &t);
  EXPECT_EQ(p.tactic, 0);
  EXPECT_EQ(p.stages, deepest);
  // An entry is one measured triple: an explicit depth sets the table aside.
  tgv_options o = options(TGV_BACKEND_AUTO);
  o.stages = 4;
  p = tgv::detail::plan(desc(8, 4096, 4096), o, h200(), &t);
  EXPECT_EQ(p.stages, 4);
  EXPECT_EQ(p.tactic, tgv::detail::plan(desc(8, 4096, 4096), o, h200()).tactic);
}

TEST(Tuning, IllegalTunedChoicesFallBackToTheUntunedPlan) {
#ifndef TGV_WITH_SM90
  GTEST_SKIP() << "built without sm_90a kernels";
#endif
  TuningTable t;
  std::string error;
  // A tactic id past the list, a split-K deeper than K has blocks, a ring
  // deeper than shared memory holds, one past the stage limit, and one too
  // shallow for the split-K partials (tactics 11 and 23: 128x256 tiles of 128
  // and 64 columns; two of the former fill shared memory).
  for (int32_t id : {11, 23}) {
    const auto& wide = tgv::detail::tactic(id);
    ASSERT_TRUE(wide.cta_m == 128 && wide.cta_n == 256 && wide.cta_k == (id == 11 ? 128 : 64)) << id;
  }
  const std::string entries =
      "{\"n\": 4096, \"k\": 4096, \"m\": 8, \"backend\": \"tgv\", \"tactic\": 999, \"split_k\": 1},"
      "{\"n\": 4096, \"k\": 128, \"m\": 8, \"backend\": \"tgv\", \"tactic\": 0, \"split_k\": 16},"
      "{\"n\": 4096, \"k\": 1024, \"m\": 8, \"backend\": \"tgv\", \"tactic\": 11, \"split_k\": 1, \"stages\": 3},"
      "{\"n\": 4096, \"k\": 2048, \"m\": 8, \"backend\": \"tgv\", \"tactic\": 0, \"split_k\": 1, \"stages\": 17},"
      "{\"n\": 4096, \"k\": 8192, \"m\": 8, \"backend\": \"tgv\", \"tactic\": 23, \"split_k\": 2, \"stages\": 2}";
  ASSERT_TRUE(t.parse(file(entries), kGpu, 132, tgv_version_string(), &error)) << error;
  for (int64_t k : {4096, 128, 1024, 2048, 8192}) {
    const auto p = tgv::detail::plan(desc(8, 4096, k), options(TGV_BACKEND_AUTO), h200(), &t);
    const auto untuned = tgv::detail::plan(desc(8, 4096, k), options(TGV_BACKEND_AUTO), h200());
    EXPECT_EQ(p.backend, untuned.backend) << k;
    EXPECT_EQ(p.tactic, untuned.tactic) << k;
    EXPECT_EQ(p.split_k, untuned.split_k) << k;
  }
}

// The tuners time each recorded (N, K, M) as a GEMM with the caller's bias and
// nothing else. Their entry serves such calls and a residual call's tgv plan
// (the same main loop); a gated call (another kernel) and a residual call's
// cuBLASLt verdict (which would add an epilogue kernel no entry timed) are
// planned by the cost model, as untuned.
TEST(Tuning, EntriesServeOnlyTheCallsTheyTimed) {
#ifndef TGV_WITH_SM90
  GTEST_SKIP() << "built without sm_90a kernels";
#endif
  TuningTable t;
  std::string error;
  const std::string entries =
      "{\"n\": 28672, \"k\": 4096, \"m\": 8, \"backend\": \"tgv\", \"tactic\": 4, \"split_k\": 1},"
      "{\"n\": 5120, \"k\": 4096, \"m\": 8, \"backend\": \"cublas\", \"tactic\": -1, \"split_k\": 1},"
      "{\"n\": 6144, \"k\": 4096, \"m\": 8, \"backend\": \"tgv\", \"tactic\": 4, \"split_k\": 1}";
  ASSERT_TRUE(t.parse(file(entries), kGpu, 132, tgv_version_string(), &error)) << error;
  ASSERT_EQ(tgv::detail::tactic(4).cta_n, 128);  // a 128-token tile: no model picks it at M = 8
  const auto auto_opts = options(TGV_BACKEND_AUTO);
  auto same = [](const tgv::detail::Plan& a, const tgv::detail::Plan& b) {
    return a.backend == b.backend && a.tactic == b.tactic && a.split_k == b.split_k && a.stages == b.stages;
  };

  // Plain calls follow their entries.
  EXPECT_EQ(tgv::detail::plan(desc(8, 28672, 4096), auto_opts, h200(), &t).tactic, 4);
  EXPECT_EQ(tgv::detail::plan(desc(8, 5120, 4096), auto_opts, h200(), &t).backend, TGV_BACKEND_CUBLAS);

  // A gated call over the same weight: the cost model's plan, not tactic 4.
  GemmDesc gated = desc(8, 28672, 4096);
  gated.act = tgv::detail::Act::SiluMul;
  gated.out.ld = 28672 / 2;
  const auto gated_untuned = tgv::detail::plan(gated, auto_opts, h200());
  ASSERT_EQ(gated_untuned.backend, TGV_BACKEND_TGV);
  ASSERT_NE(gated_untuned.tactic, 4);
  EXPECT_TRUE(same(tgv::detail::plan(gated, auto_opts, h200(), &t), gated_untuned));
  // chain_plans.py's switch (TGV_EXP_TUNED_GATED=1) gives the gated call its entry.
  ASSERT_EQ(setenv("TGV_EXP_TUNED_GATED", "1", 1), 0);
  const int32_t gated_tuned_tactic = tgv::detail::plan(gated, auto_opts, h200(), &t).tactic;
  ASSERT_EQ(unsetenv("TGV_EXP_TUNED_GATED"), 0);
  EXPECT_EQ(gated_tuned_tactic, 4);

  // A residual call: a cuBLASLt verdict is not followed (our kernel, fused) ...
  GemmDesc residual = desc(8, 5120, 4096);
  int dummy = 0;
  residual.residual.ptr = &dummy;
  residual.residual.ld = 5120;
  const auto residual_untuned = tgv::detail::plan(residual, auto_opts, h200());
  ASSERT_EQ(residual_untuned.backend, TGV_BACKEND_TGV);
  EXPECT_TRUE(same(tgv::detail::plan(residual, auto_opts, h200(), &t), residual_untuned));
  // ... a tgv entry is.
  residual.n = 6144, residual.out.ld = 6144, residual.residual.ld = 6144, residual.w.ld = 4096;
  EXPECT_EQ(tgv::detail::plan(residual, auto_opts, h200(), &t).tactic, 4);
}

}  // namespace

// The tuner's pieces in the library: the candidate list both tuners time
// (tgv-bench --tune, tgv_gemm.tune) on sm_90 and a simulated sm_100 device,
// and the one writer of the tuning file, read back by the library's reader.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "host_util.hpp"
#include "plan/cost_model.hpp"
#include "plan/device_info.hpp"
#include "plan/tune_candidates.hpp"
#include "plan/tuning.hpp"
#include "tactics/tactics.hpp"
#include "tgv/tgv.h"
#include "tgv/tgv.hpp"

namespace {

using tgv::detail::kTuneSplitKs;
using tgv::detail::Tactic;
using tgv::detail::tactic;
using tgv::detail::TuningTable;
using tgv_test::status_is;

constexpr tgv_device_desc kH200{90, 132, 232448};
constexpr tgv_device_desc kB200{100, 148, 232448};  // simulated
constexpr tgv_device_desc kB300{103, 148, 232448};  // simulated
constexpr tgv_device_desc kA100{80, 108, 166912};

std::vector<tgv_options> list(const tgv_device_desc& d, int64_t n, int64_t k, int64_t m) {
  return tgv::detail::tune_candidates(tgv::detail::device_from_desc(d), n, k, m);
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// What every candidate list holds, whatever the device: cuBLASLt once, last;
// each tgv candidate of the device's family, of the smallest token tile
// covering M, split-K explicit and within K and two waves, a depth that fits
// and holds the epilogue and partials; no candidate twice.
void expect_well_formed(const tgv_device_desc& d, int64_t n, int64_t k, int64_t m) {
  SCOPED_TRACE("sm_" + std::to_string(d.sm) + " n=" + std::to_string(n) + " k=" + std::to_string(k) +
               " m=" + std::to_string(m));
  const std::vector<tgv_options> c = list(d, n, k, m);
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(c.back().backend, TGV_BACKEND_CUBLAS);
  EXPECT_EQ(c.back().split_k, 0);
  EXPECT_EQ(c.back().stages, 0);
  std::set<std::tuple<int, int, int>> seen;
  int32_t cta_n = 0;
  for (size_t i = 0; i + 1 < c.size(); ++i) {
    const tgv_options& o = c[i];
    ASSERT_EQ(o.backend, TGV_BACKEND_TGV);
    const Tactic& t = tactic(o.tactic);
    EXPECT_EQ(t.arch, tgv::detail::arch_family(d.sm));
    EXPECT_GE(t.cta_n, std::min<int64_t>(m, 256));
    if (cta_n == 0) cta_n = t.cta_n;
    EXPECT_EQ(t.cta_n, cta_n) << "one token tile";
    EXPECT_TRUE(o.split_k >= 1 || o.split_k == tgv::detail::kSplitKStream) << "split-K explicit";
    EXPECT_LE(o.split_k, ceil_div(k, t.cta_k));
    if (o.split_k == tgv::detail::kSplitKStream) {
      EXPECT_EQ(t.arch, 90) << "stream-K is the sm_90 kernel's";
      EXPECT_EQ(o.stages, 0) << "stream-K at its deepest ring";
      EXPECT_TRUE(seen.emplace(o.tactic, o.split_k, o.stages).second) << "candidate " << i << " twice";
      continue;
    }
    if (o.split_k > 1) {
      EXPECT_LE(ceil_div(n, t.cta_m) * ceil_div(m, t.cta_n) * o.split_k, 2 * d.sm_count);
    }
    const int32_t deepest = tgv::detail::stages_for(t, d.smem_optin_bytes);
    EXPECT_GT(deepest, 0);
    EXPECT_GE(o.stages > 0 ? o.stages : deepest, tgv::detail::min_stages_for(t, o.split_k));
    EXPECT_LT(o.stages, deepest);
    EXPECT_EQ(o.pdl, 1);
    EXPECT_TRUE(seen.emplace(o.tactic, o.split_k, o.stages).second) << "candidate " << i << " twice";
  }
}

TEST(TuneCandidates, WellFormedOnEveryFamilyAndShape) {
  for (const tgv_device_desc& d : {kH200, kB200, kB300, kA100})
    for (int64_t m : {1, 2, 7, 8, 16, 33, 64, 128, 200, 256})
      for (auto [n, k] : std::initializer_list<std::pair<int64_t, int64_t>>{{4096, 4096}, {1000, 136}, {28672, 8192},
                                                                            {512, 64}})
        expect_well_formed(d, n, k, m);
}

TEST(TuneCandidates, Sm90TriesEveryTileOfTheTokenTileAtEverySplitAndTwoDepths) {
  // N = 4096, M = 1: 64-row tiles make 64 CTAs, so two waves of 132 SMs allow
  // split-K up to 4; 128-row tiles make 32, so up to 8.
  const std::vector<tgv_options> c = list(kH200, 4096, 4096, 1);
  std::set<std::tuple<int, int, int>> got;
  for (size_t i = 0; i + 1 < c.size(); ++i) got.emplace(c[i].tactic, c[i].split_k, c[i].stages);
  std::set<std::tuple<int, int, int>> want;
  for (int32_t id = 0; id < tgv::detail::kNumTactics; ++id) {
    const Tactic& t = tactic(id);
    if (t.arch != 90 || t.cta_n != 8) continue;
    const int32_t deepest = tgv::detail::stages_for(t, kH200.smem_optin_bytes);
    for (int32_t split : kTuneSplitKs) {
      if (split * (4096 / t.cta_m) > 2 * 132 || (split > 1 && !tgv::detail::kSplitKClustersInPlans)) continue;
      want.emplace(id, split, 0);
      if (deepest > 8) want.emplace(id, split, 8);  // a shallower ring only where the deepest is deeper
    }
    want.emplace(id, tgv::detail::kSplitKStream, 0);  // 64 or 32 tiles of 32 K blocks: stream-K shares them out
  }
  EXPECT_EQ(got, want);
  std::set<int32_t> splits;
  for (const auto& [id, split, stages] : got)
    if (split > 0) splits.insert(split);
  if (tgv::detail::kSplitKClustersInPlans) {
    EXPECT_EQ(splits, (std::set<int32_t>{1, 2, 3, 4, 5, 6, 7, 8})) << "the 128-row tiles reach split-K 8";
  } else {
    EXPECT_EQ(splits, (std::set<int32_t>{1})) << "split-K clusters are off (perf-notes §38)";
  }
}

// The shallower ring is tried only where it differs from the one stages 0
// runs: the 64x32x128 tile's deepest ring (9) is cut to an even 8 where it runs
// two K groups (2048 x 4096 at M = 32: 32 CTAs), so 8 would time it twice.
TEST(TuneCandidates, Sm90ShallowRingOnlyWhereItDiffersFromThePlansRing) {
  const tgv::detail::DeviceInfo dev = tgv::detail::device_from_desc(kH200);
  tgv::detail::GemmDesc g;
  g.n = 2048, g.k = 4096, g.m = 32, g.l = 1;
  const Tactic& t = tactic(2);
  ASSERT_EQ(t.cta_m, 64);
  ASSERT_EQ(t.cta_n, 32);
  ASSERT_EQ(tgv::detail::sm90_deepest_stages(t, 1, dev), 9);
  ASSERT_EQ(tgv::detail::sm90_plan_stages(g, t, 1, dev), 8);
  const std::vector<tgv_options> c = list(kH200, g.n, g.k, g.m);
  int deepest = 0;
  for (size_t i = 0; i + 1 < c.size(); ++i) {
    if (c[i].tactic != 2 || c[i].split_k != 1) continue;
    EXPECT_NE(c[i].stages, 8) << "the ring stages 0 runs already";
    deepest += c[i].stages == 0;
  }
  EXPECT_EQ(deepest, 1);
}

TEST(TuneCandidates, Sm90AtLargeMTakesTheLargestTokenTile) {
  for (int64_t m : {129, 200, 256, 300}) {
    const std::vector<tgv_options> c = list(kH200, 1024, 1024, m);
    ASSERT_GT(c.size(), 1u);
    for (size_t i = 0; i + 1 < c.size(); ++i) EXPECT_EQ(tactic(c[i].tactic).cta_n, 256) << m;
  }
}

TEST(TuneCandidates, SimulatedSm100TakesItsOwnTacticsWithoutSplitKOrDepth) {
  for (const tgv_device_desc& d : {kB200, kB300}) {
    const std::vector<tgv_options> c = list(d, 4096, 4096, 8);
    std::set<int32_t> ids;
    for (size_t i = 0; i + 1 < c.size(); ++i) {
      EXPECT_EQ(tactic(c[i].tactic).arch, 100);
      EXPECT_EQ(c[i].split_k, 1);
      EXPECT_EQ(c[i].stages, 0) << "an sm_100 tactic fixes its depth";
      ids.insert(c[i].tactic);
    }
    std::set<int32_t> want;
    for (int32_t id = 0; id < tgv::detail::kNumTactics; ++id)
      if (tactic(id).arch == 100 && tactic(id).cta_n == 8) want.insert(id);
    EXPECT_EQ(ids, want) << "every sm_100 tactic of the 8-token tile (its depths are tactics of their own)";
  }
}

TEST(TuneCandidates, NoFamilyMeansCublasAlone) {
  const std::vector<tgv_options> c = list(kA100, 4096, 4096, 8);
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].backend, TGV_BACKEND_CUBLAS);
  tgv_device_desc hopper_no_smem = kH200;
  hopper_no_smem.smem_optin_bytes = 1024;  // nothing fits: no tgv candidate
  EXPECT_EQ(list(hopper_no_smem, 4096, 4096, 8).size(), 1u);
}

// What tgv-bench --tune uses (the C++ wrapper over the C ABI) is the list above.
TEST(TuneCandidates, TheCAbiAndTheCppWrapperGiveTheLibrarysList) {
  for (const tgv_device_desc& d : {kH200, kB200, kA100}) {
    for (int64_t m : {1, 16, 256}) {
      SCOPED_TRACE("sm_" + std::to_string(d.sm) + " m=" + std::to_string(m));
      const std::vector<tgv_options> want = list(d, 6144, 4096, m);
      std::vector<tgv::Options> got;
      ASSERT_TRUE(tgv::tune_candidates(d, 6144, 4096, m, &got)) << tgv_last_error();
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        const tgv_options o = got[i].to_c();
        EXPECT_EQ(std::make_tuple(o.backend, o.tactic, o.pdl, o.split_k, o.stages),
                  std::make_tuple(want[i].backend, want[i].tactic, want[i].pdl, want[i].split_k, want[i].stages))
            << i;
      }
      // A short buffer takes the first entries and learns the total.
      std::vector<tgv_options> two(2);
      int32_t count = 0;
      ASSERT_TRUE(status_is(tgv_tune_candidates(&d, 6144, 4096, m, two.data(), 2, &count), TGV_SUCCESS));
      EXPECT_EQ(count, int32_t(want.size()));
      EXPECT_EQ(two[0].tactic, want[0].tactic);
    }
  }
}

TEST(TuneCandidates, BadArgumentsNameThemselves) {
  int32_t count = 7;
  tgv_options one[1];
  EXPECT_TRUE(status_is(tgv_tune_candidates(nullptr, 1, 1, 1, nullptr, 0, &count), TGV_ERROR_INVALID_ARGUMENT,
                        {"device is NULL"}));
  EXPECT_EQ(count, 0);
  EXPECT_TRUE(status_is(tgv_tune_candidates(&kH200, 1, 1, 1, nullptr, 0, nullptr), TGV_ERROR_INVALID_ARGUMENT,
                        {"count is NULL"}));
  EXPECT_TRUE(status_is(tgv_tune_candidates(&kH200, 1, 1, 1, nullptr, 1, &count), TGV_ERROR_INVALID_ARGUMENT,
                        {"out is NULL"}));
  EXPECT_TRUE(status_is(tgv_tune_candidates(&kH200, 1, 1, 1, one, -1, &count), TGV_ERROR_INVALID_ARGUMENT,
                        {"capacity=-1"}));
  EXPECT_TRUE(status_is(tgv_tune_candidates(&kH200, 0, 1, 1, one, 1, &count), TGV_ERROR_INVALID_ARGUMENT, {"n=0"}));
  EXPECT_TRUE(status_is(tgv_tune_candidates(&kH200, 1, 1, 0, one, 1, &count), TGV_ERROR_INVALID_ARGUMENT, {"m=0"}));
  const tgv_device_desc no_sms{90, 0, 232448};
  EXPECT_TRUE(status_is(tgv_tune_candidates(&no_sms, 1, 1, 1, one, 1, &count), TGV_ERROR_INVALID_ARGUMENT,
                        {"sm_count=0"}));
}

// ---- the writer -----------------------------------------------------------

tgv_tuning_entry entry(int64_t n, int64_t k, int64_t m, int32_t backend, int32_t tactic, int32_t split, int32_t stages,
                       double us, double cublas_us) {
  tgv_tuning_entry e{};
  e.n = n, e.k = k, e.m = m, e.backend = backend, e.tactic = tactic, e.split_k = split, e.stages = stages;
  e.us = us, e.cublas_us = cublas_us;
  return e;
}

const std::vector<tgv_tuning_entry> kWritten = {
    entry(4096, 4096, 8, TGV_BACKEND_TGV, 6, 3, 8, 10.4, 12.5),
    entry(4096, 4096, 1, TGV_BACKEND_TGV, 0, 1, 0, 9.25, 11.0),
    // cuBLASLt: the tgv fields are ignored and written as -1, 1, 0.
    entry(14336, 4096, 256, TGV_BACKEND_CUBLAS, 17, 4, 9, 40.0, 40.0),
};

TEST(TuningWriter, RoundTripsThroughTheReader) {
  const std::string gpu = "NVIDIA \"H200\" \\ rev";  // quotes and a backslash must be quoted
  const std::string text = tgv::detail::tuning_json(gpu, 132, tgv_version_string(), kWritten.data(), kWritten.size());
  TuningTable t;
  std::string error;
  ASSERT_TRUE(t.parse(text, gpu, 132, tgv_version_string(), &error)) << error << "\n" << text;
  ASSERT_EQ(t.size(), 3u);
  const auto* a = t.find(4096, 4096, 8);
  ASSERT_NE(a, nullptr);
  EXPECT_FALSE(a->cublas);
  EXPECT_EQ(std::make_tuple(a->tactic, a->split_k, a->stages), std::make_tuple(6, 3, 8));
  const auto* b = t.find(4096, 4096, 1);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(std::make_tuple(b->tactic, b->split_k, b->stages), std::make_tuple(0, 1, 0));
  const auto* c = t.find(14336, 4096, 200);
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(c->cublas);
  EXPECT_NE(text.find("\"backend\": \"cublas\", \"tactic\": -1, \"split_k\": 1, \"stages\": 0"), std::string::npos)
      << text;
  // The reader holds the header to this GPU, its SM count and this version.
  EXPECT_FALSE(t.parse(text, "NVIDIA H200", 132, tgv_version_string(), &error)) << "the gpu name is kept whole";
  EXPECT_FALSE(t.parse(text, gpu, 114, tgv_version_string(), &error));
}

TEST(TuningWriter, NoEntriesIsAValidFile) {
  TuningTable t;
  std::string error;
  ASSERT_TRUE(t.parse(tgv::detail::tuning_json("G", 1, "v", nullptr, 0), "G", 1, "v", &error)) << error;
  EXPECT_EQ(t.size(), 0u);
}

TEST(TuningWriter, RefusesWhatTheReaderWouldReject) {
  struct Bad {
    tgv_tuning_entry e;
    const char* field;
  };
  const Bad bad[] = {
      {entry(0, 4096, 8, TGV_BACKEND_TGV, 0, 1, 0, 1, 1), "bad n"},
      {entry(4096, 0, 8, TGV_BACKEND_TGV, 0, 1, 0, 1, 1), "bad k"},
      {entry(4096, 4096, 3, TGV_BACKEND_TGV, 0, 1, 0, 1, 1), "bad m"},
      {entry(4096, 4096, 512, TGV_BACKEND_TGV, 0, 1, 0, 1, 1), "bad m"},
      {entry(4096, 4096, 8, TGV_BACKEND_AUTO, 0, 1, 0, 1, 1), "bad backend"},
      {entry(4096, 4096, 8, TGV_BACKEND_TGV, -1, 1, 0, 1, 1), "bad tactic"},
      {entry(4096, 4096, 8, TGV_BACKEND_TGV, tgv::detail::kNumTactics, 1, 0, 1, 1), "bad tactic"},
      {entry(4096, 4096, 8, TGV_BACKEND_TGV, 0, 0, 0, 1, 1), "bad split_k"},
      {entry(4096, 4096, 8, TGV_BACKEND_TGV, 0, 1, 1, 1, 1), "bad stages"},
      {entry(4096, 4096, 8, TGV_BACKEND_TGV, 0, 1, 0, NAN, 1), "bad us"},
      {entry(4096, 4096, 8, TGV_BACKEND_TGV, 0, 1, 0, 1, -1), "bad cublas_us"},
  };
  for (const Bad& b : bad) {
    const tgv_tuning_entry two[] = {kWritten[0], b.e};
    EXPECT_TRUE(status_is(tgv_write_tuning_file("/nonexistent-dir-never-created/t.json", "G", 132, two, 2),
                          TGV_ERROR_INVALID_ARGUMENT, {"entries[1]", b.field}));
  }
  EXPECT_TRUE(status_is(tgv_write_tuning_file("x", nullptr, 132, kWritten.data(), 1), TGV_ERROR_INVALID_ARGUMENT,
                        {"gpu is NULL"}));
  EXPECT_TRUE(status_is(tgv_write_tuning_file("x", "G", 132, nullptr, 1), TGV_ERROR_INVALID_ARGUMENT,
                        {"entries is NULL"}));
  EXPECT_TRUE(status_is(tgv_write_tuning_file("x", "G", 0, kWritten.data(), 1), TGV_ERROR_INVALID_ARGUMENT,
                        {"sm_count=0"}));
}

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

class TuningFileOnDisk : public ::testing::Test {
 protected:
  void SetUp() override {
    char folder[] = "/tmp/tgv-tuning-writer-XXXXXX";
    ASSERT_NE(mkdtemp(folder), nullptr);
    dir_ = folder;
  }
  void TearDown() override {
    unsetenv("TGV_TUNING_FILE");
    std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  std::string dir_;
};

TEST_F(TuningFileOnDisk, WritesTheWholeFileAndItsFolder) {
  const std::string path = dir_ + "/a/b/tuning.json";
  ASSERT_TRUE(tgv::write_tuning_file(path, "NVIDIA H200", 132, kWritten)) << tgv_last_error();
  EXPECT_EQ(read(path), tgv::detail::tuning_json("NVIDIA H200", 132, tgv_version_string(), kWritten.data(),
                                                 kWritten.size()));
  EXPECT_EQ(std::system(("test $(ls -A '" + dir_ + "/a/b' | wc -l) -eq 1").c_str()), 0) << "a temporary file is left";
}

TEST_F(TuningFileOnDisk, AnEmptyPathIsTheFileTheLibraryReads) {
  const std::string path = dir_ + "/lib.json";
  setenv("TGV_TUNING_FILE", path.c_str(), 1);
  EXPECT_EQ(tgv::tuning_file_path(), path);
  ASSERT_TRUE(tgv::write_tuning_file("", "NVIDIA H200", 132, kWritten)) << tgv_last_error();
  TuningTable t;
  std::string error;
  ASSERT_TRUE(t.parse(read(path), "NVIDIA H200", 132, tgv_version_string(), &error)) << error;
  EXPECT_EQ(t.size(), 3u);
}

TEST_F(TuningFileOnDisk, AnUnwritablePathIsRefusedNamingIt) {
  const std::string blocker = dir_ + "/file";
  std::ofstream(blocker) << "x";
  const std::string path = blocker + "/tuning.json";  // a folder that is a file
  EXPECT_TRUE(status_is(tgv_write_tuning_file(path.c_str(), "G", 132, kWritten.data(), 1), TGV_ERROR_INVALID_ARGUMENT,
                        {"path=" + path}));
}

}  // namespace

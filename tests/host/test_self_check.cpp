// The self-check gate (src/gate/self_check.cpp) with the probe's outcome
// injected: its state machine (pass, fail, cached, forced, stale or corrupt
// cache, a bad TGV_SELF_CHECK, the crash marker, threads racing), and how the
// planner treats each verdict.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/validate.hpp"
#include "common/error.hpp"
#include "gate/self_check.hpp"
#include "gate_sandbox.hpp"
#include "host_util.hpp"
#include "plan/plan.hpp"
#include "tactics/tactics.hpp"

namespace {

using namespace tgv::detail;
namespace gt = tgv::detail::gate_testing;

std::atomic<int> g_probes{0};

ProbeOutcome passing_probe(const DeviceInfo&) {
  ++g_probes;
  return {true, true, {}};
}
ProbeOutcome failing_probe(const DeviceInfo&) {
  ++g_probes;
  return {false, true, "tactic 3 (64x32x128) on m=7: 12 elements differ"};
}
ProbeOutcome inconclusive_probe(const DeviceInfo&) {
  ++g_probes;
  return {false, false, "cudaMallocAsync: out of memory"};
}
ProbeOutcome slow_passing_probe(const DeviceInfo& dev) {
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return passing_probe(dev);
}

DeviceInfo device(int sm, int ordinal = 0, const char* name = nullptr, int32_t sms = 0) {
  DeviceInfo d;
  d.ordinal = ordinal;
  d.cc_major = sm / 10;
  d.cc_minor = sm % 10;
  d.num_sms = sms ? sms : sm == 90 ? 132 : 148;
  d.smem_optin_bytes = sm == 90 ? kSm90SmemBytes : kSm100SmemBytes;
  d.name = name ? name : sm == 90 ? "NVIDIA H200" : "NVIDIA B200";
  return d;
}

std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// One cache entry, as the gate writes it.
std::string entry(const DeviceInfo& d, const std::string& state, long long pid = 1, const std::string& host = "",
                  long long time = 0, const std::string& version = tgv_version_string(), const char* gpu = nullptr,
                  int64_t sms = 0, int family = 0, const char* kernels = self_check_kernel_fingerprint()) {
  std::ostringstream s;
  s << "{\"gpu\": \"" << (gpu ? gpu : d.name.c_str()) << "\", \"sm_count\": " << (sms ? sms : d.num_sms)
    << ", \"family\": " << (family ? family : arch_family(d.sm())) << ", \"library_version\": \"" << version
    << "\"" << (kernels ? std::string(", \"kernels\": \"") + kernels + "\"" : std::string()) << ", \"state\": \"" << state << "\", \"reason\": \"cached reason\", \"pid\": " << pid << ", \"host\": \""
    << host << "\", \"time\": " << time << "}";
  return s.str();
}

std::string cache_text(const std::vector<std::string>& entries) {
  std::string s = "{\"format\": \"tgv-gemm-self-check/1\", \"entries\": [";
  for (size_t i = 0; i < entries.size(); ++i) s += (i ? "," : "") + entries[i];
  return s + "]}";
}

std::string this_host() {
  char name[256] = {};
  gethostname(name, sizeof(name) - 1);
  return name;
}

// A pid that belonged to a process of this host that has exited.
long long dead_pid() {
  const pid_t child = fork();
  if (child == 0) _exit(0);
  waitpid(child, nullptr, 0);
  return child;
}

// Each test: a fresh gate, its own cache folder (through TGV_TUNING_FILE), no
// TGV_SELF_CHECK, and the probe it injects.
class SelfCheck : public ::testing::Test {
 protected:
  void SetUp() override {
    sandbox_ = std::make_unique<tgv_test::GateSandbox>();
    dir_ = sandbox_->dir();
    gt::reset();
    gt::set_probe(passing_probe);
    g_probes = 0;
    cache_ = self_check_cache_path();
  }
  void TearDown() override {
    gt::reset();
    gt::set_probe(nullptr);
    sandbox_.reset();
  }

  // A new process, as far as the gate can tell: verdicts and warnings forgotten.
  void new_process(ProbeFn probe) {
    gt::reset();
    gt::set_probe(probe);
    g_probes = 0;
  }

  std::unique_ptr<tgv_test::GateSandbox> sandbox_;
  std::string dir_, cache_;
  const DeviceInfo h200_ = device(90);
  const DeviceInfo b200_ = device(100);
};

// ---- the state machine -----------------------------------------------------

TEST_F(SelfCheck, CacheSitsNextToTheTuningFile) { EXPECT_EQ(cache_, dir_ + "/tgv-self-check.json"); }

TEST_F(SelfCheck, UnknownUntilAsked) {
  EXPECT_EQ(settled_verdict(h200_), nullptr);
  EXPECT_EQ(g_probes, 0);
}

TEST_F(SelfCheck, ProbePassesOnceAndIsCached) {
  const GateVerdict& v = self_check(h200_);
  EXPECT_EQ(v.state, GateState::Passed);
  EXPECT_EQ(g_probes, 1);
  EXPECT_EQ(&self_check(h200_), &v);
  ASSERT_NE(settled_verdict(h200_), nullptr);
  EXPECT_EQ(settled_verdict(h200_)->state, GateState::Passed);
  EXPECT_EQ(g_probes, 1) << "a settled verdict is never probed again";
  const std::string text = read_file(cache_);
  EXPECT_TRUE(contains(text, "\"state\": \"passed\"")) << text;
  EXPECT_TRUE(contains(text, "\"gpu\": \"NVIDIA H200\"")) << text;
  EXPECT_TRUE(contains(text, std::string("\"library_version\": \"") + tgv_version_string())) << text;
  EXPECT_TRUE(contains(text, std::string("\"kernels\": \"") + self_check_kernel_fingerprint())) << text;
}

TEST_F(SelfCheck, ProbeFailsWithOneWarning) {
  gt::set_probe(failing_probe);
  ::testing::internal::CaptureStderr();
  const GateVerdict& v = self_check(h200_);
  self_check(h200_);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(v.state, GateState::Failed);
  EXPECT_TRUE(contains(v.reason, "self-check failed")) << v.reason;
  EXPECT_TRUE(contains(v.reason, "12 elements differ")) << v.reason;
  EXPECT_EQ(g_probes, 1);
  EXPECT_TRUE(contains(err, "disabled in this process on device 0 (NVIDIA H200)")) << err;
  EXPECT_TRUE(contains(err, "backend=auto uses cuBLASLt")) << err;
  EXPECT_EQ(err.find("[tgv]"), err.rfind("[tgv]")) << "one warning, not one per call: " << err;
  EXPECT_TRUE(contains(read_file(cache_), "\"state\": \"failed\""));
}

TEST_F(SelfCheck, CachedPassIsTrustedWithoutAProbe) {
  self_check(h200_);
  new_process(failing_probe);
  const GateVerdict& v = self_check(h200_);
  EXPECT_EQ(v.state, GateState::Passed);
  EXPECT_EQ(g_probes, 0);
  EXPECT_TRUE(contains(v.reason, cache_)) << v.reason;
}

TEST_F(SelfCheck, CachedFailureDisablesWithoutAProbe) {
  gt::set_probe(failing_probe);
  self_check(h200_);
  new_process(passing_probe);
  ::testing::internal::CaptureStderr();
  const GateVerdict& v = self_check(h200_);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(v.state, GateState::Failed);
  EXPECT_EQ(g_probes, 0);
  EXPECT_TRUE(contains(v.reason, "12 elements differ")) << v.reason;
  EXPECT_TRUE(contains(v.reason, "TGV_SELF_CHECK=run")) << v.reason;
  EXPECT_TRUE(contains(err, "disabled")) << err;
}

TEST_F(SelfCheck, StaleEntriesAreIgnored) {
  write_file(cache_, cache_text({entry(h200_, "failed", 1, "", 0, "0.0.1"),
                                 entry(h200_, "failed", 1, "", 0, tgv_version_string(), "NVIDIA H100"),
                                 entry(h200_, "failed", 1, "", 0, tgv_version_string(), nullptr, 114),
                                 entry(h200_, "failed", 1, "", 0, tgv_version_string(), nullptr, 0, 100)}));
  EXPECT_EQ(self_check(h200_).state, GateState::Passed);
  EXPECT_EQ(g_probes, 1);
  // Other GPUs' and versions' entries stay in the file beside the new one.
  const std::string text = read_file(cache_);
  EXPECT_TRUE(contains(text, "0.0.1")) << text;
  EXPECT_TRUE(contains(text, "NVIDIA H100")) << text;
  EXPECT_TRUE(contains(text, "\"state\": \"passed\"")) << text;
}

// A verdict judged other kernel sources (another build of the same version, or
// an entry from before the cache named them) is not this build's: the probe runs.
TEST_F(SelfCheck, VerdictsOfOtherKernelSourcesAreIgnored) {
  EXPECT_EQ(std::string(self_check_kernel_fingerprint()).size(), 16u);
  for (const char* kernels : {"0123456789abcdef", static_cast<const char*>(nullptr)}) {
    SCOPED_TRACE(kernels ? kernels : "no kernels field");
    new_process(failing_probe);
    write_file(cache_, cache_text({entry(b200_, "passed", 1, "", 0, tgv_version_string(), nullptr, 0, 0, kernels)}));
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(self_check(b200_).state, GateState::Failed) << "a pass cached for other kernels was trusted";
    ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(g_probes, 1);
    const std::string text = read_file(cache_);
    EXPECT_TRUE(contains(text, std::string("\"kernels\": \"") + self_check_kernel_fingerprint() +
                                   "\", \"state\": \"failed\"")) << text;
  }
}

TEST_F(SelfCheck, CorruptCacheIsReportedOnceAndReplaced) {
  for (const std::string& bad :
       {std::string("not json"), std::string("{\"format\": \"tgv-gemm-self-check/1\", \"entries\": [{\"gpu\": 3}]}"),
        std::string("{\"format\": \"other\", \"entries\": []}"), cache_text({entry(h200_, "maybe")}),
        cache_text({entry(h200_, "passed")}).substr(0, 50), std::string(4096, '[')}) {
    SCOPED_TRACE(bad.substr(0, 60));
    new_process(passing_probe);
    write_file(cache_, bad);
    ::testing::internal::CaptureStderr();
    EXPECT_EQ(self_check(h200_).state, GateState::Passed);
    EXPECT_EQ(self_check(device(90, 1)).state, GateState::Passed);  // reads the (now rewritten) file
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(g_probes, 1);
    EXPECT_TRUE(contains(err, "ignoring self-check cache " + cache_)) << err;
    EXPECT_EQ(err.find("[tgv]"), err.rfind("[tgv]")) << err;
    EXPECT_TRUE(contains(read_file(cache_), "\"state\": \"passed\""));
  }
}

TEST_F(SelfCheck, ForcedPassRunsNothingAndCachesNothing) {
  setenv("TGV_SELF_CHECK", "pass", 1);
  gt::set_probe(failing_probe);
  const GateVerdict& v = self_check(b200_);
  EXPECT_EQ(v.state, GateState::Passed);
  EXPECT_TRUE(contains(v.reason, "TGV_SELF_CHECK=pass")) << v.reason;
  EXPECT_EQ(g_probes, 0);
  EXPECT_EQ(read_file(cache_), "");
}

TEST_F(SelfCheck, ForcedFailDisablesEvenWithACachedPass) {
  self_check(h200_);
  new_process(passing_probe);
  setenv("TGV_SELF_CHECK", "fail", 1);
  ::testing::internal::CaptureStderr();
  const GateVerdict& v = self_check(h200_);
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(v.state, GateState::Failed);
  EXPECT_EQ(v.reason, "TGV_SELF_CHECK=fail");
  EXPECT_EQ(g_probes, 0);
}

TEST_F(SelfCheck, ForcedRunIgnoresTheCacheAndUpdatesIt) {
  self_check(h200_);
  new_process(failing_probe);
  setenv("TGV_SELF_CHECK", "RUN", 1);  // any case
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(self_check(h200_).state, GateState::Failed);
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(g_probes, 1);
  EXPECT_TRUE(contains(read_file(cache_), "\"state\": \"failed\""));
  // Each device is probed under "run", even one of a GPU model already settled.
  gt::set_probe(passing_probe);
  EXPECT_EQ(self_check(device(90, 1)).state, GateState::Passed);
  EXPECT_EQ(g_probes, 2);
}

TEST_F(SelfCheck, AutoTrustsTheVerdictOfAnotherDeviceOfTheSameModel) {
  self_check(h200_);
  EXPECT_EQ(self_check(device(90, 1)).state, GateState::Passed);
  EXPECT_EQ(g_probes, 1);
  EXPECT_EQ(self_check(device(90, 2, "NVIDIA H100", 114)).state, GateState::Passed);
  EXPECT_EQ(g_probes, 2) << "another model has its own entry";
}

TEST_F(SelfCheck, BadEnvValueWarnsOnceAndMeansAuto) {
  setenv("TGV_SELF_CHECK", "sometimes", 1);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(self_check(h200_).state, GateState::Passed);
  EXPECT_EQ(self_check(b200_).state, GateState::Passed);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(g_probes, 2);
  EXPECT_TRUE(contains(err, "TGV_SELF_CHECK=sometimes")) << err;
  EXPECT_EQ(err.find("[tgv]"), err.rfind("[tgv]")) << err;
  setenv("TGV_SELF_CHECK", "", 1);  // empty is auto, silently
  new_process(passing_probe);
  ::testing::internal::CaptureStderr();
  self_check(h200_);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
}

// ---- the crash marker ------------------------------------------------------

TEST_F(SelfCheck, RunningMarkerIsWrittenBeforeTheProbe) {
  static std::string seen;
  seen.clear();
  gt::set_probe([](const DeviceInfo&) {
    seen = read_file(self_check_cache_path());
    return ProbeOutcome{true, true, {}};
  });
  EXPECT_EQ(self_check(b200_).state, GateState::Passed);
  EXPECT_TRUE(contains(seen, "\"state\": \"running\"")) << seen;
  EXPECT_TRUE(contains(seen, "\"pid\": " + std::to_string(getpid()))) << seen;
  EXPECT_TRUE(contains(read_file(cache_), "\"state\": \"passed\""));
  EXPECT_FALSE(contains(read_file(cache_), "running"));
}

TEST_F(SelfCheck, UnfinishedProbeOnBlackwellFailsUntilRunIsForced) {
  write_file(cache_, cache_text({entry(b200_, "running", dead_pid(), this_host(), std::time(nullptr))}));
  ::testing::internal::CaptureStderr();
  const GateVerdict& v = self_check(b200_);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(v.state, GateState::Failed);
  EXPECT_EQ(g_probes, 0) << "the probe that killed the last process must not run again by itself";
  EXPECT_TRUE(contains(v.reason, "a previous self-check")) << v.reason;
  EXPECT_TRUE(contains(v.reason, "did not finish")) << v.reason;
  EXPECT_TRUE(contains(v.reason, "TGV_SELF_CHECK=run")) << v.reason;
  EXPECT_TRUE(contains(err, "did not finish")) << err;
  // The next process reads it as a cached failure ...
  new_process(passing_probe);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(self_check(b200_).state, GateState::Failed);
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(g_probes, 0);
  // ... until TGV_SELF_CHECK=run retries.
  new_process(passing_probe);
  setenv("TGV_SELF_CHECK", "run", 1);
  EXPECT_EQ(self_check(b200_).state, GateState::Passed);
  EXPECT_EQ(g_probes, 1);
}

TEST_F(SelfCheck, UnfinishedProbeOnHopperJustRunsAgain) {
  write_file(cache_, cache_text({entry(h200_, "running", dead_pid(), this_host(), std::time(nullptr))}));
  EXPECT_EQ(self_check(h200_).state, GateState::Passed);
  EXPECT_EQ(g_probes, 1);
}

TEST_F(SelfCheck, ProbeStillRunningInALiveProcessIsNotACrash) {
  // The parent (ctest, a shell) is alive and is not this process.
  write_file(cache_, cache_text({entry(b200_, "running", getppid(), this_host(), std::time(nullptr))}));
  EXPECT_EQ(self_check(b200_).state, GateState::Passed);
  EXPECT_EQ(g_probes, 1);
}

TEST_F(SelfCheck, RunningMarkerOfAnotherHostCountsAsACrashOnlyOnceOld) {
  write_file(cache_, cache_text({entry(b200_, "running", 1, "some-other-host", std::time(nullptr) - 5)}));
  EXPECT_EQ(self_check(b200_).state, GateState::Passed);
  EXPECT_EQ(g_probes, 1);
  new_process(passing_probe);
  write_file(cache_, cache_text({entry(b200_, "running", 1, "some-other-host", std::time(nullptr) - 3600)}));
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(self_check(b200_).state, GateState::Failed);
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(g_probes, 0);
}

TEST_F(SelfCheck, InconclusiveProbeDisablesButCachesNothing) {
  gt::set_probe(inconclusive_probe);
  ::testing::internal::CaptureStderr();
  const GateVerdict& v = self_check(b200_);
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(v.state, GateState::Failed);
  EXPECT_TRUE(contains(v.reason, "could not run")) << v.reason;
  EXPECT_TRUE(contains(v.reason, "out of memory")) << v.reason;
  const std::string text = read_file(cache_);
  EXPECT_FALSE(contains(text, "NVIDIA B200")) << text;
  new_process(passing_probe);
  EXPECT_EQ(self_check(b200_).state, GateState::Passed);
  EXPECT_EQ(g_probes, 1);
}

TEST_F(SelfCheck, UnwritableCacheFolderIsSilent) {
  setenv("TGV_TUNING_FILE", "/proc/tgv-no-such-folder/tuning.json", 1);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(self_check(b200_).state, GateState::Passed);
  EXPECT_EQ(self_check(h200_).state, GateState::Passed);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
  EXPECT_EQ(g_probes, 2);
}

TEST_F(SelfCheck, RacingThreadsShareOneProbe) {
  gt::set_probe(slow_passing_probe);
  std::vector<std::thread> threads;
  std::vector<const GateVerdict*> seen(8);
  for (size_t i = 0; i < seen.size(); ++i) threads.emplace_back([&, i] { seen[i] = &self_check(h200_); });
  for (auto& t : threads) t.join();
  EXPECT_EQ(g_probes, 1);
  for (const GateVerdict* v : seen) {
    EXPECT_EQ(v, seen[0]);
    EXPECT_EQ(v->state, GateState::Passed);
  }
}

TEST_F(SelfCheck, DevicesAndFamiliesSettleSeparately) {
  setenv("TGV_SELF_CHECK", "run", 1);
  gt::set_probe(failing_probe);
  ::testing::internal::CaptureStderr();
  self_check(device(90, 3));
  ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(settled_verdict(device(90, 0)), nullptr);
  EXPECT_EQ(settled_verdict(device(100, 3)), nullptr);
  ASSERT_NE(settled_verdict(device(90, 3)), nullptr);
  EXPECT_EQ(settled_verdict(device(90, 3))->state, GateState::Failed);
}

// ---- the planner reads the verdict -----------------------------------------

#ifdef TGV_WITH_SM90
constexpr bool kHasSm90 = true;
#else
constexpr bool kHasSm90 = false;
#endif
#if defined(TGV_WITH_SM100A) && defined(TGV_WITH_SM103A)
constexpr bool kHasSm100 = true;
#else
constexpr bool kHasSm100 = false;
#endif

GemmDesc desc(int64_t m, int64_t n, int64_t k) { return validate_problem(tgv_test::make_problem(m, n, k)); }
tgv_options options(int32_t backend) {
  tgv_options o;
  tgv_default_options(&o);
  o.backend = backend;
  return o;
}

const GateVerdict kPassed{GateState::Passed, "the self-check passed"};
const GateVerdict kFailed{GateState::Failed, "the self-check failed: tactic 3 broke"};
const GateVerdict kForcedFail{GateState::Failed, "TGV_SELF_CHECK=fail"};

std::string refusal(const GemmDesc& g, int32_t backend, const DeviceInfo& dev, const GateVerdict* v) {
  try {
    plan(g, options(backend), dev, nullptr, v);
  } catch (const Error& e) {
    return std::string(tgv_status_name(e.status())) + ": " + e.what();
  }
  return "no error";
}

TEST(GatePlan, HopperServedUntilTheVerdictSaysOtherwise) {
  if (!kHasSm90) GTEST_SKIP() << "this build has no sm_90a kernels";
  const DeviceInfo dev = device(90);
  const GemmDesc g = desc(16, 4096, 4096);
  EXPECT_EQ(plan(g, options(TGV_BACKEND_AUTO), dev, nullptr, nullptr).backend, TGV_BACKEND_TGV);
  EXPECT_EQ(plan(g, options(TGV_BACKEND_AUTO), dev, nullptr, &kPassed).backend, TGV_BACKEND_TGV);
  EXPECT_EQ(plan(g, options(TGV_BACKEND_AUTO), dev, nullptr, &kFailed).backend, TGV_BACKEND_CUBLAS);
  EXPECT_EQ(plan(g, options(TGV_BACKEND_CUBLAS), dev, nullptr, &kFailed).backend, TGV_BACKEND_CUBLAS);
}

TEST(GatePlan, TgvOnAFailedFamilySaysWhy) {
  if (!kHasSm90) GTEST_SKIP() << "this build has no sm_90a kernels";
  const std::string r = refusal(desc(16, 4096, 4096), TGV_BACKEND_TGV, device(90), &kFailed);
  EXPECT_TRUE(contains(r, "TGV_ERROR_NOT_SUPPORTED")) << r;
  EXPECT_TRUE(contains(r, "disabled in this process on device 0 (NVIDIA H200)")) << r;
  EXPECT_TRUE(contains(r, "tactic 3 broke")) << r;
  const std::string forced = refusal(desc(16, 4096, 4096), TGV_BACKEND_TGV, device(90), &kForcedFail);
  EXPECT_TRUE(contains(forced, "TGV_SELF_CHECK=fail")) << forced;
}

TEST(GatePlan, BlackwellOnlyOnceValidated) {
  if (!kHasSm100) GTEST_SKIP() << "this build lacks the sm_100a or sm_103a kernels";
  for (int sm : {100, 103}) {
    SCOPED_TRACE(sm);
    const DeviceInfo dev = device(sm);
    const GemmDesc g = desc(16, 4096, 4096);
    EXPECT_EQ(plan(g, options(TGV_BACKEND_AUTO), dev, nullptr, nullptr).backend, TGV_BACKEND_CUBLAS);
    EXPECT_EQ(plan(g, options(TGV_BACKEND_AUTO), dev, nullptr, &kFailed).backend, TGV_BACKEND_CUBLAS);
    EXPECT_TRUE(contains(refusal(g, TGV_BACKEND_TGV, dev, nullptr), "unvalidated"));
    EXPECT_TRUE(contains(refusal(g, TGV_BACKEND_TGV, dev, &kFailed), "tactic 3 broke"));
    const Plan p = plan(g, options(TGV_BACKEND_AUTO), dev, nullptr, &kPassed);
    EXPECT_EQ(p.backend, TGV_BACKEND_TGV);
    EXPECT_EQ(p.tactic, ladder_sm100(g, dev));
    EXPECT_EQ(tactic(p.tactic).arch, 100);
    // Past the decode range auto still hands the call to cuBLASLt.
    EXPECT_EQ(plan(desc(64, 4096, 4096), options(TGV_BACKEND_AUTO), dev, nullptr, &kPassed).backend,
              TGV_BACKEND_CUBLAS);
  }
}

TEST(GatePlan, NoFamilyMeansNoGate) {
  EXPECT_FALSE(family_unavailable_reason(device(80)).empty());
  EXPECT_TRUE(contains(family_unavailable_reason(device(120)), "no tgv kernel for sm_120"));
  if (kHasSm90) {
    EXPECT_EQ(family_unavailable_reason(device(90)), "");
  }
  if (kHasSm100) {
    EXPECT_EQ(family_unavailable_reason(device(103)), "");
  }
}

// ---- the C ABI -------------------------------------------------------------

TEST(GateApi, SelfCheckArguments) {
  EXPECT_TRUE(tgv_test::status_is(tgv_self_check(0, nullptr), TGV_ERROR_INVALID_ARGUMENT, {"passed is NULL"}));
  int32_t passed = 7;
  EXPECT_NE(tgv_self_check(-1, &passed), TGV_SUCCESS);  // INVALID_ARGUMENT; CUDA error without a driver
  EXPECT_EQ(passed, 0);
  EXPECT_NE(std::string(tgv_last_error()), "");
}

}  // namespace

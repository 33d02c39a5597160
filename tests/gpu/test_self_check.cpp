// The self-check gate on a real device: the probe passes for the device's tgv
// family and is fast; a first call made inside a graph capture runs the probe
// without breaking the capture; TGV_SELF_CHECK=fail disables the family while
// auto keeps computing. Each test starts the gate afresh (its test hook) with
// the cache in a folder of its own, so the user's cache is never touched.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "gate/self_check.hpp"
#include "gate_sandbox.hpp"
#include "gpu/harness.hpp"
#include "plan/device_info.hpp"
#include "plan/plan.hpp"
#include "tgv/tgv.h"

namespace {

using tgv_test::GemmCase;
using tgv_test::GemmFixture;
namespace gt = tgv::detail::gate_testing;

// The current device when this build has a tgv family for it, else a skip reason.
std::string family_missing() {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) return "cudaGetDevice failed";
  return tgv::detail::family_unavailable_reason(tgv::detail::device_info(device));
}

class SelfCheckGpu : public ::testing::Test {
 protected:
  void SetUp() override {
    // Device info (and with it the tuning file) is read once per process: read
    // it before TGV_TUNING_FILE points elsewhere, for the tests that follow.
    if (tgv_test::has_cuda_device()) tgv::detail::current_device_info();
    sandbox_ = std::make_unique<tgv_test::GateSandbox>();
  }
  void TearDown() override {
    sandbox_.reset();
    gt::reset();  // later tests in this process settle the gate as usual
  }

  // A first call of the process, as far as the gate can tell, in `mode`.
  static void fresh_gate(const char* mode) {
    setenv("TGV_SELF_CHECK", mode, 1);
    gt::reset();
  }

  std::unique_ptr<tgv_test::GateSandbox> sandbox_;
};

// Timed: tgv_self_check under TGV_SELF_CHECK=run, from call to return: the
// cache writes (the "running" marker and the verdict), and the whole probe:
// one allocation, the input fills, three cuBLASLt references (heuristic
// queries included), one launch per tactic of the family (the first use of
// each kernel in the process, so module loading included), the check kernel
// and the one wait. Not timed: CUDA context creation and the cuBLASLt handle,
// which the warm-up call (backend=cublas, so no tgv kernel is loaded yet)
// creates, as any first call of a real program would have.
TEST_F(SelfCheckGpu, ProbePassesForTheDeviceFamilyInUnder50ms) {
  TGV_REQUIRE_GPU();
  if (const std::string why = family_missing(); !why.empty()) GTEST_SKIP() << why;
  {
    GemmCase warm;
    warm.m = 8, warm.n = 256, warm.k = 256, warm.backend = TGV_BACKEND_CUBLAS, warm.repeat = false;
    const tgv_test::CaseResult r = tgv_test::run_case(warm);
    ASSERT_EQ(r.status, TGV_SUCCESS) << r.message;
  }
  int device = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  fresh_gate("run");
  int32_t passed = 0;
  const auto start = std::chrono::steady_clock::now();
  const tgv_status s = tgv_self_check(device, &passed);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  ASSERT_EQ(s, TGV_SUCCESS) << tgv_last_error();
  EXPECT_EQ(passed, 1) << tgv_last_error();
  EXPECT_LT(ms, 50.0) << "the probe is part of a user's first call";
  RecordProperty("probe_ms", std::to_string(ms));

  // Informational: a second probe in the same process (kernels loaded, cuBLASLt
  // algorithms cached).
  fresh_gate("run");
  const auto again = std::chrono::steady_clock::now();
  ASSERT_EQ(tgv_self_check(device, &passed), TGV_SUCCESS) << tgv_last_error();
  const double warm_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - again).count();
  EXPECT_EQ(passed, 1) << tgv_last_error();
  RecordProperty("probe_again_ms", std::to_string(warm_ms));
  std::printf("self-check probe: %.2f ms first, %.2f ms again\n", ms, warm_ms);
}

// The gate's first consultation happens inside the user's capture (global
// mode, as PyTorch and the harness capture): the probe must run on its own
// stream in relaxed mode, the capture must end cleanly, and the graph must
// replay the GEMM correctly.
TEST_F(SelfCheckGpu, FirstCallInsideAGraphCaptureRunsTheProbeAndTheGraphReplays) {
  TGV_REQUIRE_GPU();
  if (const std::string why = family_missing(); !why.empty()) GTEST_SKIP() << why;
  fresh_gate("run");  // a real probe, not a cached verdict
  GemmCase c;
  c.m = 7, c.n = 1000, c.k = 1024, c.bias = true, c.backend = TGV_BACKEND_TGV, c.own_stream = true;
  GemmFixture f(c);
  std::vector<std::string> failures;
  const tgv_status s = f.run_graph(f.options(), failures);
  for (const std::string& failure : failures) ADD_FAILURE() << failure;
  ASSERT_EQ(s, TGV_SUCCESS) << tgv_last_error();
  f.check_result(f.download(), failures);
  for (const std::string& failure : failures) ADD_FAILURE() << "graph replay: " << failure;

  int device = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  int32_t passed = 0;
  ASSERT_EQ(tgv_self_check(device, &passed), TGV_SUCCESS);
  EXPECT_EQ(passed, 1) << "the probe run under capture: " << tgv_last_error();
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

// TGV_SELF_CHECK=fail: backend=tgv is refused naming the variable and writes
// nothing; auto computes the same GEMM correctly through cuBLASLt.
TEST_F(SelfCheckGpu, ForcedFailRefusesTgvAndAutoStillComputes) {
  TGV_REQUIRE_GPU();
  if (const std::string why = family_missing(); !why.empty()) GTEST_SKIP() << why;
  fresh_gate("fail");
  GemmCase c;
  c.m = 8, c.n = 1000, c.k = 1024, c.bias = true, c.backend = TGV_BACKEND_TGV;
  tgv_test::CaseResult r = tgv_test::run_case(c);
  for (const std::string& failure : r.failures) ADD_FAILURE() << failure;
  EXPECT_EQ(r.status, TGV_ERROR_NOT_SUPPORTED) << r.message;
  EXPECT_NE(r.message.find("TGV_SELF_CHECK=fail"), std::string::npos) << r.message;

  c.backend = TGV_BACKEND_AUTO;
  r = tgv_test::run_case(c);
  for (const std::string& failure : r.failures) ADD_FAILURE() << failure;
  EXPECT_EQ(r.status, TGV_SUCCESS) << r.message;

  int device = 0;
  ASSERT_EQ(cudaGetDevice(&device), cudaSuccess);
  int32_t passed = 1;
  ASSERT_EQ(tgv_self_check(device, &passed), TGV_SUCCESS);
  EXPECT_EQ(passed, 0);
  EXPECT_NE(std::string(tgv_last_error()).find("TGV_SELF_CHECK=fail"), std::string::npos) << tgv_last_error();
}

}  // namespace

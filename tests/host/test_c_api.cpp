// The C ABI around validation: empty problems, NULL arguments, the
// thread-local error message, names, defaults, and the C++ wrapper.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <thread>

#include "host_util.hpp"
#include "tgv/tgv.h"
#include "tgv/tgv.hpp"

namespace {

using namespace tgv_test;

// M, N or L == 0 through tgv_gemm: success with NULL pointers and garbage
// strides, returning before any CUDA call (this runs on machines without a
// GPU, where touching CUDA would fail with TGV_ERROR_CUDA).
class GemmEmpty : public ::testing::TestWithParam<int> {};
TEST_P(GemmEmpty, SucceedsWithoutTouchingCuda) {
  int64_t dims[3] = {16, 64, 3};
  dims[GetParam()] = 0;
  tgv_problem p;
  tgv_default_problem(&p, dims[0], dims[1], 72, dims[2]);
  p.x_stride_m = 5;
  p.out_stride_n = 9;
  for (int32_t backend : {TGV_BACKEND_AUTO, TGV_BACKEND_TGV, TGV_BACKEND_CUBLAS}) {
    tgv_options o = default_options();
    o.backend = backend;
    EXPECT_TRUE(status_is(tgv_gemm(&p, &o, nullptr), TGV_SUCCESS)) << "backend " << backend;
  }
  EXPECT_TRUE(status_is(tgv_gemm(&p, nullptr, nullptr), TGV_SUCCESS));
}
INSTANTIATE_TEST_SUITE_P(MNL, GemmEmpty, ::testing::Values(0, 1, 2),
                         [](const auto& info) { return std::string(1, "MNL"[info.param]); });

// Options are still checked for an empty problem.
TEST(GemmEmpty, InvalidOptionsStillRejected) {
  tgv_problem p;
  tgv_default_problem(&p, 0, 64, 64, 1);
  tgv_options o = default_options();
  o.pdl = 7;
  EXPECT_TRUE(status_is(tgv_gemm(&p, &o, nullptr), TGV_ERROR_INVALID_ARGUMENT, {"pdl=7"}));
  EXPECT_TRUE(status_is(tgv_validate(&p, &o), TGV_ERROR_INVALID_ARGUMENT, {"pdl=7"}));
}

// Validation errors come back from tgv_gemm as from tgv_validate, before CUDA.
TEST(GemmErrors, ValidationBeforeAnyCudaCall) {
  auto p = make_problem(16, 64, 64);
  p.k = 20;
  EXPECT_TRUE(status_is(tgv_gemm(&p, nullptr, nullptr), TGV_ERROR_INVALID_ARGUMENT, {"k=20"}));
  p = make_problem(16, 64, 64);
  tgv_options o = default_options();
  o.backend = TGV_BACKEND_CUBLAS;
  o.split_k = 4;
  EXPECT_TRUE(status_is(tgv_gemm(&p, &o, nullptr), TGV_ERROR_INVALID_ARGUMENT, {"split_k=4"}));
}

TEST(CApi, NullProblem) {
  EXPECT_TRUE(status_is(tgv_validate(nullptr, nullptr), TGV_ERROR_INVALID_ARGUMENT, {"problem is NULL"}));
  EXPECT_TRUE(status_is(tgv_gemm(nullptr, nullptr, nullptr), TGV_ERROR_INVALID_ARGUMENT, {"problem is NULL"}));
}

// tgv_get_plan checks as tgv_gemm does, in the same order, before any device
// is touched; an empty problem plans nothing and needs no device either.
TEST(CApi, GetPlanChecksFirst) {
  tgv_plan_info plan;
  const tgv_problem ok = make_problem(16, 64, 64);
  EXPECT_TRUE(status_is(tgv_get_plan(&ok, nullptr, nullptr), TGV_ERROR_INVALID_ARGUMENT, {"plan is NULL"}));
  EXPECT_TRUE(status_is(tgv_get_plan(nullptr, nullptr, &plan), TGV_ERROR_INVALID_ARGUMENT, {"problem is NULL"}));
  EXPECT_EQ(plan.backend, TGV_BACKEND_AUTO);
  EXPECT_EQ(plan.tactic, -1);
  auto bad = make_problem(16, 64, 64);
  bad.k = 20;
  EXPECT_TRUE(status_is(tgv_get_plan(&bad, nullptr, &plan), TGV_ERROR_INVALID_ARGUMENT, {"k=20"}));
  tgv_options o = default_options();
  o.stages = 17;
  EXPECT_TRUE(status_is(tgv_get_plan(&ok, &o, &plan), TGV_ERROR_INVALID_ARGUMENT, {"stages=17"}));

  tgv_problem empty;
  tgv_default_problem(&empty, 0, 64, 64, 1);
  plan.backend = TGV_BACKEND_TGV;
  EXPECT_TRUE(status_is(tgv_get_plan(&empty, nullptr, &plan), TGV_SUCCESS));
  EXPECT_EQ(plan.backend, TGV_BACKEND_AUTO);
  EXPECT_EQ(plan.pdl, 1);
  // A real problem needs the device: planned on a GPU, a CUDA error without one.
  const tgv_status s = tgv_get_plan(&ok, nullptr, &plan);
  EXPECT_TRUE(s == TGV_SUCCESS || s == TGV_ERROR_CUDA) << tgv_status_name(s) << ": " << tgv_last_error();
  if (s == TGV_SUCCESS) {
    EXPECT_NE(plan.backend, TGV_BACKEND_AUTO);
  }
}

TEST(CApi, NullOptionsMeansDefaults) {
  const tgv_problem p = make_problem(8, 64, 64);
  EXPECT_TRUE(status_is(tgv_validate(&p, nullptr), TGV_SUCCESS));
}

TEST(CApi, DefaultOptions) {
  tgv_options o;
  std::memset(&o, 0x5A, sizeof(o));
  tgv_default_options(&o);
  EXPECT_EQ(o.backend, TGV_BACKEND_AUTO);
  EXPECT_EQ(o.tactic, -1);
  EXPECT_EQ(o.pdl, 1);
  EXPECT_EQ(o.split_k, 0);
  EXPECT_EQ(o.stages, 0);
  tgv_default_options(nullptr);  // tolerated

  const tgv_options cpp = tgv::Options{}.to_c();
  EXPECT_EQ(cpp.backend, o.backend);
  EXPECT_EQ(cpp.tactic, o.tactic);
  EXPECT_EQ(cpp.pdl, o.pdl);
  EXPECT_EQ(cpp.split_k, o.split_k);
  EXPECT_EQ(cpp.stages, o.stages);
}

TEST(CApi, DefaultProblem) {
  tgv_problem p;
  std::memset(&p, 0x5A, sizeof(p));
  tgv_default_problem(&p, 3, 40, 72, 5);
  EXPECT_EQ(p.m, 3);
  EXPECT_EQ(p.n, 40);
  EXPECT_EQ(p.k, 72);
  EXPECT_EQ(p.l, 5);
  EXPECT_EQ(p.dtype, TGV_DTYPE_BF16);
  EXPECT_EQ(p.x, nullptr);
  EXPECT_EQ(p.w, nullptr);
  EXPECT_EQ(p.bias, nullptr);
  EXPECT_EQ(p.out, nullptr);
  EXPECT_EQ(p.x_stride_l, 3 * 72);
  EXPECT_EQ(p.x_stride_m, 72);
  EXPECT_EQ(p.x_stride_k, 1);
  EXPECT_EQ(p.w_stride_l, 40 * 72);
  EXPECT_EQ(p.w_stride_n, 72);
  EXPECT_EQ(p.w_stride_k, 1);
  EXPECT_EQ(p.out_stride_l, 3 * 40);
  EXPECT_EQ(p.out_stride_m, 40);
  EXPECT_EQ(p.out_stride_n, 1);
  tgv_default_problem(nullptr, 1, 1, 8, 1);  // tolerated

  const tgv::Problem cpp = tgv::Problem::packed(3, 40, 72, 5);
  EXPECT_EQ(cpp.m, p.m);
  EXPECT_EQ(cpp.l, p.l);
  EXPECT_EQ(cpp.dtype, p.dtype);
  EXPECT_EQ(cpp.x_stride_l, p.x_stride_l);
  EXPECT_EQ(cpp.x_stride_m, p.x_stride_m);
  EXPECT_EQ(cpp.w_stride_l, p.w_stride_l);
  EXPECT_EQ(cpp.w_stride_n, p.w_stride_n);
  EXPECT_EQ(cpp.out_stride_l, p.out_stride_l);
  EXPECT_EQ(cpp.out_stride_m, p.out_stride_m);
  EXPECT_EQ(cpp.x, nullptr);
  EXPECT_EQ(tgv::Problem{}.dtype, TGV_DTYPE_BF16);
}

TEST(CApi, StatusNames) {
  EXPECT_STREQ(tgv_status_name(TGV_SUCCESS), "TGV_SUCCESS");
  EXPECT_STREQ(tgv_status_name(TGV_ERROR_INVALID_ARGUMENT), "TGV_ERROR_INVALID_ARGUMENT");
  EXPECT_STREQ(tgv_status_name(TGV_ERROR_NOT_SUPPORTED), "TGV_ERROR_NOT_SUPPORTED");
  EXPECT_STREQ(tgv_status_name(TGV_ERROR_CUDA), "TGV_ERROR_CUDA");
  EXPECT_STREQ(tgv_status_name(TGV_ERROR_CUBLAS), "TGV_ERROR_CUBLAS");
  EXPECT_STREQ(tgv_status_name(TGV_ERROR_INTERNAL), "TGV_ERROR_INTERNAL");
  const char* unknown = tgv_status_name(static_cast<tgv_status>(42));
  ASSERT_NE(unknown, nullptr);
  EXPECT_GT(std::strlen(unknown), 0u);
}

TEST(CApi, VersionString) {
  const std::string want = std::to_string(TGV_VERSION_MAJOR) + "." + std::to_string(TGV_VERSION_MINOR) + "." +
                           std::to_string(TGV_VERSION_PATCH);
  ASSERT_NE(tgv_version_string(), nullptr);
  EXPECT_EQ(std::string(tgv_version_string()), want);
}

// ---- tgv_last_error ------------------------------------------------------

TEST(LastError, ReplacedByEachFailingCall) {
  auto p = make_problem(-5, 64, 64);
  ASSERT_TRUE(status_is(tgv_validate(&p, nullptr), TGV_ERROR_INVALID_ARGUMENT, {"m=-5"}));
  p = make_problem(16, 64, 64);
  p.w = nullptr;
  ASSERT_TRUE(status_is(tgv_validate(&p, nullptr), TGV_ERROR_INVALID_ARGUMENT, {"w is NULL"}));
  EXPECT_EQ(std::string(tgv_last_error()).find("m=-5"), std::string::npos) << tgv_last_error();
  tgv_tactic_info info;
  ASSERT_TRUE(status_is(tgv_get_tactic(-3, &info), TGV_ERROR_INVALID_ARGUMENT, {"tactic=-3"}));
  EXPECT_EQ(std::string(tgv_last_error()).find("w is NULL"), std::string::npos) << tgv_last_error();
}

TEST(LastError, ThreadLocal) {
  auto p = make_problem(-7, 64, 64);
  ASSERT_EQ(tgv_validate(&p, nullptr), TGV_ERROR_INVALID_ARGUMENT);
  const std::string main_message = tgv_last_error();
  ASSERT_NE(main_message.find("m=-7"), std::string::npos);

  std::string fresh, after_own_error;
  std::thread t([&] {
    fresh = tgv_last_error();  // nothing failed on this thread yet
    auto q = make_problem(16, 64, 64);
    q.out = nullptr;
    tgv_validate(&q, nullptr);
    after_own_error = tgv_last_error();
  });
  t.join();
  EXPECT_EQ(fresh, "");
  EXPECT_NE(after_own_error.find("out is NULL"), std::string::npos) << after_own_error;
  // The other thread's failure did not touch this thread's message.
  EXPECT_EQ(std::string(tgv_last_error()), main_message);
}

TEST(LastError, StablePointerUntilNextFailure) {
  auto p = make_problem(16, 64, 64);
  p.x = fake_ptr(kX + 1);
  ASSERT_EQ(tgv_validate(&p, nullptr), TGV_ERROR_INVALID_ARGUMENT);
  const char* message = tgv_last_error();
  // Successful calls do not clobber the message of the last failure.
  const tgv_problem good = make_problem(16, 64, 64);
  ASSERT_EQ(tgv_validate(&good, nullptr), TGV_SUCCESS);
  EXPECT_NE(std::string(message).find("16-byte aligned"), std::string::npos) << message;
}

// ---- the C++ wrapper -----------------------------------------------------

TEST(CppApi, StatusCarriesMessage) {
  tgv::Problem p = tgv::Problem::packed(16, 64, 64);
  p.x = fake_ptr(kX);
  p.w = fake_ptr(kW);
  p.out = fake_ptr(kOut);
  tgv::Status ok = tgv::validate(p);
  EXPECT_TRUE(ok.ok());
  EXPECT_TRUE(static_cast<bool>(ok));
  EXPECT_EQ(ok.code(), TGV_SUCCESS);
  EXPECT_EQ(ok.message(), "");

  p.n = -9;
  tgv::Status bad = tgv::validate(p);
  EXPECT_FALSE(bad.ok());
  EXPECT_FALSE(static_cast<bool>(bad));
  EXPECT_EQ(bad.code(), TGV_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(bad.message().find("n=-9"), std::string::npos) << bad.message();

  // The message is a copy: a later failure does not change it.
  p.n = 64;
  p.out = nullptr;
  EXPECT_FALSE(tgv::validate(p).ok());
  EXPECT_NE(bad.message().find("n=-9"), std::string::npos) << bad.message();
}

TEST(CppApi, OptionsReachValidation) {
  tgv::Problem p = tgv::Problem::packed(16, 64, 64);
  p.x = fake_ptr(kX);
  p.w = fake_ptr(kW);
  p.out = fake_ptr(kOut);
  tgv::Options o;
  o.backend = tgv::Backend::Cublas;
  o.tactic = 1;
  tgv::Status s = tgv::validate(p, o);
  EXPECT_EQ(s.code(), TGV_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(s.message().find("cublas"), std::string::npos) << s.message();
  o.pdl = false;
  EXPECT_EQ(o.to_c().pdl, 0);
}

TEST(CppApi, GemmOnEmptyProblem) {
  tgv::Problem p = tgv::Problem::packed(0, 64, 64);
  EXPECT_TRUE(tgv::gemm(p, tgv::Options{}, nullptr).ok());
}

TEST(CppApi, ListTactics) {
  const auto list = tgv::list_tactics();
  ASSERT_EQ(static_cast<int32_t>(list.size()), tgv_num_tactics());
  for (size_t i = 0; i < list.size(); ++i) EXPECT_EQ(list[i].id, static_cast<int32_t>(i));
}

}  // namespace

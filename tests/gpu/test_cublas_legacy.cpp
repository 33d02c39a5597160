// The legacy cuBLAS path of backend=cublas (TGV_CUBLAS_API=legacy,
// src/cublas/cublas_legacy.hpp): the harness's checks on it, and that it is
// the path taken where it serves the call and only there (the library's count
// of legacy calls; cuBLAS's own API log). Its rounding: test_cublas_rounding.cpp.
#include <cublas_v2.h>
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "cublas/cublas_legacy.hpp"
#include "gpu/cublas_api_scope.hpp"
#include "gpu/harness.hpp"
#include "tgv/tgv.h"

namespace {

using tgv_test::CaseResult;
using tgv_test::CublasApiScope;
using tgv_test::GemmCase;
using tgv_test::GemmFixture;

GemmCase shape(int64_t m, int64_t n, int64_t k, int64_t l = 1) {
  GemmCase c;
  c.m = m, c.n = n, c.k = k, c.l = l;
  c.backend = TGV_BACKEND_CUBLAS;
  return c;
}

std::vector<GemmCase> cases() {
  std::vector<GemmCase> v;
  v.push_back(shape(1, 4096, 4096));
  v.push_back(shape(2, 1000, 136));  // odd N
  v.push_back(shape(7, 33, 8));
  v.push_back(shape(33, 1282, 1000));
  v.push_back(shape(256, 4100, 4104));
  v.push_back(shape(17, 264, 136, 3));  // strided batch
  GemmCase c = shape(5, 96, 64, 2);
  c.batch_pad = 24;
  v.push_back(c);
  c = shape(16, 512, 136);
  c.in_pad = 8, c.out_pad = 3;
  v.push_back(c);
  c = shape(8, 1282, 4104);
  c.out_row_major = false;
  v.push_back(c);
  c = shape(9, 520, 264);
  c.x_k_major = false;
  v.push_back(c);
  c = shape(9, 520, 264);
  c.w_k_major = false;
  v.push_back(c);
  c = shape(32, 2048, 1024);
  c.graph = true;  // captured: the workspace and handle exist from the first run
  v.push_back(c);
  c = shape(4, 1024, 512);
  c.null_stream = true;
  v.push_back(c);
  c = shape(3, 300, 200, 2);
  c.w_broadcast = true;  // not served by legacy cuBLAS: cuBLASLt takes it
  v.push_back(c);
  c = shape(8, 1024, 512);
  c.bias = true;  // likewise
  v.push_back(c);
  return v;
}

class CublasLegacy : public ::testing::TestWithParam<GemmCase> {};

TEST_P(CublasLegacy, MatchesReference) {
  TGV_REQUIRE_GPU();
  const CublasApiScope api("legacy");
  const CaseResult r = tgv_test::run_case(GetParam());
  for (const std::string& f : r.failures) ADD_FAILURE() << f;
  ASSERT_EQ(r.status, TGV_SUCCESS) << tgv_status_name(r.status) << ": " << r.message;
}

INSTANTIATE_TEST_SUITE_P(Cases, CublasLegacy, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<GemmCase>& info) { return info.param.name(); });

// cuBLAS's API log, collected while a Log is alive: through the callback and
// into a file (either may be what this cuBLAS delivers; both are read).
class Log {
 public:
  Log() : path_("/tmp/tgv_test_cublas_log_" + std::to_string(getpid()) + ".txt") {
    std::remove(path_.c_str());
    {
      std::lock_guard<std::mutex> lock(mutex());
      text().clear();
    }
    cublasSetLoggerCallback(&Log::collect);
    cublasLoggerConfigure(1, 0, 0, path_.c_str());
  }
  ~Log() {
    stop();
    std::remove(path_.c_str());
  }
  // Stops logging and returns what was logged.
  std::string get() {
    stop();
    std::string all;
    {
      std::lock_guard<std::mutex> lock(mutex());
      all = text();
    }
    std::ifstream f(path_);
    std::stringstream s;
    s << f.rdbuf();
    return all + s.str();
  }

 private:
  void stop() {
    cublasLoggerConfigure(0, 0, 0, nullptr);
    cublasSetLoggerCallback(nullptr);
  }
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static std::string& text() {
    static std::string t;
    return t;
  }
  static void collect(const char* message) {
    std::lock_guard<std::mutex> lock(mutex());
    text() += message ? message : "";
    text() += '\n';
  }
  std::string path_;
};

// cuBLAS's log of one run of c under TGV_CUBLAS_API=value.
std::string logged_run(const GemmCase& c, const char* value) {
  GemmFixture f(c);
  std::vector<std::string> failures;
  f.poison();
  const CublasApiScope api(value);
  std::string log;
  {
    Log l;
    EXPECT_EQ(f.run(f.options(), failures), TGV_SUCCESS) << tgv_last_error();
    log = l.get();
  }
  for (const std::string& s : failures) ADD_FAILURE() << s;
  return log;
}

// The library's own count of legacy calls: one per call it serves, none else.
TEST(CublasLegacyPath, IsTheOneTaken) {
  TGV_REQUIRE_GPU();
  auto legacy_calls_of = [](const GemmCase& c, const char* api) {
    const uint64_t before = tgv::detail::cublas_legacy_calls();
    GemmFixture f(c);
    std::vector<std::string> failures;
    {
      const CublasApiScope scope(api);
      EXPECT_EQ(f.run(f.options(), failures), TGV_SUCCESS) << tgv_last_error();
    }
    for (const std::string& s : failures) ADD_FAILURE() << s;
    return tgv::detail::cublas_legacy_calls() - before;
  };
  const GemmCase c = shape(8, 1024, 512);
  EXPECT_EQ(legacy_calls_of(c, "legacy"), 1u);
  EXPECT_EQ(legacy_calls_of(c, "LEGACY"), 1u);
  EXPECT_EQ(legacy_calls_of(c, "lt"), 0u);
  EXPECT_EQ(legacy_calls_of(shape(17, 264, 136, 3), "legacy"), 1u);  // strided batch: one call
  GemmCase bias = c;
  bias.bias = true;
  EXPECT_EQ(legacy_calls_of(bias, "legacy"), 0u);
  GemmCase bcast = shape(3, 300, 200, 2);
  bcast.w_broadcast = true;
  EXPECT_EQ(legacy_calls_of(bcast, "legacy"), 0u);
}

// From the outside: cuBLAS's API log names cublasGemmEx under legacy and not
// under lt. Skipped (saying so) where this cuBLAS's logger delivers nothing at all.
TEST(CublasLegacyPath, CublasLogsGemmEx) {
  TGV_REQUIRE_GPU();
  const GemmCase c = shape(8, 1024, 512);
  const std::string legacy = logged_run(c, "legacy");
  const std::string lt = logged_run(c, "lt");
  if (legacy.empty() && lt.empty()) GTEST_SKIP() << "cuBLAS's logger (callback and file) delivered nothing";
  EXPECT_NE(legacy.find("cublasGemmEx"), std::string::npos)
      << "TGV_CUBLAS_API=legacy: cuBLAS logged no cublasGemmEx; its log:\n" << legacy;
  EXPECT_EQ(lt.find("cublasGemmEx"), std::string::npos) << "TGV_CUBLAS_API=lt called legacy cuBLAS:\n" << lt;
}

}  // namespace

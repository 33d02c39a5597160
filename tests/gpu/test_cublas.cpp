// The cuBLASLt path's algorithm choice (src/cublas): the measured algorithm's
// numerics on awkward shapes and layouts, its cache (per call shape and per M
// bucket), calls under graph capture (in this thread and in another), threads
// on their own streams, and TGV_CUBLAS_AUTOTUNE=0.
//
// Each test uses (N, K) pairs no other test in the suite uses, so that it
// finds the caches empty for its shapes whatever ran before it.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "api/validate.hpp"
#include "cublas/cublaslt_backend.hpp"
#include "gpu/harness.hpp"
#include "tgv/tgv.h"

namespace {

using tgv::detail::LtChoiceInfo;
using tgv_test::GemmCase;
using tgv_test::GemmFixture;

bool autotune_off_in_env() {
  const char* v = std::getenv("TGV_CUBLAS_AUTOTUNE");
  return v != nullptr && std::strcmp(v, "0") == 0;
}
#define REQUIRE_AUTOTUNE()                                                                   \
  do {                                                                                       \
    TGV_REQUIRE_GPU();                                                                       \
    if (autotune_off_in_env()) GTEST_SKIP() << "TGV_CUBLAS_AUTOTUNE=0 is set for this run";  \
  } while (0)

float bf16_value(uint16_t h) {
  const uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

// One bf16 ulp at |v| (8 significant bits).
double bf16_ulp(double v) {
  const double a = std::fabs(v);
  if (a < 1e-30) return 0;
  return std::ldexp(1.0, std::ilogb(a) - 7);
}

// Stricter than the harness's check: with fp32 accumulation and fp32 split-K
// reduction the only error left is the final rounding to bf16 (half an ulp)
// plus fp32 summation error (~sqrt(K) * 2^-24 relative to the terms, below
// 1e-5 of the RMS here). One ulp of the reference plus 1e-4 of its RMS
// leaves margin for that and for a rounding of a value that sits at a
// midpoint; partial sums rounded to bf16 (the OUTPUT_TYPE and INPLACE
// reductions, which we exclude) miss it on a sizeable fraction of elements.
void expect_within_an_ulp(GemmFixture& f, const std::vector<uint16_t>& got) {
  const GemmCase& c = f.spec();
  const std::vector<double>& ref = f.reference();
  const double atol = 1e-4 * f.reference_rms();
  int64_t bad = 0;
  double worst_ulps = 0;
  std::ostringstream first;
  for (int64_t b = 0; b < c.l; ++b)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        const double want = ref[size_t((b * c.m + i) * c.n + j)];
        const double v = bf16_value(got[size_t(f.out_index(b, i, j))]);
        const double err = std::fabs(v - want), ulp = bf16_ulp(want);
        if (ulp > 0) worst_ulps = std::max(worst_ulps, err / ulp);
        if (!(err <= ulp + atol) && bad++ < 5)
          first << "\n  out(" << b << "," << i << "," << j << ") = " << v << ", want " << want << " (" << err / ulp
                << " ulp)";
      }
  EXPECT_EQ(bad, 0) << "elements beyond 1 bf16 ulp + " << atol << " of the float64 reference (worst " << worst_ulps
                    << " ulp); first:" << first.str();
}

LtChoiceInfo cached_choice(GemmFixture& f) {
  LtChoiceInfo info;
  const tgv::detail::GemmDesc g = tgv::detail::validate_problem(f.problem());
  EXPECT_TRUE(tgv::detail::cublaslt_cached_choice(g, static_cast<cudaStream_t>(f.stream()), &info))
      << "no cuBLASLt plan cached for this call";
  return info;
}

std::string describe(const LtChoiceInfo& i) {
  std::ostringstream s;
  s << "candidate " << i.index << " of " << i.candidates << (i.measured ? " measured" : " unmeasured")
    << (i.reused ? " reused" : "") << (i.settled ? " settled" : " unsettled") << ", " << i.us << " us (first "
    << i.first_us << " us), algo " << i.algo_id << " tile " << i.tile << " split-K " << i.split_k << " reduction "
    << i.reduction << ", workspace " << i.workspace_needed << " of " << i.workspace_bytes;
  return s.str();
}

bool same_algo(const LtChoiceInfo& a, const LtChoiceInfo& b) {
  return std::memcmp(a.algo_words, b.algo_words, sizeof(a.algo_words)) == 0;
}

// Downloads out, checks it (the harness's checks and the one-ulp bound) and
// returns the choice cached for the call.
LtChoiceInfo check_out(GemmFixture& f, std::vector<std::string>& failures, std::vector<uint16_t>* copy = nullptr) {
  const std::vector<uint16_t> got = f.download();
  f.check_result(got, failures);
  expect_within_an_ulp(f, got);
  if (copy != nullptr) *copy = got;
  return cached_choice(f);
}

void expect_heuristics_first(const LtChoiceInfo& info, bool settled) {
  EXPECT_FALSE(info.measured) << describe(info);
  EXPECT_EQ(info.settled, settled) << describe(info);
  EXPECT_EQ(info.index, 0) << describe(info);
}

// Runs `c` eagerly through backend=cublas and checks: the harness's checks
// (reference, guards, NaN), the one-ulp bound, bitwise repeatability, and that
// a measured choice is cached for it.
void expect_measured_case(const GemmCase& c) {
  GemmFixture f(c);
  std::vector<std::string> failures;
  const tgv_options o = f.options();
  ASSERT_EQ(f.run(o, failures), TGV_SUCCESS) << tgv_last_error();
  std::vector<uint16_t> first;
  const LtChoiceInfo info = check_out(f, failures, &first);
  EXPECT_TRUE(info.measured) << describe(info);
  EXPECT_TRUE(info.settled) << describe(info);
  EXPECT_LE(info.workspace_needed, info.workspace_bytes);
  EXPECT_TRUE(info.reduction < 0 ||  // -1: cuBLASLt did not say
              (info.reduction & (CUBLASLT_REDUCTION_SCHEME_INPLACE | CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE)) == 0)
      << "a split-K reduction in bf16: " << describe(info);
  f.poison();
  ASSERT_EQ(f.run(o, failures), TGV_SUCCESS) << tgv_last_error();
  EXPECT_EQ(f.download(), first) << "the second call differs bitwise from the first";
  for (const std::string& s : failures) ADD_FAILURE() << s;
  ::testing::Test::RecordProperty("choice", describe(info));
}

GemmCase cublas_case(int64_t m, int64_t n, int64_t k, int64_t l = 1) {
  GemmCase c;
  c.m = m, c.n = n, c.k = k, c.l = l;
  c.backend = TGV_BACKEND_CUBLAS;
  return c;
}

// Odd N, K a multiple of 8 but of nothing larger, misaligned leading
// dimensions (an odd out ld makes every other row 2-byte aligned), every
// layout, bias, batches: the measured algorithm within an ulp everywhere.
std::vector<GemmCase> awkward_cases() {
  std::vector<GemmCase> cases;
  // The shapes: odd N at decode M.
  cases.push_back(cublas_case(64, 4097, 4104));
  cases.push_back(cublas_case(128, 4097, 4104));
  cases.push_back(cublas_case(1, 4097, 4104));
  cases.push_back(cublas_case(64, 576, 7168));
  cases.push_back(cublas_case(33, 1001, 1224));
  cases.push_back(cublas_case(7, 3001, 2056));
  {
    GemmCase c = cublas_case(64, 1538, 2000);
    c.bias = true;
    cases.push_back(c);
    c.out_pad = 3;  // ld 1541
    cases.push_back(c);
  }
  {
    GemmCase c = cublas_case(40, 1000, 1032);
    c.in_pad = 8;  // x and W ld = 1040
    c.out_pad = 1;
    cases.push_back(c);
  }
  // Each layout of x, W and out, with and without bias.
  for (int layout = 0; layout < 8; ++layout)
    for (int bias = 0; bias < 2; ++bias) {
      GemmCase c = cublas_case(24 + layout, 1283, 1048);
      c.x_k_major = (layout & 1) == 0;
      c.w_k_major = (layout & 2) == 0;
      c.out_row_major = (layout & 4) == 0;
      c.bias = bias != 0;
      if (layout == 5) c.out_pad = 5;
      cases.push_back(c);
    }
  // Batches: strided with gaps, and a broadcast W.
  {
    GemmCase c = cublas_case(17, 777, 520, 3);
    c.batch_pad = 24;
    c.bias = true;
    cases.push_back(c);
    c = cublas_case(9, 1299, 1016, 3);
    c.w_broadcast = true;
    cases.push_back(c);
  }
  return cases;
}

class CublasMeasured : public ::testing::TestWithParam<GemmCase> {};

TEST_P(CublasMeasured, WithinAnUlpOfTheReference) {
  REQUIRE_AUTOTUNE();
  expect_measured_case(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Awkward, CublasMeasured, ::testing::ValuesIn(awkward_cases()),
                         [](const ::testing::TestParamInfo<GemmCase>& i) {
                           return std::to_string(i.index) + "_" + i.param.name();
                         });

// The second call of a shape measures nothing and runs the same algorithm; a
// call of another M in the same bucket takes the bucket's measured algorithm;
// the next bucket measures again.
TEST(CublasChoice, CachedPerShapeAndSharedByTheBucket) {
  REQUIRE_AUTOTUNE();
  GemmFixture a(cublas_case(40, 1544, 1056));
  std::vector<std::string> failures;
  const uint64_t before = tgv::detail::cublaslt_measurements();
  ASSERT_EQ(a.run(a.options(), failures), TGV_SUCCESS) << tgv_last_error();
  EXPECT_EQ(tgv::detail::cublaslt_measurements(), before + 1);
  const LtChoiceInfo first = cached_choice(a);
  EXPECT_TRUE(first.measured && first.settled && !first.reused) << describe(first);
  EXPECT_GT(first.candidates, 0);
  EXPECT_GT(first.us, 0.0f);
  EXPECT_LE(first.us, first.first_us) << "the fastest measured is no slower than the heuristic's first";
  RecordProperty("choice", describe(first));

  ASSERT_EQ(a.run(a.options(), failures), TGV_SUCCESS) << tgv_last_error();
  EXPECT_EQ(tgv::detail::cublaslt_measurements(), before + 1) << "the second call measured again";
  const LtChoiceInfo again = cached_choice(a);
  EXPECT_TRUE(same_algo(first, again)) << describe(first) << " vs " << describe(again);

  GemmFixture b(cublas_case(57, 1544, 1056));  // same bucket (64)
  ASSERT_EQ(b.run(b.options(), failures), TGV_SUCCESS) << tgv_last_error();
  b.check_result(b.download(), failures);
  EXPECT_EQ(tgv::detail::cublaslt_measurements(), before + 1) << "M = 57 measured although M = 40 did for bucket 64";
  const LtChoiceInfo shared = cached_choice(b);
  EXPECT_TRUE(shared.reused && shared.measured) << describe(shared);
  EXPECT_TRUE(same_algo(first, shared)) << describe(first) << " vs " << describe(shared);

  GemmFixture c(cublas_case(65, 1544, 1056));  // bucket 128
  ASSERT_EQ(c.run(c.options(), failures), TGV_SUCCESS) << tgv_last_error();
  c.check_result(c.download(), failures);
  EXPECT_EQ(tgv::detail::cublaslt_measurements(), before + 2);
  for (const std::string& s : failures) ADD_FAILURE() << s;
}

// A first call under graph capture (global mode, on a stream never seen
// before) runs the heuristic's first algorithm without measuring, gets a
// workspace like any stream, and leaves the capture valid; the next eager
// call measures and settles the choice.
TEST(CublasChoice, FirstCallUnderCaptureThenAnEagerCallMeasures) {
  REQUIRE_AUTOTUNE();
  GemmCase spec = cublas_case(48, 2312, 1064);
  spec.bias = true;
  spec.own_stream = true;
  GemmFixture f(spec);
  std::vector<std::string> failures;
  const uint64_t before = tgv::detail::cublaslt_measurements();
  ASSERT_EQ(f.run_graph(f.options(), failures), TGV_SUCCESS) << tgv_last_error();
  EXPECT_EQ(tgv::detail::cublaslt_measurements(), before) << "measured while the stream was capturing";
  const LtChoiceInfo captured = check_out(f, failures);
  expect_heuristics_first(captured, false);
  EXPECT_GT(captured.workspace_bytes, 0u) << "a stream first seen under capture got no workspace";

  f.poison();
  ASSERT_EQ(f.run(f.options(), failures), TGV_SUCCESS) << tgv_last_error();
  EXPECT_EQ(tgv::detail::cublaslt_measurements(), before + 1);
  const LtChoiceInfo measured = check_out(f, failures);
  EXPECT_TRUE(measured.measured && measured.settled) << describe(measured);

  // Captured again: the measured algorithm, nothing measured.
  f.poison();
  ASSERT_EQ(f.run_graph(f.options(), failures), TGV_SUCCESS) << tgv_last_error();
  EXPECT_EQ(tgv::detail::cublaslt_measurements(), before + 1);
  f.check_result(f.download(), failures);
  EXPECT_TRUE(same_algo(measured, cached_choice(f)));
  for (const std::string& s : failures) ADD_FAILURE() << s;
}

// A one-shot signal between two threads.
class Flag {
 public:
  void raise() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      raised_ = true;
    }
    cv_.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return raised_; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool raised_ = false;
};

// One thread captures a graph (global mode, as PyTorch does) with a call of a
// new shape in it; while its capture is open, another thread's eager call of
// another new shape measures. Neither is disturbed: the capture ends valid
// and replays correctly, the eager call is correct and measured.
TEST(CublasChoice, MeasuringBesideAnotherThreadsCapture) {
  REQUIRE_AUTOTUNE();
  GemmCase cap_spec = cublas_case(20, 2328, 1072);
  cap_spec.own_stream = true;
  GemmCase eager_spec = cublas_case(36, 2344, 1080);
  eager_spec.own_stream = true;
  eager_spec.bias = true;
  GemmFixture cap(cap_spec), eager(eager_spec);
  {  // context, handle and device properties exist before the capture opens
    GemmFixture warm(cublas_case(8, 256, 256));
    std::vector<std::string> ignored;
    ASSERT_EQ(warm.run(warm.options(), ignored), TGV_SUCCESS) << tgv_last_error();
  }
  const uint64_t before = tgv::detail::cublaslt_measurements();

  Flag capture_open, eager_done;
  tgv_status cap_status = TGV_SUCCESS, eager_status = TGV_SUCCESS;
  cudaError_t end_status = cudaSuccess;
  std::string cap_error, eager_error;
  cudaGraph_t graph = nullptr;
  const auto cap_stream = static_cast<cudaStream_t>(cap.stream());

  std::thread capturer([&] {
    cudaSetDevice(0);
    cudaError_t begin = cudaStreamBeginCapture(cap_stream, cudaStreamCaptureModeGlobal);
    if (begin == cudaSuccess) {
      const tgv_options o = cap.options();
      cap_status = tgv_gemm(&cap.problem(), &o, cap.stream());
      if (cap_status != TGV_SUCCESS) cap_error = tgv_last_error();
    }
    capture_open.raise();
    eager_done.wait();
    end_status = begin == cudaSuccess ? cudaStreamEndCapture(cap_stream, &graph) : begin;
  });
  std::thread worker([&] {
    cudaSetDevice(0);
    capture_open.wait();
    // No synchronization here: in global mode it would be illegal while the
    // other thread captures (ours, in the library, runs in relaxed mode).
    const tgv_options o = eager.options();
    eager_status = tgv_gemm(&eager.problem(), &o, eager.stream());
    if (eager_status != TGV_SUCCESS) eager_error = tgv_last_error();
    eager_done.raise();
  });
  capturer.join();
  worker.join();

  ASSERT_EQ(cap_status, TGV_SUCCESS) << cap_error;
  ASSERT_EQ(eager_status, TGV_SUCCESS) << eager_error;
  ASSERT_EQ(end_status, cudaSuccess) << "the capture was invalidated: " << cudaGetErrorString(end_status);
  EXPECT_EQ(tgv::detail::cublaslt_measurements(), before + 1) << "the eager call should have measured, once";
  std::vector<std::string> failures;
  ASSERT_EQ(cudaStreamSynchronize(static_cast<cudaStream_t>(eager.stream())), cudaSuccess);
  EXPECT_TRUE(check_out(eager, failures).measured);

  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, cap_stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(cap_stream), cudaSuccess);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  expect_heuristics_first(check_out(cap, failures), false);
  for (const std::string& s : failures) ADD_FAILURE() << s;
}

// Threads on their own streams, two of them on one new shape (the race to
// measure and cache it), the others on new shapes of their own.
TEST(CublasChoice, ConcurrentThreadsOnTheirOwnStreams) {
  REQUIRE_AUTOTUNE();
  std::vector<GemmCase> cases = {cublas_case(30, 2360, 1088), cublas_case(30, 2360, 1088),
                                 cublas_case(100, 2376, 1096), cublas_case(5, 2392, 1104)};
  cases[3].out_row_major = false;
  cases[3].bias = true;
  const std::vector<tgv_test::CaseResult> results = tgv_test::run_cases_on_threads(cases);
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name());
    EXPECT_EQ(results[i].status, TGV_SUCCESS) << results[i].message;
    for (const std::string& f : results[i].failures) ADD_FAILURE() << f;
  }
}

// Sets an environment variable for the scope (the library reads the
// TGV_CUBLAS_* switches at each choice).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_, old_.c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

// Odd N (2-byte aligned rows of out): the staged path -- the GEMM into an
// aligned staging area, then a copy into out -- forced, whichever would win,
// so that it is checked on every run: numerics, guards and padding of out
// untouched, repeatable, also replayed from a graph; with bias and without.
TEST(CublasChoice, StagedOddNIsExact) {
  REQUIRE_AUTOTUNE();
  for (int bias = 0; bias < 2; ++bias) {
    SCOPED_TRACE(bias ? "bias" : "no bias");
    GemmCase c = cublas_case(48 + bias, 2417 + 2 * bias, 1120);
    c.bias = bias != 0;
    c.out_pad = 3;
    c.graph = true;
    tgv_test::CaseResult r;
    {
      ScopedEnv only("TGV_CUBLAS_STAGING", "only");
      GemmFixture f(c);
      std::vector<std::string> failures;
      ASSERT_EQ(f.run(f.options(), failures), TGV_SUCCESS) << tgv_last_error();
      const LtChoiceInfo info = check_out(f, failures);
      EXPECT_TRUE(info.measured) << describe(info);
      EXPECT_EQ(info.staged_ld, (c.n + 7) / 8 * 8) << describe(info);
      for (const std::string& s : failures) ADD_FAILURE() << s;
    }
    r = tgv_test::run_case(c);  // the cached staged plan again: repeat and graph replay
    EXPECT_EQ(r.status, TGV_SUCCESS) << r.message;
    for (const std::string& s : r.failures) ADD_FAILURE() << s;
  }
}

// TGV_CUBLAS_AUTOTUNE=0: the heuristic's first algorithm, nothing measured, and
// the choice stays (a later call does not measure either).
TEST(CublasChoice, AutotuneOffTakesTheHeuristicsFirst) {
  TGV_REQUIRE_GPU();
  GemmFixture f(cublas_case(44, 2408, 1112));
  std::vector<std::string> failures;
  const uint64_t before = tgv::detail::cublaslt_measurements();
  tgv_status s, again;
  {
    ScopedEnv off("TGV_CUBLAS_AUTOTUNE", "0");
    s = f.run(f.options(), failures);
    again = f.run(f.options(), failures);
  }
  ASSERT_EQ(s, TGV_SUCCESS) << tgv_last_error();
  ASSERT_EQ(again, TGV_SUCCESS) << tgv_last_error();
  EXPECT_EQ(tgv::detail::cublaslt_measurements(), before);
  expect_heuristics_first(check_out(f, failures), true);
  // With autotuning back on, the settled choice stays.
  if (!autotune_off_in_env()) {
    ASSERT_EQ(f.run(f.options(), failures), TGV_SUCCESS) << tgv_last_error();
    EXPECT_EQ(tgv::detail::cublaslt_measurements(), before);
  }
  for (const std::string& e : failures) ADD_FAILURE() << e;
}

}  // namespace

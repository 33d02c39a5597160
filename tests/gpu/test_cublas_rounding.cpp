// backend=cublas rounds once: every element within 1 bf16 ulp of the float64
// reference (plus the fp32 accumulation's own error where a value is near
// zero), on the cuBLASLt path with and without a bias and on the legacy cuBLAS
// path. One exception, measured on the H200 (2026-12-03): cuBLASLt's bias
// epilogue (row-major out) under its split-K algorithms rounds the product to
// bf16 before it adds the bias, whatever the reduction scheme, so there the
// bound is 1 ulp of the larger of the output and the product x . W^T (what
// torch's F.linear with a bias gets from the same epilogue); the bias added
// through C (column-major out) rounds once and is held to 1 ulp. Split-K partial sums added in bf16 (cuBLASLt's INPLACE and OUTPUT_TYPE
// reduction schemes, legacy cuBLAS's default math mode) miss by up to 2.3 ulp
// on these shapes (perf-notes §13); the harness's 1% tolerance admits that,
// this test does not.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "gpu/cublas_api_scope.hpp"
#include "gpu/harness.hpp"
#include "tgv/tgv.h"

namespace {

using tgv_test::GemmCase;
using tgv_test::GemmFixture;

float bf16_to_float(uint16_t bits) {
  const uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

GemmCase shape(int64_t m, int64_t n, int64_t k, int64_t l = 1, bool bias = false) {
  GemmCase c;
  c.m = m, c.n = n, c.k = k, c.l = l;
  c.bias = bias;
  c.backend = TGV_BACKEND_CUBLAS;
  return c;
}

// Elements of a run of c beyond |out - ref| <= ulp(max(|out|, |ref|)) + atol,
// atol = 1e-3 x the reference's RMS: fp32 accumulation over K <= 7168 products
// differs from float64 by ~1e-6 of the RMS, so only values near zero need it,
// while a second rounding costs ~1 ulp more at every magnitude.
std::string ulp_failures(const GemmCase& c, const char* api) {
  const bool bias_epilogue = c.bias && c.out_row_major && std::string(api) == "lt";
  GemmFixture f(c);
  std::vector<std::string> failures;
  f.poison();
  tgv_status s;
  {
    const tgv_test::CublasApiScope scope(api);
    s = f.run(f.options(), failures);
  }
  if (s != TGV_SUCCESS) return std::string("status ") + tgv_status_name(s) + ": " + tgv_last_error();
  const std::vector<uint16_t> got = f.download();
  const double atol = 1e-3 * f.reference_rms();
  int64_t bad = 0;
  double worst = 0;
  std::ostringstream first;
  for (int64_t b = 0; b < c.l; ++b)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        const float v = bf16_to_float(got[size_t(f.out_index(b, i, j))]);
        const double want = f.reference(b, i, j);
        double big = std::fmax(std::fabs(double(v)), std::fabs(want));
        if (bias_epilogue) big = std::fmax(big, std::fabs(want - f.bias_value(j)));
        const double ulp = big > 0 ? std::ldexp(1.0, std::ilogb(big) - 7) : 0.0;
        const double err = std::fabs(double(v) - want);
        if (ulp > 0) worst = std::fmax(worst, (err - atol) / ulp);
        if (!(err <= ulp + atol) && bad++ == 0)
          first << "out(" << b << "," << i << "," << j << ") = " << v << ", want " << want << " (" << err / ulp
                << " ulp)";
      }
  for (const std::string& x : failures) first << "; " << x;
  if (bad == 0 && failures.empty()) return "";
  std::ostringstream s2;
  s2 << bad << " of " << c.l * c.m * c.n << " elements beyond 1 ulp + " << atol << " (worst " << worst
     << " ulp beyond atol); first " << first.str();
  return s2.str();
}

std::vector<GemmCase> cases(bool bias) {
  std::vector<GemmCase> v;
  v.push_back(shape(256, 4100, 4104, 1, bias));  // split-K on the H200 (perf-notes §13)
  v.push_back(shape(64, 4096, 7168, 1, bias));
  v.push_back(shape(8, 1282, 4104, 1, bias));
  v.push_back(shape(16, 1001, 4096, 1, bias));  // odd N
  v.push_back(shape(17, 264, 136, 3, bias));    // a batch
  GemmCase col = shape(8, 1282, 4104, 1, bias);
  col.out_row_major = false;  // with a bias: through C, beta = 1
  v.push_back(col);
  return v;
}

std::vector<GemmCase> with_and_without_bias() {
  std::vector<GemmCase> v = cases(false), b = cases(true);
  v.insert(v.end(), b.begin(), b.end());
  return v;
}

std::string case_name(const ::testing::TestParamInfo<GemmCase>& info) { return info.param.name(); }

class CublasLtRounding : public ::testing::TestWithParam<GemmCase> {};

TEST_P(CublasLtRounding, WithinOneUlp) {
  TGV_REQUIRE_GPU();
  const std::string why = ulp_failures(GetParam(), "lt");
  EXPECT_TRUE(why.empty()) << why;
}

INSTANTIATE_TEST_SUITE_P(Cases, CublasLtRounding, ::testing::ValuesIn(with_and_without_bias()), case_name);

// Legacy cuBLAS serves only calls without a bias.
class CublasLegacyRounding : public ::testing::TestWithParam<GemmCase> {};

TEST_P(CublasLegacyRounding, WithinOneUlp) {
  TGV_REQUIRE_GPU();
  const std::string why = ulp_failures(GetParam(), "legacy");
  EXPECT_TRUE(why.empty()) << why;
}

INSTANTIATE_TEST_SUITE_P(Cases, CublasLegacyRounding, ::testing::ValuesIn(cases(false)), case_name);

}  // namespace

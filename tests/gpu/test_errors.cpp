// Failing calls on a real device write nothing: each runs against a poisoned
// out allocation, which must come back untouched.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "gpu/harness.hpp"
#include "tgv/tgv.h"

namespace {

using tgv_test::GemmCase;
using tgv_test::GemmFixture;

GemmCase base_case() {
  GemmCase c;
  c.m = 16, c.n = 1000, c.k = 520, c.l = 2;
  c.bias = true;
  return c;
}

void expect_untouched(GemmFixture& f, const tgv_options& o, tgv_status want, const std::string& text) {
  std::vector<std::string> failures;
  f.poison();
  const tgv_status s = f.run(o, failures);
  EXPECT_EQ(s, want) << tgv_status_name(s) << ": " << tgv_last_error();
  if (s != TGV_SUCCESS) {
    EXPECT_NE(std::string(tgv_last_error()).find(text), std::string::npos) << tgv_last_error();
  }
  f.check_untouched(f.download(), failures);
  for (const std::string& m : failures) ADD_FAILURE() << m;
}

TEST(ErrorPath, InvalidOptionsWriteNothing) {
  TGV_REQUIRE_GPU();
  GemmFixture f(base_case());
  for (int32_t pdl : {0, 1}) {
    tgv_options o = f.options();
    o.pdl = pdl;
    o.backend = 9;
    expect_untouched(f, o, TGV_ERROR_INVALID_ARGUMENT, "backend=9");
    o = f.options();
    o.pdl = 2;
    expect_untouched(f, o, TGV_ERROR_INVALID_ARGUMENT, "pdl=2");
    o = f.options();
    o.pdl = pdl;
    o.tactic = tgv_num_tactics();
    expect_untouched(f, o, TGV_ERROR_INVALID_ARGUMENT, "tactic=");
    o = f.options();
    o.pdl = pdl;
    o.backend = TGV_BACKEND_CUBLAS;
    o.split_k = 2;
    expect_untouched(f, o, TGV_ERROR_INVALID_ARGUMENT, "split_k=2");
  }
}

TEST(ErrorPath, InvalidProblemWritesNothing) {
  TGV_REQUIRE_GPU();
  GemmFixture f(base_case());
  const tgv_problem good = f.problem();
  for (int32_t backend : {TGV_BACKEND_AUTO, TGV_BACKEND_TGV, TGV_BACKEND_CUBLAS}) {
    tgv_options o = f.options();
    o.backend = backend;
    f.problem() = good;
    f.problem().out_stride_l = 16 * 1000 - 1;  // one batch of out spans 16 x 1000: batches overlap
    expect_untouched(f, o, TGV_ERROR_INVALID_ARGUMENT, "out_stride_l=");
    f.problem() = good;
    f.problem().k = 516;
    expect_untouched(f, o, TGV_ERROR_INVALID_ARGUMENT, "k=516");
    f.problem() = good;
    f.problem().dtype = TGV_DTYPE_FP16;
    expect_untouched(f, o, TGV_ERROR_NOT_SUPPORTED, "dtype=1");
    f.problem() = good;
    f.problem().bias = static_cast<const char*>(good.bias) + 2;
    expect_untouched(f, o, TGV_ERROR_INVALID_ARGUMENT, "bias=");
  }
  f.problem() = good;
}

// out aliasing an input: refused, and the shared buffer is left as it was.
TEST(ErrorPath, AliasingWritesNothing) {
  TGV_REQUIRE_GPU();
  GemmFixture f(base_case());
  tgv_problem& p = f.problem();
  p.x = p.out;  // x now reads the poisoned out allocation
  expect_untouched(f, f.options(), TGV_ERROR_INVALID_ARGUMENT, "overlaps x=");
}

// A request the tgv backend refuses (NOT_SUPPORTED) writes nothing either.
TEST(ErrorPath, RefusedByTgvWritesNothing) {
  TGV_REQUIRE_GPU();
  GemmCase c = base_case();
  c.w_broadcast = true;
  c.backend = TGV_BACKEND_TGV;
  GemmFixture f(c);
  std::vector<std::string> failures;
  const tgv_status s = f.run(f.options(), failures);
  ASSERT_NE(tgv_test::tgv_refuses_by_design(c), "");
  EXPECT_EQ(s, TGV_ERROR_NOT_SUPPORTED) << tgv_status_name(s) << ": " << tgv_last_error();
  f.check_untouched(f.download(), failures);
  for (const std::string& m : failures) ADD_FAILURE() << m;
}

// M, N or L = 0 on a device: success, nothing written, nothing launched.
TEST(ErrorPath, EmptyProblemWritesNothing) {
  TGV_REQUIRE_GPU();
  GemmFixture f(base_case());
  const tgv_problem good = f.problem();
  for (int d = 0; d < 3; ++d) {
    f.problem() = good;
    (d == 0 ? f.problem().m : d == 1 ? f.problem().n : f.problem().l) = 0;
    for (int32_t backend : {TGV_BACKEND_AUTO, TGV_BACKEND_TGV, TGV_BACKEND_CUBLAS}) {
      tgv_options o = f.options();
      o.backend = backend;
      expect_untouched(f, o, TGV_SUCCESS, "");
    }
  }
}

}  // namespace

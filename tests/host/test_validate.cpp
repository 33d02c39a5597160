// Validation: every rule of src/api/validate.cpp through the C ABI (status and
// message), and every accepted layout through validate_problem's GemmDesc.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "api/validate.hpp"
#include "common/error.hpp"
#include "host_util.hpp"
#include "tactics/tactics.hpp"
#include "tgv/tgv.h"

namespace {

using namespace tgv_test;
using tgv::detail::GemmDesc;
using tgv::detail::Major;

// ---- sizes ---------------------------------------------------------------

TEST(ValidateSizes, NegativeM) { auto p = make_problem(-1, 64, 64); EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"m=-1"})); }
TEST(ValidateSizes, NegativeN) { auto p = make_problem(16, -3, 64); EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"n=-3"})); }
TEST(ValidateSizes, NegativeK) { auto p = make_problem(16, 64, -8); EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"k=-8"})); }
TEST(ValidateSizes, NegativeL) { auto p = make_problem(16, 64, 64, -2); EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"l=-2"})); }

TEST(ValidateSizes, NegativeSizeRejectedEvenWhenAnotherIsZero) {
  auto p = make_problem(0, 64, -8);
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"k=-8"}));
}

TEST(ValidateSizes, SizeBeyondInt32) {
  auto p = make_problem(16, 64, 64);
  p.m = int64_t(1) << 31;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"m=2147483648"}));
}

TEST(ValidateSizes, KNotMultipleOf8) {
  auto p = make_problem(16, 64, 12);
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"k=12", "multiple of 8"}));
}

TEST(ValidateSizes, KZeroWithNonEmptyOutput) {
  auto p = make_problem(16, 64, 0);
  p.x_stride_m = 8;  // keep the strides out of the picture
  p.w_stride_n = 8;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"k=0"}));
}

// M, N or L == 0 is a valid no-op: pointers and strides are not looked at.
class ValidateEmpty : public ::testing::TestWithParam<int> {};
TEST_P(ValidateEmpty, SucceedsWithNullPointers) {
  int64_t dims[3] = {16, 64, 2};
  dims[GetParam()] = 0;
  tgv_problem p;
  tgv_default_problem(&p, dims[0], dims[1], 64, dims[2]);
  p.x_stride_m = 3;  // garbage strides too
  p.w_stride_k = 7;
  EXPECT_TRUE(validate_ok(p));
  const GemmDesc d = tgv::detail::validate_problem(p);
  EXPECT_TRUE(d.empty());
}
INSTANTIATE_TEST_SUITE_P(MNL, ValidateEmpty, ::testing::Values(0, 1, 2),
                         [](const auto& info) { return std::string(1, "MNL"[info.param]); });

// ---- dtype ---------------------------------------------------------------

// fp16 inputs, fp32 and fp16 outputs: tests/host/test_epilogue.cpp.
TEST(ValidateDtype, Fp16InputWithTheDefaultBf16OutNotSupported) {
  auto p = make_problem(16, 64, 64);
  p.dtype = TGV_DTYPE_FP16;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_NOT_SUPPORTED, {"dtype=1", "fp16"}));
}
TEST(ValidateDtype, Fp32InputNotSupported) {
  auto p = make_problem(16, 64, 64);
  p.dtype = TGV_DTYPE_FP32;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_NOT_SUPPORTED, {"dtype=2", "fp32", "out_dtype"}));
}
TEST(ValidateDtype, Fp8NotSupported) {
  auto p = make_problem(16, 64, 64);
  p.dtype = TGV_DTYPE_FP8_E4M3;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_NOT_SUPPORTED, {"dtype=3"}));
}
TEST(ValidateDtype, OutOfEnumRange) {
  auto p = make_problem(16, 64, 64);
  p.dtype = 4;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"dtype=4"}));
  p.dtype = -1;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"dtype=-1"}));
}

// ---- pointers ------------------------------------------------------------

TEST(ValidatePointers, NullX) { auto p = make_problem(16, 64, 64); p.x = nullptr; EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"x is NULL"})); }
TEST(ValidatePointers, NullW) { auto p = make_problem(16, 64, 64); p.w = nullptr; EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"w is NULL"})); }
TEST(ValidatePointers, NullOut) { auto p = make_problem(16, 64, 64); p.out = nullptr; EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"out is NULL"})); }
TEST(ValidatePointers, NullBiasMeansNoBias) {
  auto p = make_problem(16, 64, 64);
  p.bias = nullptr;
  EXPECT_TRUE(validate_ok(p));
  EXPECT_EQ(tgv::detail::validate_problem(p).bias, nullptr);
  p.bias = fake_ptr(kBias);
  EXPECT_TRUE(validate_ok(p));
  EXPECT_EQ(tgv::detail::validate_problem(p).bias, fake_ptr(kBias));
}

TEST(ValidatePointers, UnalignedX) {
  auto p = make_problem(16, 64, 64);
  p.x = fake_ptr(kX + 8);
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"x=" + hex(kX + 8), "16-byte aligned"}));
}
TEST(ValidatePointers, UnalignedW) {
  auto p = make_problem(16, 64, 64);
  p.w = fake_ptr(kW + 2);
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"w=" + hex(kW + 2), "16-byte aligned"}));
}
TEST(ValidatePointers, UnalignedOut) {
  auto p = make_problem(16, 64, 64);
  p.out = fake_ptr(kOut + 4);
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"out=" + hex(kOut + 4), "16-byte aligned"}));
}
TEST(ValidatePointers, UnalignedBias) {
  auto p = make_problem(16, 64, 64, 1, true);
  p.bias = fake_ptr(kBias + 14);
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"bias=" + hex(kBias + 14), "16-byte aligned"}));
}

// ---- strides -------------------------------------------------------------

TEST(ValidateStrides, XMatchesNoLayout) {
  auto p = make_problem(16, 64, 64);
  p.x_stride_m = 3;
  p.x_stride_k = 5;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"x strides", "x_stride_m=3", "x_stride_k=5", "no supported layout"}));
}
TEST(ValidateStrides, XRowStrideShorterThanK) {
  auto p = make_problem(16, 64, 64);
  p.x_stride_m = 56;  // K-major rows would overlap
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"x_stride_m=56", "x_stride_k=1", "no supported layout"}));
}
TEST(ValidateStrides, XBothStridesOne) {
  auto p = make_problem(16, 64, 64);
  p.x_stride_m = 1;
  p.x_stride_k = 1;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"x_stride_m=1", "x_stride_k=1", "no supported layout"}));
}
TEST(ValidateStrides, XMMajorColumnStrideShorterThanM) {
  auto p = make_problem(16, 64, 64);
  p.x_stride_m = 1;
  p.x_stride_k = 8;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"x_stride_m=1", "x_stride_k=8", "no supported layout"}));
}
TEST(ValidateStrides, WMatchesNoLayout) {
  auto p = make_problem(16, 64, 64);
  p.w_stride_n = 2;
  p.w_stride_k = 64;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"w strides", "w_stride_n=2", "w_stride_k=64", "no supported layout"}));
}
TEST(ValidateStrides, OutMatchesNoLayout) {
  auto p = make_problem(16, 64, 64);
  p.out_stride_m = 2;
  p.out_stride_n = 2;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"out strides", "out_stride_m=2", "out_stride_n=2", "no supported layout"}));
}
TEST(ValidateStrides, OutRowStrideShorterThanN) {
  auto p = make_problem(16, 64, 64);
  p.out_stride_m = 63;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"out_stride_m=63", "out_stride_n=1", "no supported layout"}));
}
TEST(ValidateStrides, OutColumnStrideShorterThanM) {
  auto p = make_problem(16, 64, 64);
  p.out_stride_m = 1;
  p.out_stride_n = 15;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"out_stride_m=1", "out_stride_n=15", "no supported layout"}));
}

TEST(ValidateStrides, XKMajorRowStrideNotMultipleOf8) {
  auto p = make_problem(16, 64, 64);
  p.x_stride_m = 68;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"x_stride_m=68", "multiple of 8"}));
}
TEST(ValidateStrides, XMMajorColumnStrideNotMultipleOf8) {
  auto p = make_problem(17, 64, 64);
  p.x_stride_m = 1;
  p.x_stride_k = 17;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"x_stride_k=17", "multiple of 8"}));
}
TEST(ValidateStrides, WKMajorRowStrideNotMultipleOf8) {
  auto p = make_problem(16, 64, 64);
  p.w_stride_n = 65;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"w_stride_n=65", "multiple of 8"}));
}
TEST(ValidateStrides, WNMajorColumnStrideNotMultipleOf8) {
  auto p = make_problem(16, 100, 64);
  p.w_stride_n = 1;
  p.w_stride_k = 100;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"w_stride_k=100", "multiple of 8"}));
}
TEST(ValidateStrides, XBatchStrideNotMultipleOf8) {
  auto p = make_problem(16, 64, 64, 2);
  p.x_stride_l = 16 * 64 + 4;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"x_stride_l=1028", "multiple"}));
}
TEST(ValidateStrides, WBatchStrideNotMultipleOf8) {
  auto p = make_problem(16, 64, 64, 3);
  p.w_stride_l = 64 * 64 + 1;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"w_stride_l=4097", "multiple"}));
}

// Every one of the nine strides, negative.
struct StrideField {
  const char* name;
  int64_t tgv_problem::*field;
};
class ValidateNegativeStride : public ::testing::TestWithParam<StrideField> {};
TEST_P(ValidateNegativeStride, Rejected) {
  auto p = make_problem(16, 64, 64, 2);
  p.*(GetParam().field) = -8;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {std::string(GetParam().name) + "=-8", ">= 0"}));
}
INSTANTIATE_TEST_SUITE_P(
    All, ValidateNegativeStride,
    ::testing::Values(StrideField{"x_stride_l", &tgv_problem::x_stride_l}, StrideField{"x_stride_m", &tgv_problem::x_stride_m},
                      StrideField{"x_stride_k", &tgv_problem::x_stride_k}, StrideField{"w_stride_l", &tgv_problem::w_stride_l},
                      StrideField{"w_stride_n", &tgv_problem::w_stride_n}, StrideField{"w_stride_k", &tgv_problem::w_stride_k},
                      StrideField{"out_stride_l", &tgv_problem::out_stride_l},
                      StrideField{"out_stride_m", &tgv_problem::out_stride_m},
                      StrideField{"out_stride_n", &tgv_problem::out_stride_n}),
    [](const auto& info) { return std::string(info.param.name); });

// ---- aliasing ------------------------------------------------------------

TEST(ValidateAliasing, OutEqualsX) {
  auto p = make_problem(16, 64, 64);
  p.out = const_cast<void*>(p.x);
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"out=" + hex(kX), "overlaps x=" + hex(kX)}));
}
TEST(ValidateAliasing, OutOverlapsTailOfX) {
  auto p = make_problem(16, 64, 64);
  const uintptr_t x_end = kX + 16 * 64 * 2;
  p.out = fake_ptr(x_end - 16);
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"overlaps x="}));
  p.out = fake_ptr(x_end);  // adjacent, not overlapping
  EXPECT_TRUE(validate_ok(p));
}
TEST(ValidateAliasing, OutOverlapsW) {
  auto p = make_problem(16, 64, 64);
  p.out = fake_ptr(kW + 64 * 64 * 2 - 16);
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"overlaps w=" + hex(kW)}));
  p.out = fake_ptr(kW + 64 * 64 * 2);
  EXPECT_TRUE(validate_ok(p));
}
TEST(ValidateAliasing, OutStartsBeforeAndCoversW) {
  auto p = make_problem(16, 64, 64);
  p.w = fake_ptr(kOut + 512);  // inside out's 16 x 64 elements
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"out=" + hex(kOut), "overlaps w="}));
}
TEST(ValidateAliasing, OutOverlapsBias) {
  auto p = make_problem(16, 64, 64, 1, true);
  p.bias = fake_ptr(kOut + 16 * 64 * 2 - 32);  // bias's first 16 elements are out's last 16
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"overlaps bias="}));
  p.bias = fake_ptr(kOut - 64 * 2);  // bias ends where out begins
  EXPECT_TRUE(validate_ok(p));
}
TEST(ValidateAliasing, OutOverlapsXInALaterBatch) {
  auto p = make_problem(16, 64, 64, 4);
  p.out = fake_ptr(kX + 3 * 16 * 64 * 2);  // x's last batch
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"overlaps x="}));
}
TEST(ValidateAliasing, OutBatchesOverlap) {
  auto p = make_problem(16, 64, 64, 2);
  p.out_stride_l = 16 * 64 - 1;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"out_stride_l=1023", "overlap"}));
  p.out_stride_l = 0;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"out_stride_l=0", "overlap"}));
  p.out_stride_l = 16 * 64;  // packed
  EXPECT_TRUE(validate_ok(p));
}
TEST(ValidateAliasing, ColumnMajorOutBatchesOverlap) {
  auto p = make_problem(16, 64, 64, 2);
  p.out_stride_m = 1;
  p.out_stride_n = 24;  // one batch spans 63*24 + 16 = 1528 elements
  p.out_stride_l = 1527;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"out_stride_l=1527", "1528"}));
  p.out_stride_l = 1528;
  EXPECT_TRUE(validate_ok(p));
}
TEST(ValidateAliasing, OutBatchStrideIgnoredForOneBatch) {
  auto p = make_problem(16, 64, 64, 1);
  p.out_stride_l = 0;
  EXPECT_TRUE(validate_ok(p));
}

// ---- options -------------------------------------------------------------

TEST(ValidateOptions, Defaults) { EXPECT_TRUE(validate_ok(make_problem(16, 64, 64))); }

TEST(ValidateOptions, BackendOutOfRange) {
  auto o = default_options();
  o.backend = 3;
  EXPECT_TRUE(validate_fails(make_problem(16, 64, 64), TGV_ERROR_INVALID_ARGUMENT, {"backend=3"}, o));
  o.backend = -1;
  EXPECT_TRUE(validate_fails(make_problem(16, 64, 64), TGV_ERROR_INVALID_ARGUMENT, {"backend=-1"}, o));
}
TEST(ValidateOptions, TacticOutOfRange) {
  auto o = default_options();
  o.tactic = tgv_num_tactics();
  EXPECT_TRUE(validate_fails(make_problem(16, 64, 64), TGV_ERROR_INVALID_ARGUMENT,
                             {"tactic=" + std::to_string(tgv_num_tactics())}, o));
  o.tactic = -2;
  EXPECT_TRUE(validate_fails(make_problem(16, 64, 64), TGV_ERROR_INVALID_ARGUMENT, {"tactic=-2"}, o));
}
TEST(ValidateOptions, PdlNotBoolean) {
  auto o = default_options();
  o.pdl = 2;
  EXPECT_TRUE(validate_fails(make_problem(16, 64, 64), TGV_ERROR_INVALID_ARGUMENT, {"pdl=2"}, o));
  o.pdl = -1;
  EXPECT_TRUE(validate_fails(make_problem(16, 64, 64), TGV_ERROR_INVALID_ARGUMENT, {"pdl=-1"}, o));
}
TEST(ValidateOptions, NegativeSplitK) {
  auto o = default_options();
  o.split_k = -2;  // -1 is TGV_SPLIT_K_STREAM
  EXPECT_TRUE(validate_fails(make_problem(16, 64, 64), TGV_ERROR_INVALID_ARGUMENT, {"split_k=-2"}, o));
}
TEST(ValidateOptions, SplitKAboveClusterLimit) {
  auto o = default_options();
  o.backend = TGV_BACKEND_TGV;
  o.split_k = tgv::detail::kMaxSplitK + 1;
  EXPECT_TRUE(validate_fails(make_problem(16, 64, 64), TGV_ERROR_INVALID_ARGUMENT,
                             {"split_k=" + std::to_string(tgv::detail::kMaxSplitK + 1)}, o));
  o.split_k = tgv::detail::kMaxSplitK;
  EXPECT_TRUE(validate_ok(make_problem(16, 64, 64), o));
}
TEST(ValidateOptions, TacticWithCublas) {
  auto o = default_options();
  o.backend = TGV_BACKEND_CUBLAS;
  o.tactic = 0;
  EXPECT_TRUE(validate_fails(make_problem(16, 64, 64), TGV_ERROR_INVALID_ARGUMENT, {"tactic=0", "cublas"}, o));
}
TEST(ValidateOptions, SplitKWithCublas) {
  auto o = default_options();
  o.backend = TGV_BACKEND_CUBLAS;
  o.split_k = 2;
  EXPECT_TRUE(validate_fails(make_problem(16, 64, 64), TGV_ERROR_INVALID_ARGUMENT, {"split_k=2", "cublas"}, o));
  o.split_k = 1;  // 1 means no split: fine for cuBLASLt
  EXPECT_TRUE(validate_ok(make_problem(16, 64, 64), o));
}
// A stage count is 0 (the library's choice) or a pipeline depth in [2, 16]:
// rejected before any launch, and never handed to cuBLASLt.
TEST(ValidateOptions, StagesOutOfRange) {
  auto o = default_options();
  o.backend = TGV_BACKEND_TGV;
  for (int32_t bad : {-1, 1, tgv::detail::kMaxStages + 1}) {
    o.stages = bad;
    EXPECT_TRUE(validate_fails(make_problem(16, 64, 64), TGV_ERROR_INVALID_ARGUMENT,
                               {"stages=" + std::to_string(bad), "[2, 16]"}, o));
  }
  for (int32_t good : {0, 2, 8, tgv::detail::kMaxStages}) {
    o.stages = good;
    EXPECT_TRUE(validate_ok(make_problem(16, 64, 64), o)) << good;
  }
}
TEST(ValidateOptions, StagesWithCublas) {
  auto o = default_options();
  o.backend = TGV_BACKEND_CUBLAS;
  o.stages = 8;
  EXPECT_TRUE(validate_fails(make_problem(16, 64, 64), TGV_ERROR_INVALID_ARGUMENT, {"stages=8", "cublas"}, o));
}
// The problem-independent option checks of validate_options directly.
TEST(ValidateOptions, DirectCallThrowsInvalid) {
  tgv_options o{TGV_BACKEND_AUTO, 5, 1, 0, 0};
  EXPECT_NO_THROW(tgv::detail::validate_options(o, 6));
  try {
    tgv::detail::validate_options(o, 5);
    FAIL() << "no throw";
  } catch (const tgv::detail::Error& e) {
    EXPECT_EQ(e.status(), TGV_ERROR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(e.what()).find("tactic=5"), std::string::npos) << e.what();
  }
}

// ---- accepted layouts ----------------------------------------------------

struct LayoutCase {
  bool x_k, w_k, out_row;
};

class ValidateLayouts : public ::testing::TestWithParam<LayoutCase> {};
TEST_P(ValidateLayouts, DetectedAsGiven) {
  const auto c = GetParam();
  const int64_t m = 24, n = 40, k = 64, l = 3, pad = 8;
  auto p = make_problem(m, n, k, l);
  const int64_t ldx = (c.x_k ? k : m) + pad, ldw = (c.w_k ? k : n) + pad, ldo = (c.out_row ? n : m) + 3;
  if (c.x_k) { p.x_stride_m = ldx; p.x_stride_k = 1; } else { p.x_stride_m = 1; p.x_stride_k = ldx; }
  if (c.w_k) { p.w_stride_n = ldw; p.w_stride_k = 1; } else { p.w_stride_n = 1; p.w_stride_k = ldw; }
  if (c.out_row) { p.out_stride_m = ldo; p.out_stride_n = 1; } else { p.out_stride_m = 1; p.out_stride_n = ldo; }
  p.x_stride_l = (c.x_k ? m : k) * ldx + 16;
  p.w_stride_l = (c.w_k ? n : k) * ldw;
  p.out_stride_l = (c.out_row ? m : n) * ldo + 1;
  ASSERT_TRUE(validate_ok(p));
  const GemmDesc d = tgv::detail::validate_problem(p);
  EXPECT_FALSE(d.empty());
  EXPECT_EQ(d.m, m); EXPECT_EQ(d.n, n); EXPECT_EQ(d.k, k); EXPECT_EQ(d.l, l);
  EXPECT_EQ(d.x.ptr, p.x); EXPECT_EQ(d.w.ptr, p.w); EXPECT_EQ(d.out.ptr, p.out);
  EXPECT_EQ(d.x.major, c.x_k ? Major::K : Major::MN);
  EXPECT_EQ(d.w.major, c.w_k ? Major::K : Major::MN);
  EXPECT_EQ(d.out.row_major, c.out_row);
  EXPECT_EQ(d.x.ld, ldx);
  EXPECT_EQ(d.w.ld, ldw);
  EXPECT_EQ(d.out.ld, ldo);
  EXPECT_EQ(d.x.batch_stride, p.x_stride_l);
  EXPECT_EQ(d.w.batch_stride, p.w_stride_l);
  EXPECT_EQ(d.out.batch_stride, p.out_stride_l);
}
INSTANTIATE_TEST_SUITE_P(All, ValidateLayouts,
                         ::testing::Values(LayoutCase{true, true, true}, LayoutCase{true, true, false},
                                           LayoutCase{true, false, true}, LayoutCase{true, false, false},
                                           LayoutCase{false, true, true}, LayoutCase{false, true, false},
                                           LayoutCase{false, false, true}, LayoutCase{false, false, false}),
                         [](const auto& info) {
                           const auto& c = info.param;
                           return std::string("x") + (c.x_k ? "K" : "M") + "_w" + (c.w_k ? "K" : "N") + "_out" +
                                  (c.out_row ? "Row" : "Col");
                         });

TEST(ValidateLayouts, PackedDefaultProblem) {
  const GemmDesc d = tgv::detail::validate_problem(make_problem(16, 64, 128, 2, true));
  EXPECT_EQ(d.x.major, Major::K);
  EXPECT_EQ(d.x.ld, 128);
  EXPECT_EQ(d.x.batch_stride, 16 * 128);
  EXPECT_EQ(d.w.major, Major::K);
  EXPECT_EQ(d.w.ld, 128);
  EXPECT_EQ(d.w.batch_stride, 64 * 128);
  EXPECT_TRUE(d.out.row_major);
  EXPECT_EQ(d.out.ld, 64);
  EXPECT_EQ(d.out.batch_stride, 16 * 64);
  EXPECT_EQ(d.bias, fake_ptr(kBias));
}

// M = 1: x's and out's row strides are meaningless and may be anything.
TEST(ValidateLayouts, SingleTokenDegenerateStrides) {
  auto p = make_problem(1, 64, 128);
  p.x_stride_m = 3;  // not even a multiple of 8: there is only one row
  p.out_stride_m = 0;
  ASSERT_TRUE(validate_ok(p));
  GemmDesc d = tgv::detail::validate_problem(p);
  EXPECT_EQ(d.x.major, Major::K);
  EXPECT_EQ(d.x.ld, 128);
  EXPECT_TRUE(d.out.row_major);
  EXPECT_EQ(d.out.ld, 64);

  // x M-major with M = 1: x_stride_m == 1, the column stride is the ld.
  p.x_stride_m = 1;
  p.x_stride_k = 8;
  ASSERT_TRUE(validate_ok(p));
  d = tgv::detail::validate_problem(p);
  EXPECT_EQ(d.x.major, Major::MN);
  EXPECT_EQ(d.x.ld, 8);

  // A column-major out with M = 1: a strided vector.
  p.out_stride_m = 1;
  p.out_stride_n = 5;
  ASSERT_TRUE(validate_ok(p));
  d = tgv::detail::validate_problem(p);
  EXPECT_FALSE(d.out.row_major);
  EXPECT_EQ(d.out.ld, 5);
}

// N = 1 column-major out: out_stride_n is meaningless.
TEST(ValidateLayouts, SingleColumnOut) {
  auto p = make_problem(16, 1, 64);
  p.w_stride_n = 0;  // one weight row
  p.out_stride_m = 1;
  p.out_stride_n = 0;
  ASSERT_TRUE(validate_ok(p));
  const GemmDesc d = tgv::detail::validate_problem(p);
  EXPECT_FALSE(d.out.row_major);
  EXPECT_EQ(d.out.ld, 16);
  EXPECT_EQ(d.w.ld, 64);
}

// Batch strides: ignored (0) for one batch; 0 broadcasts an input over L > 1.
TEST(ValidateLayouts, BatchStrides) {
  auto p = make_problem(16, 64, 64, 1);
  p.x_stride_l = 3;  // unused with L = 1, so not checked
  p.w_stride_l = 5;
  GemmDesc d = tgv::detail::validate_problem(p);
  EXPECT_EQ(d.x.batch_stride, 0);
  EXPECT_EQ(d.w.batch_stride, 0);
  EXPECT_EQ(d.out.batch_stride, 0);

  p = make_problem(16, 64, 64, 4);
  p.w_stride_l = 0;  // one weight shared by every batch
  ASSERT_TRUE(validate_ok(p));
  d = tgv::detail::validate_problem(p);
  EXPECT_EQ(d.w.batch_stride, 0);
  EXPECT_EQ(d.x.batch_stride, 16 * 64);
  p.x_stride_l = 0;
  p.w_stride_l = 64 * 64;
  ASSERT_TRUE(validate_ok(p));
  d = tgv::detail::validate_problem(p);
  EXPECT_EQ(d.x.batch_stride, 0);
  EXPECT_EQ(d.w.batch_stride, 64 * 64);

  // Inputs' batches may overlap each other (they are only read).
  p.x_stride_l = 8;
  EXPECT_TRUE(validate_ok(p));
}

TEST(ValidateLayouts, ThrowsDetailError) {
  auto p = make_problem(16, 64, 64);
  p.x = nullptr;
  try {
    tgv::detail::validate_problem(p);
    FAIL() << "no throw";
  } catch (const tgv::detail::Error& e) {
    EXPECT_EQ(e.status(), TGV_ERROR_INVALID_ARGUMENT);
    EXPECT_STREQ(e.what(), "x is NULL");
  }
}

}  // namespace

// Strides so large that the last element lies past the 64-bit address space:
// rejected with a message, never an overflowed (and so passing) overlap check.
TEST(Validate, StridesBeyondTheAddressSpace) {
  auto p = make_problem(16, 64, 64, 3);
  p.x_stride_l = INT64_MAX / 16 * 8;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"x=", "past the end of the address space"}));
  p = make_problem(16, 64, 64);
  p.out_stride_m = INT64_MAX / 16 * 8;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"out=", "past the end of the address space"}));
}

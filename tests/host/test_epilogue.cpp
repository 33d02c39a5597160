// Epilogues, output types and fp16 inputs on the host: every validation rule
// (status and the argument named in the message), the GemmDesc they produce,
// and which requests the tgv kernels serve (src/plan/epilogue_rules.cpp),
// auto falling back to cuBLASLt and backend=tgv refused with the reason.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "api/validate.hpp"
#include "common/error.hpp"
#include "host_util.hpp"
#include "plan/device_info.hpp"
#include "plan/epilogue_rules.hpp"
#include "plan/plan.hpp"
#include "tactics/tactics.hpp"
#include "tgv/tgv.h"
#include "tgv/tgv.hpp"

namespace {

using namespace tgv_test;
using namespace tgv::detail;

constexpr uintptr_t kResidual = 0x40000000000ull;

#ifdef TGV_WITH_SM90
constexpr bool kHasSm90 = true;
#else
constexpr bool kHasSm90 = false;
#endif
#if defined(TGV_WITH_SM100A)
constexpr bool kHasSm100a = true;
#else
constexpr bool kHasSm100a = false;
#endif

// A gated problem: W of n rows, out packed for n / 2 columns.
tgv_problem gated_problem(int64_t m, int64_t n, int64_t k, int32_t epilogue = TGV_EPILOGUE_SILU_MUL) {
  tgv_problem p = make_problem(m, n, k);
  p.epilogue = epilogue;
  p.out_stride_m = n / 2;
  p.out_stride_l = m * (n / 2);
  return p;
}

tgv_problem residual_problem(int64_t m, int64_t n, int64_t k, int64_t l = 1) {
  tgv_problem p = make_problem(m, n, k, l);
  p.residual = fake_ptr(kResidual);
  return p;
}

DeviceInfo device(int sm) {
  DeviceInfo d;
  d.ordinal = 0;
  d.cc_major = sm / 10;
  d.cc_minor = sm % 10;
  d.num_sms = sm == 90 ? 132 : 148;
  d.smem_optin_bytes = kSm90SmemBytes;
  d.name = "test-sm" + std::to_string(sm);
  return d;
}

const GateVerdict kPassed{GateState::Passed, {}};

tgv_options backend(int32_t b) {
  tgv_options o = default_options();
  o.backend = b;
  return o;
}

// ---- defaults ------------------------------------------------------------

TEST(EpilogueDefaults, DefaultProblemIsPlain) {
  tgv_problem p;
  tgv_default_problem(&p, 4, 64, 32, 2);
  EXPECT_EQ(p.out_dtype, TGV_DTYPE_BF16);
  EXPECT_EQ(p.epilogue, TGV_EPILOGUE_NONE);
  EXPECT_EQ(p.residual, nullptr);
  EXPECT_EQ(p.residual_stride_n, 1);
  EXPECT_EQ(p.residual_stride_m, 64);
  EXPECT_EQ(p.residual_stride_l, 4 * 64);
  EXPECT_TRUE(validate_problem(make_problem(4, 64, 32)).plain());
}

TEST(EpilogueDefaults, ZeroInitializedFieldsArePlain) {
  tgv_problem p = make_problem(4, 64, 32);
  p.out_dtype = 0, p.epilogue = 0, p.residual = nullptr;
  p.residual_stride_l = p.residual_stride_m = p.residual_stride_n = 0;  // ignored without a residual
  EXPECT_TRUE(validate_ok(p));
  EXPECT_TRUE(validate_problem(p).plain());
}

TEST(EpilogueDefaults, CppGatedHelper) {
  tgv::Problem p = tgv::Problem::gated(8, 256, 64);
  EXPECT_EQ(p.epilogue, TGV_EPILOGUE_SILU_MUL);
  EXPECT_EQ(p.out_stride_m, 128);
  p.x = fake_ptr(kX), p.w = fake_ptr(kW), p.out = fake_ptr(kOut);
  EXPECT_TRUE(tgv::validate(p).ok()) << tgv::validate(p).message();
}

// ---- dtypes --------------------------------------------------------------

TEST(EpilogueDtype, Fp16InAndOutAccepted) {
  tgv_problem p = make_problem(16, 64, 64);
  p.dtype = TGV_DTYPE_FP16, p.out_dtype = TGV_DTYPE_FP16;
  EXPECT_TRUE(validate_ok(p));
  const GemmDesc d = validate_problem(p);
  EXPECT_EQ(d.in_type, DType::FP16);
  EXPECT_EQ(d.out_type, DType::FP16);
  EXPECT_FALSE(d.plain());
}

TEST(EpilogueDtype, Fp32OutFromEitherInput) {
  for (int32_t in : {TGV_DTYPE_BF16, TGV_DTYPE_FP16}) {
    tgv_problem p = make_problem(16, 256, 7168);
    p.dtype = in, p.out_dtype = TGV_DTYPE_FP32;
    EXPECT_TRUE(validate_ok(p)) << "dtype " << in;
    EXPECT_EQ(validate_problem(p).out_type, DType::FP32);
  }
}

TEST(EpilogueDtype, Fp16InWithBf16OutNotSupported) {
  tgv_problem p = make_problem(16, 64, 64);
  p.dtype = TGV_DTYPE_FP16;  // out_dtype left at 0 (bf16)
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_NOT_SUPPORTED, {"out_dtype=0 (bf16)", "dtype=1 (fp16)", "fp32"}));
}

TEST(EpilogueDtype, Bf16InWithFp16OutNotSupported) {
  tgv_problem p = make_problem(16, 64, 64);
  p.out_dtype = TGV_DTYPE_FP16;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_NOT_SUPPORTED, {"out_dtype=1 (fp16)", "dtype=0 (bf16)"}));
}

TEST(EpilogueDtype, Fp8OutNotSupported) {
  tgv_problem p = make_problem(16, 64, 64);
  p.out_dtype = TGV_DTYPE_FP8_E4M3;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_NOT_SUPPORTED, {"out_dtype=3"}));
}

TEST(EpilogueDtype, OutDtypeOutOfEnum) {
  tgv_problem p = make_problem(16, 64, 64);
  p.out_dtype = 9;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"out_dtype=9", "not a tgv_dtype"}));
  p.out_dtype = -1;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"out_dtype=-1"}));
}

TEST(EpilogueDtype, Fp32OutExtentIsFourBytesAnElement) {
  // 16 x 64 fp32 = 4096 bytes: w placed right after out's bf16 extent (2048
  // bytes) overlaps the fp32 one.
  tgv_problem p = make_problem(16, 64, 64);
  p.out_dtype = TGV_DTYPE_FP32;
  p.w = fake_ptr(kOut + 2048);
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"overlaps w"}));
  p.w = fake_ptr(kOut + 4096);
  EXPECT_TRUE(validate_ok(p));
}

// ---- gated epilogues -----------------------------------------------------

TEST(EpilogueGated, SiluAndGeluAccepted) {
  for (int32_t e : {TGV_EPILOGUE_SILU_MUL, TGV_EPILOGUE_GELU_TANH_MUL}) {
    tgv_problem p = gated_problem(8, 512, 128, e);
    EXPECT_TRUE(validate_ok(p)) << e;
    const GemmDesc d = validate_problem(p);
    EXPECT_EQ(int(d.act), e);
    EXPECT_EQ(d.out_cols(), 256);
    EXPECT_EQ(d.out.ld, 256);
  }
}

TEST(EpilogueGated, OddNRejected) {
  tgv_problem p = gated_problem(8, 512, 128);
  p.n = 511;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"n=511", "epilogue=silu_mul", "even"}));
  p.epilogue = TGV_EPILOGUE_GELU_TANH_MUL;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"n=511", "epilogue=gelu_tanh_mul"}));
}

TEST(EpilogueGated, OutStridesAreForHalfTheColumns) {
  // out_stride_m = n / 2 is packed; n / 2 - 1 would overlap rows.
  tgv_problem p = gated_problem(8, 512, 128);
  p.out_stride_m = 255;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"out_stride_m=255", "out_stride_m >= 256"}));
}

TEST(EpilogueGated, OutExtentIsHalfTheColumns) {
  // out of 8 x 256 bf16 = 4096 bytes: w just past it is fine (it would
  // overlap an 8 x 512 out).
  tgv_problem p = gated_problem(8, 512, 128);
  p.w = fake_ptr(kOut + 4096);
  EXPECT_TRUE(validate_ok(p));
}

TEST(EpilogueGated, ResidualWithGatingRejected) {
  tgv_problem p = gated_problem(8, 512, 128);
  p.residual = fake_ptr(kResidual);
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"residual=", "epilogue=silu_mul"}));
}

TEST(EpilogueGated, EpilogueOutOfEnum) {
  tgv_problem p = make_problem(8, 512, 128);
  p.epilogue = 3;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"epilogue=3", "not a tgv_epilogue"}));
}

TEST(EpilogueGated, EmptyProblemStillChecksTheEpilogue) {
  tgv_problem p = gated_problem(0, 511, 128);
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"n=511"}));
  p.n = 512;
  EXPECT_TRUE(validate_ok(p));
}

// ---- residual ------------------------------------------------------------

TEST(EpilogueResidual, Accepted) {
  tgv_problem p = residual_problem(16, 4096, 4096, 2);
  EXPECT_TRUE(validate_ok(p));
  const GemmDesc d = validate_problem(p);
  EXPECT_TRUE(d.has_residual());
  EXPECT_TRUE(d.residual.row_major);
  EXPECT_EQ(d.residual.ld, 4096);
  EXPECT_EQ(d.residual.batch_stride, 16 * 4096);
}

TEST(EpilogueResidual, OwnStrides) {
  tgv_problem p = residual_problem(16, 4096, 4096);
  p.residual_stride_m = 5000;
  EXPECT_TRUE(validate_ok(p));
  EXPECT_EQ(validate_problem(p).residual.ld, 5000);
}

TEST(EpilogueResidual, AliasingOutExactly) {
  tgv_problem p = residual_problem(16, 4096, 4096, 2);
  p.residual = p.out;
  EXPECT_TRUE(validate_ok(p));
  // Column-major too.
  p.out_stride_m = p.residual_stride_m = 1;
  p.out_stride_n = p.residual_stride_n = 16;
  EXPECT_TRUE(validate_ok(p));
}

TEST(EpilogueResidual, PartialOverlapRejected) {
  tgv_problem p = residual_problem(16, 4096, 4096);
  p.residual = fake_ptr(kOut + 16);  // out shifted by 8 elements
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"residual=", "partially overlaps out=", "exactly"}));
  p.residual = p.out;
  p.residual_stride_m = 4104;  // same base, other row stride
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"residual_stride_l=", "_m=4104", "partially overlaps"}));
}

TEST(EpilogueResidual, SameBaseOtherBatchStrideRejected) {
  tgv_problem p = residual_problem(16, 4096, 4096, 2);
  p.residual = p.out;
  p.residual_stride_l = 16 * 4096 + 8;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"partially overlaps"}));
}

TEST(EpilogueResidual, Fp32ExtentUsed) {
  // With fp32 out, a residual 16 x 64 x 4 bytes long; one starting half-way
  // through out (2048 bytes) overlaps it.
  tgv_problem p = residual_problem(16, 64, 64);
  p.out_dtype = TGV_DTYPE_FP32;
  p.residual = fake_ptr(kOut + 2048);
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"partially overlaps"}));
  p.residual = fake_ptr(kOut + 4096);
  EXPECT_TRUE(validate_ok(p));
}

TEST(EpilogueResidual, Misaligned) {
  tgv_problem p = residual_problem(16, 64, 64);
  p.residual = fake_ptr(kResidual + 2);
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"residual=", "16-byte aligned"}));
}

TEST(EpilogueResidual, OtherOrientationThanOutRejected) {
  tgv_problem p = residual_problem(16, 64, 64);
  p.residual_stride_m = 1, p.residual_stride_n = 16;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"residual", "column-major", "out is row-major"}));
}

TEST(EpilogueResidual, NoLayout) {
  tgv_problem p = residual_problem(16, 64, 64);
  p.residual_stride_m = 3, p.residual_stride_n = 3;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"residual strides", "residual_stride_m=3"}));
}

TEST(EpilogueResidual, NegativeStride) {
  tgv_problem p = residual_problem(16, 64, 64);
  p.residual_stride_n = -1;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"residual_stride_n=-1"}));
}

TEST(EpilogueResidual, BatchesOverlap) {
  tgv_problem p = residual_problem(16, 64, 64, 2);
  p.residual_stride_l = 16 * 64 - 1;
  EXPECT_TRUE(validate_fails(p, TGV_ERROR_INVALID_ARGUMENT, {"residual_stride_l=1023", "batches of residual"}));
}

TEST(EpilogueResidual, MayOverlapAnInput) {
  // Read-only beside read-only: a residual inside x is allowed.
  tgv_problem p = residual_problem(16, 64, 64);
  p.residual = p.x;
  EXPECT_TRUE(validate_ok(p));
}

// ---- which backend serves what -------------------------------------------

TEST(EpilogueRules, PlainHasNoReason) {
  EXPECT_EQ(epilogue_unsupported_reason(validate_problem(make_problem(8, 4096, 4096)), device(100)), "");
  EXPECT_EQ(epilogue_summary(validate_problem(make_problem(8, 4096, 4096))), "");
}

TEST(EpilogueRules, Sm90ServesEveryEpilogueKMajor) {
  tgv_problem fp32 = make_problem(8, 256, 7168);
  fp32.out_dtype = TGV_DTYPE_FP32;
  tgv_problem fp16 = make_problem(8, 4096, 4096);
  fp16.dtype = fp16.out_dtype = TGV_DTYPE_FP16;
  for (const tgv_problem& p : {residual_problem(8, 4096, 4096), fp32, fp16, gated_problem(8, 28672, 4096),
                               gated_problem(8, 28672, 4096, TGV_EPILOGUE_GELU_TANH_MUL)})
    EXPECT_EQ(epilogue_unsupported_reason(validate_problem(p), device(90)), "");
}

TEST(EpilogueRules, Sm100ServesEveryEpilogueKMajor) {
  tgv_problem fp32 = make_problem(8, 256, 7168);
  fp32.out_dtype = TGV_DTYPE_FP32;
  tgv_problem fp32_residual = residual_problem(8, 4096, 4096);
  fp32_residual.out_dtype = TGV_DTYPE_FP32;
  tgv_problem fp16 = residual_problem(8, 4096, 4096);
  fp16.dtype = fp16.out_dtype = TGV_DTYPE_FP16;
  tgv_problem fp16_fp32 = gated_problem(8, 28672, 4096);
  fp16_fp32.dtype = TGV_DTYPE_FP16, fp16_fp32.out_dtype = TGV_DTYPE_FP32;
  for (int sm : {100, 103})
    for (const tgv_problem& p : {residual_problem(8, 4096, 4096), fp32, fp32_residual, fp16, fp16_fp32,
                                 gated_problem(8, 28672, 4096),
                                 gated_problem(8, 28672, 4096, TGV_EPILOGUE_GELU_TANH_MUL)})
      EXPECT_EQ(epilogue_unsupported_reason(validate_problem(p), device(sm)), "") << "sm_" << sm;
}

TEST(EpilogueRules, Sm100RefusesPartialGroupsNamingItself) {
  const std::string r = epilogue_unsupported_reason(validate_problem(gated_problem(8, 500, 256)), device(103));
  EXPECT_NE(r.find("sm_103"), std::string::npos) << r;
  EXPECT_NE(r.find("n/2 (250)"), std::string::npos) << r;
  EXPECT_NE(r.find("backend=auto or cublas"), std::string::npos) << r;
}

TEST(EpilogueRules, Fp16MnMajorRefused) {
  tgv_problem p = make_problem(8, 4096, 4096);
  p.dtype = p.out_dtype = TGV_DTYPE_FP16;
  p.w_stride_n = 1, p.w_stride_k = 4096;  // W N-major
  const std::string r = epilogue_unsupported_reason(validate_problem(p), device(90));
  EXPECT_NE(r.find("fp16"), std::string::npos) << r;
  EXPECT_NE(r.find("w is N-major"), std::string::npos) << r;
}

TEST(EpilogueRules, GatedNeedsKMajorWAndWholeGroups) {
  tgv_problem p = gated_problem(8, 512, 256);
  p.w_stride_n = 1, p.w_stride_k = 512;
  std::string r = epilogue_unsupported_reason(validate_problem(p), device(90));
  EXPECT_NE(r.find("N-major"), std::string::npos) << r;
  tgv_problem q = gated_problem(8, 500, 256);  // n / 2 = 250
  r = epilogue_unsupported_reason(validate_problem(q), device(90));
  EXPECT_NE(r.find("n=500"), std::string::npos) << r;
  EXPECT_NE(r.find("n/2 (250)"), std::string::npos) << r;
}

TEST(EpilogueRules, AutoFallsBackTgvRefuses) {
  if (!kHasSm90) GTEST_SKIP() << "this build has no sm_90a kernels";
  const GemmDesc g = validate_problem(gated_problem(8, 500, 256));
  EXPECT_EQ(plan(g, backend(TGV_BACKEND_AUTO), device(90), nullptr, &kPassed).backend, TGV_BACKEND_CUBLAS);
  try {
    plan(g, backend(TGV_BACKEND_TGV), device(90), nullptr, &kPassed);
    ADD_FAILURE() << "backend=tgv planned a gated problem with n/2 = 250";
  } catch (const Error& e) {
    EXPECT_EQ(e.status(), TGV_ERROR_NOT_SUPPORTED);
    EXPECT_NE(std::string(e.what()).find("n/2 (250)"), std::string::npos) << e.what();
  }
}

TEST(EpilogueRules, Sm90PlansTgvForEpilogues) {
  if (!kHasSm90) GTEST_SKIP() << "this build has no sm_90a kernels";
  const GemmDesc g = validate_problem(residual_problem(8, 4096, 4096));
  const Plan p = plan(g, backend(TGV_BACKEND_AUTO), device(90), nullptr, &kPassed);
  EXPECT_EQ(p.backend, TGV_BACKEND_TGV);
}

TEST(EpilogueRules, Sm100PlansTgvForEpiloguesOnceValidated) {
  if (!kHasSm100a) GTEST_SKIP() << "this build has no sm_100a kernels";
  const GemmDesc g = validate_problem(gated_problem(8, 28672, 4096));
  EXPECT_EQ(plan(g, backend(TGV_BACKEND_AUTO), device(100), nullptr, &kPassed).backend, TGV_BACKEND_TGV);
  // Unvalidated (no self-check passed), as every sm_100 call: cuBLASLt serves auto.
  EXPECT_EQ(plan(g, backend(TGV_BACKEND_AUTO), device(100), nullptr, nullptr).backend, TGV_BACKEND_CUBLAS);
}

TEST(EpilogueRules, Sm100Fp16NMajorAutoIsCublasTgvRefused) {
  tgv_problem p = residual_problem(8, 4096, 4096);
  p.dtype = p.out_dtype = TGV_DTYPE_FP16;
  p.w_stride_n = 1, p.w_stride_k = 4096;  // W N-major: the sm_100 kernel reads K-major only
  const GemmDesc g = validate_problem(p);
  EXPECT_EQ(plan(g, backend(TGV_BACKEND_AUTO), device(100), nullptr, &kPassed).backend, TGV_BACKEND_CUBLAS);
  EXPECT_THROW(plan(g, backend(TGV_BACKEND_TGV), device(100), nullptr, &kPassed), Error);
}

}  // namespace

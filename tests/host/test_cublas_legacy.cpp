// The host half of the legacy cuBLAS path (src/cublas/cublas_legacy.hpp): which
// value of TGV_CUBLAS_API picks which API, and which GEMMs legacy cuBLAS is
// given (the rest stay on cuBLASLt). No GPU: validation never dereferences.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "api/validate.hpp"
#include "cublas/cublas_legacy.hpp"
#include "host_util.hpp"

namespace {

using namespace tgv::detail;
using tgv_test::make_problem;

TEST(CublasApi, FromValue) {
  bool unknown = true;
  EXPECT_EQ(cublas_api_from(nullptr, &unknown), kDefaultCublasApi);
  EXPECT_FALSE(unknown);
  EXPECT_EQ(cublas_api_from("", &unknown), kDefaultCublasApi);
  EXPECT_FALSE(unknown);
  EXPECT_EQ(cublas_api_from("legacy", &unknown), CublasApi::Legacy);
  EXPECT_FALSE(unknown);
  EXPECT_EQ(cublas_api_from("LEGACY", &unknown), CublasApi::Legacy);
  EXPECT_EQ(cublas_api_from("lt", &unknown), CublasApi::Lt);
  EXPECT_FALSE(unknown);
  EXPECT_EQ(cublas_api_from("Lt", &unknown), CublasApi::Lt);
  EXPECT_EQ(cublas_api_from("cublaslt2", &unknown), kDefaultCublasApi);
  EXPECT_TRUE(unknown);
  EXPECT_EQ(cublas_api_from("1", nullptr), kDefaultCublasApi);  // no out-parameter: still no crash
}

TEST(CublasApi, ReadAtEachCall) {
  const char* saved = std::getenv("TGV_CUBLAS_API");
  const std::string keep = saved ? saved : "";
  setenv("TGV_CUBLAS_API", "legacy", 1);
  EXPECT_EQ(cublas_api_now(), CublasApi::Legacy);
  setenv("TGV_CUBLAS_API", "lt", 1);
  EXPECT_EQ(cublas_api_now(), CublasApi::Lt);
  unsetenv("TGV_CUBLAS_API");
  EXPECT_EQ(cublas_api_now(), kDefaultCublasApi);
  if (saved) setenv("TGV_CUBLAS_API", keep.c_str(), 1);
}

GemmDesc desc(int64_t m, int64_t n, int64_t k, int64_t l = 1, bool bias = false) {
  return validate_problem(make_problem(m, n, k, l, bias));
}

TEST(LegacyServes, PlainGemms) {
  EXPECT_TRUE(legacy_serves(desc(1, 4096, 4096)));
  EXPECT_TRUE(legacy_serves(desc(2, 27648, 5120)));
  EXPECT_TRUE(legacy_serves(desc(256, 4100, 4104)));
  EXPECT_TRUE(legacy_serves(desc(17, 264, 136, 3)));  // strided batch
  GemmDesc col = desc(8, 1024, 512);
  col.out.row_major = false, col.out.ld = 8;  // column-major out: ld = M
  EXPECT_TRUE(legacy_serves(col));
  GemmDesc fp16 = desc(8, 1024, 512);
  fp16.in_type = fp16.out_type = DType::FP16;
  EXPECT_TRUE(legacy_serves(fp16));
}

TEST(LegacyServes, NotWithAnythingAdded) {
  EXPECT_FALSE(legacy_serves(desc(8, 1024, 512, 1, /*bias=*/true)));
  GemmDesc fp32 = desc(8, 1024, 512);
  fp32.out_type = DType::FP32;  // the epilogue path's raw fp32 GEMM
  EXPECT_FALSE(legacy_serves(fp32));
  GemmDesc res = desc(8, 1024, 512);
  res.residual = res.out;
  EXPECT_FALSE(legacy_serves(res));
  GemmDesc gated = desc(8, 1024, 512);
  gated.act = Act::SiluMul;
  EXPECT_FALSE(legacy_serves(gated));
}

TEST(LegacyServes, NotWhatCublasGemmExRefuses) {
  GemmDesc bcast = desc(17, 264, 136, 3);
  bcast.w.batch_stride = 0;  // one W for every batch
  EXPECT_FALSE(legacy_serves(bcast));
  GemmDesc shortld = desc(8, 1024, 512);
  shortld.w.ld = 256;  // below the stored rows (K) of a K-major W
  EXPECT_FALSE(legacy_serves(shortld));
  GemmDesc shortout = desc(8, 1024, 512);
  shortout.out.ld = 1000;  // below N, the rows of the column-major view of a row-major out
  EXPECT_FALSE(legacy_serves(shortout));
  GemmDesc wide = desc(8, 1024, 512);
  wide.w.ld = int64_t(1) << 31;  // beyond cublasGemmEx's int
  EXPECT_FALSE(legacy_serves(wide));
}

}  // namespace

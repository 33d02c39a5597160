// The cuBLASLt path's cache keys (src/cublas/algo_key): operand alignment from
// pointer, leading dimension and batch stride; M buckets; what separates keys.
#include <gtest/gtest.h>

#include <cstdint>

#include "api/validate.hpp"
#include "cublas/algo_key.hpp"
#include "host_util.hpp"

namespace {

using namespace tgv::detail;
using namespace tgv_test;

TEST(CublasAlignment, PointerOnly) {
  EXPECT_EQ(alignment_bytes(0x10000, 4096, 1, 0, 1), 256u);
  EXPECT_EQ(alignment_bytes(0x10010, 4096, 1, 0, 1), 16u);
  EXPECT_EQ(alignment_bytes(0x10002, 4096, 1, 0, 1), 2u);
  EXPECT_EQ(alignment_bytes(0x10001, 4096, 1, 0, 1, 1), 1u);
}

TEST(CublasAlignment, LeadingDimensionCountsWhenTheStridedDimensionHasSeveralEntries) {
  // ld = 4097 bf16 elements: every other row starts 2-byte aligned.
  EXPECT_EQ(alignment_bytes(0x10000, 4097, 64, 0, 1), 2u);
  EXPECT_EQ(alignment_bytes(0x10000, 4097, 1, 0, 1), 256u);  // one row: the stride is never taken
  EXPECT_EQ(alignment_bytes(0x10000, 4104, 64, 0, 1), 16u);  // 8208 bytes
  EXPECT_EQ(alignment_bytes(0x10000, 4100, 64, 0, 1), 8u);   // 8200 bytes
  EXPECT_EQ(alignment_bytes(0x10000, 4096, 64, 0, 1), 256u);
}

TEST(CublasAlignment, BatchStrideCountsWithSeveralBatchesUnlessBroadcast) {
  EXPECT_EQ(alignment_bytes(0x10000, 4096, 64, 4096 * 64 + 8, 3), 16u);
  EXPECT_EQ(alignment_bytes(0x10000, 4096, 64, 4096 * 64 + 8, 1), 256u);  // one batch
  EXPECT_EQ(alignment_bytes(0x10000, 4096, 64, 0, 3), 256u);              // broadcast
  EXPECT_EQ(alignment_bytes(0x10000, 4096, 64, 4097, 3), 2u);
}

TEST(CublasAlignment, OperandsOfAProblem) {
  // Odd N with a packed row-major out: out's rows are 2-byte aligned, x and W
  // (K = 4104) 16-byte aligned.
  GemmDesc g = validate_problem(make_problem(64, 4097, 4104));
  OperandAlignments a = operand_alignments(g);
  EXPECT_EQ(a.x, 16u);
  EXPECT_EQ(a.w, 16u);
  EXPECT_EQ(a.out, 2u);
  // M = 1: out has one row, whose start is all that matters.
  g = validate_problem(make_problem(1, 4097, 4104));
  EXPECT_EQ(operand_alignments(g).out, 256u);
  // Column-major out: ld strides over N; ld = M = 64 here.
  tgv_problem p = make_problem(64, 4097, 4096);
  p.out_stride_m = 1, p.out_stride_n = 64, p.out_stride_l = 64 * 4097;
  a = operand_alignments(validate_problem(p));
  EXPECT_EQ(a.out, 128u);
  EXPECT_EQ(a.x, 256u);
  // An M-major x: ld strides over K (always more than one column).
  p = make_problem(1, 256, 64);
  p.x_stride_m = 1, p.x_stride_k = 8, p.x_stride_l = 8 * 64;
  EXPECT_EQ(operand_alignments(validate_problem(p)).x, 16u);
}

TEST(CublasStaging, OnlyForRowMajorOutWithMisalignedRows) {
  const uint64_t kMax = 8 << 20;
  auto ld = [&](const tgv_problem& p) {
    const GemmDesc g = validate_problem(p);
    return staging_ld(g, operand_alignments(g), kMax);
  };
  EXPECT_EQ(ld(make_problem(64, 4097, 4104)), 4104);  // 2-byte aligned rows
  EXPECT_EQ(ld(make_problem(64, 4100, 4104)), 4104);  // 8-byte aligned rows
  EXPECT_EQ(ld(make_problem(64, 4104, 4104)), 0);     // 16-byte aligned rows
  EXPECT_EQ(ld(make_problem(1, 4097, 4104)), 0);      // one row: aligned at its start
  EXPECT_EQ(ld(make_problem(64, 4097, 4104, 2)), 0);  // batches
  tgv_problem p = make_problem(64, 4097, 4096);
  p.out_stride_m = 1, p.out_stride_n = 64, p.out_stride_l = 64 * 4097;  // column-major
  EXPECT_EQ(ld(p), 0);
  // Inputs not 16-byte aligned (the C ABI refuses those today): the GEMM would gain nothing.
  const GemmDesc odd = validate_problem(make_problem(64, 4097, 4104));
  OperandAlignments a = operand_alignments(odd);
  a.x = 8;
  EXPECT_EQ(staging_ld(odd, a, kMax), 0);
  // The largest M of the bucket must fit: 128 x 32768 x 2 bytes is 8 MiB.
  EXPECT_EQ(ld(make_problem(65, 32767, 1024)), 32768);
  EXPECT_EQ(ld(make_problem(65, 32769, 1024)), 0);
  EXPECT_EQ(ld(make_problem(4096, 15, 1024)), 16);
  EXPECT_EQ(ld(make_problem(4097, 15, 1024)), 0);  // beyond decode sizes
}

TEST(CublasBucket, NextPowerOfTwo) {
  EXPECT_EQ(m_bucket(1), 1);
  EXPECT_EQ(m_bucket(2), 2);
  EXPECT_EQ(m_bucket(3), 4);
  EXPECT_EQ(m_bucket(33), 64);
  EXPECT_EQ(m_bucket(64), 64);
  EXPECT_EQ(m_bucket(65), 128);
  EXPECT_EQ(m_bucket(256), 256);
  EXPECT_EQ(m_bucket(1000), 1024);
}

bool distinct_calls(const GemmDesc& a, const GemmDesc& b) {
  const CallKey ka = call_key(a, 0, 32 << 20), kb = call_key(b, 0, 32 << 20);
  return ka < kb || kb < ka;
}

TEST(CublasBucket, CallsOfOneBucketShareAKeyAndOthersDoNot) {
  const GemmDesc a = validate_problem(make_problem(33, 576, 7168));
  const GemmDesc b = validate_problem(make_problem(64, 576, 7168));
  const BucketKey ka = bucket_key(a, 0, 32 << 20);
  EXPECT_EQ(ka, bucket_key(b, 0, 32 << 20));
  EXPECT_TRUE(distinct_calls(a, b)) << "different M: different descriptors";
  EXPECT_EQ(ka.m_bucket, 64);

  auto differs = [&](const GemmDesc& g, uint64_t ws = 32 << 20, int device = 0) {
    const BucketKey k = bucket_key(g, device, ws);
    return !(k == ka);
  };
  EXPECT_TRUE(differs(validate_problem(make_problem(65, 576, 7168))));  // next bucket
  EXPECT_TRUE(differs(validate_problem(make_problem(33, 577, 7168))));  // N, and out's alignment
  EXPECT_TRUE(differs(validate_problem(make_problem(33, 576, 7176))));  // K
  EXPECT_TRUE(differs(validate_problem(make_problem(33, 576, 7168, 2))));
  EXPECT_TRUE(differs(validate_problem(make_problem(33, 576, 7168, 1, true))));  // bias
  EXPECT_TRUE(differs(a, 0));                                                    // no workspace
  EXPECT_TRUE(differs(a, 32 << 20, 1));                                          // another device

  tgv_problem p = make_problem(33, 576, 7168);
  p.out_stride_m = 1, p.out_stride_n = 33, p.out_stride_l = 33 * 576;  // column-major out
  EXPECT_TRUE(differs(validate_problem(p)));
  p = make_problem(33, 576, 7168);
  p.w_stride_n = 1, p.w_stride_k = 576, p.w_stride_l = 576 * 7168;  // N-major W
  EXPECT_TRUE(differs(validate_problem(p)));
  p = make_problem(33, 576, 7168);
  p.out = fake_ptr(kOut + 16);  // 16-byte aligned, not 256
  EXPECT_TRUE(differs(validate_problem(p)));
  p = make_problem(33, 576, 7168);
  // Padded rows, still 16-byte aligned: their own bucket (alignment 16, not 128).
  p.out_stride_m = 584, p.out_stride_l = 33 * 584;
  const GemmDesc padded = validate_problem(p);
  EXPECT_EQ(bucket_key(padded, 0, 32 << 20).align_out, 16u);
  p.out_stride_m = 704, p.out_stride_l = 33 * 704;  // 1408-byte rows: 128-aligned like packed 576
  const GemmDesc wide = validate_problem(p);
  EXPECT_EQ(bucket_key(wide, 0, 32 << 20), ka);
  EXPECT_TRUE(distinct_calls(wide, a)) << "same bucket, other descriptors";
}

TEST(CublasBucket, BroadcastBatchesAreTheirOwnBucket) {
  tgv_problem p = make_problem(8, 256, 512, 3);
  const BucketKey strided = bucket_key(validate_problem(p), 0, 0);
  p.w_stride_l = 0;
  const BucketKey broadcast = bucket_key(validate_problem(p), 0, 0);
  EXPECT_FALSE(strided == broadcast);
  EXPECT_EQ(broadcast.w_broadcast, 1);
  EXPECT_EQ(strided.w_broadcast, 0);
}

}  // namespace

// What the cuBLASLt path's algorithm choice depends on: pure functions of a
// validated GemmDesc, tested on the host (tests/host/test_cublas_keys.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <tuple>

#include "common/gemm_desc.hpp"

namespace tgv::detail {

// The largest power of two, at most 256, that divides every byte address an
// operand's rows (or columns) and batches start at: its base pointer, its
// leading dimension (when the strided dimension has more than one entry) and
// its batch stride (when there is more than one batch and it is not a
// broadcast). cuBLASLt's MIN_ALIGNMENT preferences speak of pointers, but a
// kernel that vectorizes one row of out with ld = 4097 bf16 elements finds
// every other row 2-byte aligned.
uint32_t alignment_bytes(uintptr_t ptr, int64_t ld, int64_t ld_extent, int64_t batch_stride, int64_t l,
                         int64_t elem_bytes = 2);

struct OperandAlignments {
  uint32_t x = 256, w = 256, out = 256;
};
OperandAlignments operand_alignments(const GemmDesc& g);

// M rounded up to a power of two: calls whose M falls in one bucket share a
// measured algorithm (a decode step's M changes every few tokens).
int64_t m_bucket(int64_t m);

// The leading dimension (elements) of a 16-byte aligned staging copy of out
// that a row-major out with misaligned rows (ld * 2 not a multiple of 16, as
// with an odd N) may be computed into and copied from, or 0 where staging does
// not apply: several rows, one batch, x and W 16-byte aligned (else the GEMM
// gains nothing), and the largest M of the bucket fitting `max_bytes`. With
// 2-byte aligned rows cuBLASLt can use none of its Hopper kernels that store
// through TMA; the copy costs ~M*N*4 bytes of traffic.
// Decode sizes only (the copy kernel puts one row per block row of its grid).
inline constexpr int64_t kMaxStagedM = 4096;
int64_t staging_ld(const GemmDesc& g, const OperandAlignments& a, uint64_t max_bytes);

// The measured choice is shared by every call with the same BucketKey.
struct BucketKey {
  int device = 0;
  int64_t n = 0, k = 0, m_bucket = 0, l = 0;
  uint8_t x_major = 0, w_major = 0, out_row_major = 0, has_bias = 0;
  uint8_t x_broadcast = 0, w_broadcast = 0;
  uint32_t align_x = 0, align_w = 0, align_out = 0;
  uint64_t workspace = 0;

  auto tie() const {
    return std::tie(device, n, k, m_bucket, l, x_major, w_major, out_row_major, has_bias, x_broadcast, w_broadcast,
                    align_x, align_w, align_out, workspace);
  }
  bool operator<(const BucketKey& o) const { return tie() < o.tie(); }
  bool operator==(const BucketKey& o) const { return tie() == o.tie(); }
};
BucketKey bucket_key(const GemmDesc& g, int device, uint64_t workspace);

// The descriptors (exact extents and strides) of one call, and its bucket.
struct CallKey {
  BucketKey bucket;
  int64_t m = 0;
  int64_t x_ld = 0, w_ld = 0, out_ld = 0, x_batch = 0, w_batch = 0, out_batch = 0;

  auto tie() const { return std::tie(bucket, m, x_ld, w_ld, out_ld, x_batch, w_batch, out_batch); }
  bool operator<(const CallKey& o) const { return tie() < o.tie(); }
};
CallKey call_key(const GemmDesc& g, int device, uint64_t workspace);

}  // namespace tgv::detail

#include "cublas/algo_key.hpp"

namespace tgv::detail {

uint32_t alignment_bytes(uintptr_t ptr, int64_t ld, int64_t ld_extent, int64_t batch_stride, int64_t l,
                         int64_t elem_bytes) {
  uint64_t bits = ptr;
  if (ld_extent > 1) bits |= uint64_t(ld) * uint64_t(elem_bytes);
  if (l > 1 && batch_stride != 0) bits |= uint64_t(batch_stride) * uint64_t(elem_bytes);
  uint32_t align = 256;
  while (align > 1 && bits % align != 0) align /= 2;
  return align;
}

OperandAlignments operand_alignments(const GemmDesc& g) {
  // The leading dimension strides over rows of a K-major operand (M rows of x,
  // N of W) and over K of an MN-major one; over M of a row-major out, N of a
  // column-major one.
  const auto addr = [](const void* p) { return reinterpret_cast<uintptr_t>(p); };
  OperandAlignments a;
  a.x = alignment_bytes(addr(g.x.ptr), g.x.ld, g.x.major == Major::K ? g.m : g.k, g.x.batch_stride, g.l);
  a.w = alignment_bytes(addr(g.w.ptr), g.w.ld, g.w.major == Major::K ? g.n : g.k, g.w.batch_stride, g.l);
  a.out = alignment_bytes(addr(g.out.ptr), g.out.ld, g.out.row_major ? g.m : g.n, g.out.batch_stride, g.l);
  return a;
}

int64_t m_bucket(int64_t m) {
  int64_t b = 1;
  while (b < m) b *= 2;
  return b;
}

int64_t staging_ld(const GemmDesc& g, const OperandAlignments& a, uint64_t max_bytes) {
  if (!g.out.row_major || g.l != 1 || g.m < 2 || g.m > kMaxStagedM || a.out >= 16 || a.x < 16 || a.w < 16) return 0;
  const int64_t ld = (g.n + 7) / 8 * 8;
  return uint64_t(m_bucket(g.m)) * uint64_t(ld) * 2 <= max_bytes ? ld : 0;
}

BucketKey bucket_key(const GemmDesc& g, int device, uint64_t workspace) {
  const OperandAlignments a = operand_alignments(g);
  BucketKey k;
  k.device = device;
  k.n = g.n, k.k = g.k, k.m_bucket = m_bucket(g.m), k.l = g.l;
  k.x_major = uint8_t(g.x.major), k.w_major = uint8_t(g.w.major);
  k.out_row_major = g.out.row_major, k.has_bias = g.bias != nullptr;
  k.x_broadcast = g.l > 1 && g.x.batch_stride == 0, k.w_broadcast = g.l > 1 && g.w.batch_stride == 0;
  k.align_x = a.x, k.align_w = a.w, k.align_out = a.out;
  k.workspace = workspace;
  return k;
}

CallKey call_key(const GemmDesc& g, int device, uint64_t workspace) {
  CallKey k;
  k.bucket = bucket_key(g, device, workspace);
  k.m = g.m;
  k.x_ld = g.x.ld, k.w_ld = g.w.ld, k.out_ld = g.out.ld;
  k.x_batch = g.x.batch_stride, k.w_batch = g.w.batch_stride, k.out_batch = g.out.batch_stride;
  return k;
}

}  // namespace tgv::detail

#include "launch/sm90_launch.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <mutex>

#include "common/cuda_check.hpp"
#include "launch/sm90_tile.hpp"
#include "tactics/tactics.hpp"

namespace tgv::detail {
namespace {

using kernels::sm90::kChunkK;

// The driver's tensor-map encoder, through the runtime so that we need not link libcuda.
PFN_cuTensorMapEncodeTiled_v12000 encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult result{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &result) ==
            cudaSuccess &&
        result == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  });
  if (fn == nullptr) throw Error(TGV_ERROR_CUDA, "the CUDA driver has no cuTensorMapEncodeTiled");
  return fn;
}

CUtensorMapSwizzle swizzle_for_bytes(int inner_bytes) {
  if (inner_bytes >= 128) return CU_TENSOR_MAP_SWIZZLE_128B;
  if (inner_bytes == 64) return CU_TENSOR_MAP_SWIZZLE_64B;
  if (inner_bytes == 32) return CU_TENSOR_MAP_SWIZZLE_32B;
  return CU_TENSOR_MAP_SWIZZLE_NONE;
}

// A map over a rows x K operand with boxes of box_rows rows (K-major) or
// 64-row blocks (MN-major) by one 64-column chunk of K: 3-D (contiguous dim,
// strided dim, batch). Out-of-bounds elements of a box read as zero, which is
// what makes every M, N and K tail correct without predication.
//
// Folded (K-major, K a multiple of 64): 4-D (chunk column, row, chunk, batch)
// with boxes of cta_k / 64 chunks, so one copy fills a stage's whole tile.
// The chunk dimension's stride (128 bytes) is smaller than the row's: TMA
// allows it, and it is why a K tail cannot fold (the last chunk's columns
// past K would read the next row instead of zeros).
CUtensorMap make_map(const char* name, const Operand& o, int64_t rows, int64_t k, int64_t l, int box_rows,
                     int fold_chunks) {
  const bool k_major = o.major == Major::K;
  const uint64_t plane_bytes = (((k_major ? rows : k) * o.ld * 2 + 15) / 16) * 16;
  // With one batch the batch stride is never applied; any legal value will do.
  const cuuint64_t batch_stride = static_cast<cuuint64_t>(l > 1 ? o.batch_stride * 2 : plane_bytes);
  cuuint64_t dims[4], strides[3];
  cuuint32_t box[4], elem_strides[4] = {1, 1, 1, 1};
  cuuint32_t rank = 3;
  if (fold_chunks > 0) {
    rank = 4;
    dims[0] = kChunkK, dims[1] = rows, dims[2] = k / kChunkK, dims[3] = l;
    strides[0] = o.ld * 2, strides[1] = kChunkK * 2, strides[2] = batch_stride;
    box[0] = kChunkK, box[1] = box_rows, box[2] = fold_chunks, box[3] = 1;
  } else if (k_major) {
    dims[0] = k, dims[1] = rows, dims[2] = l;
    strides[0] = o.ld * 2, strides[1] = batch_stride;
    box[0] = kChunkK, box[1] = box_rows, box[2] = 1;
  } else {
    dims[0] = rows, dims[1] = k, dims[2] = l;
    strides[0] = o.ld * 2, strides[1] = batch_stride;
    box[0] = box_rows < 64 ? box_rows : 64, box[1] = kChunkK, box[2] = 1;
  }
  CUtensorMap map;
  const CUresult r = encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, rank, const_cast<void*>(o.ptr), dims, strides,
                               box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle_for_bytes(box[0] * 2),
                               CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw Error(TGV_ERROR_CUDA, strfmt("cuTensorMapEncodeTiled for %s failed (CUresult %d): rank %u, dims %llu x %llu "
                                       "x %llu, box %u x %u x %u",
                                       name, int(r), rank, (unsigned long long)dims[0], (unsigned long long)dims[1],
                                       (unsigned long long)dims[2], box[0], box[1], box[2]));
  return map;
}

// Chunks one folded box carries, or 0 where the operand cannot fold.
int fold_chunks(const Operand& o, int64_t k, int cta_k) {
  return (o.major == Major::K && k % kChunkK == 0) ? cta_k / kChunkK : 0;
}

}  // namespace

void launch_sm90(const GemmDesc& g, const Plan& plan, cudaStream_t stream) {
#ifndef TGV_WITH_SM90
  (void)g, (void)plan, (void)stream;
  throw Error(TGV_ERROR_NOT_SUPPORTED, "this build has no sm_90a kernels (TGV_CUDA_ARCHS does not list 90a)");
#else
  const Tactic& t = tactic(plan.tactic);
  Sm90Launch l{};
  TGV_CUDA_CHECK(cudaGetDevice(&l.device));
  // cuTensorMapEncodeTiled is a driver call and needs a current context, which
  // a thread that has made no runtime call yet (a fresh Python thread) lacks
  // (CUDA_ERROR_INVALID_CONTEXT). cudaSetDevice binds the device's primary context.
  thread_local int bound_device = -1;
  if (bound_device != l.device) {
    TGV_CUDA_CHECK(cudaSetDevice(l.device));
    bound_device = l.device;
  }
  const int w_fold = fold_chunks(g.w, g.k, t.cta_k), x_fold = fold_chunks(g.x, g.k, t.cta_k);
  l.tmap_w = make_map("w", g.w, g.n, g.k, g.l, t.cta_m, w_fold);
  l.tmap_x = make_map("x", g.x, g.m, g.k, g.l, t.cta_n, x_fold);
  l.cta_k = t.cta_k;
  l.w_mn_major = g.w.major == Major::MN;
  l.x_mn_major = g.x.major == Major::MN;
  l.pdl = plan.pdl;
  l.stream = stream;

  kernels::sm90::Params& p = l.params;
  p.out = g.out.ptr;
  p.bias = g.bias;
  p.m = static_cast<int32_t>(g.m);
  p.n = static_cast<int32_t>(g.n);
  p.num_k_blocks = static_cast<int32_t>((g.k + t.cta_k - 1) / t.cta_k);
  p.stages = plan.stages;
  p.split_k = plan.split_k;
  p.w_folded = w_fold > 0;
  p.x_folded = x_fold > 0;
  p.out_row_major = g.out.row_major ? 1 : 0;
  p.out_ld = g.out.ld;
  p.out_batch_stride = g.out.batch_stride;
  p.out_vectorized = (g.out.ld % 8 == 0 && g.out.batch_stride % 8 == 0) ? 1 : 0;
  l.smem_bytes = static_cast<int>(smem_bytes_for(t, plan.stages));
  // The split_k CTAs of a tile are adjacent in x: one cluster.
  l.grid = dim3(static_cast<unsigned>((g.n + t.cta_m - 1) / t.cta_m * plan.split_k),
                static_cast<unsigned>((g.m + t.cta_n - 1) / t.cta_n), static_cast<unsigned>(g.l));

#define TGV_DISPATCH_SM90_TILE(cm, cn) \
  if (t.cta_m == cm && t.cta_n == cn) return launch_sm90_tile<cm, cn>(l);
  TGV_SM90_TILES(TGV_DISPATCH_SM90_TILE)
#undef TGV_DISPATCH_SM90_TILE
  throw Error(TGV_ERROR_INTERNAL, strfmt("tactic %d has no compiled SM90 kernel", plan.tactic));
#endif
}

}  // namespace tgv::detail

#include "launch/sm100_launch.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <mutex>

#include "common/cuda_check.hpp"
#include "launch/sm100_tile.hpp"
#include "plan/device_info.hpp"
#include "tactics/tactics.hpp"

namespace tgv::detail {

#if defined(TGV_WITH_SM100)
namespace {

using kernels::sm100::kChunkK;
using kernels::sm100::kCtaK;

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

// A map over a K-major rows x K operand, 128-byte swizzle, boxes of box_rows
// rows by one 64-column chunk: 3-D (K, row, batch). Out-of-bounds elements of a
// box read as zero (and still count toward the transaction bytes), which is what
// makes every M, N and K tail, and the padding CTA of an odd pair, correct
// without predication.
//
// Folded (K a multiple of 64): 4-D (chunk column, row, chunk, batch) with boxes
// of kCtaK / 64 chunks, so one copy fills a stage's whole tile. The chunk
// stride (128 bytes) is smaller than the row stride; a K tail cannot fold, as
// the last chunk's columns past K would read the next row instead of zeros.
CUtensorMap make_map(const char* name, const Operand& o, int64_t rows, int64_t k, int64_t l, int box_rows, bool fold) {
  const uint64_t plane_bytes = ((rows * o.ld * 2 + 15) / 16) * 16;
  // With one batch the batch stride is never applied; any legal value will do.
  const cuuint64_t batch_stride = static_cast<cuuint64_t>(l > 1 ? o.batch_stride * 2 : plane_bytes);
  cuuint64_t dims[4], strides[3];
  cuuint32_t box[4], elem_strides[4] = {1, 1, 1, 1};
  cuuint32_t rank = 3;
  if (fold) {
    rank = 4;
    dims[0] = kChunkK, dims[1] = rows, dims[2] = k / kChunkK, dims[3] = l;
    strides[0] = o.ld * 2, strides[1] = kChunkK * 2, strides[2] = batch_stride;
    box[0] = kChunkK, box[1] = box_rows, box[2] = kCtaK / kChunkK, box[3] = 1;
  } else {
    dims[0] = k, dims[1] = rows, dims[2] = l;
    strides[0] = o.ld * 2, strides[1] = batch_stride;
    box[0] = kChunkK, box[1] = box_rows, box[2] = 1;
  }
  CUtensorMap map;
  const CUresult r = encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, rank, const_cast<void*>(o.ptr), dims, strides,
                               box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                               CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw Error(TGV_ERROR_CUDA, strfmt("cuTensorMapEncodeTiled for %s failed (CUresult %d): rank %u, dims %llu x %llu "
                                       "x %llu, box %u x %u x %u",
                                       name, int(r), rank, (unsigned long long)dims[0], (unsigned long long)dims[1],
                                       (unsigned long long)dims[2], box[0], box[1], box[2]));
  return map;
}

}  // namespace
#endif

void launch_sm100(const GemmDesc& g, const Plan& plan, cudaStream_t stream) {
#if !defined(TGV_WITH_SM100)
  (void)g, (void)plan, (void)stream;
  throw Error(TGV_ERROR_NOT_SUPPORTED,
              "this build has no sm_100a/sm_103a kernels (TGV_CUDA_ARCHS lists neither 100a nor 103a)");
#else
  const Tactic& t = tactic(plan.tactic);
  if (t.arch != 100) throw Error(TGV_ERROR_INTERNAL, strfmt("tactic %d is not an sm_100 tactic", plan.tactic));
  // The planner refuses these first; the launcher checks again, since a kernel
  // launched on an unsupported layout would silently compute garbage.
  if (g.x.major != Major::K || g.w.major != Major::K)
    throw Error(TGV_ERROR_NOT_SUPPORTED,
                strfmt("the sm_100 tgv kernel reads K-major x and w only; here x is %s and w is %s",
                       g.x.major == Major::K ? "K-major" : "M-major (tokens contiguous)",
                       g.w.major == Major::K ? "K-major" : "N-major (weight rows contiguous)"));
  if (plan.split_k > 1)
    throw Error(TGV_ERROR_NOT_SUPPORTED, strfmt("split_k=%d: the sm_100 tgv kernel has no split-K", plan.split_k));
  if (t.cta_k != kCtaK) throw Error(TGV_ERROR_INTERNAL, strfmt("sm_100 tactic %d has cta_k=%d", plan.tactic, t.cta_k));

  Sm100Launch l{};
  TGV_CUDA_CHECK(cudaGetDevice(&l.device));
  // cuTensorMapEncodeTiled is a driver call and needs a current context, which
  // a thread that has made no runtime call yet lacks: bind the primary context.
  thread_local int bound_device = -1;
  if (bound_device != l.device) {
    TGV_CUDA_CHECK(cudaSetDevice(l.device));
    bound_device = l.device;
  }
  const bool fold = g.k % kChunkK == 0;
  l.tmap_w = make_map("w", g.w, g.n, g.k, g.l, t.cta_m, fold);
  l.tmap_x = make_map("x", g.x, g.m, g.k, g.l, t.cta_n / t.cluster, fold);  // a pair splits the token tile
  l.pdl = plan.pdl;
  l.stream = stream;
  l.smem_optin = current_device_info().smem_optin_bytes;

  kernels::sm100::Params& p = l.params;
  p.out = g.out.ptr;
  p.bias = g.bias;
  p.m = static_cast<int32_t>(g.m);
  p.n = static_cast<int32_t>(g.n);
  p.num_k_blocks = static_cast<int32_t>((g.k + kCtaK - 1) / kCtaK);
  p.stages = plan.stages;
  p.w_folded = fold;
  p.x_folded = fold;
  p.out_row_major = g.out.row_major ? 1 : 0;
  p.out_ld = g.out.ld;
  p.out_batch_stride = g.out.batch_stride;
  p.out_vectorized = (g.out.ld % 8 == 0 && g.out.batch_stride % 8 == 0) ? 1 : 0;
  l.smem_bytes = static_cast<int>(smem_bytes_for(t, plan.stages));
  if (l.smem_bytes > l.smem_optin)
    throw Error(TGV_ERROR_NOT_SUPPORTED, strfmt("tactic %d needs %d bytes of shared memory; the device offers %lld",
                                                plan.tactic, l.smem_bytes, (long long)l.smem_optin));
  // Weight-row tiles along x, rounded up to whole clusters: the padding CTA of
  // an odd count loads zeros (TMA out of bounds) and stores nothing.
  const int64_t w_tiles = (g.n + t.cta_m - 1) / t.cta_m;
  l.grid = dim3(static_cast<unsigned>((w_tiles + t.cluster - 1) / t.cluster * t.cluster),
                static_cast<unsigned>((g.m + t.cta_n - 1) / t.cta_n), static_cast<unsigned>(g.l));

#define TGV_DISPATCH_SM100_TILE(cm, cn, cc) \
  if (t.cta_m == cm && t.cta_n == cn && t.cluster == cc) return launch_sm100_tile<cm, cn, cc>(l);
  TGV_SM100_TILES(TGV_DISPATCH_SM100_TILE)
#undef TGV_DISPATCH_SM100_TILE
  throw Error(TGV_ERROR_INTERNAL, strfmt("tactic %d has no compiled sm_100 kernel", plan.tactic));
#endif
}

}  // namespace tgv::detail

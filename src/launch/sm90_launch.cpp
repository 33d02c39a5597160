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

// A 3-D map (contiguous dim, strided dim, batch) over a rows x K operand with
// boxes of (box_inner x box_outer). Out-of-bounds elements of a box read as
// zero, which is what makes every M, N and K tail correct without predication.
CUtensorMap make_map(const char* name, const Operand& o, int64_t rows, int64_t k, int64_t l, int box_rows) {
  const bool k_major = o.major == Major::K;
  const uint64_t inner = k_major ? k : rows, outer = k_major ? rows : k;
  const int box_inner = k_major ? kChunkK : (box_rows < 64 ? box_rows : 64);
  const int box_outer = k_major ? box_rows : kChunkK;
  const uint64_t plane_bytes = ((outer * o.ld * 2 + 15) / 16) * 16;
  cuuint64_t dims[3] = {inner, outer, static_cast<cuuint64_t>(l)};
  // With one batch the batch stride is never applied; any legal value will do.
  cuuint64_t strides[2] = {static_cast<cuuint64_t>(o.ld * 2),
                           static_cast<cuuint64_t>(l > 1 ? o.batch_stride * 2 : plane_bytes)};
  cuuint32_t box[3] = {static_cast<cuuint32_t>(box_inner), static_cast<cuuint32_t>(box_outer), 1};
  cuuint32_t elem_strides[3] = {1, 1, 1};
  CUtensorMap map;
  const CUresult r = encoder()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, const_cast<void*>(o.ptr), dims, strides,
                               box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, swizzle_for_bytes(box_inner * 2),
                               CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw Error(TGV_ERROR_CUDA, strfmt("cuTensorMapEncodeTiled for %s failed (CUresult %d): dims %llu x %llu x %llu, "
                                       "strides %llu, %llu bytes, box %d x %d",
                                       name, int(r), (unsigned long long)dims[0], (unsigned long long)dims[1],
                                       (unsigned long long)dims[2], (unsigned long long)strides[0],
                                       (unsigned long long)strides[1], box_inner, box_outer));
  return map;
}

}  // namespace

void launch_sm90(const GemmDesc& g, const Plan& plan, cudaStream_t stream) {
#ifndef TGV_WITH_SM90
  (void)g, (void)plan, (void)stream;
  throw Error(TGV_ERROR_NOT_SUPPORTED, "this build has no sm_90a kernels (TGV_CUDA_ARCHS does not list 90a)");
#else
  const Tactic& t = tactic(plan.tactic);
  Sm90Launch l{};
  l.tmap_w = make_map("w", g.w, g.n, g.k, g.l, t.cta_m);
  l.tmap_x = make_map("x", g.x, g.m, g.k, g.l, t.cta_n);
  l.w_mn_major = g.w.major == Major::MN;
  l.x_mn_major = g.x.major == Major::MN;
  l.pdl = plan.pdl;
  l.stream = stream;
  TGV_CUDA_CHECK(cudaGetDevice(&l.device));

  kernels::sm90::Params& p = l.params;
  p.out = g.out.ptr;
  p.bias = g.bias;
  p.m = static_cast<int32_t>(g.m);
  p.n = static_cast<int32_t>(g.n);
  p.cta_k = t.cta_k;
  p.num_k_blocks = static_cast<int32_t>((g.k + t.cta_k - 1) / t.cta_k);
  p.stages = plan.stages;
  p.split_k = plan.split_k;
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

#include "launch/sm100_launch.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

#include "common/cuda_check.hpp"
#include "launch/sm100_tile.hpp"
#include "common/cuda_context.hpp"
#include "launch/output_params.hpp"
#include "launch/tensor_map.hpp"
#include "plan/device_info.hpp"
#include "tactics/tactics.hpp"

namespace tgv::detail {

void launch_sm100(const GemmDesc& g, const Plan& plan, cudaStream_t stream) {
#if !defined(TGV_WITH_SM100)
  (void)g, (void)plan, (void)stream;
  throw Error(TGV_ERROR_NOT_SUPPORTED,
              "this build has no sm_100a/sm_103a kernels (TGV_CUDA_ARCHS lists neither 100a nor 103a)");
#else
  using kernels::sm100::kChunkK;
  using kernels::sm100::kCtaK;
  static_assert(kChunkK == kSm90ChunkK, "tensor_map boxes are 64-column chunks, 128-byte swizzled when K-major");
  const Tactic& t = tactic(plan.tactic);
  if (t.arch != 100) throw Error(TGV_ERROR_INTERNAL, strfmt("tactic %d is not an sm_100 tactic", plan.tactic));
  const bool gated = g.act != Act::None;
  if (gated && ((g.n / 2) % 8 != 0 || g.has_residual()))
    throw Error(TGV_ERROR_INTERNAL, "a gated sm_100 launch needs n/2 a multiple of 8 and no residual");
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
  bind_primary_context(l.device);
  // K-major, 128-byte swizzle, 64-column boxes; out-of-bounds elements read as
  // zero (and still count toward the transaction bytes), which makes every M,
  // N and K tail, and the padding CTA of an odd pair, correct without
  // predication. With K a multiple of 64, one 4-D box carries a whole stage.
  // The gated map is 5-D already: no room for the folded chunk dimension.
  const int w_fold = gated ? 0 : fold_chunks(g.w, g.k, kCtaK), x_fold = fold_chunks(g.x, g.k, kCtaK);
  l.tmap_w = gated ? make_gated_map(g.w, g.n, g.k, g.l, t.cta_m, g.in_type)
                   : make_map("w", g.w, g.n, g.k, g.l, t.cta_m, w_fold, g.in_type);
  l.tmap_x = make_map("x", g.x, g.m, g.k, g.l, t.cta_n / t.cluster, x_fold, g.in_type);  // a pair splits the token tile
  l.pdl = plan.pdl;
  l.fp16 = g.in_type == DType::FP16;
  l.stream = stream;
  l.smem_optin = current_device_info().smem_optin_bytes;

  kernels::sm100::Params& p = l.params;
  p.out = g.out.ptr;
  p.bias = g.bias;
  p.m = static_cast<int32_t>(g.m);
  p.n = static_cast<int32_t>(g.n);
  p.num_k_blocks = static_cast<int32_t>((g.k + kCtaK - 1) / kCtaK);
  p.stages = plan.stages;
  p.w_folded = w_fold > 0;
  p.x_folded = x_fold > 0;
  set_output_params(p, g);
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

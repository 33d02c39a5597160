// The body of launch_sm90_tile, included by each instance file: picks the
// operand-major pair, checks the launch against the instance, launches.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

#include "common/cuda_check.hpp"
#include "kernels/sm90/tgv_gemm_sm90.cuh"
#include "launch/kernel_launch.hpp"
#include "launch/sm90_tile.hpp"

namespace tgv::detail {

template <class T>
void launch_sm90_instance(const Sm90Launch& l) {
  static_assert(T::kEpilogueBytes == sm90_epilogue_bytes(T::kCtaM, T::kCtaN) &&
                    T::kPartialBytes == sm90_partial_bytes(T::kCtaM, T::kCtaN),
                "the planner sizes the ring's reuse (src/tactics) differently from the kernel");
  static_assert(kernels::sm90::kDirectStoreMaxTokens == 16, "sm90_stream_k_epilogue_bytes (src/tactics) assumes 16");
  auto kernel = kernels::sm90::tgv_gemm_sm90<T, kernels::sm90::NoHooks>;
  // To the most any stage count of this instance can ask for.
  static std::atomic<uint64_t> opted_in{0}, nonportable{0};
  set_attribute_once(opted_in, l.device, kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(kSm90SmemBytes));
  // The epilogue tile and the split-K partials reuse the drained ring; the
  // planner only hands over stage counts whose ring holds them.
  const int ring_bytes = int(l.params.stages * (T::kCtaM + T::kCtaN) * T::kCtaK * 2);
  if (T::kEpilogueBytes > ring_bytes || (l.params.split_k > 1 && !l.params.split_push && T::kPartialBytes > ring_bytes))
    throw Error(TGV_ERROR_INTERNAL, "the SM90 epilogue or split-K partials do not fit the pipeline ring");
  // A residual or an fp32 out stages an fp32 tile (token tiles wider than the
  // direct-store ones): the deepest ring holds it, an explicit shallow one may
  // not (stream-K stages it in bytes of its own).
  const kernels::sm90::Params& p = l.params;
  const int tile32 = (p.act != kernels::kActNone ? T::kCtaM / 2 : T::kCtaM) * T::kCtaN * 4;
  if (!p.stream_k && T::kCtaN > kernels::sm90::kDirectStoreMaxTokens &&
      (p.residual != nullptr || p.out_type == kernels::kOutFp32) && tile32 > ring_bytes)
    throw Error(TGV_ERROR_NOT_SUPPORTED,
                strfmt("stages=%d: the %dx%dx%d tile's ring of %d bytes cannot hold the %d-byte fp32 tile that a "
                       "residual or an fp32 out is staged in; use stages=0 (the deepest ring) or at least %d",
                       p.stages, T::kCtaM, T::kCtaN, T::kCtaK, ring_bytes, tile32,
                       (tile32 + (T::kCtaM + T::kCtaN) * T::kCtaK * 2 - 1) / ((T::kCtaM + T::kCtaN) * T::kCtaK * 2)));
  // Clusters above 8 CTAs are a non-portable size that Hopper supports up to 16.
  if (l.params.split_k > 8)
    set_attribute_once(nonportable, l.device, kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
  // A split-K tile's CTAs are one cluster, adjacent along x.
  launch_kernel(kernel, l.grid, dim3(T::kThreads), static_cast<size_t>(l.smem_bytes), l.stream, l.pdl,
                static_cast<unsigned>(l.params.split_k), l.tmap_w, l.tmap_x, l.params, kernels::sm90::NoHooks{});
}

template <int kCtaM, int kCtaN, int kCtaK>
void launch_sm90_majors(const Sm90Launch& l) {
  using cute::GMMA::Major;
  using kernels::sm90::Traits;
  if (l.fp16) {
    // fp16 is one more instance per tile and cta_k, K-major operands only: the
    // planner sends every other fp16 layout to cuBLASLt.
    if (l.w_mn_major || l.x_mn_major) throw Error(TGV_ERROR_INTERNAL, "fp16 inputs reached the SM90 kernel MN-major");
    return launch_sm90_instance<Traits<kCtaM, kCtaN, kCtaK, Major::K, Major::K, cute::half_t>>(l);
  }
  if (!l.w_mn_major && !l.x_mn_major) return launch_sm90_instance<Traits<kCtaM, kCtaN, kCtaK, Major::K, Major::K>>(l);
  if (!l.w_mn_major && l.x_mn_major) return launch_sm90_instance<Traits<kCtaM, kCtaN, kCtaK, Major::K, Major::MN>>(l);
  if (l.w_mn_major && !l.x_mn_major) return launch_sm90_instance<Traits<kCtaM, kCtaN, kCtaK, Major::MN, Major::K>>(l);
  return launch_sm90_instance<Traits<kCtaM, kCtaN, kCtaK, Major::MN, Major::MN>>(l);
}

template <int kCtaM, int kCtaN, size_t... I>
void launch_sm90_cta_k(const Sm90Launch& l, std::index_sequence<I...>) {
  bool launched = ((l.cta_k == kSm90CtaKs[I] ? (launch_sm90_majors<kCtaM, kCtaN, kSm90CtaKs[I]>(l), true) : false) || ...);
  if (!launched) throw Error(TGV_ERROR_INTERNAL, strfmt("cta_k=%d has no SM90 kernel", l.cta_k));
}

template <int kCtaM, int kCtaN>
void launch_sm90_tile(const Sm90Launch& l) {
  launch_sm90_cta_k<kCtaM, kCtaN>(l, std::make_index_sequence<sizeof(kSm90CtaKs) / sizeof(kSm90CtaKs[0])>{});
}

}  // namespace tgv::detail

#define TGV_INSTANTIATE_SM90_TILE(m, n) \
  template void tgv::detail::launch_sm90_tile<m, n>(const tgv::detail::Sm90Launch&);

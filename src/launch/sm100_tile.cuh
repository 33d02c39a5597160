// The body of launch_sm100_tile, included by each instance file: checks the
// launch against the instance, opts into the shared memory once per device,
// launches (a cluster of two for the CTA-pair tiles, PDL when asked).
#pragma once

#include <atomic>
#include <cstdint>

#include "common/cuda_check.hpp"
#include "kernels/sm100/tgv_gemm_sm100.cuh"
#include "launch/kernel_launch.hpp"
#include "launch/sm100_tile.hpp"

namespace tgv::detail {

template <class T>
void launch_sm100_instance(const Sm100Launch& l) {
  constexpr int kCtaM = T::kCtaM, kCtaN = T::kCtaN, kCluster = T::kCluster;
  auto kernel = kernels::sm100::tgv_gemm_sm100<T>;
  const int stages = l.params.stages;
  // The tactic table and the kernel must agree on a stage's size (the pair's
  // halved token tile included), or the ring would overrun its allocation.
  if (stages < 1 || stages > kMaxStages || l.smem_bytes != int(kSmemReserveBytes) + stages * T::kStageBytes)
    throw Error(TGV_ERROR_INTERNAL,
                strfmt("sm_100 tile %dx%d (cluster %d): %d stages need %d bytes of shared memory, the launch has %d",
                       kCtaM, kCtaN, kCluster, stages, int(kSmemReserveBytes) + stages * T::kStageBytes,
                       l.smem_bytes));
  if (l.grid.x % kCluster != 0) throw Error(TGV_ERROR_INTERNAL, "sm_100 grid.x is not a whole number of clusters");
  // To the device's limit, which covers every stage count.
  static std::atomic<uint64_t> opted_in{0};
  set_attribute_once(opted_in, l.device, kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(l.smem_optin));
  // The CTA pair of one cta_group::2 MMA is a cluster, adjacent along x (weight-row tiles).
  launch_kernel(kernel, l.grid, dim3(T::kThreads), static_cast<size_t>(l.smem_bytes), l.stream, l.pdl,
                static_cast<unsigned>(kCluster), l.tmap_w, l.tmap_x, l.params);
}

// fp16 is one more instance per tile (K-major operands, as every sm_100 one).
template <int kCtaM, int kCtaN, int kCluster>
void launch_sm100_tile(const Sm100Launch& l) {
  if (l.fp16) return launch_sm100_instance<kernels::sm100::Traits<kCtaM, kCtaN, kCluster, cute::half_t>>(l);
  launch_sm100_instance<kernels::sm100::Traits<kCtaM, kCtaN, kCluster>>(l);
}

}  // namespace tgv::detail

#define TGV_INSTANTIATE_SM100_TILE(m, n, c) \
  template void tgv::detail::launch_sm100_tile<m, n, c>(const tgv::detail::Sm100Launch&);

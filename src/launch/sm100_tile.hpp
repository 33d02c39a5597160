// Between the SM100 launcher (plain C++) and the kernel instances (one .cu per
// (cta_m, cta_n, cluster) under sm100_instances/, compiled for sm_100a and
// sm_103a only).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/sm100/sm100_params.hpp"
#include "tactics/tactics.hpp"

namespace tgv::detail {

struct Sm100Launch {
  CUtensorMap tmap_w, tmap_x;
  kernels::sm100::Params params;
  dim3 grid;  // x is a whole number of clusters
  bool pdl;
  bool fp16;             // fp16 inputs (the half_t instance), else bf16
  int smem_bytes;        // dynamic shared memory of this launch
  int64_t smem_optin;    // the device's per-block opt-in limit
  int device;
  cudaStream_t stream;
};

template <int kCtaM, int kCtaN, int kCluster>
void launch_sm100_tile(const Sm100Launch& launch);

#define TGV_DECLARE_SM100_TILE(m, n, c) extern template void launch_sm100_tile<m, n, c>(const Sm100Launch&);
TGV_SM100_TILES(TGV_DECLARE_SM100_TILE)
#undef TGV_DECLARE_SM100_TILE

}  // namespace tgv::detail

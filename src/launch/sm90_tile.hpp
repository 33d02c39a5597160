// Between the SM90 launcher (plain C++) and the kernel instances (one .cu per
// tile shape under sm90_instances/, compiled for sm_90a only).
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include "kernels/sm90/sm90_params.hpp"
#include "tactics/tactics.hpp"

namespace tgv::detail {

struct Sm90Launch {
  CUtensorMap tmap_w, tmap_x;
  kernels::sm90::Params params;
  dim3 grid;
  int cta_k;
  bool w_mn_major, x_mn_major;
  bool fp16;  // fp16 inputs: instances for K-major x and w only (plan/epilogue_rules.cpp)
  bool pdl;
  int smem_bytes;
  int device;
  cudaStream_t stream;
};

template <int kCtaM, int kCtaN>
void launch_sm90_tile(const Sm90Launch& launch);

#define TGV_DECLARE_SM90_TILE(m, n) extern template void launch_sm90_tile<m, n>(const Sm90Launch&);
TGV_SM90_TILES(TGV_DECLARE_SM90_TILE)
#undef TGV_DECLARE_SM90_TILE

}  // namespace tgv::detail

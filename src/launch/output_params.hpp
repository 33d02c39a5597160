// The output and epilogue fields both kernels' Params share (out's layout, its
// type, the gating, the residual), filled the same way for either family.
#pragma once

#include <cstdint>

#include "common/gemm_desc.hpp"

namespace tgv::detail {

template <class Params>
void set_output_params(Params& p, const GemmDesc& g) {
  p.out_row_major = g.out.row_major ? 1 : 0;
  p.out_ld = g.out.ld;
  p.out_batch_stride = g.out.batch_stride;
  // 16-byte stores are aligned for every row and batch.
  p.out_vectorized = (g.out.ld % 8 == 0 && g.out.batch_stride % 8 == 0) ? 1 : 0;
  p.out_type = static_cast<int32_t>(g.out_type);
  p.act = static_cast<int32_t>(g.act);
  p.out_cols = static_cast<int32_t>(g.out_cols());
  p.residual = g.residual.ptr;
  p.res_ld = g.residual.ld;
  p.res_batch_stride = g.residual.batch_stride;
}

}  // namespace tgv::detail

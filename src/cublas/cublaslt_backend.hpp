// The cuBLASLt path: the fallback where our kernels cannot run and the
// baseline every benchmark is measured against.
#pragma once

#include <cuda_runtime.h>

#include "common/gemm_desc.hpp"

namespace tgv::detail {

// Runs a validated, non-empty GEMM through cuBLASLt on `stream`. The
// algorithm is the heuristic's first choice, cached per shape, layout, bias
// and pointer alignment, so a repeated call (and a call under CUDA-graph
// capture) queries nothing. With TGV_CUBLAS_API=legacy a call legacy cuBLAS
// serves goes there instead (cublas_legacy.hpp), with the same workspace.
void cublaslt_gemm(const GemmDesc& g, cudaStream_t stream);

// out[l](m, n) = bias[n] for a column-major out, before a beta = 1 GEMM.
void launch_bias_fill_col_major(const GemmDesc& g, cudaStream_t stream);

}  // namespace tgv::detail

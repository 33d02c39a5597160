// A plain GEMM (no bias, residual or gated epilogue; out of the input type)
// through legacy cuBLAS, cublasGemmEx / cublasGemmStridedBatchedEx, the call
// torch's F.linear makes without a bias: its algorithm choice is legacy
// cuBLAS's own, not cuBLASLt's first heuristic (issue 10 item 3,
// bench/experiments/cublas_algo_log.py compares the two). Reductions stay in
// fp32 (CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION: torch's default lets
// split-K partial sums be added in bf16), so the result is bitwise repeatable
// and within 1 ulp of the fp32 sum, as on the cuBLASLt path.
//
// Which API serves a call is TGV_CUBLAS_API (read at each call: the tests and
// bench/experiments/cublas_algo_log.py switch it in one process): "legacy" (the
// default since an H100 corpus run of both, perf-notes §43: points of
// backend=cublas under 0.98x torch 15 -> 8, the small-N M <= 2 ones that
// cuBLASLt lost in every run gone; the rest are the two graphs' noise) or "lt".
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/gemm_desc.hpp"

namespace tgv::detail {

enum class CublasApi { Lt, Legacy };

// Without TGV_CUBLAS_API (or with a value not listed).
inline constexpr CublasApi kDefaultCublasApi = CublasApi::Legacy;

// The API $TGV_CUBLAS_API names: nullptr or "" -> the default; "lt" / "legacy"
// (any case); anything else -> the default, and *unknown set (for one warning).
CublasApi cublas_api_from(const char* value, bool* unknown = nullptr);

// The API for this call: $TGV_CUBLAS_API, an unknown value warned about once.
CublasApi cublas_api_now();

// Whether legacy cuBLAS can run g exactly as given: nothing added, out of the
// input type, sizes and leading dimensions within its int arguments, leading
// dimensions at least the stored rows (cublasGemmEx refuses less), and in a
// batch no operand broadcast (stride 0).
bool legacy_serves(const GemmDesc& g);

// Runs g (legacy_serves(g)) on `stream` with `workspace` as cuBLAS's workspace.
void cublas_legacy_gemm(const GemmDesc& g, void* workspace, size_t workspace_bytes, cudaStream_t stream);

// GEMMs enqueued through legacy cuBLAS so far in this process (the GPU tests
// check with it which path a call took).
uint64_t cublas_legacy_calls();

}  // namespace tgv::detail

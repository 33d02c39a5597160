// The cuBLASLt path: the fallback where our kernels cannot run and the
// baseline every benchmark is measured against.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "common/gemm_desc.hpp"

namespace tgv::detail {

// How a call that finds no algorithm chosen for its shape chooses one.
enum class LtChoice {
  // Time the heuristic's candidates once per shape bucket (algo_key.hpp) and
  // keep the fastest, unless the stream is capturing or TGV_CUBLAS_AUTOTUNE=0:
  // then the heuristic's first, which a later eager call replaces by a
  // measured one (TGV_CUBLAS_AUTOTUNE=0: keeps).
  Measure,
  // The heuristic's first, untimed, replaced by a later Measure call (the
  // self-check's reference: it has no time to spend and nothing to gain).
  Heuristic,
};

// Runs a validated, non-empty GEMM through cuBLASLt on `stream`. The chosen
// algorithm and the descriptors are cached per call shape (extents, strides,
// alignment, bias, workspace), so a repeated call -- and a call under CUDA-
// graph capture -- measures and queries nothing.
void cublaslt_gemm(const GemmDesc& g, cudaStream_t stream, LtChoice choice = LtChoice::Measure);

// out[l](m, n) = bias[n] for a column-major out, before a beta = 1 GEMM.
void launch_bias_fill_col_major(const GemmDesc& g, cudaStream_t stream);

// out(m, n) = staging(m, n) for m < M, n < N, row-major both (elements apart
// by ld_out and ld_staging): a staged GEMM's result into out.
void launch_staged_copy(void* out, int64_t ld_out, const void* staging, int64_t ld_staging, int64_t m, int64_t n,
                        cudaStream_t stream);

// What was chosen for a call shape (TGV_LOG_DISPATCH=1 prints the same).
struct LtChoiceInfo {
  bool measured = false;  // timed, here or for another call of the bucket
  bool reused = false;    // a measured choice of the bucket, taken for this shape
  bool settled = false;   // no later call will choose again
  int index = 0;          // among the heuristic's candidates, 0 = its first choice
  int candidates = 0;     // how many the heuristic offered (for the measuring call, when reused)
  float us = 0;           // measured median of the chosen (measured only)
  float first_us = 0;     // measured median of the heuristic's first (measured only)
  uint64_t workspace_needed = 0, workspace_bytes = 0;
  int algo_id = 0, tile = 0, split_k = 0, reduction = 0, stages = 0;
  int64_t staged_ld = 0;  // > 0: computed into an aligned staging area of this ld, then copied to out
  uint64_t algo_words[8] = {};  // the cublasLtMatmulAlgo_t itself, for identity
};

// The choice cached for this call shape on `stream`'s workspace; false if none
// yet. Queries nothing, allocates nothing.
bool cublaslt_cached_choice(const GemmDesc& g, cudaStream_t stream, LtChoiceInfo* info);

// How many measurements this process has run (each times one call's candidates).
uint64_t cublaslt_measurements();

}  // namespace tgv::detail

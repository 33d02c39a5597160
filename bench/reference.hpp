// The correctness check: a plain fp32 reference GEMM on the device, and an
// element-wise comparison of a backend's bf16 output with it.
#pragma once

#include <cstdint>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

// Pass when |out - ref| <= kAbsTol + kRelTol * |ref| for every element. Rounding
// out to bf16 costs up to 2^-9 relative; a different fp32 summation order (split-K
// included) costs far less; 0.02 leaves room for both and still catches a wrong
// tile, a missing bias or a dropped slice of K on outputs of ~0.33 rms.
inline constexpr float kAbsTol = 0.02f;
inline constexpr float kRelTol = 0.02f;

// ref[m][n] = sum_k x[m][k] * w[n][k] (+ bias[n]) in fp32 from bf16 inputs, all
// packed row-major; `bias` may be null. Returns the M x N result on the host.
std::vector<float> reference_gemm(const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* bias,
                                  int64_t m, int64_t n, int64_t k, cudaStream_t stream);

struct CheckResult {
  int64_t bad = 0;                  // elements outside the tolerance (NaN included)
  int64_t worst_m = 0, worst_n = 0; // the element furthest outside, relative to its tolerance
  float worst_out = 0, worst_ref = 0;
  bool ok() const { return bad == 0; }
};

// Compares the packed row-major M x N bf16 `out` on the device with `ref`.
CheckResult check_output(const std::vector<float>& ref, const __nv_bfloat16* out, int64_t m, int64_t n,
                         cudaStream_t stream);
// The same for an output already on the host, as raw bf16 bits.
CheckResult compare_output(const std::vector<float>& ref, const std::vector<uint16_t>& bits, int64_t m, int64_t n);

// The elementwise math of the epilogues, shared by the SM90 kernel and the
// epilogue kernel after cuBLASLt (src/cublas/epilogue_kernel.cu), so that both
// backends compute the same fp32 function before their one rounding.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace tgv::kernels {

// tgv_dtype values of an output element.
inline constexpr int kOutBf16 = 0, kOutFp16 = 1, kOutFp32 = 2;
// tgv_epilogue values.
inline constexpr int kActNone = 0, kActSiluMul = 1, kActGeluTanhMul = 2;

// silu(g) = g * sigmoid(g). __expf's few-ulp error is far below the output
// rounding; for g -> -inf, exp overflows to inf and the quotient is -0.
__device__ __forceinline__ float silu(float g) { return g / (1.0f + __expf(-g)); }

// The tanh approximation of GELU (as in PyTorch's approximate="tanh").
__device__ __forceinline__ float gelu_tanh(float g) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * g * (1.0f + tanhf(kSqrt2OverPi * (g + 0.044715f * g * g * g)));
}

__device__ __forceinline__ float gated(int act, float gate, float up) {
  return (act == kActSiluMul ? silu(gate) : gelu_tanh(gate)) * up;
}

// Element i of a 16-bit input array (bias) as float.
__device__ __forceinline__ float load_input(const void* base, int64_t i, bool fp16) {
  return fp16 ? __half2float(static_cast<const __half*>(base)[i])
              : __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]);
}

// Element i of an output-typed array (out, residual) as float.
__device__ __forceinline__ float load_out(const void* base, int64_t i, int type) {
  if (type == kOutFp32) return static_cast<const float*>(base)[i];
  return load_input(base, i, type == kOutFp16);
}

// v rounded once to the output type, stored at element i.
__device__ __forceinline__ void store_out(void* base, int64_t i, float v, int type) {
  if (type == kOutFp32)
    static_cast<float*>(base)[i] = v;
  else if (type == kOutFp16)
    static_cast<__half*>(base)[i] = __float2half_rn(v);
  else
    static_cast<__nv_bfloat16*>(base)[i] = __float2bfloat16_rn(v);
}

}  // namespace tgv::kernels

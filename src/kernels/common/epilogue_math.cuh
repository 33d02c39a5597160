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

// Both activations are g * sigmoid(z): silu with z = g, and GELU's tanh
// approximation with z = 2u, since (1 + tanh(u)) / 2 = sigmoid(2u), where
// u = sqrt(2/pi) (g + 0.044715 g^3) (PyTorch's approximate="tanh"). One form,
// g / (1 + exp(-z)), is stable in both tails (exp(-z) -> inf gives 0, -> 0
// gives g) and compiles to a few instructions: the epilogue is unrolled over
// every accumulator, and tanhf and an IEEE division inlined that many times
// made the kernel objects several times larger. __expf and __fdividef are
// within 2 ulp, far below the output rounding.
__device__ __forceinline__ float gated(int act, float gate, float up) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  const float z = act == kActSiluMul ? gate : 2.0f * kSqrt2OverPi * (gate + 0.044715f * gate * gate * gate);
  return __fdividef(gate, 1.0f + __expf(-z)) * up;
}

// Element i of a 16-bit input array (bias) as float.
__device__ __forceinline__ float load_input(const void* base, int64_t i, bool fp16) {
  return fp16 ? __half2float(static_cast<const __half*>(base)[i])
              : __bfloat162float(static_cast<const __nv_bfloat16*>(base)[i]);
}

// v rounded once to a 16-bit output type (kOutBf16 or kOutFp16), as bits.
__device__ __forceinline__ uint16_t to_bits16(float v, int type) {
  return type == kOutFp16 ? __half_as_ushort(__float2half_rn(v)) : __bfloat16_as_ushort(__float2bfloat16_rn(v));
}

__device__ __forceinline__ float from_bits16(uint16_t bits, int type) {
  return type == kOutFp16 ? __half2float(__ushort_as_half(bits)) : __bfloat162float(__ushort_as_bfloat16(bits));
}

// Element i of an output-typed array as its raw bits (an fp32 word, or 16 bits
// in the low half), for loads issued together and converted later
// (out_bits_to_float): a conversion right after each load would wait for it.
__device__ __forceinline__ uint32_t load_out_bits(const void* base, int64_t i, int type) {
  if (type == kOutFp32) return static_cast<const uint32_t*>(base)[i];
  return static_cast<const uint16_t*>(base)[i];
}

__device__ __forceinline__ float out_bits_to_float(uint32_t bits, int type) {
  if (type == kOutFp32) return __uint_as_float(bits);
  return from_bits16(uint16_t(bits), type);
}

// Element i of an output-typed array (out, residual) as float.
__device__ __forceinline__ float load_out(const void* base, int64_t i, int type) {
  return out_bits_to_float(load_out_bits(base, i, type), type);
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

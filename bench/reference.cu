#include "reference.hpp"

#include <cmath>
#include <cstring>
#include <limits>

#include "cuda_check.hpp"

namespace {

constexpr int kThreads = 256;
constexpr int kWarpRows = 4;    // weight rows per warp
constexpr int kWarpTokens = 8;  // token rows per warp
constexpr int kChunk = 8;       // bf16 per lane per step: one 16-byte load

// row[k0, k0 + kChunk) as floats; zeros past K, and for a null row (outside the matrix).
__device__ void load_chunk(const __nv_bfloat16* row, int64_t k0, int64_t k, bool vector_ok, float out[kChunk]) {
  if (row != nullptr && vector_ok && k0 + kChunk <= k) {
    const uint4 raw = *reinterpret_cast<const uint4*>(row + k0);
    const __nv_bfloat16* v = reinterpret_cast<const __nv_bfloat16*>(&raw);
#pragma unroll
    for (int j = 0; j < kChunk; ++j) out[j] = __bfloat162float(v[j]);
  } else {
#pragma unroll
    for (int j = 0; j < kChunk; ++j) out[j] = row != nullptr && k0 + j < k ? __bfloat162float(row[k0 + j]) : 0.0f;
  }
}

// Each warp takes the dot products of kWarpRows weight rows with kWarpTokens token
// rows, its lanes splitting K. Sharing each loaded weight chunk across 8 tokens
// keeps the check of the whole default set to seconds; the arithmetic is still
// one fp32 multiply-add per (m, n, k).
__global__ void reference_kernel(const __nv_bfloat16* __restrict__ x, const __nv_bfloat16* __restrict__ w,
                                 const __nv_bfloat16* __restrict__ bias, float* __restrict__ ref,
                                 int64_t m, int64_t n, int64_t k) {
  const int lane = threadIdx.x % 32;
  const int64_t warp = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
  const int64_t token_groups = (m + kWarpTokens - 1) / kWarpTokens;
  // Warps on the same weight rows are neighbours, so W comes from DRAM about once.
  const int64_t m0 = warp % token_groups * kWarpTokens;
  const int64_t n0 = warp / token_groups * kWarpRows;
  if (n0 >= n) return;  // whole warps only: the shuffles below need all 32 lanes
  const bool vector_ok = k % kChunk == 0;  // then every row starts 16-byte aligned

  float acc[kWarpRows][kWarpTokens] = {};
  for (int64_t k0 = static_cast<int64_t>(lane) * kChunk; k0 < k; k0 += 32 * kChunk) {
    float wv[kWarpRows][kChunk];
#pragma unroll
    for (int r = 0; r < kWarpRows; ++r) load_chunk(n0 + r < n ? w + (n0 + r) * k : nullptr, k0, k, vector_ok, wv[r]);
#pragma unroll
    for (int t = 0; t < kWarpTokens; ++t) {
      float xv[kChunk];
      load_chunk(m0 + t < m ? x + (m0 + t) * k : nullptr, k0, k, vector_ok, xv);
#pragma unroll
      for (int r = 0; r < kWarpRows; ++r) {
#pragma unroll
        for (int j = 0; j < kChunk; ++j) acc[r][t] = fmaf(wv[r][j], xv[j], acc[r][t]);
      }
    }
  }

#pragma unroll
  for (int r = 0; r < kWarpRows; ++r) {
#pragma unroll
    for (int t = 0; t < kWarpTokens; ++t) {
      for (int offset = 16; offset > 0; offset /= 2) acc[r][t] += __shfl_xor_sync(0xffffffffu, acc[r][t], offset);
    }
  }
  if (lane != 0) return;
#pragma unroll
  for (int r = 0; r < kWarpRows; ++r) {
    if (n0 + r >= n) continue;
    const float b = bias != nullptr ? __bfloat162float(bias[n0 + r]) : 0.0f;
#pragma unroll
    for (int t = 0; t < kWarpTokens; ++t) {
      if (m0 + t < m) ref[(m0 + t) * n + n0 + r] = acc[r][t] + b;
    }
  }
}

float bf16_bits_to_float(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

}  // namespace

std::vector<float> reference_gemm(const __nv_bfloat16* x, const __nv_bfloat16* w, const __nv_bfloat16* bias,
                                  int64_t m, int64_t n, int64_t k, cudaStream_t stream) {
  const size_t elements = static_cast<size_t>(m * n);
  float* device_ref = nullptr;
  CUDA_CHECK(cudaMalloc(&device_ref, elements * sizeof(float)));
  const int64_t warps = (m + kWarpTokens - 1) / kWarpTokens * ((n + kWarpRows - 1) / kWarpRows);
  const int64_t blocks = (warps * 32 + kThreads - 1) / kThreads;
  reference_kernel<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(x, w, bias, device_ref, m, n, k);
  CUDA_CHECK_LAUNCH("reference_kernel");
  std::vector<float> ref(elements);
  CUDA_CHECK(cudaMemcpyAsync(ref.data(), device_ref, elements * sizeof(float), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  CUDA_CHECK(cudaFree(device_ref));
  return ref;
}

CheckResult check_output(const std::vector<float>& ref, const __nv_bfloat16* out, int64_t m, int64_t n,
                         cudaStream_t stream) {
  std::vector<uint16_t> bits(static_cast<size_t>(m * n));
  CUDA_CHECK(cudaMemcpyAsync(bits.data(), out, bits.size() * sizeof(uint16_t), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return compare_output(ref, bits, m, n);
}

CheckResult compare_output(const std::vector<float>& ref, const std::vector<uint16_t>& bits, int64_t m, int64_t n) {
  const size_t elements = static_cast<size_t>(m * n);
  CheckResult result;
  double worst = -1.0;  // |out - ref| / tolerance of the worst element so far
  for (size_t i = 0; i < elements; ++i) {
    const float got = bf16_bits_to_float(bits[i]);
    const float tolerance = kAbsTol + kRelTol * std::fabs(ref[i]);
    const float error = std::fabs(got - ref[i]);
    if (!(error <= tolerance)) ++result.bad;  // NaN fails too
    const double ratio = std::isnan(error) ? std::numeric_limits<double>::infinity() : error / tolerance;
    if (ratio > worst) {
      worst = ratio;
      result.worst_m = static_cast<int64_t>(i) / n;
      result.worst_n = static_cast<int64_t>(i) % n;
      result.worst_out = got;
      result.worst_ref = ref[i];
    }
  }
  return result;
}

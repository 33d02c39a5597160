#include "buffers.hpp"

#include <algorithm>
#include <cmath>

#include "cuda_check.hpp"
#include "fill.hpp"

namespace {

// Sets start on 256-byte boundaries, like the first one from cudaMalloc, so every
// set has the alignment a backend may pick its kernel by.
constexpr int64_t kSetAlignElements = 256 / sizeof(__nv_bfloat16);

int64_t round_up(int64_t value, int64_t multiple) { return (value + multiple - 1) / multiple * multiple; }

__nv_bfloat16* allocate(int64_t elements) {
  __nv_bfloat16* p = nullptr;
  CUDA_CHECK(cudaMalloc(&p, static_cast<size_t>(elements) * sizeof(__nv_bfloat16)));
  return p;
}

}  // namespace

RotatingBuffers::RotatingBuffers(int64_t n, int64_t k, int64_t max_m, bool with_bias,
                                 size_t min_weight_bytes, uint64_t seed, cudaStream_t stream)
    : n_(n), k_(k) {
  const int64_t weight_bytes = n * k * static_cast<int64_t>(sizeof(__nv_bfloat16));
  const int64_t min_bytes = static_cast<int64_t>(min_weight_bytes);
  sets_ = static_cast<int>(std::max<int64_t>(1, (min_bytes + weight_bytes - 1) / weight_bytes));
  w_stride_ = round_up(n * k, kSetAlignElements);
  x_stride_ = round_up(max_m * k, kSetAlignElements);
  out_stride_ = round_up(max_m * n, kSetAlignElements);

  w_ = allocate(sets_ * w_stride_);
  x_ = allocate(sets_ * x_stride_);
  out_ = allocate(sets_ * out_stride_);
  // Outputs of about 0.33 rms at any K, so one absolute tolerance fits every shape.
  fill_uniform_bf16(w_, static_cast<size_t>(sets_ * w_stride_), seed * 4 + 0,
                    1.0f / std::sqrt(static_cast<float>(k)), stream);
  fill_uniform_bf16(x_, static_cast<size_t>(sets_ * x_stride_), seed * 4 + 1, 1.0f, stream);
  if (with_bias) {
    bias_ = allocate(n);
    fill_uniform_bf16(bias_, static_cast<size_t>(n), seed * 4 + 2, 1.0f, stream);
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));
}

RotatingBuffers::~RotatingBuffers() {
  CUDA_CHECK(cudaFree(bias_));
  CUDA_CHECK(cudaFree(out_));
  CUDA_CHECK(cudaFree(x_));
  CUDA_CHECK(cudaFree(w_));
}

int RotatingBuffers::gemms_per_graph() const {
  const int64_t weight_bytes = n_ * k_ * static_cast<int64_t>(sizeof(__nv_bfloat16));
  const int64_t by_bytes = std::max<int64_t>(kMinGemmsPerLargeGraph, kMaxGraphWeightBytes / weight_bytes);
  const int64_t wanted = std::min<int64_t>(kMinGemmsPerGraph, by_bytes);
  return static_cast<int>(sets_ * ((wanted + sets_ - 1) / sets_));
}

tgv::Problem RotatingBuffers::problem(int set, int64_t m) const {
  tgv::Problem p = tgv::Problem::packed(m, n_, k_);
  p.x = x(set);
  p.w = w(set);
  p.bias = bias_;
  p.out = out_ + set * out_stride_;
  return p;
}

void RotatingBuffers::poison_out(int set, int64_t m, cudaStream_t stream) const {
  // Every byte 0xFF makes every bf16 0xFFFF, a NaN.
  CUDA_CHECK(cudaMemsetAsync(out_ + set * out_stride_, 0xFF,
                             static_cast<size_t>(m * n_) * sizeof(__nv_bfloat16), stream));
}

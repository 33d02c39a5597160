// Rotating operand sets for one weight shape. A graph that cycles through more
// weight copies than L2 holds reads every weight from DRAM, as a decode step does.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "tgv/tgv.hpp"

class RotatingBuffers {
 public:
  // A graph replays at least this many GEMMs: the replay's own launch cost fades under 200.
  static constexpr int kMinGemmsPerGraph = 200;
  // ... or fewer, where that many would read more than this many weight bytes: at
  // 4.8 TB/s a replay of 8 GiB is ~1.8 ms, so the replay's launch stays under 1%
  // while a 1-3 GB lm_head is not read 200 times per replay.
  static constexpr int64_t kMaxGraphWeightBytes = int64_t{8} << 30;
  static constexpr int kMinGemmsPerLargeGraph = 8;

  // Enough sets that their weights total at least `min_weight_bytes`; x and out are
  // sized for `max_m` tokens. W ~U(-1,1)/sqrt(K), x and bias ~U(-1,1).
  RotatingBuffers(int64_t n, int64_t k, int64_t max_m, bool with_bias, size_t min_weight_bytes,
                  uint64_t seed, cudaStream_t stream);
  ~RotatingBuffers();
  RotatingBuffers(const RotatingBuffers&) = delete;
  RotatingBuffers& operator=(const RotatingBuffers&) = delete;

  int sets() const { return sets_; }
  // GEMMs in one timed graph: whole rounds over the sets, so every weight copy is
  // read equally often; kMinGemmsPerGraph, or as many as read kMaxGraphWeightBytes
  // (at least kMinGemmsPerLargeGraph) where that is fewer.
  int gemms_per_graph() const;
  int64_t n() const { return n_; }
  int64_t k() const { return k_; }

  const __nv_bfloat16* x(int set) const { return x_ + set * x_stride_; }
  const __nv_bfloat16* w(int set) const { return w_ + set * w_stride_; }
  const __nv_bfloat16* bias() const { return bias_; }
  const __nv_bfloat16* out(int set) const { return out_ + set * out_stride_; }

  // The packed problem (x, W K-major; out row-major) on set `set` with `m` tokens.
  tgv::Problem problem(int set, int64_t m) const;

  // Sets the first m x N outputs of `set` to NaN, so that an element the GEMM
  // does not write fails the check.
  void poison_out(int set, int64_t m, cudaStream_t stream) const;

 private:
  int64_t n_, k_;
  int sets_ = 0;
  int64_t w_stride_ = 0, x_stride_ = 0, out_stride_ = 0;  // elements between sets
  __nv_bfloat16* w_ = nullptr;
  __nv_bfloat16* x_ = nullptr;
  __nv_bfloat16* out_ = nullptr;
  __nv_bfloat16* bias_ = nullptr;
};

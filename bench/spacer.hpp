// A one-thread kernel between timed GEMMs: the neighbour a GEMM has inside a model
// (a norm, rotary, attention), which neither waits nor triggers programmatically,
// so the GEMM after it cannot start under its tail and it cannot start under the
// GEMM's. tgv_gemm.tune's neighbours="kernels" is the same arrangement.
#pragma once

#include <cuda_runtime.h>

class Spacer {
 public:
  // Allocates its counter and times `calls` spacers alone in one graph (median of
  // `reps` replays): what a measurement with spacers subtracts per call.
  Spacer(cudaStream_t stream, int calls, int reps);
  ~Spacer();
  Spacer(const Spacer&) = delete;
  Spacer& operator=(const Spacer&) = delete;

  // A plain launch: no programmatic-serialization attribute.
  void launch(cudaStream_t stream) const;
  double us_alone() const { return us_; }

 private:
  int* counter_ = nullptr;
  double us_ = 0;
};

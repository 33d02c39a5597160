// The calling thread in relaxed stream-capture mode for a scope.
#pragma once

#include <cuda_runtime.h>

namespace tgv::detail {

// While any thread captures in global mode (PyTorch's default) or this thread
// captures in global or thread-local mode, "potentially unsafe" calls
// (cudaMalloc, synchronizations) made by this thread fail and invalidate the
// capture. In relaxed mode they are allowed; the scope's body must then keep
// its work off the capturing streams.
class RelaxedCaptureScope {
 public:
  RelaxedCaptureScope() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  ~RelaxedCaptureScope() { cudaThreadExchangeStreamCaptureMode(&mode_); }
  RelaxedCaptureScope(const RelaxedCaptureScope&) = delete;
  RelaxedCaptureScope& operator=(const RelaxedCaptureScope&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

}  // namespace tgv::detail

// Checks on CUDA runtime calls. A failed call leaves nothing worth timing (most
// errors are sticky for the context), so the bench reports the call and stops.
#pragma once

#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

[[noreturn]] inline void cuda_fail(cudaError_t error, const char* what, const char* file, int line) {
  // The leading newline keeps the message off the \r progress line.
  std::fprintf(stderr, "\ntgv-bench: %s:%d: %s failed: %s (%s)\n", file, line, what,
               cudaGetErrorName(error), cudaGetErrorString(error));
  std::exit(1);
}

#define CUDA_CHECK(call)                                               \
  do {                                                                 \
    const cudaError_t cuda_check_error_ = (call);                      \
    if (cuda_check_error_ != cudaSuccess)                              \
      cuda_fail(cuda_check_error_, #call, __FILE__, __LINE__);         \
  } while (0)

// A <<<>>> launch returns nothing; its configuration errors surface here.
#define CUDA_CHECK_LAUNCH(kernel_name)                                 \
  do {                                                                 \
    const cudaError_t cuda_check_error_ = cudaGetLastError();          \
    if (cuda_check_error_ != cudaSuccess)                              \
      cuda_fail(cuda_check_error_, "launch of " kernel_name, __FILE__, __LINE__); \
  } while (0)

// A cuBLAS / cuBLASLt status as the library's error (both APIs share cublasStatus_t).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include "common/error.hpp"
#include "common/strfmt.hpp"

namespace tgv::detail {

inline void check_cublas(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  // A failed launch leaves its CUDA error in this thread: name it, and take it
  // so that it does not surface again in the caller's next CUDA call.
  const cudaError_t cuda = status == CUBLAS_STATUS_EXECUTION_FAILED ? cudaGetLastError() : cudaSuccess;
  throw Error(TGV_ERROR_CUBLAS, strfmt("%s failed: %s%s%s", what, cublasLtGetStatusString(status),
                                       cuda != cudaSuccess ? "; CUDA: " : "",
                                       cuda != cudaSuccess ? cudaGetErrorString(cuda) : ""));
}

}  // namespace tgv::detail

#define TGV_CUBLAS_CHECK(call) ::tgv::detail::check_cublas((call), #call)

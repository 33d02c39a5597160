#pragma once

#include <cuda_runtime.h>

#include "common/error.hpp"
#include "common/strfmt.hpp"

// Turns a failed CUDA runtime call into detail::Error(TGV_ERROR_CUDA) naming the call.
#define TGV_CUDA_CHECK(call)                                                                      \
  do {                                                                                           \
    cudaError_t tgv_err_ = (call);                                                               \
    if (tgv_err_ != cudaSuccess)                                                                 \
      throw ::tgv::detail::Error(TGV_ERROR_CUDA, ::tgv::detail::strfmt("%s failed: %s (%s)", #call, \
                                                                       cudaGetErrorName(tgv_err_), \
                                                                       cudaGetErrorString(tgv_err_))); \
  } while (0)

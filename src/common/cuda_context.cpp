#include "common/cuda_context.hpp"

#include <cuda_runtime.h>

#include "common/cuda_check.hpp"

namespace tgv::detail {

void bind_primary_context(int device) {
  thread_local int bound_device = -1;
  if (bound_device != device) {
    TGV_CUDA_CHECK(cudaSetDevice(device));
    bound_device = device;
  }
}

}  // namespace tgv::detail

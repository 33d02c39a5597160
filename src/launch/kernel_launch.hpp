// What every tgv kernel launch shares: the one-time function attributes and
// the launch attributes (PDL, a cluster along x).
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "common/cuda_check.hpp"
#include "common/devices.hpp"

namespace tgv::detail {

// Function attributes are driver calls: set one once per device (`done` is the
// caller's per-kernel bitmask of devices already set).
template <class Kernel>
void set_attribute_once(std::atomic<uint64_t>& done, int device, Kernel kernel, cudaFuncAttribute attribute,
                        int value) {
  static_assert(kMaxDevices <= 64, "one bit per device");
  const uint64_t bit = uint64_t(1) << (device % kMaxDevices);
  if ((done.load(std::memory_order_acquire) & bit) != 0) return;
  TGV_CUDA_CHECK(cudaFuncSetAttribute(kernel, attribute, value));
  done.fetch_or(bit, std::memory_order_acq_rel);
}

// Launches with programmatic stream serialization when `pdl` (the kernel's
// griddepcontrol instructions are no-ops otherwise) and, when cluster_x > 1,
// clusters of cluster_x CTAs adjacent along x.
template <class... Params, class... Args>
void launch_kernel(void (*kernel)(Params...), dim3 grid, dim3 block, size_t smem_bytes, cudaStream_t stream, bool pdl,
                   unsigned cluster_x, Args&&... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem_bytes;
  config.stream = stream;
  cudaLaunchAttribute attrs[2]{};
  unsigned num_attrs = 0;
  if (pdl) {
    attrs[num_attrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[num_attrs].val.programmaticStreamSerializationAllowed = 1;
    ++num_attrs;
  }
  if (cluster_x > 1) {
    attrs[num_attrs].id = cudaLaunchAttributeClusterDimension;
    attrs[num_attrs].val.clusterDim.x = cluster_x;
    attrs[num_attrs].val.clusterDim.y = 1;
    attrs[num_attrs].val.clusterDim.z = 1;
    ++num_attrs;
  }
  config.attrs = attrs;
  config.numAttrs = num_attrs;
  TGV_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, std::forward<Args>(args)...));
}

}  // namespace tgv::detail

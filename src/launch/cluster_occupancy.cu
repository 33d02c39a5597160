#include "launch/cluster_occupancy.hpp"

#include <cuda_runtime.h>

namespace tgv::detail {
namespace {

// Shaped like the tgv kernels for the occupancy calculator: more than half the
// opt-in shared memory, so one CTA per SM, and the consumers' thread count.
__global__ void __launch_bounds__(384, 1) whole_sm_kernel(int* out) {
  extern __shared__ int smem[];
  if (out != nullptr && threadIdx.x == 0) out[blockIdx.x] = smem[0];
}

}  // namespace

std::array<int32_t, 17> measure_max_clusters(int device, int64_t smem_optin_bytes) {
  std::array<int32_t, 17> out{};
  int previous = 0;
  if (cudaGetDevice(&previous) != cudaSuccess || cudaSetDevice(device) != cudaSuccess) {
    (void)cudaGetLastError();
    return out;
  }
  const int smem = static_cast<int>(smem_optin_bytes / 2 + 1024);
  if (cudaFuncSetAttribute(whole_sm_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem) == cudaSuccess) {
    const bool nonportable =
        cudaFuncSetAttribute(whole_sm_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1) == cudaSuccess;
    for (int size = 1; size < int(out.size()); ++size) {
      if (size > 8 && !nonportable) break;
      cudaLaunchConfig_t config{};
      config.gridDim = dim3(size * 64);
      config.blockDim = dim3(384);
      config.dynamicSmemBytes = static_cast<size_t>(smem);
      cudaLaunchAttribute attr{};
      attr.id = cudaLaunchAttributeClusterDimension;
      attr.val.clusterDim.x = size;
      attr.val.clusterDim.y = 1;
      attr.val.clusterDim.z = 1;
      config.attrs = &attr;
      config.numAttrs = 1;
      int clusters = 0;
      if (cudaOccupancyMaxActiveClusters(&clusters, whole_sm_kernel, &config) == cudaSuccess) out[size] = clusters;
    }
  }
  // A device without clusters (or a driver that refuses the query) leaves
  // zeros: the model then shares the SMs evenly.
  (void)cudaGetLastError();
  cudaSetDevice(previous);
  return out;
}

}  // namespace tgv::detail

// A bench kernel launched as the library launches its GEMMs: optionally with
// programmatic stream serialization (PDL), so that the kernel's griddepcontrol
// instructions take effect (without the attribute they are no-ops).
#pragma once

#include <cuda_runtime.h>

template <class... Params, class... Args>
cudaError_t launch_maybe_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, bool pdl, cudaStream_t stream,
                             Args... args) {
  cudaLaunchConfig_t config{};
  config.gridDim = grid;
  config.blockDim = block;
  config.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  config.attrs = &attr;
  config.numAttrs = pdl ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, args...);
}

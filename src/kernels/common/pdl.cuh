// Programmatic dependent launch, as inline PTX. Both are no-ops in a kernel
// launched without the programmatic-stream-serialization attribute, so one
// kernel serves PDL on and off. The "memory" clobber keeps the compiler from
// hoisting a global load above the wait (the load would read the previous
// kernel's output before it is complete).
#pragma once

namespace tgv::kernels {

__device__ __forceinline__ void griddep_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }

__device__ __forceinline__ void griddep_launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

}  // namespace tgv::kernels

// The cuBLASLt path's workspaces: one per (device, stream), kept for the process.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace tgv::detail {

// cuBLAS's recommended workspace on Hopper and later (PyTorch gives cuBLAS and
// cuBLASLt as much there); the heuristic drops any candidate needing more.
inline constexpr size_t kWorkspaceBytes = size_t(32) << 20;
// The tail of a workspace that a staged call (algo_key.hpp: staging_ld)
// computes into; its GEMM gets the rest.
inline constexpr size_t kStagingBytes = size_t(8) << 20;

struct Workspace {
  void* ptr = nullptr;
  uint64_t bytes = 0;
};

// The stream's workspace, allocated on its first call. `capturing`: the
// stream is capturing, and a failed allocation then leaves it without one
// (nothing cached; the next call tries again) rather than failing the call.
Workspace workspace_for(int device, cudaStream_t stream, bool capturing);

// The stream's workspace if it has one (allocates nothing).
bool find_workspace(int device, cudaStream_t stream, Workspace* ws);

}  // namespace tgv::detail

#include "launch/stream_k_workspace.hpp"

#include <map>
#include <mutex>
#include <utility>

#include "common/cuda_check.hpp"
#include "common/relaxed_capture.hpp"
#include "tactics/tactics.hpp"

namespace tgv::detail {

StreamKWorkspace stream_k_workspace(int device, int num_sms, cudaStream_t stream) {
  static std::mutex mutex;
  static std::map<std::pair<int, cudaStream_t>, StreamKWorkspace> workspaces;
  std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_pair(device, stream);
  if (auto it = workspaces.find(key); it != workspaces.end()) return it->second;
  const size_t partial_bytes = size_t(2) * size_t(num_sms) * size_t(kStreamKMaxTileFloats) * sizeof(float);
  const size_t counter_bytes = size_t(kStreamKMaxTiles) * sizeof(uint32_t);
  StreamKWorkspace ws;
  {
    // cudaMalloc and a synchronous zeroing would invalidate a capture on
    // another thread (global mode) or this one; in relaxed mode, on a stream of
    // our own, they neither join nor break it.
    const RelaxedCaptureScope relaxed;
    void* base = nullptr;
    TGV_CUDA_CHECK(cudaMalloc(&base, partial_bytes + counter_bytes));
    cudaStream_t zeroing = nullptr;
    TGV_CUDA_CHECK(cudaStreamCreateWithFlags(&zeroing, cudaStreamNonBlocking));
    TGV_CUDA_CHECK(cudaMemsetAsync(static_cast<char*>(base) + partial_bytes, 0, counter_bytes, zeroing));
    TGV_CUDA_CHECK(cudaStreamSynchronize(zeroing));
    TGV_CUDA_CHECK(cudaStreamDestroy(zeroing));
    ws.partials = static_cast<float*>(base);
    ws.counters = reinterpret_cast<uint32_t*>(static_cast<char*>(base) + partial_bytes);
  }
  workspaces.emplace(key, ws);
  return ws;
}

}  // namespace tgv::detail

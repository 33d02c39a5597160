#include "cublas/lt_workspace.hpp"

#include <map>
#include <mutex>
#include <utility>

#include "common/cuda_check.hpp"
#include "common/relaxed_capture.hpp"

namespace tgv::detail {

// A workspace per (device, stream): two streams running GEMMs at once (two-
// batch overlap in an engine) must not share split-K scratch. Kept for the
// process. A stream first seen while capturing (PyTorch's capture stream, an
// engine's) gets its workspace too, allocated in relaxed capture mode:
// cudaMalloc is no stream operation, so the capture neither sees it nor is
// invalidated by it, and the graph keeps using memory that lives as long as
// the process. (Before, such a stream got none, and with it only algorithms
// without split-K scratch: every call the benchmarks time is captured on a
// stream of its own.) Were that allocation to fail under capture, the call
// runs with none (not cached: the next call tries again).
namespace {
std::mutex g_workspace_mutex;
std::map<std::pair<int, cudaStream_t>, Workspace> g_workspaces;
}  // namespace

bool find_workspace(int device, cudaStream_t stream, Workspace* ws) {
  std::lock_guard<std::mutex> lock(g_workspace_mutex);
  auto it = g_workspaces.find({device, stream});
  if (it == g_workspaces.end()) return false;
  *ws = it->second;
  return true;
}

Workspace workspace_for(int device, cudaStream_t stream, bool capturing) {
  Workspace ws;
  if (find_workspace(device, stream, &ws)) return ws;
  std::lock_guard<std::mutex> lock(g_workspace_mutex);
  auto it = g_workspaces.find({device, stream});
  if (it != g_workspaces.end()) return it->second;
  // Relaxed also when this stream is not capturing: another thread may be
  // capturing in global mode, which would forbid the allocation here.
  RelaxedCaptureScope relaxed;
  const cudaError_t e = cudaMalloc(&ws.ptr, kWorkspaceBytes);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (capturing) return {};
    TGV_CUDA_CHECK(e);
  }
  ws.bytes = kWorkspaceBytes;
  g_workspaces.emplace(std::make_pair(device, stream), ws);
  return ws;
}

}  // namespace tgv::detail

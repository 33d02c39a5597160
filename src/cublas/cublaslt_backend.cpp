#include "cublas/cublaslt_backend.hpp"

#include <cublasLt.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "common/cuda_check.hpp"
#include "common/cuda_context.hpp"
#include "common/relaxed_capture.hpp"
#include "cublas/algo_key.hpp"
#include "cublas/lt_choice.hpp"
#include "cublas/lt_plan.hpp"
#include "cublas/lt_workspace.hpp"

namespace tgv::detail {
namespace {

// One handle per device, created on first use and kept for the process.
cublasLtHandle_t handle_for(int device) {
  static std::mutex mutex;
  static std::map<int, cublasLtHandle_t> handles;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  cublasLtHandle_t h = nullptr;
  RelaxedCaptureScope relaxed;  // a first call may come under capture
  TGV_CUBLAS_CHECK(cublasLtCreate(&h));
  handles.emplace(device, h);
  return h;
}

std::mutex g_plan_mutex;
std::map<CallKey, std::shared_ptr<LtPlan>> g_plans;

std::shared_ptr<LtPlan> find_plan(const CallKey& key) {
  std::lock_guard<std::mutex> lock(g_plan_mutex);
  auto it = g_plans.find(key);
  return it == g_plans.end() ? nullptr : it->second;
}

// A settled plan is final; an unsettled one serves until a Measure call
// replaces it (callers already holding it finish with it).
std::shared_ptr<LtPlan> plan_for(const GemmDesc& g, cublasLtHandle_t handle, const CallKey& key, ChoiceMode mode) {
  std::shared_ptr<LtPlan> found = find_plan(key);
  if (found && (found->info.settled || mode != ChoiceMode::Measure)) return found;
  // Built outside the lock: the heuristic query and the measurement are slow
  // and other shapes need not wait for them. A racing builder of the same key
  // finds a settled plan in place and drops its own.
  std::shared_ptr<LtPlan> fresh = describe_call(g, g.bias != nullptr);
  if (key.bucket.workspace >= kWorkspaceBytes) {
    fresh->staging_ld = staging_ld(g, operand_alignments(g), kStagingBytes);
    if (fresh->staging_ld > 0) make_layout(fresh->d_staged, uint64_t(g.n), uint64_t(g.m), fresh->staging_ld, 1, 0);
  }
  {
    // The heuristic query is host work, but what cuBLASLt does inside it is
    // not ours to vouch for: in relaxed mode nothing it does can invalidate
    // a capture, this thread's or (in global mode) another's.
    RelaxedCaptureScope relaxed;
    choose(g, handle, key, *fresh, mode);
  }
  std::lock_guard<std::mutex> lock(g_plan_mutex);
  std::shared_ptr<LtPlan>& slot = g_plans[key];
  if (!slot || !slot->info.settled) slot = fresh;
  return slot;
}

bool stream_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  TGV_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  return capture != cudaStreamCaptureStatusNone;
}

}  // namespace

void cublaslt_gemm(const GemmDesc& g, cudaStream_t stream, LtChoice choice) {
  int device = 0;
  TGV_CUDA_CHECK(cudaGetDevice(&device));
  bind_primary_context(device);
  cublasLtHandle_t handle = handle_for(device);
  const bool capturing = stream_capturing(stream);
  const Workspace ws = workspace_for(device, stream, capturing);
  const CallKey key = call_key(g, device, ws.bytes);

  const std::shared_ptr<LtPlan> plan = plan_for(g, handle, key, choice_mode(capturing, choice));
  LtPlan& p = *plan;
  const bool row = g.out.row_major;
  const float alpha = 1.0f;
  float beta = 0.0f;
  if (g.bias != nullptr && !p.bias_in_epilogue) {
    launch_bias_fill_col_major(g, stream);
    beta = 1.0f;
  }
  const int64_t staged_ld = p.info.staged_ld;
  void* d = g.out.ptr;
  uint64_t ws_bytes = ws.bytes;
  cublasLtMatrixLayout_t d_layout = p.d.value;
  if (staged_ld > 0) {  // chosen only with the full workspace, whose tail is the staging area
    ws_bytes = ws.bytes - kStagingBytes;
    d = static_cast<char*>(ws.ptr) + ws_bytes;
    d_layout = p.d_staged.value;
  }
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    set_bias_pointer(p, g.bias);
    TGV_CUBLAS_CHECK(cublasLtMatmul(handle, p.op.value, &alpha, row ? g.w.ptr : g.x.ptr, p.a.value,
                                    row ? g.x.ptr : g.w.ptr, p.b.value, &beta, d, d_layout, d, d_layout, &p.algo,
                                    ws.ptr, ws_bytes, stream));
  }
  if (staged_ld > 0) launch_staged_copy(g.out.ptr, g.out.ld, d, staged_ld, g.m, g.n, stream);
}

bool cublaslt_cached_choice(const GemmDesc& g, cudaStream_t stream, LtChoiceInfo* info) {
  int device = 0;
  TGV_CUDA_CHECK(cudaGetDevice(&device));
  Workspace ws;
  find_workspace(device, stream, &ws);
  const std::shared_ptr<LtPlan> p = find_plan(call_key(g, device, ws.bytes));
  if (!p) return false;
  if (info != nullptr) *info = p->info;
  return true;
}

uint64_t cublaslt_measurements() { return measurements_run(); }

}  // namespace tgv::detail

#include "cublas/lt_timing.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "common/cuda_check.hpp"
#include "common/relaxed_capture.hpp"

namespace tgv::detail {
namespace {

// Five runs of each candidate, interleaved (a clock or thermal drift during the
// measurement then shifts every candidate alike), after one untimed run that
// loads the kernel's module.
constexpr int kReps = 5;

struct DeviceTimer {
  std::mutex mutex;  // one measurement at a time per device
  bool ready = false;
  cudaStream_t stream = nullptr;
  bool pools = false;  // stream-ordered allocation
  size_t l2_bytes = 0;
};

DeviceTimer& timer_for(int device) {
  static std::mutex mutex;
  static std::map<int, std::unique_ptr<DeviceTimer>> timers;
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<DeviceTimer>& t = timers[device];
  if (!t) t = std::make_unique<DeviceTimer>();
  return *t;
}

// Stream-ordered scratch: no device-wide synchronization to allocate or free
// (cudaFree would wait for every stream, the caller's included). With the
// default pool's release threshold of zero the memory goes back to the device
// at the stream synchronization that ends the measurement.
class Scratch {
 public:
  explicit Scratch(cudaStream_t stream) : stream_(stream) {}
  ~Scratch() { release(); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;

  bool allocate(size_t bytes) {
    if (cudaMallocAsync(&ptr_, bytes, stream_) == cudaSuccess) return true;
    cudaGetLastError();  // out of memory is not sticky: take it, measure without
    ptr_ = nullptr;
    return false;
  }
  void release() {
    if (ptr_ != nullptr) cudaFreeAsync(ptr_, stream_);
    ptr_ = nullptr;
  }
  void* get() const { return ptr_; }

 private:
  cudaStream_t stream_;
  void* ptr_ = nullptr;
};

class Events {
 public:
  explicit Events(size_t count) : events_(count, nullptr) {
    for (cudaEvent_t& e : events_) TGV_CUDA_CHECK(cudaEventCreate(&e));
  }
  ~Events() {
    for (cudaEvent_t e : events_)
      if (e != nullptr) cudaEventDestroy(e);
  }
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  cudaEvent_t operator[](size_t i) const { return events_[i]; }

 private:
  std::vector<cudaEvent_t> events_;
};

void prepare(DeviceTimer& t, int device) {
  if (t.ready) return;
  // Non-blocking: the legacy default stream, which a caller may be using, never
  // waits for the measurement, nor the measurement for it.
  TGV_CUDA_CHECK(cudaStreamCreateWithFlags(&t.stream, cudaStreamNonBlocking));
  int pools = 0, l2 = 0;
  TGV_CUDA_CHECK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device));
  TGV_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  t.pools = pools != 0;
  t.l2_bytes = size_t(l2);
  t.ready = true;
}

}  // namespace

std::vector<float> time_lt_candidates(int device, const LtOperation& call,
                                      const std::vector<cublasLtMatmulHeuristicResult_t>& candidates,
                                      const LtTimingBuffers& buffers) {
  DeviceTimer& t = timer_for(device);
  std::lock_guard<std::mutex> lock(t.mutex);
  RelaxedCaptureScope relaxed;
  prepare(t, device);
  if (!t.pools || candidates.empty()) return {};

  Scratch out(t.stream), workspace(t.stream), flush(t.stream), extra(t.stream);
  if (!out.allocate(buffers.out_span_bytes + 256)) return {};
  if (call.after && !extra.allocate(buffers.extra_bytes + 256)) return {};
  if (buffers.workspace_bytes > 0 && !workspace.allocate(buffers.workspace_bytes)) return {};
  // Weights of twice the L2 size and more evict themselves.
  const size_t flush_bytes = 2 * t.l2_bytes;
  const bool flushing = buffers.weight_bytes < flush_bytes && flush_bytes > 0 && flush.allocate(flush_bytes);
  if (flushing) TGV_CUDA_CHECK(cudaMemsetAsync(flush.get(), 0, flush_bytes, t.stream));
  void* d = static_cast<char*>(out.get()) + buffers.out_offset;

  const float alpha = 1.0f;
  const auto run = [&](size_t c) {
    const cublasStatus_t s =
        cublasLtMatmul(call.handle, call.op, &alpha, call.a_ptr, call.a, call.b_ptr, call.b, &call.beta, d, call.d, d,
                       call.d, &candidates[c].algo, workspace.get(), buffers.workspace_bytes, t.stream);
    if (s == CUBLAS_STATUS_SUCCESS && call.after) call.after(d, extra.get(), t.stream);
    return s;
  };
  const size_t n = candidates.size();
  std::vector<bool> runs(n);
  for (size_t c = 0; c < n; ++c) runs[c] = run(c) == CUBLAS_STATUS_SUCCESS;
  cudaGetLastError();  // a candidate refused at launch leaves its error here; it is simply not timed

  Events events(2 * n * kReps);
  for (int r = 0; r < kReps; ++r) {
    for (size_t c = 0; c < n; ++c) {
      if (!runs[c]) continue;
      if (flushing) launch_l2_flush_read(flush.get(), flush_bytes, t.stream);
      const size_t e = 2 * (c * kReps + r);
      TGV_CUDA_CHECK(cudaEventRecord(events[e], t.stream));
      runs[c] = run(c) == CUBLAS_STATUS_SUCCESS;
      TGV_CUDA_CHECK(cudaEventRecord(events[e + 1], t.stream));
    }
  }
  out.release();
  workspace.release();
  flush.release();
  extra.release();
  TGV_CUDA_CHECK(cudaStreamSynchronize(t.stream));

  std::vector<float> medians(n, -1.0f);
  for (size_t c = 0; c < n; ++c) {
    if (!runs[c]) continue;
    float ms[kReps];
    for (int r = 0; r < kReps; ++r) {
      const size_t e = 2 * (c * kReps + r);
      TGV_CUDA_CHECK(cudaEventElapsedTime(&ms[r], events[e], events[e + 1]));
    }
    std::nth_element(ms, ms + kReps / 2, ms + kReps);
    medians[c] = ms[kReps / 2] * 1000.0f;
  }
  return medians;
}

}  // namespace tgv::detail

#include "common/stream_buffer.hpp"

#include <map>
#include <mutex>
#include <tuple>

#include "common/cuda_check.hpp"
#include "common/relaxed_capture.hpp"

namespace tgv::detail {

void* stream_buffer(StreamBufferPurpose purpose, int device, cudaStream_t stream, size_t bytes, bool zeroed) {
  static std::mutex mutex;
  static std::map<std::tuple<StreamBufferPurpose, int, cudaStream_t>, void*> buffers;
  std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_tuple(purpose, device, stream);
  if (auto it = buffers.find(key); it != buffers.end()) return it->second;
  void* p = nullptr;
  {
    const RelaxedCaptureScope relaxed;
    TGV_CUDA_CHECK(cudaMalloc(&p, bytes));
    if (zeroed) {
      cudaStream_t own = nullptr;
      TGV_CUDA_CHECK(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking));
      TGV_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, own));
      TGV_CUDA_CHECK(cudaStreamSynchronize(own));
      TGV_CUDA_CHECK(cudaStreamDestroy(own));
    }
  }
  buffers.emplace(key, p);
  return p;
}

}  // namespace tgv::detail

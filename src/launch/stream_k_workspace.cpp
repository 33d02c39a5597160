#include "launch/stream_k_workspace.hpp"

#include "common/stream_buffer.hpp"
#include "tactics/tactics.hpp"

namespace tgv::detail {

StreamKWorkspace stream_k_workspace(int device, int num_sms, cudaStream_t stream) {
  const size_t partial_bytes = size_t(2) * size_t(num_sms) * size_t(kStreamKMaxTileFloats) * sizeof(float);
  const size_t counter_bytes = size_t(kStreamKMaxTiles) * sizeof(uint32_t);
  // Zeroed whole: the counters must start at zero; the partials are written
  // before they are read.
  char* base = static_cast<char*>(
      stream_buffer(StreamBufferPurpose::StreamK, device, stream, partial_bytes + counter_bytes, /*zeroed=*/true));
  return {reinterpret_cast<float*>(base), reinterpret_cast<uint32_t*>(base + partial_bytes)};
}

}  // namespace tgv::detail

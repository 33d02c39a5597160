// The calling thread's CUDA context.
#pragma once

namespace tgv::detail {

// A thread that has made no CUDA runtime call yet (a fresh Python or engine
// worker thread) has no current context: driver calls then fail with
// CUDA_ERROR_INVALID_CONTEXT (cuTensorMapEncodeTiled), and so do cuBLASLt's
// kernel launches, reported only as CUBLAS_STATUS_EXECUTION_FAILED. Binds
// `device`'s primary context to this thread (cudaSetDevice does since CUDA 12),
// once per thread and device.
void bind_primary_context(int device);

}  // namespace tgv::detail

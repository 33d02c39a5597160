#include "timing.hpp"

#include <algorithm>

#include "cuda_check.hpp"

std::vector<float> time_each(cudaStream_t stream, int runs, const std::function<void()>& launch) {
  std::vector<cudaEvent_t> start(runs), stop(runs);
  for (int i = 0; i < runs; ++i) {
    CUDA_CHECK(cudaEventCreate(&start[i]));
    CUDA_CHECK(cudaEventCreate(&stop[i]));
  }
  // No host synchronization between runs: the device never idles between them.
  for (int i = 0; i < runs; ++i) {
    CUDA_CHECK(cudaEventRecord(start[i], stream));
    launch();
    CUDA_CHECK(cudaEventRecord(stop[i], stream));
  }
  CUDA_CHECK(cudaEventSynchronize(stop[runs - 1]));
  std::vector<float> ms(runs);
  for (int i = 0; i < runs; ++i) {
    CUDA_CHECK(cudaEventElapsedTime(&ms[i], start[i], stop[i]));
    CUDA_CHECK(cudaEventDestroy(start[i]));
    CUDA_CHECK(cudaEventDestroy(stop[i]));
  }
  return ms;
}

double median(std::vector<float> values) {
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

GraphTiming time_graph(cudaStream_t stream, int calls, int reps,
                       const std::function<std::string(int call)>& enqueue) {
  // Thread-local mode: a call of this thread (the library's own) that is unsafe
  // during capture still fails here, as it would in a serving framework's
  // graph, while other threads of the process -- an engine serving beside
  // `--tune` -- may allocate and synchronize as they please (global mode made
  // their calls fail with cudaErrorStreamCaptureUnsupported).
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  std::string error;
  for (int call = 0; call < calls && error.empty(); ++call) {
    error = enqueue(call);
    if (!error.empty()) error = "call " + std::to_string(call) + " during capture: " + error;
  }
  cudaGraph_t graph = nullptr;
  const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
  if (error.empty() && ended != cudaSuccess) {
    error = std::string("cudaStreamEndCapture: ") + cudaGetErrorName(ended) + " (" +
            cudaGetErrorString(ended) + ")";
  }
  if (!error.empty()) {
    if (graph != nullptr) CUDA_CHECK(cudaGraphDestroy(graph));
    // A broken capture is not a sticky error: clear it so later checks see their own.
    (void)cudaGetLastError();
    return {error, 0};
  }

  cudaGraphExec_t exec = nullptr;
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_CHECK(cudaGraphDestroy(graph));
  CUDA_CHECK(cudaGraphLaunch(exec, stream));
  const std::vector<float> ms = time_each(stream, reps, [&] { CUDA_CHECK(cudaGraphLaunch(exec, stream)); });
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  return {"", median(ms)};
}

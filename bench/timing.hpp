// Device-side timing: events around each run, and CUDA-graph replays of many calls.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime.h>

// Enqueues launch() `runs` times on `stream`, each between its own pair of events,
// and returns each run's milliseconds.
std::vector<float> time_each(cudaStream_t stream, int runs, const std::function<void()>& launch);

double median(std::vector<float> values);

struct GraphTiming {
  std::string error;      // empty on success; else why the graph could not be built
  double median_ms = 0;   // of one whole replay
};

// Captures enqueue(0), ..., enqueue(calls - 1) on `stream` into one graph, replays it
// once untimed (upload, first-touch), then `reps` times back to back, and returns
// the median replay. enqueue returns "" or the reason the call failed.
GraphTiming time_graph(cudaStream_t stream, int calls, int reps,
                       const std::function<std::string(int call)>& enqueue);

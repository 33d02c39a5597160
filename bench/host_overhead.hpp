// Host-side cost of one tgv_gemm call: validation, planning, tensor maps and
// the launch itself, as the CPU sees it. Inside a CUDA graph none of it recurs.
#pragma once

#include <cuda_runtime.h>

#include "buffers.hpp"
#include "tgv/tgv.hpp"

// Median over `rounds` of the host time of `calls` back-to-back eager calls on
// set 0, in microseconds per call. The GPU work queues behind them; the host
// clock stops before synchronizing. -1 if a call failed.
double host_us_per_call(const RotatingBuffers& buffers, int64_t m, const tgv::Options& options, cudaStream_t stream,
                        int calls = 100, int rounds = 9);

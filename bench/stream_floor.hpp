// The stream floor: the time of a kernel that only reads a weight, as the GEMM
// that multiplies by it is launched. What no GEMM kernel can beat on that weight
// in that graph: launch, first-load latency and the weight stream are all in it.
#pragma once

#include <cuda_runtime.h>

#include "buffers.hpp"

struct StreamFloor {
  double pdl_us = 0;    // per launch, with the PDL launch attribute
  double plain_us = 0;  // per launch, without
};

// `calls` launches per graph over the rotating weight copies of `buffers` (launch
// i reads copy i % sets, as the GEMMs do), median of `reps` replays, with PDL and
// without. One CTA per SM (grid = `sm_count`), each reading an equal contiguous
// share of the N x K bf16 weight with 16-byte loads; exits on a CUDA error.
// With `spacer`, each launch is followed by the spacer kernel and its time alone
// is subtracted, as measure() does for the GEMMs.
class Spacer;
StreamFloor measure_stream_floor(const RotatingBuffers& buffers, int calls, int reps, int sm_count,
                                 cudaStream_t stream, const Spacer* spacer = nullptr);

// One backend on one (shape, M): the reference check, then the cold-weight timing.
#pragma once

#include <cstdint>
#include <vector>

#include <cuda_runtime.h>

#include "buffers.hpp"
#include "report.hpp"
#include "tgv/tgv.hpp"

class Spacer;

// Checks one call on set 0 against `ref` (NaN-poisoned output first), warms every
// set up outside capture, then times `calls` GEMMs per graph replay, median of
// `reps` replays: back to back, or with `spacer` each followed by a spacer kernel
// whose time alone is subtracted. With host_overhead, also the host time of an eager call.
Measurement measure(const tgv::Options& options, bool host_overhead, const RotatingBuffers& buffers, int64_t m,
                    int calls, int reps, const std::vector<float>& ref, cudaStream_t stream,
                    const Spacer* spacer = nullptr);

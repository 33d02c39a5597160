// tgv-bench --tune FILE: times every legal (tactic, split-K) of the tgv backend
// and cuBLASLt for each shape and M bucket, by the same cold-weight graph method,
// and writes the per-GPU tuning file the library loads (src/plan/tuning.hpp).
#pragma once

#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "cli.hpp"
#include "shapes.hpp"

int run_tune(const Cli& cli, const std::vector<Shape>& shapes, const std::string& gpu, int sm_count,
             size_t rotation_bytes, cudaStream_t stream);

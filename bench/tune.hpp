// tgv-bench --tune FILE: a timer over the library's tuner pieces. For each shape
// and M bucket it times the candidates of tgv::tune_candidates (the list
// tgv_gemm.tune times too) by the bench's cold-weight graph method, captured
// thread-locally, and writes the winners with tgv::write_tuning_file, the
// format the library loads (src/plan/tuning.hpp).
#pragma once

#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "cli.hpp"
#include "shapes.hpp"

int run_tune(const Cli& cli, const std::vector<Shape>& shapes, const std::string& gpu, int sm_count,
             size_t rotation_bytes, cudaStream_t stream);

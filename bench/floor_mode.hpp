// tgv-bench --mode floor: the stream floor of each shape alone (no GEMMs), with
// and without PDL, beside the HBM floor of its weight. What bench/python/corpus_bench.py
// divides by.
#pragma once

#include <vector>

#include <cuda_runtime.h>

#include "cli.hpp"
#include "report.hpp"
#include "shapes.hpp"

// Prints the table (provenance header first) and writes --csv / --json; returns
// the exit status.
int run_floor(const Cli& cli, const RunInfo& info, const std::vector<Shape>& shapes, cudaStream_t stream);

// tgv-bench --mode chain: decoder layers of GEMMs fed through elementwise kernels.
#pragma once

#include <cuda_runtime.h>

#include "cli.hpp"

// Times 8-layer chains of Llama-3.1-8B and Llama-3.1-70B (TP8) decoder GEMMs, for
// each M of the command line: tgv with PDL, tgv without, cuBLASLt. Prints a table;
// returns the process exit code.
int run_chain(const Cli& cli, cudaStream_t stream);

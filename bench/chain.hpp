// tgv-bench --mode chain: decoder layers as an engine runs them, fused (tgv) against
// cuBLASLt with the unfused elementwise kernels torch would launch.
#pragma once

#include <cuda_runtime.h>

#include "cli.hpp"

// For Llama-3.1-8B and Llama-3.1-70B (TP8), at each M of the command line: checks one
// layer of each side stage by stage against an fp32 reference, then times 8-layer
// chains (tgv and auto with fused epilogues and PDL, tgv without PDL; cuBLASLt unfused,
// no PDL) and prints us per layer beside the layer's bandwidth floor. Returns the exit code:
// 1 when a check or a call failed.
int run_chain(const Cli& cli, cudaStream_t stream);

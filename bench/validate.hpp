// tgv-bench --validate: the full correctness grid of the tgv kernels on this
// GPU, with a verdict a user can report back (docs: README, "Self-check").
#pragma once

#include <cuda_runtime.h>

// Runs every tgv tactic of the device's family over shapes with M, N and K
// tails, every layout, bias off and on, each against the bench's fp32
// reference; prints per-tactic lines and the verdict (PASS/FAIL, counts, GPU,
// library version). Returns the exit status: 0 on PASS, 1 on FAIL.
int run_validate(int device, cudaStream_t stream);

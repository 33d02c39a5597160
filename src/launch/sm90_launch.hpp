// The SM90 launcher: tensor maps, launch attributes, and the switch from a
// tactic to the compiled kernel instance.
#pragma once

#include <cuda_runtime.h>

#include "common/gemm_desc.hpp"
#include "launch/sm90_tile.hpp"
#include "plan/plan.hpp"

namespace tgv::detail {

// Everything a launch of the plan's instance takes (tensor maps, Params, grid,
// shared memory), without launching: launch_sm90's first half, and what the
// trace experiments launch their own instrumented instance with.
Sm90Launch prepare_sm90(const GemmDesc& g, const Plan& plan, cudaStream_t stream);

void launch_sm90(const GemmDesc& g, const Plan& plan, cudaStream_t stream);

}  // namespace tgv::detail

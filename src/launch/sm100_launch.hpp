// The SM100/SM103 launcher: tensor maps, launch attributes (PDL, the CTA-pair
// cluster), and the switch from a tactic to the compiled kernel instance.
#pragma once

#include <cuda_runtime.h>

#include "common/gemm_desc.hpp"
#include "plan/plan.hpp"

namespace tgv::detail {

void launch_sm100(const GemmDesc& g, const Plan& plan, cudaStream_t stream);

}  // namespace tgv::detail

// How the cuBLASLt path chooses a plan's algorithm: the bucket's measured
// winner, else the heuristic's candidates, measured or not.
#pragma once

#include <cublasLt.h>

#include <cstdint>

#include "common/gemm_desc.hpp"
#include "cublas/algo_key.hpp"
#include "cublas/cublaslt_backend.hpp"
#include "cublas/lt_plan.hpp"

namespace tgv::detail {

enum class ChoiceMode { Measure, Capturing, AutotuneOff, Heuristic };

// The mode of a call: Capturing when its stream captures; else Heuristic as
// asked; else AutotuneOff under TGV_CUBLAS_AUTOTUNE=0 (read at each call that
// chooses); else Measure.
ChoiceMode choice_mode(bool capturing, LtChoice choice);

// Sets p's algorithm and p.info for the call g with key (p described, its
// staging layout set where staging applies).
void choose(const GemmDesc& g, cublasLtHandle_t handle, const CallKey& key, LtPlan& p, ChoiceMode mode);

// Measurements run so far in this process.
uint64_t measurements_run();

}  // namespace tgv::detail

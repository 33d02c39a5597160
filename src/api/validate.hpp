// Backend-independent checks of a request. Everything here runs before any
// launch; a failure throws detail::Error with a message that names the
// argument and its value.
#pragma once

#include "common/gemm_desc.hpp"
#include "tgv/tgv.h"

namespace tgv::detail {

// Checks sizes, dtype, pointers, alignment, strides and aliasing, detects each
// operand's layout. A problem with M, N or L equal to 0 comes back empty()
// after only its sizes and dtype were checked: it is a valid no-op.
GemmDesc validate_problem(const tgv_problem& problem);

void validate_options(const tgv_options& options, int32_t num_tactics);

}  // namespace tgv::detail

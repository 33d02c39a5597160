// Which epilogues, dtypes and residuals the tgv kernels serve on a device
// (README "Epilogues"). Everything else runs through cuBLASLt and our
// epilogue kernel (src/cublas/epilogue_fallback): backend=auto always works,
// backend=tgv gets the reason from here.
#pragma once

#include <string>

#include "common/gemm_desc.hpp"
#include "plan/device_info.hpp"

namespace tgv::detail {

// Why the tgv kernel family of `dev` cannot serve g's dtypes, residual or
// gated epilogue; empty if it can, and always for a plain problem. Device
// and layout only: every compiled tactic and stage count of the family serves
// whatever this accepts.
std::string epilogue_unsupported_reason(const GemmDesc& g, const DeviceInfo& dev);

// What cuBLASLt's path adds to g beyond its GEMM, in microseconds: nothing for
// a plain problem or one cuBLASLt writes directly (no bias, residual or
// gating); else the fp32 scratch written and read again and our epilogue
// kernel after it (src/cublas/epilogue_fallback), which the tgv kernel fuses.
double cublas_epilogue_extra_us(const GemmDesc& g, const DeviceInfo& dev);

// What the problem asks beyond a plain bf16 GEMM, for messages: e.g.
// "fp16 inputs, fp32 out, a residual". Empty for a plain problem.
std::string epilogue_summary(const GemmDesc& g);

}  // namespace tgv::detail

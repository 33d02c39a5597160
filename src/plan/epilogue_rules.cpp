#include "plan/epilogue_rules.hpp"

#include "common/strfmt.hpp"

namespace tgv::detail {
namespace {

const char* type_name(DType t) { return t == DType::BF16 ? "bf16" : t == DType::FP16 ? "fp16" : "fp32"; }

void append(std::string& s, const std::string& part) {
  if (!s.empty()) s += ", ";
  s += part;
}

// Our epilogue kernel after cuBLASLt: one more dependent launch in the stream
// (its launch and first loads, as a small kernel costs in a graph), and the
// fp32 product through the scratch at about L2 speed.
constexpr double kEpilogueKernelUs = 2.0;
constexpr double kScratchGbps = 3000;

}  // namespace

double cublas_epilogue_extra_us(const GemmDesc& g, const DeviceInfo& dev) {
  (void)dev;
  if (g.plain() || (g.bias == nullptr && !g.has_residual() && g.act == Act::None)) return 0.0;
  const double scratch_bytes = 2.0 * 4.0 * double(g.l) * double(g.m) * double(g.n);  // written, read back
  return kEpilogueKernelUs + scratch_bytes / kScratchGbps * 1e-3;
}

std::string epilogue_summary(const GemmDesc& g) {
  std::string s;
  if (g.in_type != DType::BF16) append(s, strfmt("%s inputs", type_name(g.in_type)));
  if (g.out_type != g.in_type) append(s, strfmt("%s out", type_name(g.out_type)));
  if (g.has_residual()) append(s, "a residual");
  if (g.act == Act::SiluMul) append(s, "epilogue=silu_mul");
  if (g.act == Act::GeluTanhMul) append(s, "epilogue=gelu_tanh_mul");
  return s;
}

std::string epilogue_unsupported_reason(const GemmDesc& g, const DeviceInfo& dev) {
  if (g.plain()) return {};
  const int sm = dev.sm();
  if (sm != 90 && sm != 100 && sm != 103)
    return strfmt("no tgv kernel serves sm_%d; this call asks for %s: use backend=auto or cublas (cuBLASLt and the "
                  "library's epilogue kernel)",
                  sm, epilogue_summary(g).c_str());
  // The fp16 instances are compiled for K-major operands only: the four
  // layout pairs of every tile would double the kernel build (README).
  if (g.in_type == DType::FP16 && (g.x.major != Major::K || g.w.major != Major::K))
    return strfmt("fp16 inputs: the sm_%d tgv kernel is compiled for fp16 with K-major x and w only; here x is %s and "
                  "w is %s: use backend=auto or cublas",
                  sm, g.x.major == Major::K ? "K-major" : "M-major", g.w.major == Major::K ? "K-major" : "N-major");
  if (g.act != Act::None) {
    const char* name = g.act == Act::SiluMul ? "silu_mul" : "gelu_tanh_mul";
    // A CTA loads its gate and up rows as one 5-D TMA box of 8-row groups
    // (sm90_launch.cpp, sm100_launch.cpp): rows must be K-major and each half
    // whole groups of 8.
    if (g.w.major != Major::K)
      return strfmt("epilogue=%s: the sm_%d tgv kernel reads a K-major w only when gating; w is N-major: use "
                    "backend=auto or cublas",
                    name, sm);
    if ((g.n / 2) % 8 != 0)
      return strfmt("epilogue=%s with n=%lld: the sm_%d tgv kernel needs n/2 (%lld) to be a multiple of 8; use "
                    "backend=auto or cublas",
                    name, (long long)g.n, sm, (long long)(g.n / 2));
  }
  return {};
}

}  // namespace tgv::detail

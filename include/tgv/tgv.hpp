// tgv-gemm C++ API: thin, header-only types over the C ABI in tgv.h.
//
//   tgv::Problem p = tgv::Problem::packed(M, N, K);   // x, W K-major; out row-major
//   p.x = x; p.w = w; p.out = out; p.bias = bias;     // device pointers (bias optional)
//   tgv::Options o;                                   // auto backend, PDL on
//   tgv::Status s = tgv::gemm(p, o, stream);
//   if (!s) std::fprintf(stderr, "%s\n", s.message().c_str());
//
// Other layouts are other strides: x M-major is x_stride_m = 1, x_stride_k = ld;
// W N-major is w_stride_n = 1; a column-major out is out_stride_m = 1.
//
// Epilogues are fields of the problem (tgv.h):
//   p.residual = h;                            // out = x . W^T + h (h may be p.out itself)
//   p.out_dtype = TGV_DTYPE_FP32;              // fp32 out (a router's logits)
//   p.epilogue = TGV_EPILOGUE_SILU_MUL;        // W = [gate; up]: out = silu(x.gate^T) * (x.up^T), N/2 columns
//   p.dtype = TGV_DTYPE_FP16; p.out_dtype = TGV_DTYPE_FP16;   // fp16 in and out
// Problem::packed sets the residual strides to out's; Problem::gated(M, N, K)
// is packed with out's strides for its N/2 columns and the SiLU epilogue.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tgv/tgv.h"

namespace tgv {

enum class Backend : int32_t { Auto = TGV_BACKEND_AUTO, Tgv = TGV_BACKEND_TGV, Cublas = TGV_BACKEND_CUBLAS };
enum class DType : int32_t { BF16 = TGV_DTYPE_BF16, FP16 = TGV_DTYPE_FP16, FP32 = TGV_DTYPE_FP32, FP8_E4M3 = TGV_DTYPE_FP8_E4M3 };
enum class Epilogue : int32_t {
  None = TGV_EPILOGUE_NONE,
  SiluMul = TGV_EPILOGUE_SILU_MUL,
  GeluTanhMul = TGV_EPILOGUE_GELU_TANH_MUL
};

inline constexpr int32_t kAutoTactic = -1;
inline constexpr int32_t kAutoSplitK = 0;
inline constexpr int32_t kAutoStages = 0;

// The problem is the C struct itself, so a C++ caller and the C ABI agree
// byte for byte; the helpers only fill strides.
struct Problem : tgv_problem {
  Problem() : tgv_problem{} { dtype = TGV_DTYPE_BF16; }
  static Problem packed(int64_t m, int64_t n, int64_t k, int64_t l = 1) {
    Problem p;
    tgv_default_problem(&p, m, n, k, l);
    return p;
  }
  // W of n rows = [gate; up], out (and residual strides) packed for n / 2 columns.
  static Problem gated(int64_t m, int64_t n, int64_t k, int64_t l = 1, Epilogue e = Epilogue::SiluMul) {
    Problem p = packed(m, n, k, l);
    p.epilogue = static_cast<int32_t>(e);
    p.out_stride_m = p.residual_stride_m = n / 2;
    p.out_stride_l = p.residual_stride_l = m * (n / 2);
    return p;
  }
};

struct Options {
  Backend backend = Backend::Auto;
  int32_t tactic = kAutoTactic;
  bool pdl = true;
  int32_t split_k = kAutoSplitK;
  int32_t stages = kAutoStages;

  tgv_options to_c() const {
    return tgv_options{static_cast<int32_t>(backend), tactic, pdl ? 1 : 0, split_k, stages};
  }
  static Options from_c(const tgv_options& o) {
    Options out;
    out.backend = static_cast<Backend>(o.backend);
    out.tactic = o.tactic;
    out.pdl = o.pdl != 0;
    out.split_k = o.split_k;
    out.stages = o.stages;
    return out;
  }
};

class Status {
 public:
  explicit Status(tgv_status code) : code_(code), message_(code == TGV_SUCCESS ? "" : tgv_last_error()) {}
  bool ok() const { return code_ == TGV_SUCCESS; }
  explicit operator bool() const { return ok(); }
  tgv_status code() const { return code_; }
  const std::string& message() const { return message_; }

 private:
  tgv_status code_;
  std::string message_;
};

// `stream` is a cudaStream_t; taken as void* so this header needs no CUDA headers.
inline Status gemm(const Problem& problem, const Options& options, void* stream) {
  tgv_options o = options.to_c();
  return Status(tgv_gemm(&problem, &o, stream));
}

inline Status validate(const Problem& problem, const Options& options = {}) {
  tgv_options o = options.to_c();
  return Status(tgv_validate(&problem, &o));
}

// What gemm() would run (tgv_get_plan in tgv.h), without launching.
inline Status get_plan(const Problem& problem, const Options& options, tgv_plan_info* plan) {
  tgv_options o = options.to_c();
  return Status(tgv_get_plan(&problem, &o, plan));
}

// The self-check gate's verdict for `device` (tgv_self_check in tgv.h): on
// success, *passed says whether the tgv kernels may serve the device and, when
// they may not, `reason` (if given) says why.
inline Status self_check(int32_t device, bool* passed, std::string* reason = nullptr) {
  int32_t ok = 0;
  Status s(tgv_self_check(device, &ok));
  *passed = s.ok() && ok != 0;
  if (reason != nullptr) *reason = s.ok() && ok == 0 ? tgv_last_error() : "";
  return s;
}

// Re-reads the tuning file for the devices this process has used
// (tgv_reload_tuning in tgv.h): backend auto follows it from the next call on.
inline Status reload_tuning() { return Status(tgv_reload_tuning()); }

// The tuner's pieces (tgv.h: tgv_describe_device, tgv_tune_candidates,
// tgv_write_tuning_file, tgv_tuning_file_path): a tuner only times what
// tune_candidates returns and writes the winners with write_tuning_file.
inline Status describe_device(int32_t device, tgv_device_desc* desc) {
  return Status(tgv_describe_device(device, desc));
}

inline Status tune_candidates(const tgv_device_desc& device, int64_t n, int64_t k, int64_t m,
                              std::vector<Options>* out) {
  out->clear();
  int32_t count = 0;
  Status s(tgv_tune_candidates(&device, n, k, m, nullptr, 0, &count));
  if (!s) return s;
  std::vector<tgv_options> list(static_cast<size_t>(count));
  s = Status(tgv_tune_candidates(&device, n, k, m, list.data(), count, &count));
  if (!s) return s;
  for (const tgv_options& o : list) out->push_back(Options::from_c(o));
  return s;
}

// `path` "": the file the library reads (tuning_file_path()).
inline Status write_tuning_file(const std::string& path, const std::string& gpu, int32_t sm_count,
                                const std::vector<tgv_tuning_entry>& entries) {
  return Status(tgv_write_tuning_file(path.c_str(), gpu.c_str(), sm_count, entries.data(),
                                      static_cast<int32_t>(entries.size())));
}

inline std::string tuning_file_path() { return tgv_tuning_file_path(); }

inline std::vector<tgv_tactic_info> list_tactics() {
  std::vector<tgv_tactic_info> out(static_cast<size_t>(tgv_num_tactics()));
  for (size_t i = 0; i < out.size(); ++i) tgv_get_tactic(static_cast<int32_t>(i), &out[i]);
  return out;
}

}  // namespace tgv

// The C ABI shims: every exception stops here and becomes a status plus a
// thread-local message. Each entry point validates, plans, launches; nothing else.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "api/validate.hpp"
#include "common/cuda_check.hpp"
#include "common/error.hpp"
#include "common/strfmt.hpp"
#include "cublas/cublaslt_backend.hpp"
#include "cublas/epilogue_fallback.hpp"
#include "gate/self_check.hpp"
#include "launch/sm100_launch.hpp"
#include "launch/sm90_launch.hpp"
#include "plan/device_info.hpp"
#include "plan/plan.hpp"
#include "plan/tune_candidates.hpp"
#include "plan/tuning.hpp"
#include "tactics/tactics.hpp"
#include "tgv/tgv.h"

namespace {

using namespace tgv::detail;

thread_local std::string t_last_error;

template <class F>
tgv_status guarded(F&& body) {
  try {
    body();
    return TGV_SUCCESS;
  } catch (const Error& e) {
    t_last_error = e.what();
    return e.status();
  } catch (const std::bad_alloc&) {
    t_last_error = "out of host memory";
    return TGV_ERROR_INTERNAL;
  } catch (const std::exception& e) {
    t_last_error = strfmt("internal error: %s", e.what());
    return TGV_ERROR_INTERNAL;
  } catch (...) {
    t_last_error = "internal error: unknown exception";
    return TGV_ERROR_INTERNAL;
  }
}

tgv_options options_or_default(const tgv_options* options) {
  tgv_options o;
  tgv_default_options(&o);
  return options ? *options : o;
}

// TGV_LOG_DISPATCH=1 prints each distinct decision once, to stderr.
void log_dispatch(const GemmDesc& g, const Plan& p) {
  static const bool enabled = [] {
    const char* v = std::getenv("TGV_LOG_DISPATCH");
    return v != nullptr && v[0] != '\0' && v[0] != '0';
  }();
  if (!enabled) return;
  static std::mutex mutex;
  static std::set<std::tuple<int64_t, int64_t, int64_t, int64_t, int, int, int, int>> seen;
  std::lock_guard<std::mutex> lock(mutex);
  if (!seen.emplace(g.m, g.n, g.k, g.l, int(p.backend), p.tactic, p.stages, p.split_k).second) return;
  if (p.backend == TGV_BACKEND_TGV) {
    const Tactic& t = tactic(p.tactic);
    std::fprintf(stderr, "[tgv] m=%lld n=%lld k=%lld l=%lld -> tgv tactic %d (%dx%dx%d, %d stages, split_k %d, pdl %d%s)\n",
                 (long long)g.m, (long long)g.n, (long long)g.k, (long long)g.l, p.tactic, t.cta_m, t.cta_n,
                 t.cta_k, p.stages, p.split_k, int(p.pdl), p.trigger_at_entry ? ", trigger at entry" : "");
  } else {
    std::fprintf(stderr, "[tgv] m=%lld n=%lld k=%lld l=%lld -> cublaslt\n", (long long)g.m, (long long)g.n,
                 (long long)g.k, (long long)g.l);
  }
}

// The plan for a call, with the self-check gate's verdict for the device's
// family. Settled, that is one atomic load. Unknown, the gate is consulted
// (and its probe run) only when the tgv family would serve this call. One
// tuning snapshot serves both plans, whatever a concurrent reload swaps in.
Plan plan_call(const GemmDesc& g, const tgv_options& o, const DeviceInfo& dev) {
  const std::shared_ptr<const TuningTable> tuning = dev.tuning_snapshot();
  const GateVerdict* verdict = settled_verdict(dev);
  if (verdict != nullptr || o.backend == TGV_BACKEND_CUBLAS) return plan(g, o, dev, tuning.get(), verdict);
  static const GateVerdict kIfPassed{GateState::Passed, {}};
  const Plan hoped = plan(g, o, dev, tuning.get(), &kIfPassed);
  if (hoped.backend != TGV_BACKEND_TGV) return hoped;
  return plan(g, o, dev, tuning.get(), &self_check(dev));
}

// The device of a caller-given ordinal, refused unless this process sees it.
const DeviceInfo& info_of_ordinal(int32_t device) {
  int count = 0;
  TGV_CUDA_CHECK(cudaGetDeviceCount(&count));
  if (device < 0 || device >= count)
    throw_invalid(strfmt("device=%d: not a device ordinal; this process sees %d device(s)", device, count));
  return device_info(device);
}

}  // namespace

extern "C" {

void tgv_default_options(tgv_options* options) {
  if (options == nullptr) return;
  options->backend = TGV_BACKEND_AUTO;
  options->tactic = -1;
  options->pdl = 1;
  options->split_k = 0;
  options->stages = 0;
}

void tgv_default_problem(tgv_problem* p, int64_t m, int64_t n, int64_t k, int64_t l) {
  if (p == nullptr) return;
  *p = tgv_problem{};
  p->m = m, p->n = n, p->k = k, p->l = l;
  p->dtype = TGV_DTYPE_BF16;
  p->x_stride_k = 1, p->x_stride_m = k, p->x_stride_l = m * k;
  p->w_stride_k = 1, p->w_stride_n = k, p->w_stride_l = n * k;
  p->out_stride_n = 1, p->out_stride_m = n, p->out_stride_l = m * n;
  p->out_dtype = TGV_DTYPE_BF16;
  p->epilogue = TGV_EPILOGUE_NONE;
  p->residual_stride_n = 1, p->residual_stride_m = n, p->residual_stride_l = m * n;
}

tgv_status tgv_validate(const tgv_problem* problem, const tgv_options* options) {
  return guarded([&] {
    if (problem == nullptr) throw_invalid("problem is NULL");
    validate_options(options_or_default(options), kNumTactics);
    validate_problem(*problem);
  });
}

tgv_status tgv_gemm(const tgv_problem* problem, const tgv_options* options, void* stream) {
  return guarded([&] {
    if (problem == nullptr) throw_invalid("problem is NULL");
    const tgv_options o = options_or_default(options);
    validate_options(o, kNumTactics);
    const GemmDesc g = validate_problem(*problem);
    if (g.empty()) return;  // M, N or L = 0: nothing to compute, nothing to launch
    const DeviceInfo& dev = current_device_info();
    const Plan p = plan_call(g, o, dev);
    log_dispatch(g, p);
    auto s = static_cast<cudaStream_t>(stream);
    if (p.backend == TGV_BACKEND_TGV && tactic(p.tactic).arch == 100)
      launch_sm100(g, p, s);
    else if (p.backend == TGV_BACKEND_TGV)
      launch_sm90(g, p, s);
    else if (!g.plain())
      cublaslt_epilogue_gemm(g, s);  // cuBLASLt, then our epilogue kernel where one is needed
    else
      cublaslt_gemm(g, s);
  });
}

tgv_status tgv_get_plan(const tgv_problem* problem, const tgv_options* options, tgv_plan_info* plan) {
  return guarded([&] {
    if (plan == nullptr) throw_invalid("plan is NULL");
    *plan = tgv_plan_info{TGV_BACKEND_AUTO, -1, 1, 0, 0};
    if (problem == nullptr) throw_invalid("problem is NULL");
    const tgv_options o = options_or_default(options);
    validate_options(o, kNumTactics);
    const GemmDesc g = validate_problem(*problem);
    plan->pdl = o.pdl != 0 ? 1 : 0;
    if (g.empty()) return;
    const Plan p = plan_call(g, o, current_device_info());
    plan->backend = p.backend;
    plan->pdl = p.pdl ? 1 : 0;
    if (p.backend == TGV_BACKEND_TGV) {
      plan->tactic = p.tactic;
      plan->split_k = p.split_k;
      plan->stages = p.stages;
    }
  });
}

tgv_status tgv_self_check(int32_t device, int32_t* passed) {
  return guarded([&] {
    if (passed == nullptr) throw_invalid("passed is NULL");
    *passed = 0;
    const DeviceInfo& dev = info_of_ordinal(device);
    if (std::string reason = family_unavailable_reason(dev); !reason.empty()) throw_unsupported(reason);
    const GateVerdict& verdict = self_check(dev);
    *passed = verdict.state == GateState::Passed ? 1 : 0;
    if (*passed == 0) t_last_error = gate_refusal(dev, verdict);
  });
}

tgv_status tgv_reload_tuning(void) {
  return guarded([] { reload_tuning_of_queried_devices(); });
}

tgv_status tgv_describe_device(int32_t device, tgv_device_desc* desc) {
  return guarded([&] {
    if (desc == nullptr) throw_invalid("desc is NULL");
    *desc = tgv_device_desc{};
    const DeviceInfo& dev = info_of_ordinal(device);
    *desc = tgv_device_desc{dev.sm(), dev.num_sms, dev.smem_optin_bytes};
  });
}

tgv_status tgv_tune_candidates(const tgv_device_desc* device, int64_t n, int64_t k, int64_t m, tgv_options* out,
                               int32_t capacity, int32_t* count) {
  return guarded([&] {
    if (count == nullptr) throw_invalid("count is NULL");
    *count = 0;
    if (device == nullptr) throw_invalid("device is NULL");
    if (capacity < 0) throw_invalid(strfmt("capacity=%d: must be at least 0", capacity));
    if (out == nullptr && capacity > 0) throw_invalid(strfmt("out is NULL with capacity=%d", capacity));
    if (n < 1 || k < 1 || m < 1)
      throw_invalid(strfmt("n=%lld k=%lld m=%lld: each must be at least 1", (long long)n, (long long)k, (long long)m));
    if (device->sm_count < 1 || device->smem_optin_bytes < 0)
      throw_invalid(strfmt("device: sm_count=%d smem_optin_bytes=%lld: a device has at least one SM",
                           device->sm_count, (long long)device->smem_optin_bytes));
    const std::vector<tgv_options> list = tune_candidates(device_from_desc(*device), n, k, m);
    const size_t written = std::min(list.size(), size_t(capacity));
    std::copy(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(written), out);
    *count = static_cast<int32_t>(list.size());
  });
}

tgv_status tgv_write_tuning_file(const char* path, const char* gpu, int32_t sm_count, const tgv_tuning_entry* entries,
                                 int32_t count) {
  return guarded([&] {
    if (gpu == nullptr) throw_invalid("gpu is NULL");
    if (count < 0) throw_invalid(strfmt("count=%d: must be at least 0", count));
    if (entries == nullptr && count > 0) throw_invalid(strfmt("entries is NULL with count=%d", count));
    write_tuning_file(path == nullptr ? "" : path, gpu, sm_count, entries, size_t(count));
  });
}

const char* tgv_tuning_file_path(void) {
  thread_local std::string path;
  path = tuning_file_path();
  return path.c_str();
}

int32_t tgv_num_tactics(void) { return kNumTactics; }

tgv_status tgv_get_tactic(int32_t id, tgv_tactic_info* info) {
  return guarded([&] {
    if (info == nullptr) throw_invalid("info is NULL");
    const Tactic& t = tactic(id);
    *info = tgv_tactic_info{t.id, t.arch, t.cta_m, t.cta_n, t.cta_k, stages_for(t, smem_bytes_of_arch(t.arch)),
                            t.cluster};
  });
}

const char* tgv_last_error(void) { return t_last_error.c_str(); }

const char* tgv_status_name(tgv_status status) {
  switch (status) {
    case TGV_SUCCESS: return "TGV_SUCCESS";
    case TGV_ERROR_INVALID_ARGUMENT: return "TGV_ERROR_INVALID_ARGUMENT";
    case TGV_ERROR_NOT_SUPPORTED: return "TGV_ERROR_NOT_SUPPORTED";
    case TGV_ERROR_CUDA: return "TGV_ERROR_CUDA";
    case TGV_ERROR_CUBLAS: return "TGV_ERROR_CUBLAS";
    case TGV_ERROR_INTERNAL: return "TGV_ERROR_INTERNAL";
  }
  return "TGV_ERROR_UNKNOWN";
}

const char* tgv_version_string(void) {
#define TGV_STR2(x) #x
#define TGV_STR(x) TGV_STR2(x)
  return TGV_STR(TGV_VERSION_MAJOR) "." TGV_STR(TGV_VERSION_MINOR) "." TGV_STR(TGV_VERSION_PATCH);
}

}  // extern "C"

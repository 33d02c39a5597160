#include "measure.hpp"

#include <cstdio>
#include <string>

#include "cuda_check.hpp"
#include "host_overhead.hpp"
#include "reference.hpp"
#include "spacer.hpp"
#include "timing.hpp"

namespace {

// What the dispatcher chose for the call: which kernel a number belongs to.
std::string plan_name(const tgv::Problem& problem, const tgv::Options& options) {
  tgv_plan_info plan{};
  if (!tgv::get_plan(problem, options, &plan)) return "?";
  if (plan.backend != TGV_BACKEND_TGV) return "cublas";
  tgv_tactic_info t{};
  tgv_get_tactic(plan.tactic, &t);
  char text[96];
  std::snprintf(text, sizeof(text), "tgv %d %dx%dx%d split %d stages %d", plan.tactic, t.cta_m, t.cta_n, t.cta_k,
                plan.split_k, plan.stages);
  return text;
}

std::string describe(const tgv::Status& status) {
  return std::string(tgv_status_name(status.code())) + ": " + status.message();
}

std::string describe(const CheckResult& check, int64_t m, int64_t n) {
  char text[256];
  std::snprintf(text, sizeof(text),
                "%lld of %lld elements outside |out - ref| <= %g + %g*|ref|; worst at m=%lld n=%lld: "
                "out %.6g, ref %.6g",
                static_cast<long long>(check.bad), static_cast<long long>(m * n), kAbsTol, kRelTol,
                static_cast<long long>(check.worst_m), static_cast<long long>(check.worst_n), check.worst_out,
                check.worst_ref);
  return text;
}

}  // namespace

Measurement measure(const tgv::Options& options, bool host_overhead, const RotatingBuffers& buffers, int64_t m,
                    int calls, int reps, const std::vector<float>& ref, cudaStream_t stream, const Spacer* spacer) {
  buffers.poison_out(0, m, stream);
  tgv::Status status = tgv::gemm(buffers.problem(0, m), options, stream);
  if (status.code() == TGV_ERROR_NOT_SUPPORTED) return {Outcome::NotSupported, 0, status.message()};
  if (!status) return {Outcome::Error, 0, describe(status)};
  CUDA_CHECK(cudaStreamSynchronize(stream));
  const CheckResult check = check_output(ref, buffers.out(0), m, buffers.n(), stream);
  if (!check.ok()) return {Outcome::Fail, 0, describe(check, m, buffers.n())};

  // One call per set outside capture: the cuBLASLt backend picks and caches its
  // algorithm here, and must not query cuBLASLt while the stream is captured.
  for (int set = 0; set < buffers.sets(); ++set) {
    status = tgv::gemm(buffers.problem(set, m), options, stream);
    if (!status) return {Outcome::Error, 0, "warm-up on set " + std::to_string(set) + ": " + describe(status)};
  }
  CUDA_CHECK(cudaStreamSynchronize(stream));

  const GraphTiming timing = time_graph(stream, calls, reps, [&](int call) {
    const tgv::Status s = tgv::gemm(buffers.problem(call % buffers.sets(), m), options, stream);
    if (s && spacer != nullptr) spacer->launch(stream);
    return s ? std::string() : describe(s);
  });
  if (!timing.error.empty()) return {Outcome::Error, 0, timing.error};
  const double us = timing.median_ms * 1e3 / calls - (spacer != nullptr ? spacer->us_alone() : 0.0);
  Measurement timed{Outcome::Timed, us > 0 ? us : 0.0, ""};
  if (host_overhead) timed.host_us = host_us_per_call(buffers, m, options, stream);
  timed.plan = plan_name(buffers.problem(0, m), options);
  return timed;
}


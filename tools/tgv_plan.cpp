// tgv-plan: the plan tgv-gemm makes, untuned, for a GEMM on a named Hopper GPU,
// without that GPU (or any). It runs the library's own planner on the device
// profile the cost model was fitted for, so a model change can be checked on
// a corpus's shapes, and measured timings of both routes replayed against its
// choices, on a machine with no GPU (scripts/emulate_corpus.py does that).
//
//   tgv-plan --gpu h200|h100 [--epilogue none|silu_mul|residual] [--candidates] [--time CALLS] [NxKxM ...]
//                                            (no shapes: "n k m" lines on stdin)
//
// --candidates adds, under each shape, every SM90 candidate the cost model
// weighed: its predicted time, or why it was pruned.
// --time CALLS adds the host time of validating the problem and planning it
// (auto, untuned), what every eager call pays on this CPU before its launch.
// --epilogue plans every shape as the decoder layer's fused stages call it:
// silu_mul (N the stacked [gate; up] rows, out N/2 wide) or a residual that is
// out itself (the hidden state updated in place).
// One line per shape: n k m, auto's backend, the tgv backend's plan (tactic
// cta_m cta_n cta_k split_k stages; split_k -1 is stream-K), our predicted
// time and cuBLASLt's (us).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "api/validate.hpp"
#include "common/error.hpp"
#include "common/strfmt.hpp"
#include "plan/cost_model.hpp"
#include "plan/device_info.hpp"
#include "plan/plan.hpp"
#include "tactics/tactics.hpp"
#include "tgv/tgv.h"

namespace {

using tgv::detail::DeviceInfo;

// The H200 and the H100 SXM as the library queries them: 132 SMs, 227 KB of
// opt-in shared memory per block, the clusters of each size the H200 holds at
// once (bench/experiments/data/cluster-occupancy-h200.txt; the H100's plans
// emulated with it matched its corpus runs at all 2056 points, perf-notes §35),
// and the peak read bandwidth from the memory clock and bus width.
bool profile(const std::string& gpu, DeviceInfo* d) {
  if (gpu != "h200" && gpu != "h100") return false;
  d->cc_major = 9;
  d->cc_minor = 0;
  d->num_sms = 132;
  d->smem_optin_bytes = 232448;
  d->name = gpu == "h200" ? "NVIDIA H200 (profile)" : "NVIDIA H100 80GB HBM3 (profile)";
  const int32_t clusters[] = {0, 132, 66, 39, 30, 22, 17, 15, 15, 9, 7, 7, 7, 7, 7, 7, 7};
  for (int i = 0; i < 17; ++i) d->max_clusters[i] = clusters[i];
  d->peak_hbm_gbps = gpu == "h200" ? 4814 : 3352;
  return true;
}

// Stands in for device memory: the planner reads only alignments.
void* fake_pointer(uint64_t at) { return reinterpret_cast<void*>(at); }

enum class Epilogue { None, SiluMul, Residual };

bool parse_epilogue(const std::string& name, Epilogue* e) {
  if (name == "none") *e = Epilogue::None;
  else if (name == "silu_mul") *e = Epilogue::SiluMul;
  else if (name == "residual") *e = Epilogue::Residual;
  else return false;
  return true;
}

tgv_problem make_problem(Epilogue epilogue, long long n, long long k, long long m) {
  tgv_problem problem;
  tgv_default_problem(&problem, m, n, k, 1);
  problem.x = fake_pointer(1ull << 32);
  problem.w = fake_pointer(1ull << 40);
  problem.out = fake_pointer(2ull << 40);
  if (epilogue == Epilogue::SiluMul) {
    problem.epilogue = TGV_EPILOGUE_SILU_MUL;
    problem.out_stride_m = n / 2;
    problem.out_stride_l = m * (n / 2);
  } else if (epilogue == Epilogue::Residual) {
    problem.residual = problem.out;
    problem.residual_stride_l = problem.out_stride_l;
    problem.residual_stride_m = problem.out_stride_m;
    problem.residual_stride_n = problem.out_stride_n;
  }
  return problem;
}

// The host cost an eager call pays before its launch: the problem's validation and
// auto's plan, untuned (the planner runs on every call), median of 9 rounds.
double plan_us(const DeviceInfo& dev, const tgv_problem& problem, int calls) {
  tgv_options o;
  tgv_default_options(&o);
  o.backend = TGV_BACKEND_AUTO;
  std::vector<double> rounds;
  volatile int32_t sink = 0;  // keeps the plans from being optimized away
  for (int r = 0; r < 9; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) sink = tgv::detail::plan(tgv::detail::validate_problem(problem), o, dev).tactic;
    rounds.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() /
                     calls);
  }
  std::sort(rounds.begin(), rounds.end());
  (void)sink;
  return rounds[4];
}

void print_plan(const DeviceInfo& dev, Epilogue epilogue, bool candidates, int time_calls, long long n, long long k,
                long long m) {
  const tgv_problem problem = make_problem(epilogue, n, k, m);
  const tgv::detail::GemmDesc g = tgv::detail::validate_problem(problem);
  tgv_options o;
  tgv_default_options(&o);
  o.backend = TGV_BACKEND_AUTO;
  const tgv::detail::Plan p = tgv::detail::plan(g, o, dev);
  o.backend = TGV_BACKEND_TGV;
  const tgv::detail::Plan t = tgv::detail::plan(g, o, dev);
  const tgv::detail::Tactic& tac = tgv::detail::tactic(t.tactic);
  const double ours = tgv::detail::predict_sm90_us(g, tac, t.split_k, dev);
  std::printf("%lld %lld %lld %s %d %d %d %d %d %d %.3f %.3f\n", n, k, m,
              p.backend == TGV_BACKEND_TGV ? "tgv" : "cublas", t.tactic, tac.cta_m, tac.cta_n, tac.cta_k,
              t.split_k, t.stages, ours,
              tgv::detail::predict_cublas_us(g, dev));
  if (time_calls > 0)
    std::printf("#   host: validate + plan %.2f us per call (median of 9 rounds of %d)\n",
                plan_us(dev, problem, time_calls), time_calls);
  if (!candidates) return;
  for (const tgv::detail::Sm90Candidate& c : tgv::detail::sm90_candidates(g, dev)) {
    const tgv::detail::Tactic& ct = tgv::detail::tactic(c.tactic);
    std::printf("#   %dx%dx%d split %d: %s\n", ct.cta_m, ct.cta_n, ct.cta_k, c.split_k,
                c.pruned.empty() ? tgv::detail::strfmt("%.3f us", c.us).c_str() : c.pruned.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  DeviceInfo dev;
  std::string gpu;
  Epilogue epilogue = Epilogue::None;
  bool candidates = false;
  int time_calls = 0;
  std::vector<std::string> shapes;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--gpu") == 0 && i + 1 < argc) {
      gpu = argv[++i];
    } else if (std::strcmp(argv[i], "--epilogue") == 0 && i + 1 < argc) {
      if (!parse_epilogue(argv[++i], &epilogue)) {
        std::fprintf(stderr, "tgv-plan: --epilogue '%s': expected none, silu_mul or residual\n", argv[i]);
        return 2;
      }
    } else if (std::strcmp(argv[i], "--candidates") == 0) {
      candidates = true;
    } else if (std::strcmp(argv[i], "--time") == 0 && i + 1 < argc) {
      time_calls = std::atoi(argv[++i]);
      if (time_calls < 1) {
        std::fprintf(stderr, "tgv-plan: --time '%s': expected a positive count of calls\n", argv[i]);
        return 2;
      }
    } else if (std::strcmp(argv[i], "--help") == 0) {
      std::printf("usage: tgv-plan --gpu h200|h100 [--epilogue none|silu_mul|residual] [--candidates] [--time CALLS] "
                  "[NxKxM ...]  (no shapes: "
                  "'n k m' lines on stdin)\n");
      return 0;
    } else {
      shapes.push_back(argv[i]);
    }
  }
  if (!profile(gpu, &dev)) {
    std::fprintf(stderr, "tgv-plan: --gpu '%s': expected h200 or h100\n", gpu.c_str());
    return 2;
  }
  std::printf("# tgv-plan --gpu %s: n k m auto tactic cta_m cta_n cta_k split_k stages tgv_us cublas_us\n",
              gpu.c_str());
  try {
    if (!shapes.empty()) {
      for (const std::string& s : shapes) {
        long long n = 0, k = 0, m = 0;
        char tail = 0;
        if (std::sscanf(s.c_str(), "%lldx%lldx%lld%c", &n, &k, &m, &tail) != 3) {
          std::fprintf(stderr, "tgv-plan: shape '%s': expected NxKxM, e.g. 4096x4096x16\n", s.c_str());
          return 2;
        }
        print_plan(dev, epilogue, candidates, time_calls, n, k, m);
      }
      return 0;
    }
    long long n, k, m;
    while (std::cin >> n >> k >> m) print_plan(dev, epilogue, candidates, time_calls, n, k, m);
  } catch (const tgv::detail::Error& e) {
    std::fprintf(stderr, "tgv-plan: %s\n", e.what());
    return 2;
  }
  return 0;
}

// layer-trace (perf-notes §57): the Llama-3.1-8B layer's gate_up -> down_proj
// boundary, CTA by CTA. §55 found every gate_up plan that runs faster alone
// (128-row tiles, the hybrid, a persistent grid) slower inside the layer; this
// shows what the down_proj that follows does with each: when its CTAs enter,
// on which SMs, how long their first loads take, when the pair ends.
//
//   tgv-layer-trace [M [layers [spacer]]]      (defaults 1, 8, 0)
//
// Replays `layers` pairs (gate_up 28672 x 4096 with silu_mul into act, then
// down_proj 4096 x 14336 + residual in place on the hidden state) from one CUDA
// graph over rotating weight copies, PDL on. Each GEMM is planned by the library
// (untuned; the TGV_EXP_* switches apply: TGV_EXP_SK_GATED=1 TGV_EXP_SK_HYBRID=3
// makes the gate_up a persistent grid) and prepared by its launcher
// (prepare_sm90), then launched through an instance with trace hooks: the 64x8x128
// K-major tile, the one both plans take at M <= 8 (anything else is refused).
// spacer 1: a one-thread kernel before each gate_up, launched without PDL, as
// the norm between o_proj and gate_up in a model. Outputs are not checked (the
// GPU suite checks these plans); TRACE_CSV=path writes every CTA's record of
// the last replay.
// Built by hand (bench/experiments/layer-trace.sh) against the static library.
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "api/validate.hpp"
#include "common/cuda_check.hpp"
#include "common/cuda_context.hpp"
#include "kernels/sm90/tgv_gemm_sm90.cuh"
#include "launch/kernel_launch.hpp"
#include "launch/sm90_launch.hpp"
#include "plan/device_info.hpp"
#include "plan/plan.hpp"
#include "tactics/tactics.hpp"
#include "trace_hooks.cuh"

namespace {

using namespace tgv;
using namespace tgv::trace;
using T = kernels::sm90::Traits<64, 8, 128, cute::GMMA::Major::K, cute::GMMA::Major::K>;

constexpr int64_t kHidden = 4096, kInter = 14336;

// The library's default problem (row-major, bf16) over these buffers; a gated
// epilogue's out is N / 2 wide, a residual is out's layout.
tgv_problem problem(int64_t m, int64_t n, int64_t k, const void* x, const void* w, void* out, int32_t epilogue,
                    const void* residual) {
  tgv_problem p;
  tgv_default_problem(&p, m, n, k, 1);
  p.x = x, p.w = w, p.out = out;
  p.epilogue = epilogue;
  if (epilogue != TGV_EPILOGUE_NONE) p.out_stride_m = n / 2, p.out_stride_l = m * (n / 2);
  p.residual = residual;
  return p;
}

struct Gemm {
  detail::Sm90Launch launch;
  int ctas;
  std::string plan;
};

Gemm prepare(const tgv_problem& prob, cudaStream_t stream) {
  const detail::GemmDesc g = detail::validate_problem(prob);
  tgv_options o;
  tgv_default_options(&o);
  o.backend = TGV_BACKEND_TGV;
  o.pdl = 1;
  const detail::Plan plan = detail::plan(g, o, detail::current_device_info());
  const detail::Tactic& t = detail::tactic(plan.tactic);
  char desc[160];
  std::snprintf(desc, sizeof desc, "%dx%dx%d split %d (stream-K CTAs %d, whole tiles %lld), %d stages, w_lead %d",
                t.cta_m, t.cta_n, t.cta_k, plan.split_k, plan.stream_k_ctas, (long long)plan.stream_k_whole_tiles,
                plan.stages, plan.w_lead);
  if (t.arch != 90 || t.cta_m != T::kCtaM || t.cta_n != T::kCtaN || t.cta_k != T::kCtaK) {
    std::fprintf(stderr, "layer-trace: the plan is %s; only the 64x8x128 tile is instrumented\n", desc);
    std::exit(2);
  }
  Gemm gemm{detail::prepare_sm90(g, plan, stream), 0, desc};
  gemm.ctas = int(gemm.launch.grid.x * gemm.launch.grid.y * gemm.launch.grid.z);
  return gemm;
}

}  // namespace

int main(int argc, char** argv) {
  const int m = argc > 1 ? std::atoi(argv[1]) : 1;
  const int layers = argc > 2 ? std::atoi(argv[2]) : 8;
  const bool spacer = argc > 3 && std::atoi(argv[3]) != 0;
  if (m < 1 || m > T::kCtaN || layers < 3) {
    std::fprintf(stderr, "usage: tgv-layer-trace [M (1..%d) [layers (>= 3) [spacer]]]\n", T::kCtaN);
    return 2;
  }
  TGV_CUDA_CHECK(cudaSetDevice(0));
  detail::bind_primary_context(0);
  cudaStream_t stream;
  TGV_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // Two copies of the layer's two weights (704 MB): every replay streams them cold.
  constexpr int kCopies = 2;
  const size_t gate_elems = size_t(2 * kInter) * kHidden, down_elems = size_t(kHidden) * kInter;
  __nv_bfloat16 *w_gate, *w_down, *hidden, *act;
  TGV_CUDA_CHECK(cudaMalloc(&w_gate, gate_elems * kCopies * 2));
  TGV_CUDA_CHECK(cudaMalloc(&w_down, down_elems * kCopies * 2));
  TGV_CUDA_CHECK(cudaMalloc(&hidden, size_t(m) * kHidden * 2));
  TGV_CUDA_CHECK(cudaMalloc(&act, size_t(m) * kInter * 2));
  fill_bf16<<<1024, 256>>>(w_gate, gate_elems * kCopies, 1, 1e-4f);
  fill_bf16<<<1024, 256>>>(w_down, down_elems * kCopies, 2, 1e-4f);
  fill_bf16<<<64, 256>>>(hidden, size_t(m) * kHidden, 3, 1e-4f);
  TGV_CUDA_CHECK(cudaGetLastError());

  std::vector<Gemm> gate, down;
  for (int c = 0; c < kCopies; ++c) {
    gate.push_back(prepare(problem(m, 2 * kInter, kHidden, hidden, w_gate + gate_elems * c, act,
                                   TGV_EPILOGUE_SILU_MUL, nullptr), stream));
    down.push_back(prepare(problem(m, kHidden, kInter, act, w_down + down_elems * c, hidden, TGV_EPILOGUE_NONE,
                                   hidden), stream));
  }
  const int gate_ctas = gate[0].ctas, down_ctas = down[0].ctas;
  std::printf("# layer-trace | M %d | %d layers | spacer %d\n# gate_up 28672x4096 silu_mul: %s, %d CTAs\n"
              "# down 4096x14336 + residual: %s, %d CTAs\n",
              m, layers, int(spacer), gate[0].plan.c_str(), gate_ctas, down[0].plan.c_str(), down_ctas);

  // GEMM 2i is layer i's gate_up, 2i + 1 its down_proj.
  std::vector<size_t> offset(2 * layers + 1, 0);
  for (int i = 0; i < 2 * layers; ++i) offset[i + 1] = offset[i] + size_t(i % 2 ? down_ctas : gate_ctas) * kTraceSlots;
  uint64_t* trace;
  TGV_CUDA_CHECK(cudaMalloc(&trace, offset.back() * 8));
  int* counter;
  TGV_CUDA_CHECK(cudaMalloc(&counter, sizeof(int)));

  auto kernel = kernels::sm90::tgv_gemm_sm90<T, TraceHooks>;
  TGV_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(detail::kSm90SmemBytes)));
  auto launch = [&](const detail::Sm90Launch& l, uint64_t* rec) {
    detail::launch_kernel(kernel, l.grid, dim3(T::kThreads), size_t(l.smem_bytes), stream, l.pdl,
                          unsigned(l.params.split_k), l.tmap_w, l.tmap_x, l.params, TraceHooks{rec, true});
  };
  // One graph call is a whole layer: its spacer, gate_up and down_proj.
  const std::vector<double> per_layer = replay_us(stream, layers, [&](int i) {
    if (spacer) spacer_kernel<<<1, 1, 0, stream>>>(counter);
    launch(gate[i % kCopies].launch, trace + offset[2 * i]);
    launch(down[i % kCopies].launch, trace + offset[2 * i + 1]);
  });
  std::vector<uint64_t> h(offset.back());
  TGV_CUDA_CHECK(cudaMemcpy(h.data(), trace, h.size() * 8, cudaMemcpyDeviceToHost));
  auto rec = [&](int gemm, int cta) { return &h[offset[gemm] + size_t(cta) * kTraceSlots]; };
  auto ctas_of = [&](int gemm) { return gemm % 2 ? down_ctas : gate_ctas; };

  // clock64 ticks per ns, from every CTA's own entry -> exit.
  std::vector<double> rates;
  for (int i = 0; i < 2 * layers; ++i)
    for (int c = 0; c < ctas_of(i); ++c) {
      const uint64_t* r = rec(i, c);
      if (r[kTraceExitNs] > r[kTraceEntryNs] + 2000)
        rates.push_back(double(r[kTraceExitClk] - r[kTraceEntryClk]) / double(r[kTraceExitNs] - r[kTraceEntryNs]));
    }
  const double ghz = median(rates);
  auto first_full_ns = [&](const uint64_t* r) {
    return double(r[kTraceEntryNs]) + double(int64_t(r[kTraceFirstFullClk] - r[kTraceEntryClk])) / ghz;
  };
  auto first_entry = [&](int gemm) {
    uint64_t t = ~0ull;
    for (int c = 0; c < ctas_of(gemm); ++c) t = std::min(t, rec(gemm, c)[kTraceEntryNs]);
    return double(t);
  };
  auto last_exit = [&](int gemm) {
    uint64_t t = 0;
    for (int c = 0; c < ctas_of(gemm); ++c) t = std::max(t, rec(gemm, c)[kTraceExitNs]);
    return double(t);
  };

  std::printf("graph replay: %.2f us per layer (gate_up + down, median of 7)%s; SM clock %.2f GHz\n",
              median(per_layer), spacer ? ", a spacer before each gate_up" : "", ghz);
  std::printf("layer  gate_span  down_span  down_1st_entry  down_before_gate_end  down_1st_load(before/after)  "
              "down_end_after_gate_end  layer_us  (us; times from the gate_up's last exit)\n");
  std::vector<double> cols[8];
  for (int i = 1; i + 1 < layers; ++i) {
    const int g = 2 * i, d = 2 * i + 1;
    const double g0 = first_entry(g), g1 = last_exit(g), d0 = first_entry(d), d1 = last_exit(d);
    int before = 0;
    std::vector<double> lat_before, lat_after;
    for (int c = 0; c < down_ctas; ++c) {
      const uint64_t* r = rec(d, c);
      const double lat = (first_full_ns(r) - double(r[kTraceEntryNs])) / 1e3;
      if (double(r[kTraceEntryNs]) < g1) ++before, lat_before.push_back(lat);
      else lat_after.push_back(lat);
    }
    const double layer_us = (first_entry(g + 2) - g0) / 1e3;
    const double v[8] = {(g1 - g0) / 1e3, (d1 - d0) / 1e3, (d0 - g1) / 1e3, double(before),
                         median(lat_before), median(lat_after), (d1 - g1) / 1e3, layer_us};
    for (int j = 0; j < 8; ++j) cols[j].push_back(v[j]);
    std::printf("%5d  %9.2f  %9.2f  %14.2f  %20d  %12.2f / %-12.2f  %23.2f  %8.2f\n", i, v[0], v[1], v[2], before, v[4],
                v[5], v[6], v[7]);
  }
  std::printf("median %9.2f  %9.2f  %14.2f  %20.0f  %12.2f / %-12.2f  %23.2f  %8.2f\n", median(cols[0]),
              median(cols[1]), median(cols[2]), median(cols[3]), median(cols[4]), median(cols[5]), median(cols[6]),
              median(cols[7]));
  if (const char* path = std::getenv("TRACE_CSV")) {
    if (FILE* f = std::fopen(path, "w")) {
      std::fprintf(f, "gemm,kind,cta,smid,entry_ns,first_full_ns,exit_ns\n");
      for (int i = 0; i < 2 * layers; ++i)
        for (int c = 0; c < ctas_of(i); ++c) {
          const uint64_t* r = rec(i, c);
          std::fprintf(f, "%d,%s,%d,%llu,%llu,%.0f,%llu\n", i, i % 2 ? "down" : "gate_up", c,
                       (unsigned long long)r[kTraceSmid], (unsigned long long)r[kTraceEntryNs], first_full_ns(r),
                       (unsigned long long)r[kTraceExitNs]);
        }
      std::fclose(f);
    }
  }
  return 0;
}

// perf-notes §10: where the time of a GEMM goes beyond the weight stream.
//
// Replays `count` back-to-back GEMMs of one SM90 instance (64x8x128, K-major
// x and W: the ladder's tile for M <= 8 on mid-size weights) from one CUDA
// graph over rotating cold weight copies, PDL on or off, with the kernel's
// protocol points recorded (TraceHooks below), and prints per
// kernel: its span on the GPU, the gap to the next kernel, and per CTA the
// launch skew, the first load's latency, the stream, the epilogue.
//
//   tgv-trace N K M split_k stages pdl [count [hints [spacer [lead [k_groups [foreign]]]]]]
//   hints 1 (default): W evict-first, x evict-last, as the library; 0: no hints
//   spacer 1: a one-thread kernel after every GEMM, launched without PDL, as a
//   GEMM sits between a norm and attention inside a model (perf-notes §18); the
//   gap to the next GEMM then includes it (its time alone is printed)
//   lead N: Params::w_lead (W stages in flight once x loads; 0, the default:
//   the whole ring), as the library sets it from the grid (perf-notes §20)
//   foreign 1: each timed replay right after an untimed replay of another graph
//   (`count` full-grid streaming reads of a buffer of their own), as the corpus
//   bench interleaves implementations (perf-notes §48); per kernel the SMs its
//   CTAs ran on are summarized (distinct SMs and TPCs, SMs shared with the
//   previous kernel), and TRACE_CSV=path writes every CTA's (kernel, cta, smid,
//   entry ns, exit ns) of the last replay; TRACE_EARLY_TRIGGER=1 sets
//   Params::trigger_at_entry (perf-notes §58: the successor launches at each CTA's
//   entry instead of after its last W load), TRACE_PACE_WAITED=1 Params::pace_waited
//
// The variants of perf-notes §10 (launch_dependents at entry; an L2 prefetch
// of each CTA's whole W slice) were kernel edits at commit 5855d2c, since
// removed: both were slower.
//
// The kernel reports its protocol points to a Hooks type (src/kernels/sm90/
// hooks.cuh); the library's does nothing, TraceHooks below records them.
// Built by hand (bench/experiments/trace.sh), never by CMake.

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "kernels/sm90/tgv_gemm_sm90.cuh"
#include "common/cuda_check.hpp"
#include "launch/kernel_launch.hpp"
#include "common/cuda_context.hpp"
#include "launch/tensor_map.hpp"
#include "trace_hooks.cuh"

namespace {

using namespace tgv;
// The tile's weight rows and K columns: 64 x 128 unless built with -DTRACE_CTA_M / -DTRACE_CTA_K.
#ifndef TRACE_CTA_M
#define TRACE_CTA_M 64
#endif
#ifndef TRACE_CTA_K
#define TRACE_CTA_K 128
#endif
using T = kernels::sm90::Traits<TRACE_CTA_M, 8, TRACE_CTA_K, cute::GMMA::Major::K, cute::GMMA::Major::K>;

using trace::TraceHooks;
using namespace trace;  // the record's slots

// The foreign graph's kernel: every CTA streams its share of `words` and keeps a
// sum no one reads (written only if impossible), as a full-grid GEMM would load,
// leaving L2 full of evict-normal lines (ours stream W evict-first: perf-notes §48
// asks whether such lines make our stream slower until they leave).
__global__ void foreign_read(const uint4* p, size_t words, int* sink) {
  uint32_t acc = 0;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < words; i += size_t(gridDim.x) * blockDim.x) {
    const uint4 v = p[i];  // the default L2 policy (evict-normal), as cuBLAS's and torch's loads
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) *sink = int(acc);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr,
                 "usage: tgv-trace N K M split_k stages pdl [count [hints [spacer [lead [k_groups [foreign]]]]]]\n");
    return 2;
  }
  const int n = std::atoi(argv[1]), k = std::atoi(argv[2]), m = std::atoi(argv[3]);
  const int split = std::atoi(argv[4]), stages = std::atoi(argv[5]);
  const bool pdl = std::atoi(argv[6]) != 0;
  const int count = argc > 7 ? std::atoi(argv[7]) : 64;
  const bool hints = argc > 8 ? std::atoi(argv[8]) != 0 : true;
  const bool spacer = argc > 9 && std::atoi(argv[9]) != 0;
  const int lead = argc > 10 ? std::atoi(argv[10]) : 0;
  const int k_groups = argc > 11 ? std::atoi(argv[11]) : 2;
  const bool foreign = argc > 12 && std::atoi(argv[12]) != 0;
  if (m > T::kCtaN || k % TRACE_CTA_K != 0 || stages < 2 || stages > detail::kMaxStages) {
    std::fprintf(stderr, "need M <= %d, K %% %d == 0, stages in [2, %d]\n", T::kCtaN, T::kCtaK, detail::kMaxStages);
    return 2;
  }
  TGV_CUDA_CHECK(cudaSetDevice(0));
  detail::bind_primary_context(0);

  const size_t w_elems = size_t(n) * k;
  const int copies = int(std::max<size_t>(2, (size_t(512) << 20) / (w_elems * 2) + 1));
  __nv_bfloat16 *w, *x, *out;
  TGV_CUDA_CHECK(cudaMalloc(&w, w_elems * copies * 2));
  TGV_CUDA_CHECK(cudaMalloc(&x, size_t(m) * k * 2));
  TGV_CUDA_CHECK(cudaMalloc(&out, size_t(m) * n * 2));
  fill_bf16<<<1024, 256>>>(w, w_elems * copies, 1, 1e-3f);
  fill_bf16<<<64, 256>>>(x, size_t(m) * k, 2, 1e-3f);
  TGV_CUDA_CHECK(cudaGetLastError());

  const int fold = TRACE_CTA_K / 64;  // K % cta_k == 0: one box per stage
  std::vector<CUtensorMap> maps_w(copies);
  for (int c = 0; c < copies; ++c) {
    detail::Operand o{w + w_elems * c, detail::Major::K, k, 0};
    maps_w[c] = detail::make_map("w", o, n, k, 1, T::kCtaM, fold);
  }
  detail::Operand ox{x, detail::Major::K, k, 0};
  const CUtensorMap map_x = detail::make_map("x", ox, m, k, 1, T::kCtaN, fold);

  const dim3 grid((n + T::kCtaM - 1) / T::kCtaM * split, 1, 1);
  const int ctas = int(grid.x);
  uint64_t* trace;
  const size_t trace_words = size_t(count) * ctas * kTraceSlots;
  TGV_CUDA_CHECK(cudaMalloc(&trace, trace_words * 8));

  kernels::sm90::Params p{};
  p.out = out;
  p.bias = nullptr;
  p.m = m;
  p.n = n;
  p.num_k_blocks = k / TRACE_CTA_K;
  p.stages = stages;
  p.split_k = split;
  p.w_lead = lead;
  p.pace_ctas = 1 << 30;  // lead applies to every CTA, as before the library paced only the first wave
  p.k_groups = k_groups;  // 2: wherever the tile has them (the library's launcher: small grids only)
  p.w_folded = 1;
  p.x_folded = 1;
  p.out_row_major = 1;
  p.out_vectorized = n % 8 == 0;
  p.out_ld = n;
  p.out_batch_stride = 0;
  p.out_cols = n;  // bf16 out, no epilogue (the other epilogue fields are zero)
  const char* early = std::getenv("TRACE_EARLY_TRIGGER");
  p.trigger_at_entry = early != nullptr && early[0] == '1';
  const char* waited = std::getenv("TRACE_PACE_WAITED");  // Params::pace_waited (§58)
  p.pace_waited = waited != nullptr && waited[0] == '1';

  auto kernel = kernels::sm90::tgv_gemm_sm90<T, TraceHooks>;
  const int smem = int(detail::kSmemReserveBytes) + (T::kCtaM + T::kCtaN) * T::kCtaK * 2 * stages;
  TGV_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  cudaStream_t stream;
  TGV_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  int* counter;
  TGV_CUDA_CHECK(cudaMalloc(&counter, sizeof(int)));
  // The foreign graph: `count` full-grid reads, 8 MB each, of a 256 MB buffer (cold in L2).
  cudaGraphExec_t foreign_exec = nullptr;
  if (foreign) {
    const size_t bytes = size_t(256) << 20, chunk_words = (size_t(8) << 20) / 16;
    uint4* buffer;
    TGV_CUDA_CHECK(cudaMalloc(&buffer, bytes));
    TGV_CUDA_CHECK(cudaMemset(buffer, 1, bytes));
    int sms = 0;
    TGV_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    cudaGraph_t graph;
    TGV_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < count; ++i)
      foreign_read<<<sms, 512, 0, stream>>>(buffer + (size_t(i) * chunk_words) % (bytes / 16 - chunk_words + 1),
                                            chunk_words, counter);
    TGV_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
    TGV_CUDA_CHECK(cudaGraphInstantiate(&foreign_exec, graph, 0));
  }
  // The median us per iteration of `count` iterations of enqueue() in one graph (7 replays,
  // each after an untimed replay of the foreign graph when there is one).
  auto time_graph = [&](auto enqueue) { return replay_us(stream, count, enqueue, foreign_exec); };
  const double spacer_us = spacer ? median(time_graph([&](int) { spacer_kernel<<<1, 1, 0, stream>>>(counter); }))
                                  : 0.0;
  const std::vector<double> per_gemm = time_graph([&](int i) {
    const TraceHooks hooks{trace + size_t(i) * ctas * kTraceSlots, hints};
    detail::launch_kernel(kernel, grid, dim3(T::kThreads), size_t(smem), stream, pdl, unsigned(split),
                          maps_w[i % copies], map_x, p, hooks);
    if (spacer) spacer_kernel<<<1, 1, 0, stream>>>(counter);
  });
  std::vector<uint64_t> h(trace_words);
  TGV_CUDA_CHECK(cudaMemcpy(h.data(), trace, trace_words * 8, cudaMemcpyDeviceToHost));

  // clock64 ticks per ns, from each CTA's own entry -> exit.
  std::vector<double> rates;
  auto rec = [&](int i, int c) { return &h[(size_t(i) * ctas + c) * kTraceSlots]; };
  for (int i = 0; i < count; ++i)
    for (int c = 0; c < ctas; ++c) {
      const uint64_t* r = rec(i, c);
      if (r[kTraceExitNs] > r[kTraceEntryNs] + 2000)
        rates.push_back(double(r[kTraceExitClk] - r[kTraceEntryClk]) /
                        double(r[kTraceExitNs] - r[kTraceEntryNs]));
    }
  const double ghz = median(rates);
  std::printf("N=%d K=%d M=%d split_k=%d stages=%d pdl=%d hints=%d spacer=%d lead=%d foreign=%d: %d CTAs, %d GEMMs per "
              "graph, %d weight copies\n",
              n, k, m, split, stages, int(pdl), int(hints), int(spacer), lead, int(foreign), ctas, count, copies);
  std::printf("graph replay: %.2f us per GEMM (median of 7)%s; W %.1f MB; SM clock %.2f GHz (clock64/globaltimer)\n",
              median(per_gemm) - spacer_us, spacer ? ", a spacer after each, its time alone subtracted" : "",
              w_elems * 2 / 1e6, ghz);
  if (spacer) std::printf("spacer kernel alone: %.2f us\n", spacer_us);
  std::printf("kernel  span_us  gap_to_next_us  skew_med  skew_max  |  per CTA, median (max) us: entry->1st issue  "
              "1st issue->1st full  1st->last full  last full->exit  entry->last issue\n");
  std::vector<double> spans, gaps, skews, lat, stream_us, epi, trig;
  for (int i = 0; i < count; ++i) {
    uint64_t start = ~0ull, end = 0;
    for (int c = 0; c < ctas; ++c) {
      start = std::min(start, rec(i, c)[kTraceEntryNs]);
      end = std::max(end, rec(i, c)[kTraceExitNs]);
    }
    uint64_t next_start = ~0ull;
    if (i + 1 < count)
      for (int c = 0; c < ctas; ++c) next_start = std::min(next_start, rec(i + 1, c)[kTraceEntryNs]);
    std::vector<double> sk, a, b, s, e, t;
    for (int c = 0; c < ctas; ++c) {
      const uint64_t* r = rec(i, c);
      sk.push_back((r[kTraceEntryNs] - start) / 1e3);
      a.push_back((r[kTraceFirstIssueClk] - r[kTraceEntryClk]) / ghz / 1e3);
      b.push_back(double(int64_t(r[kTraceFirstFullClk] - r[kTraceFirstIssueClk])) / ghz /
                  1e3);
      s.push_back((r[kTraceLastFullClk] - r[kTraceFirstFullClk]) / ghz / 1e3);
      e.push_back(double(int64_t(r[kTraceExitClk] - r[kTraceLastFullClk])) / ghz / 1e3);
      t.push_back((r[kTraceLastIssueClk] - r[kTraceEntryClk]) / ghz / 1e3);
    }
    const double span = (end - start) / 1e3;
    const double gap = i + 1 < count ? (double(int64_t(next_start - end))) / 1e3 : 0.0;
    if (i >= 2 && i + 1 < count) {
      spans.push_back(span);
      gaps.push_back(gap);
      skews.push_back(median(sk));
      lat.push_back(median(b));
      stream_us.push_back(median(s));
      epi.push_back(median(e));
      trig.push_back(median(t));
    }
    if (i < 2 || (i >= count / 2 && i < count / 2 + 4))
      std::printf("%6d  %7.2f  %14.2f  %8.2f  %8.2f  |  %.2f (%.2f)  %.2f (%.2f)  %.2f (%.2f)  %.2f (%.2f)  %.2f (%.2f)\n",
                  i, span, gap, median(sk), *std::max_element(sk.begin(), sk.end()), median(a),
                  *std::max_element(a.begin(), a.end()), median(b), *std::max_element(b.begin(), b.end()), median(s),
                  *std::max_element(s.begin(), s.end()), median(e), *std::max_element(e.begin(), e.end()), median(t),
                  *std::max_element(t.begin(), t.end()));
  }
  // Where each kernel's CTAs ran: distinct SMs and TPCs (SM ids 2t, 2t + 1), and how many
  // of its SMs the previous kernel used too (with PDL a kernel's CTAs land on the SMs its
  // predecessor leaves free; after a full drain, wherever the scheduler starts).
  std::vector<double> distinct_sms, distinct_tpcs, shared_sms;
  std::vector<uint8_t> prev_used;
  for (int i = 0; i < count; ++i) {
    std::vector<uint8_t> used(1024, 0), tpc(512, 0);
    for (int c = 0; c < ctas; ++c) {
      const uint64_t sm = rec(i, c)[kTraceSmid] & 1023;
      used[sm] = 1;
      tpc[sm / 2] = 1;
    }
    int nsm = 0, ntpc = 0, shared = 0;
    for (size_t sm = 0; sm < used.size(); ++sm) {
      nsm += used[sm];
      shared += !prev_used.empty() && used[sm] && prev_used[sm];
    }
    for (uint8_t t : tpc) ntpc += t;
    if (i >= 1) {
      distinct_sms.push_back(nsm);
      distinct_tpcs.push_back(ntpc);
      shared_sms.push_back(shared);
    }
    if (i < 3 || i == count / 2) std::printf("kernel %d: %d SMs, %d TPCs, %d SMs shared with kernel %d\n", i, nsm, ntpc,
                                             shared, i - 1);
    prev_used = used;
  }
  std::printf("median over kernels 1..%d: %.0f SMs, %.0f TPCs, %.0f SMs shared with the previous kernel\n", count - 1,
              median(distinct_sms), median(distinct_tpcs), median(shared_sms));
  if (const char* path = std::getenv("TRACE_CSV")) {
    if (FILE* f = std::fopen(path, "w")) {
      std::fprintf(f, "kernel,cta,smid,entry_ns,exit_ns\n");
      for (int i = 0; i < count; ++i)
        for (int c = 0; c < ctas; ++c)
          std::fprintf(f, "%d,%d,%llu,%llu,%llu\n", i, c, (unsigned long long)rec(i, c)[kTraceSmid],
                       (unsigned long long)rec(i, c)[kTraceEntryNs], (unsigned long long)rec(i, c)[kTraceExitNs]);
      std::fclose(f);
    }
  }
  std::printf("median over kernels 2..%d: span %.2f us, gap %.2f us, skew %.2f, 1st-load latency %.2f, stream %.2f, "
              "epilogue %.2f, trigger at %.2f\n",
              count - 2, median(spans), median(gaps), median(skews), median(lat), median(stream_us), median(epi),
              median(trig));
  return 0;
}

// --mode chain: decoder layers as an engine runs them, over distinct cold weights
// per layer.
//   fused (tgv, auto; PDL):  qkv -> [attention stand-in] -> o + residual (in place on
//                            the hidden state) -> gate_up with silu_mul -> down + residual
//   unfused (cuBLASLt):      the same GEMMs, plus the separate kernels torch launches:
//                            a residual add after o and after down, SiLU-mul after gate_up
// The fused side saves three launches and the round trips of two [M, N] outputs and
// of the [M, 2I] gate_up output; PDL lets each GEMM's weights stream in while the
// kernel before it drains.
#include "chain.hpp"

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bandwidth.hpp"
#include "cuda_check.hpp"
#include "fill.hpp"
#include "pdl_launch.hpp"
#include "reference.hpp"
#include "shapes.hpp"
#include "timing.hpp"

namespace {

// A decoder layer's four projections, as (N, K) of each weight, and the widths
// that connect them.
struct LayerShape {
  std::string model;
  int64_t hidden, qkv_n, attn_k, inter;  // o: hidden x attn_k; gate_up: 2*inter x hidden; down: hidden x inter
  int64_t weight_bytes() const { return 2 * (qkv_n * hidden + hidden * attn_k + 3 * inter * hidden); }
  int64_t widest() const { return std::max(std::max(qkv_n, 2 * inter), hidden); }  // columns of wide and narrow
};

// The chained models, as named in the default shape set.
const char* const kChainModels[] = {"llama3.1-8b", "llama3.1-70b-tp8"};

// A model's layer from its four projections in the default shape set (shapes.cpp,
// the one list of model dimensions).
LayerShape layer_of(const std::string& model) {
  LayerShape layer{model, 0, 0, 0, 0};
  for (const Shape& s : default_shapes()) {
    if (s.model != model) continue;
    if (s.label == "qkv") layer.qkv_n = s.n, layer.hidden = s.k;
    if (s.label == "o") layer.attn_k = s.k;
    if (s.label == "down") layer.inter = s.k;
  }
  return layer;
}

enum Elementwise : int {
  kCopy = 0,     // out[m, j] = in[m, j] for the first `cols` columns (attention stand-in, hidden-state reset)
  kSiluMul = 1,  // out[m, j] = silu(in[m, j]) * in[m, cols + j]
  kAdd = 2,      // out[m, j] += in[m, j] (torch's residual add: fp32 math, one rounding)
};

// Waits for the kernel before it (griddepcontrol.wait) and lets the next one launch
// at once, so a following GEMM's weight loads overlap this kernel. Without PDL both
// instructions are no-ops.
__global__ void elementwise(const __nv_bfloat16* in, int64_t in_cols, __nv_bfloat16* out, int64_t cols, int64_t m,
                            int mode) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < m * cols; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / cols, col = i % cols;
    const float a = __bfloat162float(in[row * in_cols + col]);
    if (mode == kCopy) {
      out[i] = in[row * in_cols + col];
    } else if (mode == kSiluMul) {
      const float up = __bfloat162float(in[row * in_cols + cols + col]);
      out[i] = __float2bfloat16(a / (1.0f + __expf(-a)) * up);
    } else {
      out[i] = __float2bfloat16(__bfloat162float(out[i]) + a);
    }
  }
}

void launch_elementwise(const __nv_bfloat16* in, int64_t in_cols, __nv_bfloat16* out, int64_t cols, int64_t m,
                        Elementwise mode, bool pdl, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((m * cols + 255) / 256 < 264 ? (m * cols + 255) / 256 : 264));
  CUDA_CHECK(launch_maybe_pdl(elementwise, grid, dim3(256), pdl, stream, in, in_cols, out, cols, m, static_cast<int>(mode)));
}

struct Weights {
  __nv_bfloat16 *qkv, *o, *gate_up, *down;
};

struct Buffers {
  __nv_bfloat16* act;     // the hidden state, updated in place by o and down
  __nv_bfloat16* act0;    // its value at the start of every chain
  __nv_bfloat16* wide;    // qkv out; unfused gate_up out
  __nv_bfloat16* narrow;  // attention stand-in out; SiLU-mul out (the input of down)
  __nv_bfloat16* tmp;     // unfused o / down out, before the residual add
};

struct Variant {
  const char* name;
  tgv::Backend backend;
  bool fused;  // epilogues in the GEMMs, or torch's separate kernels
  bool pdl;
  bool drop_residual = false;  // the check's negative control: the unfused side without its residual adds
};

const Variant kVariants[] = {
    {"tgv", tgv::Backend::Tgv, true, true},
    {"tgv no-pdl", tgv::Backend::Tgv, true, false},
    {"auto", tgv::Backend::Auto, true, true},
    {"cublas", tgv::Backend::Cublas, false, false}};

enum class Stage { Qkv, O, GateUp, Down };
const char* const kStageNames[] = {"qkv", "o+residual", "gate_up+silu_mul", "down+residual"};

std::string gemm(tgv::Problem p, const void* x, const void* w, void* out, const Variant& v, cudaStream_t stream) {
  p.x = x, p.w = w, p.out = out;
  tgv::Options o;
  o.backend = v.backend;
  o.pdl = v.pdl;
  const tgv::Status s = tgv::gemm(p, o, stream);
  return s ? std::string() : s.message();
}

// Enqueues one layer; `probe`, if given, runs after each stage (the check).
std::string enqueue_layer(const LayerShape& s, const Weights& w, const Buffers& b, int64_t m, const Variant& v,
                          cudaStream_t stream, const std::function<std::string(Stage)>& probe) {
  const int64_t h = s.hidden, i2 = 2 * s.inter;
  const bool pdl = v.pdl;
  auto after = [&](Stage stage) { return probe ? probe(stage) : std::string(); };
  // h += x . W^T: in the GEMM (residual aliasing out), or a GEMM into tmp and an add.
  auto residual_gemm = [&](const __nv_bfloat16* x, const __nv_bfloat16* wt, int64_t k) {
    tgv::Problem p = tgv::Problem::packed(m, h, k);
    if (v.fused) {
      p.residual = b.act;
      return gemm(p, x, wt, b.act, v, stream);
    }
    std::string e = gemm(p, x, wt, b.tmp, v, stream);
    if (e.empty() && !v.drop_residual) launch_elementwise(b.tmp, h, b.act, h, m, kAdd, pdl, stream);
    return e;
  };

  std::string e = gemm(tgv::Problem::packed(m, s.qkv_n, h), b.act, w.qkv, b.wide, v, stream);
  if (e.empty()) launch_elementwise(b.wide, s.qkv_n, b.narrow, s.attn_k, m, kCopy, pdl, stream);
  if (e.empty()) e = after(Stage::Qkv);
  if (e.empty()) e = residual_gemm(b.narrow, w.o, s.attn_k);
  if (e.empty()) e = after(Stage::O);
  if (e.empty()) {
    if (v.fused) {
      e = gemm(tgv::Problem::gated(m, i2, h), b.act, w.gate_up, b.narrow, v, stream);
    } else {
      e = gemm(tgv::Problem::packed(m, i2, h), b.act, w.gate_up, b.wide, v, stream);
      if (e.empty()) launch_elementwise(b.wide, i2, b.narrow, s.inter, m, kSiluMul, pdl, stream);
    }
  }
  if (e.empty()) e = after(Stage::GateUp);
  if (e.empty()) e = residual_gemm(b.narrow, w.down, s.inter);
  if (e.empty()) e = after(Stage::Down);
  return e;
}

std::vector<float> to_floats(const __nv_bfloat16* device, int64_t count, cudaStream_t stream) {
  std::vector<__nv_bfloat16> host(static_cast<size_t>(count));
  CUDA_CHECK(cudaMemcpyAsync(host.data(), device, host.size() * sizeof(__nv_bfloat16), cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  std::vector<float> out(host.size());
  for (size_t i = 0; i < host.size(); ++i) out[i] = __bfloat162float(host[i]);
  return out;
}

// One layer of `v` from the chain's starting hidden state, each stage checked against
// an fp32 reference fed with the stage's actual bf16 inputs (so a stage's error is its
// own, not its predecessors'), within reference.hpp's kAbsTol + kRelTol * |ref|.
// Returns "" or what missed.
std::string check_layer(const LayerShape& s, const Weights& w, const Buffers& b, int64_t m, const Variant& v,
                        cudaStream_t stream) {
  const int64_t h = s.hidden, inter = s.inter;
  const int64_t widest = s.widest();
  // NaN (0xffff) in every output a stage writes, so a stage that skips rows or
  // columns fails its check instead of passing on what an earlier stage left.
  auto poison = [&] {
    for (__nv_bfloat16* p : {b.wide, b.narrow}) CUDA_CHECK(cudaMemsetAsync(p, 0xff, m * widest * 2, stream));
    CUDA_CHECK(cudaMemsetAsync(b.tmp, 0xff, m * h * 2, stream));
  };
  poison();
  launch_elementwise(b.act0, h, b.act, h, m, kCopy, false, stream);
  std::vector<float> residual = to_floats(b.act, m * h, stream);
  auto probe = [&](Stage stage) -> std::string {
    std::vector<float> ref;
    const __nv_bfloat16* out = b.act;
    int64_t n = h;
    if (stage == Stage::Qkv) {
      ref = reference_gemm(b.act, w.qkv, nullptr, m, s.qkv_n, h, stream);
      out = b.wide, n = s.qkv_n;
    } else if (stage == Stage::GateUp) {
      const std::vector<float> g = reference_gemm(b.act, w.gate_up, nullptr, m, 2 * inter, h, stream);
      ref.resize(static_cast<size_t>(m * inter));
      for (int64_t r = 0; r < m; ++r)
        for (int64_t j = 0; j < inter; ++j) {
          const float gate = g[r * 2 * inter + j], up = g[r * 2 * inter + inter + j];
          ref[r * inter + j] = gate / (1.0f + std::exp(-gate)) * up;
        }
      out = b.narrow, n = inter;
    } else {  // o, down: the residual before the stage plus the GEMM
      ref = stage == Stage::O ? reference_gemm(b.narrow, w.o, nullptr, m, h, s.attn_k, stream)
                              : reference_gemm(b.narrow, w.down, nullptr, m, h, inter, stream);
      for (size_t i = 0; i < ref.size(); ++i) ref[i] += residual[i];
    }
    const CheckResult r = check_output(ref, out, m, n, stream);
    if (stage == Stage::O) {  // o's input (narrow) is consumed: poison it before gate_up writes it
      residual = to_floats(b.act, m * h, stream);
      poison();
    }
    if (r.ok()) return "";
    char text[256];
    std::snprintf(text, sizeof(text), "check %s: %lld of %lld outside tolerance, worst [%lld, %lld] = %g vs %g",
                  kStageNames[static_cast<int>(stage)], (long long)r.bad, (long long)(m * n), (long long)r.worst_m,
                  (long long)r.worst_n, r.worst_out, r.worst_ref);
    return text;
  };
  return enqueue_layer(s, w, b, m, v, stream, probe);
}

// The M list: the command line's, else decode's 1..32 (the isolated mode's default
// reaches 256, past what this mode is about). Cli keeps no "given" flag, so look
// for the option in the recorded command line.
std::vector<int64_t> chain_ms(const Cli& cli) {
  const std::string& line = cli.command_line;
  for (size_t at = line.find("--m"); at != std::string::npos; at = line.find("--m", at + 1)) {
    const size_t end = at + 3;
    if ((at == 0 || line[at - 1] == ' ') && (end == line.size() || line[end] == ' ')) return cli.ms;
  }
  return {1, 2, 4, 8, 16, 32};
}

}  // namespace

int run_chain(const Cli& cli, cudaStream_t stream) {
  constexpr int kLayersPerChain = 8;
  constexpr int kVariantCount = sizeof(kVariants) / sizeof(kVariants[0]);
  int failures = 0;
  const std::vector<int64_t> ms = chain_ms(cli);
  const double gbps = measure_read_bandwidth(size_t{2} << 30, stream);  // 2 GiB: far past any L2
  std::printf("# chain: %d decoder layers of distinct weights per graph replay (plus one hidden-state reset kernel),\n"
              "# median of %d replays; us per layer. tgv/auto: residual and silu_mul epilogues, PDL (no-pdl: tgv without); cublas: no\n"
              "# epilogues, separate residual-add and SiLU-mul kernels, no PDL. floor: layer weight bytes / %.0f GB/s\n"
              "# (measured read bandwidth). Each side's layer checked per stage vs fp32 (|d| <= %.2g + %.2g |ref|;\n"
              "# a layer missing its residual adds must fail that check).\n",
              kLayersPerChain, cli.reps, gbps, kAbsTol, kRelTol);
  std::printf("%-18s %5s %9s %11s %9s %10s %9s %9s %9s %9s %10s\n", "model", "M", "tgv us", "no-pdl us", "auto us",
              "cublas us", "tgv gain", "pdl gain", "auto gain", "floor us", "tgv/floor");
  for (const char* model : kChainModels) {
    if (!cli.model_filter.empty() && std::string(model).find(cli.model_filter) == std::string::npos) continue;
    const LayerShape shape = layer_of(model);
    const int64_t h = shape.hidden;
    const int64_t widest = shape.widest();
    std::vector<Weights> layers(kLayersPerChain);
    for (int i = 0; i < kLayersPerChain; ++i) {
      Weights& w = layers[i];
      const int64_t sizes[4] = {shape.qkv_n * h, h * shape.attn_k, 2 * shape.inter * h, h * shape.inter};
      __nv_bfloat16** ptrs[4] = {&w.qkv, &w.o, &w.gate_up, &w.down};
      for (int j = 0; j < 4; ++j) {
        CUDA_CHECK(cudaMalloc(ptrs[j], sizes[j] * 2));
        const int64_t k = j == 1 ? shape.attn_k : j == 3 ? shape.inter : h;
        fill_uniform_bf16(*ptrs[j], sizes[j], 1000 + 4 * i + j, 1.0f / std::sqrt(float(k)), stream);
      }
    }
    const int64_t max_m = *std::max_element(ms.begin(), ms.end());
    Buffers b{};
    for (__nv_bfloat16** p : {&b.act, &b.act0, &b.tmp}) CUDA_CHECK(cudaMalloc(p, max_m * h * 2));
    for (__nv_bfloat16** p : {&b.wide, &b.narrow}) CUDA_CHECK(cudaMalloc(p, max_m * widest * 2));
    fill_uniform_bf16(b.act0, max_m * h, 7, 1.0f, stream);
    const double floor_us = shape.weight_bytes() / (gbps * 1e3);

    // The check must be able to fail: a layer missing its residual adds has to miss it.
    {
      const Variant control{"control", tgv::Backend::Cublas, false, false, true};
      const std::string e = check_layer(shape, layers[0], b, ms.front(), control, stream);
      CUDA_CHECK(cudaStreamSynchronize(stream));
      if (e.find(kStageNames[static_cast<int>(Stage::O)]) == std::string::npos) {
        std::fprintf(stderr, "chain %s: the check passed a layer without residual adds (%s)\n", model,
                     e.empty() ? "no miss" : e.c_str());
        ++failures;
      }
    }
    for (const int64_t m : ms) {
      double us[kVariantCount] = {};
      for (int v = 0; v < kVariantCount; ++v) {
        const Variant& variant = kVariants[v];
        auto fail = [&](const std::string& why) {
          std::fprintf(stderr, "chain %s M=%lld %s: %s\n", model, (long long)m, variant.name, why.c_str());
          ++failures;
        };
        // The check also warms up (cuBLASLt caches its algorithms outside capture).
        const std::string e = check_layer(shape, layers[0], b, m, variant, stream);
        CUDA_CHECK(cudaStreamSynchronize(stream));
        if (!e.empty()) {
          fail(e);
          continue;
        }
        // Every replay starts from act0, so the in-place hidden state stays bounded
        // however many replays run.
        auto chain = [&](int call) -> std::string {
          if (call == 0) launch_elementwise(b.act0, h, b.act, h, m, kCopy, variant.pdl, stream);
          return enqueue_layer(shape, layers[call], b, m, variant, stream, {});
        };
        const GraphTiming t = time_graph(stream, kLayersPerChain, cli.reps, chain);
        if (!t.error.empty()) {
          fail(t.error);
          continue;
        }
        us[v] = t.median_ms * 1e3 / kLayersPerChain;
      }
      std::printf("%-18s %5lld %9.2f %11.2f %9.2f %10.2f %8.2fx %8.2fx %8.2fx %9.2f %9.2fx\n", model, (long long)m,
                  us[0], us[1], us[2], us[3], us[3] / us[0], us[1] / us[0], us[3] / us[2], floor_us, us[0] / floor_us);
    }
    for (Weights& w : layers)
      for (__nv_bfloat16* p : {w.qkv, w.o, w.gate_up, w.down}) CUDA_CHECK(cudaFree(p));
    for (__nv_bfloat16* p : {b.act, b.act0, b.wide, b.narrow, b.tmp}) CUDA_CHECK(cudaFree(p));
  }
  if (failures != 0) std::printf("# chain: FAIL (%d checks or calls failed; see stderr)\n", failures);
  return failures == 0 ? 0 : 1;
}

// --mode chain: the GEMMs of decoder layers back to back, each fed by the one
// before through a small elementwise kernel, over distinct cold weights per layer.
// This is where PDL pays: the weights of GEMM i+1 stream in while GEMM i and the
// elementwise kernel drain, and only the activation loads wait.
#include "chain.hpp"

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "cuda_check.hpp"
#include "fill.hpp"
#include "pdl_launch.hpp"
#include "shapes.hpp"
#include "timing.hpp"

namespace {

// A decoder layer's four projections, as (N, K) of each weight, and the widths
// that connect them: qkv -> [attention stand-in] -> o -> gate_up -> [SiLU-mul] -> down.
struct LayerShape {
  std::string model;
  int64_t hidden, qkv_n, attn_k, inter;  // o: hidden x attn_k; gate_up: 2*inter x hidden; down: hidden x inter
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

// The elementwise stage between GEMMs: out[m, j] = f(in[m, ...]). It waits for
// the GEMM before it (griddepcontrol.wait) and lets the next GEMM launch at once,
// so that GEMM's weight loads overlap this kernel.
//   mode 0: copy the first `cols` columns (the attention stand-in)
//   mode 1: SiLU(gate) * up over the two halves (the MLP activation)
__global__ void elementwise(const __nv_bfloat16* in, int64_t in_cols, __nv_bfloat16* out, int64_t cols, int64_t m,
                            int mode) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < m * cols; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t row = i / cols, col = i % cols;
    if (mode == 0) {
      out[i] = in[row * in_cols + col];
    } else {
      const float gate = __bfloat162float(in[row * in_cols + col]);
      const float up = __bfloat162float(in[row * in_cols + cols + col]);
      out[i] = __float2bfloat16(gate / (1.0f + __expf(-gate)) * up);
    }
  }
}

void launch_elementwise(const __nv_bfloat16* in, int64_t in_cols, __nv_bfloat16* out, int64_t cols, int64_t m,
                        int mode, bool pdl, cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((m * cols + 255) / 256 < 264 ? (m * cols + 255) / 256 : 264));
  CUDA_CHECK(launch_maybe_pdl(elementwise, grid, dim3(256), pdl, stream, in, in_cols, out, cols, m, mode));
}

struct Weights {
  __nv_bfloat16 *qkv, *o, *gate_up, *down;
};

}  // namespace

int run_chain(const Cli& cli, cudaStream_t stream) {
  constexpr int kLayersPerChain = 8;
  int failures = 0;
  std::printf("# chain: %d decoder layers of distinct weights per graph replay, median of %d replays; us per layer\n",
              kLayersPerChain, cli.reps);
  std::printf("%-18s %5s %12s %14s %14s %10s %10s\n", "model", "M", "tgv+pdl us", "tgv no-pdl us", "cublas us",
              "pdl gain", "vs cublas");
  for (const char* model : kChainModels) {
    if (!cli.model_filter.empty() && std::string(model).find(cli.model_filter) == std::string::npos) continue;
    const LayerShape shape = layer_of(model);
    const int64_t h = shape.hidden;
    const int64_t widest = std::max(std::max(shape.qkv_n, 2 * shape.inter), h);
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
    const int64_t max_m = *std::max_element(cli.ms.begin(), cli.ms.end());
    __nv_bfloat16 *act, *wide, *narrow;  // the residual stream, a GEMM's wide output, an elementwise output
    CUDA_CHECK(cudaMalloc(&act, max_m * h * 2));
    CUDA_CHECK(cudaMalloc(&wide, max_m * widest * 2));
    CUDA_CHECK(cudaMalloc(&narrow, max_m * widest * 2));
    fill_uniform_bf16(act, max_m * h, 7, 1.0f, stream);

    for (const int64_t m : cli.ms) {
      auto gemm = [&](const void* x, const void* w, void* out, int64_t n, int64_t k, tgv::Backend backend, bool pdl) {
        tgv::Problem p = tgv::Problem::packed(m, n, k);
        p.x = x, p.w = w, p.out = out;
        tgv::Options o;
        o.backend = backend;
        o.pdl = pdl;
        const tgv::Status s = tgv::gemm(p, o, stream);
        return s ? std::string() : s.message();
      };
      auto layer_chain = [&](tgv::Backend backend, bool pdl) {
        return [&, backend, pdl](int call) -> std::string {
          const Weights& w = layers[call];
          std::string e = gemm(act, w.qkv, wide, shape.qkv_n, h, backend, pdl);
          if (e.empty()) launch_elementwise(wide, shape.qkv_n, narrow, shape.attn_k, m, 0, pdl, stream);
          if (e.empty()) e = gemm(narrow, w.o, act, h, shape.attn_k, backend, pdl);
          if (e.empty()) e = gemm(act, w.gate_up, wide, 2 * shape.inter, h, backend, pdl);
          if (e.empty()) launch_elementwise(wide, 2 * shape.inter, narrow, shape.inter, m, 1, pdl, stream);
          if (e.empty()) e = gemm(narrow, w.down, act, h, shape.inter, backend, pdl);
          return e;
        };
      };
      double us[3] = {0, 0, 0};
      const std::pair<tgv::Backend, bool> variants[3] = {
          {tgv::Backend::Tgv, true}, {tgv::Backend::Tgv, false}, {tgv::Backend::Cublas, false}};
      for (int v = 0; v < 3; ++v) {
        auto chain = layer_chain(variants[v].first, variants[v].second);
        for (int i = 0; i < kLayersPerChain; ++i) {  // warm-up outside capture (cuBLASLt caches its algorithms)
          const std::string e = chain(i);
          if (!e.empty()) {
            std::fprintf(stderr, "chain %s M=%lld: %s\n", shape.model.c_str(), (long long)m, e.c_str());
            ++failures;
          }
        }
        CUDA_CHECK(cudaStreamSynchronize(stream));
        const GraphTiming t = time_graph(stream, kLayersPerChain, cli.reps, chain);
        if (!t.error.empty()) {
          std::fprintf(stderr, "chain %s M=%lld: %s\n", shape.model.c_str(), (long long)m, t.error.c_str());
          ++failures;
          continue;
        }
        us[v] = t.median_ms * 1e3 / kLayersPerChain;
      }
      std::printf("%-18s %5lld %12.2f %14.2f %14.2f %9.2fx %9.2fx\n", shape.model.c_str(), (long long)m, us[0], us[1],
                  us[2], us[1] / us[0], us[2] / us[0]);
    }
    for (Weights& w : layers)
      for (__nv_bfloat16* p : {w.qkv, w.o, w.gate_up, w.down}) CUDA_CHECK(cudaFree(p));
    for (__nv_bfloat16* p : {act, wide, narrow}) CUDA_CHECK(cudaFree(p));
  }
  return failures == 0 ? 0 : 1;
}

// A decode step's GEMM through tgv-gemm, the way an inference engine calls it:
// one checked call with bias, then a chain of GEMMs captured once in a CUDA
// graph (each reads the previous one's output, launched with PDL so each
// streams its weights while its predecessor finishes) and replayed.
//
//   decode_gemm [M] [N] [layers]      defaults: 4 4096 8 (N = K: the chain feeds itself)
//
// Exit status: 0 on success; 77 without a CUDA GPU (ctest reports it skipped);
// 1 on any error, printed with the library's message.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "tgv/tgv.hpp"

namespace {

#define CUDA_OR_DIE(call)                                                                    \
  do {                                                                                       \
    cudaError_t e_ = (call);                                                                 \
    if (e_ != cudaSuccess) {                                                                 \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

uint16_t to_bf16(float v) {  // round to nearest even
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  return uint16_t((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16);
}

float from_bf16(uint16_t v) {
  const uint32_t bits = uint32_t(v) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// Uniform in [-scale, scale), never exactly zero.
std::vector<uint16_t> random_bf16(size_t count, float scale, uint32_t seed) {
  std::vector<uint16_t> out(count);
  for (auto& v : out) {
    seed = seed * 1664525u + 1013904223u;
    v = to_bf16(scale * ((int((seed >> 8) % 2000) - 999.5f) / 1000.0f));
  }
  return out;
}

void* upload(const std::vector<uint16_t>& host) {
  void* device = nullptr;
  CUDA_OR_DIE(cudaMalloc(&device, host.size() * 2));
  CUDA_OR_DIE(cudaMemcpy(device, host.data(), host.size() * 2, cudaMemcpyHostToDevice));
  return device;
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t m = argc > 1 ? std::atoll(argv[1]) : 4;
  const int64_t n = argc > 2 ? std::atoll(argv[2]) : 4096;
  const int layers = argc > 3 ? std::atoi(argv[3]) : 8;
  const int64_t k = n;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA GPU: nothing to run\n");
    return 77;
  }

  // One checked GEMM with bias, compared with a float64 reference on the host.
  const std::vector<uint16_t> hx = random_bf16(m * k, 1.0f, 1);
  const std::vector<uint16_t> hb = random_bf16(n, 0.5f, 2);
  std::vector<std::vector<uint16_t>> hw;
  std::vector<void*> w;
  for (int l = 0; l < layers; ++l) {
    hw.push_back(random_bf16(n * k, 1.0f / std::sqrt(float(k)), 100 + l));
    w.push_back(upload(hw.back()));
  }
  void* x = upload(hx);
  void* bias = upload(hb);
  std::vector<void*> acts(layers);  // the chain's activations, [M, N] each
  for (auto& a : acts) CUDA_OR_DIE(cudaMalloc(&a, m * n * 2));
  cudaStream_t stream;
  CUDA_OR_DIE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  tgv::Problem p = tgv::Problem::packed(m, n, k);  // x [M,K], W [N,K] K-major, out [M,N] row-major
  p.x = x, p.w = w[0], p.bias = bias, p.out = acts[0];
  tgv::Options options;  // backend auto: the tgv kernels where validated and faster, else cuBLASLt
  if (tgv::Status s = tgv::gemm(p, options, stream); !s) {
    std::fprintf(stderr, "tgv::gemm: %s\n", s.message().c_str());
    return 1;
  }
  std::vector<uint16_t> out(m * n);
  CUDA_OR_DIE(cudaMemcpy(out.data(), acts[0], out.size() * 2, cudaMemcpyDeviceToHost));
  int bad = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double ref = from_bf16(hb[j]);
      for (int64_t c = 0; c < k; ++c) ref += double(from_bf16(hx[i * k + c])) * from_bf16(hw[0][j * k + c]);
      const double got = from_bf16(out[i * n + j]);
      bad += !(std::fabs(got - ref) <= 1e-2 + 1e-2 * std::fabs(ref));  // bf16 output: 2^-9 relative, plus sums
    }
  std::printf("M=%lld N=%lld K=%lld with bias: %s (%d of %lld elements off)\n", (long long)m, (long long)n,
              (long long)k, bad == 0 ? "matches the float64 reference" : "MISMATCH", bad, (long long)(m * n));
  if (bad != 0) return 1;

  // The chain: layer l reads layer l-1's output. Captured once, replayed many
  // times: no host work per replay. Run each shape once outside capture first,
  // as above: the cuBLASLt backend caches its algorithm on the first call.
  cudaGraph_t graph;
  CUDA_OR_DIE(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int l = 0; l < layers; ++l) {
    tgv::Problem q = tgv::Problem::packed(m, n, k);
    q.x = l == 0 ? x : acts[l - 1], q.w = w[l], q.bias = bias, q.out = acts[l];
    if (tgv::Status s = tgv::gemm(q, options, stream); !s) {
      std::fprintf(stderr, "tgv::gemm in capture: %s\n", s.message().c_str());
      return 1;
    }
  }
  CUDA_OR_DIE(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  CUDA_OR_DIE(cudaGraphInstantiate(&exec, graph, 0));
  cudaEvent_t start, stop;
  CUDA_OR_DIE(cudaEventCreate(&start));
  CUDA_OR_DIE(cudaEventCreate(&stop));
  CUDA_OR_DIE(cudaGraphLaunch(exec, stream));  // warm
  const int replays = 20;
  CUDA_OR_DIE(cudaEventRecord(start, stream));
  for (int r = 0; r < replays; ++r) CUDA_OR_DIE(cudaGraphLaunch(exec, stream));
  CUDA_OR_DIE(cudaEventRecord(stop, stream));
  CUDA_OR_DIE(cudaEventSynchronize(stop));
  float ms = 0;
  CUDA_OR_DIE(cudaEventElapsedTime(&ms, start, stop));
  std::printf("chain of %d GEMMs from one CUDA graph: %.2f us per GEMM (weights stay in L2 if they fit: "
              "tgv-bench measures cold weights)\n",
              layers, ms * 1e3 / (replays * layers));

  CUDA_OR_DIE(cudaGraphExecDestroy(exec));
  CUDA_OR_DIE(cudaGraphDestroy(graph));
  for (void* ptr : w) CUDA_OR_DIE(cudaFree(ptr));
  for (void* ptr : acts) CUDA_OR_DIE(cudaFree(ptr));
  CUDA_OR_DIE(cudaFree(x));
  CUDA_OR_DIE(cudaFree(bias));
  CUDA_OR_DIE(cudaStreamDestroy(stream));
  return 0;
}

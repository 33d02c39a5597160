// PDL ordering, GEMM chains, CUDA-graph capture and bitwise repeatability.
//
// Tolerances: each output is compared with a float64 reference of the same bf16
// inputs; |got - ref| <= 1e-2 + 1e-2 |ref|: the bf16 output rounding alone is up
// to 2^-8 |ref|, fp32 accumulation over K <= 4096 adds far less.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "gpu/harness.hpp"
#include "tgv/tgv.h"

namespace {

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

bool have_gpu() {
  int n = 0;
  return cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
}

#define REQUIRE_GPU() \
  if (!have_gpu()) GTEST_SKIP() << "no CUDA device"

std::vector<__nv_bfloat16> random_bf16(size_t count, float scale, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.05f, 1.0f);
  std::bernoulli_distribution sign(0.5);
  std::vector<__nv_bfloat16> v(count);
  for (auto& e : v) e = __float2bfloat16(scale * (sign(rng) ? u(rng) : -u(rng)));  // never zero
  return v;
}

struct DeviceBuffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  explicit DeviceBuffer(size_t n) : bytes(n) { EXPECT_EQ(cudaMalloc(&ptr, n), cudaSuccess); }
  ~DeviceBuffer() { cudaFree(ptr); }
  void upload(const std::vector<__nv_bfloat16>& h) {
    EXPECT_EQ(cudaMemcpy(ptr, h.data(), h.size() * 2, cudaMemcpyHostToDevice), cudaSuccess);
  }
  std::vector<__nv_bfloat16> download() const {
    std::vector<__nv_bfloat16> h(bytes / 2);
    EXPECT_EQ(cudaMemcpy(h.data(), ptr, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
    return h;
  }
};

// Checks out[M,N] (row-major) against x[M,K] . w[N,K]^T in float64.
void expect_matches(const std::vector<__nv_bfloat16>& out, const std::vector<__nv_bfloat16>& x,
                    const std::vector<__nv_bfloat16>& w, int m, int n, int k) {
  int bad = 0;
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j) {
      double ref = 0;
      for (int kk = 0; kk < k; ++kk)
        ref += double(__bfloat162float(x[size_t(i) * k + kk])) * double(__bfloat162float(w[size_t(j) * k + kk]));
      const double got = __bfloat162float(out[size_t(i) * n + j]);
      if (!(std::fabs(got - ref) <= 1e-2 + 1e-2 * std::fabs(ref)) && bad++ < 5)
        ADD_FAILURE() << "out[" << i << "," << j << "] = " << got << ", reference " << ref;
    }
  EXPECT_EQ(bad, 0);
}

tgv_status gemm(const void* x, const void* w, void* out, int m, int n, int k, int pdl, int tactic, int split_k,
                int backend, cudaStream_t stream) {
  tgv_problem p;
  tgv_default_problem(&p, m, n, k, 1);
  p.x = x, p.w = w, p.out = out;
  tgv_options o;
  tgv_default_options(&o);
  o.backend = backend, o.pdl = pdl, o.tactic = tactic, o.split_k = split_k;
  return tgv_gemm(&p, &o, stream);
}

// Lets its dependents launch at once, then sleeps before writing x: a GEMM
// whose activation loads ran ahead of griddepcontrol.wait would read the old x.
__global__ void late_writer(__nv_bfloat16* x, const __nv_bfloat16* fresh, size_t count, unsigned sleep_ns) {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
  for (unsigned slept = 0; slept < sleep_ns; slept += 1000) __nanosleep(1000);
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < count; i += size_t(gridDim.x) * blockDim.x) x[i] = fresh[i];
}

struct Variant {
  int tactic, split_k;
};
// One tile of each consumer count, a split-K cluster, stream-K on both.
const Variant kVariants[] = {{0, 1}, {7, 1}, {1, 4}, {-1, 0}, {0, TGV_SPLIT_K_STREAM}, {7, TGV_SPLIT_K_STREAM}};

// Why this device cannot run a variant (its tactic is another family's, or
// split-K where the family has none); empty if it must.
std::string cannot_run(const Variant& v) {
  tgv_test::GemmCase c;
  c.backend = TGV_BACKEND_TGV;
  c.tactic = v.tactic;
  c.split_k = v.split_k;
  return tgv_test::tgv_cannot_run(c);
}
#define SKIP_VARIANT_IF_NOT_HERE(v)                                                                    \
  if (const std::string why = cannot_run(v); !why.empty()) {                                          \
    std::printf("variant tactic %d split_k %d not run: %s\n", (v).tactic, (v).split_k, why.c_str()); \
    continue;                                                                                         \
  }

TEST(Pdl, ActivationLoadsWaitForThePreviousKernel) {
  TGV_REQUIRE_TGV_FAMILY();
  const int m = 16, n = 1024, k = 4096;
  auto x_old = random_bf16(size_t(m) * k, 1.0f, 1), x_new = random_bf16(size_t(m) * k, 1.0f, 2);
  auto w = random_bf16(size_t(n) * k, 1.0f / 64, 3);
  DeviceBuffer dx(x_old.size() * 2), dfresh(x_new.size() * 2), dw(w.size() * 2), dout(size_t(m) * n * 2);
  dfresh.upload(x_new);
  dw.upload(w);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (const Variant& v : kVariants) {
    SCOPED_TRACE(testing::Message() << "tactic " << v.tactic << " split_k " << v.split_k);
    SKIP_VARIANT_IF_NOT_HERE(v);
    dx.upload(x_old);
    CUDA_OK(cudaDeviceSynchronize());
    late_writer<<<1, 256, 0, stream>>>(static_cast<__nv_bfloat16*>(dx.ptr),
                                       static_cast<const __nv_bfloat16*>(dfresh.ptr), x_new.size(), 200000);
    CUDA_OK(cudaGetLastError());
    ASSERT_EQ(gemm(dx.ptr, dw.ptr, dout.ptr, m, n, k, 1, v.tactic, v.split_k, TGV_BACKEND_TGV, stream), TGV_SUCCESS)
        << tgv_last_error();
    CUDA_OK(cudaStreamSynchronize(stream));
    expect_matches(dout.download(), x_new, w, m, n, k);
  }
  CUDA_OK(cudaStreamDestroy(stream));
}

// A chain of GEMMs, each reading the previous one's output.
struct Chain {
  static constexpr int kM = 8;
  std::vector<int> dims{4096, 1024, 2048, 1024, 512};  // K of stage 0, then each stage's N
  std::vector<std::vector<__nv_bfloat16>> weights;
  std::vector<std::unique_ptr<DeviceBuffer>> w, act;  // act[i] is the input of stage i

  Chain() {
    for (size_t i = 0; i + 1 < dims.size(); ++i) {
      weights.push_back(random_bf16(size_t(dims[i + 1]) * dims[i], 1.0f / std::sqrt(float(dims[i])), 10 + i));
      w.push_back(std::make_unique<DeviceBuffer>(weights.back().size() * 2));
      w.back()->upload(weights.back());
    }
    for (int d : dims) act.push_back(std::make_unique<DeviceBuffer>(size_t(kM) * d * 2));
  }
  void run(int pdl, const Variant& v, cudaStream_t stream, bool sync_each) {
    for (size_t i = 0; i + 1 < dims.size(); ++i) {
      ASSERT_EQ(gemm(act[i]->ptr, w[i]->ptr, act[i + 1]->ptr, kM, dims[i + 1], dims[i], pdl, -1,
                     v.split_k, TGV_BACKEND_TGV, stream),
                TGV_SUCCESS)
          << tgv_last_error();
      if (sync_each) ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    }
  }
};

TEST(Pdl, ChainOfGemmsMatchesTheSynchronizedChainBitwise) {
  TGV_REQUIRE_TGV_FAMILY();
  Chain chain;
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (const Variant& v : {Variant{-1, 1}, Variant{-1, 0}, Variant{-1, 2}, Variant{-1, TGV_SPLIT_K_STREAM}}) {
    SCOPED_TRACE(testing::Message() << "split_k " << v.split_k);
    SKIP_VARIANT_IF_NOT_HERE(v);
    chain.act[0]->upload(random_bf16(size_t(Chain::kM) * chain.dims[0], 1.0f, 99));
    // Reference: no PDL, a synchronization after every stage, each stage checked.
    chain.run(0, v, stream, true);
    std::vector<std::vector<__nv_bfloat16>> expected;
    for (size_t i = 0; i < chain.dims.size(); ++i) expected.push_back(chain.act[i]->download());
    for (size_t i = 0; i + 1 < chain.dims.size(); ++i)
      expect_matches(expected[i + 1], expected[i], chain.weights[i], Chain::kM, chain.dims[i + 1], chain.dims[i]);
    for (size_t i = 1; i < chain.dims.size(); ++i) CUDA_OK(cudaMemset(chain.act[i]->ptr, 0xff, chain.act[i]->bytes));
    chain.run(1, v, stream, false);
    CUDA_OK(cudaStreamSynchronize(stream));
    for (size_t i = 1; i < chain.dims.size(); ++i) {
      auto got = chain.act[i]->download();
      EXPECT_EQ(0, std::memcmp(got.data(), expected[i].data(), got.size() * 2)) << "stage " << i;
    }
  }
  CUDA_OK(cudaStreamDestroy(stream));
}

void check_graph_replay(int pdl, const Variant& v) {
  if (const std::string why = cannot_run(v); !why.empty()) {
    std::printf("variant split_k %d not run: %s\n", v.split_k, why.c_str());
    return;
  }
  Chain chain;
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  chain.run(pdl, v, stream, false);
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (uint32_t seed : {5u, 6u}) {  // the graph reads whatever x holds at replay
    const auto x0 = random_bf16(size_t(Chain::kM) * chain.dims[0], 1.0f, seed);
    chain.act[0]->upload(x0);
    chain.run(pdl, v, stream, true);
    const auto eager = chain.act.back()->download();
    CUDA_OK(cudaMemset(chain.act.back()->ptr, 0xff, chain.act.back()->bytes));
    for (int replay = 0; replay < 3; ++replay) {
      CUDA_OK(cudaGraphLaunch(exec, stream));
      CUDA_OK(cudaStreamSynchronize(stream));
      const auto got = chain.act.back()->download();
      EXPECT_EQ(0, std::memcmp(got.data(), eager.data(), got.size() * 2)) << "replay " << replay;
    }
  }
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  CUDA_OK(cudaStreamDestroy(stream));
}

TEST(Graph, CapturedChainWithPdlReplaysBitwise) {
  TGV_REQUIRE_TGV_FAMILY();
  check_graph_replay(1, Variant{-1, 0});
  check_graph_replay(1, Variant{-1, TGV_SPLIT_K_STREAM});  // its workspace is first seen under capture
}

TEST(Graph, CapturedChainWithoutPdlReplaysBitwise) {
  TGV_REQUIRE_TGV_FAMILY();
  check_graph_replay(0, Variant{-1, 0});
  check_graph_replay(0, Variant{-1, TGV_SPLIT_K_STREAM});
}

TEST(Graph, CublasBackendIsCapturableAfterWarmUp) {
  REQUIRE_GPU();
  const int m = 4, n = 1000, k = 1024;
  auto x = random_bf16(size_t(m) * k, 1.0f, 21), w = random_bf16(size_t(n) * k, 1.0f / 32, 22);
  DeviceBuffer dx(x.size() * 2), dw(w.size() * 2), dout(size_t(m) * n * 2);
  dx.upload(x);
  dw.upload(w);
  cudaStream_t stream;
  CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  ASSERT_EQ(gemm(dx.ptr, dw.ptr, dout.ptr, m, n, k, 0, -1, 0, TGV_BACKEND_CUBLAS, stream), TGV_SUCCESS);
  CUDA_OK(cudaStreamSynchronize(stream));
  CUDA_OK(cudaMemset(dout.ptr, 0xff, dout.bytes));
  cudaGraph_t graph;
  CUDA_OK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  ASSERT_EQ(gemm(dx.ptr, dw.ptr, dout.ptr, m, n, k, 0, -1, 0, TGV_BACKEND_CUBLAS, stream), TGV_SUCCESS)
      << tgv_last_error();
  CUDA_OK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec;
  CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
  CUDA_OK(cudaGraphLaunch(exec, stream));
  CUDA_OK(cudaStreamSynchronize(stream));
  expect_matches(dout.download(), x, w, m, n, k);
  CUDA_OK(cudaGraphExecDestroy(exec));
  CUDA_OK(cudaGraphDestroy(graph));
  CUDA_OK(cudaStreamDestroy(stream));
}

TEST(Repeatability, RepeatedRunsAreBitwiseIdentical) {
  TGV_REQUIRE_TGV_FAMILY();
  const int m = 33, n = 4100, k = 4104;
  auto x = random_bf16(size_t(m) * k, 1.0f, 31), w = random_bf16(size_t(n) * k, 1.0f / 64, 32);
  DeviceBuffer dx(x.size() * 2), dw(w.size() * 2), dout(size_t(m) * n * 2);
  dx.upload(x);
  dw.upload(w);
  for (const Variant& v : kVariants) {
    SCOPED_TRACE(testing::Message() << "tactic " << v.tactic << " split_k " << v.split_k);
    SKIP_VARIANT_IF_NOT_HERE(v);
    std::vector<__nv_bfloat16> first;
    for (int run = 0; run < 4; ++run) {
      CUDA_OK(cudaMemset(dout.ptr, 0xff, dout.bytes));
      ASSERT_EQ(gemm(dx.ptr, dw.ptr, dout.ptr, m, n, k, run % 2, v.tactic, v.split_k, TGV_BACKEND_TGV, nullptr),
                TGV_SUCCESS)
          << tgv_last_error();
      auto got = dout.download();
      if (run == 0) {
        expect_matches(got, x, w, m, n, k);
        first = got;
      } else {
        EXPECT_EQ(0, std::memcmp(got.data(), first.data(), got.size() * 2)) << "run " << run;
      }
    }
  }
}

}  // namespace

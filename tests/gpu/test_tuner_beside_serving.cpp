// A tuner beside serving threads (issue 12): four threads call tgv::gemm,
// each on its own stream with its own weight shape and M varying call to call,
// while a fifth captures and replays CUDA graphs of tuning candidates (some of
// the library's list, tgv::tune_candidates) the way `tgv-bench --tune` does
// (warm-up outside capture, thread-local capture of several calls on its own
// stream, replays). With the tuner capturing in global
// mode the serving threads' allocations failed (cudaErrorStreamCaptureUnsupported,
// found from Python, 2026-12-03).
//
// Every served and every replayed result is checked against the float64
// reference of the harness (poisoned output, guard bands: harness.hpp). The
// scenario runs kRounds times in a row, fresh threads and streams each round.
//
//   tgv_gpu_tests --gtest_filter='TunerBesideServing.*'
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "gpu/harness.hpp"
#include "tgv/tgv.h"
#include "tgv/tgv.hpp"

namespace {

using tgv_test::GemmCase;
using tgv_test::GemmFixture;

constexpr int kRounds = 20;
constexpr int kMinCalls = 4;  // per serving thread and round, tuner or not
constexpr int kCallsPerGraph = 4;

struct Server {
  int64_t n, k;
  tgv::Backend backend;
  std::vector<int64_t> ms;  // cycled through, call by call
};

// Both backends, auto on either side of its M > 32 switch, odd M.
const std::vector<Server>& servers() {
  static const std::vector<Server> list = {
      {1000, 1024, tgv::Backend::Auto, {1, 5, 16, 33, 64}},
      {2048, 512, tgv::Backend::Tgv, {8, 1, 17, 3}},
      {768, 2048, tgv::Backend::Cublas, {64, 2, 9}},
      {1536, 1032, tgv::Backend::Auto, {31, 4, 128, 1}},
  };
  return list;
}

// Failures of the worker threads, reported by the test's thread.
class Failures {
 public:
  void add(const std::string& what) {
    std::lock_guard<std::mutex> lock(mutex_);
    list_.push_back(what);
  }
  void add_all(const std::string& where, const std::vector<std::string>& failures) {
    for (const std::string& f : failures) add(where + ": " + f);
  }
  std::vector<std::string> take() {
    std::lock_guard<std::mutex> lock(mutex_);
    return std::move(list_);
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> list_;
};

std::string cuda_error(const char* what, cudaError_t e) {
  return std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
}

tgv::Problem problem_of(const GemmFixture& f) {
  tgv::Problem p;
  static_cast<tgv_problem&>(p) = f.problem();
  return p;
}

// One call of a serving thread on `stream`, checked. The scratch allocation is
// what a framework's allocator does on a miss (torch's did, in the failure).
void serve_once(GemmFixture& f, const tgv::Options& o, cudaStream_t stream, const std::string& where,
                Failures& failures) {
  std::vector<std::string> found;
  f.poison();
  void* scratch = nullptr;
  if (cudaError_t e = cudaMalloc(&scratch, 1 << 20); e != cudaSuccess) found.push_back(cuda_error("cudaMalloc", e));
  const tgv::Status s = tgv::gemm(problem_of(f), o, stream);
  if (!s) found.push_back(std::string("tgv::gemm: ") + tgv_status_name(s.code()) + ": " + s.message());
  if (cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess)
    found.push_back(cuda_error("cudaStreamSynchronize", e));
  if (scratch != nullptr) {
    if (cudaError_t e = cudaFree(scratch); e != cudaSuccess) found.push_back(cuda_error("cudaFree", e));
  }
  if (s) f.check_result(f.download(), found);
  failures.add_all(where, found);
}

// The tuner's timing of one candidate: a checked warm-up call outside capture,
// then kCallsPerGraph calls captured thread-locally on `stream`, two replays,
// the result checked again.
void tune_once(GemmFixture& f, const tgv::Options& o, cudaStream_t stream, const std::string& where,
               Failures& failures) {
  std::vector<std::string> found;
  const tgv::Problem p = problem_of(f);
  f.poison();
  const tgv::Status warm = tgv::gemm(p, o, stream);
  if (cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess)
    found.push_back(cuda_error("warm-up cudaStreamSynchronize", e));
  if (!warm) {
    failures.add(where + ": warm-up: " + tgv_status_name(warm.code()) + ": " + warm.message());
    return;
  }
  f.check_result(f.download(), found);
  f.poison();
  if (cudaError_t e = cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal); e != cudaSuccess) {
    failures.add(where + ": " + cuda_error("cudaStreamBeginCapture", e));
    return;
  }
  for (int i = 0; i < kCallsPerGraph; ++i)
    if (const tgv::Status s = tgv::gemm(p, o, stream); !s)
      found.push_back(std::string("tgv::gemm under capture: ") + tgv_status_name(s.code()) + ": " + s.message());
  cudaGraph_t graph = nullptr;
  if (cudaError_t e = cudaStreamEndCapture(stream, &graph); e != cudaSuccess) {
    found.push_back(cuda_error("cudaStreamEndCapture", e));
    (void)cudaGetLastError();
  } else {
    cudaGraphExec_t exec = nullptr;
    if (cudaError_t e = cudaGraphInstantiate(&exec, graph, 0); e != cudaSuccess) {
      found.push_back(cuda_error("cudaGraphInstantiate", e));
    } else {
      for (int replay = 0; replay < 2; ++replay)
        if (cudaError_t e = cudaGraphLaunch(exec, stream); e != cudaSuccess)
          found.push_back(cuda_error("cudaGraphLaunch", e));
      if (cudaError_t e = cudaStreamSynchronize(stream); e != cudaSuccess)
        found.push_back(cuda_error("replay cudaStreamSynchronize", e));
      else
        f.check_result(f.download(), found);
      cudaGraphExecDestroy(exec);
    }
  }
  if (graph != nullptr) cudaGraphDestroy(graph);
  failures.add_all(where, found);
}

// A few of the candidates the tuner times for (n, k, m) on this device, one of
// each kind the library's list holds: the first tgv one, the first with
// split-K, the first with a shallower ring, and cuBLASLt (always last).
std::vector<tgv::Options> tuner_candidates(int64_t n, int64_t k, int64_t m, std::string* error) {
  int device = 0;
  tgv_device_desc desc{};
  std::vector<tgv::Options> all, some;
  if (cudaGetDevice(&device) != cudaSuccess) return *error = "cudaGetDevice failed", some;
  if (const tgv::Status s = tgv::describe_device(device, &desc); !s) return *error = s.message(), some;
  if (const tgv::Status s = tgv::tune_candidates(desc, n, k, m, &all); !s) return *error = s.message(), some;
  bool split = false, shallow = false;
  for (size_t i = 0; i + 1 < all.size(); ++i) {
    const tgv::Options& o = all[i];
    const bool first = i == 0, first_split = !split && o.split_k > 1, first_shallow = !shallow && o.stages > 0;
    if (first || first_split || first_shallow) some.push_back(o);
    split = split || o.split_k > 1;
    shallow = shallow || o.stages > 0;
  }
  some.push_back(all.back());
  return some;
}

GemmCase make_case(int64_t m, int64_t n, int64_t k, bool bias, uint64_t seed) {
  GemmCase c;
  c.m = m, c.n = n, c.k = k, c.bias = bias, c.seed = seed;
  return c;
}

bool tgv_serves_this_device(std::string* why) {
  GemmFixture probe(make_case(1, 256, 256, false, 1));
  tgv::Options o;
  o.backend = tgv::Backend::Tgv;
  const tgv::Status s = tgv::gemm(problem_of(probe), o, probe.stream());
  cudaStreamSynchronize(static_cast<cudaStream_t>(probe.stream()));
  if (s.code() == TGV_ERROR_NOT_SUPPORTED) *why = s.message();
  return s.code() != TGV_ERROR_NOT_SUPPORTED;
}

TEST(TunerBesideServing, FourServingThreadsAndATunerTwentyRoundsInARow) {
  TGV_REQUIRE_GPU();
  if (std::string why; !tgv_serves_this_device(&why)) GTEST_SKIP() << "no tgv kernels for this device: " << why;
  // The inputs and references are made once; each round gets fresh threads and streams.
  std::vector<std::vector<std::unique_ptr<GemmFixture>>> served(servers().size());
  for (size_t i = 0; i < servers().size(); ++i)
    for (int64_t m : servers()[i].ms)
      served[i].push_back(std::make_unique<GemmFixture>(
          make_case(m, servers()[i].n, servers()[i].k, i % 2 == 0, 0x7e57 + i * 100 + uint64_t(m))));
  std::vector<std::unique_ptr<GemmFixture>> tuned;
  std::vector<std::vector<tgv::Options>> candidates;
  for (int64_t m : {1, 16}) {
    tuned.push_back(std::make_unique<GemmFixture>(make_case(m, 1024, 2048, true, 0x70e + m)));
    std::string error;
    candidates.push_back(tuner_candidates(1024, 2048, m, &error));
    ASSERT_TRUE(error.empty()) << error;
    ASSERT_GE(candidates.back().size(), 3u) << "tgv candidates, split-K among them, and cuBLASLt";
  }

  for (auto& list : served)
    for (auto& f : list) f->prepare_reference();
  for (auto& f : tuned) f->prepare_reference();

  for (int round = 0; round < kRounds; ++round) {
    Failures failures;
    std::atomic<bool> tuning{false}, done{false};
    std::vector<int> calls_while_tuning(servers().size(), 0);
    std::vector<std::thread> threads;
    for (size_t i = 0; i < servers().size(); ++i)
      threads.emplace_back([&, i] {
        cudaStream_t stream = nullptr;
        if (cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess) {
          failures.add(cuda_error("server cudaStreamCreateWithFlags", e));
          return;
        }
        tgv::Options o;
        o.backend = servers()[i].backend;
        for (int call = 0; call < kMinCalls || !done.load(); ++call) {
          GemmFixture& f = *served[i][size_t(call) % served[i].size()];
          serve_once(f, o, stream,
                     "round " + std::to_string(round) + " server " + std::to_string(i) + " call " +
                         std::to_string(call) + " (" + f.spec().name() + ")",
                     failures);
          if (tuning.load() && !done.load()) ++calls_while_tuning[i];
        }
        cudaStreamDestroy(stream);
      });
    threads.emplace_back([&] {
      tuning = true;
      cudaStream_t stream = nullptr;
      if (cudaError_t e = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); e != cudaSuccess) {
        failures.add(cuda_error("tuner cudaStreamCreateWithFlags", e));
      } else {
        for (size_t t = 0; t < tuned.size(); ++t)
          for (size_t c = 0; c < candidates[t].size(); ++c)
            tune_once(*tuned[t], candidates[t][c], stream,
                      "round " + std::to_string(round) + " tuner candidate " + std::to_string(c) + " (" +
                          tuned[t]->spec().name() + ")",
                      failures);
        cudaStreamDestroy(stream);
      }
      done = true;
    });
    for (auto& t : threads) t.join();
    const std::vector<std::string> found = failures.take();
    for (const std::string& f : found) ADD_FAILURE() << f;
    ASSERT_TRUE(found.empty()) << "round " << round << " failed";
    for (size_t i = 0; i < servers().size(); ++i)
      EXPECT_GT(calls_while_tuning[i], 0) << "round " << round << ": server " << i << " made no call while the tuner ran";
  }
}

// The control: what the scenario above guards against. While one thread
// captures in global mode, another thread's cudaMalloc is refused (and the
// capture is invalidated); in thread-local mode both go through. Steps are
// ordered by hand, so the outcome does not depend on timing.
TEST(TunerBesideServing, OnlyAGlobalCaptureRefusesAnotherThreadsAllocation) {
  TGV_REQUIRE_GPU();
  for (cudaStreamCaptureMode mode : {cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal}) {
    SCOPED_TRACE(mode == cudaStreamCaptureModeGlobal ? "global" : "thread-local");
    cudaStream_t stream = nullptr;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    ASSERT_EQ(cudaStreamBeginCapture(stream, mode), cudaSuccess);
    cudaError_t malloc_status = cudaSuccess;
    std::thread other([&] {
      void* p = nullptr;
      malloc_status = cudaMalloc(&p, 1 << 20);
      if (malloc_status == cudaSuccess) cudaFree(p);
      (void)cudaGetLastError();
    });
    other.join();
    cudaGraph_t graph = nullptr;
    const cudaError_t ended = cudaStreamEndCapture(stream, &graph);
    (void)cudaGetLastError();
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaStreamDestroy(stream);
    if (mode == cudaStreamCaptureModeGlobal) {
      EXPECT_EQ(malloc_status, cudaErrorStreamCaptureUnsupported) << cudaGetErrorName(malloc_status);
    } else {
      EXPECT_EQ(malloc_status, cudaSuccess) << cudaGetErrorName(malloc_status);
      EXPECT_EQ(ended, cudaSuccess) << cudaGetErrorName(ended);
    }
  }
}

}  // namespace

#include "cublas/cublaslt_backend.hpp"

#include <cublasLt.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common/cuda_check.hpp"
#include "common/cuda_context.hpp"
#include "common/relaxed_capture.hpp"
#include "cublas/algo_key.hpp"
#include "cublas/lt_timing.hpp"

namespace tgv::detail {
namespace {

// cuBLAS's recommended workspace on Hopper and later (PyTorch gives cuBLAS as
// much there); the split-K algorithms of decode shapes need far less, and the
// heuristic drops any candidate needing more than this.
constexpr size_t kWorkspaceBytes = size_t(32) << 20;
// Candidates requested from the heuristic and timed.
constexpr int kCandidates = 16;
// The tail of the workspace a staged call (algo_key.hpp: staging_ld) computes
// into; its GEMM gets the rest.
constexpr size_t kStagingBytes = size_t(8) << 20;

void check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  // A failed launch leaves its CUDA error in this thread: name it, and take it
  // so that it does not surface again in the caller's next CUDA call.
  const cudaError_t cuda = status == CUBLAS_STATUS_EXECUTION_FAILED ? cudaGetLastError() : cudaSuccess;
  throw Error(TGV_ERROR_CUBLAS, strfmt("%s failed: %s%s%s", what, cublasLtGetStatusString(status),
                                       cuda != cudaSuccess ? "; CUDA: " : "",
                                       cuda != cudaSuccess ? cudaGetErrorString(cuda) : ""));
}
#define TGV_CUBLAS_CHECK(call) check((call), #call)

bool env_is(const char* name, const char* value) {
  const char* v = std::getenv(name);
  return v != nullptr && std::strcmp(v, value) == 0;
}

// Read at each choice, so that a test (or a process that sets it late) sees it.
bool autotune_enabled() { return !env_is("TGV_CUBLAS_AUTOTUNE", "0"); }

bool log_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("TGV_LOG_DISPATCH");
    return v != nullptr && v[0] != '\0' && v[0] != '0';
  }();
  return enabled;
}

// Split-K partial sums are added in fp32 (COMPUTE_TYPE: in the workspace, then
// one rounding to bf16), never in the bf16 output type: the heuristic's first
// choice for M=256 N=4100 K=4104 on the H200 once added its four partials in
// bf16 (OUTPUT_TYPE; an error of 1% of the output RMS). INPLACE is a bf16 sum
// too (cublasLt.h: "using the output buffer (and output data type)"): each
// partial is rounded to bf16 before the next is added, so it is excluded as
// well, where this path once allowed it. PyTorch allows both by default
// (torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction); we
// promise fp32 accumulation. TGV_CUBLAS_BF16_REDUCTION=1 allows every scheme,
// as PyTorch does, to measure what the promise costs (an experiment's switch,
// read once: the cache keys do not hold it).
uint32_t reduction_mask() {
  static const uint32_t mask = env_is("TGV_CUBLAS_BF16_REDUCTION", "1")
                                   ? uint32_t(CUBLASLT_REDUCTION_SCHEME_MASK)
                                   : uint32_t(CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE);
  return mask;
}

std::atomic<uint64_t> g_measurements{0};

// One handle per device, created on first use and kept for the process.
cublasLtHandle_t handle_for(int device) {
  static std::mutex mutex;
  static std::map<int, cublasLtHandle_t> handles;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  cublasLtHandle_t h = nullptr;
  RelaxedCaptureScope relaxed;  // a first call may come under capture
  TGV_CUBLAS_CHECK(cublasLtCreate(&h));
  handles.emplace(device, h);
  return h;
}

// A workspace per (device, stream): two streams running GEMMs at once (two-
// batch overlap in an engine) must not share split-K scratch. Kept for the
// process. A stream first seen while capturing (PyTorch's capture stream, an
// engine's) gets its workspace too, allocated in relaxed capture mode:
// cudaMalloc is no stream operation, so the capture neither sees it nor is
// invalidated by it, and the graph keeps using memory that lives as long as
// the process. (Before, such a stream got none, and with it only algorithms
// without split-K scratch: every call the benchmarks time is captured on a
// stream of its own.) Were that allocation to fail under capture, the call
// runs with none (not cached: the next call tries again).
struct Workspace {
  void* ptr = nullptr;
  uint64_t bytes = 0;
};

std::mutex g_workspace_mutex;
std::map<std::pair<int, cudaStream_t>, Workspace> g_workspaces;

bool find_workspace(int device, cudaStream_t stream, Workspace* ws) {
  std::lock_guard<std::mutex> lock(g_workspace_mutex);
  auto it = g_workspaces.find({device, stream});
  if (it == g_workspaces.end()) return false;
  *ws = it->second;
  return true;
}

Workspace workspace_for(int device, cudaStream_t stream, bool capturing) {
  Workspace ws;
  if (find_workspace(device, stream, &ws)) return ws;
  std::lock_guard<std::mutex> lock(g_workspace_mutex);
  auto it = g_workspaces.find({device, stream});
  if (it != g_workspaces.end()) return it->second;
  // Relaxed also when this stream is not capturing: another thread may be
  // capturing in global mode, which would forbid the allocation here.
  RelaxedCaptureScope relaxed;
  const cudaError_t e = cudaMalloc(&ws.ptr, kWorkspaceBytes);
  if (e != cudaSuccess) {
    cudaGetLastError();
    if (capturing) return {};
    TGV_CUDA_CHECK(e);
  }
  ws.bytes = kWorkspaceBytes;
  g_workspaces.emplace(std::make_pair(device, stream), ws);
  return ws;
}

template <class T, cublasStatus_t (*Destroy)(T)>
struct Owned {
  T value = nullptr;
  Owned() = default;
  Owned(const Owned&) = delete;
  Owned& operator=(const Owned&) = delete;
  ~Owned() {
    if (value) Destroy(value);
  }
};
using Layout = Owned<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>;

// The descriptors and algorithm of one call shape. The matmul descriptor's bias
// pointer is per call, so a plan is used under its own lock.
struct LtPlan {
  std::mutex mutex;
  Owned<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy> op;
  Layout a, b, d;
  Layout d_staged;  // where staging applies: D with the staging area's aligned ld
  int64_t staging_ld = 0;
  cublasLtMatmulAlgo_t algo{};
  bool bias_in_epilogue = false;  // else prefilled through C with beta = 1
  LtChoiceInfo info;              // info.staged_ld > 0: the algorithm runs on d_staged
};

void make_layout(Layout& out, uint64_t rows, uint64_t cols, int64_t ld, int64_t l, int64_t batch_stride) {
  TGV_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&out.value, CUDA_R_16BF, rows, cols, ld));
  if (l > 1) {
    const int32_t count = static_cast<int32_t>(l);
    TGV_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(out.value, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                      sizeof(count)));
    TGV_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(out.value, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                      &batch_stride, sizeof(batch_stride)));
  }
}

// A rows x K operand, as cuBLASLt's column-major op(A) of shape (want_rows x K)
// when `as_rows`, else op(B) of shape (K x want_cols): returns the transpose flag.
cublasOperation_t describe(Layout& layout, const Operand& o, int64_t rows, int64_t k, int64_t l, bool as_left) {
  // K-major rows x K is column-major K x rows; MN-major is column-major rows x K.
  if (o.major == Major::K) {
    make_layout(layout, k, rows, o.ld, l, o.batch_stride);
    return as_left ? CUBLAS_OP_T : CUBLAS_OP_N;
  }
  make_layout(layout, rows, k, o.ld, l, o.batch_stride);
  return as_left ? CUBLAS_OP_N : CUBLAS_OP_T;
}

// cuBLASLt is column-major. A row-major out is the column-major N x M matrix
// W . x^T; a column-major out is the column-major M x N matrix x . W^T.
std::unique_ptr<LtPlan> describe_call(const GemmDesc& g, bool has_bias) {
  auto p = std::make_unique<LtPlan>();
  const bool row = g.out.row_major;
  const Operand& left = row ? g.w : g.x;
  const Operand& right = row ? g.x : g.w;
  const int64_t rows = row ? g.n : g.m, cols = row ? g.m : g.n;
  const cublasOperation_t ta = describe(p->a, left, rows, g.k, g.l, true);
  const cublasOperation_t tb = describe(p->b, right, cols, g.k, g.l, false);
  make_layout(p->d, rows, cols, g.out.ld, g.l, g.out.batch_stride);

  TGV_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->op.value, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  TGV_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op.value, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  TGV_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op.value, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  // The epilogue's bias runs along D's rows: the weight rows only when out is row-major.
  p->bias_in_epilogue = has_bias && row;
  if (p->bias_in_epilogue) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const cudaDataType_t bias_type = CUDA_R_16BF;
    const int64_t bias_batch_stride = 0;  // one bias for every batch
    TGV_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p->op.value, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    TGV_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op.value, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                    sizeof(bias_type)));
    TGV_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op.value, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
                                                    &bias_batch_stride, sizeof(bias_batch_stride)));
  }
  return p;
}

void set_bias_pointer(LtPlan& p, const void* bias) {
  if (p.bias_in_epilogue)
    TGV_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p.op.value, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)));
}

// Where a plan's GEMM writes: out itself, or the staging area of the call's
// workspace, with the workspace the GEMM may use and D's alignment.
struct Target {
  const Layout* d = nullptr;
  uint64_t workspace = 0;
  uint32_t align_d = 0;
  int64_t staged_ld = 0;
};

Target direct_target(const LtPlan& p, const BucketKey& key) { return {&p.d, key.workspace, key.align_out, 0}; }

// The staging area sits at the workspace's 256-byte aligned tail; its rows are
// staged_ld * 2 bytes apart, a multiple of 16.
Target staged_target(const LtPlan& p, const BucketKey& key) {
  if (p.staging_ld == 0) return {};
  return {&p.d_staged, key.workspace - kStagingBytes, alignment_bytes(256, p.staging_ld, 2, 0, 1), p.staging_ld};
}

// Up to kCandidates algorithms, in the heuristic's order, that fit the workspace
// and the alignment of every operand: pointer, leading dimension and batch
// stride (algo_key.hpp), as the call will present them.
std::vector<cublasLtMatmulHeuristicResult_t> candidates(cublasLtHandle_t handle, LtPlan& p, const BucketKey& key,
                                                        const Target& t) {
  Owned<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy> pref;
  TGV_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref.value));
  const uint64_t ws = t.workspace;
  TGV_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref.value, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  const bool row = key.out_row_major != 0;
  const uint32_t align_a = row ? key.align_w : key.align_x, align_b = row ? key.align_x : key.align_w;
  const uint32_t align_d = t.align_d;
  TGV_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.value, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                        &align_a, sizeof(align_a)));
  TGV_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.value, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                        &align_b, sizeof(align_b)));
  TGV_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.value, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                                        &align_d, sizeof(align_d)));
  TGV_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.value, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                                        &align_d, sizeof(align_d)));
  const uint32_t reductions = reduction_mask();
  TGV_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.value, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                                        &reductions, sizeof(reductions)));
  std::vector<cublasLtMatmulHeuristicResult_t> results(kCandidates);
  int found = 0;
  const cublasLtMatrixLayout_t d = t.d->value;
  TGV_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle, p.op.value, p.a.value, p.b.value, d, d, pref.value,
                                                  kCandidates, results.data(), &found));
  results.resize(size_t(std::max(found, 0)));
  results.erase(std::remove_if(results.begin(), results.end(),
                               [&](const cublasLtMatmulHeuristicResult_t& r) {
                                 return r.state != CUBLAS_STATUS_SUCCESS || r.workspaceSize > ws;
                               }),
                results.end());
  return results;
}

// A measured winner, shared by the calls of its bucket.
struct Winner {
  cublasLtMatmulAlgo_t algo{};
  LtChoiceInfo info;
};
std::mutex g_winner_mutex;
std::map<BucketKey, Winner> g_winners;

bool find_winner(const BucketKey& key, Winner* w) {
  std::lock_guard<std::mutex> lock(g_winner_mutex);
  auto it = g_winners.find(key);
  if (it == g_winners.end()) return false;
  *w = it->second;
  return true;
}

int config_attribute(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  uint32_t v = 0;  // every attribute read here fits 32 bits (ids, counts, enums)
  size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &v, sizeof(v), &written) != CUBLAS_STATUS_SUCCESS) return -1;
  return int(v);
}

void take_algo(LtPlan& p, const cublasLtMatmulAlgo_t& algo, uint64_t workspace_needed) {
  p.algo = algo;
  LtChoiceInfo& i = p.info;
  i.workspace_needed = workspace_needed;
  i.algo_id = config_attribute(algo, CUBLASLT_ALGO_CONFIG_ID);
  i.tile = config_attribute(algo, CUBLASLT_ALGO_CONFIG_TILE_ID);
  i.split_k = config_attribute(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
  i.reduction = config_attribute(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
  i.stages = config_attribute(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID);
  static_assert(sizeof(algo) == sizeof(i.algo_words), "cublasLtMatmulAlgo_t is 8 words");
  std::memcpy(i.algo_words, &algo, sizeof(algo));
}

// Bytes from an operand's first element to one past its last.
uint64_t span_bytes(int64_t contiguous, int64_t strided, int64_t ld, int64_t batches, int64_t batch_stride) {
  return uint64_t((batches - 1) * batch_stride + (strided - 1) * ld + contiguous) * 2;
}

void log_choice(const GemmDesc& g, const LtPlan& p, const char* how) {
  if (!log_enabled()) return;
  const LtChoiceInfo& i = p.info;
  char timing[128] = "";
  if (i.measured)
    std::snprintf(timing, sizeof(timing), ", %.2f us (the heuristic's first: %.2f us)", i.us, i.first_us);
  char staged[64] = "";
  if (i.staged_ld > 0) std::snprintf(staged, sizeof(staged), ", staged at ld %lld", (long long)i.staged_ld);
  std::fprintf(stderr,
               "[tgv] cublaslt m=%lld n=%lld k=%lld l=%lld: candidate %d of %d%s, %s; algo %d tile %d split-K %d "
               "reduction %d stages %d%s, workspace %.2f of %.0f MiB\n",
               (long long)g.m, (long long)g.n, (long long)g.k, (long long)g.l, i.index, i.candidates, timing, how,
               i.algo_id, i.tile, i.split_k, i.reduction, i.stages, staged, double(i.workspace_needed) / (1 << 20),
               double(i.workspace_bytes) / (1 << 20));
}

// Every measured candidate, one line: what the choice was made from.
void log_candidates(const std::vector<cublasLtMatmulHeuristicResult_t>& cands, const std::vector<float>& us,
                    int64_t staged_ld) {
  if (!log_enabled()) return;
  std::string line = staged_ld > 0 ? strfmt("[tgv]   staged (ld %lld) + copy candidates", (long long)staged_ld)
                                   : std::string("[tgv]   candidates");
  line += " (index: algo/tile/split-K/reduction us):";
  for (size_t c = 0; c < cands.size() && c < us.size(); ++c) {
    const cublasLtMatmulAlgo_t& a = cands[c].algo;
    const int id = config_attribute(a, CUBLASLT_ALGO_CONFIG_ID);
    const int tile = config_attribute(a, CUBLASLT_ALGO_CONFIG_TILE_ID);
    const int split = config_attribute(a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
    const int reduction = config_attribute(a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
    line += strfmt(" %d:%d/%d/%d/%d %.2f", int(c), id, tile, split, reduction, double(us[c]));
  }
  std::fprintf(stderr, "%s\n", line.c_str());
}

enum class Mode { Measure, Capturing, AutotuneOff, Heuristic };

// The call's operands and scratch sizes for timing p's candidates on target t.
LtOperation timed_call(const GemmDesc& g, cublasLtHandle_t handle, const LtPlan& p, const Target& t) {
  LtOperation call;
  call.handle = handle, call.op = p.op.value, call.a = p.a.value, call.b = p.b.value, call.d = t.d->value;
  const bool row = g.out.row_major;
  call.a_ptr = row ? g.w.ptr : g.x.ptr;
  call.b_ptr = row ? g.x.ptr : g.w.ptr;
  call.beta = g.bias != nullptr && !p.bias_in_epilogue ? 1.0f : 0.0f;
  if (t.staged_ld > 0) {
    const int64_t m = g.m, n = g.n, ld_out = g.out.ld, ld_staging = t.staged_ld;
    call.after = [=](const void* d, void* extra, cudaStream_t s) {
      launch_staged_copy(extra, ld_out, d, ld_staging, m, n, s);
    };
  }
  return call;
}

LtTimingBuffers timing_buffers(const GemmDesc& g, const Target& t) {
  LtTimingBuffers b;
  const bool row = g.out.row_major;
  const uint64_t out_span = row ? span_bytes(g.n, g.m, g.out.ld, g.l, g.out.batch_stride)
                                : span_bytes(g.m, g.n, g.out.ld, g.l, g.out.batch_stride);
  if (t.staged_ld > 0) {
    b.out_span_bytes = span_bytes(g.n, g.m, t.staged_ld, 1, 0);
    b.extra_bytes = out_span;  // the copy's destination, as misaligned as out
  } else {
    b.out_span_bytes = out_span;
    b.out_offset = reinterpret_cast<uintptr_t>(g.out.ptr) % 256;
  }
  b.workspace_bytes = t.workspace;
  const int64_t w_batches = g.w.batch_stride == 0 ? 1 : g.l;
  b.weight_bytes = g.w.major == Major::K ? span_bytes(g.k, g.n, g.w.ld, w_batches, g.w.batch_stride)
                                         : span_bytes(g.n, g.k, g.w.ld, w_batches, g.w.batch_stride);
  return b;
}

// The fastest measured candidate of each target, if any ran.
struct Measured {
  int index = -1;
  float us = 0, first_us = 0;
  int candidates = 0;
  cublasLtMatmulHeuristicResult_t result{};
};

Measured measure(const GemmDesc& g, cublasLtHandle_t handle, const BucketKey& key, LtPlan& p, const Target& t) {
  Measured m;
  const std::vector<cublasLtMatmulHeuristicResult_t> cands = candidates(handle, p, key, t);
  m.candidates = int(cands.size());
  if (cands.empty()) return m;
  const std::vector<float> us =
      time_lt_candidates(key.device, timed_call(g, handle, p, t), cands, timing_buffers(g, t));
  for (int c = 0; c < int(us.size()); ++c)
    if (us[size_t(c)] >= 0 && (m.index < 0 || us[size_t(c)] < m.us)) m.index = c, m.us = us[size_t(c)];
  if (m.index >= 0) {
    m.first_us = us[0];
    m.result = cands[size_t(m.index)];
    log_candidates(cands, us, t.staged_ld);
  }
  return m;
}

// Chooses p's algorithm: the bucket's measured winner where it applies to this
// call's descriptors, else the heuristic's candidates, timed in Measure mode
// (those for out itself and, where staging applies, those for the staging
// area with the copy included in their time).
void choose(const GemmDesc& g, cublasLtHandle_t handle, const CallKey& key, LtPlan& p, Mode mode) {
  p.info.workspace_bytes = key.bucket.workspace;
  Winner w;
  if (find_winner(key.bucket, &w)) {
    const Target t = w.info.staged_ld > 0 ? staged_target(p, key.bucket) : direct_target(p, key.bucket);
    cublasLtMatmulHeuristicResult_t check{};
    if (t.d != nullptr &&
        cublasLtMatmulAlgoCheck(handle, p.op.value, p.a.value, p.b.value, t.d->value, t.d->value, &w.algo, &check) ==
            CUBLAS_STATUS_SUCCESS &&
        check.workspaceSize <= t.workspace) {
      p.info = w.info;
      p.info.reused = true, p.info.settled = true;
      p.info.workspace_bytes = key.bucket.workspace;
      p.info.staged_ld = t.staged_ld;
      take_algo(p, w.algo, check.workspaceSize);
      log_choice(g, p, "measured for this M bucket by an earlier call");
      return;
    }
  }
  if (mode == Mode::Measure) {
    g_measurements.fetch_add(1);
    // TGV_CUBLAS_STAGING=off or =only leaves out one side where staging applies
    // (for tests and experiments; read at each choice).
    const Target staged_t = env_is("TGV_CUBLAS_STAGING", "off") ? Target{} : staged_target(p, key.bucket);
    const bool staged_only = staged_t.d != nullptr && env_is("TGV_CUBLAS_STAGING", "only");
    const Measured direct = staged_only ? Measured{} : measure(g, handle, key.bucket, p, direct_target(p, key.bucket));
    const Measured staged = staged_t.d ? measure(g, handle, key.bucket, p, staged_t) : Measured{};
    const bool use_staged = staged.index >= 0 && (direct.index < 0 || staged.us < direct.us);
    const Measured& best = use_staged ? staged : direct;
    if (best.index >= 0) {
      p.info.measured = true, p.info.settled = true;
      p.info.index = best.index, p.info.candidates = best.candidates;
      p.info.us = best.us;
      p.info.first_us = direct.index >= 0 ? direct.first_us : best.first_us;
      p.info.staged_ld = use_staged ? staged_t.staged_ld : 0;
      take_algo(p, best.result.algo, best.result.workspaceSize);
      {
        std::lock_guard<std::mutex> lock(g_winner_mutex);
        g_winners.emplace(key.bucket, Winner{p.algo, p.info});
      }
      log_choice(g, p, use_staged ? "measured, into the aligned staging area then copied" : "measured");
      return;
    }
    // Nothing measured (no scratch memory): the heuristic's first, for good (a
    // retry at every call would allocate at every call).
  }
  const std::vector<cublasLtMatmulHeuristicResult_t> cands =
      candidates(handle, p, key.bucket, direct_target(p, key.bucket));
  if (cands.empty())
    throw Error(TGV_ERROR_CUBLAS, strfmt("cuBLASLt has no algorithm for m=%lld n=%lld k=%lld l=%lld",
                                         (long long)g.m, (long long)g.n, (long long)g.k, (long long)g.l));
  p.info.candidates = int(cands.size());
  p.info.settled = mode == Mode::AutotuneOff || mode == Mode::Measure;
  take_algo(p, cands[0].algo, cands[0].workspaceSize);
  log_choice(g, p,
             mode == Mode::Measure       ? "the heuristic's first (no memory to measure with)"
             : mode == Mode::Capturing   ? "the heuristic's first (stream capturing; an eager call will measure)"
             : mode == Mode::AutotuneOff ? "the heuristic's first (TGV_CUBLAS_AUTOTUNE=0)"
                                         : "the heuristic's first (untimed)");
}

std::mutex g_plan_mutex;
std::map<CallKey, std::shared_ptr<LtPlan>> g_plans;

std::shared_ptr<LtPlan> find_plan(const CallKey& key) {
  std::lock_guard<std::mutex> lock(g_plan_mutex);
  auto it = g_plans.find(key);
  return it == g_plans.end() ? nullptr : it->second;
}

// A settled plan is final; an unsettled one serves until a Measure call
// replaces it (callers already holding it finish with it).
std::shared_ptr<LtPlan> plan_for(const GemmDesc& g, cublasLtHandle_t handle, const CallKey& key, Mode mode) {
  std::shared_ptr<LtPlan> found = find_plan(key);
  if (found && (found->info.settled || mode != Mode::Measure)) return found;
  // Built outside the lock: the heuristic query and the measurement are slow
  // and other shapes need not wait for them. A racing builder of the same key
  // finds a settled plan in place and drops its own.
  std::shared_ptr<LtPlan> fresh = describe_call(g, g.bias != nullptr);
  if (key.bucket.workspace >= kWorkspaceBytes) {
    fresh->staging_ld = staging_ld(g, operand_alignments(g), kStagingBytes);
    if (fresh->staging_ld > 0) make_layout(fresh->d_staged, uint64_t(g.n), uint64_t(g.m), fresh->staging_ld, 1, 0);
  }
  {
    // The heuristic query is host work, but what cuBLASLt does inside it is
    // not ours to vouch for: in relaxed mode nothing it does can invalidate
    // a capture, this thread's or (in global mode) another's.
    RelaxedCaptureScope relaxed;
    choose(g, handle, key, *fresh, mode);
  }
  std::lock_guard<std::mutex> lock(g_plan_mutex);
  std::shared_ptr<LtPlan>& slot = g_plans[key];
  if (!slot || !slot->info.settled) slot = fresh;
  return slot;
}

bool stream_capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  TGV_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  return capture != cudaStreamCaptureStatusNone;
}

}  // namespace

void cublaslt_gemm(const GemmDesc& g, cudaStream_t stream, LtChoice choice) {
  int device = 0;
  TGV_CUDA_CHECK(cudaGetDevice(&device));
  bind_primary_context(device);
  cublasLtHandle_t handle = handle_for(device);
  const bool capturing = stream_capturing(stream);
  const Workspace ws = workspace_for(device, stream, capturing);
  const CallKey key = call_key(g, device, ws.bytes);

  const Mode mode = capturing                   ? Mode::Capturing
                    : choice == LtChoice::Heuristic ? Mode::Heuristic
                    : !autotune_enabled()           ? Mode::AutotuneOff
                                                    : Mode::Measure;
  const std::shared_ptr<LtPlan> plan = plan_for(g, handle, key, mode);
  LtPlan& p = *plan;
  const bool row = g.out.row_major;
  const float alpha = 1.0f;
  float beta = 0.0f;
  if (g.bias != nullptr && !p.bias_in_epilogue) {
    launch_bias_fill_col_major(g, stream);
    beta = 1.0f;
  }
  const int64_t staged_ld = p.info.staged_ld;
  void* d = g.out.ptr;
  uint64_t ws_bytes = ws.bytes;
  cublasLtMatrixLayout_t d_layout = p.d.value;
  if (staged_ld > 0) {  // chosen only with the full workspace, whose tail is the staging area
    ws_bytes = ws.bytes - kStagingBytes;
    d = static_cast<char*>(ws.ptr) + ws_bytes;
    d_layout = p.d_staged.value;
  }
  {
    std::lock_guard<std::mutex> lock(p.mutex);
    set_bias_pointer(p, g.bias);
    TGV_CUBLAS_CHECK(cublasLtMatmul(handle, p.op.value, &alpha, row ? g.w.ptr : g.x.ptr, p.a.value,
                                    row ? g.x.ptr : g.w.ptr, p.b.value, &beta, d, d_layout, d, d_layout, &p.algo,
                                    ws.ptr, ws_bytes, stream));
  }
  if (staged_ld > 0) launch_staged_copy(g.out.ptr, g.out.ld, d, staged_ld, g.m, g.n, stream);
}

bool cublaslt_cached_choice(const GemmDesc& g, cudaStream_t stream, LtChoiceInfo* info) {
  int device = 0;
  TGV_CUDA_CHECK(cudaGetDevice(&device));
  Workspace ws;
  find_workspace(device, stream, &ws);
  const std::shared_ptr<LtPlan> p = find_plan(call_key(g, device, ws.bytes));
  if (!p) return false;
  if (info != nullptr) *info = p->info;
  return true;
}

uint64_t cublaslt_measurements() { return g_measurements.load(); }

}  // namespace tgv::detail

// The self-check probe: every tactic of the device's tgv family once, each on
// one of three small shapes with M, N and K tails, cycling through the layouts
// the family reads, bias on and off, split-K 1 and 2 where the family has it;
// compared element-wise with cuBLASLt on the same inputs. On Blackwell, whose
// kernel has never run elsewhere, every tactic once more with an epilogue
// (gated, residual, fp32 out, fp16 in and out), against cuBLASLt and the
// library's epilogue kernel.
//
// It runs inside the caller's first tgv call, so it has to be cheap and
// harmless: one allocation, one private non-blocking stream, every launch
// queued back to back, one wait at the end; the launchers are called directly
// (never through the gate). The caller may be capturing a CUDA graph: this
// thread's capture mode is relaxed around the probe and nothing touches the
// caller's stream, so the capture goes on undisturbed.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "api/validate.hpp"
#include "common/cuda_check.hpp"
#include "common/error.hpp"
#include "common/strfmt.hpp"
#include "cublas/cublaslt_backend.hpp"
#include "cublas/epilogue_fallback.hpp"
#include "gate/probe.hpp"
#include "launch/sm100_launch.hpp"
#include "launch/sm90_launch.hpp"
#include "plan/plan.hpp"
#include "tactics/tactics.hpp"

namespace tgv::detail {
namespace {

constexpr uint64_t kSeed = 0x5e1fc4ecull;  // fixed, so a failure reproduces
// |tgv - ref| <= atol + rtol |ref|. Both outputs are bf16 (2^-9 relative each)
// over fp32 sums of ~0.33 rms (x ~ U(-1,1), W ~ U(-1,1)/sqrt(K), bias ~ U(-0.5,0.5));
// a wrong tile, row, K block or bias is off by a sizeable fraction of that.
constexpr float kAbsTol = 0.02f;
constexpr float kRelTol = 0.02f;
// A kernel that never finishes is a failed check, not a hung caller.
constexpr double kTimeoutSeconds = 10.0;
constexpr int kMaxCases = 32;
constexpr int kMaxFills = 32;
constexpr int kThreads = 256;

struct Shape {
  int64_t m, n, k, l;
};
// M: one token, a tail of the smallest token tile, past a 32-token tile. N: not
// a multiple of 64 or of a CTA pair's 128 rows (odd pair counts too). K: a
// 64-column tail past two 64-column stages; a long one for split-K. L = 2 once.
constexpr Shape kShapes[] = {{1, 200, 1024, 1}, {7, 1000, 136, 1}, {33, 328, 1024, 2}};
constexpr int kNumShapes = sizeof(kShapes) / sizeof(kShapes[0]);

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

// A strided view of one logical tensor: element (b, r, c) of a (l x rows x cols)
// tensor lives at ptr + b*stride_l + r*stride_r + c*stride_c.
struct Fill {
  __nv_bfloat16* ptr;  // fp16 elements where fp16 is set
  int64_t l, rows, cols, stride_l, stride_r, stride_c;
  uint32_t tensor;  // which logical tensor: its values depend on this, not on the layout
  float scale;
  bool fp16 = false;
};
struct Fills {
  Fill f[kMaxFills];
};

struct Check {
  const void* out;
  int64_t stride_l, stride_m, stride_n;
  const void* ref;  // row-major packed, out's type; without bias where bias is set
  const __nv_bfloat16* bias;
  int64_t m, n, l;  // n: out's columns
  int type;         // of out and ref: tgv_dtype (bf16, fp16, fp32)
};
struct Checks {
  Check c[kMaxCases];
};

__device__ uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Never zero (a dropped term must show), either sign, magnitude in [0.05, 1) x scale.
__global__ void fill_kernel(Fills fills) {
  const Fill f = fills.f[blockIdx.y];
  const int64_t total = f.l * f.rows * f.cols;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t c = i % f.cols, r = i / f.cols % f.rows, b = i / (f.cols * f.rows);
    const uint64_t h = mix64(kSeed ^ (uint64_t(f.tensor) << 56) ^ uint64_t(i));
    const float magnitude = 0.05f + 0.95f * float(h >> 40) * 0x1p-24f;
    const float v = (h & 1) ? -magnitude : magnitude;
    const int64_t at = b * f.stride_l + r * f.stride_r + c * f.stride_c;
    if (f.fp16)
      reinterpret_cast<__half*>(f.ptr)[at] = __float2half(v * f.scale);
    else
      f.ptr[at] = __float2bfloat16(v * f.scale);
  }
}

__device__ float load_as(const void* p, int64_t i, int type) {
  if (type == TGV_DTYPE_FP32) return static_cast<const float*>(p)[i];
  if (type == TGV_DTYPE_FP16) return __half2float(static_cast<const __half*>(p)[i]);
  return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
}

// bad[case] counts elements outside the tolerance (NaN included); first[case]
// is the smallest such linear index (b, m, n order).
__global__ void check_kernel(Checks checks, unsigned long long* bad, unsigned long long* first) {
  const Check c = checks.c[blockIdx.y];
  const int64_t total = c.l * c.m * c.n;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t n = i % c.n, m = i / c.n % c.m, b = i / (c.n * c.m);
    const int64_t at = b * c.stride_l + m * c.stride_m + n * c.stride_n;
    const float want = load_as(c.ref, i, c.type) + (c.bias ? __bfloat162float(c.bias[n]) : 0.0f);
    const float got = load_as(c.out, at, c.type);
    if (!(fabsf(got - want) <= kAbsTol + kRelTol * fabsf(want))) {
      atomicAdd(&bad[blockIdx.y], 1ull);
      atomicMin(&first[blockIdx.y], (unsigned long long)i);
    }
  }
}

// Epilogue cases (Blackwell): what each computes beside the plain GEMM.
enum Epi { kPlainCase = 0, kSiluMul, kResidual, kFp32Out, kGeluFp32, kFp16SiluMul, kNumEpi };
const char* const kEpiNames[kNumEpi] = {"",
                                        ", epilogue=silu_mul",
                                        ", a residual",
                                        ", fp32 out",
                                        ", epilogue=gelu_tanh_mul, fp32 out",
                                        ", fp16 in and out, epilogue=silu_mul"};
bool gated(int epi) { return epi == kSiluMul || epi == kGeluFp32 || epi == kFp16SiluMul; }
bool fp32_out(int epi) { return epi == kFp32Out || epi == kGeluFp32; }
bool fp16_in(int epi) { return epi == kFp16SiluMul; }
int out_type(int epi) { return fp32_out(epi) ? TGV_DTYPE_FP32 : fp16_in(epi) ? TGV_DTYPE_FP16 : TGV_DTYPE_BF16; }
// W rows a gated case reads: the shape's first rows, as many as make each half
// whole 8-row groups (the gated map's rule), still short of whole tiles.
int64_t gated_rows(int64_t n) { return n / 16 * 16; }

// One probe case: a tactic on a shape, in a layout.
struct Case {
  int32_t tactic;
  int shape;
  bool x_k_major, w_k_major, out_row_major, bias;
  int32_t split_k;
  int epi = kPlainCase;
  bool launched = false;  // false: the planner refuses it on this device, so the family never runs it
  __nv_bfloat16* out = nullptr;  // fp32 words where the case writes fp32
  __nv_bfloat16* ref = nullptr;  // an epilogue case's own reference, out's type, row-major packed
  int64_t out_ld = 0;

  int64_t rows() const { return gated(epi) ? gated_rows(kShapes[shape].n) : kShapes[shape].n; }  // of W
  int64_t cols() const { return gated(epi) ? rows() / 2 : rows(); }                             // of out
  std::string describe() const {
    const Tactic& t = detail::tactic(tactic);
    const Shape& s = kShapes[shape];
    return strfmt("tactic %d (%dx%dx%d%s, split-K %d) on m=%lld n=%lld k=%lld l=%lld with x %s, w %s, out %s%s%s",
                  tactic, t.cta_m, t.cta_n, t.cta_k, t.cluster > 1 ? ", CTA pair" : "", split_k, (long long)s.m,
                  (long long)rows(), (long long)s.k, (long long)s.l, x_k_major ? "K-major" : "M-major",
                  w_k_major ? "K-major" : "N-major", out_row_major ? "row-major" : "column-major",
                  bias ? ", bias" : "", kEpiNames[epi]);
  }
};

// The operands of one shape: x and W in both layouts, hence the same logical values.
struct Operands {
  __nv_bfloat16 *xk = nullptr, *xm = nullptr, *wk = nullptr, *wn = nullptr, *bias = nullptr, *ref = nullptr;
  __nv_bfloat16* residual = nullptr;  // L x M x N, row-major packed (epilogue cases only)
  __nv_bfloat16 *xh = nullptr, *wh = nullptr, *bias_h = nullptr;  // fp16 copies, K-major (fp16 cases only)
  int64_t ldm = 0, ldn = 0;
};

// The cases: every tactic of the family that fits the device's shared memory.
std::vector<Case> make_cases(const DeviceInfo& dev) {
  const int32_t family = arch_family(dev.sm());
  std::vector<Case> cases;
  int i = 0;
  for (int32_t id = 0; id < kNumTactics; ++id) {
    const Tactic& t = tactic(id);
    if (t.arch != family || stages_for(t, dev.smem_optin_bytes) == 0) continue;
    Case c;
    c.tactic = id;
    c.shape = i % kNumShapes;
    const bool any_layout = family == 90;  // the sm_100 kernel reads K-major x and W only
    c.x_k_major = !any_layout || (i / kNumShapes) % 2 == 0;
    c.w_k_major = !any_layout || (i / (2 * kNumShapes)) % 2 == 0;
    c.out_row_major = i % 2 == 0;
    c.bias = (i / 2) % 2 == 0;
    c.split_k = family == 90 && (i / 4) % 2 == 1 ? 2 : 1;
    cases.push_back(c);
    ++i;
  }
  // Blackwell: each tactic again with an epilogue, K-major (the sm_90 kernel's
  // epilogues are covered by its GPU suite, which has run on Hopper).
  if (family == 100) {
    const size_t plain = cases.size();
    for (size_t j = 0; j < plain; ++j) {
      Case c = cases[j];
      c.epi = 1 + int(j % (kNumEpi - 1));
      c.shape = int(j + 1) % kNumShapes;
      c.out_row_major = c.epi == kResidual || j % 2 == 1;  // a residual case's residual is row-major
      c.bias = c.epi != kGeluFp32;
      c.split_k = 1;
      cases.push_back(c);
    }
  }
  return cases;
}

class Probe {
 public:
  explicit Probe(const DeviceInfo& dev) : dev_(dev), stream_(private_stream(dev.ordinal)) {}

  ~Probe() {
    // Stream-ordered, so no wait: the memory returns after the last kernel
    // that reads it (never, if one hangs).
    if (arena_ != nullptr) cudaFreeAsync(arena_, stream_);
    cudaGetLastError();  // leave no non-sticky error behind for the caller
  }

  ProbeOutcome run() {
    cases_ = make_cases(dev_);
    if (cases_.empty()) return {false, true, "no tactic of the family fits the device's shared memory"};
    if (cases_.size() > size_t(kMaxCases)) return {false, false, "more tactics than the probe holds"};
    // Setup: a failure here says nothing about the kernels.
    try {
      allocate();
      fill();
      for (int s = 0; s < kNumShapes; ++s) reference(s);
      for (Case& c : cases_)
        if (c.epi != kPlainCase) epilogue_reference(c);
    } catch (const Error& e) {
      return {false, false, e.what()};
    }
    // From here a failure is the kernels' (or their launchers').
    try {
      for (Case& c : cases_) launch(c);
      if (std::none_of(cases_.begin(), cases_.end(), [](const Case& c) { return c.launched; }))
        return {false, true, "the planner refuses every tactic of the family on this device"};
      check();
      if (!wait())
        return {false, true, strfmt("the probe's kernels did not finish within %.0f s", kTimeoutSeconds)};
      std::vector<unsigned long long> results(2 * cases_.size());
      TGV_CUDA_CHECK(cudaMemcpyAsync(results.data(), results_, results.size() * sizeof(unsigned long long),
                                     cudaMemcpyDeviceToHost, stream_));
      TGV_CUDA_CHECK(cudaStreamSynchronize(stream_));
      return verdict(results);
    } catch (const Error& e) {
      return {false, true, e.what()};
    }
  }

 private:
  static cudaStream_t private_stream(int ordinal) {
    // One per device for the process: the cuBLASLt backend keys its workspace
    // by stream, so a stream destroyed after each probe would leave that behind.
    static cudaStream_t streams[64] = {};
    static std::mutex mutex;
    std::lock_guard<std::mutex> lock(mutex);
    if (streams[ordinal] == nullptr) TGV_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[ordinal], cudaStreamNonBlocking));
    return streams[ordinal];
  }

  // Carves every buffer out of one allocation, 256-byte aligned; inputs' padding,
  // the references and outputs start as NaN (0xFFFF).
  void allocate() {
    std::vector<std::pair<__nv_bfloat16**, int64_t>> parts;
    for (int s = 0; s < kNumShapes; ++s) {
      const Shape& sh = kShapes[s];
      Operands& o = operands_[s];
      o.ldm = round_up(sh.m, 8);
      o.ldn = round_up(sh.n, 8);
      parts.push_back({&o.xk, sh.l * sh.m * sh.k});
      parts.push_back({&o.xm, sh.l * sh.k * o.ldm});
      parts.push_back({&o.wk, sh.l * sh.n * sh.k});
      parts.push_back({&o.wn, sh.l * sh.k * o.ldn});
      parts.push_back({&o.bias, sh.n});
      parts.push_back({&o.ref, sh.l * sh.m * sh.n});
      if (any_epilogue()) parts.push_back({&o.residual, sh.l * sh.m * sh.n});
      if (any_fp16()) {
        parts.push_back({&o.xh, sh.l * sh.m * sh.k});
        parts.push_back({&o.wh, sh.l * sh.n * sh.k});
        parts.push_back({&o.bias_h, sh.n});
      }
    }
    for (Case& c : cases_) {
      const Shape& sh = kShapes[c.shape];
      const int64_t words = out_type(c.epi) == TGV_DTYPE_FP32 ? 2 : 1;  // 16-bit units per element
      c.out_ld = c.out_row_major ? c.cols() : round_up(sh.m, 8);
      parts.push_back({&c.out, sh.l * (c.out_row_major ? sh.m : c.cols()) * c.out_ld * words});
      if (c.epi != kPlainCase) parts.push_back({&c.ref, sh.l * sh.m * c.cols() * words});
    }
    size_t bytes = 0;
    std::vector<size_t> offsets;
    for (const auto& p : parts) {
      offsets.push_back(bytes);
      bytes += size_t(round_up(p.second * 2, 256));
    }
    const size_t results_offset = bytes;
    bytes += 2 * kMaxCases * sizeof(unsigned long long);
    TGV_CUDA_CHECK(cudaMallocAsync(&arena_, bytes, stream_));
    char* base = static_cast<char*>(arena_);
    for (size_t i = 0; i < parts.size(); ++i) *parts[i].first = reinterpret_cast<__nv_bfloat16*>(base + offsets[i]);
    results_ = reinterpret_cast<unsigned long long*>(base + results_offset);
    TGV_CUDA_CHECK(cudaMemsetAsync(arena_, 0xFF, results_offset, stream_));
    TGV_CUDA_CHECK(cudaMemsetAsync(results_, 0, kMaxCases * sizeof(unsigned long long), stream_));
    TGV_CUDA_CHECK(cudaMemsetAsync(results_ + kMaxCases, 0xFF, kMaxCases * sizeof(unsigned long long), stream_));
  }

  void fill() {
    Fills fills{};
    int count = 0;
    for (int s = 0; s < kNumShapes; ++s) {
      const Shape& sh = kShapes[s];
      const Operands& o = operands_[s];
      const uint32_t id = uint32_t(s) * 3;
      const float w_scale = 1.0f / std::sqrt(float(sh.k));
      fills.f[count++] = {o.xk, sh.l, sh.m, sh.k, sh.m * sh.k, sh.k, 1, id, 1.0f};
      fills.f[count++] = {o.xm, sh.l, sh.m, sh.k, sh.k * o.ldm, 1, o.ldm, id, 1.0f};
      fills.f[count++] = {o.wk, sh.l, sh.n, sh.k, sh.n * sh.k, sh.k, 1, id + 1, w_scale};
      fills.f[count++] = {o.wn, sh.l, sh.n, sh.k, sh.k * o.ldn, 1, o.ldn, id + 1, w_scale};
      fills.f[count++] = {o.bias, 1, 1, sh.n, sh.n, sh.n, 1, id + 2, 0.5f};
      if (o.residual != nullptr)
        fills.f[count++] = {o.residual, sh.l, sh.m, sh.n, sh.m * sh.n, sh.n, 1, 0x40u + uint32_t(s), 1.0f};
      if (o.xh != nullptr) {  // the same logical tensors, rounded to fp16
        fills.f[count++] = {o.xh, sh.l, sh.m, sh.k, sh.m * sh.k, sh.k, 1, id, 1.0f, true};
        fills.f[count++] = {o.wh, sh.l, sh.n, sh.k, sh.n * sh.k, sh.k, 1, id + 1, w_scale, true};
        fills.f[count++] = {o.bias_h, 1, 1, sh.n, sh.n, sh.n, 1, id + 2, 0.5f, true};
      }
    }
    static_assert(kNumShapes * 9 <= kMaxFills, "one fill per operand copy");
    fill_kernel<<<dim3(64, unsigned(count)), kThreads, 0, stream_>>>(fills);
    TGV_CUDA_CHECK(cudaGetLastError());
  }

  tgv_problem problem(int shape, bool x_k_major, bool w_k_major, const void* bias, void* out, bool out_row_major,
                      int64_t out_ld) const {
    const Shape& sh = kShapes[shape];
    const Operands& o = operands_[shape];
    tgv_problem p;
    tgv_default_problem(&p, sh.m, sh.n, sh.k, sh.l);
    if (x_k_major) {
      p.x = o.xk;
    } else {
      p.x = o.xm;
      p.x_stride_m = 1, p.x_stride_k = o.ldm, p.x_stride_l = sh.k * o.ldm;
    }
    if (w_k_major) {
      p.w = o.wk;
    } else {
      p.w = o.wn;
      p.w_stride_n = 1, p.w_stride_k = o.ldn, p.w_stride_l = sh.k * o.ldn;
    }
    p.bias = bias;
    p.out = out;
    if (out_row_major) {
      p.out_stride_m = out_ld, p.out_stride_n = 1, p.out_stride_l = sh.m * out_ld;
    } else {
      p.out_stride_m = 1, p.out_stride_n = out_ld, p.out_stride_l = sh.n * out_ld;
    }
    return p;
  }

  void reference(int shape) {
    const GemmDesc g = validate_problem(problem(shape, true, true, nullptr, operands_[shape].ref, true, kShapes[shape].n));
    cublaslt_gemm(g, stream_);
  }

  bool any_epilogue() const {
    return std::any_of(cases_.begin(), cases_.end(), [](const Case& c) { return c.epi != kPlainCase; });
  }
  bool any_fp16() const {
    return std::any_of(cases_.begin(), cases_.end(), [](const Case& c) { return fp16_in(c.epi); });
  }

  // An epilogue case's problem (K-major x and W) writing `out` with leading
  // dimension `ld`: gated cases read the shape's first rows() rows of W.
  tgv_problem epilogue_problem(const Case& c, void* out, bool row_major, int64_t ld) const {
    const Shape& sh = kShapes[c.shape];
    const Operands& o = operands_[c.shape];
    tgv_problem p = problem(c.shape, true, true, c.bias ? o.bias : nullptr, out, row_major, ld);
    p.n = c.rows();
    p.w_stride_l = sh.n * sh.k;  // the batches of the whole W
    if (!row_major) p.out_stride_l = c.cols() * ld;  // problem() spaced column-major batches by n
    p.out_dtype = out_type(c.epi);
    if (fp16_in(c.epi)) {
      p.dtype = TGV_DTYPE_FP16;
      p.x = o.xh, p.w = o.wh;
      if (c.bias) p.bias = o.bias_h;
    }
    if (gated(c.epi)) p.epilogue = c.epi == kSiluMul ? TGV_EPILOGUE_SILU_MUL : TGV_EPILOGUE_GELU_TANH_MUL;
    if (c.epi == kResidual) {
      p.residual = o.residual;
      p.residual_stride_m = sh.n, p.residual_stride_n = 1, p.residual_stride_l = sh.m * sh.n;
    }
    return p;
  }

  void epilogue_reference(const Case& c) {
    cublaslt_epilogue_gemm(validate_problem(epilogue_problem(c, c.ref, true, c.cols())), stream_);
  }

  // The problem a case launches, writing its own out.
  tgv_problem case_problem(const Case& c) const {
    if (c.epi != kPlainCase) return epilogue_problem(c, c.out, c.out_row_major, c.out_ld);
    return problem(c.shape, c.x_k_major, c.w_k_major, c.bias ? operands_[c.shape].bias : nullptr, c.out,
                   c.out_row_major, c.out_ld);
  }

  // Plans the case as the dispatcher would (the gate assumed passed). A case the
  // planner refuses on this device falls back to split-K 1, then is left out:
  // the dispatcher would never run it either.
  void launch(Case& c) {
    const GemmDesc g = validate_problem(case_problem(c));
    static const GateVerdict kAssumePassed{GateState::Passed, "under probe"};
    Plan p;
    for (;;) {
      tgv_options o;
      tgv_default_options(&o);
      o.backend = TGV_BACKEND_TGV, o.tactic = c.tactic, o.split_k = c.split_k;
      try {
        p = plan(g, o, dev_, nullptr, &kAssumePassed);
        break;
      } catch (const Error& e) {
        if (e.status() != TGV_ERROR_NOT_SUPPORTED) throw;
        if (c.split_k == 1) return;
        c.split_k = 1;
      }
    }
    if (tactic(p.tactic).arch == 100)
      launch_sm100(g, p, stream_);
    else
      launch_sm90(g, p, stream_);
    c.launched = true;
  }

  void check() {
    Checks checks{};
    for (size_t i = 0; i < cases_.size(); ++i) {
      const Case& c = cases_[i];
      const Shape& sh = kShapes[c.shape];
      // A case left out checks nothing (l = 0): its output is still NaN. An
      // epilogue case's own reference has the bias in it; the shape's does not.
      const tgv_problem p = case_problem(c);
      const bool plain = c.epi == kPlainCase;
      checks.c[i] = {c.out, p.out_stride_l, p.out_stride_m, p.out_stride_n, plain ? operands_[c.shape].ref : c.ref,
                     plain && c.bias ? operands_[c.shape].bias : nullptr, sh.m, c.cols(), c.launched ? sh.l : 0,
                     out_type(c.epi)};
    }
    check_kernel<<<dim3(16, unsigned(cases_.size())), kThreads, 0, stream_>>>(checks, results_, results_ + kMaxCases);
    TGV_CUDA_CHECK(cudaGetLastError());
  }

  // Polls rather than blocks, so that a hung kernel cannot hang the caller.
  bool wait() {
    const auto start = std::chrono::steady_clock::now();
    for (int spins = 0;; ++spins) {
      const cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaSuccess) return true;
      if (e != cudaErrorNotReady) TGV_CUDA_CHECK(e);
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > kTimeoutSeconds)
        return false;
      if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  ProbeOutcome verdict(const std::vector<unsigned long long>& results) const {
    std::string reason;
    int failed = 0;
    for (size_t i = 0; i < cases_.size(); ++i) {
      const unsigned long long bad = results[i];
      if (bad == 0) continue;
      if (failed++ > 0) continue;
      const Case& c = cases_[i];
      const Shape& sh = kShapes[c.shape];
      const unsigned long long at = results[kMaxCases + i];
      reason = strfmt("%s: %llu of %lld elements differ from cuBLASLt beyond %g + %g*|ref| (first at l=%lld m=%lld "
                      "n=%lld)",
                      c.describe().c_str(), bad, (long long)(sh.l * sh.m * c.cols()), kAbsTol, kRelTol,
                      (long long)(at / (sh.m * c.cols())), (long long)(at / c.cols() % sh.m),
                      (long long)(at % c.cols()));
    }
    if (failed == 0) return {true, true, {}};
    const auto launched = std::count_if(cases_.begin(), cases_.end(), [](const Case& c) { return c.launched; });
    if (failed > 1) reason += strfmt(" (and %d more of the %d cases)", failed - 1, int(launched));
    return {false, true, reason};
  }

  const DeviceInfo& dev_;
  cudaStream_t stream_;
  std::vector<Case> cases_;
  Operands operands_[kNumShapes];
  void* arena_ = nullptr;
  unsigned long long* results_ = nullptr;
};

// Restores the calling thread's device and capture mode, whatever happens.
class ThreadStateGuard {
 public:
  explicit ThreadStateGuard(int device) {
    cudaGetDevice(&device_);
    switched_ = device_ != device;
    // Relaxed: the allocations and synchronizations below would otherwise be
    // illegal while this thread (or any, in global mode) captures a graph.
    cudaThreadExchangeStreamCaptureMode(&mode_);
    if (switched_) cudaSetDevice(device);
  }
  ~ThreadStateGuard() {
    if (switched_) cudaSetDevice(device_);  // still relaxed here
    cudaThreadExchangeStreamCaptureMode(&mode_);
  }

 private:
  int device_ = 0;
  bool switched_ = false;
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
};

}  // namespace

ProbeOutcome run_probe(const DeviceInfo& dev) {
  ThreadStateGuard guard(dev.ordinal);
  try {
    Probe probe(dev);
    return probe.run();
  } catch (const Error& e) {  // creating the private stream
    return {false, false, e.what()};
  }
}

}  // namespace tgv::detail

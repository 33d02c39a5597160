// Epilogues, output types and fp16 inputs on the GPU, every backend, against a
// float64 CPU reference of the rounded inputs.
//
// A case draws x ~ U(-1, 1), W ~ U(-1, 1) / sqrt(K), bias ~ U(-0.5, 0.5) and
// a residual ~ U(-1, 1), never zero, rounded to their types; pads every input
// row with NaN; places out (and a separate residual) inside 4 KiB guard bands
// filled with a NaN pattern (or, for a residual aliasing out, out's logical
// elements hold the residual and the rest the pattern); runs tgv_gemm; checks
// every element against the reference within the tolerance of out's type
// (below), that no NaN is left, that every element outside out's logical
// extent holds the pattern, and that the residual buffer is unchanged; then
// refills and runs again and compares bitwise.
//
// Tolerance, element-wise |got - ref| <= atol + rtol * |ref|, atol = rtol * RMS(ref):
//   bf16 out rtol 1e-2: rounding to bf16 alone is up to 2^-9 (2e-3) relative.
//   fp16 out rtol 2e-3: rounding to fp16 is up to 2^-11 (4.9e-4).
//   fp32 out rtol 1e-4: fp32 accumulation of K <= 4104 products with
//     |terms| ~ 1/sqrt(K) is off by ~sqrt(K) 2^-24 of the result's scale
//     (~4e-6), __expf a few ulp; a lost K block or wrong row is off by ~1e-1.
//   The gated product is one more multiply of two such values: same bounds.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "gpu/harness.hpp"
#include "tgv/tgv.h"

namespace {

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(e));
}
#define EPI_CUDA(call) cuda_ok((call), #call)

constexpr uint32_t kPoison32 = 0x7FC1DEADu;  // a quiet NaN as fp32
constexpr uint16_t kPoison16 = 0x7FC1;       // a quiet NaN as bf16 and as fp16
constexpr uint16_t kPad16 = 0xFFC3;          // NaN in input padding (bf16 and fp16)
constexpr int64_t kGuardBytes = 4096;

int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

// Host conversions through CUDA's own (host-callable) round-to-nearest-even.
uint16_t to_bits(float v, int32_t type) {
  if (type == TGV_DTYPE_FP16) return __half_raw(__float2half_rn(v)).x;
  return __nv_bfloat16_raw(__float2bfloat16_rn(v)).x;
}
float from_bits(uint16_t b, int32_t type) {
  if (type == TGV_DTYPE_FP16) {
    __half_raw r;
    r.x = b;
    return __half2float(__half(r));
  }
  __nv_bfloat16_raw r;
  r.x = b;
  return __bfloat162float(__nv_bfloat16(r));
}

struct EpiCase {
  int64_t m = 8, n = 256, k = 256, l = 1;
  int32_t in_type = TGV_DTYPE_BF16, out_type = TGV_DTYPE_BF16;
  int32_t epilogue = TGV_EPILOGUE_NONE;
  bool residual = false, alias = false;  // alias: the residual is out itself
  bool x_k_major = true, w_k_major = true, out_row_major = true;
  bool bias = false;
  int64_t pad = 0;  // extra elements in every leading dimension (x, W: multiples of 8)
  int32_t backend = TGV_BACKEND_TGV, tactic = -1, pdl = 1, split_k = 0, stages = 0;
  uint64_t seed = 7;

  int64_t cols() const { return epilogue == TGV_EPILOGUE_NONE ? n : n / 2; }
  std::string name() const {
    std::ostringstream s;
    const char* types[] = {"bf16", "fp16", "fp32"};
    s << "m" << m << "_n" << n << "_k" << k << "_l" << l << "_" << types[in_type] << "to" << types[out_type];
    if (epilogue == TGV_EPILOGUE_SILU_MUL) s << "_silu";
    if (epilogue == TGV_EPILOGUE_GELU_TANH_MUL) s << "_gelu";
    if (residual) s << (alias ? "_resalias" : "_res");
    s << "_x" << (x_k_major ? "K" : "M") << "_w" << (w_k_major ? "K" : "N") << "_o" << (out_row_major ? "R" : "C");
    if (bias) s << "_bias";
    if (pad) s << "_pad" << pad;
    s << "_" << (backend == TGV_BACKEND_TGV ? "tgv" : backend == TGV_BACKEND_CUBLAS ? "cublas" : "auto");
    s << tgv_test::options_suffix(tactic, split_k, stages, pdl);
    return s.str();
  }
};

void PrintTo(const EpiCase& c, std::ostream* os) { *os << c.name(); }

// Whether the sm_90 tgv kernel refuses the case (plan/epilogue_rules.cpp).
bool sm90_refuses(const EpiCase& c) {
  if (c.in_type == TGV_DTYPE_FP16 && (!c.x_k_major || !c.w_k_major)) return true;
  if (c.epilogue != TGV_EPILOGUE_NONE && (!c.w_k_major || (c.n / 2) % 8 != 0)) return true;
  return false;
}

// Whether the sm_100 tgv kernel refuses the case: K-major operands, no split-K,
// and the gated rule of sm_90.
bool sm100_refuses(const EpiCase& c) {
  if (!c.x_k_major || !c.w_k_major || c.split_k > 1 || c.split_k == TGV_SPLIT_K_STREAM) return true;
  if (c.epilogue != TGV_EPILOGUE_NONE && (c.n / 2) % 8 != 0) return true;
  return false;
}

class EpiFixture {
 public:
  explicit EpiFixture(const EpiCase& c) : c_(c) {
    std::mt19937_64 rng(c.seed ^ (uint64_t(c.m) << 32) ^ (uint64_t(c.n) << 12) ^ uint64_t(c.k));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    auto draw = [&](float scale, int32_t type, float& value) {
      for (;;) {
        const uint16_t b = to_bits(u(rng) * scale, type);
        value = from_bits(b, type);
        if (value != 0.0f) return b;
      }
    };
    const int32_t it = c.in_type;
    // x [l][m][k], W [l][n][k] in their layouts, padding NaN.
    const int64_t xld = (c.x_k_major ? c.k : round_up(c.m, 8)) + c.pad;
    const int64_t xslab = (c.x_k_major ? c.m : c.k) * xld;
    std::vector<uint16_t> hx(size_t(xslab * c.l), kPad16);
    xf_.resize(size_t(c.l * c.m * c.k));
    for (int64_t b = 0; b < c.l; ++b)
      for (int64_t i = 0; i < c.m; ++i)
        for (int64_t kk = 0; kk < c.k; ++kk)
          hx[size_t(b * xslab + (c.x_k_major ? i * xld + kk : kk * xld + i))] =
              draw(1.0f, it, xf_[size_t((b * c.m + i) * c.k + kk)]);
    const int64_t wld = (c.w_k_major ? c.k : round_up(c.n, 8)) + c.pad;
    const int64_t wslab = (c.w_k_major ? c.n : c.k) * wld;
    std::vector<uint16_t> hw(size_t(wslab * c.l), kPad16);
    wf_.resize(size_t(c.l * c.n * c.k));
    const float ws = 1.0f / std::sqrt(float(c.k));
    for (int64_t b = 0; b < c.l; ++b)
      for (int64_t j = 0; j < c.n; ++j)
        for (int64_t kk = 0; kk < c.k; ++kk)
          hw[size_t(b * wslab + (c.w_k_major ? j * wld + kk : kk * wld + j))] =
              draw(ws, it, wf_[size_t((b * c.n + j) * c.k + kk)]);
    std::vector<uint16_t> hb;
    if (c.bias) {
      hb.resize(size_t(c.n));
      bf_.resize(size_t(c.n));
      for (int64_t j = 0; j < c.n; ++j) hb[size_t(j)] = draw(0.5f, it, bf_[size_t(j)]);
    }
    // out: [l] x (rows x ld) inside guards; the residual alike, its own pad.
    esize_ = c.out_type == TGV_DTYPE_FP32 ? 4 : 2;
    const int64_t cols = c.cols();
    const int64_t orows = c.out_row_major ? c.m : cols;
    oline_ = (c.out_row_major ? cols : c.m) + c.pad;
    oslab_ = orows * oline_ + c.pad;
    guard_ = kGuardBytes / esize_;
    alloc_ = guard_ + c.l * oslab_ + guard_;
    // A different ld than out's, except for a single-row column-major out: out is
    // then contiguous (read as row-major), and a padded residual would be a
    // column-major one, which the validator rightly refuses as a different layout.
    rline_ = (c.out_row_major ? cols : c.m) + (!c.out_row_major && c.m == 1 && c.pad == 0 ? 0 : 8);
    rslab_ = orows * rline_;
    if (c.residual) {
      rf_.resize(size_t(c.l * c.m * cols));
      for (float& v : rf_) draw(1.0f, c.out_type == TGV_DTYPE_FP32 ? TGV_DTYPE_BF16 : c.out_type, v);
    }
    EPI_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    d_x_ = upload(hx.data(), hx.size() * 2);
    d_w_ = upload(hw.data(), hw.size() * 2);
    if (c.bias) d_bias_ = upload(hb.data(), hb.size() * 2);
    EPI_CUDA(cudaMalloc(&d_out_, size_t(alloc_ * esize_)));
    if (c.residual && !c.alias) {
      std::vector<uint8_t> hr(size_t(c.l * rslab_ * esize_), 0xFF);  // NaN between rows
      for (int64_t b = 0; b < c.l; ++b)
        for (int64_t i = 0; i < c.m; ++i)
          for (int64_t j = 0; j < cols; ++j)
            put(hr.data(), b * rslab_ + (c.out_row_major ? i * rline_ + j : j * rline_ + i),
                rf_[size_t((b * c.m + i) * cols + j)]);
      residual_host_ = hr;
      d_res_ = upload(hr.data(), hr.size());
    }
    refill();

    tgv_default_problem(&p_, c.m, c.n, c.k, c.l);
    p_.dtype = c.in_type;
    p_.out_dtype = c.out_type;
    p_.epilogue = c.epilogue;
    p_.x = d_x_;
    p_.x_stride_l = xslab, p_.x_stride_m = c.x_k_major ? xld : 1, p_.x_stride_k = c.x_k_major ? 1 : xld;
    p_.w = d_w_;
    p_.w_stride_l = wslab, p_.w_stride_n = c.w_k_major ? wld : 1, p_.w_stride_k = c.w_k_major ? 1 : wld;
    p_.bias = d_bias_;
    p_.out = static_cast<char*>(d_out_) + guard_ * esize_;
    p_.out_stride_l = oslab_;
    p_.out_stride_m = c.out_row_major ? oline_ : 1;
    p_.out_stride_n = c.out_row_major ? 1 : oline_;
    if (c.residual && c.alias) {
      p_.residual = p_.out;
      p_.residual_stride_l = p_.out_stride_l, p_.residual_stride_m = p_.out_stride_m;
      p_.residual_stride_n = p_.out_stride_n;
    } else if (c.residual) {
      p_.residual = d_res_;
      p_.residual_stride_l = rslab_;
      p_.residual_stride_m = c.out_row_major ? rline_ : 1;
      p_.residual_stride_n = c.out_row_major ? 1 : rline_;
    }
  }
  ~EpiFixture() {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
    cudaFree(d_x_), cudaFree(d_w_), cudaFree(d_bias_), cudaFree(d_out_), cudaFree(d_res_);
  }

  // Poisons out (guards, padding, logical elements), then writes the residual
  // into out's logical elements when it aliases out.
  void refill() {
    std::vector<uint8_t> h(size_t(alloc_ * esize_));
    for (int64_t e = 0; e < alloc_; ++e) poison_at(h.data(), e);
    if (c_.residual && c_.alias) {
      const int64_t cols = c_.cols();
      for (int64_t b = 0; b < c_.l; ++b)
        for (int64_t i = 0; i < c_.m; ++i)
          for (int64_t j = 0; j < cols; ++j) put(h.data(), out_index(b, i, j), rf_[size_t((b * c_.m + i) * cols + j)]);
    }
    EPI_CUDA(cudaMemcpy(d_out_, h.data(), h.size(), cudaMemcpyHostToDevice));
  }

  tgv_status run() {
    const tgv_options o{c_.backend, c_.tactic, c_.pdl, c_.split_k, c_.stages};
    const tgv_status s = tgv_gemm(&p_, &o, stream_);
    EPI_CUDA(cudaStreamSynchronize(stream_));
    EPI_CUDA(cudaGetLastError());
    return s;
  }

  // The same call captured in a CUDA graph (thread-local mode), replayed once.
  tgv_status run_graph() {
    const tgv_options o{c_.backend, c_.tactic, c_.pdl, c_.split_k, c_.stages};
    cudaGraph_t graph = nullptr;
    EPI_CUDA(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
    const tgv_status s = tgv_gemm(&p_, &o, stream_);
    EPI_CUDA(cudaStreamEndCapture(stream_, &graph));
    if (s == TGV_SUCCESS) {
      cudaGraphExec_t exec = nullptr;
      EPI_CUDA(cudaGraphInstantiate(&exec, graph, 0));
      EPI_CUDA(cudaGraphLaunch(exec, stream_));
      EPI_CUDA(cudaStreamSynchronize(stream_));
      cudaGraphExecDestroy(exec);
    }
    cudaGraphDestroy(graph);
    return s;
  }

  std::vector<uint8_t> download() const {
    std::vector<uint8_t> h(size_t(alloc_ * esize_));
    EPI_CUDA(cudaMemcpy(h.data(), d_out_, h.size(), cudaMemcpyDeviceToHost));
    return h;
  }

  // Every element of out against the reference; guards, padding and the
  // residual buffer untouched. Returns failure lines.
  std::vector<std::string> check(const std::vector<uint8_t>& got) {
    std::vector<std::string> fails;
    const std::vector<double> ref = reference();
    double sq = 0;
    for (double v : ref) sq += v * v;
    const double rms = std::sqrt(sq / double(std::max<size_t>(ref.size(), 1)));
    const double rtol = c_.out_type == TGV_DTYPE_FP32 ? 1e-4 : c_.out_type == TGV_DTYPE_FP16 ? 2e-3 : 1e-2;
    const double atol = rtol * (rms > 0 ? rms : 1.0);
    const int64_t cols = c_.cols();
    std::vector<uint8_t> logical(size_t(alloc_), 0);
    int64_t bad = 0;
    std::ostringstream first;
    for (int64_t b = 0; b < c_.l; ++b)
      for (int64_t i = 0; i < c_.m; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          const int64_t at = out_index(b, i, j);
          logical[size_t(at)] = 1;
          const double v = get(got.data(), at), want = ref[size_t((b * c_.m + i) * cols + j)];
          if (!(std::fabs(v - want) <= atol + rtol * std::fabs(want)) && bad++ < 8)
            first << "\n  out(" << b << "," << i << "," << j << ") = " << v << ", want " << want;
        }
    if (bad) {
      std::ostringstream s;
      s << bad << " of " << c_.l * c_.m * cols << " elements outside |err| <= " << atol << " + " << rtol
        << "*|ref| (NaN included); first:" << first.str();
      fails.push_back(s.str());
    }
    int64_t touched = 0;
    for (int64_t e = 0; e < alloc_; ++e)
      if (!logical[size_t(e)] && !is_poison(got.data(), e)) ++touched;
    if (touched) fails.push_back(std::to_string(touched) + " elements outside out's logical extent were written");
    if (d_res_ != nullptr) {
      std::vector<uint8_t> r(residual_host_.size());
      EPI_CUDA(cudaMemcpy(r.data(), d_res_, r.size(), cudaMemcpyDeviceToHost));
      if (r != residual_host_) fails.push_back("the residual buffer was written");
    }
    return fails;
  }

  tgv_problem& problem() { return p_; }

  // Nothing written: every element holds what refill() put there.
  bool unchanged(const std::vector<uint8_t>& got) {
    refill();
    return got == download();
  }

 private:
  void* upload(const void* h, size_t bytes) {
    void* d = nullptr;
    EPI_CUDA(cudaMalloc(&d, bytes));
    EPI_CUDA(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return d;
  }
  int64_t out_index(int64_t b, int64_t i, int64_t j) const {
    return guard_ + b * oslab_ + (c_.out_row_major ? i * oline_ + j : j * oline_ + i);
  }
  void put(uint8_t* base, int64_t e, float v) const {
    if (esize_ == 4) {
      std::memcpy(base + e * 4, &v, 4);
    } else {
      const uint16_t b = to_bits(v, c_.out_type);
      std::memcpy(base + e * 2, &b, 2);
    }
  }
  double get(const uint8_t* base, int64_t e) const {
    if (esize_ == 4) {
      float f;
      std::memcpy(&f, base + e * 4, 4);
      return f;
    }
    uint16_t b;
    std::memcpy(&b, base + e * 2, 2);
    return from_bits(b, c_.out_type);
  }
  void poison_at(uint8_t* base, int64_t e) const {
    if (esize_ == 4)
      std::memcpy(base + e * 4, &kPoison32, 4);
    else
      std::memcpy(base + e * 2, &kPoison16, 2);
  }
  bool is_poison(const uint8_t* base, int64_t e) const {
    return esize_ == 4 ? std::memcmp(base + e * 4, &kPoison32, 4) == 0 : std::memcmp(base + e * 2, &kPoison16, 2) == 0;
  }
  std::vector<double> reference() const {
    const int64_t cols = c_.cols();
    std::vector<double> ref(size_t(c_.l * c_.m * cols));
    auto dot = [&](int64_t b, int64_t i, int64_t j) {
      const float* xr = &xf_[size_t((b * c_.m + i) * c_.k)];
      const float* wr = &wf_[size_t((b * c_.n + j) * c_.k)];
      double a = 0;
      for (int64_t kk = 0; kk < c_.k; ++kk) a += double(xr[kk]) * wr[kk];
      return a + (c_.bias ? double(bf_[size_t(j)]) : 0.0);
    };
    // Rows in parallel: the engine shapes reach 10^8 products per row block.
    auto rows = [&](int64_t r0, int64_t r1) {
      for (int64_t r = r0; r < r1; ++r) {
        const int64_t b = r / c_.m, i = r % c_.m;
        for (int64_t j = 0; j < cols; ++j) {
          double v = dot(b, i, j);
          if (c_.epilogue != TGV_EPILOGUE_NONE) {
            const double g = v, up = dot(b, i, j + cols);
            const double act = c_.epilogue == TGV_EPILOGUE_SILU_MUL
                                   ? g / (1.0 + std::exp(-g))
                                   : 0.5 * g * (1.0 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)));
            v = act * up;
          }
          if (c_.residual) v += rf_[size_t((b * c_.m + i) * cols + j)];
          ref[size_t((b * c_.m + i) * cols + j)] = v;
        }
      }
    };
    const int64_t total = c_.l * c_.m;
    const int64_t threads = std::min<int64_t>(total, std::max(1u, std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    for (int64_t t = 0; t < threads; ++t) pool.emplace_back(rows, total * t / threads, total * (t + 1) / threads);
    for (std::thread& t : pool) t.join();
    return ref;
  }

  EpiCase c_;
  tgv_problem p_{};
  cudaStream_t stream_ = nullptr;
  std::vector<float> xf_, wf_, bf_, rf_;
  std::vector<uint8_t> residual_host_;
  int64_t esize_ = 2, oline_ = 0, oslab_ = 0, rline_ = 0, rslab_ = 0, guard_ = 0, alloc_ = 0;
  void *d_x_ = nullptr, *d_w_ = nullptr, *d_bias_ = nullptr, *d_out_ = nullptr, *d_res_ = nullptr;
};

int device_sm() {
  int dev = 0, major = 0, minor = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  return major * 10 + minor;
}

// Runs the case. backend=tgv on an sm_90 or sm_100/103 device must succeed
// exactly where the rules say that family's kernel serves it (on Blackwell, once
// its self-check has passed), and otherwise refuse with NOT_SUPPORTED and write
// nothing; elsewhere backend=tgv is a skip, as is a tactic of the other family.
// auto and cublas must always succeed.
void expect_epi(const EpiCase& c) {
  const int sm = device_sm();
  const bool sm90 = sm == 90, blackwell = sm == 100 || sm == 103;
  if (c.backend == TGV_BACKEND_TGV) {
    if (!sm90 && !blackwell) GTEST_SKIP() << "backend=tgv epilogues are served on sm_90 and sm_100/103 only";
    tgv_tactic_info t{};
    if (c.tactic >= 0 && tgv_get_tactic(c.tactic, &t) == TGV_SUCCESS && t.arch != (sm90 ? 90 : 100))
      GTEST_SKIP() << "tactic " << c.tactic << " is an sm_" << t.arch << " tactic; this device is sm_" << sm;
  }
  EpiFixture f(c);
  const tgv_status s = f.run();
  if (c.backend == TGV_BACKEND_TGV && (sm90 ? sm90_refuses(c) : sm100_refuses(c))) {
    EXPECT_EQ(s, TGV_ERROR_NOT_SUPPORTED) << tgv_status_name(s) << ": " << tgv_last_error();
    EXPECT_TRUE(f.unchanged(f.download())) << "a refused call wrote out";
    return;
  }
  ASSERT_EQ(s, TGV_SUCCESS) << tgv_status_name(s) << ": " << tgv_last_error();
  const std::vector<uint8_t> first = f.download();
  for (const std::string& line : f.check(first)) ADD_FAILURE() << line;
  f.refill();
  ASSERT_EQ(f.run(), TGV_SUCCESS) << tgv_last_error();
  EXPECT_TRUE(first == f.download()) << "the repeated run differs bitwise";
}

// What a case computes, beside the plain GEMM.
struct Kind {
  const char* name;
  int32_t in, out, epilogue;
  bool residual, alias;
};
const Kind kKinds[] = {
    {"Fp32Out", TGV_DTYPE_BF16, TGV_DTYPE_FP32, TGV_EPILOGUE_NONE, false, false},
    {"Residual", TGV_DTYPE_BF16, TGV_DTYPE_BF16, TGV_EPILOGUE_NONE, true, false},
    {"ResidualAliasOut", TGV_DTYPE_BF16, TGV_DTYPE_BF16, TGV_EPILOGUE_NONE, true, true},
    {"ResidualFp32", TGV_DTYPE_BF16, TGV_DTYPE_FP32, TGV_EPILOGUE_NONE, true, false},
    {"SiluMul", TGV_DTYPE_BF16, TGV_DTYPE_BF16, TGV_EPILOGUE_SILU_MUL, false, false},
    {"GeluTanhMul", TGV_DTYPE_BF16, TGV_DTYPE_BF16, TGV_EPILOGUE_GELU_TANH_MUL, false, false},
    {"SiluMulFp32", TGV_DTYPE_BF16, TGV_DTYPE_FP32, TGV_EPILOGUE_SILU_MUL, false, false},
    {"Fp16", TGV_DTYPE_FP16, TGV_DTYPE_FP16, TGV_EPILOGUE_NONE, false, false},
    {"Fp16Fp32Out", TGV_DTYPE_FP16, TGV_DTYPE_FP32, TGV_EPILOGUE_NONE, false, false},
    {"Fp16ResidualAlias", TGV_DTYPE_FP16, TGV_DTYPE_FP16, TGV_EPILOGUE_NONE, true, true},
    {"Fp16SiluMul", TGV_DTYPE_FP16, TGV_DTYPE_FP16, TGV_EPILOGUE_SILU_MUL, false, false},
};

EpiCase with_kind(EpiCase c, const Kind& k) {
  c.in_type = k.in, c.out_type = k.out, c.epilogue = k.epilogue, c.residual = k.residual, c.alias = k.alias;
  return c;
}

// Shapes by index: token tiles stored directly (M <= 16) and staged, N and K
// tails (n/2 a multiple of 8 where gated, so the tgv kernel serves it).
EpiCase shape_of(int i) {
  static const int64_t shapes[][3] = {{1, 512, 256},  {7, 272, 136},  {16, 1040, 520}, {33, 528, 1000},
                                      {64, 256, 264}, {130, 784, 72}, {8, 2064, 1024}, {256, 400, 128}};
  EpiCase c;
  const auto& s = shapes[i % 8];
  c.m = s[0], c.n = s[1], c.k = s[2];
  return c;
}

// ---- every kind x layout x backend, bias / PDL / split-K / pad cycling ----

std::vector<EpiCase> layout_grid() {
  std::vector<EpiCase> cases;
  int i = 0;
  for (const Kind& kind : kKinds)
    for (int layout = 0; layout < 8; ++layout)
      for (int32_t backend : {TGV_BACKEND_TGV, TGV_BACKEND_AUTO, TGV_BACKEND_CUBLAS}) {
        EpiCase c = with_kind(shape_of(i), kind);
        c.x_k_major = !(layout & 1), c.w_k_major = !(layout & 2), c.out_row_major = !(layout & 4);
        c.backend = backend;
        c.bias = (i % 2) == 0;
        c.pdl = (i % 3) != 0;
        c.pad = (i % 5) == 0 ? 8 : 0;
        // 0 (auto), 1, 2, 3, at most the K blocks of the ladder's cta_k = 128.
        if (backend == TGV_BACKEND_TGV) c.split_k = int32_t(std::min<int64_t>((i / 3) % 4, (c.k + 127) / 128));
        c.l = (i % 7) == 3 ? 2 : 1;
        c.seed = 100 + i;
        cases.push_back(c);
        ++i;
      }
  return cases;
}

class EpilogueGrid : public ::testing::TestWithParam<EpiCase> {};
TEST_P(EpilogueGrid, MatchesReference) {
  TGV_REQUIRE_GPU();
  expect_epi(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Layouts, EpilogueGrid, ::testing::ValuesIn(layout_grid()),
                         [](const auto& info) { return info.param.name(); });

// ---- every tactic of a family with each kind it serves (K-major; bias, out row- or column-major) ----
// sm_90: split-K 1 and 2. sm_100 (compiled everywhere, run on Blackwell only): PDL
// on and off, two batches, and the gated pairs' warp shuffle in each TMEM datapath
// (64 rows per CTA in half the lanes, 64 per CTA of a pair in folded columns, 128
// in every lane).

std::vector<EpiCase> tactic_grid(int32_t arch) {
  std::vector<EpiCase> cases;
  const int32_t count = tgv_num_tactics();
  int i = 0;
  for (int32_t id = 0; id < count; ++id) {
    tgv_tactic_info t{};
    if (tgv_get_tactic(id, &t) != TGV_SUCCESS || t.arch != arch) continue;
    for (const Kind& kind : kKinds) {
      EpiCase c = with_kind(shape_of(i), kind);
      c.m = std::min<int64_t>(c.m, t.cta_n * 2);  // one or two token tiles
      c.backend = TGV_BACKEND_TGV;
      c.tactic = id;
      c.bias = (i % 2) == 1;
      c.out_row_major = (i % 3) != 2;
      if (arch == 90) {
        c.split_k = int32_t(std::min<int64_t>(1 + (i / 2) % 2, (c.k + t.cta_k - 1) / t.cta_k));  // apart from bias
        c.seed = 900 + i;
      } else {
        c.pdl = (i % 4) != 3;
        c.l = (i % 5) == 4 ? 2 : 1;
        c.seed = 2900 + i;
      }
      cases.push_back(c);
      ++i;
    }
  }
  return cases;
}

class EpilogueTactics : public ::testing::TestWithParam<EpiCase> {};
TEST_P(EpilogueTactics, MatchesReference) {
  TGV_REQUIRE_GPU();
  expect_epi(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Sm90, EpilogueTactics, ::testing::ValuesIn(tactic_grid(90)),
                         [](const auto& info) { return info.param.name(); });
INSTANTIATE_TEST_SUITE_P(Sm100, EpilogueTactics, ::testing::ValuesIn(tactic_grid(100)),
                         [](const auto& info) { return info.param.name(); });

// ---- stream-K with each kind: the fix-up sums fp32 partials before any epilogue math ----
// Token tiles stored directly (M = 7) and staged in stream-K's own bytes (M = 33),
// N and K tails, tiles summed from several CTAs' partials; bias cycling.
std::vector<EpiCase> stream_k_grid() {
  std::vector<EpiCase> cases;
  static const int64_t shapes[][3] = {{7, 528, 1000}, {33, 1040, 2056}, {16, 272, 4104}};
  int i = 0;
  for (const Kind& kind : kKinds)
    for (const auto& s : shapes) {
      EpiCase c = with_kind(EpiCase{}, kind);
      c.m = s[0], c.n = s[1], c.k = s[2];
      c.backend = TGV_BACKEND_TGV;
      c.split_k = TGV_SPLIT_K_STREAM;
      c.bias = (i % 2) == 0;
      c.out_row_major = (i % 3) != 1;
      c.seed = 1700 + i;
      cases.push_back(c);
      ++i;
    }
  return cases;
}

class EpilogueStreamK : public ::testing::TestWithParam<EpiCase> {};
TEST_P(EpilogueStreamK, MatchesReference) {
  TGV_REQUIRE_GPU();
  expect_epi(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Sm90, EpilogueStreamK, ::testing::ValuesIn(stream_k_grid()),
                         [](const auto& info) { return info.param.name(); });

// ---- shapes engines run, through auto ----------------------------------------

std::vector<EpiCase> engine_shapes() {
  std::vector<EpiCase> cases;
  auto add = [&](int64_t m, int64_t n, int64_t k, const Kind& kind, bool bias) {
    EpiCase c = with_kind(EpiCase{}, kind);
    c.m = m, c.n = n, c.k = k, c.bias = bias, c.backend = TGV_BACKEND_AUTO;
    cases.push_back(c);
    EpiCase t = c;
    t.backend = TGV_BACKEND_TGV;
    cases.push_back(t);
  };
  for (int64_t m : {1, 16}) {
    add(m, 256, 7168, kKinds[0], false);    // a MoE router: fp32 logits
    add(m, 4096, 4096, kKinds[2], false);   // o_proj + residual in place
    add(m, 28672, 4096, kKinds[4], false);  // Llama-3.1-8B gate_up + SiLU
    add(m, 4096, 14336, kKinds[2], true);   // down_proj + residual in place
  }
  return cases;
}

class EpilogueEngineShapes : public ::testing::TestWithParam<EpiCase> {};
TEST_P(EpilogueEngineShapes, MatchesReference) {
  TGV_REQUIRE_GPU();
  expect_epi(GetParam());
}
INSTANTIATE_TEST_SUITE_P(Llama, EpilogueEngineShapes, ::testing::ValuesIn(engine_shapes()),
                         [](const auto& info) { return info.param.name(); });

// ---- a shallow ring cannot stage the fp32 tile: refused, then served deeper ----

TEST(EpilogueRing, ShallowRingWithFp32Staging) {
  TGV_REQUIRE_GPU();
  if (device_sm() != 90) GTEST_SKIP() << "sm_90 only";
  // 128 x 256 at cta_k = 64: a stage is 48 KiB; 2 stages (96 KiB) hold the
  // bf16 tile but not the 128 KiB fp32 one a residual or fp32 out stages.
  int found = 0;
  for (int32_t id = 0; id < tgv_num_tactics(); ++id) {
    tgv_tactic_info t{};
    tgv_get_tactic(id, &t);
    if (t.arch != 90 || t.cta_m != 128 || t.cta_n != 256 || t.cta_k != 64) continue;
    ++found;
    for (const Kind& kind : {kKinds[1], kKinds[0]}) {
      EpiCase c = with_kind(EpiCase{}, kind);
      c.m = 200, c.n = 384, c.k = 256, c.tactic = id, c.stages = 2, c.split_k = 1;
      SCOPED_TRACE(c.name());
      {
        EpiFixture f(c);
        EXPECT_EQ(f.run(), TGV_ERROR_NOT_SUPPORTED);
        EXPECT_NE(std::string(tgv_last_error()).find("cannot hold the 131072-byte fp32 tile"), std::string::npos)
            << tgv_last_error();
        EXPECT_TRUE(f.unchanged(f.download()));
      }
      c.stages = 3;
      expect_epi(c);
    }
  }
  EXPECT_EQ(found, 1);
}

// ---- CUDA graphs: after one call outside capture, a captured call replays it ---

TEST(EpilogueGraph, CapturedCallReplaysBitwise) {
  TGV_REQUIRE_GPU();
  std::vector<int32_t> backends = {TGV_BACKEND_CUBLAS, TGV_BACKEND_AUTO};
  if (device_sm() == 90) backends.push_back(TGV_BACKEND_TGV);
  for (int32_t backend : backends)
    for (const Kind& kind : {kKinds[2], kKinds[4], kKinds[0], kKinds[9]}) {
      EpiCase c = with_kind(EpiCase{}, kind);
      c.m = 24, c.n = 1040, c.k = 520, c.bias = true, c.backend = backend;
      c.out_row_major = false;  // the cuBLASLt path's scratch and epilogue kernel, for every kind with bias
      SCOPED_TRACE(c.name());
      EpiFixture f(c);
      ASSERT_EQ(f.run(), TGV_SUCCESS) << tgv_last_error();
      const std::vector<uint8_t> first = f.download();
      for (const std::string& line : f.check(first)) ADD_FAILURE() << line;
      f.refill();
      ASSERT_EQ(f.run_graph(), TGV_SUCCESS) << tgv_last_error();
      EXPECT_TRUE(first == f.download()) << "the graph replay differs bitwise from the eager call";
    }
}

// A stream whose first epilogue call on the cuBLASLt path is a captured one
// (torch.cuda.graph captures on a stream of its own): its scratch is allocated
// in relaxed capture mode, and the replay matches the float64 reference.
TEST(EpilogueGraph, FirstCallOfAStreamMayBeCaptured) {
  TGV_REQUIRE_GPU();
  for (const Kind& kind : {kKinds[4], kKinds[1]}) {
    EpiCase c = with_kind(EpiCase{}, kind);
    c.m = 16, c.n = 1040, c.k = 520, c.bias = true, c.backend = TGV_BACKEND_CUBLAS;
    SCOPED_TRACE(c.name());
    EpiFixture f(c);
    ASSERT_EQ(f.run_graph(), TGV_SUCCESS) << tgv_last_error();
    for (const std::string& line : f.check(f.download())) ADD_FAILURE() << line;
  }
}

// ---- PDL: a residual written by the previous kernel -------------------------

// h = x1 . W1^T, then h += x2 . W2^T in place with PDL, back to back on one
// stream: the second kernel's W stream starts while the first still runs, and
// its residual (h) must be read only once the first has completed. Twenty
// back-to-back pairs must equal, bitwise, the pair run with a sync between, and
// that within tolerance of h1 + x2 . W2^T from the downloaded h1.
TEST(EpiloguePdl, ResidualWrittenByThePreviousKernel) {
  TGV_REQUIRE_GPU();
  const int64_t m = 8, n = 4096, k1 = 8192, k2 = 1024;  // a long first GEMM, a short second
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  auto make = [&](int64_t count, float scale, std::vector<float>& values) {
    std::vector<uint16_t> bits(static_cast<size_t>(count));
    values.resize(size_t(count));
    for (int64_t i = 0; i < count; ++i) {
      bits[size_t(i)] = to_bits(u(rng) * scale, TGV_DTYPE_BF16);
      values[size_t(i)] = from_bits(bits[size_t(i)], TGV_DTYPE_BF16);
    }
    void* d = nullptr;
    EPI_CUDA(cudaMalloc(&d, bits.size() * 2));
    EPI_CUDA(cudaMemcpy(d, bits.data(), bits.size() * 2, cudaMemcpyHostToDevice));
    return d;
  };
  std::vector<float> x1f, w1f, x2f, w2f;
  void* x1 = make(m * k1, 1.0f, x1f);
  void* w1 = make(n * k1, 1.0f / std::sqrt(float(k1)), w1f);
  void* x2 = make(m * k2, 1.0f, x2f);
  void* w2 = make(n * k2, 1.0f / std::sqrt(float(k2)), w2f);
  void* h = nullptr;
  EPI_CUDA(cudaMalloc(&h, size_t(m * n) * 2));
  cudaStream_t stream = nullptr;
  EPI_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  tgv_problem p1, p2;
  tgv_default_problem(&p1, m, n, k1, 1);
  p1.x = x1, p1.w = w1, p1.out = h;
  tgv_default_problem(&p2, m, n, k2, 1);
  p2.x = x2, p2.w = w2, p2.out = h, p2.residual = h;
  auto download = [&] {
    std::vector<uint16_t> got(size_t(m * n));
    EPI_CUDA(cudaMemcpy(got.data(), h, got.size() * 2, cudaMemcpyDeviceToHost));
    return got;
  };
  std::vector<int32_t> backends = {TGV_BACKEND_AUTO};
  if (device_sm() == 90) backends.push_back(TGV_BACKEND_TGV);
  for (int32_t backend : backends) {
    SCOPED_TRACE(backend == TGV_BACKEND_TGV ? "backend=tgv" : "backend=auto");
    const tgv_options o{backend, -1, 1, 0, 0};
    ASSERT_EQ(tgv_gemm(&p1, &o, stream), TGV_SUCCESS) << tgv_last_error();
    EPI_CUDA(cudaStreamSynchronize(stream));
    const std::vector<uint16_t> h1 = download();
    ASSERT_EQ(tgv_gemm(&p2, &o, stream), TGV_SUCCESS) << tgv_last_error();
    EPI_CUDA(cudaStreamSynchronize(stream));
    const std::vector<uint16_t> serial = download();
    // The reference from the downloaded h1.
    int64_t bad = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = from_bits(h1[size_t(i * n + j)], TGV_DTYPE_BF16);
        for (int64_t kk = 0; kk < k2; ++kk) acc += double(x2f[size_t(i * k2 + kk)]) * w2f[size_t(j * k2 + kk)];
        const double got = from_bits(serial[size_t(i * n + j)], TGV_DTYPE_BF16);
        if (!(std::fabs(got - acc) <= 1e-2 + 1e-2 * std::fabs(acc)) && bad++ < 4)
          ADD_FAILURE() << "h(" << i << "," << j << ") = " << got << ", want " << acc;
      }
    EXPECT_EQ(bad, 0);
    for (int rep = 0; rep < 20; ++rep) {
      ASSERT_EQ(tgv_gemm(&p1, &o, stream), TGV_SUCCESS);
      ASSERT_EQ(tgv_gemm(&p2, &o, stream), TGV_SUCCESS);
      EPI_CUDA(cudaStreamSynchronize(stream));
      if (download() != serial) {
        ADD_FAILURE() << "back-to-back pair " << rep << " differs from the pair run with a sync between";
        break;
      }
    }
  }
  cudaStreamDestroy(stream);
  cudaFree(x1), cudaFree(w1), cudaFree(x2), cudaFree(w2), cudaFree(h);
}

// ---- bad combinations: refused before any launch, nothing written ------------

TEST(EpilogueErrors, RefusedCallsWriteNothing) {
  TGV_REQUIRE_GPU();
  for (int32_t backend : {TGV_BACKEND_AUTO, TGV_BACKEND_TGV, TGV_BACKEND_CUBLAS}) {
    EpiCase c = with_kind(EpiCase{}, kKinds[2]);  // residual aliasing out
    c.backend = backend;
    EpiFixture f(c);
    const tgv_problem good = f.problem();
    const tgv_options o{backend, -1, 1, 0, 0};
    auto expect_refused = [&](const tgv_problem& bad, tgv_status want, const char* text) {
      EXPECT_EQ(tgv_gemm(&bad, &o, nullptr), want) << text;
      EXPECT_NE(std::string(tgv_last_error()).find(text), std::string::npos) << tgv_last_error();
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_TRUE(f.unchanged(f.download())) << text;
    };
    tgv_problem p = good;
    p.residual = static_cast<const char*>(good.out) + 16;  // out shifted by 8 elements
    expect_refused(p, TGV_ERROR_INVALID_ARGUMENT, "partially overlaps out");
    p = good;
    p.epilogue = TGV_EPILOGUE_SILU_MUL;
    expect_refused(p, TGV_ERROR_INVALID_ARGUMENT, "a residual is added only without a gated epilogue");
    p = good;
    p.residual = nullptr;
    p.epilogue = TGV_EPILOGUE_SILU_MUL;
    p.n = good.n - 2 + 1;
    expect_refused(p, TGV_ERROR_INVALID_ARGUMENT, "needs an even n");
    p = good;
    p.dtype = TGV_DTYPE_FP16;  // out_dtype still bf16
    expect_refused(p, TGV_ERROR_NOT_SUPPORTED, "out_dtype=0 (bf16) with dtype=1 (fp16)");
    p = good;
    p.residual_stride_m = 1, p.residual_stride_n = good.m;  // column-major residual, row-major out
    expect_refused(p, TGV_ERROR_INVALID_ARGUMENT, "residual must be laid out like out");
  }
}

}  // namespace

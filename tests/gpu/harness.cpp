#include "gpu/harness.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "plan/device_info.hpp"
#include "plan/plan.hpp"
#include "tactics/tactics.hpp"

namespace tgv_test {
namespace {

void cuda_ok(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}
#define TGV_TEST_CUDA(call) cuda_ok((call), #call)

// bf16 <-> float on the host, round to nearest even (inputs are finite).
uint16_t to_bf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  bits += 0x7FFF + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}
float from_bf16(uint16_t h) {
  const uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

int64_t round_up(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

// A non-zero bf16 drawn from U(lo, hi) * scale; returns its bits, stores its value.
uint16_t draw(std::mt19937_64& rng, float scale, float& value) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (;;) {
    const uint16_t h = to_bf16(u(rng) * scale);
    if ((h & 0x7FFF) != 0) {
      value = from_bf16(h);
      return h;
    }
  }
}

// One process-wide stream: the cuBLASLt backend keeps a workspace per stream.
cudaStream_t shared_stream() {
  static cudaStream_t s = [] {
    cudaStream_t created = nullptr;
    TGV_TEST_CUDA(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking));
    return created;
  }();
  return s;
}

// Strided placement of a (batches x rows x k) input; padding holds kInputPoison.
struct InputLayout {
  int64_t ld, stride_r, stride_k, slab, batches;
  int64_t index(int64_t b, int64_t r, int64_t kk) const { return b * slab + r * stride_r + kk * stride_k; }
};

InputLayout input_layout(int64_t rows, int64_t k, bool k_major, int64_t pad, int64_t batch_pad, int64_t batches) {
  InputLayout L;
  L.ld = (k_major ? k : round_up(rows, 8)) + pad;
  L.stride_r = k_major ? L.ld : 1;
  L.stride_k = k_major ? 1 : L.ld;
  L.slab = (k_major ? rows : k) * L.ld + batch_pad;
  L.batches = batches;
  return L;
}

void* upload(const std::vector<uint16_t>& host) {
  void* d = nullptr;
  TGV_TEST_CUDA(cudaMalloc(&d, host.size() * sizeof(uint16_t)));
  TGV_TEST_CUDA(cudaMemcpy(d, host.data(), host.size() * sizeof(uint16_t), cudaMemcpyHostToDevice));
  return d;
}

std::string bits_hex(uint16_t h) {
  char b[8];
  std::snprintf(b, sizeof(b), "0x%04x", h);
  return b;
}

constexpr int kMaxReported = 8;

}  // namespace

bool has_cuda_device() {
  static const bool present = [] {
    int count = 0;
    return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
  }();
  return present;
}

int device_sm() {
  int device = 0;
  cudaDeviceProp prop{};
  if (!has_cuda_device() || cudaGetDevice(&device) != cudaSuccess ||
      cudaGetDeviceProperties(&prop, device) != cudaSuccess)
    return 0;
  return prop.major * 10 + prop.minor;
}

std::string tgv_family_missing() {
  int device = 0;
  if (!has_cuda_device()) return "no CUDA device";
  if (cudaGetDevice(&device) != cudaSuccess) return "cudaGetDevice failed";
  const tgv::detail::DeviceInfo& dev = tgv::detail::device_info(device);
  if (std::string why = tgv::detail::family_unavailable_reason(dev); !why.empty()) return why;
  if (tgv::detail::arch_family(dev.sm()) != 100) return {};
  // Blackwell is served only once the self-check gate has passed it.
  int32_t passed = 0;
  if (tgv_self_check(device, &passed) != TGV_SUCCESS) return std::string("tgv_self_check: ") + tgv_last_error();
  return passed ? std::string() : std::string("the sm_100 self-check did not pass: ") + tgv_last_error();
}

std::string tgv_cannot_run(const GemmCase& c) {
  if (std::string why = tgv_family_missing(); !why.empty()) return why;
  const int sm = device_sm(), family = tgv::detail::arch_family(sm);
  tgv_tactic_info t{};
  if (c.tactic >= 0) {
    if (tgv_get_tactic(c.tactic, &t) != TGV_SUCCESS) return {};  // an invalid id is the library's to refuse
    if (t.arch != family)
      return "tactic=" + std::to_string(c.tactic) + " is an sm_" + std::to_string(t.arch) + " tactic; this device is sm_" +
             std::to_string(sm);
  }
  if (family == 100) {
    if (!c.x_k_major || !c.w_k_major) return "the sm_100 kernel reads K-major x and W only";
    if (c.split_k > 1 || c.split_k == TGV_SPLIT_K_STREAM) return "the sm_100 kernel has no split-K or stream-K";
    if (c.stages > 0 && (c.tactic < 0 || c.stages != t.stages)) return "an sm_100 tactic runs its own fixed depth";
  }
  return {};
}

std::string tgv_refuses_by_design(const GemmCase& c) {
  if (c.l > 1 && (c.x_broadcast || c.w_broadcast)) return "the tgv kernels do not broadcast an input over the batch";
  return {};
}

std::string GemmCase::name() const {
  std::ostringstream s;
  s << "m" << m << "_n" << n << "_k" << k << "_l" << l << "_x" << (x_k_major ? "K" : "M") << "_w"
    << (w_k_major ? "K" : "N") << "_o" << (out_row_major ? "R" : "C");
  if (in_pad) s << "_ip" << in_pad;
  if (out_pad) s << "_op" << out_pad;
  if (batch_pad) s << "_bp" << batch_pad;
  if (x_broadcast) s << "_xbcast";
  if (w_broadcast) s << "_wbcast";
  if (bias) s << "_bias";
  s << options_suffix(tactic, split_k, stages, pdl);
  if (graph) s << "_graph";
  if (null_stream) s << "_nullstream";
  return s.str();
}

std::string options_suffix(int32_t tactic, int32_t split_k, int32_t stages, int32_t pdl) {
  std::ostringstream s;
  if (tactic >= 0) s << "_t" << tactic;
  if (split_k == TGV_SPLIT_K_STREAM)
    s << "_streamk";
  else if (split_k)
    s << "_sk" << split_k;
  if (stages) s << "_st" << stages;
  if (!pdl) s << "_nopdl";
  return s.str();
}

void PrintTo(const GemmCase& c, std::ostream* os) {
  *os << c.name() << " backend=" << c.backend << " seed=" << c.seed;
}

GemmFixture::GemmFixture(const GemmCase& c) : c_(c) {
  if (c.in_pad % 8 != 0 || c.batch_pad % 8 != 0)
    throw std::invalid_argument("GemmCase: in_pad and batch_pad must be multiples of 8");
  std::mt19937_64 rng(c.seed ^ (uint64_t(c.m) * 0x9E3779B97F4A7C15ull) ^ (uint64_t(c.n) << 20) ^ uint64_t(c.k) ^
                      (uint64_t(c.l) << 40));
  const int64_t lx = c.x_broadcast ? 1 : c.l, lw = c.w_broadcast ? 1 : c.l;

  // x: L x M x K, U(-1, 1).
  const InputLayout X = input_layout(c.m, c.k, c.x_k_major, c.in_pad, c.batch_pad, lx);
  std::vector<uint16_t> hx(size_t(X.slab * lx), kInputPoison);
  xf_.resize(size_t(lx * c.m * c.k));
  for (int64_t b = 0; b < lx; ++b)
    for (int64_t r = 0; r < c.m; ++r)
      for (int64_t kk = 0; kk < c.k; ++kk)
        hx[X.index(b, r, kk)] = draw(rng, 1.0f, xf_[(b * c.m + r) * c.k + kk]);

  // W: L x N x K, U(-1, 1) / sqrt(K): every dot product has a standard deviation near 1/3.
  const InputLayout W = input_layout(c.n, c.k, c.w_k_major, c.in_pad, c.batch_pad, lw);
  std::vector<uint16_t> hw(size_t(W.slab * lw), kInputPoison);
  wf_.resize(size_t(lw * c.n * c.k));
  const float w_scale = 1.0f / std::sqrt(float(c.k));
  for (int64_t b = 0; b < lw; ++b)
    for (int64_t r = 0; r < c.n; ++r)
      for (int64_t kk = 0; kk < c.k; ++kk)
        hw[W.index(b, r, kk)] = draw(rng, w_scale, wf_[(b * c.n + r) * c.k + kk]);

  std::vector<uint16_t> hb;
  if (c.bias) {
    hb.resize(size_t(c.n));
    biasf_.resize(size_t(c.n));
    for (int64_t j = 0; j < c.n; ++j) hb[j] = draw(rng, 0.5f, biasf_[j]);
  }

  // out: L x M x N inside guard bands.
  const int64_t rows_o = c.out_row_major ? c.m : c.n, cols_o = c.out_row_major ? c.n : c.m;
  const int64_t ldo = cols_o + c.out_pad, slab_o = rows_o * ldo + c.batch_pad;
  guard_elems_ = kGuardBytes / 2;
  out_alloc_elems_ = guard_elems_ + c.l * slab_o + guard_elems_;

  if (c.null_stream) {
    stream_ = nullptr;
  } else if (c.own_stream) {
    cudaStream_t created = nullptr;
    TGV_TEST_CUDA(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking));
    stream_ = created;
    own_stream_ = true;
  } else {
    stream_ = shared_stream();
  }
  d_x_ = upload(hx);
  d_w_ = upload(hw);
  if (c.bias) d_bias_ = upload(hb);
  TGV_TEST_CUDA(cudaMalloc(&d_out_alloc_, size_t(out_alloc_elems_) * 2));
  poison();

  tgv_default_problem(&problem_, c.m, c.n, c.k, c.l);
  problem_.x = d_x_;
  problem_.x_stride_l = c.x_broadcast ? 0 : X.slab;
  problem_.x_stride_m = X.stride_r;
  problem_.x_stride_k = X.stride_k;
  problem_.w = d_w_;
  problem_.w_stride_l = c.w_broadcast ? 0 : W.slab;
  problem_.w_stride_n = W.stride_r;
  problem_.w_stride_k = W.stride_k;
  problem_.bias = d_bias_;
  problem_.out = static_cast<uint16_t*>(d_out_alloc_) + guard_elems_;
  problem_.out_stride_l = slab_o;
  problem_.out_stride_m = c.out_row_major ? ldo : 1;
  problem_.out_stride_n = c.out_row_major ? 1 : ldo;
}

GemmFixture::~GemmFixture() {
  if (own_stream_) {
    cudaStreamSynchronize(static_cast<cudaStream_t>(stream_));
    cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
  }
  cudaFree(d_x_);
  cudaFree(d_w_);
  cudaFree(d_bias_);
  cudaFree(d_out_alloc_);
}

tgv_options GemmFixture::options() const { return tgv_options{c_.backend, c_.tactic, c_.pdl, c_.split_k, c_.stages}; }

void GemmFixture::poison() {
  // On the case's stream and waited for: a plain cudaMemcpy from pageable memory
  // may return before its DMA lands, and it is not ordered with a non-blocking
  // stream, so the poison could overwrite the next call's output (seen once,
  // 2026-12-05, Concurrency.ThreadsOnTheirOwnStreams on an H100).
  const std::vector<uint16_t> fill(size_t(out_alloc_elems_), kOutPoison);
  const cudaStream_t s = static_cast<cudaStream_t>(stream_);
  TGV_TEST_CUDA(cudaMemcpyAsync(d_out_alloc_, fill.data(), fill.size() * 2, cudaMemcpyHostToDevice, s));
  TGV_TEST_CUDA(cudaStreamSynchronize(s));
}

std::vector<uint16_t> GemmFixture::download() const {
  std::vector<uint16_t> host(static_cast<size_t>(out_alloc_elems_));
  TGV_TEST_CUDA(cudaMemcpy(host.data(), d_out_alloc_, host.size() * 2, cudaMemcpyDeviceToHost));
  return host;
}

int64_t GemmFixture::out_index(int64_t b, int64_t i, int64_t j) const {
  return guard_elems_ + b * problem_.out_stride_l + i * problem_.out_stride_m + j * problem_.out_stride_n;
}

tgv_status GemmFixture::run(const tgv_options& o, std::vector<std::string>& failures) {
  cudaGetLastError();
  const tgv_status s = tgv_gemm(&problem_, &o, stream_);
  const cudaError_t sync = cudaStreamSynchronize(static_cast<cudaStream_t>(stream_));
  if (sync != cudaSuccess)
    failures.push_back(std::string("cudaStreamSynchronize after tgv_gemm: ") + cudaGetErrorName(sync) + " (" +
                       cudaGetErrorString(sync) + ")");
  const cudaError_t last = cudaGetLastError();
  if (last != cudaSuccess) failures.push_back(std::string("cudaGetLastError after tgv_gemm: ") + cudaGetErrorName(last));
  return s;
}

tgv_status GemmFixture::run_graph(const tgv_options& o, std::vector<std::string>& failures) {
  auto stream = static_cast<cudaStream_t>(stream_);
  if (stream == nullptr) throw std::logic_error("graph capture needs a created stream");
  cudaGetLastError();
  TGV_TEST_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  const tgv_status s = tgv_gemm(&problem_, &o, stream_);
  cudaGraph_t graph = nullptr;
  const cudaError_t end = cudaStreamEndCapture(stream, &graph);
  if (end != cudaSuccess) {
    failures.push_back(std::string("cudaStreamEndCapture: ") + cudaGetErrorName(end) + " (capture invalidated by " +
                       "a call tgv_gemm made)");
    cudaGetLastError();
    if (graph) cudaGraphDestroy(graph);
    return s;
  }
  if (s == TGV_SUCCESS) {
    cudaGraphExec_t exec = nullptr;
    TGV_TEST_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    TGV_TEST_CUDA(cudaGraphLaunch(exec, stream));
    const cudaError_t sync = cudaStreamSynchronize(stream);
    if (sync != cudaSuccess) failures.push_back(std::string("graph replay: ") + cudaGetErrorName(sync));
    cudaGraphExecDestroy(exec);
  }
  cudaGraphDestroy(graph);
  return s;
}

void GemmFixture::compute_reference() {
  if (!ref_.empty()) return;
  const GemmCase& c = c_;
  const int64_t total = c.l * c.m * c.n;
  ref_.assign(size_t(total), 0.0);
  const int64_t k = c.k;
  auto work = [&](int64_t begin, int64_t end) {
    for (int64_t idx = begin; idx < end; ++idx) {
      const int64_t j = idx % c.n, i = (idx / c.n) % c.m, b = idx / (c.n * c.m);
      const float* xr = &xf_[((c.x_broadcast ? 0 : b) * c.m + i) * k];
      const float* wr = &wf_[((c.w_broadcast ? 0 : b) * c.n + j) * k];
      double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
      for (int64_t kk = 0; kk < k; kk += 4) {  // k is a multiple of 8
        a0 += double(xr[kk]) * wr[kk];
        a1 += double(xr[kk + 1]) * wr[kk + 1];
        a2 += double(xr[kk + 2]) * wr[kk + 2];
        a3 += double(xr[kk + 3]) * wr[kk + 3];
      }
      ref_[idx] = (a0 + a1) + (a2 + a3) + (c.bias ? double(biasf_[j]) : 0.0);
    }
  };
  const int64_t work_units = total * k;
  int threads = int(std::max(1u, std::thread::hardware_concurrency()));
  if (work_units < (int64_t(1) << 22)) threads = 1;
  threads = int(std::min<int64_t>(threads, total));
  std::vector<std::thread> pool;
  const int64_t chunk = (total + threads - 1) / threads;
  for (int t = 0; t < threads; ++t) {
    const int64_t begin = t * chunk, end = std::min(total, begin + chunk);
    if (begin < end) pool.emplace_back(work, begin, end);
  }
  for (auto& th : pool) th.join();
  double sq = 0;
  for (double v : ref_) sq += v * v;
  ref_rms_ = std::sqrt(sq / double(std::max<int64_t>(total, 1)));
}

void GemmFixture::check_result(const std::vector<uint16_t>& got, std::vector<std::string>& failures,
                               CaseResult* stats) {
  compute_reference();
  const GemmCase& c = c_;
  // Tolerance. out is bf16: rounding the fp32 result to bf16 alone costs up
  // to 2^-9 relative (half an ulp of an 8-bit significand), and a bias added
  // after a bf16 rounding of the product could double that; fp32
  // accumulation over K <= 4104 terms adds ~sqrt(K) * 2^-24 relative to the
  // terms, negligible. rtol = 1e-2 covers that with margin while any real bug
  // (a missing K block, a wrong row, a lost bias) moves elements by a sizeable
  // fraction of the typical magnitude. Elements near zero after cancellation
  // have no meaningful relative error, hence atol = 1e-2 * the RMS of the
  // reference (~1/3 without bias by construction of the inputs).
  const double rtol = 1e-2, atol = 1e-2 * (ref_rms_ > 0 ? ref_rms_ : 1.0);
  std::vector<uint8_t> logical(got.size(), 0);
  int64_t bad = 0, nans = 0;
  double max_abs = 0;
  std::ostringstream first;
  for (int64_t b = 0; b < c.l; ++b)
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        const int64_t at = out_index(b, i, j);
        logical[size_t(at)] = 1;
        const float v = from_bf16(got[size_t(at)]);
        const double want = ref_[size_t((b * c.m + i) * c.n + j)];
        if (std::isnan(v)) {
          if (nans++ < kMaxReported)
            first << "\n  out(" << b << "," << i << "," << j << ") is NaN (" << bits_hex(got[size_t(at)])
                  << (got[size_t(at)] == kOutPoison ? ": never written" : "") << "), want " << want;
          continue;
        }
        const double err = std::fabs(double(v) - want);
        max_abs = std::max(max_abs, err);
        if (!(err <= atol + rtol * std::fabs(want)) && bad++ < kMaxReported)
          first << "\n  out(" << b << "," << i << "," << j << ") = " << v << ", want " << want << " (|err| "
                << err << " > " << atol + rtol * std::fabs(want) << ")";
      }
  if (bad || nans) {
    std::ostringstream s;
    s << bad << " elements outside |err| <= " << atol << " + " << rtol << "*|ref| and " << nans << " NaN, of "
      << c.l * c.m * c.n << " (ref rms " << ref_rms_ << ", max |err| " << max_abs << "); first:" << first.str();
    failures.push_back(s.str());
  }

  int64_t touched = 0;
  std::ostringstream where;
  const int64_t out_end = guard_elems_ + c.l * problem_.out_stride_l;
  for (size_t at = 0; at < got.size(); ++at) {
    if (logical[at] || got[at] == kOutPoison) continue;
    if (touched++ < kMaxReported) {
      const int64_t a = int64_t(at);
      where << "\n  offset " << a - guard_elems_ << " elements from out ("
            << (a < guard_elems_ ? "front guard" : a >= out_end ? "back guard" : "padding inside out's extent")
            << ") holds " << bits_hex(got[at]);
    }
  }
  if (touched) {
    std::ostringstream s;
    s << touched << " elements outside out's logical extent were overwritten; first:" << where.str();
    failures.push_back(s.str());
  }
  if (stats) {
    stats->ref_rms = ref_rms_;
    stats->max_abs_err = max_abs;
  }
}

void GemmFixture::check_untouched(const std::vector<uint16_t>& got, std::vector<std::string>& failures) const {
  int64_t touched = 0;
  std::ostringstream where;
  for (size_t at = 0; at < got.size(); ++at) {
    if (got[at] == kOutPoison) continue;
    if (touched++ < kMaxReported)
      where << "\n  offset " << int64_t(at) - guard_elems_ << " from out holds " << bits_hex(got[at]);
  }
  if (touched) {
    std::ostringstream s;
    s << touched << " elements of the poisoned out allocation were written by a call that failed; first:"
      << where.str();
    failures.push_back(s.str());
  }
}

CaseResult run_case(const GemmCase& c) {
  CaseResult r;
  GemmFixture f(c);
  const tgv_options o = f.options();
  r.status = f.run(o, r.failures);
  if (r.status != TGV_SUCCESS) {
    r.message = tgv_last_error();
    f.check_untouched(f.download(), r.failures);
    return r;
  }
  const std::vector<uint16_t> first = f.download();
  f.check_result(first, r.failures, &r);

  auto compare = [&](const char* what, const std::vector<uint16_t>& other) {
    int64_t diff = 0, at_first = -1;
    for (size_t i = 0; i < first.size(); ++i)
      if (first[i] != other[i] && diff++ == 0) at_first = int64_t(i);
    if (diff) {
      std::ostringstream s;
      s << what << ": " << diff << " elements differ bitwise from the first run; first at offset "
        << at_first - int64_t(kGuardBytes / 2) << ": " << bits_hex(first[size_t(at_first)]) << " vs "
        << bits_hex(other[size_t(at_first)]);
      r.failures.push_back(s.str());
    }
  };
  if (c.repeat) {
    f.poison();
    const tgv_status again = f.run(o, r.failures);
    if (again != TGV_SUCCESS)
      r.failures.push_back(std::string("repeated call failed: ") + tgv_status_name(again) + ": " + tgv_last_error());
    else
      compare("repeated run", f.download());
  }
  if (c.graph && !c.null_stream) {
    f.poison();
    const tgv_status captured = f.run_graph(o, r.failures);
    if (captured != TGV_SUCCESS) {
      r.failures.push_back(std::string("call under graph capture failed: ") + tgv_status_name(captured) + ": " +
                           tgv_last_error());
    } else {
      const std::vector<uint16_t> replayed = f.download();
      const size_t before = r.failures.size();
      f.check_result(replayed, r.failures);
      for (size_t i = before; i < r.failures.size(); ++i) r.failures[i] = "graph replay: " + r.failures[i];
      compare("graph replay", replayed);
    }
  }
  return r;
}

std::vector<CaseResult> run_cases_on_threads(std::vector<GemmCase> cases) {
  std::vector<CaseResult> results(cases.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < cases.size(); ++i) {
    cases[i].own_stream = true;
    cases[i].seed += i;
    threads.emplace_back([&, i] {
      try {
        results[i] = run_case(cases[i]);
      } catch (const std::exception& e) {
        results[i].failures.push_back(std::string("threw: ") + e.what());
      }
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

}  // namespace tgv_test

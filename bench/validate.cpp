#include "validate.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "cuda_check.hpp"
#include "fill.hpp"
#include "reference.hpp"
#include "tgv/tgv.hpp"

namespace {

// M: one token, tails of the 8- and 32-token tiles, one past a 128-token tile.
constexpr int64_t kMs[] = {1, 7, 16, 33, 130};
// N: tails of every weight tile (and of a CTA pair's rows); K: a 64-column tail
// after two stages, a plain 1024, and a long K with a tail for split-K.
struct WeightShape {
  int64_t n, k;
};
constexpr WeightShape kShapes[] = {{200, 136}, {1000, 1024}, {2056, 4104}};
constexpr int64_t kMaxM = 130;
constexpr int64_t kGuard = 2048;     // poisoned elements before and after out
constexpr uint16_t kPoison = 0xFFFF;  // a bf16 NaN: an element never written fails the check
constexpr int kMaxListed = 20;       // failure lines printed in full

int64_t round_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

struct Layout {
  bool x_k_major, w_k_major, out_row_major;
  std::string name() const {
    return std::string("x ") + (x_k_major ? "K" : "M") + "-major, w " + (w_k_major ? "K" : "N") + "-major, out " +
           (out_row_major ? "row" : "column") + "-major";
  }
};

class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t elements) { CUDA_CHECK(cudaMalloc(&ptr_, elements * 2)); }
  ~DeviceBuffer() { cudaFree(ptr_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  __nv_bfloat16* get() const { return ptr_; }

 private:
  __nv_bfloat16* ptr_ = nullptr;
};

std::vector<uint16_t> download(const __nv_bfloat16* d, size_t elements, cudaStream_t stream) {
  std::vector<uint16_t> h(elements);
  CUDA_CHECK(cudaMemcpyAsync(h.data(), d, elements * 2, cudaMemcpyDeviceToHost, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return h;
}

// The rows x k K-major matrix `packed` laid out MN-major (rows contiguous) with
// leading dimension `ld`, in a device buffer; padding holds NaN.
std::unique_ptr<DeviceBuffer> mn_major_copy(const std::vector<uint16_t>& packed, int64_t rows, int64_t k, int64_t ld,
                                            cudaStream_t stream) {
  std::vector<uint16_t> t(static_cast<size_t>(k * ld), kPoison);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < k; ++c) t[static_cast<size_t>(c * ld + r)] = packed[static_cast<size_t>(r * k + c)];
  auto d = std::make_unique<DeviceBuffer>(t.size());
  CUDA_CHECK(cudaMemcpyAsync(d->get(), t.data(), t.size() * 2, cudaMemcpyHostToDevice, stream));
  CUDA_CHECK(cudaStreamSynchronize(stream));
  return d;
}

struct Tally {
  int64_t cases = 0, passed = 0, failed = 0, refused = 0;
};

class Grid {
 public:
  Grid(std::vector<tgv_tactic_info> tactics, cudaStream_t stream) : tactics_(std::move(tactics)), stream_(stream) {}

  // False once a CUDA error has made the context unusable: the grid stops there.
  bool run() {
    for (size_t s = 0; s < sizeof(kShapes) / sizeof(kShapes[0]); ++s)
      if (!run_shape(kShapes[s], s)) return false;
    return true;
  }

  const std::map<int32_t, Tally>& tallies() const { return tallies_; }
  const std::vector<std::string>& failures() const { return failures_; }
  const std::string& first_refusal() const { return first_refusal_; }

 private:
  bool run_shape(const WeightShape& shape, size_t index) {
    const int64_t n = shape.n, k = shape.k;
    DeviceBuffer x(static_cast<size_t>(kMaxM * k)), w(static_cast<size_t>(n * k)), bias(static_cast<size_t>(n));
    fill_uniform_bf16(x.get(), static_cast<size_t>(kMaxM * k), 100 + index * 3, 1.0f, stream_);
    fill_uniform_bf16(w.get(), static_cast<size_t>(n * k), 101 + index * 3, 1.0f / std::sqrt(float(k)), stream_);
    fill_uniform_bf16(bias.get(), static_cast<size_t>(n), 102 + index * 3, 0.5f, stream_);
    const std::vector<uint16_t> host_x = download(x.get(), static_cast<size_t>(kMaxM * k), stream_);
    const std::unique_ptr<DeviceBuffer> w_n = mn_major_copy(download(w.get(), size_t(n * k), stream_), n, k,
                                                            round_up(n, 8), stream_);
    // The largest out: column-major with the most tokens, plus its guards.
    const size_t out_elements = static_cast<size_t>(2 * kGuard + n * round_up(kMaxM, 8));
    DeviceBuffer out(out_elements);

    for (const int64_t m : kMs) {
      const std::unique_ptr<DeviceBuffer> x_m = mn_major_copy(host_x, m, k, round_up(m, 8), stream_);
      for (const bool with_bias : {false, true}) {
        const std::vector<float> ref = reference_gemm(x.get(), w.get(), with_bias ? bias.get() : nullptr, m, n, k,
                                                      stream_);
        for (const tgv_tactic_info& t : tactics_)
          for (const int32_t split_k : t.arch == 90 ? std::vector<int32_t>{0, 2} : std::vector<int32_t>{0})
            for (int l = 0; l < 8; ++l) {
              const Layout layout{(l & 1) == 0, (l & 2) == 0, (l & 4) == 0};
              tgv::Problem p = tgv::Problem::packed(m, n, k);
              p.x = layout.x_k_major ? x.get() : x_m->get();
              if (!layout.x_k_major) p.x_stride_m = 1, p.x_stride_k = round_up(m, 8);
              p.w = layout.w_k_major ? w.get() : w_n->get();
              if (!layout.w_k_major) p.w_stride_n = 1, p.w_stride_k = round_up(n, 8);
              p.bias = with_bias ? bias.get() : nullptr;
              p.out = out.get() + kGuard;
              if (!layout.out_row_major) p.out_stride_m = 1, p.out_stride_n = round_up(m, 8);
              // Only the extent this case writes, and its guards, are poisoned and checked.
              const size_t used = static_cast<size_t>(2 * kGuard + (layout.out_row_major ? m * n : n * round_up(m, 8)));
              const std::string what = describe(t, split_k, m, n, k, layout, with_bias);
              if (!run_case(t.id, split_k, p, ref, out.get(), used, what)) return false;
            }
      }
    }
    return true;
  }

  static std::string describe(const tgv_tactic_info& t, int32_t split_k, int64_t m, int64_t n, int64_t k,
                              const Layout& layout, bool bias) {
    char text[256];
    std::snprintf(text, sizeof(text), "tactic %d (%dx%dx%d%s) split_k=%d m=%lld n=%lld k=%lld, %s%s", t.id, t.cta_m,
                  t.cta_n, t.cta_k, t.cluster > 1 ? ", CTA pair" : "", split_k, static_cast<long long>(m),
                  static_cast<long long>(n), static_cast<long long>(k), layout.name().c_str(), bias ? ", bias" : "");
    return text;
  }

  bool run_case(int32_t tactic, int32_t split_k, const tgv::Problem& p, const std::vector<float>& ref,
                __nv_bfloat16* out_alloc, size_t out_elements, const std::string& what) {
    Tally& tally = tallies_[tactic];
    CUDA_CHECK(cudaMemsetAsync(out_alloc, 0xFF, out_elements * 2, stream_));
    tgv::Options o;
    o.backend = tgv::Backend::Tgv;
    o.tactic = tactic;
    o.split_k = split_k;
    const tgv::Status s = tgv::gemm(p, o, stream_);
    if (s.code() == TGV_ERROR_NOT_SUPPORTED) {  // a layout the family does not read, say
      ++tally.refused;
      if (first_refusal_.empty()) first_refusal_ = what + ": " + s.message();
      return true;
    }
    ++tally.cases;
    if (!s) return fail(tally, what + ": " + tgv_status_name(s.code()) + ": " + s.message());
    const cudaError_t e = cudaStreamSynchronize(stream_);
    if (e != cudaSuccess) {
      fail(tally, what + ": the kernel failed: " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) +
                      "); the CUDA context is unusable, the grid stops here");
      return false;
    }
    const std::vector<uint16_t> got = download(out_alloc, out_elements, stream_);
    // Gather the logical M x N result, row-major; every other element must still be poison.
    std::vector<uint16_t> logical(static_cast<size_t>(p.m * p.n));
    std::vector<char> is_logical(out_elements, 0);
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j) {
        const size_t at = static_cast<size_t>(kGuard + i * p.out_stride_m + j * p.out_stride_n);
        logical[static_cast<size_t>(i * p.n + j)] = got[at];
        is_logical[at] = 1;
      }
    int64_t stray = 0;
    for (size_t at = 0; at < out_elements; ++at) stray += !is_logical[at] && got[at] != kPoison;
    const CheckResult r = compare_output(ref, logical, p.m, p.n);
    if (r.ok() && stray == 0) {
      ++tally.passed;
      return true;
    }
    char detail[320];
    std::snprintf(detail, sizeof(detail),
                  ": %lld of %lld elements outside %g + %g*|ref| (worst out(%lld, %lld) = %g, ref %g); %lld elements "
                  "outside out written",
                  static_cast<long long>(r.bad), static_cast<long long>(p.m * p.n), kAbsTol, kRelTol,
                  static_cast<long long>(r.worst_m), static_cast<long long>(r.worst_n), r.worst_out, r.worst_ref,
                  static_cast<long long>(stray));
    return fail(tally, what + detail);
  }

  bool fail(Tally& tally, const std::string& line) {
    ++tally.failed;
    failures_.push_back(line);
    return true;
  }

  std::vector<tgv_tactic_info> tactics_;
  cudaStream_t stream_;
  std::map<int32_t, Tally> tallies_;
  std::vector<std::string> failures_;
  std::string first_refusal_;
};

}  // namespace

int run_validate(int device, cudaStream_t stream) {
  // The grid is the stronger check: the library's own self-check must not
  // stand between it and the kernels (it would disable an unvalidated family).
  const char* before = std::getenv("TGV_SELF_CHECK");
  if (before != nullptr && std::strcmp(before, "pass") != 0)
    std::fprintf(stderr, "tgv-bench --validate: TGV_SELF_CHECK=%s overridden with pass for this run\n", before);
  setenv("TGV_SELF_CHECK", "pass", 1);

  cudaDeviceProp prop{};
  CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
  const int sm = prop.major * 10 + prop.minor;
  const int family = sm == 103 ? 100 : sm;
  std::vector<tgv_tactic_info> tactics;
  for (const tgv_tactic_info& t : tgv::list_tactics())
    if (t.arch == family && t.stages > 0) tactics.push_back(t);
  if (tactics.empty()) {
    std::printf("verdict: FAIL: no tgv tactic for sm_%d (%s); nothing to validate\n", sm, prop.name);
    return 1;
  }
  std::fflush(stdout);

  Grid grid(tactics, stream);
  const bool completed = grid.run();

  std::printf("%6s  %-16s %7s %7s %7s %8s\n", "tactic", "tile", "cases", "passed", "failed", "refused");
  Tally total;
  for (const tgv_tactic_info& t : tactics) {
    const auto it = grid.tallies().find(t.id);
    const Tally tally = it == grid.tallies().end() ? Tally{} : it->second;
    char tile[48];
    std::snprintf(tile, sizeof(tile), "%dx%dx%d%s", t.cta_m, t.cta_n, t.cta_k, t.cluster > 1 ? " pair" : "");
    std::printf("%6d  %-16s %7lld %7lld %7lld %8lld\n", t.id, tile, static_cast<long long>(tally.cases),
                static_cast<long long>(tally.passed), static_cast<long long>(tally.failed),
                static_cast<long long>(tally.refused));
    total.cases += tally.cases, total.passed += tally.passed, total.failed += tally.failed,
        total.refused += tally.refused;
  }
  const std::vector<std::string>& failures = grid.failures();
  for (size_t i = 0; i < failures.size() && i < size_t(kMaxListed); ++i) std::printf("FAIL %s\n", failures[i].c_str());
  if (failures.size() > size_t(kMaxListed))
    std::printf("... and %zu more failures\n", failures.size() - size_t(kMaxListed));
  if (total.refused > 0) std::printf("refused (not counted as cases), first: %s\n", grid.first_refusal().c_str());

  const bool pass = completed && total.failed == 0 && total.cases > 0;
  std::printf("verdict: %s: %lld of %lld cases passed, %lld failed, %lld refused%s | %s (sm_%d, %d SMs) | tgv-gemm %s\n",
              pass ? "PASS" : "FAIL", static_cast<long long>(total.passed), static_cast<long long>(total.cases),
              static_cast<long long>(total.failed), static_cast<long long>(total.refused),
              completed ? "" : " (stopped by a CUDA error)", prop.name, sm, prop.multiProcessorCount,
              tgv_version_string());
  return pass ? 0 : 1;
}

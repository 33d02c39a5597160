// The GPU test harness: one GEMM case, run through the public C ABI and
// checked against a float64 CPU reference.
//
// For a case it
//   * makes bf16 inputs with a seeded RNG, never exactly zero:
//       x ~ U(-1, 1), W ~ U(-1, 1) / sqrt(K), bias ~ U(-0.5, 0.5);
//   * lays them out with the requested strides, padding leading dimensions and
//     batch gaps when asked; every padding element of an input holds a NaN, so
//     a kernel that reads outside the logical matrix poisons its own result;
//   * places `out` inside a larger allocation with guard bands of 4 KiB before
//     and after, all of it (out, guards, gaps between rows and batches) filled
//     with the bf16 NaN pattern 0x7FC1;
//   * runs tgv_gemm, then checks every element of out against the reference,
//     that no NaN is left in out, and that every element outside out's logical
//     extent still holds 0x7FC1;
//   * with `repeat`, poisons and runs again and compares the two results bitwise;
//   * with `graph`, poisons, captures the call in a CUDA graph, replays it and
//     checks the result again.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "tgv/tgv.h"

namespace tgv_test {

inline constexpr uint16_t kOutPoison = 0x7FC1;    // quiet NaN, bf16
inline constexpr uint16_t kInputPoison = 0xFFC3;  // another quiet NaN, in input padding
inline constexpr int64_t kGuardBytes = 4096;

// True when cudaGetDeviceCount reports at least one device.
bool has_cuda_device();

// Every GPU test starts with this: reported as skipped, never passed, without a GPU.
#define TGV_REQUIRE_GPU()                                                      \
  do {                                                                         \
    if (!::tgv_test::has_cuda_device()) GTEST_SKIP() << "no CUDA device";      \
  } while (0)

struct GemmCase;

// The current device's architecture as sm (90, 100, 103, ...); 0 without one.
int device_sm();

// Why the tgv kernel family cannot serve the current device at all: this build
// has none for its architecture, or (Blackwell) its self-check has not passed.
// Empty if the family serves the device.
std::string tgv_family_missing();

// Why the tgv backend cannot run case `c` on this device -- the family is
// missing, an explicit tactic belongs to another family, or the sm_100 kernel
// lacks what the case asks for (M- or N-major inputs, split-K, another depth).
// Empty if this device's family must serve it. A GPU test skips only for such
// a reason, and says it.
std::string tgv_cannot_run(const GemmCase& c);

// Why the tgv kernels refuse `c` on every device, by design (an input
// broadcast over the batch); empty if they do not. Such a case must be refused
// (NOT_SUPPORTED, nothing written), which is a pass, not a skip.
std::string tgv_refuses_by_design(const GemmCase& c);

// For tests that use the tgv kernels: a skip, with the reason, where the
// family cannot serve this device.
#define TGV_REQUIRE_TGV_FAMILY()                                                          \
  do {                                                                                    \
    TGV_REQUIRE_GPU();                                                                    \
    if (const std::string why = ::tgv_test::tgv_family_missing(); !why.empty())           \
      GTEST_SKIP() << "the tgv kernels cannot serve this device: " << why;                \
  } while (0)

struct GemmCase {
  int64_t m = 1, n = 64, k = 64, l = 1;
  bool x_k_major = true;      // else M-major
  bool w_k_major = true;      // else N-major
  bool out_row_major = true;  // else column-major
  int64_t in_pad = 0;         // extra elements in x's and W's leading dimension (a multiple of 8)
  int64_t out_pad = 0;        // extra elements in out's leading dimension (any)
  int64_t batch_pad = 0;      // extra elements between batches (a multiple of 8)
  bool x_broadcast = false;   // x_stride_l = 0: one x for every batch
  bool w_broadcast = false;   // w_stride_l = 0: one W for every batch
  bool bias = false;
  int32_t backend = TGV_BACKEND_CUBLAS;
  int32_t tactic = -1;
  int32_t pdl = 1;
  int32_t split_k = 0;
  int32_t stages = 0;
  bool repeat = true;        // run twice, compare bitwise
  bool graph = false;        // also run once captured in a CUDA graph
  bool null_stream = false;  // the legacy stream instead of a created one
  bool own_stream = false;   // a stream of its own instead of the shared one (threads)
  uint64_t seed = 0x5eed;

  // A gtest-safe name: m7_n1000_k136_l1_xK_wK_oR ...
  std::string name() const;
};

// How gtest prints a case (instead of its bytes).
void PrintTo(const GemmCase& c, std::ostream* os);

// The part of a gtest-safe case name that names the explicit tgv options:
// "_t3_sk2_st8_nopdl", "_streamk" for TGV_SPLIT_K_STREAM; empty at the defaults.
std::string options_suffix(int32_t tactic, int32_t split_k, int32_t stages, int32_t pdl);

// The outcome of one case. status/message come from the first tgv_gemm call;
// `failures` lists every check that failed (empty: all passed).
struct CaseResult {
  tgv_status status = TGV_SUCCESS;
  std::string message;
  std::vector<std::string> failures;
  double ref_rms = 0, max_abs_err = 0;
};

// One case's buffers on the device, for tests that drive tgv_gemm themselves.
class GemmFixture {
 public:
  explicit GemmFixture(const GemmCase& c);
  ~GemmFixture();
  GemmFixture(const GemmFixture&) = delete;
  GemmFixture& operator=(const GemmFixture&) = delete;

  const GemmCase& spec() const { return c_; }
  const tgv_problem& problem() const { return problem_; }
  tgv_problem& problem() { return problem_; }
  tgv_options options() const;
  void* stream() const { return stream_; }
  // Computes the float64 reference now (else check_result does, once): for
  // tests whose timed phase must not be spent on it.
  void prepare_reference() { compute_reference(); }
  // The float64 reference of out (l, m, n) and its RMS (computed on first use).
  double reference(int64_t l, int64_t m, int64_t n) {
    compute_reference();
    return ref_[size_t((l * c_.m + m) * c_.n + n)];
  }
  // The case's bias at weight row n (0 without one), as the reference used it.
  double bias_value(int64_t n) const { return biasf_.empty() ? 0.0 : double(biasf_[size_t(n)]); }
  double reference_rms() {
    compute_reference();
    return ref_rms_;
  }

  // Fills the whole out allocation (guards included) with kOutPoison.
  void poison();
  // tgv_gemm on the case's stream, then a stream synchronize. A CUDA error
  // after the call is reported as a failure line in `failures`.
  tgv_status run(const tgv_options& o, std::vector<std::string>& failures);
  // Same, captured in a CUDA graph, then replayed once.
  tgv_status run_graph(const tgv_options& o, std::vector<std::string>& failures);
  // The whole out allocation, guards included.
  std::vector<uint16_t> download() const;

  // Checks `got` (a download()) against the reference; appends failures.
  void check_result(const std::vector<uint16_t>& got, std::vector<std::string>& failures, CaseResult* stats = nullptr);
  // Checks that every element of `got` still holds kOutPoison.
  void check_untouched(const std::vector<uint16_t>& got, std::vector<std::string>& failures) const;
  // Offset of out (l, m, n) in the whole allocation, in elements.
  int64_t out_index(int64_t l, int64_t m, int64_t n) const;

 private:
  void compute_reference();

  GemmCase c_;
  tgv_problem problem_{};
  void* stream_ = nullptr;
  bool own_stream_ = false;
  // Compact float copies of the bf16 inputs: x [lx][m][k], W [lw][n][k], bias [n].
  std::vector<float> xf_, wf_, biasf_;
  std::vector<double> ref_;  // [l][m][n]
  double ref_rms_ = 0;
  void* d_x_ = nullptr;
  void* d_w_ = nullptr;
  void* d_bias_ = nullptr;
  void* d_out_alloc_ = nullptr;
  int64_t out_alloc_elems_ = 0, guard_elems_ = 0;
};

// Runs a whole case: run (+ repeat, + graph) and every check.
CaseResult run_case(const GemmCase& c);

// Runs each case on a host thread of its own, all at once, each on a stream of
// its own (own_stream set, seed offset by the index); an exception a thread
// throws becomes a failure line of its case.
std::vector<CaseResult> run_cases_on_threads(std::vector<GemmCase> cases);

}  // namespace tgv_test

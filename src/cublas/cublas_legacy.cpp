#include "cublas/cublas_legacy.hpp"

#include <cublas_v2.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>

#include "common/cuda_check.hpp"
#include "common/error.hpp"
#include "common/relaxed_capture.hpp"
#include "common/strfmt.hpp"
#include "cublas/cublas_check.hpp"

namespace tgv::detail {
namespace {

// One handle per device. A handle's stream and workspace are per handle, not
// per call, so setting them and enqueuing the GEMM happen under its lock (host
// work of a few microseconds; the GEMMs of two streams still overlap on the GPU).
struct Handle {
  std::mutex mutex;
  cublasHandle_t h = nullptr;
};

Handle& handle_for(int device) {
  static std::mutex mutex;
  static std::map<int, Handle> handles;
  std::lock_guard<std::mutex> lock(mutex);
  Handle& handle = handles[device];
  if (handle.h == nullptr) {
    // cublasCreate allocates; under a capture (a stream's first call captured)
    // that is legal in relaxed mode only.
    const RelaxedCaptureScope relaxed;
    TGV_CUBLAS_CHECK(cublasCreate(&handle.h));
    // Split-K partial sums in fp32, never in the bf16 output type.
    TGV_CUBLAS_CHECK(cublasSetMathMode(
        handle.h, cublasMath_t(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)));
  }
  return handle;
}

std::atomic<uint64_t> legacy_calls{0};

bool fits_int(int64_t v) { return v >= 0 && v <= INT_MAX; }

cudaDataType_t cuda_type(DType t) { return t == DType::FP16 ? CUDA_R_16F : CUDA_R_16BF; }

// cuBLAS is column-major: a row-major out is the column-major N x M matrix
// W . x^T, a column-major out the M x N matrix x . W^T. The left operand is
// transposed when K-major, the right one when not (cublaslt_backend's describe()).
struct Mapped {
  const Operand* left;
  const Operand* right;
  int64_t rows, cols;
};

Mapped map(const GemmDesc& g) {
  const bool row = g.out.row_major;
  return {row ? &g.w : &g.x, row ? &g.x : &g.w, row ? g.n : g.m, row ? g.m : g.n};
}

// The rows of an operand as stored column-major: K when K-major, else its own rows.
int64_t stored_rows(const Operand& o, int64_t rows, int64_t k) { return o.major == Major::K ? k : rows; }

}  // namespace

CublasApi cublas_api_from(const char* value, bool* unknown) {
  if (unknown) *unknown = false;
  if (value == nullptr || value[0] == '\0') return kDefaultCublasApi;
  std::string s(value);
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (s == "lt") return CublasApi::Lt;
  if (s == "legacy") return CublasApi::Legacy;
  if (unknown) *unknown = true;
  return kDefaultCublasApi;
}

CublasApi cublas_api_now() {
  const char* v = std::getenv("TGV_CUBLAS_API");
  bool unknown = false;
  const CublasApi api = cublas_api_from(v, &unknown);
  static std::once_flag warned;
  if (unknown)
    std::call_once(warned, [v] {
      std::fprintf(stderr, "[tgv] TGV_CUBLAS_API=%s is not one of lt, legacy; using the default\n", v);
    });
  return api;
}

bool legacy_serves(const GemmDesc& g) {
  if (g.bias != nullptr || g.has_residual() || g.act != Act::None || g.out_type != g.in_type) return false;
  const Mapped mp = map(g);
  if (!fits_int(g.m) || !fits_int(g.n) || !fits_int(g.k) || !fits_int(g.l)) return false;
  if (!fits_int(mp.left->ld) || !fits_int(mp.right->ld) || !fits_int(g.out.ld)) return false;
  if (mp.left->ld < std::max<int64_t>(1, stored_rows(*mp.left, mp.rows, g.k))) return false;
  if (mp.right->ld < std::max<int64_t>(1, stored_rows(*mp.right, mp.cols, g.k))) return false;
  if (g.out.ld < std::max<int64_t>(1, mp.rows)) return false;
  if (g.l > 1 && (g.x.batch_stride == 0 || g.w.batch_stride == 0 || g.out.batch_stride == 0)) return false;
  return true;
}

void cublas_legacy_gemm(const GemmDesc& g, void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  if (!legacy_serves(g)) throw Error(TGV_ERROR_INTERNAL, "cublas_legacy_gemm called for a GEMM it cannot serve");
  int device = 0;
  TGV_CUDA_CHECK(cudaGetDevice(&device));
  Handle& handle = handle_for(device);
  const Mapped mp = map(g);
  const cublasOperation_t ta = mp.left->major == Major::K ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = mp.right->major == Major::K ? CUBLAS_OP_N : CUBLAS_OP_T;
  const cudaDataType_t type = cuda_type(g.in_type);
  const float alpha = 1.0f, beta = 0.0f;
  std::lock_guard<std::mutex> lock(handle.mutex);
  // cublasSetStream resets the workspace to cuBLAS's own pool: set ours after it.
  TGV_CUBLAS_CHECK(cublasSetStream(handle.h, stream));
  TGV_CUBLAS_CHECK(cublasSetWorkspace(handle.h, workspace, workspace_bytes));
  if (g.l == 1) {
    TGV_CUBLAS_CHECK(cublasGemmEx(handle.h, ta, tb, int(mp.rows), int(mp.cols), int(g.k), &alpha, mp.left->ptr, type,
                                  int(mp.left->ld), mp.right->ptr, type, int(mp.right->ld), &beta, g.out.ptr, type,
                                  int(g.out.ld), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  } else {
    TGV_CUBLAS_CHECK(cublasGemmStridedBatchedEx(
        handle.h, ta, tb, int(mp.rows), int(mp.cols), int(g.k), &alpha, mp.left->ptr, type, int(mp.left->ld),
        mp.left->batch_stride, mp.right->ptr, type, int(mp.right->ld), mp.right->batch_stride, &beta, g.out.ptr,
        type, int(g.out.ld), g.out.batch_stride, int(g.l), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }
  legacy_calls.fetch_add(1, std::memory_order_relaxed);
}

uint64_t cublas_legacy_calls() { return legacy_calls.load(std::memory_order_relaxed); }

}  // namespace tgv::detail

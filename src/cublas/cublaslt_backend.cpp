#include "cublas/cublaslt_backend.hpp"

#include <cublasLt.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <utility>

#include "common/cuda_check.hpp"
#include "common/cuda_context.hpp"
#include "common/stream_buffer.hpp"
#include "cublas/cublas_check.hpp"
#include "cublas/cublas_legacy.hpp"

namespace tgv::detail {
namespace {

constexpr size_t kWorkspaceBytes = size_t(32) << 20;

// One handle per device, created on first use and kept for the process.
cublasLtHandle_t handle_for(int device) {
  static std::mutex mutex;
  static std::map<int, cublasLtHandle_t> handles;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = handles.find(device);
  if (it != handles.end()) return it->second;
  cublasLtHandle_t h = nullptr;
  TGV_CUBLAS_CHECK(cublasLtCreate(&h));
  handles.emplace(device, h);
  return h;
}

// A workspace per (device, stream) (common/stream_buffer.hpp), allocated on
// the stream's first call, also when that call is captured. (A stream first seen
// under capture used to get none, so its algorithms ran without split-K: the
// captured benchmarks of issue 10 measured 576x7168 at M = 64 1.5x slower
// than torch's call.)
struct Workspace {
  void* ptr = nullptr;
  size_t bytes = 0;
};

Workspace workspace_for(int device, cudaStream_t stream) {
  return {stream_buffer(StreamBufferPurpose::CublasWorkspace, device, stream, kWorkspaceBytes), kWorkspaceBytes};
}

uint32_t alignment_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  uint32_t align = 256;
  while (align > 16 && a % align != 0) align /= 2;
  return align;
}

// Everything the algorithm choice depends on.
struct Key {
  int device;
  int64_t m, n, k, l;
  uint8_t x_major, w_major, out_row_major, has_bias, in_type, out_type, has_residual;
  int64_t x_ld, w_ld, out_ld, x_batch, w_batch, out_batch, res_ld, res_batch;
  uint32_t align_x, align_w, align_out, align_res;
  size_t workspace;

  auto tie() const {
    return std::tie(device, m, n, k, l, x_major, w_major, out_row_major, has_bias, in_type, out_type, has_residual, x_ld,
                    w_ld, out_ld, x_batch, w_batch, out_batch, res_ld, res_batch, align_x, align_w, align_out, align_res,
                    workspace);
  }
  bool operator<(const Key& o) const { return tie() < o.tie(); }
};

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

// The descriptors and algorithm of one Key. The matmul descriptor's bias
// pointer is per call, so a plan is used under its own lock.
struct LtPlan {
  std::mutex mutex;
  Owned<cublasLtMatmulDesc_t, cublasLtMatmulDescDestroy> op;
  Owned<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy> a, b, d;
  Owned<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy> c;  // the residual's, when there is one
  cublasLtMatmulAlgo_t algo{};
  bool bias_in_epilogue = false;  // else prefilled through C with beta = 1
};

cudaDataType_t cuda_type(DType t) { return t == DType::FP32 ? CUDA_R_32F : t == DType::FP16 ? CUDA_R_16F : CUDA_R_16BF; }

void make_layout(Owned<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>& out, cudaDataType_t type, uint64_t rows,
                 uint64_t cols, int64_t ld, int64_t l, int64_t batch_stride) {
  TGV_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&out.value, type, rows, cols, ld));
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
cublasOperation_t describe(Owned<cublasLtMatrixLayout_t, cublasLtMatrixLayoutDestroy>& layout, cudaDataType_t type,
                           const Operand& o, int64_t rows, int64_t k, int64_t l, bool as_left) {
  // K-major rows x K is column-major K x rows; MN-major is column-major rows x K.
  if (o.major == Major::K) {
    make_layout(layout, type, k, rows, o.ld, l, o.batch_stride);
    return as_left ? CUBLAS_OP_T : CUBLAS_OP_N;
  }
  make_layout(layout, type, rows, k, o.ld, l, o.batch_stride);
  return as_left ? CUBLAS_OP_N : CUBLAS_OP_T;
}

std::unique_ptr<LtPlan> build(const GemmDesc& g, cublasLtHandle_t handle, const Key& key) {
  auto p = std::make_unique<LtPlan>();
  // cuBLASLt is column-major. A row-major out is the column-major N x M matrix
  // W . x^T; a column-major out is the column-major M x N matrix x . W^T.
  const bool row = g.out.row_major;
  const Operand& left = row ? g.w : g.x;
  const Operand& right = row ? g.x : g.w;
  const int64_t rows = row ? g.n : g.m, cols = row ? g.m : g.n;
  // A, B of the input type; D (and C) of out's: fp32 out is a D type, fp16 inputs an A/B type.
  const cudaDataType_t in_type = cuda_type(g.in_type);
  const cublasOperation_t ta = describe(p->a, in_type, left, rows, g.k, g.l, true);
  const cublasOperation_t tb = describe(p->b, in_type, right, cols, g.k, g.l, false);
  make_layout(p->d, cuda_type(g.out_type), rows, cols, g.out.ld, g.l, g.out.batch_stride);
  // A residual is C with beta = 1 (laid out like out, its own strides; C = D in place).
  if (key.has_residual) make_layout(p->c, cuda_type(g.out_type), rows, cols, g.residual.ld, g.l, g.residual.batch_stride);
  cublasLtMatrixLayout_t c_layout = key.has_residual ? p->c.value : p->d.value;

  TGV_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->op.value, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  TGV_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op.value, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  TGV_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op.value, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  // The epilogue's bias runs along D's rows: the weight rows only when out is row-major.
  p->bias_in_epilogue = key.has_bias && row;
  if (p->bias_in_epilogue) {
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    const cudaDataType_t bias_type = in_type;
    const int64_t bias_batch_stride = 0;  // one bias for every batch
    TGV_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(p->op.value, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof(epilogue)));
    TGV_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op.value, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                                    sizeof(bias_type)));
    TGV_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op.value, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
                                                    &bias_batch_stride, sizeof(bias_batch_stride)));
  }

  Owned<cublasLtMatmulPreference_t, cublasLtMatmulPreferenceDestroy> pref;
  TGV_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref.value));
  const uint64_t ws = key.workspace;
  TGV_CUBLAS_CHECK(
      cublasLtMatmulPreferenceSetAttribute(pref.value, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws)));
  const uint32_t align_a = row ? key.align_w : key.align_x, align_b = row ? key.align_x : key.align_w;
  TGV_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.value, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                        &align_a, sizeof(align_a)));
  TGV_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.value, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                        &align_b, sizeof(align_b)));
  const uint32_t align_c = key.has_residual ? key.align_res : key.align_out;
  TGV_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.value, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                                        &align_c, sizeof(align_c)));
  TGV_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.value, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                                        &key.align_out, sizeof(key.align_out)));
  // Split-K partial sums are added in fp32 (COMPUTE_TYPE: in the workspace,
  // then one reduction that applies the epilogue and rounds once), never in
  // the bf16 output type: not OUTPUT_TYPE (the heuristic's first choice for
  // M=256 N=4100 K=4104 on the H200 added its four partials in bf16, an error
  // of 1% of the output RMS), and not INPLACE either, which cuBLASLt documents
  // as adding the parts up in the output buffer "in the output data type":
  // each slice rounded to bf16 (likely the bias + split-K double rounding of
  // perf-notes §13, up to 2.3 ulp; tests/gpu/test_cublas_rounding.cpp checks
  // 1 ulp). torch's call excludes the same two when reduced-precision
  // reductions are disallowed.
  const uint32_t reductions = CUBLASLT_REDUCTION_SCHEME_NONE | CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  TGV_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref.value, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK,
                                                        &reductions, sizeof(reductions)));
  cublasLtMatmulHeuristicResult_t result{};
  int found = 0;
  TGV_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(handle, p->op.value, p->a.value, p->b.value, c_layout,
                                                  p->d.value, pref.value, 1, &result, &found));
  if (found == 0)
    throw Error(TGV_ERROR_CUBLAS, strfmt("cuBLASLt has no algorithm for m=%lld n=%lld k=%lld l=%lld",
                                         (long long)g.m, (long long)g.n, (long long)g.k, (long long)g.l));
  p->algo = result.algo;
  return p;
}

LtPlan& plan_for(const GemmDesc& g, cublasLtHandle_t handle, const Key& key) {
  static std::mutex mutex;
  static std::map<Key, std::unique_ptr<LtPlan>> cache;
  {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = cache.find(key);
    if (it != cache.end()) return *it->second;
  }
  // Built outside the lock: the heuristic query is slow and other shapes
  // need not wait for it. A racing builder of the same key loses its copy.
  std::unique_ptr<LtPlan> fresh = build(g, handle, key);
  std::lock_guard<std::mutex> lock(mutex);
  auto [it, inserted] = cache.emplace(key, std::move(fresh));
  return *it->second;
}

}  // namespace

void cublaslt_gemm(const GemmDesc& g, cudaStream_t stream) {
  int device = 0;
  TGV_CUDA_CHECK(cudaGetDevice(&device));
  bind_primary_context(device);
  cublasLtHandle_t handle = handle_for(device);
  const Workspace ws = workspace_for(device, stream);
  if (cublas_api_now() == CublasApi::Legacy && legacy_serves(g)) {
    cublas_legacy_gemm(g, ws.ptr, ws.bytes, stream);
    return;
  }

  Key key{};
  key.device = device;
  key.m = g.m, key.n = g.n, key.k = g.k, key.l = g.l;
  key.x_major = uint8_t(g.x.major), key.w_major = uint8_t(g.w.major);
  key.out_row_major = g.out.row_major, key.has_bias = g.bias != nullptr;
  key.in_type = uint8_t(g.in_type), key.out_type = uint8_t(g.out_type);
  key.has_residual = g.has_residual();
  key.res_ld = g.residual.ld, key.res_batch = g.residual.batch_stride, key.align_res = alignment_of(g.residual.ptr);
  key.x_ld = g.x.ld, key.w_ld = g.w.ld, key.out_ld = g.out.ld;
  key.x_batch = g.x.batch_stride, key.w_batch = g.w.batch_stride, key.out_batch = g.out.batch_stride;
  key.align_x = alignment_of(g.x.ptr), key.align_w = alignment_of(g.w.ptr), key.align_out = alignment_of(g.out.ptr);
  key.workspace = ws.bytes;

  LtPlan& p = plan_for(g, handle, key);
  const bool row = g.out.row_major;
  const float alpha = 1.0f;
  float beta = 0.0f;
  const void* c = g.out.ptr;
  if (g.has_residual()) {
    // The bias prefill below would overwrite a residual that is out itself.
    if (g.bias != nullptr && !p.bias_in_epilogue)
      throw Error(TGV_ERROR_INTERNAL, "cuBLASLt: a residual with a prefilled bias (column-major out)");
    c = g.residual.ptr;
    beta = 1.0f;
  }
  if (g.bias != nullptr && !p.bias_in_epilogue) {
    launch_bias_fill_col_major(g, stream);
    beta = 1.0f;
  }
  std::lock_guard<std::mutex> lock(p.mutex);
  if (p.bias_in_epilogue)
    TGV_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p.op.value, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g.bias,
                                                    sizeof(g.bias)));
  TGV_CUBLAS_CHECK(cublasLtMatmul(handle, p.op.value, &alpha, row ? g.w.ptr : g.x.ptr, p.a.value,
                                  row ? g.x.ptr : g.w.ptr, p.b.value, &beta, c,
                                  // in place (the residual is out): C's descriptor is D's, as cuBLASLt asks
                                  g.has_residual() && c != g.out.ptr ? p.c.value : p.d.value, g.out.ptr, p.d.value,
                                  &p.algo, ws.ptr, ws.bytes, stream));
}

}  // namespace tgv::detail

#include "cublas/lt_plan.hpp"

#include "common/error.hpp"
#include "common/strfmt.hpp"

namespace tgv::detail {

void check_cublas(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  // A failed launch leaves its CUDA error in this thread: name it, and take it
  // so that it does not surface again in the caller's next CUDA call.
  const cudaError_t cuda = status == CUBLAS_STATUS_EXECUTION_FAILED ? cudaGetLastError() : cudaSuccess;
  throw Error(TGV_ERROR_CUBLAS, strfmt("%s failed: %s%s%s", what, cublasLtGetStatusString(status),
                                       cuda != cudaSuccess ? "; CUDA: " : "",
                                       cuda != cudaSuccess ? cudaGetErrorString(cuda) : ""));
}

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

namespace {

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

}  // namespace

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

}  // namespace tgv::detail

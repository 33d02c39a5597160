// The cuBLASLt descriptors of one call shape and the algorithm chosen for it.
#pragma once

#include <cublasLt.h>

#include <cstdint>
#include <memory>
#include <mutex>

#include "common/gemm_desc.hpp"
#include "cublas/cublaslt_backend.hpp"

namespace tgv::detail {

// Turns a failed cuBLASLt call into detail::Error(TGV_ERROR_CUBLAS) naming it.
void check_cublas(cublasStatus_t status, const char* what);
#define TGV_CUBLAS_CHECK(call) ::tgv::detail::check_cublas((call), #call)

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

// A rows x cols column-major bf16 layout with ld, and l batches batch_stride apart.
void make_layout(Layout& out, uint64_t rows, uint64_t cols, int64_t ld, int64_t l, int64_t batch_stride);

// The descriptors of g (no algorithm yet). cuBLASLt is column-major: a
// row-major out is the column-major N x M matrix W . x^T, with the bias in the
// epilogue; a column-major out is the column-major M x N matrix x . W^T, with
// the bias prefilled into out and added through C with beta = 1.
std::unique_ptr<LtPlan> describe_call(const GemmDesc& g, bool has_bias);

// The epilogue's bias pointer is per call: set under the plan's mutex.
void set_bias_pointer(LtPlan& p, const void* bias);

}  // namespace tgv::detail

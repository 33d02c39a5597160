// The elementwise half of the cuBLASLt epilogue path (epilogue_fallback.hpp).
#include "common/cuda_check.hpp"
#include "cublas/epilogue_fallback.hpp"
#include "kernels/common/epilogue_math.cuh"

namespace tgv::detail {
namespace {

using namespace tgv::kernels;

struct ApplyArgs {
  const float* scratch;
  int64_t n;  // scratch columns: W rows
  const void* bias;
  bool bias_fp16;
  int act;
  int out_type;
  void* out;
  bool row_major;
  int64_t out_ld, out_batch;
  const void* residual;
  int64_t res_ld, res_batch;
  int64_t cols, b0, m0, mc, total;
};

// One thread per output element, along out's contiguous dimension so the
// stores coalesce.
__global__ void epilogue_apply(const ApplyArgs a) {
  for (int64_t e = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; e < a.total; e += int64_t(gridDim.x) * blockDim.x) {
    int64_t c, i, b;
    if (a.row_major) {
      c = e % a.cols;
      i = (e / a.cols) % a.mc;
      b = e / (a.cols * a.mc);
    } else {
      i = e % a.mc;
      c = (e / a.mc) % a.cols;
      b = e / (a.cols * a.mc);
    }
    const float* s = a.scratch + (b * a.mc + i) * a.n;
    float v = s[c] + (a.bias ? load_input(a.bias, c, a.bias_fp16) : 0.0f);
    if (a.act != kActNone) {
      const float up = s[c + a.cols] + (a.bias ? load_input(a.bias, c + a.cols, a.bias_fp16) : 0.0f);
      v = gated(a.act, v, up);
    }
    const int64_t gi = a.m0 + i, gb = a.b0 + b;
    if (a.residual)
      v += load_out(a.residual, gb * a.res_batch + (a.row_major ? gi * a.res_ld + c : c * a.res_ld + gi), a.out_type);
    store_out(a.out, gb * a.out_batch + (a.row_major ? gi * a.out_ld + c : c * a.out_ld + gi), v, a.out_type);
  }
}

}  // namespace

void launch_epilogue_apply(const GemmDesc& g, const float* scratch, int64_t b0, int64_t nb, int64_t m0, int64_t mc,
                           cudaStream_t stream) {
  ApplyArgs a{};
  a.scratch = scratch;
  a.n = g.n;
  a.bias = g.bias;
  a.bias_fp16 = g.in_type == DType::FP16;
  a.act = static_cast<int>(g.act);
  a.out_type = static_cast<int>(g.out_type);
  a.out = g.out.ptr;
  a.row_major = g.out.row_major;
  a.out_ld = g.out.ld;
  a.out_batch = g.out.batch_stride;
  a.residual = g.residual.ptr;
  a.res_ld = g.residual.ld;
  a.res_batch = g.residual.batch_stride;
  a.cols = g.out_cols();
  a.b0 = b0, a.m0 = m0, a.mc = mc;
  a.total = nb * mc * a.cols;
  const int threads = 256;
  const int64_t blocks = (a.total + threads - 1) / threads;
  epilogue_apply<<<static_cast<unsigned>(blocks < 65536 ? blocks : 65536), threads, 0, stream>>>(a);
  TGV_CUDA_CHECK(cudaGetLastError());
}

}  // namespace tgv::detail

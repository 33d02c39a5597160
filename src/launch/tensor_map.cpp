#include "launch/tensor_map.hpp"

#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <mutex>

#include "common/cuda_check.hpp"
#include "tactics/tactics.hpp"

namespace tgv::detail {
namespace {

// The driver's tensor-map encoder, through the runtime so that we need not link libcuda.
PFN_cuTensorMapEncodeTiled_v12000 encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult result{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &result) ==
            cudaSuccess &&
        result == cudaDriverEntryPointSuccess)
      fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  });
  if (fn == nullptr) throw Error(TGV_ERROR_CUDA, "the CUDA driver has no cuTensorMapEncodeTiled");
  return fn;
}

CUtensorMapSwizzle swizzle_for_bytes(int inner_bytes) {
  if (inner_bytes >= 128) return CU_TENSOR_MAP_SWIZZLE_128B;
  if (inner_bytes == 64) return CU_TENSOR_MAP_SWIZZLE_64B;
  if (inner_bytes == 32) return CU_TENSOR_MAP_SWIZZLE_32B;
  return CU_TENSOR_MAP_SWIZZLE_NONE;
}

// A map over a rows x K operand with boxes of box_rows rows (K-major) or
// 64-row blocks (MN-major) by one 64-column chunk of K: 3-D (contiguous dim,
// strided dim, batch). Out-of-bounds elements of a box read as zero, which is
// what makes every M, N and K tail correct without predication.
//
// Folded (K-major, K a multiple of 64): 4-D (chunk column, row, chunk, batch)
// with boxes of cta_k / 64 chunks, so one copy fills a stage's whole tile.
// The chunk dimension's stride (128 bytes) is smaller than the row's: TMA
// allows it, and it is why a K tail cannot fold (the last chunk's columns
// past K would read the next row instead of zeros).
CUtensorMap encode(const char* name, const void* ptr, DType type, cuuint32_t rank, const cuuint64_t* dims,
                   const cuuint64_t* strides, const cuuint32_t* box) {
  const cuuint32_t elem_strides[5] = {1, 1, 1, 1, 1};
  CUtensorMap map;
  const CUresult r =
      encoder()(&map, type == DType::FP16 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, rank,
                const_cast<void*>(ptr), dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                swizzle_for_bytes(int(box[0]) * 2), CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS)
    throw Error(TGV_ERROR_CUDA, strfmt("cuTensorMapEncodeTiled for %s failed (CUresult %d): rank %u, dims %llu x %llu "
                                       "x %llu, box %u x %u x %u",
                                       name, int(r), rank, (unsigned long long)dims[0], (unsigned long long)dims[1],
                                       (unsigned long long)dims[2], box[0], box[1], box[2]));
  return map;
}

}  // namespace

CUtensorMap make_map(const char* name, const Operand& o, int64_t rows, int64_t k, int64_t l, int box_rows,
                     int fold_chunks, DType type) {
  const bool k_major = o.major == Major::K;
  const uint64_t plane_bytes = (((k_major ? rows : k) * o.ld * 2 + 15) / 16) * 16;
  // With one batch the batch stride is never applied; any legal value will do.
  const cuuint64_t batch_stride = static_cast<cuuint64_t>(l > 1 ? o.batch_stride * 2 : plane_bytes);
  cuuint64_t dims[4], strides[3];
  cuuint32_t box[4];
  cuuint32_t rank = 3;
  if (fold_chunks > 0) {
    rank = 4;
    dims[0] = kSm90ChunkK, dims[1] = rows, dims[2] = k / kSm90ChunkK, dims[3] = l;
    strides[0] = o.ld * 2, strides[1] = kSm90ChunkK * 2, strides[2] = batch_stride;
    box[0] = kSm90ChunkK, box[1] = box_rows, box[2] = fold_chunks, box[3] = 1;
  } else if (k_major) {
    dims[0] = k, dims[1] = rows, dims[2] = l;
    strides[0] = o.ld * 2, strides[1] = batch_stride;
    box[0] = kSm90ChunkK, box[1] = box_rows, box[2] = 1;
  } else {
    dims[0] = rows, dims[1] = k, dims[2] = l;
    strides[0] = o.ld * 2, strides[1] = batch_stride;
    box[0] = box_rows < 64 ? box_rows : 64, box[1] = kSm90ChunkK, box[2] = 1;
  }
  return encode(name, o.ptr, type, rank, dims, strides, box);
}

CUtensorMap make_gated_map(const Operand& o, int64_t rows, int64_t k, int64_t l, int box_rows, DType type) {
  if (o.major != Major::K || (rows / 2) % 8 != 0 || box_rows % 16 != 0)
    throw Error(TGV_ERROR_INTERNAL, "make_gated_map: w must be K-major with whole 8-row groups in each half");
  const int64_t half = rows / 2;
  const uint64_t row_bytes = o.ld * 2;
  const uint64_t plane_bytes = ((rows * row_bytes + 15) / 16) * 16;
  cuuint64_t dims[5] = {cuuint64_t(k), 8, 2, cuuint64_t(half / 8), cuuint64_t(l)};
  cuuint64_t strides[4] = {row_bytes, half * row_bytes, 8 * row_bytes,
                           l > 1 ? cuuint64_t(o.batch_stride * 2) : plane_bytes};
  cuuint32_t box[5] = {cuuint32_t(kSm90ChunkK), 8, 2, cuuint32_t(box_rows / 16), 1};
  return encode("w (gated)", o.ptr, type, 5, dims, strides, box);
}

// Chunks one folded box carries, or 0 where the operand cannot fold.
int fold_chunks(const Operand& o, int64_t k, int cta_k) {
  return (o.major == Major::K && k % kSm90ChunkK == 0) ? cta_k / kSm90ChunkK : 0;
}

}  // namespace tgv::detail

// The SM100/SM103 (Blackwell) TGV kernel: out[l] = x[l] . W[l]^T (+ bias), bf16 or
// fp16 in, fp32 accumulate in tensor memory (TMEM), out in the input type or fp32,
// and the epilogues of the SM90 kernel (a residual added, a gated activation over
// [gate; up] rows), in fp32 before the one rounding. Compiled for sm_100a and
// sm_103a only. docs/sm100-review.md maps each step of the reference protocol to
// the lines below.
//
// Swap AB as on Hopper: the CTA computes out^T = W . x^T, so weight rows fill
// tcgen05.mma's M (kCtaM = 64 or 128) and the tokens its N (kCtaN), one token
// tile covering the whole decode batch.
//
//   grid     (ceil(N / kCtaM) rounded up to whole clusters, ceil(M / kCtaN), L)
//   cluster  1, or 2 along x: the pair computes a (2 kCtaM) x kCtaN tile with one
//            cta_group::2 MMA issued by the leader (rank 0); each CTA loads its own
//            kCtaM weight rows and half of the kCtaN tokens, and keeps its own
//            kCtaM accumulator rows in its own TMEM.
//   warp 0      W producer (TMA); never waits for the previous kernel
//   warp 1      x producer (TMA); the only griddepcontrol.wait
//   warp 2      MMA: owns the TMEM allocation, issues every tcgen05.mma/commit
//   warp 3      idle: keeps the epilogue on warps 4..7, i.e. TMEM sub-partitions 0..3
//   warps 4..7  epilogue: TMEM -> registers -> + bias (fp32) [-> gated, + residual] -> out's
//               type -> predicated stores
//
// Only K-major x and W (the common layout) are implemented: the launcher refuses
// the others with TGV_ERROR_NOT_SUPPORTED.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>

#include <cute/arch/cluster_sm90.hpp>
#include <cute/arch/copy_sm100.hpp>
#include <cute/arch/copy_sm100_tma.hpp>
#include <cute/arch/copy_sm90_desc.hpp>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/arch/mma_sm100_desc.hpp>
#include <cute/arch/mma_sm100_umma.hpp>
#include <cute/arch/tmem_allocator_sm100.hpp>
#include <cute/atom/mma_traits_sm100.hpp>
#include <cute/tensor.hpp>
#include <cutlass/arch/barrier.h>
#include <type_traits>
#include <utility>

#include "kernels/common/epilogue_math.cuh"
#include "kernels/common/pdl.cuh"
#include "kernels/common/ring.cuh"
#include "kernels/sm100/sm100_params.hpp"

// The CuTe wrappers below compile to a trap when the target lacks tcgen05, so a
// build for plain sm_100 (no "a") would fail at run time, not here: refuse it.
#if defined(__CUDA_ARCH__) && !defined(CUTE_ARCH_TCGEN05_TMEM_ENABLED)
#error "tgv_gemm_sm100.cuh needs the arch-specific targets sm_100a or sm_103a"
#endif

namespace tgv::kernels::sm100 {

using namespace cute;
using bf16 = cute::bfloat16_t;
using Barrier = cutlass::arch::ClusterTransactionBarrier;

// The accumulator's TMEM data-path layout, from the MMA shape (PTX ISA, "tcgen05
// data path layout"): which lane and column hold accumulator row r, token t.
enum class Datapath {
  kFull,        // M = 128 (1 CTA) or 256 (pair, 128 per CTA): lane r, column t
  kHalfLanes,   // M = 64 (1 CTA): lane 32 (r / 16) + r % 16, column t; upper 16 lanes of each sub-partition unused
  kFoldedCols,  // M = 128 (pair, 64 per CTA): tokens [0, N/2) in lanes r, [N/2, N) in lanes 64 + r
};

// Elem_: the input type, bfloat16_t or half_t (the UMMA instruction's A/B type;
// both are 2 bytes, so every size below is the same).
template <int kCtaM_, int kCtaN_, int kCluster_, class Elem_ = bf16>
struct Traits {
  static constexpr int kCtaM = kCtaM_, kCtaN = kCtaN_, kCluster = kCluster_;
  using Elem = Elem_;
  static constexpr bool kFp16 = std::is_same_v<Elem, cute::half_t>;
  static constexpr int kChunks = kCtaK / kChunkK;
  static constexpr int kXRows = kCtaN / kCluster;  // tokens this CTA loads: a pair splits N
  static constexpr int kMmaM = kCtaM * kCluster;   // the (pair's) MMA shape
  static constexpr int kMmaN = kCtaN;
  static constexpr int kThreads = 256;
  static constexpr int kEpilogueThreads = 128;
  // Half of TMEM, whatever the tile: the next CTA on this SM (PDL) allocates the
  // other half while this one still works.
  static constexpr int kTmemCols = 256;

  static_assert(kCluster == 1 || kCluster == 2, "one CTA, or a pair sharing one cta_group::2 MMA");
  static_assert(kCtaM == 64 || kCtaM == 128, "UMMA M per CTA is 64 or 128");
  static_assert(kCluster == 1 ? (kCtaN % 8 == 0 && kCtaN >= 8 && kCtaN <= 256)
                              : (kCtaN % 16 == 0 && kCtaN >= 16 && kCtaN <= 256),
                "16-bit UMMA N: 8..256 step 8 (1 CTA), 16..256 step 16 (pair)");
  static_assert(kXRows % 8 == 0, "a K-major SW128 operand is whole 8-row swizzle atoms");
  static_assert(kCtaN <= kTmemCols, "the accumulator fits the allocated TMEM columns");
  static_assert(kCtaK % kChunkK == 0 && kChunkK * 2 == 128, "a chunk is one 128-byte swizzle span");

  static constexpr int kChunkBytesW = kCtaM * kChunkK * 2;
  static constexpr int kChunkBytesX = kXRows * kChunkK * 2;
  static constexpr int kStageBytesW = kChunks * kChunkBytesW;
  static constexpr int kStageBytesX = kChunks * kChunkBytesX;
  static constexpr int kStageBytes = kStageBytesW + kStageBytesX;
  static_assert(kChunkBytesW % 1024 == 0 && kChunkBytesX % 1024 == 0,
                "every chunk starts on a 1024-byte swizzle-atom boundary (descriptor base offset 0)");
  static_assert(kSmemReserveBytes % 1024 == 0, "the ring starts 1024-byte aligned");

  static constexpr Datapath kDatapath =
      kCtaM == 128 ? Datapath::kFull : (kCluster == 1 ? Datapath::kHalfLanes : Datapath::kFoldedCols);
  static constexpr int kColsPerThread = kDatapath == Datapath::kFoldedCols ? kCtaN / 2 : kCtaN;
  static constexpr int kLdCols = kColsPerThread < 32 ? kColsPerThread : 32;  // columns per tcgen05.ld
  static_assert(kColsPerThread % kLdCols == 0 && (kLdCols == 8 || kLdCols == 16 || kLdCols == 32),
                "the epilogue reads whole 32x32b.x8/x16/x32 loads");
  static_assert(kColsPerThread <= 128, "an epilogue thread holds its accumulator row in registers");

  // One 64-column chunk of a stage, K-major, 128-byte swizzle (what TMA writes).
  using LayoutW = decltype(tile_to_shape(UMMA::Layout_K_SW128_Atom<Elem>{}, Shape<Int<kCtaM>, Int<kChunkK>>{}));
  using LayoutX = decltype(tile_to_shape(UMMA::Layout_K_SW128_Atom<Elem>{}, Shape<Int<kXRows>, Int<kChunkK>>{}));
  using Mma = std::conditional_t<
      kCluster == 1,
      SM100_MMA_F16BF16_SS<Elem, Elem, float, kMmaM, kMmaN, UMMA::Major::K, UMMA::Major::K>,
      SM100_MMA_F16BF16_2x1SM_SS<Elem, Elem, float, kMmaM, kMmaN, UMMA::Major::K, UMMA::Major::K>>;
  static constexpr int kMmaK = 16;  // 16-bit inputs: one tcgen05.mma reduces 32 bytes of K
  using Tmem = std::conditional_t<kCluster == 1, TMEM::Allocator1Sm, TMEM::Allocator2Sm>;
};

// Barriers and bookkeeping; the ring of stages follows at kSmemReserveBytes. In a
// pair, both CTAs have it at the same offsets: the leader's MMA reads the peer's
// ring through the same descriptors, and commits multicast to the same barriers.
struct alignas(8) SharedStorage {
  uint64_t full[kMaxStages];   // TMA -> MMA: 2 arrivals per CTA (one per producer) + the bytes
  uint64_t empty[kMaxStages];  // MMA -> TMA: 1 arrival, tcgen05.commit (multicast to both CTAs of a pair)
  uint64_t tma_epilog;         // x producer -> epilogue: 32 arrivals, "activations issued" (bias readable)
  uint64_t mma_epilog;         // MMA -> epilogue: 1 arrival, tcgen05.commit after the last MMA
  uint64_t tmem_alloc;         // MMA + epilogue: 32 + 128 arrivals; phase 0 allocated, phase 1 read out
  uint32_t tmem_base;          // written by tcgen05.alloc
};
static_assert(sizeof(SharedStorage) <= kSmemReserveBytes, "SharedStorage fits the reserve before the ring");

// Ordering of tcgen05 operations across a thread synchronization (mbarrier).
__device__ __forceinline__ void tcgen05_before_thread_sync() {
  asm volatile("tcgen05.fence::before_thread_sync;" ::: "memory");
}
__device__ __forceinline__ void tcgen05_after_thread_sync() {
  asm volatile("tcgen05.fence::after_thread_sync;" ::: "memory");
}

// tcgen05.ld 32x32b.x{kCols}: thread i of the warp gets kCols consecutive columns
// of TMEM lane (lane field of taddr) + i.
template <int kCols>
struct TmemLoad;
template <>
struct TmemLoad<8> {
  using Op = SM100_TMEM_LOAD_32dp32b8x;
};
template <>
struct TmemLoad<16> {
  using Op = SM100_TMEM_LOAD_32dp32b16x;
};
template <>
struct TmemLoad<32> {
  using Op = SM100_TMEM_LOAD_32dp32b32x;
};
template <int kCols, size_t... I>
__device__ __forceinline__ void tmem_load(uint32_t taddr, uint32_t* dst, std::index_sequence<I...>) {
  TmemLoad<kCols>::Op::copy(taddr, dst[I]...);
}

// TMA loads: a pair uses the 2-SM form, whose completion lands on the leader's
// barrier (CuTe clears the peer bit of the barrier address).
template <int kCluster>
__device__ __forceinline__ void tma_load_3d(const CUtensorMap* map, uint64_t* bar, void* dst, int c0, int c1, int c2) {
  constexpr uint64_t kHint = static_cast<uint64_t>(TMA::CacheHintSm100::EVICT_NORMAL);
  if constexpr (kCluster == 1)
    SM90_TMA_LOAD_3D::copy(map, bar, kHint, dst, c0, c1, c2);
  else
    SM100_TMA_2SM_LOAD_3D::copy(map, bar, kHint, dst, c0, c1, c2);
}
template <int kCluster>
__device__ __forceinline__ void tma_load_4d(const CUtensorMap* map, uint64_t* bar, void* dst, int c0, int c1, int c2,
                                            int c3) {
  constexpr uint64_t kHint = static_cast<uint64_t>(TMA::CacheHintSm100::EVICT_NORMAL);
  if constexpr (kCluster == 1)
    SM90_TMA_LOAD_4D::copy(map, bar, kHint, dst, c0, c1, c2, c3);
  else
    SM100_TMA_2SM_LOAD_4D::copy(map, bar, kHint, dst, c0, c1, c2, c3);
}

template <int kCluster>
__device__ __forceinline__ void tma_load_5d(const CUtensorMap* map, uint64_t* bar, void* dst, int c0, int c1, int c2,
                                            int c3, int c4) {
  constexpr uint64_t kHint = static_cast<uint64_t>(TMA::CacheHintSm100::EVICT_NORMAL);
  if constexpr (kCluster == 1)
    SM90_TMA_LOAD_5D::copy(map, bar, kHint, dst, c0, c1, c2, c3, c4);
  else
    SM100_TMA_2SM_LOAD_5D::copy(map, bar, kHint, dst, c0, c1, c2, c3, c4);
}

// A producer's arrive + expected bytes: on its own barrier, or in a pair on the
// leader's (rank 0), where the MMA waits for both CTAs' halves.
template <int kCluster>
__device__ __forceinline__ void arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  if constexpr (kCluster == 1)
    Barrier::arrive_and_expect_tx(bar, bytes);
  else
    Barrier::arrive_and_expect_tx(bar, bytes, /*cta_id=*/0, /*pred=*/1);
}

// tcgen05.commit: the barrier gets one arrival once every MMA this thread issued
// has completed. The CUTLASS helpers elect one lane themselves (a commit from all
// 32 lanes would be 32 arrivals); a pair multicasts it to both CTAs.
template <int kCluster>
__device__ __forceinline__ void umma_commit(uint64_t* bar) {
  if constexpr (kCluster == 1)
    cutlass::arch::umma_arrive(bar);
  else
    cutlass::arch::umma_arrive_multicast_2x1SM(bar, uint16_t(0b11));
}

template <class T>
__global__ void __launch_bounds__(T::kThreads, 1)
    tgv_gemm_sm100(const __grid_constant__ CUtensorMap tmap_w, const __grid_constant__ CUtensorMap tmap_x,
                   const Params p) {
  extern __shared__ __align__(1024) uint8_t smem[];
  SharedStorage& ss = *reinterpret_cast<SharedStorage*>(smem);
  uint8_t* ring = smem + kSmemReserveBytes;

  const int warp = __shfl_sync(0xffffffff, threadIdx.x / 32, 0);
  const int lane = threadIdx.x % 32;
  const uint32_t rank = T::kCluster == 1 ? 0u : cute::block_rank_in_cluster();  // 0: the pair's leader
  const bool mma_leader = rank == 0;
  const int n0 = blockIdx.x * T::kCtaM;  // first weight row of this CTA
  const int m0 = blockIdx.y * T::kCtaN;  // first token of the (pair's) tile
  const int batch = blockIdx.z;
  const int num_kb = p.num_k_blocks;
  const int stages = p.stages;

  // ---- barrier init: one thread; visible to the pair before any cross-CTA arrive ----
  if (threadIdx.x == 0) {
    cute::prefetch_tma_descriptor(&tmap_w);
    cute::prefetch_tma_descriptor(&tmap_x);
    for (int s = 0; s < stages; ++s) {
      Barrier::init(&ss.full[s], 2 * T::kCluster);  // W + x producer of each CTA of the pair
      Barrier::init(&ss.empty[s], 1);               // one tcgen05.commit
    }
    Barrier::init(&ss.tma_epilog, 32);                         // the whole x-producer warp
    Barrier::init(&ss.mma_epilog, 1);                          // one tcgen05.commit
    Barrier::init(&ss.tmem_alloc, 32 + T::kEpilogueThreads);  // MMA warp + epilogue warps
    cutlass::arch::fence_barrier_init();
  }
  if constexpr (T::kCluster > 1) {
    cute::cluster_arrive_relaxed();  // the peer's barriers exist before our TMA/commits target them
    cute::cluster_wait();
  } else {
    __syncthreads();
  }

  if (warp == 0) {
    // ---- W producer: weights do not depend on the previous kernel, so no wait ----
    RingCursor c(1);
#pragma unroll 1
    for (int kb = 0; kb < num_kb; ++kb) {
      Barrier::wait(&ss.empty[c.stage], c.phase);
      __syncwarp();
      if (cute::elect_one_sync()) {
        arrive_expect_tx<T::kCluster>(&ss.full[c.stage], T::kStageBytesW);
        uint8_t* dst = ring + c.stage * T::kStageBytes;
        if (p.act != kActNone) {
          // The gated map (5-D: k, 8 rows, gate | up, 16-row group, batch): the
          // tile's rows are its groups' 8 gate rows, then their 8 up rows.
          for (int ch = 0; ch < T::kChunks; ++ch)
            tma_load_5d<T::kCluster>(&tmap_w, &ss.full[c.stage], dst + ch * T::kChunkBytesW,
                                     kb * kCtaK + ch * kChunkK, 0, 0, n0 / 16, batch);
        } else if (p.w_folded) {  // one box: every chunk of the stage
          tma_load_4d<T::kCluster>(&tmap_w, &ss.full[c.stage], dst, 0, n0, kb * T::kChunks, batch);
        } else {
          for (int ch = 0; ch < T::kChunks; ++ch)
            tma_load_3d<T::kCluster>(&tmap_w, &ss.full[c.stage], dst + ch * T::kChunkBytesW,
                                     kb * kCtaK + ch * kChunkK, n0, batch);
        }
      }
      __syncwarp();
      c.advance(stages);
    }
    // Every load of this CTA is issued: the next kernel may start launching.
    griddep_launch_dependents();
    // Drain: wait for the MMA's commit on every slot, so no tcgen05.commit lands
    // in shared memory after this CTA has exited.
#pragma unroll 1
    for (int i = 0; i < stages; ++i) {
      Barrier::wait(&ss.empty[c.stage], c.phase);
      c.advance(stages);
    }
  } else if (warp == 1) {
    // ---- x producer: the activations are the previous kernel's output ----
    griddep_wait();
    const int x_row = m0 + int(rank) * T::kXRows;  // a pair splits the token tile
    RingCursor c(1);
#pragma unroll 1
    for (int kb = 0; kb < num_kb; ++kb) {
      Barrier::wait(&ss.empty[c.stage], c.phase);
      __syncwarp();
      if (cute::elect_one_sync()) {
        arrive_expect_tx<T::kCluster>(&ss.full[c.stage], T::kStageBytesX);
        uint8_t* dst = ring + c.stage * T::kStageBytes + T::kStageBytesW;
        if (p.x_folded) {
          tma_load_4d<T::kCluster>(&tmap_x, &ss.full[c.stage], dst, 0, x_row, kb * T::kChunks, batch);
        } else {
          for (int ch = 0; ch < T::kChunks; ++ch)
            tma_load_3d<T::kCluster>(&tmap_x, &ss.full[c.stage], dst + ch * T::kChunkBytesX,
                                     kb * kCtaK + ch * kChunkK, x_row, batch);
        }
      }
      __syncwarp();
      c.advance(stages);
    }
    // All 32 lanes: the activations are issued, so the previous kernel has
    // completed and the epilogue may read the bias and the residual (it might
    // have written them).
    if (p.bias != nullptr || p.residual != nullptr) Barrier::arrive(&ss.tma_epilog);
    // Drain, as the W producer.
#pragma unroll 1
    for (int i = 0; i < stages; ++i) {
      Barrier::wait(&ss.empty[c.stage], c.phase);
      c.advance(stages);
    }
  } else if (warp == 2) {
    // ---- MMA: allocate TMEM, release the permit early, (leader) run the K loop ----
    using Tmem = typename T::Tmem;
    Tmem tmem;
    tmem.allocate(T::kTmemCols, &ss.tmem_base);  // a pair allocates collectively
    tcgen05_before_thread_sync();
    Barrier::arrive(&ss.tmem_alloc);  // phase 0: 32 of 160
    // Let the next CTA on this SM (PDL) allocate the other half of TMEM now.
    tmem.release_allocation_lock();
    __syncwarp();
    const uint32_t tmem_acc = ss.tmem_base;  // lane 0, first allocated column

    if (mma_leader) {
      // Descriptors of each k16 step of stage 0's first chunk. Other stages and
      // chunks are the same layout at a byte offset, added to the start-address
      // field (16-byte units, never carries out of it: shared memory < 256 KB).
      using Elem = typename T::Elem;
      uint64_t desc_w[kChunkK / T::kMmaK], desc_x[kChunkK / T::kMmaK];
      {
        Tensor sW = make_tensor(make_smem_ptr(reinterpret_cast<Elem*>(ring)), typename T::LayoutW{});
        Tensor sX = make_tensor(make_smem_ptr(reinterpret_cast<Elem*>(ring + T::kStageBytesW)), typename T::LayoutX{});
#pragma unroll
        for (int j = 0; j < kChunkK / T::kMmaK; ++j) {
          desc_w[j] = UMMA::make_umma_desc<UMMA::Major::K>(
              local_tile(sW, Shape<Int<T::kCtaM>, Int<T::kMmaK>>{}, make_coord(0, j)));
          desc_x[j] = UMMA::make_umma_desc<UMMA::Major::K>(
              local_tile(sX, Shape<Int<T::kXRows>, Int<T::kMmaK>>{}, make_coord(0, j)));
        }
      }
      const uint64_t idesc =
          UMMA::make_runtime_instr_desc<Elem, Elem, float, T::kMmaM, T::kMmaN, UMMA::Major::K, UMMA::Major::K>();
      RingCursor c(0);
#pragma unroll 1
      for (int kb = 0; kb < num_kb; ++kb) {
        Barrier::wait(&ss.full[c.stage], c.phase);  // both CTAs' halves have landed (pair: the leader's barrier)
        __syncwarp();
        tcgen05_after_thread_sync();
        const uint32_t stage_off = uint32_t(c.stage * T::kStageBytes);
#pragma unroll
        for (int ch = 0; ch < T::kChunks; ++ch) {
          const uint32_t w_off = (stage_off + ch * T::kChunkBytesW) >> 4;
          const uint32_t x_off = (stage_off + ch * T::kChunkBytesX) >> 4;
#pragma unroll
          for (int j = 0; j < kChunkK / T::kMmaK; ++j) {
            // The first MMA of the tile overwrites the (uninitialized) accumulator.
            const uint32_t accumulate = (kb | ch | j) != 0 ? 1u : 0u;
            T::Mma::fma(desc_w[j] + w_off, desc_x[j] + x_off, tmem_acc, accumulate, idesc);  // elects one lane
          }
        }
        umma_commit<T::kCluster>(&ss.empty[c.stage]);  // the slot is free once these MMAs complete
        c.advance(stages);
      }
      umma_commit<T::kCluster>(&ss.mma_epilog);  // the accumulator is complete
    }
    // Free TMEM once the epilogue's tcgen05.ld have completed (phase 1).
    Barrier::arrive(&ss.tmem_alloc);  // phase 1: 32 of 160
    Barrier::wait(&ss.tmem_alloc, 1);
    __syncwarp();
    tcgen05_after_thread_sync();
    tmem.free(tmem_acc, T::kTmemCols);  // a pair frees collectively
  } else if (warp == 3) {
    // ---- idle: keeps the epilogue on warps 4..7, i.e. TMEM sub-partitions 0..3 ----
  } else {
    // ---- epilogue: TMEM -> registers -> + bias [-> gated, + residual] -> predicated stores ----
    const int q = warp % 4;  // a warp may read TMEM lanes [32 q, 32 q + 32) only
    Barrier::arrive(&ss.tmem_alloc);  // phase 0: 128 of 160
    Barrier::wait(&ss.tmem_alloc, 0);
    tcgen05_after_thread_sync();
    const uint32_t taddr = ss.tmem_base + (uint32_t(32 * q) << 16);  // TMEM address: lane << 16 | column

    // This thread's accumulator row and its first token (see Datapath).
    int row, tok0 = 0;
    bool row_used = true;
    if constexpr (T::kDatapath == Datapath::kFull) {
      row = 32 * q + lane;
    } else if constexpr (T::kDatapath == Datapath::kHalfLanes) {
      row = 16 * q + lane;
      row_used = lane < 16;
    } else {
      row = 32 * (q % 2) + lane;
      tok0 = (q / 2) * T::kColsPerThread;
    }
    const int n = n0 + row;
    // Gated, a 16-row group of the tile is 8 gate rows and then their 8 up rows
    // (the gated map), and every datapath gives a warp lane-consecutive rows from
    // a multiple of 16: the up row of a gate row sits 8 lanes further in the
    // same warp, so the pair meets through a shuffle, never shared memory.
    const bool gate_pairs = p.act != kActNone;
    const int col = gate_pairs ? n0 / 2 + row - 8 * (row / 16) : n;  // this thread's column of out
    const bool row_valid = row_used && (gate_pairs ? row % 16 < 8 && col < p.out_cols : n < p.n);

    float bias = 0.0f, bias_up = 0.0f;
    if (p.bias != nullptr || p.residual != nullptr) {
      // After the previous kernel, which may have written the bias or the residual.
      Barrier::wait(&ss.tma_epilog, 0);
      asm volatile("" ::: "memory");  // CUTLASS's wait has no memory clobber: keep the loads below it
      if (p.bias != nullptr && row_valid) {
        bias = load_input(p.bias, col, T::kFp16);
        if (gate_pairs) bias_up = load_input(p.bias, p.out_cols + col, T::kFp16);
      }
    }

    Barrier::wait(&ss.mma_epilog, 0);  // the accumulator is complete
    __syncwarp();
    tcgen05_after_thread_sync();
    uint32_t acc[T::kColsPerThread];
#pragma unroll
    for (int c = 0; c < T::kColsPerThread; c += T::kLdCols)
      tmem_load<T::kLdCols>(taddr + uint32_t(c), acc + c, std::make_index_sequence<T::kLdCols>{});
    cutlass::arch::fence_view_async_tmem_load();  // tcgen05.wait::ld: the registers are written
#pragma unroll
    for (int i = 0; i < T::kColsPerThread; ++i) asm volatile("" : "+r"(acc[i]));  // no use before the wait
    tcgen05_before_thread_sync();
    Barrier::arrive(&ss.tmem_alloc);  // phase 1: the MMA warp may free TMEM

    // A plain call (bf16 out, no residual, no gating) keeps the store path it had
    // before the epilogues: 16-byte stores along a column-major out's tokens.
    const bool plain = !T::kFp16 && !gate_pairs && p.residual == nullptr && p.out_type == kOutBf16;
    if (!plain) {
      const int esize = p.out_type == kOutFp32 ? 4 : 2;  // out and residual: the input type or fp32
      char* out = static_cast<char*>(p.out) + int64_t(batch) * p.out_batch_stride * esize;
      const char* res = p.residual == nullptr
                            ? nullptr
                            : static_cast<const char*>(p.residual) + int64_t(batch) * p.res_batch_stride * esize;
      const int t_begin = m0 + tok0;
      const int valid = p.m - t_begin;
      const bool row_major = p.out_row_major != 0;
#pragma unroll
      for (int t = 0; t < T::kColsPerThread; ++t) {
        float v = __uint_as_float(acc[t]) + bias;
        if (gate_pairs) {  // every lane shuffles (uniform branch); up rows only lend
          const float up = __shfl_down_sync(0xffffffff, __uint_as_float(acc[t]), 8);
          v = tgv::kernels::gated(p.act, v, up + bias_up);
        }
        if (row_valid && t < valid) {
          const int64_t tok = t_begin + t;
          // Read before the store by this thread alone: the residual may be out itself.
          if (res != nullptr)
            v += load_out(res, row_major ? tok * p.res_ld + col : int64_t(col) * p.res_ld + tok, p.out_type);
          store_out(out, row_major ? tok * p.out_ld + col : int64_t(col) * p.out_ld + tok, v, p.out_type);
        }
      }
    } else if (row_valid) {
      auto* out = static_cast<__nv_bfloat16*>(p.out) + batch * p.out_batch_stride;
      const int t_begin = m0 + tok0;
      const int valid = p.m - t_begin;  // tokens of this thread's run that exist (may be <= 0)
      if (p.out_row_major) {
        // Lanes hold consecutive weight rows: each store of a warp is one contiguous run.
        __nv_bfloat16* dst = out + int64_t(t_begin) * p.out_ld + n;
#pragma unroll
        for (int t = 0; t < T::kColsPerThread; ++t)
          if (t < valid) dst[int64_t(t) * p.out_ld] = __float2bfloat16_rn(__uint_as_float(acc[t]) + bias);
      } else {
        // A thread holds consecutive tokens: 16-byte stores where aligned and whole.
        __nv_bfloat16* dst = out + int64_t(n) * p.out_ld + t_begin;
#pragma unroll
        for (int t = 0; t < T::kColsPerThread; t += 8) {
          if (p.out_vectorized && t + 8 <= valid) {
            __align__(16) __nv_bfloat162 v[4];
#pragma unroll
            for (int e = 0; e < 4; ++e)
              v[e] = __floats2bfloat162_rn(__uint_as_float(acc[t + 2 * e]) + bias,
                                           __uint_as_float(acc[t + 2 * e + 1]) + bias);
            *reinterpret_cast<uint4*>(dst + t) = *reinterpret_cast<const uint4*>(v);
          } else {
#pragma unroll
            for (int e = 0; e < 8; ++e)
              if (t + e < valid) dst[t + e] = __float2bfloat16_rn(__uint_as_float(acc[t + e]) + bias);
          }
        }
      }
    }
  }

  if constexpr (T::kCluster > 1) {
    // Neither CTA of a pair exits while its peer may still touch its shared
    // memory (commits, TMA completions, remote arrives): SGLang saw Xid 13
    // "CTA not present" with PDL and CUDA graphs without this barrier.
    __syncwarp();
    cute::cluster_arrive();
    cute::cluster_wait();
  }
}

}  // namespace tgv::kernels::sm100

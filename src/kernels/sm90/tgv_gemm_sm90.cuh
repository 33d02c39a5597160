// The SM90 TGV kernel: out[l] = x[l] . W[l]^T (+ bias), bf16 or fp16 in, fp32
// accumulate, and an epilogue (Params): a residual added, a gated activation
// over [gate; up] weight rows, out in bf16, fp16 or fp32, one rounding at the end.
//
// Swap AB: the CTA computes the transposed tile out^T = W . x^T, so weight rows
// (thousands) fill wgmma's M (64 per consumer warpgroup) and the few tokens fill
// its N (kCtaN, 8..256), one token tile covering the whole decode batch.
//
//   grid  (ceil(N / kCtaM) * split_k, ceil(M / kCtaN), L), one output tile per CTA
//         (per cluster of split_k CTAs when split-K is on)
//   warpgroup 0          producers: warp 0 streams W, warp 1 streams x
//   warpgroups 1..       consumers: wgmma over 64 weight rows each, then the epilogue
//
// K groups: a warpgroup retires one stage's wgmma batch at a time, and for a
// narrow token tile that batch's latency, not the memory, sets the stream rate
// (one warpgroup: ~50 GB/s per SM whatever the ring depth, perf-notes §25). So
// a narrow 64-row tile has two consumer warpgroups taking the ring's stages in
// turn, on the grids the launcher asks (Params::k_groups); their partial sums
// meet in registers of group 0, in group order, before the epilogue: bitwise
// repeatable.
//
// Split-K: with split_k > 1, the split_k CTAs of a cluster share one output tile,
// each streaming a contiguous slice of the K blocks. The partial sums meet in
// the leader's registers through distributed shared memory, added in rank
// order, so the result is bitwise repeatable and needs no workspace. Narrow
// tiles (Params::split_push) have each peer push its sums into a receive
// buffer of the leader's and exit; wider ones park them in their drained rings
// for the leader to read between two cluster barriers.
//
// Pipeline: `stages` ring slots, each a (kCtaM x kCtaK) W tile and a
// (kCtaN x kCtaK) x tile, guarded by a full and an empty mbarrier. W does not
// depend on the previous kernel, so with PDL its producer fills the ring before
// the x producer passes griddepcontrol.wait: the weight stream starts while the
// previous kernel drains.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>

#include <cooperative_groups.h>
#include <cute/arch/cluster_sm90.hpp>
#include <cute/arch/copy_sm90_tma.hpp>
#include <cute/arch/mma_sm90.hpp>
#include <cute/atom/mma_traits_sm90_gmma.hpp>
#include <cute/tensor.hpp>
#include <cutlass/arch/barrier.h>
#include <cutlass/arch/reg_reconfig.h>
#include <type_traits>
#include <utility>

#include "kernels/common/epilogue_math.cuh"
#include "kernels/common/pdl.cuh"
#include "kernels/common/ring.cuh"
#include "kernels/sm90/hooks.cuh"
#include "kernels/sm90/schedule.cuh"
#include "kernels/sm90/sm90_params.hpp"

namespace tgv::kernels::sm90 {

using namespace cute;
using bf16 = cute::bfloat16_t;
using Barrier = cutlass::arch::ClusterTransactionBarrier;

// Shared-memory layout of one (rows x kChunkK) chunk. K-major: 128-byte rows,
// 128-byte swizzle. MN-major: the contiguous dimension swizzled over as many
// bytes as it has (up to 128), atoms stacked along K first so that each block
// of 64 rows is one contiguous TMA box.
template <int kRows, GMMA::Major kMajor>
constexpr auto chunk_layout() {
  if constexpr (kMajor == GMMA::Major::K) {
    return tile_to_shape(GMMA::Layout_K_SW128_Atom<bf16>{}, Shape<Int<kRows>, Int<kChunkK>>{});
  } else if constexpr (kRows >= 64) {
    return tile_to_shape(GMMA::Layout_MN_SW128_Atom<bf16>{}, Shape<Int<kRows>, Int<kChunkK>>{}, Step<_2, _1>{});
  } else if constexpr (kRows == 32) {
    return tile_to_shape(GMMA::Layout_MN_SW64_Atom<bf16>{}, Shape<Int<kRows>, Int<kChunkK>>{}, Step<_2, _1>{});
  } else if constexpr (kRows == 16) {
    return tile_to_shape(GMMA::Layout_MN_SW32_Atom<bf16>{}, Shape<Int<kRows>, Int<kChunkK>>{}, Step<_2, _1>{});
  } else {
    return tile_to_shape(GMMA::Layout_MN_INTER_Atom<bf16>{}, Shape<Int<kRows>, Int<kChunkK>>{}, Step<_2, _1>{});
  }
}

// Elem_: the input type, bfloat16_t or half_t (the wgmma instruction's A/B type).
template <int kCtaM_, int kCtaN_, int kCtaK_, GMMA::Major kMajorW_, GMMA::Major kMajorX_, class Elem_ = bf16>
struct Traits {
  using Elem = Elem_;
  static constexpr bool kFp16 = std::is_same_v<Elem, cute::half_t>;
  static constexpr int kCtaM = kCtaM_, kCtaN = kCtaN_, kCtaK = kCtaK_;
  static constexpr int kChunks = kCtaK / kChunkK;
  static constexpr GMMA::Major kMajorW = kMajorW_, kMajorX = kMajorX_;
  static_assert(kCtaM == 64 || kCtaM == 128, "a consumer warpgroup owns 64 weight rows");
  static_assert(kCtaN % 8 == 0 && kCtaN >= 8 && kCtaN <= 256, "wgmma N is 8..256 in steps of 8");
  static_assert(kCtaK % kChunkK == 0, "a stage is whole 128-byte swizzle chunks");
  static_assert(kMajorX == GMMA::Major::K || kCtaN <= 64 || kCtaN % 64 == 0,
                "an MN-major token tile wider than 64 is whole 64-token TMA boxes");

  static constexpr int kRowGroups = kCtaM / 64;  // consumer warpgroups along M, 64 rows each
  // Two K groups for 64-row tiles only: with two row groups the block's 640
  // threads measured slower than one K group (perf-notes §25).
  static constexpr int kKGroups = detail::sm90_tile_has_k_groups(kCtaM, kCtaN) ? 2 : 1;
  static constexpr int kConsumers = kRowGroups * kKGroups;
  static constexpr int kThreads = 128 * (1 + kConsumers);
  static constexpr int kEpilogueThreads = 128 * kRowGroups;  // K group 0: the epilogue's threads
  // setmaxnreg 40 / 232 for two row groups. Not with K groups: their
  // accumulators are few, and the pool setmaxnreg draws on is the block's
  // registers at launch, not the SM's 64K (the 640-thread variant with
  // 40 / 112 hung on the H200).
  static constexpr bool kRegRealloc = kConsumers > 1 && kKGroups == 1;  // the 128-row tiles
  static constexpr int kChunkBytesW = kCtaM * kChunkK * 2;
  static constexpr int kChunkBytesX = kCtaN * kChunkK * 2;
  static constexpr int kBoxBytes = 64 * kChunkK * 2;  // one 64-row MN-major box
  static constexpr int kAccRegs = kCtaN / 2;          // fp32 accumulators per thread (64 x kCtaN / 128)

  using LayoutW = decltype(chunk_layout<kCtaM, kMajorW>());  // (kCtaM, kChunkK)
  using LayoutX = decltype(chunk_layout<kCtaN, kMajorX>());  // (kCtaN, kChunkK)
  using Mma = decltype(SM90::GMMA::ss_op_selector<Elem, Elem, float, Shape<_64, Int<kCtaN>, _16>, kMajorW, kMajorX>());
  static_assert(sizeof(typename Mma::CRegisters) / sizeof(float) == kAccRegs, "one wgmma covers the token tile");

  // The epilogue stages the bf16 tile in the ring, rows padded by 16 bytes so
  // that the column writes of a warp spread over banks.
  static constexpr int kStagePitchRowMajor = kCtaM + 8;  // [token][weight row]
  static constexpr int kStagePitchColMajor = kCtaN + 8;  // [weight row][token]
  static constexpr int kEpilogueBytes =
      2 * (kCtaN * kStagePitchRowMajor > kCtaM * kStagePitchColMajor ? kCtaN * kStagePitchRowMajor
                                                                      : kCtaM * kStagePitchColMajor);
  static constexpr int kPartialBytes = kCtaM * kCtaN * 4;  // a CTA's fp32 partial sums, for split-K
};

// Token tiles up to this wide store from registers; wider ones stage the tile
// in shared memory for 16-byte stores (perf-notes §11).
inline constexpr int kDirectStoreMaxTokens = 16;

template <class Mma, size_t... I>
__device__ __forceinline__ void wgmma(uint64_t desc_w, uint64_t desc_x, float* acc, std::index_sequence<I...>) {
  Mma::fma(desc_w, desc_x, acc[I]..., GMMA::ScaleOut::One);
}

// A wgmma shared-memory descriptor as its two words. The start address (low
// word, bits 0-13, 16-byte units) of any address in the 228 KB of shared memory
// is under 2^14, so a stage's or a chunk's byte offset is one 32-bit add on the
// low word that never carries; the high word (stride, swizzle) is the same for
// every stage. A 64-bit add there costs ptxas a carry chain and register moves
// per wgmma, and a narrow tile's consumer is bound by its instruction issue
// between batches, not by the tensor cores.
struct SmemDesc {
  uint32_t lo = 0, hi = 0;
  SmemDesc() = default;
  __device__ explicit SmemDesc(uint64_t d) : lo(uint32_t(d)), hi(uint32_t(d >> 32)) {
    // Opaque from here: else the compiler recomputes the descriptor's bit
    // fields from the shared-memory base inside the main loop, per wgmma.
    asm volatile("" : "+r"(lo), "+r"(hi));
  }
  __device__ uint64_t at(uint32_t offset16) const {
    uint64_t d;
    asm("mov.b64 %0, {%1, %2};" : "=l"(d) : "r"(lo + offset16), "r"(hi));
    return d;
  }
};

// Where accumulator i of a consumer thread lands in the tile: its row (gated:
// the thread's output column, orow) and token; gated, only i % 4 < 2 carry a
// value. wgmma's fragment: rows row_lo + {0, 8}, token pairs (lane % 4) * 2 of
// every 8.
struct Fragment {
  bool gate_pairs;
  int row_lo, orow, lane;
  __device__ bool carries(int i) const { return !gate_pairs || (i % 4) < 2; }
  __device__ int row(int i) const { return gate_pairs ? orow : row_lo + 8 * ((i % 4) / 2); }
  __device__ int token(int i) const { return (i / 4) * 8 + (lane % 4) * 2 + (i % 2); }
  // Whether accumulator i of the tile at (o0, m0) is an element of out.
  __device__ bool stores(int i, int o0, int m0, const Params& p) const {
    return carries(i) && o0 + row(i) < p.out_cols && m0 + token(i) < p.m;
  }
};

// A direct-store tile's residual under this thread's accumulators, as raw bits
// (0 where the thread stores nothing). Loaded with the bias, at the segment's
// first stage: its global round trip then hides behind the main loop instead
// of standing between the last wgmma and the stores, where the next kernel
// under PDL waits for it (perf-notes §32). Each element is read and written by
// this thread only (the residual may be out itself), so reading it early is
// the same as reading it just before the store.
template <class T>
inline constexpr int kResidualRegs = T::kCtaN <= kDirectStoreMaxTokens ? T::kAccRegs : 1;  // staged tiles: none

template <class T>
__device__ __forceinline__ void load_residual_bits(const Params& p, const Fragment& f, int o0, int m0, int batch,
                                                   uint32_t (&bits)[kResidualRegs<T>]) {
  static_assert(T::kCtaN <= kDirectStoreMaxTokens, "staged tiles read the residual in the epilogue");
  const int esize = p.out_type != kOutFp32 ? 2 : 4;
  const char* res = static_cast<const char*>(p.residual) + batch * p.res_batch_stride * esize;
  const bool row_major = p.out_row_major != 0;
  // Every load issued before any is used: a conversion next to its load would wait for it there.
#pragma unroll
  for (int i = 0; i < T::kAccRegs; ++i) {
    const int col = o0 + f.row(i), token = m0 + f.token(i);
    bits[i] = f.stores(i, o0, m0, p) ? load_out_bits(res, row_major ? int64_t(token) * p.res_ld + col : int64_t(col) * p.res_ld + token,
                                    p.out_type)
                    : 0u;
  }
}

// The epilogue's stores. kPlain (a std::bool_constant): bf16 out of acc + bias,
// as before the epilogues; else acc already holds out's values (gated: only
// i % 4 < 2), and the residual, out's type and the gating are Params fields.
// o0: the tile's first output column; orow: the thread's column when gated.
// res_bits: a direct-store tile's residual (load_residual_bits), when there is one.
template <class T, class Plain>
__device__ __forceinline__ void epilogue(Plain, const Params& p, uint8_t* smem, float (&acc)[T::kAccRegs],
                                         float bias_lo, float bias_hi, int o0, int m0, int batch, const Fragment& f,
                                         const uint32_t (&res_bits)[kResidualRegs<T>], int cthread) {
  constexpr bool kPlain = Plain::value;
  constexpr int kConsumerThreads = T::kEpilogueThreads;
  const bool gate_pairs = f.gate_pairs;
  const int out_rows = gate_pairs ? T::kCtaM / 2 : T::kCtaM;  // output columns of this tile
  auto value = [&](int i) { return kPlain ? acc[i] + ((i % 4) / 2 ? bias_hi : bias_lo) : acc[i]; };
  const int esize = kPlain || p.out_type != kOutFp32 ? 2 : 4;
  auto* out = static_cast<char*>(p.out) + batch * p.out_batch_stride * esize;
  const char* res = nullptr;
  if constexpr (!kPlain)
    if (p.residual != nullptr) res = static_cast<const char*>(p.residual) + batch * p.res_batch_stride * esize;
  const bool row_major = p.out_row_major != 0;

  if constexpr (T::kCtaN <= kDirectStoreMaxTokens) {
    // A few tokens: each thread stores its own values. Staging them in shared
    // memory for 16-byte stores costs a barrier and a round trip (~0.3 us of a
    // 0.76 us epilogue, perf-notes §11) to save stores of a tile this small.
    if constexpr (!kPlain) {
      if (res != nullptr) {
#pragma unroll
        for (int i = 0; i < T::kAccRegs; ++i)
          if (f.stores(i, o0, m0, p)) acc[i] += out_bits_to_float(res_bits[i], p.out_type);
      }
    }
#pragma unroll
    for (int i = 0; i < T::kAccRegs; ++i) {
      const int col = o0 + f.row(i), token = m0 + f.token(i);
      if (!f.stores(i, o0, m0, p)) continue;
      const int64_t at = row_major ? int64_t(token) * p.out_ld + col : int64_t(col) * p.out_ld + token;
      if constexpr (kPlain) {
        reinterpret_cast<__nv_bfloat16*>(out)[at] = __float2bfloat16_rn(value(i));
      } else {
        store_out(out, at, value(i), p.out_type);
      }
    }
  } else {
    // Staged: the tile in out's orientation, then 8-element runs along out's
    // contiguous dimension (16-byte stores where aligned). A residual or an
    // fp32 out is staged as fp32 (out_rows x kCtaN words, within the split-K
    // partials' bytes, which the deepest ring holds; the launcher refuses a
    // ring made shallower than that by an explicit stage count).
    const int valid_rows = min(out_rows, p.out_cols - o0), valid_tokens = min(T::kCtaN, p.m - m0);
    const int lines = row_major ? T::kCtaN : out_rows;   // tokens, or output columns
    const int run_len = row_major ? out_rows : T::kCtaN;  // along the contiguous dimension
    const int valid_lines = row_major ? valid_tokens : valid_rows;
    const int valid_len = row_major ? valid_rows : valid_tokens;
    const int64_t line0 = row_major ? m0 : o0, col0 = row_major ? o0 : m0;
    const int runs_per_line = run_len / 8;

    if (kPlain || (p.residual == nullptr && p.out_type != kOutFp32)) {
      // 16-bit, rows padded by 16 bytes so that a warp's column writes spread over banks.
      auto* tile = reinterpret_cast<uint16_t*>(smem);
      const int pitch = row_major ? T::kStagePitchRowMajor : T::kStagePitchColMajor;
#pragma unroll
      for (int i = 0; i < T::kAccRegs; ++i) {
        const int row = f.row(i), token = f.token(i);
        const uint16_t bits =
            kPlain ? __bfloat16_as_ushort(__float2bfloat16_rn(value(i))) : to_bits16(value(i), p.out_type);
        if (f.carries(i)) tile[row_major ? token * pitch + row : row * pitch + token] = bits;
      }
      cutlass::arch::NamedBarrier::sync(kConsumerThreads, 0);
      auto* out16 = reinterpret_cast<uint16_t*>(out);
      for (int r = cthread; r < lines * runs_per_line; r += kConsumerThreads) {
        const int line = r / runs_per_line, col = (r % runs_per_line) * 8;
        if (line >= valid_lines || col >= valid_len) continue;
        uint16_t* dst = out16 + (line0 + line) * p.out_ld + col0 + col;
        const uint16_t* src = tile + line * pitch + col;
        if (p.out_vectorized && col + 8 <= valid_len) {
          *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
        } else {
          for (int e = 0; e < 8 && col + e < valid_len; ++e) dst[e] = src[e];
        }
      }
    } else if constexpr (!kPlain) {
      // fp32, unpadded, runs of 8 words XOR-swizzled by line so that a warp's
      // register writes spread over the banks (lines are multiples of 32 words):
      // conflict-free row-major, 2-way column-major. A run stays 8 aligned words.
      auto* tile = reinterpret_cast<float*>(smem);
      auto swizzle = [&](int line) { return row_major ? ((line >> 1) & 3) << 3 : (line & 3) << 3; };
#pragma unroll
      for (int i = 0; i < T::kAccRegs; ++i) {
        const int line = row_major ? f.token(i) : f.row(i), col = row_major ? f.row(i) : f.token(i);
        if (f.carries(i)) tile[line * run_len + (col ^ swizzle(line))] = acc[i];
      }
      cutlass::arch::NamedBarrier::sync(kConsumerThreads, 0);
      // A thread's runs in batches whose residual loads are all issued before
      // the batch's first store: one run after another, each load would wait
      // behind the store before it (the residual may be out itself), a global
      // round trip per run at the kernel's end (perf-notes §32). Unaligned and
      // fp32 residuals still load inside their run. 256-token tiles keep one
      // run per batch: their accumulators already spill.
      constexpr int kBatch = T::kCtaN >= 256 ? 1 : 4;
      const int runs = lines * runs_per_line;
      const bool batched = res != nullptr && p.res_vectorized && p.out_type != kOutFp32;
      for (int r0 = cthread; r0 < runs; r0 += kBatch * kConsumerThreads) {
        uint4 raw[kBatch];
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
          const int r = r0 + b * kConsumerThreads;
          const int line = r / runs_per_line, col = (r % runs_per_line) * 8;
          raw[b] = make_uint4(0u, 0u, 0u, 0u);
          if (batched && r < runs && line < valid_lines && col + 8 <= valid_len)
            raw[b] = *reinterpret_cast<const uint4*>(res + ((line0 + line) * p.res_ld + col0 + col) * 2);
        }
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
          const int r = r0 + b * kConsumerThreads;
          const int line = r / runs_per_line, col = (r % runs_per_line) * 8;
          if (r >= runs || line >= valid_lines || col >= valid_len) continue;
          const float4* src = reinterpret_cast<const float4*>(tile + line * run_len + (col ^ swizzle(line)));
          const float4 a = src[0], c = src[1];
          float v[8] = {a.x, a.y, a.z, a.w, c.x, c.y, c.z, c.w};
          const int64_t at = (line0 + line) * p.out_ld + col0 + col;
          const bool full_run = col + 8 <= valid_len;
          if (res != nullptr) {
            if (batched && full_run) {
              const uint16_t* h = reinterpret_cast<const uint16_t*>(&raw[b]);
#pragma unroll
              for (int e = 0; e < 8; ++e) v[e] += from_bits16(h[e], p.out_type);
            } else {
              const int64_t rat = (line0 + line) * p.res_ld + col0 + col;
#pragma unroll
              for (int e = 0; e < 8; ++e)  // unrolled with a guard: v stays in registers
                if (col + e < valid_len) v[e] += load_out(res, rat + e, p.out_type);
            }
          }
          if (p.out_vectorized && full_run) {
            if (p.out_type == kOutFp32) {
              float4* dst = reinterpret_cast<float4*>(out + at * 4);
              dst[0] = make_float4(v[0], v[1], v[2], v[3]);
              dst[1] = make_float4(v[4], v[5], v[6], v[7]);
            } else {
              alignas(16) uint16_t h[8];
#pragma unroll
              for (int e = 0; e < 8; ++e) h[e] = to_bits16(v[e], p.out_type);
              *reinterpret_cast<uint4*>(out + at * 2) = *reinterpret_cast<const uint4*>(h);
            }
          } else {
#pragma unroll
            for (int e = 0; e < 8; ++e)
              if (col + e < valid_len) store_out(out, at + e, v[e], p.out_type);
          }
        }
      }
    }
  }
}

// Four fp32 values into shared memory of another CTA of the cluster, counted
// in bytes on that CTA's mbarrier. Both addresses are this CTA's own, mapped
// to `rank` (the remote CTA has the same layout).
__device__ __forceinline__ void push_v4(const void* local_dst, const uint64_t* local_bar, uint32_t rank, float a,
                                        float b, float c, float d) {
  const uint32_t dst = cute::set_block_rank(cute::cast_smem_ptr_to_uint(local_dst), rank);
  const uint32_t bar = cute::set_block_rank(cute::cast_smem_ptr_to_uint(local_bar), rank);
  asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.f32 [%0], {%1, %2, %3, %4}, [%5];"
               :
               : "r"(dst), "f"(a), "f"(b), "f"(c), "f"(d), "r"(bar)
               : "memory");
}

// Waits for `phase` of a barrier that other CTAs' remote stores complete. Their
// complete-tx releases at cluster scope; the ring's waits acquire at CTA scope
// only, which does not pair with it in the memory model.
__device__ __forceinline__ void wait_cluster_acquire(const uint64_t* bar, uint32_t phase) {
  asm volatile(
      "{\n.reg .pred done;\nwait_%=:\n"
      "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra wait_%=;\n}"
      :
      : "r"(cute::cast_smem_ptr_to_uint(bar)), "r"(phase)
      : "memory");
}

// A CTA whose griddepcontrol.wait returns within this many cycles started
// alone (no PDL predecessor still running); one that waited longer was
// launched beside its predecessor and has prefetched its ring.
inline constexpr long long kAloneWaitCycles = 1000;

// One producer's walk: every K block of every segment of the CTA, in the
// consumers' order, one ring slot each. issue(slot, segment, kb) starts the
// slot's TMA loads, which complete `bytes` on its full barrier. Both producers
// walk the same ring, so a slot is full once both their loads have landed.
// lead > 0 (the W producer under Params::w_lead): once the pace barrier has
// passed its phase 0 (the x producer started alone), a stage is issued only
// after the one `lead` stages before it has landed. That full barrier cannot
// have moved on a lap (only this producer refills its slot, later), and it
// completes without this producer: its W bytes are issued, and its x load
// needs only the empty phase this producer passed.
template <class T, class Issue>
__device__ __forceinline__ void produce(const Params& p, const Schedule<T::kCtaM, T::kCtaN>& sched, uint64_t* full,
                                        uint64_t* empty, uint32_t bytes, Issue&& issue, int lead = 0,
                                        uint64_t* pace = nullptr) {
  RingCursor c(1);
  RingCursor landed(0);  // `lead` stages behind c, on the full barriers
  int issued = 0;
  for (int j = 0; j < sched.num_segments; ++j) {
    const Segment sg = sched.segment(p, j);
    for (int kb = sg.kb_begin; kb < sg.kb_end; ++kb) {
      if (lead > 0 && issued++ >= lead) {
        // A gated grid paces every wave (perf-notes §45); a persistent CTA's later
        // tiles are its later waves, whose predecessor has long finished (§55).
        if (Barrier::test_wait(pace, 0, 1) || (j > 0 && p.act != kActNone))
          Barrier::wait(full + landed.stage, landed.phase);
        landed.advance(p.stages);
      }
      Barrier::wait(empty + c.stage, c.phase);
      Barrier::arrive_and_expect_tx(full + c.stage, bytes);
      issue(c.stage, sg, kb);
      c.advance(p.stages);
    }
  }
}

template <class T, class Hooks = NoHooks>
__global__ void __launch_bounds__(T::kThreads, 1)
    tgv_gemm_sm90(const __grid_constant__ CUtensorMap tmap_w, const __grid_constant__ CUtensorMap tmap_x,
                  const Params p, const Hooks hooks) {
  extern __shared__ __align__(1024) uint8_t smem[];
  constexpr int stage_bytes = (T::kCtaM + T::kCtaN) * T::kCtaK * 2;
  constexpr int w_stage_bytes = T::kCtaM * T::kCtaK * 2;
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + p.stages * stage_bytes);
  uint64_t* empty = full + kMaxStages;
  // Stream-K: whether this CTA finishes the tile it just reduced a part of.
  uint32_t* sk_last = reinterpret_cast<uint32_t*>(empty + kMaxStages);
  // Arrived on by the x producer when it started alone: the W producer's pacing
  // starts (Params::w_lead). A barrier, not a flag: a synchronizing handoff.
  uint64_t* pace = empty + kMaxStages + 1;
  // Split-K push: completes once every peer's partial sums have landed in
  // split_recv, the bytes after the reserve (src/tactics sizes them).
  uint64_t* split_bar = empty + kMaxStages + 2;
  float* split_recv = reinterpret_cast<float*>(smem + p.stages * stage_bytes + detail::kSmemReserveBytes);
  // The epilogue stages its tile in the drained ring, except under stream-K,
  // where the producers are already filling the ring with the next segment:
  // there it has its own bytes after the reserve (src/tactics sizes them).
  uint8_t* epilogue_smem = p.stream_k ? smem + p.stages * stage_bytes + detail::kSmemReserveBytes : smem;

  // Broadcast, so the compiler knows the warpgroup (and so the consumer's row and
  // K group, its descriptors and ring cursor) is warp-uniform: the descriptor
  // arithmetic then runs on the uniform datapath, with no R2UR move per wgmma.
  const int warpgroup = __shfl_sync(0xffffffff, threadIdx.x / 128, 0);
  const int warp = __shfl_sync(0xffffffff, threadIdx.x / 32, 0);
  const int lane = threadIdx.x % 32;
  const int rank = p.stream_k ? 0 : blockIdx.x % p.split_k;  // rank in the split-K cluster
  const Schedule<T::kCtaM, T::kCtaN> sched(p, blockIdx.x, blockIdx.y, blockIdx.z);

  if (threadIdx.x == 0) {
    hooks.point(kTraceEntry);
    cute::prefetch_tma_descriptor(&tmap_w);
    cute::prefetch_tma_descriptor(&tmap_x);
    for (int s = 0; s < p.stages; ++s) {
      Barrier::init(full + s, 2);               // one arrive per producer, plus the bytes
      Barrier::init(empty + s, T::kRowGroups);  // one arrive per warpgroup of the K group that takes it
    }
    Barrier::init(pace, 1);
    if (p.split_push) {
      Barrier::init(split_bar, 1);
      if (rank == 0) Barrier::arrive_and_expect_tx(split_bar, (p.split_k - 1) * T::kPartialBytes);
    }
    cutlass::arch::fence_barrier_init();
  }
  __syncthreads();
  // The peers push only once the leader's barrier is initialized: they wait for
  // this arrival just before their pushes, everyone else never waits on it.
  if (p.split_push) cute::cluster_arrive_relaxed();

  if (warpgroup == 0) {
    // Producers need few registers; give them to the consumers' accumulators.
    if constexpr (T::kRegRealloc) cutlass::arch::warpgroup_reg_dealloc<40>();
    if (warp == 0 && lane == 0) {
      // W producer: never waits for the previous kernel.
      hooks.point(kTraceFirstIssue);
      if (p.trigger_at_entry) griddep_launch_dependents();
      produce<T>(p, sched, full, empty, w_stage_bytes, [&](int s, const Segment& sg, int kb) {
        const uint64_t hint = hooks.w_hint();
        uint8_t* dst = smem + s * stage_bytes;
        for (int c = 0; c < T::kChunks; ++c) {
          const int k = kb * T::kCtaK + c * kChunkK;
          uint8_t* chunk = dst + c * T::kChunkBytesW;
          if constexpr (T::kMajorW == GMMA::Major::K) {
            if (p.act != kActNone) {
              // Gated: groups of 8 gate rows and their 8 up rows alternate in
              // the tile (the 5-D map of sm90_launch.cpp), so each thread's
              // accumulator pair (rows r, r + 8) is one gate and its up.
              SM90_TMA_LOAD_5D::copy(&tmap_w, full + s, hint, chunk, k, 0, 0, sg.n0 / 16, sg.batch);
            } else if (p.w_folded) {
              // One box carries every chunk of the stage: fewer, larger copies
              // stream faster per SM than one 8 KB copy per chunk.
              if (c == 0) SM90_TMA_LOAD_4D::copy(&tmap_w, full + s, hint, chunk, 0, sg.n0, kb * T::kChunks, sg.batch);
            } else {
              SM90_TMA_LOAD_3D::copy(&tmap_w, full + s, hint, chunk, k, sg.n0, sg.batch);
            }
          } else {
            for (int b = 0; b < T::kCtaM / 64; ++b)
              SM90_TMA_LOAD_3D::copy(&tmap_w, full + s, hint, chunk + b * T::kBoxBytes, sg.n0 + b * 64, k, sg.batch);
          }
        }
      }, p.w_lead, pace);
      hooks.point(kTraceLastIssue);
      // Every load of this CTA is issued: the next kernel may start launching.
      if (!p.trigger_at_entry) griddep_launch_dependents();
    } else if (warp == 1 && lane == 0) {
      // x producer: the activations are the previous kernel's output.
      const long long before = clock64();
      griddep_wait();
      // Paced only when alone (a PDL successor's prefilled ring streamed faster
      // back to back unpaced, perf-notes §20) and below pace_ctas (a plain
      // launch's later-wave CTA also finds its wait short, yet starts staggered; §45).
      const int linear_cta = int(blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z));
      if (p.w_lead > 0 && linear_cta < p.pace_ctas && (p.pace_waited || clock64() - before < kAloneWaitCycles))
        Barrier::arrive(pace);
      produce<T>(p, sched, full, empty, stage_bytes - w_stage_bytes, [&](int s, const Segment& sg, int kb) {
        const uint64_t hint = hooks.x_hint();
        uint8_t* dst = smem + s * stage_bytes + w_stage_bytes;
        for (int c = 0; c < T::kChunks; ++c) {
          const int k = kb * T::kCtaK + c * kChunkK;
          uint8_t* chunk = dst + c * T::kChunkBytesX;
          if constexpr (T::kMajorX == GMMA::Major::K) {
            if (p.x_folded) {
              if (c == 0) SM90_TMA_LOAD_4D::copy(&tmap_x, full + s, hint, chunk, 0, sg.m0, kb * T::kChunks, sg.batch);
            } else {
              SM90_TMA_LOAD_3D::copy(&tmap_x, full + s, hint, chunk, k, sg.m0, sg.batch);
            }
          } else if constexpr (T::kCtaN <= 64) {
            SM90_TMA_LOAD_3D::copy(&tmap_x, full + s, hint, chunk, sg.m0, k, sg.batch);
          } else {
            for (int b = 0; b < T::kCtaN / 64; ++b)
              SM90_TMA_LOAD_3D::copy(&tmap_x, full + s, hint, chunk + b * T::kBoxBytes, sg.m0 + b * 64, k, sg.batch);
          }
        }
      });
    }
    // The producers take part in the split-K cluster barriers, nothing else.
    // Reconverge first: barrier.cluster is .aligned, and lane 0 ran the loops alone.
    __syncwarp();
    if (p.split_k > 1 && !p.split_push) {
      cute::cluster_sync();
      cute::cluster_sync();
    }
    return;
  }

  // ---- consumers -----------------------------------------------------------
  if constexpr (T::kRegRealloc) cutlass::arch::warpgroup_reg_alloc<232>();
  const int consumer = warpgroup - 1;
  const int row_group = consumer % T::kRowGroups;  // owns weight rows [64*row_group, 64*row_group + 64)
  const int k_group = consumer / T::kRowGroups;    // takes the segment's K blocks kb_begin + k_group + i*k_groups
  // Stream-K keeps one K group: its producers refill the ring while a segment's
  // partial tile is fixed up, so there are no drained bytes for the groups to meet in.
  // So does a ring under 4 stages: with 2, a group would hold its previous slot
  // while waiting for that same slot's refill (a deadlock); 3 is the least that
  // works, 4 keeps a margin.
  // The launcher asks for K groups only on grids small enough for the SMs'
  // rate to bound the stream (Params::k_groups).
  // And only on a ring of a multiple of kKGroups stages, so that every lap of a
  // slot goes to the same group. On an odd ring the groups alternate laps of a
  // slot: a group a lap ahead (its previous slot landed before the other
  // group's, out of order) waits on the slot's full barrier while it is still
  // in the other group's phase, and a parity wait cannot tell the two apart. It
  // passes at once, multiplies unlanded bytes and frees the slot early; the
  // producer's next arrive then finds the phase's arrivals spent, an illegal
  // instruction (perf-notes §39: a 9-stage ring under back-to-back replay).
  const int k_groups =
      p.stream_k || p.stages < 4 || p.k_groups < 2 || p.stages % T::kKGroups != 0 ? 1 : T::kKGroups;
  if (k_group >= k_groups) {
    if (p.split_k > 1 && !p.split_push) {  // the cluster barriers count every thread
      cute::cluster_sync();
      cute::cluster_sync();
    }
    return;
  }
  const int active_threads = 128 * T::kRowGroups * k_groups;
  const int wthread = threadIdx.x % 128;
  constexpr int kConsumerThreads = T::kEpilogueThreads;  // K group 0, which reduces and stores
  const int cthread = threadIdx.x - 128;  // index among the consumer threads (K group 0 first)

  // wgmma's accumulator fragment: thread t holds rows (t/32)*16 + (t%32)/4 + {0, 8}
  // of its warpgroup's 64, and token pairs (t%4)*2 + {0, 1} of every 8.
  const int row_lo = row_group * 64 + (wthread / 32) * 16 + lane / 4;
  // Gated, rows 16g..16g+7 of the tile are gate rows and 16g+8..16g+15 their
  // up rows: the thread's two rows are one output column, orow of the tile.
  const bool gate_pairs = p.act != kActNone;
  const int orow = row_lo - 8 * (row_lo / 16);
  const Fragment frag{gate_pairs, row_lo, orow, lane};

  // Descriptors of each k16 step of stage 0's first chunk. Every other stage and
  // chunk is the same layout at a byte offset, added to the start-address field
  // (16-byte units), so the main loop spends one add per wgmma on addressing.
  SmemDesc desc_w[kChunkK / 16] = {}, desc_x[kChunkK / 16] = {};
  {
    Tensor sW = make_tensor(make_smem_ptr(reinterpret_cast<bf16*>(smem)), typename T::LayoutW{});  // (kCtaM, kChunkK)
    Tensor sX = make_tensor(make_smem_ptr(reinterpret_cast<bf16*>(smem + w_stage_bytes)),
                            typename T::LayoutX{});  // (kCtaN, kChunkK)
#pragma unroll
    for (int j = 0; j < kChunkK / 16; ++j) {
      desc_w[j] = SmemDesc(GMMA::make_gmma_desc<T::kMajorW>(local_tile(sW, Shape<_64, _16>{}, make_coord(row_group, j))));
      desc_x[j] = SmemDesc(GMMA::make_gmma_desc<T::kMajorX>(local_tile(sX, Shape<Int<T::kCtaN>, _16>{}, make_coord(0, j))));
    }
  }

  RingCursor ring(0);
  for (int j = 0; j < sched.num_segments; ++j) {
    const Segment sg = sched.segment(p, j);
    const int o0 = gate_pairs ? sg.n0 / 2 : sg.n0;  // the tile's first output column
    // The W rows behind the thread's lo and hi accumulators, for the bias.
    const int w_lo = gate_pairs ? o0 + orow : sg.n0 + row_lo;
    const int w_hi = gate_pairs ? p.out_cols + o0 + orow : sg.n0 + row_lo + 8;
    const bool lo_valid = gate_pairs ? o0 + orow < p.out_cols : w_lo < p.n;
    const bool hi_valid = gate_pairs ? lo_valid : w_hi < p.n;
    float bias_lo = 0.0f, bias_hi = 0.0f;
    uint32_t res_bits[kResidualRegs<T>];
#pragma unroll
    for (int i = 0; i < kResidualRegs<T>; ++i) res_bits[i] = 0u;

    float acc[T::kAccRegs];
#pragma unroll
    for (int i = 0; i < T::kAccRegs; ++i) acc[i] = 0.0f;

    // cta_k is a template parameter: with a runtime chunk count, ptxas cannot
    // prove the accumulators untouched between wgmmas and serializes them (C7515).
    int prev = -1;  // the slot whose wgmma batch is still in flight
    // This group's K blocks only, one path through the loop: a branch that
    // skipped the other groups' stages would copy the accumulators while a
    // wgmma batch is in flight, and ptxas then serializes the wgmmas (C7515).
    if (k_group > 0) ring.advance(p.stages, k_group);
    for (int kb = sg.kb_begin + k_group; kb < sg.kb_end; kb += k_groups) {
      const int s = ring.stage;
      const uint32_t phase = ring.phase;
      ring.advance(p.stages, k_groups);
      Barrier::wait(full + s, phase);
      if (threadIdx.x == 128 &&
          ((j == 0 && kb == sg.kb_begin) || (j == sched.num_segments - 1 && kb + k_groups >= sg.kb_end)))
        hooks.point(j == 0 && kb == sg.kb_begin ? kTraceFirstFull : kTraceLastFull);
      if (kb == sg.kb_begin && rank == 0 && p.bias != nullptr) {
        // The barrier wait's asm has no memory clobber: without this fence the
        // compiler may hoist the bias load above it, before the x wait.
        asm volatile("" ::: "memory");
        // Issued once x has landed (so after the previous kernel completed, in
        // case it wrote the bias); its latency hides behind the main loop.
        if (lo_valid) bias_lo = load_input(p.bias, w_lo, T::kFp16);
        if (hi_valid) bias_hi = load_input(p.bias, w_hi, T::kFp16);
      }
      if constexpr (T::kCtaN <= kDirectStoreMaxTokens) {
        if (kb == sg.kb_begin && rank == 0 && p.residual != nullptr) {
          asm volatile("" ::: "memory");  // after the x wait, as the bias
          load_residual_bits<T>(p, frag, o0, sg.m0, sg.batch, res_bits);
        }
      }
#pragma unroll
      for (int r = 0; r < T::kAccRegs; ++r) warpgroup_fence_operand(acc[r]);
      warpgroup_arrive();
      const uint32_t s_off = uint32_t(s * stage_bytes) >> 4;
#pragma unroll
      for (int c = 0; c < T::kChunks; ++c) {
        const uint32_t w_off = s_off + uint32_t(c * T::kChunkBytesW >> 4);
        const uint32_t x_off = s_off + uint32_t(c * T::kChunkBytesX >> 4);
#pragma unroll
        for (int jj = 0; jj < kChunkK / 16; ++jj)
          wgmma<typename T::Mma>(desc_w[jj].at(w_off), desc_x[jj].at(x_off), acc,
                                 std::make_index_sequence<T::kAccRegs>{});
      }
      warpgroup_commit_batch();
      // One batch stays in flight while the next stage is awaited; the previous
      // batch has retired, so its stage goes back to the producers.
      warpgroup_wait<1>();
#pragma unroll
      for (int r = 0; r < T::kAccRegs; ++r) warpgroup_fence_operand(acc[r]);
      if (prev >= 0 && wthread == 0) Barrier::arrive(empty + prev);
      prev = s;
    }
    warpgroup_wait<0>();
#pragma unroll
    for (int r = 0; r < T::kAccRegs; ++r) warpgroup_fence_operand(acc[r]);
    // The segment's last stage goes back too: under stream-K the producers
    // are filling the ring with the next segment (else no one waits for it).
    if (wthread == 0 && prev >= 0) Barrier::arrive(empty + prev);

    // Every consumer is past its last wgmma before the ring is overwritten
    // (every TMA write has landed: each full barrier was waited on), and past
    // the previous segment's epilogue before its staging bytes are.
    cutlass::arch::NamedBarrier::sync(active_threads, 0);

    // ---- K groups: the other groups' partial sums into group 0's registers ----
    if (k_groups > 1) {
      auto* partial = reinterpret_cast<float*>(smem);  // the drained ring
      const int ethread = cthread % kConsumerThreads;
      if (k_group != 0) {
#pragma unroll
        for (int i = 0; i < T::kAccRegs; ++i)
          partial[((k_group - 1) * T::kAccRegs + i) * kConsumerThreads + ethread] = acc[i];
      }
      cutlass::arch::NamedBarrier::sync(active_threads, 0);
      if (k_group != 0) {
        // Done; the split-K cluster barriers still count this warpgroup.
        if (p.split_k > 1 && !p.split_push) {
          cute::cluster_sync();
          cute::cluster_sync();
        }
        return;
      }
      for (int g = 1; g < k_groups; ++g) {  // group order: bitwise repeatable
#pragma unroll
        for (int i = 0; i < T::kAccRegs; ++i) acc[i] += partial[((g - 1) * T::kAccRegs + i) * kConsumerThreads + ethread];
      }
      // Read before the epilogue's staged tile (other threads' bytes) overwrites them.
      cutlass::arch::NamedBarrier::sync(kConsumerThreads, 0);
    }

    // ---- split-K: the peers' partial sums into the leader's registers --------
    if (p.split_k > 1 && p.split_push) {
      // Peer r's sums at [r - 1][consumer thread][register]: a thread's values
      // are 16-byte runs, pushed and read back as float4.
      float* mine = split_recv + (rank > 0 ? rank - 1 : 0) * (T::kPartialBytes / 4) + cthread * T::kAccRegs;
      if (rank != 0) {
        __syncwarp();
        cute::cluster_wait();  // the leader's split_bar is initialized
#pragma unroll
        for (int i = 0; i < T::kAccRegs; i += 4)
          push_v4(mine + i, split_bar, 0, acc[i], acc[i + 1], acc[i + 2], acc[i + 3]);
        // No one reads this CTA's shared memory: it may exit while its pushes land.
        if (threadIdx.x == 128) hooks.point(kTraceExit);
        return;
      }
      wait_cluster_acquire(split_bar, 0);
      for (int r = 1; r < p.split_k; ++r) {  // rank order: bitwise repeatable
        const float4* theirs = reinterpret_cast<const float4*>(split_recv + (r - 1) * (T::kPartialBytes / 4) +
                                                               cthread * T::kAccRegs);
#pragma unroll
        for (int i = 0; i < T::kAccRegs / 4; ++i) {
          const float4 v = theirs[i];
          acc[4 * i] += v.x, acc[4 * i + 1] += v.y, acc[4 * i + 2] += v.z, acc[4 * i + 3] += v.w;
        }
      }
    } else if (p.split_k > 1) {
      // Register i of consumer thread t at [i][t]: a warp's accesses are consecutive words.
      auto* partial = reinterpret_cast<float*>(smem);
      if (rank != 0) {
#pragma unroll
        for (int i = 0; i < T::kAccRegs; ++i) partial[i * kConsumerThreads + cthread] = acc[i];
      }
      cute::cluster_sync();  // peers' partials are written and visible cluster-wide
      if (rank == 0) {
        auto cluster = cooperative_groups::this_cluster();
        for (int r = 1; r < p.split_k; ++r) {  // fixed order: bitwise repeatable
          const float* peer = cluster.map_shared_rank(partial, r);
#pragma unroll
          for (int i = 0; i < T::kAccRegs; ++i) acc[i] += peer[i * kConsumerThreads + cthread];
        }
      }
      cute::cluster_sync();  // the peers stay resident until the leader has read them
      if (rank != 0) {
        if (threadIdx.x == 128) hooks.point(kTraceExit);
        return;
      }
    }

    // ---- stream-K: a partly reduced tile is finished by its last contributor
    // No CTA waits for another (an arrival counter, not a lock): deadlock-free
    // whatever the residency, also beside a PDL neighbour or another stream.
    if (p.stream_k && !sg.whole) {
      constexpr int kSlotFloats = T::kCtaM * T::kCtaN;
      const int rel = sg.tile - p.sk_dp_tiles;  // counted from the first stream-K tile
      float* mine = p.sk_partials + int64_t(sk_slot(p, blockIdx.x, rel)) * kSlotFloats;
#pragma unroll
      for (int i = 0; i < T::kAccRegs; ++i) __stcg(mine + i * kConsumerThreads + cthread, acc[i]);
      __threadfence();  // each thread's partial is visible device-wide before the arrival
      cutlass::arch::NamedBarrier::sync(kConsumerThreads, 0);
      const int64_t first_it = int64_t(rel) * p.num_k_blocks;
      const int c_lo = sk_cta_of(p, first_it), c_hi = sk_cta_of(p, first_it + p.num_k_blocks - 1);
      if (cthread == 0) {
        const uint32_t arrived = atomicAdd(p.sk_counters + sg.tile, 1u) + 1;
        const uint32_t last = arrived == uint32_t(c_hi - c_lo + 1);
        if (last) p.sk_counters[sg.tile] = 0;  // every contributor has arrived: ready for the next kernel
        *sk_last = last;
      }
      cutlass::arch::NamedBarrier::sync(kConsumerThreads, 0);
      if (*sk_last == 0) continue;
      __threadfence();
      // In CTA order, whichever arrived last: bitwise repeatable.
      float sum[T::kAccRegs];
#pragma unroll
      for (int i = 0; i < T::kAccRegs; ++i) sum[i] = 0.0f;
      for (int c = c_lo; c <= c_hi; ++c) {
        if (c == int(blockIdx.x)) {
#pragma unroll
          for (int i = 0; i < T::kAccRegs; ++i) sum[i] += acc[i];
        } else {
          const float* theirs = p.sk_partials + int64_t(sk_slot(p, c, rel)) * kSlotFloats;
#pragma unroll
          for (int i = 0; i < T::kAccRegs; ++i) sum[i] += __ldcg(theirs + i * kConsumerThreads + cthread);
        }
      }
#pragma unroll
      for (int i = 0; i < T::kAccRegs; ++i) acc[i] = sum[i];
    }

    // ---- epilogue: fp32 until the one rounding, stored directly or staged ----
    // A plain call (bf16 out, no residual, no gating) runs the code it ran before
    // the epilogues existed, separately instantiated: it executes (and fetches)
    // none of theirs. Everything else first turns acc into out's values before the
    // residual: + bias, then the gated activation (acc[i] for i % 4 < 2 only).
    const bool plain = !gate_pairs && p.residual == nullptr && p.out_type == kOutBf16;
    if (plain) {
      // A literal ungated fragment: the plain code folds the gating away, as before.
      epilogue<T>(std::true_type{}, p, epilogue_smem, acc, bias_lo, bias_hi, sg.n0, sg.m0, sg.batch,
                  Fragment{false, row_lo, orow, lane}, res_bits, cthread);
    } else {
#pragma unroll
      for (int i = 0; i < T::kAccRegs; ++i) {
        const bool hi = (i % 4) / 2;
        if (!gate_pairs)
          acc[i] += hi ? bias_hi : bias_lo;
        else if (!hi)
          acc[i] = gated(p.act, acc[i] + bias_lo, acc[i + 2] + bias_hi);
      }
      epilogue<T>(std::false_type{}, p, epilogue_smem, acc, 0.0f, 0.0f, o0, sg.m0, sg.batch, frag, res_bits,
                  cthread);
    }
  }
  if (threadIdx.x == 128) hooks.point(kTraceExit);
}

}  // namespace tgv::kernels::sm90

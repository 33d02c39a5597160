// THE tactic list. Kernel instantiation (src/launch), legality, the ladder
// (src/plan), the tests, the bench sweep and tgv_get_tactic all derive from it.
//
// A tactic fixes the tile a CTA computes: cta_m weight rows (the MMA's M after
// the A/B swap) by cta_n tokens (the MMA's N), cta_k reduction columns per
// pipeline stage. On SM90, pipeline depth is not part of the id: it is a
// runtime parameter of the kernel, by default the most stages that fit the
// device's shared memory (stages_for), else the caller's or the tuning file's
// (the deepest is not always the fastest). On SM100 a tactic is one of the
// reference design's (cta_m, cta_n, stages, cluster) configurations, stages
// included.
#pragma once

#include <cstdint>

namespace tgv::detail {

// Tile shapes compiled for SM90 as (cta_m, cta_n). Each is one file of kernel
// template instances: one per operand-layout pair and per cta_k of kSm90CtaKs
// (a template parameter: the stage's box shapes and MMA count follow from it).
// The stage count is a runtime parameter of an instance, so depths cost no
// compile time.
#define TGV_SM90_TILES(X) \
  X(64, 8)                \
  X(64, 16)               \
  X(64, 32)               \
  X(64, 64)               \
  X(64, 128)              \
  X(64, 256)              \
  X(128, 8)               \
  X(128, 16)              \
  X(128, 32)              \
  X(128, 64)              \
  X(128, 128)             \
  X(128, 256)

// Tile shapes compiled for SM100/SM103 (sm_100a, sm_103a) as (cta_m, cta_n,
// cluster), cta_k = 128: the reference design's one-wave ladder tiles and its
// default (64x8, one CTA). A cluster of 2 is the CTA pair of one cta_group::2
// MMA: it covers 2 * cta_m weight rows, each CTA loading cta_n / 2 tokens.
// Each is one kernel instance (K-major x and W only); the stage count is a
// runtime parameter of the instance. CMake generates one file per line.
#define TGV_SM100_TILES(X) \
  X(64, 8, 1)              \
  X(64, 16, 2)             \
  X(64, 32, 2)             \
  X(64, 64, 2)             \
  X(64, 128, 2)            \
  X(128, 16, 1)            \
  X(128, 32, 2)            \
  X(128, 64, 2)

// SM100 tactics: the reference design's (cta_m, cta_n, stages, cluster)
// configurations whose tile is compiled above, in its order, and each one's
// rung on its one-wave ladder (1 = tried first; 0 = not on the ladder).
#define TGV_SM100_TACTICS(X)  \
  X(64, 8, 6, 1, 0)           \
  X(64, 8, 8, 1, 0)           \
  X(64, 8, 10, 1, 0)          \
  X(64, 8, 12, 1, 0)          \
  X(128, 16, 6, 1, 5)         \
  X(64, 16, 6, 2, 0)          \
  X(64, 16, 8, 2, 0)          \
  X(64, 16, 12, 2, 1)         \
  X(64, 32, 6, 2, 0)          \
  X(64, 32, 8, 2, 0)          \
  X(64, 32, 11, 2, 2)         \
  X(64, 64, 6, 2, 0)          \
  X(64, 64, 9, 2, 3)          \
  X(64, 128, 7, 2, 4)         \
  X(128, 32, 6, 2, 6)         \
  X(128, 64, 5, 2, 7)

struct Tactic {
  int32_t id;
  int32_t arch;  // 90: Hopper; 100: Blackwell (sm_100 and sm_103, each its own build of the kernels)
  int32_t cta_m;
  int32_t cta_n;
  int32_t cta_k;
  int32_t cluster;  // CTAs sharing one MMA (the SM100 pair); 1 on SM90 (split-K clusters are the plan's)
  int32_t stages;   // 0: the deepest pipeline that fits (SM90); else fixed by the tactic (SM100)
  int32_t ladder_rung = 0;  // SM100: place on the reference design's one-wave ladder (1 first; 0 off it)
};

// The tactic family a device runs: sm_103 runs the sm_100 tactics.
inline constexpr int32_t arch_family(int32_t sm) { return sm == 103 ? 100 : sm; }

// A stage's reduction depth is cta_k = chunks x 64: one chunk is one 128-byte
// swizzle span of bf16, the widest box a swizzled TMA load may have. cta_k is
// a template parameter of the kernel, instantiated for each value below.
inline constexpr int32_t kSm90ChunkK = 64;
inline constexpr int32_t kSm90CtaKs[] = {128, 64};
inline constexpr int32_t kNumSm90Tiles = 0
#define TGV_COUNT_TILE(m, n) +1
    TGV_SM90_TILES(TGV_COUNT_TILE)
#undef TGV_COUNT_TILE
    ;
inline constexpr int32_t kNumSm90Tactics = kNumSm90Tiles * 2;
inline constexpr int32_t kSm100CtaK = 128;
inline constexpr int32_t kNumSm100Tactics = 0
#define TGV_COUNT_TACTIC(m, n, s, c, rung) +1
    TGV_SM100_TACTICS(TGV_COUNT_TACTIC)
#undef TGV_COUNT_TACTIC
    ;
inline constexpr int32_t kNumTactics = kNumSm90Tactics + kNumSm100Tactics;

// The whole list; ids are indices. Order: the SM90 tactics (cta_k major, then
// the tile order above), then the SM100 tactics in TGV_SM100_TACTICS order.
const Tactic* tactics();
const Tactic& tactic(int32_t id);

// The token tile the weights are read once with: the smallest cta_n of the
// family's tactics that covers all of M (up to the largest tile, 256); 0 if
// the family has none.
int32_t covering_cta_n(int32_t family, int64_t m);

// Shared memory: a stage holds a (cta_m x cta_k) weight tile and a
// (cta_n / cluster x cta_k) activation tile (a CTA pair splits the tokens);
// barriers and bookkeeping sit in a fixed reserve beside the ring.
inline constexpr int64_t kSmemReserveBytes = 1024;
inline constexpr int32_t kMaxStages = 16;
// Split-K runs the slices of a tile as one cluster: 16 CTAs is the largest
// (non-portable) cluster Hopper schedules.
inline constexpr int32_t kMaxSplitK = 16;
static_assert(kSmemReserveBytes >= 2 * kMaxStages * 8 + 24,
              "a full and an empty mbarrier per stage, a flag, the pace and split-K receive barriers");
inline constexpr int64_t stage_bytes(const Tactic& t) { return int64_t(t.cta_m + t.cta_n / t.cluster) * t.cta_k * 2; }
inline constexpr int64_t smem_bytes_for(const Tactic& t, int32_t stages) {
  return kSmemReserveBytes + stage_bytes(t) * stages;
}
// Pipeline depth in `smem_bytes` of dynamic shared memory per block: the
// tactic's fixed stage count (SM100), else the deepest pipeline that fits
// (SM90). 0 when the fixed count does not fit, or not even two stages do.
int32_t stages_for(const Tactic& t, int64_t smem_bytes);

// After its main loop the SM90 kernel reuses the drained ring: the epilogue
// stages the bf16 output tile there in out's orientation (rows padded by 8
// elements, so that a warp's column writes spread over banks), and a split-K CTA
// whose tile is too wide to push its sums (sm90_split_push_bytes, below) parks
// its fp32 partial sums there for the cluster's leader. The kernel's
// Traits must agree (asserted where they are instantiated, src/launch).
inline constexpr int64_t sm90_epilogue_bytes(int64_t cta_m, int64_t cta_n) {
  return 2 * (cta_n * (cta_m + 8) > cta_m * (cta_n + 8) ? cta_n * (cta_m + 8) : cta_m * (cta_n + 8));
}
inline constexpr int64_t sm90_partial_bytes(int64_t cta_m, int64_t cta_n) { return cta_m * cta_n * 4; }

// SM90 tiles whose consumers form two K groups (the kernel's kKGroups): 64 weight
// rows, one consumer warpgroup otherwise, and token tiles up to this wide.
inline constexpr int32_t kKGroupMaxTokens = 32;
inline constexpr bool sm90_tile_has_k_groups(int64_t cta_m, int64_t cta_n) {
  return cta_m == 64 && cta_n <= kKGroupMaxTokens;
}

// Stream-K (split_k == kSplitKStream, TGV_SPLIT_K_STREAM): one CTA per SM over
// the flat (tile, K block) space (src/kernels/sm90/schedule.cuh). Its producers
// refill the ring while a segment's epilogue runs, so a staged epilogue (token
// tiles wider than the direct-store 16) has its own bytes after the reserve.
// The fp32 partials live in a per-(device, stream) workspace of two slots per
// SM of at most kStreamKMaxTileFloats each, with one counter per tile.
inline constexpr int32_t kSplitKStream = -1;
inline constexpr int64_t kStreamKMaxTileFloats = 128 * 64;
inline constexpr int64_t kStreamKMaxTiles = 1 << 16;
inline constexpr int64_t kStreamKMinItersPerCta = 4;  // K blocks a CTA streams at least: a ring's worth
inline constexpr int64_t sm90_stream_k_epilogue_bytes(int64_t cta_m, int64_t cta_n) {
  return cta_n <= 16 ? 0
                     : (sm90_epilogue_bytes(cta_m, cta_n) > sm90_partial_bytes(cta_m, cta_n)
                            ? sm90_epilogue_bytes(cta_m, cta_n)
                            : sm90_partial_bytes(cta_m, cta_n));
}
// Split-K's reduction. Where the peers' partial sums fit this many bytes, the
// leader keeps a receive buffer beside the ring and each peer pushes its sums
// there (remote stores that complete on the leader's barrier) and exits: no
// cluster barrier after the main loop. Wider tiles park their sums in their
// own drained ring for the leader to read, between two cluster barriers.
inline constexpr int64_t kSm90SplitPushMaxBytes = 16 * 1024;
inline constexpr int64_t sm90_split_push_bytes(int64_t cta_m, int64_t cta_n, int32_t split_k) {
  const int64_t bytes = split_k > 1 ? (split_k - 1) * sm90_partial_bytes(cta_m, cta_n) : 0;
  return bytes <= kSm90SplitPushMaxBytes ? bytes : 0;
}
// The split-K partials a CTA keeps in its drained ring (the pulled reduction).
inline constexpr int64_t sm90_ring_partial_bytes(int64_t cta_m, int64_t cta_n, int32_t split_k) {
  return split_k > 1 && sm90_split_push_bytes(cta_m, cta_n, split_k) == 0 ? sm90_partial_bytes(cta_m, cta_n) : 0;
}
// Shared memory beside an SM90 ring at split_k: stream-K's epilogue tile, or
// the split-K receive buffer.
inline constexpr int64_t sm90_extra_smem_bytes(const Tactic& t, int32_t split_k) {
  if (t.arch != 90) return 0;
  return split_k == kSplitKStream ? sm90_stream_k_epilogue_bytes(t.cta_m, t.cta_n)
                                  : sm90_split_push_bytes(t.cta_m, t.cta_n, split_k);
}
// Dynamic shared memory of an SM90 launch at `stages` and split_k.
inline constexpr int64_t sm90_smem_bytes(const Tactic& t, int32_t stages, int32_t split_k) {
  return smem_bytes_for(t, stages) + sm90_extra_smem_bytes(t, split_k);
}
// The fewest stages whose ring holds what tactic t keeps there at split_k; at
// least 2, the shallowest pipeline.
inline constexpr int32_t min_stages_for(const Tactic& t, int32_t split_k) {
  if (t.arch != 90 || split_k == kSplitKStream) return 2;
  const int64_t epilogue = sm90_epilogue_bytes(t.cta_m, t.cta_n);
  const int64_t partials = sm90_ring_partial_bytes(t.cta_m, t.cta_n, split_k);
  const int64_t need = epilogue > partials ? epilogue : partials;
  const int64_t stages = (need + stage_bytes(t) - 1) / stage_bytes(t);
  return stages < 2 ? 2 : static_cast<int32_t>(stages);
}

// The opt-in shared memory of an SM90 block (227 KiB); used to report stages
// in tgv_get_tactic without touching a device.
inline constexpr int64_t kSm90SmemBytes = 232448;
// The same for an SM100/SM103 block (B200, B300: 227 KiB).
inline constexpr int64_t kSm100SmemBytes = 232448;
inline constexpr int64_t smem_bytes_of_arch(int32_t arch) { return arch == 100 ? kSm100SmemBytes : kSm90SmemBytes; }

}  // namespace tgv::detail

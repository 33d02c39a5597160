// THE tactic list. Kernel instantiation (src/launch), legality, the ladder
// (src/plan), the tests, the bench sweep and tgv_get_tactic all derive from it.
//
// A tactic fixes the tile a CTA computes: cta_m weight rows (the MMA's M after
// the A/B swap) by cta_n tokens (the MMA's N), cta_k reduction columns per
// pipeline stage. Pipeline depth is not part of the id: it is the most stages
// that fit the device's shared memory (stages_for), so the deepest pipeline
// is always used.
#pragma once

#include <cstdint>

namespace tgv::detail {

// Tile shapes compiled for SM90 as (cta_m, cta_n). Each is a kernel template
// instance per operand-layout pair; cta_k and the stage count are runtime
// parameters of the same instance, so they cost no compile time.
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

struct Tactic {
  int32_t id;
  int32_t arch;  // 90: Hopper
  int32_t cta_m;
  int32_t cta_n;
  int32_t cta_k;
  int32_t cluster;
};

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
inline constexpr int32_t kNumTactics = kNumSm90Tiles * 2;

// The whole list; ids are indices. Order: cta_k major, then the tile order above.
const Tactic* tactics();
const Tactic& tactic(int32_t id);

// Shared memory: a stage holds a (cta_m x cta_k) weight tile and a
// (cta_n x cta_k) activation tile; barriers and bookkeeping sit in a
// fixed reserve beside the ring.
inline constexpr int64_t kSmemReserveBytes = 1024;
inline constexpr int32_t kMaxStages = 16;
// Split-K runs the slices of a tile as one cluster: 16 CTAs is the largest
// (non-portable) cluster Hopper schedules.
inline constexpr int32_t kMaxSplitK = 16;
static_assert(kSmemReserveBytes >= 2 * kMaxStages * 8, "a full and an empty mbarrier per stage");
int64_t stage_bytes(const Tactic& t);
// Deepest pipeline that fits `smem_bytes` of dynamic shared memory per block
// (0 when not even two stages fit).
int32_t stages_for(const Tactic& t, int64_t smem_bytes);
int64_t smem_bytes_for(const Tactic& t, int32_t stages);

// The opt-in shared memory of an SM90 block (227 KiB); used to report stages
// in tgv_get_tactic without touching a device.
inline constexpr int64_t kSm90SmemBytes = 232448;

}  // namespace tgv::detail

#include "tactics/tactics.hpp"

#include <array>

#include "common/error.hpp"
#include "common/strfmt.hpp"

namespace tgv::detail {
namespace {

constexpr std::array<Tactic, kNumTactics> build() {
  std::array<Tactic, kNumTactics> list{};
  constexpr int32_t tiles[][2] = {
#define TGV_TILE_ROW(m, n) {m, n},
      TGV_SM90_TILES(TGV_TILE_ROW)
#undef TGV_TILE_ROW
  };
  int32_t id = 0;
  for (int32_t cta_k : kSm90CtaKs)
    for (const auto& tile : tiles) {
      list[id] = Tactic{id, 90, tile[0], tile[1], cta_k, 1, 0};
      ++id;
    }
  constexpr int32_t sm100[][5] = {
#define TGV_TACTIC_ROW(m, n, s, c, rung) {m, n, s, c, rung},
      TGV_SM100_TACTICS(TGV_TACTIC_ROW)
#undef TGV_TACTIC_ROW
  };
  for (const auto& row : sm100) {
    list[id] = Tactic{id, 100, row[0], row[1], kSm100CtaK, row[3], row[2], row[4]};
    ++id;
  }
  return list;
}

constexpr std::array<Tactic, kNumTactics> kTactics = build();

constexpr bool cta_ks_fit_the_kernel() {
  for (int32_t cta_k : kSm90CtaKs)
    if (cta_k % kSm90ChunkK != 0) return false;
  return true;
}
static_assert(cta_ks_fit_the_kernel(), "cta_k is whole 64-column chunks");

// Every SM100 tactic names a compiled tile, and its fixed pipeline fits.
constexpr bool sm100_tactics_are_compiled() {
  constexpr int32_t tiles[][3] = {
#define TGV_TILE_ROW(m, n, c) {m, n, c},
      TGV_SM100_TILES(TGV_TILE_ROW)
#undef TGV_TILE_ROW
  };
  for (const Tactic& t : kTactics) {
    if (t.arch != 100) continue;
    bool found = false;
    for (const auto& tile : tiles) found = found || (tile[0] == t.cta_m && tile[1] == t.cta_n && tile[2] == t.cluster);
    if (!found || t.stages < 2 || t.stages > kMaxStages) return false;
    if (smem_bytes_for(t, t.stages) > kSm100SmemBytes) return false;
  }
  return true;
}
static_assert(sm100_tactics_are_compiled(), "an SM100 tactic names an uncompiled tile or does not fit shared memory");

// Two stages hold every SM90 epilogue, so any tactic that fits shared memory at
// all can finish; on Hopper's 227 KiB the deepest ring also holds the split-K
// partials, so the default depth never limits split-K.
constexpr bool sm90_rings_hold_their_reuse() {
  for (const Tactic& t : kTactics) {
    if (t.arch != 90) continue;
    if (min_stages_for(t, 1) != 2) return false;
    const int64_t deepest = (kSm90SmemBytes - kSmemReserveBytes) / stage_bytes(t);
    if (deepest < min_stages_for(t, kMaxSplitK)) return false;
  }
  return true;
}
static_assert(sm90_rings_hold_their_reuse(), "an SM90 ring cannot hold its epilogue tile or split-K partials");

}  // namespace

const Tactic* tactics() { return kTactics.data(); }

int32_t covering_cta_n(int32_t family, int64_t m) {
  const int64_t want = m < 256 ? m : 256;
  int32_t cta_n = 0;
  for (int32_t i = 0; i < kNumTactics; ++i) {
    const Tactic& t = kTactics[i];
    if (t.arch == family && t.cta_n >= want && (cta_n == 0 || t.cta_n < cta_n)) cta_n = t.cta_n;
  }
  return cta_n;
}

const Tactic& tactic(int32_t id) {
  if (id < 0 || id >= kNumTactics)
    throw_invalid(strfmt("tactic=%d: must be -1 (auto) or an id in [0, %d)", id, kNumTactics));
  return kTactics[id];
}

int32_t stages_for(const Tactic& t, int64_t smem_bytes) {
  if (t.stages > 0) return smem_bytes_for(t, t.stages) <= smem_bytes ? t.stages : 0;
  const int64_t fit = (smem_bytes - kSmemReserveBytes) / stage_bytes(t);
  if (fit < 2) return 0;
  return fit > kMaxStages ? kMaxStages : static_cast<int32_t>(fit);
}

}  // namespace tgv::detail

// The tuner's candidate list: what `tgv-bench --tune` and `tgv_gemm.tune` both
// time for one (N, K, M) point (tgv_tune_candidates in tgv.h). One list, so the
// two tuners cannot drift apart; plain data in, so it is tested without a GPU.
#pragma once

#include <cstdint>
#include <vector>

#include "plan/device_info.hpp"
#include "tgv/tgv.h"

namespace tgv::detail {

// Split-K factors the tuner tries (each also within the K blocks and two
// waves). Any factor in [1, kMaxSplitK] runs; the list is widened here alone.
inline constexpr int32_t kTuneSplitKs[] = {1, 2, 3, 4, 5, 6, 7, 8};

// Ring depths tried beside the deepest (0) on sm_90: measured on the H200, a
// shallower ring starts the first loads sooner on some shapes and starves
// others of bytes in flight. Only a depth shallower than the deepest that fits,
// and deep enough to hold the tile's epilogue or partials, is offered.
inline constexpr int32_t kTuneShallowStages[] = {8};

// The candidates for weights n x k at m tokens on `dev`, cuBLASLt last. Each
// runs exactly one (tactic, split-K, depth): split-K is explicit even when 1.
std::vector<tgv_options> tune_candidates(const DeviceInfo& dev, int64_t n, int64_t k, int64_t m);

// A DeviceInfo from the C ABI's description (no name, no tuning table).
DeviceInfo device_from_desc(const tgv_device_desc& desc);

}  // namespace tgv::detail

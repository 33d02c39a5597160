// The dispatcher: which backend and which tactic run a validated request.
// Pure C++ over GemmDesc and DeviceInfo, so every rule is unit-tested on a CPU.
//
// Rule (see docs/design.md):
//   1. backend=cublas          -> cuBLASLt.
//   2. backend=tgv             -> our kernel, or an error saying why it cannot run
//                                 (device arch, layout, TMA limits, tactic).
//   3. backend=auto            -> cuBLASLt where the tuning file measured it
//                                 faster, or, untuned, where the cost model
//                                 (src/plan/cost_model.*) predicts it faster
//                                 than our best candidate, and for M > 128
//                                 (beyond the fitted range); else our kernel
//                                 where it can run on this device; else cuBLASLt.
//   The self-check gate's verdict (src/gate) is an input: a Failed family is
//   refused (auto -> cuBLASLt, backend=tgv -> the reason); the sm_100 family is
//   refused until its verdict is Passed; Hopper is served while Unknown (the
//   dispatcher settles the verdict before it launches).
//   Tactic, split-K and stages: the explicit ones, else the tuning file's
//   (only when none is explicit: an entry is one measured triple), else the
//   cost model's fastest (tactic, split-K in 1..8) on SM90 (the sm_100 ladder
//   on Blackwell) with the deepest ring that fits.
//   A stage count must fit shared memory, match an sm_100 tactic's fixed
//   count, and leave a ring that holds the epilogue tile and split-K partials
//   (min_stages_for); auto split-K drops to 1 rather than overflow it.
#pragma once

#include <cstdint>
#include <string>

#include "common/gemm_desc.hpp"
#include "gate/verdict.hpp"
#include "plan/device_info.hpp"
#include "plan/tuning.hpp"
#include "tactics/tactics.hpp"
#include "tgv/tgv.h"

namespace tgv::detail {

struct Plan {
  tgv_backend backend = TGV_BACKEND_CUBLAS;
  int32_t tactic = -1;  // tgv only
  int32_t stages = 0;   // tgv only; always the count to launch, never 0
  int32_t split_k = 1;  // tgv only; kSplitKStream: stream-K
  int32_t stream_k_ctas = 0;  // stream-K: the grid, at most one CTA per SM
  int64_t stream_k_whole_tiles = 0;  // stream-K: the hybrid's tiles taken whole (stream_k_whole_tiles)
  int32_t w_lead = 0;  // tgv sm_90: W stages in flight once x loads (0: the whole ring; sm90_w_lead)
  int32_t pace_ctas = 0;  // tgv sm_90, w_lead > 0: the CTAs (linear id below) that may be paced (sm90_pace_ctas)
  bool trigger_at_entry = false;  // tgv sm_90: PDL successor launched at entry (sm90_trigger_at_entry)
  bool pdl = false;
};

// Why this build has no tgv kernel family for the device (its architecture, the
// TGV_CUDA_ARCHS it was built with); empty if it has one.
std::string family_unavailable_reason(const DeviceInfo& dev);

// What a Failed verdict means for the device, reason included.
std::string gate_refusal(const DeviceInfo& dev, const GateVerdict& gate);

// Why the tgv kernels cannot serve this request on this device; empty if they can.
// `tactic` is the explicit id or -1; `gate` is the self-check's verdict for the
// device's family (null: Unknown).
std::string tgv_unsupported_reason(const GemmDesc& g, const DeviceInfo& dev, int32_t tactic,
                                   const GateVerdict* gate = nullptr);

// The reference design's Blackwell ladder, (cta_m, cta_n, stages, cluster) in
// its order: the first whose grid, in CTAs (a pair counts two), fits one wave;
// else the one with the fewest CTAs.
int32_t ladder_sm100(const GemmDesc& g, const DeviceInfo& dev);

// Throws detail::Error (NOT_SUPPORTED) for backend=tgv when tgv cannot serve.
// `tuning` (may be null) holds measured choices that override the cost model;
// `gate` (null: Unknown) is the self-check's verdict for the device's family.
Plan plan(const GemmDesc& g, const tgv_options& options, const DeviceInfo& dev, const TuningTable* tuning = nullptr,
          const GateVerdict* gate = nullptr);

}  // namespace tgv::detail

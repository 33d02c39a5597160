// The dispatcher's cost model: predicted microseconds of an SM90 tgv
// candidate (tactic, split-K) and of cuBLASLt for one GEMM, from the bytes each
// SM streams, the waves of split-K clusters the GPU holds at once, a per-SM
// read-rate cap and a fixed cost per kernel. Pure C++ over GemmDesc and
// DeviceInfo, unit-tested on a CPU. The constants are fitted to a sweep of
// every candidate on the H200 (scripts/fit_cost_model.py over the sweeps in
// docs/data/; perf-notes §28), scaled by the device's peak bandwidth; a GPU
// nearer the H100's bandwidth takes the H100's margins for a plain call (from an
// H100 sweep, §35, and its corpus at M = 64 and 128, §64).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/gemm_desc.hpp"
#include "plan/device_info.hpp"
#include "tactics/tactics.hpp"

namespace tgv::detail {

// The largest split-K the model considers: beyond 8 a cluster is a
// non-portable size and the H200 holds at most 7 of them at once.
inline constexpr int32_t kMaxModelSplitK = 8;
// Each slice keeps at least this many K blocks, enough to fill its ring.
inline constexpr int64_t kMinKBlocksPerSplit = 4;
// Split-K clusters (split_k 2..8) in the plans the library makes itself: the
// cost model's candidates, the tuner's, and tuning-file entries. Out of them
// from perf-notes §38 to §39, while back-to-back CUDA-graph replay ended split-2
// plans in an illegal mbarrier arrive or a hang; the cause was the K groups'
// odd ring (sm90_plan_stages), which split-1 plans shared. Set false, an
// explicit split_k still runs them.
inline constexpr bool kSplitKClustersInPlans = true;

// The deepest ring of tactic t at split_k on this device (stream-K gives its
// staged epilogue bytes of their own); 0 when not even two stages fit.
int32_t sm90_deepest_stages(const Tactic& t, int32_t split_k, const DeviceInfo& dev);
// The ring the library gives g when the caller names no depth: the deepest,
// less one stage where that is odd and the tile runs K groups, which the
// kernel runs on an even ring only (its k_groups, perf-notes §39).
int32_t sm90_plan_stages(const GemmDesc& g, const Tactic& t, int32_t split_k, const DeviceInfo& dev);

// Output tiles of tactic t over g: (weight tiles) x (token tiles) x batches (a
// gated tile's cta_m rows are cta_m / 2 output columns: as many tiles as ungated).
int64_t tiles_of(const GemmDesc& g, const Tactic& t);

// The bytes of W (bf16 or fp16) a call streams: every batch's.
double weight_bytes(const GemmDesc& g);

// Stream-K's grid for tactic t: one CTA per SM, fewer where the problem has
// fewer than kStreamKMinItersPerCta K blocks per SM; 0 (and why, if asked)
// where stream-K cannot run it.
int32_t stream_k_ctas(const GemmDesc& g, const Tactic& t, const DeviceInfo& dev, std::string* why = nullptr);

// Bytes of weight loads the whole grid keeps in flight once the activations
// load, at the H200's bandwidth (scaled by the device's): ~2x what covers HBM's
// latency. At the deepest ring a full grid asks for ~18 MB and the slowest CTAs
// finish late; 10 MB was the best ring depth between other kernels on most
// shapes of a sweep (perf-notes §20).
inline constexpr double kSm90InflightBytes = 10e6;

// Params::k_groups for tactic t at split_k (stream-K: 1): 2 where the grid has
// at most kSm90KGroupMaxCtas CTAs (the kernel uses it where its tile has K
// groups: 64 rows, at most 32 tokens). A narrow 64-row tile's one consumer
// warpgroup streams W at ~50 GB/s per SM, so a grid that small is bound by its
// SMs, not HBM, and a second warpgroup taking every other stage speeds it up.
// The H200 measured it faster both ways at 80 CTAs, faster between kernels but
// slower back to back at 96 (perf-notes §27).
inline constexpr int64_t kSm90KGroupMaxCtas = 80;
int32_t sm90_k_groups(const GemmDesc& g, const Tactic& t, int32_t split_k);

// The CTAs of tactic t's grid at split_k (stream-K: stream_k_ctas) that are
// resident at once with a ring of `stages`: the grid's first wave.
int64_t sm90_resident_ctas(const GemmDesc& g, const Tactic& t, int32_t split_k, int32_t stream_k_ctas, int32_t stages,
                           const DeviceInfo& dev);

// Params::pace_ctas: the CTAs (by linear id) that may be paced under a lead
// w_lead (0: none). A plain launch paces its first wave only: a later wave's
// CTA starts when one of its own grid exits, already staggered, and pacing it
// cost 1-3% back to back on multi-wave grids (perf-notes §45). A gated launch
// (silu_mul, gelu_tanh_mul) paces every wave: in the 8B decoder layer its
// 448-CTA gate_up ran 1% slower with only the first wave paced (§45), a
// measurement whose cause is not known.
int32_t sm90_pace_ctas(const GemmDesc& g, const Tactic& t, int32_t split_k, int32_t stream_k_ctas, int32_t stages,
                       int32_t w_lead, const DeviceInfo& dev);

// Params::w_lead for tactic t at split_k (stream-K: over stream_k_ctas CTAs)
// with a ring of `stages`: the W stages each resident CTA keeps in flight so
// that the grid holds about kSm90InflightBytes; 0 where that is the whole ring.
int32_t sm90_w_lead(const GemmDesc& g, const Tactic& t, int32_t split_k, int32_t stream_k_ctas, int32_t stages,
                    const DeviceInfo& dev);

// Params::trigger_at_entry for tactic t at split_k (stream-K: over stream_k_ctas
// CTAs): whether the W producer lets the PDL successor launch as it enters rather
// than after its last W load. Only where the grid is one wave (a later wave would
// have to share its SMs with the successor's early CTAs) and its weights are under
// kSm90EarlyTriggerMaxBytes, or it is gated (the successor of a gated gate_up is the
// down projection, which then fills its ring while the gate_up drains). Measured on
// an H100 (perf-notes §58): one-wave weights under ~48 MB ran 5-17% faster back to
// back, those over ~96 MB 2-7% slower; the 70B-TP8 decode step gained 1.3%.
inline constexpr double kSm90EarlyTriggerMaxBytes = 48e6;
bool sm90_trigger_at_entry(const GemmDesc& g, const Tactic& t, int32_t split_k, int32_t stream_k_ctas,
                           const DeviceInfo& dev);

// A candidate widening of that rule, behind TGV_EXP_EARLY_TRIGGER=5 until a GPU
// decides it (perf-notes §60): an ungated one-wave grid whose CTAs fill at least
// kSm90PacedEarlyMinFill of the SMs (stream-K fills them all) triggers at entry
// whatever its weights, and paces its own CTAs whatever their wait
// (Params::pace_waited). Early and unpaced, a large such grid's successor streams
// its ring against it on the few SMs it leaves; early and paced, these grids ran
// 1.7-5% faster back to back on an H100, while grids of fewer CTAs gained nothing
// or lost (80-CTA grids over 48 MB ~5%): hence the fill, and no bound on the bytes.
inline constexpr double kSm90PacedEarlyMinFill = 0.7;
bool sm90_paced_early(const GemmDesc& g, const Tactic& t, int32_t split_k, int32_t stream_k_ctas,
                      const DeviceInfo& dev);

struct Sm90Candidate {
  int32_t tactic = -1;
  int32_t split_k = 1;  // kSplitKStream: stream-K
  double us = 0;       // predicted; 0 when pruned
  std::string pruned;  // why the candidate is out; empty if it is in
};

// Clusters of `size` CTAs (one CTA per SM: the ring fills shared memory) the
// device holds at once: the measured value when the device was queried, else
// an even share of the SMs.
int32_t resident_clusters(const DeviceInfo& dev, int32_t size);

// Predicted time of tactic t at split_k (or stream-K) with its deepest ring.
double predict_sm90_us(const GemmDesc& g, const Tactic& t, int32_t split_k, const DeviceInfo& dev);

// Predicted time of cuBLASLt for the same GEMM.
double predict_cublas_us(const GemmDesc& g, const DeviceInfo& dev);

// Whether auto hands g to cuBLASLt against our best candidate's prediction:
// cuBLASLt's prediction, plus `cublas_extra_us` (what its path adds beyond the
// GEMM: epilogue_rules.hpp), must not exceed ours by the margin for its M range;
// with an extra cost (a kernel after cuBLASLt), it must be below ours by it.
bool cublas_predicted_faster(const GemmDesc& g, const DeviceInfo& dev, double sm90_us, double cublas_extra_us = 0.0);

// Every SM90 candidate for g: the tactics whose token tile is the smallest
// that covers M (the weights are then read once), each split 1..8 and
// stream-K; pruned ones carry the reason (without `reasons`, the word
// "pruned": the planner's own call, once per eager GEMM). `tactic` >= 0 or
// `split_k` != 0 fix that part.
std::vector<Sm90Candidate> sm90_candidates(const GemmDesc& g, const DeviceInfo& dev, int32_t tactic = -1,
                                           int32_t split_k = 0, bool reasons = true);

// Whether a plain split-1 plan of tactic t streams faster as stream-K (the
// hybrid: kStreamKWholeWaves): a grid of a few waves whose last wave leaves
// many SMs idle, or tiles whose weight slice is too short to fill a CTA's ring
// before the CTA ends. The model prices whole waves and gets neither, so this
// is a rule (perf-notes §41: an H100 sweep of split 1 against plain stream-K
// on every weight of >= 60 MB; §50: the hybrid against split 1 over the corpus).
bool stream_k_evens_waves(const GemmDesc& g, const Tactic& t, const DeviceInfo& dev);

// The hybrid's whole tiles in a stream-K plan of `ctas` CTAs (Params::sk_dp_tiles):
// the first whole waves taken tile by tile, no partial sums; stream-K shares the
// rest, so each CTA's range crosses at most the last whole wave and the partial
// one instead of every tile on its way. `whole_waves` 1: all whole waves but the
// last; 2: every whole wave where that leaves each CTA a ring's worth of K blocks;
// 0: none (plain stream-K). With 1, 0 tiles for a grid of under two waves.
int64_t stream_k_whole_tiles(const GemmDesc& g, const Tactic& t, int32_t ctas, int32_t whole_waves);
// The library's stream-K plans take stream_k_whole_tiles at this `whole_waves`.
inline constexpr int32_t kStreamKWholeWaves = 1;

// The candidate with the lowest predicted time (ties: the earlier in
// sm90_candidates' order); tactic -1 when every one is pruned. With split_k 0,
// a split-1 winner that stream_k_evens_waves becomes stream-K (its `us` split
// 1's prediction less stream-K's measured gain).
Sm90Candidate best_sm90(const GemmDesc& g, const DeviceInfo& dev, int32_t tactic = -1, int32_t split_k = 0);

}  // namespace tgv::detail

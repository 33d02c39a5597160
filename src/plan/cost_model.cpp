#include "plan/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/strfmt.hpp"

namespace tgv::detail {
namespace {

// Fitted on the H200 (132 SMs, 4.5 TB/s read) to the 230 points of
// bench/experiments/data/sweep-sk-h200-2026-12-03.csv (46 decode shapes x M in
// {1, 8, 32, 64, 128}, every candidate, the kernels as of 2026-12-03 12:06) by
// scripts/fit_cost_model.py, which holds the same arithmetic (the host test
// CostModel.MatchesTheFitScript checks numbers it printed; docs/perf-notes.md §14).
//
// One CTA streams at the lesser of what its ring keeps in flight over the load
// latency (Little's law: the ring's W bytes / latency) and what its consumer
// warpgroups take (a stage per step of c0 + c1 x cta_k ns; the two warpgroups
// of a 128-row tile work side by side, so it takes twice a 64-row tile's bytes
// per step). A grid of `a` CTAs demanding a x r gets ((a r)^-2 + hbm^-2)^(-1/2):
// a ceiling approached only with many bytes in flight, so fewer, faster CTAs
// can match more, slower ones. Fitted (to the count of points whose pick lands
// within 5% of the measured best): the latency, the consumer step, the
// ceiling, the wave cost, the DSMEM rate and the full-grid cost. Held at round
// guesses: the knee's exponent, the K-tail factor and the split barriers
// (fitting them too fitted the sweep better and held-out shapes worse).
constexpr double kGridP = 2.0;  // how sharply a grid's rate bends into the ceiling
constexpr double kLoadLatencyNs = 1188.0;  // a W load's latency under load
constexpr double kConsumerNs = 31.49;      // a consumer step's fixed part
constexpr double kConsumerNsPerColumn = 1.008;
constexpr double kHbmGbps = 3959.0;  // the grid's ceiling
constexpr double kPeakHbmGbps = 4814;  // the fit GPU's peak from the memory clock and bus width: 2 x 3201 MHz x 6016 bits
// K not a multiple of cta_k: the K-tail stages use a box per 64-column chunk
// instead of one folded box (perf-notes §5), fewer bytes per copy.
constexpr double kKTailFactor = 0.8;
constexpr double kWaveUs = 5.063;  // a later wave of clusters: its first loads and the last one's tail
constexpr double kSplitUs = 0.3;  // a split-K cluster's barriers
constexpr double kPerRankUs = 0.05;  // and per peer beyond the leader
constexpr double kDsmemGbps = 95.67;  // the leader reading each peer's fp32 partials
// Per grid that fills every SM: with PDL in a chain (the sweep's graphs), a
// grid that leaves SMs free lets the next GEMM's CTAs start streaming there.
constexpr double kFullGridUs = 0.5367;
// Stream-K's partial tiles through L2 and the last contributor's sum.
constexpr double kStreamKUs = 1.0;
// Whether auto's candidates include stream-K: no. It beat every classic
// candidate by more than 5% at 3 of the 230 points (18944x3584 M = 32, 64;
// 9216x3072 M = 64) and was 2-5 us slower on most others; with it in the
// ranking the fit places fewer picks within 5% (perf-notes §14).
constexpr bool kStreamKInAuto = false;

// The pick's time per token tile: fixed + scale x the model's stream time,
// least squares of the relative error over the picks. Sets the pick against
// cuBLASLt.
struct Price {
  int32_t cta_n;
  double fixed_us, body_scale;
};
constexpr Price kSm90Price[] = {
    {8, 1.914, 0.9271}, {32, 2.797, 0.8991}, {64, 3.38, 0.9076}, {128, 4.764, 0.9221},
};

// cuBLASLt per token count, fitted to torch's own cuBLAS call timed beside ours
// (the same library; out rows 16-byte aligned): a fixed cost, the weight
// stream, the flops and the K loop each CTA runs (least squares of the
// relative error).
struct CublasPrice {
  int64_t m;
  double fixed_us, us_per_kb, us_per_mflop, us_per_kcol;
};
constexpr CublasPrice kCublasPrice[] = {
    {1, 3.46, 0.0002161, 2.161e-07, 0.4389},
    {8, 3.31, 0.000213, 1.704e-06, 0.4725},
    {16, 3.401, 0.0002185, 3.496e-06, 0.4773},
    {32, 3.42, 0.0002175, 6.96e-06, 0.4978},
    {64, 3.361, 0.0002213, 1.417e-05, 0.5015},
    {128, 3.226, 0.0002284, 2.924e-05, 0.608},
};

// cuBLASLt serves unless our prediction beats its own by this much: a pick
// the model gets wrong costs more where our kernel then loses than the last
// percent of the mean is worth (fit_cost_model.py's margin scan).
constexpr double kCublasMarginSmallM = 0.05;  // M <= 32
constexpr double kCublasMarginLargeM = 0.05;
// Out rows not 16-byte aligned (an odd N) keep cuBLASLt off its Hopper kernels
// that store through TMA: the sweep's 4097 x 4104 ran 1.4x (M = 1) to 5x (M = 64)
// the time of 4096 x 4096 in torch.
constexpr double kMisalignedOutFactor = 2.0;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The device's bandwidth relative to the GPU the constants were fitted on.
double bandwidth_scale(const DeviceInfo& dev) {
  return dev.peak_hbm_gbps > 0 ? dev.peak_hbm_gbps / kPeakHbmGbps : 1.0;
}

const Price& price_for(int32_t cta_n) {
  for (const Price& p : kSm90Price)
    if (p.cta_n >= cta_n) return p;
  return kSm90Price[sizeof(kSm90Price) / sizeof(kSm90Price[0]) - 1];  // 256 tokens: the widest fitted
}

// Bytes per ns one CTA of tactic t streams with the ring it gets at split.
double cta_rate(const GemmDesc& g, const Tactic& t, int32_t split, const DeviceInfo& dev) {
  const double ring = double(sm90_deepest_stages(t, split, dev)) * t.cta_m * t.cta_k * 2.0 / kLoadLatencyNs;
  const double consumer = double(t.cta_m) * t.cta_k * 2.0 / (kConsumerNs + double(t.cta_k) * kConsumerNsPerColumn);
  const double r = std::min(ring, consumer);
  return g.k % t.cta_k != 0 ? r * kKTailFactor : r;
}

// Bytes per ns a grid of CTAs streaming `demand` bytes per ns in all gets.
double grid_rate(double demand, const DeviceInfo& dev) {
  const double hbm = kHbmGbps * bandwidth_scale(dev);
  return std::pow(std::pow(demand, -kGridP) + std::pow(hbm, -kGridP), -1.0 / kGridP);
}

// The predicted time less the fixed cost: the stream, later waves, the
// split-K reduction, the SMs the grid leaves to the next GEMM.
double sm90_body_us(const GemmDesc& g, const Tactic& t, int32_t split, const DeviceInfo& dev) {
  const int64_t tiles = ceil_div(g.n, t.cta_m) * ceil_div(g.m, t.cta_n) * g.l;
  const int64_t k_blocks = ceil_div(g.k, t.cta_k);
  const double r = cta_rate(g, t, split, dev);
  const double sms = double(dev.num_sms);
  if (split == kSplitKStream) {
    const int64_t ctas = stream_k_ctas(g, t, dev);
    const int64_t iters_per_cta = ceil_div(tiles * k_blocks, ctas);
    const double bytes = double(ctas) * t.cta_m * double(iters_per_cta * t.cta_k) * 2.0;
    return bytes / grid_rate(double(ctas) * r, dev) * 1e-3 + kStreamKUs + kFullGridUs * double(ctas) / sms;
  }
  const int64_t clusters = resident_clusters(dev, split);
  const int64_t waves = ceil_div(tiles, clusters);
  const int64_t active = std::min(tiles, clusters) * split;
  const double bytes = double(tiles * split) * t.cta_m * double(ceil_div(k_blocks, split) * t.cta_k) * 2.0;
  double us = bytes / grid_rate(double(active) * r, dev) * 1e-3 + double(waves - 1) * kWaveUs;
  if (split > 1)
    us += kSplitUs + double(split - 1) * (kPerRankUs + double(t.cta_m) * t.cta_n * 4.0 / kDsmemGbps * 1e-3);
  return us + kFullGridUs * double(active) / sms;
}

}  // namespace

int32_t sm90_deepest_stages(const Tactic& t, int32_t split_k, const DeviceInfo& dev) {
  const int64_t extra = split_k == kSplitKStream ? sm90_stream_k_epilogue_bytes(t.cta_m, t.cta_n) : 0;
  return stages_for(t, dev.smem_optin_bytes - extra);
}

int32_t stream_k_ctas(const GemmDesc& g, const Tactic& t, const DeviceInfo& dev, std::string* why) {
  auto refuse = [&](std::string r) {
    if (why != nullptr) *why = std::move(r);
    return 0;
  };
  if (t.arch != 90) return refuse(strfmt("tactic=%d is an sm_%d tactic; stream-K is the sm_90 kernel's", t.id, t.arch));
  if (int64_t(t.cta_m) * t.cta_n > kStreamKMaxTileFloats)
    return refuse(strfmt("the %dx%d tile's partial sums are over the workspace's %lld-float slots", t.cta_m, t.cta_n,
                         (long long)kStreamKMaxTileFloats));
  const int64_t tiles = ceil_div(g.n, t.cta_m) * ceil_div(g.m, t.cta_n) * g.l;
  if (tiles > kStreamKMaxTiles)
    return refuse(strfmt("%lld tiles: over the workspace's %lld counters", (long long)tiles,
                         (long long)kStreamKMaxTiles));
  const int64_t ctas = std::min<int64_t>(dev.num_sms, tiles * ceil_div(g.k, t.cta_k) / kStreamKMinItersPerCta);
  if (ctas < 2)
    return refuse(strfmt("%lld tiles of %lld K blocks are too few to share out", (long long)tiles,
                         (long long)ceil_div(g.k, t.cta_k)));
  return static_cast<int32_t>(ctas);
}

int32_t resident_clusters(const DeviceInfo& dev, int32_t size) {
  if (size >= 1 && size < int32_t(dev.max_clusters.size()) && dev.max_clusters[size] > 0)
    return dev.max_clusters[size];
  return std::max(1, dev.num_sms / std::max(1, size));
}

double predict_sm90_us(const GemmDesc& g, const Tactic& t, int32_t split_k, const DeviceInfo& dev) {
  const Price& p = price_for(t.cta_n);
  return p.fixed_us + p.body_scale * sm90_body_us(g, t, split_k, dev);
}

bool cublas_predicted_faster(const GemmDesc& g, const DeviceInfo& dev, double sm90_us, double cublas_extra_us) {
  const double margin = g.m <= 32 ? kCublasMarginSmallM : kCublasMarginLargeM;
  return predict_cublas_us(g, dev) + cublas_extra_us < sm90_us * (1.0 + margin);
}

double predict_cublas_us(const GemmDesc& g, const DeviceInfo& dev) {
  // The fitted token count nearest to M on a log scale.
  const CublasPrice* best = &kCublasPrice[0];
  for (const CublasPrice& c : kCublasPrice)
    if (std::fabs(std::log(double(c.m) / double(g.m))) < std::fabs(std::log(double(best->m) / double(g.m))))
      best = &c;
  const double kb = 2.0 * double(g.n) * double(g.k) * double(g.l) * 1e-3;
  const double mflop = 2.0 * double(g.m) * double(g.n) * double(g.k) * double(g.l) * 1e-6;
  const double kcols = double(g.k) * 1e-3;
  const double us =
      best->fixed_us + best->us_per_kb * kb / bandwidth_scale(dev) + best->us_per_mflop * mflop + best->us_per_kcol * kcols;
  const bool misaligned = (g.out.ld * 2) % 16 != 0 || reinterpret_cast<uintptr_t>(g.out.ptr) % 16 != 0;
  return misaligned ? us * kMisalignedOutFactor : us;
}

std::vector<Sm90Candidate> sm90_candidates(const GemmDesc& g, const DeviceInfo& dev, int32_t tactic_id,
                                           int32_t split_k) {
  std::vector<Sm90Candidate> out;
  const int32_t cta_n = covering_cta_n(90, g.m);
  for (int32_t i = 0; i < kNumTactics; ++i) {
    const Tactic& t = tactics()[i];
    if (t.arch != 90 || (tactic_id >= 0 ? i != tactic_id : t.cta_n != cta_n)) continue;
    const int64_t k_blocks = ceil_div(g.k, t.cta_k);
    const int64_t tiles = ceil_div(g.n, t.cta_m) * ceil_div(g.m, t.cta_n) * g.l;
    // Split 1..8, then stream-K (kSplitKStream), or the one asked for.
    std::vector<int32_t> splits;
    if (split_k != 0) {
      splits.push_back(split_k);
    } else {
      for (int32_t s = 1; s <= kMaxModelSplitK; ++s) splits.push_back(s);
      if (kStreamKInAuto) splits.push_back(kSplitKStream);
    }
    for (int32_t split : splits) {
      Sm90Candidate c;
      c.tactic = i;
      c.split_k = split;
      const int32_t deepest = sm90_deepest_stages(t, split, dev);
      std::string stream_k_why;
      if (deepest == 0)
        c.pruned = strfmt("needs %lld bytes of shared memory for 2 stages; the device offers %lld",
                          (long long)sm90_smem_bytes(t, 2, split), (long long)dev.smem_optin_bytes);
      else if (split == kSplitKStream && stream_k_ctas(g, t, dev, &stream_k_why) == 0)
        c.pruned = "stream-K: " + stream_k_why;
      else if (split > 1 && split_k == 0 && k_blocks < kMinKBlocksPerSplit * split)
        c.pruned = strfmt("split %d leaves fewer than %lld of the %lld K blocks per slice", split,
                          (long long)kMinKBlocksPerSplit, (long long)k_blocks);
      else if (split > k_blocks)
        c.pruned = strfmt("split %d is more than the %lld K blocks", split, (long long)k_blocks);
      else if (deepest < min_stages_for(t, split))
        c.pruned = strfmt("a ring of %d stages cannot hold the split-K partials", deepest);
      else if (split > 1 && split_k == 0 && tiles > resident_clusters(dev, split))
        c.pruned = strfmt("%lld clusters of %d: more than the %d the device holds at once", (long long)tiles, split,
                          resident_clusters(dev, split));
      else
        c.us = predict_sm90_us(g, t, split, dev);
      out.push_back(c);
    }
  }
  return out;
}

Sm90Candidate best_sm90(const GemmDesc& g, const DeviceInfo& dev, int32_t tactic_id, int32_t split_k) {
  Sm90Candidate best;
  for (const Sm90Candidate& c : sm90_candidates(g, dev, tactic_id, split_k))
    if (c.pruned.empty() && (best.tactic < 0 || c.us < best.us)) best = c;
  return best;
}

}  // namespace tgv::detail

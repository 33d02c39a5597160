#include "plan/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "common/strfmt.hpp"

namespace tgv::detail {
namespace {

// Fitted on the H200 (132 SMs, 4.5 TB/s read) to 12,500 candidate timings,
// back to back, of the kernel with K groups and uniform-datapath descriptors
// (c48a95a): 223 decode weights >= 4 MB x M in {1, 4, 16, 32}, untuned,
// 2026-12-04 (docs/data/2026-12-04-h200-eve/sweep-m1-4-16-32.csv.gz), with the
// M = 64 points of 2026-12-03's sweep (docs/data/2026-12-03-h200-late/) for the
// 64-token tile; scripts/fit_cost_model.py, perf-notes §28. The rates and
// split constants rank the candidates (coordinate search on the points whose
// pick lands within 5% of the measured best, less two for each pick under 0.98x
// torch's time); the price per token tile (fixed + scale x the ranking's time +
// scale x the weights' HBM time, least squares of relative error over the
// picks) sets the pick against cuBLASLt.
constexpr double kHbmGbps = 4500;     // read bandwidth the sweep's GPU measured
constexpr double kPeakHbmGbps = 4814; // its peak from the memory clock and bus width: 2 x 3201 MHz x 6016 bits
constexpr double kSplitUs = 0.1;      // a split-K cluster's two barriers
constexpr double kPerRankUs = 0.1;    // each peer's partials through DSMEM
constexpr double kWaveUs = 0.0;       // a wave's tail: below the fit's resolution
// A grid of more than half the SMs but under three quarters of them streams
// this much slower: the next call's grid (PDL) finds too few free SMs to start
// whole, and its late CTAs finish after the rest. The sweep's 64-row tiles on
// 72-96 CTAs (4608-6144 rows) lost to cuBLAS by up to 22% back to back. On
// the H200 corpus (2056 points) the factor took the points under 0.98x torch
// from 57 to 8 back to back and from 337 to 290 between kernels, the geomeans
// unchanged or better, and kept the decoder-layer chain (perf-notes §29). A
// refit of every constant around it (fit_cost_model.py's best: 64-column stages
// and 128-row tiles faster) also cut the corpus's losers but lost 8-12% in the
// chain, so the rates and prices stay those fitted without it.
constexpr double kPartialGridFactor = 0.75;
// Stream-K's fix-up: partial tiles through L2 and the last contributor's sum.
// Not yet fitted (no sweep of stream-K yet): a guess that keeps it to shapes
// where the waves it saves are worth more than a split cluster would give.
constexpr double kStreamKFixupUs = 1.5;
// Whether auto's candidates include stream-K: not until its price is fitted.
// With its guessed fix-up it took 177 of an H100 sweep's 455 large-weight
// points and lost 0.4% against split 1 there (perf-notes §41); what it does
// win is caught by stream_k_evens_waves instead.
constexpr bool kStreamKInAuto = false;
// stream_k_evens_waves' bounds: a tile shorter than this many columns, and the
// share of the SMs a last wave holds under two waves (that sweep, 2026-12-06,
// H100); from two waves on, the hybrid's bounds, where it ran faster than split
// 1 in a corpus A/B (2026-12-07, H100, perf-notes §50: 1-3.5% at 2.5-4.5 waves
// with a last wave of 0.24-0.64; even or slower at a share of 0.03 or 0.8-0.98,
// and beyond five waves).
constexpr int64_t kStreamKShortRowCols = 1536;
constexpr double kStreamKLastWaveShare = 0.43;
constexpr double kStreamKMinLastWaveShare = 0.05;
constexpr double kStreamKHybridLastWaveShare = 0.65;
constexpr int64_t kStreamKMaxWaves = 5;
constexpr int32_t kStreamKMaxTokens = 32;
// What those plans gained over split 1 there (2.5-8%): their predicted time
// against cuBLASLt's is split 1's times this.
constexpr double kStreamKGain = 0.96;

// A CTA's weight-stream rate by its stage geometry and its consumer
// warpgroups: a 64-row tile has one, or two K groups (sm90_k_groups); a 128-row
// tile has two row groups. Ranking constants, not bandwidths a CTA reaches alone
// (one 64x128 CTA with two K groups streamed ~90 GB/s, perf-notes §28).
struct Rate {
  int32_t cta_m, cta_k, k_groups;
  double gbps;
};
constexpr Rate kSm90Rate[] = {
    {64, 64, 1, 40},  {64, 64, 2, 50},  {64, 128, 1, 60},
    {64, 128, 2, 120}, {128, 64, 1, 40}, {128, 128, 1, 20},
};

// On an H100 the 64-token tile (M 33-64) streams at rates of its own: each
// k-block is eight times the MMA work of an 8-token tile and its split-K
// partials are a 64 x 64 fp32 tile per peer. Fitted on the H100 (in the H200's
// units like the rest) to a sweep of every candidate at M = 64 over the whole
// corpus, 257 weights, back to back (docs/data/2026-12-06-h100-c/sweep-m64.csv.gz,
// perf-notes §36): the narrow tiles' constants ranked the 64-token candidates
// within 5% of the best at 176 of 257 points, these at 212, and with the price
// below auto's M = 64 went from cuBLASLt everywhere (1.00x torch) to 1.064x,
// one point under 0.98x. Not on the H200: there the plans these constants give
// to our kernel lost to torch at 19-22 of the 64 corpus points timed on them
// (2026-12-06 H200 corpus, perf-notes §36), so the H200 keeps the narrow
// tiles' rates and the older price, which leave M = 64 to cuBLASLt.
struct WideRate {
  int32_t cta_m, cta_k;
  double gbps;
};
constexpr WideRate kSm90Rate64Tokens[] = {{64, 64, 100}, {64, 128, 50}, {128, 64, 10}, {128, 128, 20}};
constexpr double kSplitUs64Tokens = 0.0;
constexpr double kPerRankUs64Tokens = 0.5;

// On an H100 the 32-token tile (M 17-32) ranks by rates of its own, fitted to
// the M = 32 points of its sweep of every candidate (223 weights, splits 1-8,
// docs/data/2026-12-06-h100-b/sweep.csv.gz; scripts/fit_cost_model.py
// --tokens32, perf-notes §42): the H200's rates ranked the 64x32x128 tile with
// K groups first on small grids, where 64x32x64 streamed 4-8% faster, and
// 64-row tiles first on large grids, where 128x32x64 did. Picks within 5% of
// the best 167 -> 189 of 223 there, 98 -> 108 of 116 on a later sweep of the
// large weights (docs/data/2026-12-06-h100-f/call3). Ranking constants, not
// bandwidths (the extremes only order the tiles). Weights of at least
// kH100Rate32TokensMinBytes only: in a corpus A/B the plans they changed ran
// 1.3-5.7% faster per size class from 8 MB up and 4.5-5% slower below it,
// where the sweep had few points (§42).
constexpr Rate kH100Rate32Tokens[] = {
    {64, 64, 1, 10}, {64, 64, 2, 100}, {64, 128, 1, 60}, {64, 128, 2, 10}, {128, 64, 1, 120}, {128, 128, 1, 20},
};
constexpr double kH100Rate32TokensMinBytes = 8e6;

struct Price {
  int32_t cta_n;
  double fixed_us, body_scale, floor_scale;
};
// 128 tokens: no sweep of this kernel yet; the 64-token price scaled by the
// ratios the two had in 2026-12-03's fit (perf-notes §28). Fitted with split-K
// clusters in the plans; refitted to split 1 alone (perf-notes §38) they gained
// nothing on the H200's corpus timings (emulated), so they stay.
constexpr Price kSm90Price[] = {
    {8, 2.175, 0.433, 0.655},  {16, 2.466, 0.477, 0.615}, {32, 3.018, 0.421, 0.685},
    {64, 3.571, 0.908, 0.207}, {128, 4.270, 1.083, 0.252},
};
// The H100's 64-token price, fitted with kSm90Rate64Tokens (perf-notes §36).
constexpr Price kH100Price64Tokens = {64, 3.257, 0.376, 0.614};
// On an H100 the narrow tiles (<= 32 tokens) have prices of their own, fitted
// to its sweep of every candidate (docs/data/2026-12-06-h100-b/sweep.csv.gz,
// 892 points at M 1-32) over the picks of the H200's rates among the splits
// the library plans (scripts/fit_cost_model.py --prices, perf-notes §38):
// our kernel runs nearer the weight stream there than on the H200, and the
// H200's prices handed large weights to cuBLASLt where ours was ~4% faster.
// With split-K clusters in the plans (kSplitKClustersInPlans) the 8- and
// 16-token prices are the ones fitted with them; 32 tokens took the H200's
// until three H100 corpus runs showed our 64x32 plans 5-11% faster than it
// said (cuBLASLt's price about right), so auto gave 44 of 47 M = 32 weights of
// >= 256 MB to cuBLASLt where ours ran 4-7% faster (perf-notes §41); its price
// is now fitted with its own rates (kH100Rate32Tokens, §42);
// without them (perf-notes §38) a grid of a few CTAs streams at its CTAs' rate,
// which these prices all but ignore (body_scale 0.17), and the refit to split 1
// was {1.873, 0.635, 0.381}, {2.016, 0.652, 0.382}, {2.854, 0.328, 0.685}
// (kH100PriceSplit1). Nor do the tiles of <= 16 tokens lose on a partial grid there
// (6144 x 4096, M = 1, 96 CTAs: 18.0 us against torch's 20.9 back to back); at
// 32 and 64 tokens they did (13 corpus points under 0.98x torch without the
// factor), so those keep it. A wave cost (kWaveUs) moved the 8B gate_up to
// 128-row tiles and slowed the layer by 2%: none. The 8- and 16-token prices
// were refitted (perf-notes §46) to that sweep and a second one run after
// first-wave pacing (docs/data/2026-12-06-h100-i/call3-sweep), each point the
// mean of the two: later waves got faster, and the old prices had ours ~1%
// slower than cuBLASLt on weights of 100-1000 MB at M <= 16, where it ran 3-9%
// faster (52 corpus points went to cuBLASLt). The
// 32-token price refitted the same way moved M = 32 weights of ~100 MB the
// same way, where ours then ran 2-8% behind torch between kernels: it stays.
constexpr Price kH100PriceSplitK[] = {{8, 1.698, 0.147, 0.886}, {16, 2.056, 0.237, 0.804}, {32, 2.704, 0.322, 0.715}};
constexpr Price kH100PriceSplit1[] = {{8, 1.873, 0.635, 0.381}, {16, 2.016, 0.652, 0.382}, {32, 2.854, 0.328, 0.685}};
constexpr const Price (&kH100Price)[3] = kSplitKClustersInPlans ? kH100PriceSplitK : kH100PriceSplit1;
constexpr int32_t kH100NarrowTokens = 16;
constexpr double kH100PartialGridFactor = 0.0;

// cuBLASLt per token count: fixed + weight bytes / rate + flops / rate, fitted
// to torch's own cuBLAS call timed beside ours (the same library; out rows
// 16-byte aligned).
struct CublasPrice {
  int64_t m;
  double fixed_us, gbps, tflops;
};
constexpr CublasPrice kCublasPrice[] = {
    {1, 5.285, 4309, 4308641}, {4, 5.198, 4284, 1071015}, {16, 4.954, 4192, 261997},
    {32, 4.623, 4112, 128511}, {64, 3.928, 4046, 63214},  {128, 4.570, 3882, 30326},
};

// cuBLASLt serves unless our prediction beats its own by this much (on the
// H200; a fused call's margin on every GPU, cublas_predicted_faster): a pick
// the model gets wrong costs more where our kernel then loses than the last
// percent of the mean is worth (fit_cost_model.py's margin scan over the 892
// points at M <= 32, before the partial-grid factor: 39 under 0.98x torch at
// 10%, 49 at 5%, 101 at none).
constexpr double kCublasMarginSmallM = 0.10;  // M <= 32
constexpr double kCublasMarginLargeM = 0.10;
// Out rows not 16-byte aligned (an odd N) keep cuBLASLt off its Hopper kernels
// that store through TMA: the sweep's 4097 x 4104 ran 1.4x (M = 1) to 5x (M = 64)
// the time of 4096 x 4096 in torch.
constexpr double kMisalignedOutFactor = 2.0;

// The H100 (3352 GB/s peak: 2 x 2619 MHz x 5120 bits) is priced by the H200's
// constants scaled to its bandwidth, with a plain call's cuBLASLt margin at
// M <= 32 of its own. Its sweep of every candidate (2026-12-06,
// docs/data/2026-12-06-h100-b/, perf-notes §35) put the H200's constants with a
// 10% margin within 5% of the best at 52% of 892 points, 545 of them on
// cuBLASLt, many where our kernel was up to 1.28x faster. With no margin: 63%,
// 1.144x torch at M <= 32 (was 1.127x), points under 0.98x torch 4 (was 3); on
// the corpus timed the same day, emulated from its timings of both routes,
// 1.201x against 1.187x with the same 10 points under 0.98x. A fit of the
// H100's own (rates, prices) picked within 5% more often (73-76%) but lost to
// torch at twice the points and, free to move the rates, slowed the 8B layer by
// 2% (§35).
constexpr double kH100PeakHbmGbps = 3352;
constexpr double kH100CublasMarginSmallM = 0.0;
// Above 32 tokens the H100 hands a plain call to cuBLASLt only where its
// prediction is within 5% of ours (the H200 keeps 10%, unmeasured there): in
// five rounds of the corpus at M = 64 and 128 on one H100 (2026-12-08,
// docs/data/2026-12-08-h100/, perf-notes §64) 28 picks moved to our kernel,
// 1.082x faster on geomean; one ran at 0.944x torch (13824 x 1152, nine K
// blocks), two at 0.983-0.988x, and the corpus's points under 0.98x stayed 5.
constexpr double kH100CublasMarginLargeM = 0.05;

// Whether this device is priced as an H100: of the two GPUs the constants were
// fitted on, the H100's peak bandwidth is nearer its own on a log scale.
bool priced_as_h100(const DeviceInfo& dev) {
  return dev.peak_hbm_gbps > 0 && std::fabs(std::log(dev.peak_hbm_gbps / kH100PeakHbmGbps)) <
                                      std::fabs(std::log(dev.peak_hbm_gbps / kPeakHbmGbps));
}

// A plain call's margin at M <= 32 on this device.
double plain_margin_small_m(const DeviceInfo& dev) {
  return priced_as_h100(dev) ? kH100CublasMarginSmallM : kCublasMarginSmallM;
}

// The 64-token tile's own constants (kSm90Rate64Tokens, its split costs and
// kH100Price64Tokens) apply on an H100 only.
bool wide_constants(int32_t cta_n, const DeviceInfo& dev) { return cta_n == 64 && priced_as_h100(dev); }

// An experiment switch's number: the variable's value where it parses whole and
// lies in [lo, hi), else `unset`.
double env_number(const char* name, double lo, double hi, double unset) {
  const char* v = std::getenv(name);
  char* end = nullptr;
  const double x = v != nullptr ? std::strtod(v, &end) : 0.0;
  return v != nullptr && end != v && *end == '\0' && x >= lo && x < hi ? x : unset;
}

// On an H100 the 64-token tile's grids of 66-99 CTAs on weights of 48 MB or more
// stream nearly as fast as full ones: the factor above, fitted on the H200's
// narrow tiles, priced 5120 x 8192 at M = 64 at 37.3 us where it ran 30.3 (torch
// 35.5), and left 16 such corpus shapes to cuBLASLt. With 0.15 from 48 MB, each
// plan given the time measured for it (scripts/emulate_ab.py; perf-notes §64):
// on the 2026-12-06 M = 64 sweep 16 picks move to our kernel, 1.090x faster,
// M = 64 1.074 -> 1.080x torch with 2 points under 0.98x before and after; on
// 2026-12-08's five corpus rounds the same 16, 1.084x, 1.057 -> 1.063x, 6 and 6.
// Below 48 MB the same grids did lose to torch when moved (4608 x 3584 0.90x).
constexpr double kH100WidePartialGridFactor = 0.15;
constexpr double kH100WidePartialGridMinBytes = 48e6;

// TGV_EXP_H100_WIDE_PART=<factor> and TGV_EXP_H100_WIDE_PART_MB=<MB> override
// those two for a same-build A/B (PART=67). Read once.
double wide_part_factor(double w_bytes) {
  static const double f = env_number("TGV_EXP_H100_WIDE_PART", 0.0, 4.0, kH100WidePartialGridFactor);
  static const double min_bytes = [] {
    const char* v = std::getenv("TGV_EXP_H100_WIDE_PART_MB");
    return v == nullptr ? kH100WidePartialGridMinBytes : std::atof(v) * 1e6;
  }();
  return w_bytes >= min_bytes ? f : kPartialGridFactor;
}

// How much slower per byte a grid of more than half the SMs but under three
// quarters streams, for a tile of cta_n tokens on this device, on w_bytes of weights.
double partial_grid_factor(int32_t cta_n, const DeviceInfo& dev, double w_bytes) {
  if (wide_constants(cta_n, dev)) return wide_part_factor(w_bytes);
  return cta_n <= kH100NarrowTokens && priced_as_h100(dev) ? kH100PartialGridFactor : kPartialGridFactor;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The CTAs of tactic t's sm_90 grid at split_k (stream-K: stream_k_ctas).
int64_t grid_ctas(const GemmDesc& g, const Tactic& t, int32_t split_k, int32_t stream_k_ctas) {
  return split_k == kSplitKStream ? stream_k_ctas : tiles_of(g, t) * std::max<int32_t>(split_k, 1);
}

// The device's bandwidth relative to the GPU the constants were fitted on.
double bandwidth_scale(const DeviceInfo& dev) {
  return dev.peak_hbm_gbps > 0 ? dev.peak_hbm_gbps / kPeakHbmGbps : 1.0;
}

const Price& price_for(int32_t cta_n, const DeviceInfo& dev) {
  if (wide_constants(cta_n, dev)) return kH100Price64Tokens;
  if (priced_as_h100(dev))
    for (const Price& p : kH100Price)
      if (p.cta_n >= cta_n) return p;
  for (const Price& p : kSm90Price)
    if (p.cta_n >= cta_n) return p;
  return kSm90Price[sizeof(kSm90Price) / sizeof(kSm90Price[0]) - 1];  // 256 tokens: the widest fitted
}

// kSm90Rate's entry for tactic t (the nearest geometry: a tactic outside the
// fitted ones takes the rate of its rows and K block, one group).
double sm90_rate_gbps(const Tactic& t, int32_t k_groups, double w_bytes, const DeviceInfo& dev) {
  if (wide_constants(t.cta_n, dev))
    for (const WideRate& r : kSm90Rate64Tokens)
      if (r.cta_m == t.cta_m && r.cta_k == t.cta_k) return r.gbps;
  const int32_t groups = sm90_tile_has_k_groups(t.cta_m, t.cta_n) ? k_groups : 1;
  if (t.cta_n == 32 && priced_as_h100(dev) && w_bytes >= kH100Rate32TokensMinBytes)
    for (const Rate& r : kH100Rate32Tokens)
      if (r.cta_m == t.cta_m && r.cta_k == t.cta_k && r.k_groups == groups) return r.gbps;
  const Rate* best = nullptr;
  for (const Rate& r : kSm90Rate) {
    if (r.cta_m == t.cta_m && r.cta_k == t.cta_k && r.k_groups == groups) return r.gbps;
    if (r.k_groups == 1 && (best == nullptr || std::abs(r.cta_m - t.cta_m) + std::abs(r.cta_k - t.cta_k) <
                                                   std::abs(best->cta_m - t.cta_m) + std::abs(best->cta_k - t.cta_k)))
      best = &r;
  }
  return best->gbps;
}

// The predicted time less the fixed cost: the waves of streaming.
double sm90_body_us(const GemmDesc& g, const Tactic& t, int32_t split, const DeviceInfo& dev) {
  const int64_t tiles = tiles_of(g, t);
  const int64_t k_blocks = ceil_div(g.k, t.cta_k);
  const double hbm = kHbmGbps * bandwidth_scale(dev);
  const double sm_gbps = sm90_rate_gbps(t, sm90_k_groups(g, t, split), weight_bytes(g), dev);  // stream-K: one group
  auto stream_us = [&](double bytes_per_cta, int64_t active) {  // bytes per ns -> us
    return bytes_per_cta / std::min(sm_gbps * bandwidth_scale(dev), hbm / double(active)) * 1e-3;
  };
  if (split == kSplitKStream) {
    const int64_t ctas = stream_k_ctas(g, t, dev);
    const int64_t iters_per_cta = ceil_div(tiles * k_blocks, ctas);
    const bool fixup = tiles % ctas != 0;  // else every CTA holds whole tiles
    return stream_us(double(t.cta_m) * double(iters_per_cta * t.cta_k) * 2.0, ctas) + (fixup ? kStreamKFixupUs : 0.0);
  }
  const int64_t clusters = resident_clusters(dev, split);
  const int64_t waves = ceil_div(tiles, clusters);
  const int64_t active = std::min(tiles, clusters) * split;
  const int64_t kb_per_cta = ceil_div(k_blocks, split);
  double us = double(waves) * stream_us(double(t.cta_m) * double(kb_per_cta * t.cta_k) * 2.0, active) +
              double(waves - 1) * kWaveUs;
  if (2 * active > dev.num_sms && 4 * active < 3 * int64_t(dev.num_sms))
    us *= 1.0 + partial_grid_factor(t.cta_n, dev, weight_bytes(g));
  if (split > 1 && wide_constants(t.cta_n, dev))
    us += kSplitUs64Tokens + kPerRankUs64Tokens * (split - 1);
  else if (split > 1)
    us += kSplitUs + kPerRankUs * (split - 1);
  return us;
}

}  // namespace

int64_t tiles_of(const GemmDesc& g, const Tactic& t) { return ceil_div(g.n, t.cta_m) * ceil_div(g.m, t.cta_n) * g.l; }

double weight_bytes(const GemmDesc& g) { return 2.0 * double(g.n) * double(g.k) * double(g.l); }

int32_t sm90_deepest_stages(const Tactic& t, int32_t split_k, const DeviceInfo& dev) {
  return stages_for(t, dev.smem_optin_bytes - sm90_extra_smem_bytes(t, split_k));
}

int32_t sm90_plan_stages(const GemmDesc& g, const Tactic& t, int32_t split_k, const DeviceInfo& dev) {
  const int32_t deepest = sm90_deepest_stages(t, split_k, dev);
  const bool grouped = sm90_tile_has_k_groups(t.cta_m, t.cta_n) && sm90_k_groups(g, t, split_k) > 1;
  return grouped && deepest % 2 == 1 && deepest > 4 ? deepest - 1 : deepest;
}

int32_t stream_k_ctas(const GemmDesc& g, const Tactic& t, const DeviceInfo& dev, std::string* why) {
  // The reason is formatted only for a caller that reads it.
  auto refuse = [&](auto&& reason) {
    if (why != nullptr) *why = reason();
    return 0;
  };
  if (t.arch != 90)
    return refuse([&] { return strfmt("tactic=%d is an sm_%d tactic; stream-K is the sm_90 kernel's", t.id, t.arch); });
  if (int64_t(t.cta_m) * t.cta_n > kStreamKMaxTileFloats)
    return refuse([&] {
      return strfmt("the %dx%d tile's partial sums are over the workspace's %lld-float slots", t.cta_m, t.cta_n,
                    (long long)kStreamKMaxTileFloats);
    });
  const int64_t tiles = tiles_of(g, t);
  if (tiles > kStreamKMaxTiles)
    return refuse([&] {
      return strfmt("%lld tiles: over the workspace's %lld counters", (long long)tiles, (long long)kStreamKMaxTiles);
    });
  const int64_t ctas = std::min<int64_t>(dev.num_sms, tiles * ceil_div(g.k, t.cta_k) / kStreamKMinItersPerCta);
  if (ctas < 2)
    return refuse([&] {
      return strfmt("%lld tiles of %lld K blocks are too few to share out", (long long)tiles,
                    (long long)ceil_div(g.k, t.cta_k));
    });
  return static_cast<int32_t>(ctas);
}

int64_t sm90_resident_ctas(const GemmDesc& g, const Tactic& t, int32_t split_k, int32_t stream_k_ctas, int32_t stages,
                           const DeviceInfo& dev) {
  const int64_t ctas = grid_ctas(g, t, split_k, stream_k_ctas);
  const int64_t smem = sm90_smem_bytes(t, stages, split_k);
  const int64_t per_sm = std::max<int64_t>(1, dev.smem_optin_bytes / smem);  // smem >= the reserve
  return std::max<int64_t>(1, std::min<int64_t>(ctas, int64_t(dev.num_sms) * per_sm));
}

int32_t sm90_pace_ctas(const GemmDesc& g, const Tactic& t, int32_t split_k, int32_t stream_k_ctas, int32_t stages,
                       int32_t w_lead, const DeviceInfo& dev) {
  if (w_lead <= 0) return 0;
  const int64_t n = g.act != Act::None ? grid_ctas(g, t, split_k, stream_k_ctas)
                                        : sm90_resident_ctas(g, t, split_k, stream_k_ctas, stages, dev);
  return static_cast<int32_t>(std::min<int64_t>(n, std::numeric_limits<int32_t>::max()));
}

int32_t sm90_w_lead(const GemmDesc& g, const Tactic& t, int32_t split_k, int32_t stream_k_ctas, int32_t stages,
                    const DeviceInfo& dev) {
  const int64_t resident = sm90_resident_ctas(g, t, split_k, stream_k_ctas, stages, dev);
  const double w_stage = double(t.cta_m) * double(t.cta_k) * 2.0;
  const double stages_wanted = kSm90InflightBytes * bandwidth_scale(dev) / (double(resident) * w_stage);
  const int64_t lead = std::max<int64_t>(2, int64_t(std::ceil(stages_wanted)));
  return lead >= stages ? 0 : static_cast<int32_t>(lead);
}

bool sm90_trigger_at_entry(const GemmDesc& g, const Tactic& t, int32_t split_k, int32_t stream_k_ctas,
                           const DeviceInfo& dev) {
  if (grid_ctas(g, t, split_k, stream_k_ctas) > dev.num_sms) return false;
  return g.act != Act::None || weight_bytes(g) < kSm90EarlyTriggerMaxBytes;
}

bool sm90_paced_early(const GemmDesc& g, const Tactic& t, int32_t split_k, int32_t stream_k_ctas,
                      const DeviceInfo& dev) {
  const int64_t ctas = grid_ctas(g, t, split_k, stream_k_ctas);
  if (ctas > dev.num_sms || g.act != Act::None) return false;
  return split_k == kSplitKStream || double(ctas) >= kSm90PacedEarlyMinFill * dev.num_sms;
}

int32_t sm90_k_groups(const GemmDesc& g, const Tactic& t, int32_t split_k) {
  if (split_k == kSplitKStream) return 1;
  const int64_t ctas = grid_ctas(g, t, split_k, 0);
  return ctas <= kSm90KGroupMaxCtas ? 2 : 1;
}

int32_t resident_clusters(const DeviceInfo& dev, int32_t size) {
  if (size >= 1 && size < int32_t(dev.max_clusters.size()) && dev.max_clusters[size] > 0)
    return dev.max_clusters[size];
  return std::max(1, dev.num_sms / std::max(1, size));
}

double predict_sm90_us(const GemmDesc& g, const Tactic& t, int32_t split_k, const DeviceInfo& dev) {
  const Price& p = price_for(t.cta_n, dev);
  const double floor_us = weight_bytes(g) / (kHbmGbps * bandwidth_scale(dev)) * 1e-3;
  return p.fixed_us + p.body_scale * sm90_body_us(g, t, split_k, dev) + p.floor_scale * floor_us;
}

// TGV_EXP_CUBLAS_MARGIN_LARGE_M=<fraction>: the margin above 32 tokens on every
// device, for a same-build A/B (perf-notes §61, §63-64); unset, the device's own.
// Read once.
namespace {
double large_m_margin(const DeviceInfo& dev) {
  static const double override_margin = env_number("TGV_EXP_CUBLAS_MARGIN_LARGE_M", 0.0, 1.0, -1.0);
  if (override_margin >= 0.0) return override_margin;
  return priced_as_h100(dev) ? kH100CublasMarginLargeM : kCublasMarginLargeM;
}
}  // namespace

bool cublas_predicted_faster(const GemmDesc& g, const DeviceInfo& dev, double sm90_us, double cublas_extra_us) {
  const bool fused = cublas_extra_us > 0.0;
  const double margin = g.m > 32 ? large_m_margin(dev) : fused ? kCublasMarginSmallM : plain_margin_small_m(dev);
  // Where cuBLASLt's route needs a kernel of ours after it (a fused epilogue),
  // the margin turns the other way: that route is two launches, a scratch round
  // trip and a kernel boundary PDL cannot overlap, and in a decoder layer it
  // lost by more than the model counts (perf-notes §30: on an H100 the layer's
  // auto plan, which gave the gated gate_up and the down + residual to it, ran
  // 164.8 us against 152.7 with our kernel on every stage). It serves such a
  // call only where predicted faster by the margin.
  if (fused) return predict_cublas_us(g, dev) + cublas_extra_us < sm90_us * (1.0 - margin);
  return predict_cublas_us(g, dev) + cublas_extra_us < sm90_us * (1.0 + margin);
}

double predict_cublas_us(const GemmDesc& g, const DeviceInfo& dev) {
  // The fitted token count nearest to M on a log scale.
  const CublasPrice* best = &kCublasPrice[0];
  for (const CublasPrice& c : kCublasPrice)
    if (std::fabs(std::log(double(c.m) / double(g.m))) < std::fabs(std::log(double(best->m) / double(g.m))))
      best = &c;
  const double bytes = weight_bytes(g);
  const double flops = 2.0 * double(g.m) * double(g.n) * double(g.k) * double(g.l);
  const double us = best->fixed_us + bytes / (best->gbps * bandwidth_scale(dev)) * 1e-3 + flops / best->tflops * 1e-6;
  const bool misaligned = (g.out.ld * 2) % 16 != 0 || reinterpret_cast<uintptr_t>(g.out.ptr) % 16 != 0;
  return misaligned ? us * kMisalignedOutFactor : us;
}

std::vector<Sm90Candidate> sm90_candidates(const GemmDesc& g, const DeviceInfo& dev, int32_t tactic_id,
                                           int32_t split_k, bool reasons) {
  std::vector<Sm90Candidate> out;
  out.reserve(4 * (kMaxModelSplitK + 1));  // a capacity hint: four tiles share each token width today
  const int32_t cta_n = covering_cta_n(90, g.m);
  for (int32_t i = 0; i < kNumTactics; ++i) {
    const Tactic& t = tactics()[i];
    if (t.arch != 90 || (tactic_id >= 0 ? i != tactic_id : t.cta_n != cta_n)) continue;
    const int64_t k_blocks = ceil_div(g.k, t.cta_k);
    const int64_t tiles = tiles_of(g, t);
    // Split 1..8, then stream-K (kSplitKStream), or the one asked for.
    int32_t splits[kMaxModelSplitK + 1];
    int32_t num_splits = 0;
    if (split_k != 0) {
      splits[num_splits++] = split_k;
    } else {
      for (int32_t s = 1; s <= kMaxModelSplitK; ++s) splits[num_splits++] = s;
      if (kStreamKInAuto) splits[num_splits++] = kSplitKStream;
    }
    for (int32_t j = 0; j < num_splits; ++j) {
      const int32_t split = splits[j];
      Sm90Candidate c;
      c.tactic = i;
      c.split_k = split;
      // The reason is written only when asked for: formatting every pruned
      // candidate's was half of an eager call's planning time.
      auto prune = [&](auto&& reason) { c.pruned = reasons ? std::string(reason()) : std::string("pruned"); };
      const int32_t deepest = sm90_deepest_stages(t, split, dev);
      std::string stream_k_why;
      if (deepest == 0)
        prune([&] {
          return strfmt("needs %lld bytes of shared memory for 2 stages; the device offers %lld",
                        (long long)sm90_smem_bytes(t, 2, split), (long long)dev.smem_optin_bytes);
        });
      else if (split == kSplitKStream && stream_k_ctas(g, t, dev, reasons ? &stream_k_why : nullptr) == 0)
        prune([&] { return "stream-K: " + stream_k_why; });
      else if (split > 1 && split_k == 0 && k_blocks < kMinKBlocksPerSplit * split)
        prune([&] {
          return strfmt("split %d leaves fewer than %lld of the %lld K blocks per slice", split,
                        (long long)kMinKBlocksPerSplit, (long long)k_blocks);
        });
      else if (split > k_blocks)
        prune([&] { return strfmt("split %d is more than the %lld K blocks", split, (long long)k_blocks); });
      else if (deepest < min_stages_for(t, split))
        prune([&] { return strfmt("a ring of %d stages cannot hold the split-K partials", deepest); });
      else if (split > 1 && split_k == 0 && tiles > resident_clusters(dev, split))
        prune([&] {
          return strfmt("%lld clusters of %d: more than the %d the device holds at once", (long long)tiles, split,
                        resident_clusters(dev, split));
        });
      else if (split > 1 && split_k == 0 && !kSplitKClustersInPlans)
        prune([&] {
          return std::string(
              "split-K clusters are off in the library's own plans (a fault under back-to-back PDL replay, "
              "perf-notes §38); pass split_k to run one");
        });
      else
        c.us = predict_sm90_us(g, t, split, dev);
      out.push_back(std::move(c));
    }
  }
  return out;
}

// TGV_EXP_SK_GATED=1: a gated call (bf16, no residual) planned by the plain
// calls' rule below, for the H200's layer A/B in one build (the H100's ran the
// gated gate_up slower as the hybrid, perf-notes §50; the H200 has not run it).
// Read per plan: the chain's processes each set it or not.
bool gated_stream_k_experiment(const GemmDesc& g) {
  if (g.act == Act::None) return false;
  const char* v = std::getenv("TGV_EXP_SK_GATED");
  if (v == nullptr || v[0] != '1') return false;
  GemmDesc ungated = g;  // a plain call but for the gate
  ungated.act = Act::None;
  return ungated.plain();
}

bool stream_k_evens_waves(const GemmDesc& g, const Tactic& t, const DeviceInfo& dev) {
  // Plain calls of <= 32 tokens: what the sweeps measured. At 64 tokens the
  // short-row case lost (13824 x 1152: 0.92x torch against 1.00x); the 8B
  // layer's gated gate_up (448 tiles) ran 1-3 us slower as the hybrid in the
  // chain while its plain GEMM ran 2% faster (perf-notes §50).
  if (!(g.plain() || gated_stream_k_experiment(g)) || t.arch != 90 || t.cta_n > kStreamKMaxTokens ||
      stream_k_ctas(g, t, dev) == 0)
    return false;
  const int64_t tiles = tiles_of(g, t);
  const int64_t sms = dev.num_sms;
  if (tiles <= sms) return false;
  // Tiles of fewer than kStreamKShortRowCols columns: each CTA's ring drains
  // and refills per tile (gemma3-1b's 262144 x 1152 lm_head on 64x8x128:
  // stream-K 206.6 us against 223.7 at M = 1, 0.92-0.93x at M 1-32).
  if (ceil_div(g.k, t.cta_k) * t.cta_k < kStreamKShortRowCols) return true;
  // Under two waves stream-K has no whole wave to take (the hybrid is plain
  // stream-K): a last wave of at most kStreamKLastWaveShare of the SMs, as the
  // sweep had it. From two waves on, the hybrid takes the earlier waves whole and
  // only the last whole wave and the partial one pay for partial sums: a last
  // wave of kStreamKMinLastWaveShare to kStreamKHybridLastWaveShare within
  // kStreamKMaxWaves. A last wave of a few tiles costs split 1 little; beyond
  // five waves the tail is too small a part of the time to win back the fix-up.
  const int64_t last = tiles % sms;
  if (tiles < 2 * sms) return double(last) <= kStreamKLastWaveShare * double(sms);
  return tiles < kStreamKMaxWaves * sms && double(last) >= kStreamKMinLastWaveShare * double(sms) &&
         double(last) <= kStreamKHybridLastWaveShare * double(sms);
}

int64_t stream_k_whole_tiles(const GemmDesc& g, const Tactic& t, int32_t ctas, int32_t whole_waves) {
  if (ctas < 1 || whole_waves <= 0) return 0;
  const int64_t tiles = tiles_of(g, t), waves = tiles / ctas;
  int64_t taken = whole_waves >= 2 ? waves : waves - 1;
  // Every CTA keeps a ring's worth of the shared iterations: a CTA whose range
  // is empty would be counted among a tile's contributors and never arrive.
  const int64_t k_blocks = ceil_div(g.k, t.cta_k);
  while (taken >= 1 && (tiles - taken * ctas) * k_blocks < int64_t(ctas) * kStreamKMinItersPerCta) --taken;
  return taken >= 1 ? taken * ctas : 0;
}

Sm90Candidate best_sm90(const GemmDesc& g, const DeviceInfo& dev, int32_t tactic_id, int32_t split_k) {
  Sm90Candidate best;
  for (const Sm90Candidate& c : sm90_candidates(g, dev, tactic_id, split_k, /*reasons=*/false))
    if (c.pruned.empty() && (best.tactic < 0 || c.us < best.us)) best = c;
  if (split_k == 0 && best.tactic >= 0 && best.split_k == 1 && stream_k_evens_waves(g, tactics()[best.tactic], dev)) {
    best.split_k = kSplitKStream;
    best.us *= kStreamKGain;
  }
  return best;
}

}  // namespace tgv::detail

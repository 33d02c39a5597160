#include "launch/sm90_launch.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/cuda_check.hpp"
#include "launch/sm90_tile.hpp"
#include "common/cuda_context.hpp"
#include "launch/stream_k_workspace.hpp"
#include "launch/output_params.hpp"
#include "launch/tensor_map.hpp"
#include "plan/cost_model.hpp"
#include "plan/device_info.hpp"
#include "tactics/tactics.hpp"

namespace tgv::detail {

namespace {

// TGV_SPLIT_K_PULL=1: every split-K cluster reduces through the two cluster
// barriers, pushing nothing (the receive buffer stays allocated, unused).
// compute-sanitizer's racecheck hangs on the pushed reduction's remote stores
// (CUDA 13.0, H100, perf-notes §31) and checks the pulled one; read per call so
// a test can set it.
bool split_k_pull_forced() {
  const char* v = std::getenv("TGV_SPLIT_K_PULL");
  return v != nullptr && v[0] == '1';
}

// TGV_EXP_SK_HYBRID=0|1|2|3, the hybrid's A/B in one build (perf-notes §49-§50;
// the H200 has not run it): stream-K launches take stream_k_whole_tiles at this
// `whole_waves` instead of the plan's (kStreamKWholeWaves); 3: every tile whole,
// CTA c the tiles c, c + ctas, ... (a persistent grid whose last wave ends early
// on the SMs it leaves, as split 1's; perf-notes §55). Results stay correct and
// bitwise repeatable under each; only the time changes.
// Read once per process, as the switches below.
int64_t sk_whole_tiles_override(const GemmDesc& g, const Tactic& t, const Plan& plan) {
  static const int whole_waves = [] {
    const char* v = std::getenv("TGV_EXP_SK_HYBRID");
    return v == nullptr || v[0] < '0' || v[0] > '3' ? -1 : v[0] - '0';
  }();
  if (whole_waves < 0) return plan.stream_k_whole_tiles;
  if (whole_waves == 3) return tiles_of(g, t);
  return stream_k_whole_tiles(g, t, plan.stream_k_ctas, whole_waves);
}

// TGV_EXP_W_LEAD=<n>, the W producer's pacing A/B in one build (perf-notes §52):
// every launch's Params::w_lead becomes n (0, or n >= its ring's stages: never
// paced) and, where the plan paced no CTA, every CTA may be paced. A lead of the
// whole ring or more would wait on a slot's later lap; only the time changes.
// Read once per process (every launch's host path passes here; the A/B runs one
// process per setting). TGV_EXP_W_LEAD_ON=gated|residual|fused|plain limits it to
// launches of that epilogue (fused: gated or residual), so that the layer's fused
// stages, whose predecessor is mostly one of ours, can go unpaced while plain
// calls keep the plan's pacing (perf-notes §53).
void w_lead_override(kernels::sm90::Params& p, const GemmDesc& g) {
  static const int lead = [] {
    const char* v = std::getenv("TGV_EXP_W_LEAD");
    return v == nullptr || v[0] < '0' || v[0] > '9' ? -1 : std::atoi(v);
  }();
  static const std::string on = [] {
    const char* v = std::getenv("TGV_EXP_W_LEAD_ON");
    return std::string(v == nullptr ? "" : v);
  }();
  if (lead < 0) return;
  const bool gated = g.act != Act::None, residual = g.has_residual();
  if ((on == "gated" && !gated) || (on == "residual" && !residual) || (on == "fused" && !gated && !residual) ||
      (on == "plain" && (gated || residual)))
    return;
  p.w_lead = lead < p.stages ? lead : 0;
  if (p.w_lead == 0) p.pace_ctas = 0;
  else if (p.pace_ctas == 0) p.pace_ctas = INT32_MAX;
}

// TGV_EXP_K_GROUPS=1|2, the K groups' A/B on any grid in one build (perf-notes
// §52): every launch's Params::k_groups becomes 1 or 2 (the kernel takes 2 only
// on tiles that have them, outside stream-K). Under 2 an odd ring of a split-1
// plan drops a stage (the groups run on even rings only, §39; a split-K ring is
// sized for its partials and keeps one group there). Only the time changes.
// Read once per process, as TGV_EXP_W_LEAD.
void k_groups_override(kernels::sm90::Params& p, int32_t plan_split_k) {
  static const int groups = [] {
    const char* v = std::getenv("TGV_EXP_K_GROUPS");
    return v == nullptr || (v[0] != '1' && v[0] != '2') ? 0 : v[0] - '0';
  }();
  if (groups == 0) return;
  p.k_groups = groups;
  if (p.k_groups == 2 && plan_split_k == 1 && p.stages % 2 == 1 && p.stages > 4) --p.stages;
  if (p.w_lead >= p.stages) p.w_lead = 0, p.pace_ctas = 0;
}

// TGV_EXP_EARLY_TRIGGER=0|1|2|3|4|5 overrides Plan::trigger_at_entry, where a launch
// lets its PDL successor start (perf-notes §58): 0, never at entry (every CTA
// triggers after its last W load, as before §58); 1, a grid of more CTAs than
// SMs triggers at each CTA's entry, so that the successor's CTAs take the SMs its
// partial last wave leaves idle; 2, every grid; 3, every grid of at most one CTA
// per SM; 4, such a grid whose weights are under TGV_EXP_EARLY_TRIGGER_MB (default
// 48) MB, or gated (the plan's rule, with its bound movable); 5, the plan's rule
// and sm90_paced_early's grids, which also pace their waited CTAs. The successor's
// griddepcontrol.wait still waits for this grid's completion: only the time
// changes. Read once per process, as TGV_EXP_W_LEAD.
void early_trigger_override(kernels::sm90::Params& p, const GemmDesc& g, const Tactic& t, const Plan& plan,
                            const dim3& grid, int device) {
  static const int mode = [] {
    const char* v = std::getenv("TGV_EXP_EARLY_TRIGGER");
    return v == nullptr || v[0] < '0' || v[0] > '5' ? -1 : v[0] - '0';
  }();
  static const double max_mb = [] {
    const char* v = std::getenv("TGV_EXP_EARLY_TRIGGER_MB");
    return v == nullptr ? kSm90EarlyTriggerMaxBytes / 1e6 : std::atof(v);
  }();
  if (mode < 0) return;
  const DeviceInfo& dev = device_info(device);
  if (mode == 5) {
    if (sm90_paced_early(g, t, plan.split_k, plan.stream_k_ctas, dev)) p.trigger_at_entry = 1, p.pace_waited = 1;
    return;
  }
  const bool one_wave = int64_t(grid.x) * grid.y * grid.z <= dev.num_sms;
  const bool bounded = weight_bytes(g) / 1e6 < max_mb || g.act != Act::None;
  p.trigger_at_entry =
      mode == 2 || (mode == 1 && !one_wave) || (mode == 3 && one_wave) || (mode == 4 && one_wave && bounded);
}

// TGV_EXP_PACE_WAITED=1 (perf-notes §58): Params::pace_waited on every launch, so a
// CTA the plan paces is paced whatever its wait. §58's guess at why the early
// trigger slows large one-wave weights: their CTAs, launched early, wait long and
// so run unpaced. Read once per process, as TGV_EXP_W_LEAD.
void pace_waited_override(kernels::sm90::Params& p) {
  static const bool on = [] {
    const char* v = std::getenv("TGV_EXP_PACE_WAITED");
    return v != nullptr && v[0] == '1';
  }();
  if (on) p.pace_waited = 1;
}

}  // namespace

Sm90Launch prepare_sm90(const GemmDesc& g, const Plan& plan, cudaStream_t stream) {
#ifndef TGV_WITH_SM90
  (void)g, (void)plan, (void)stream;
  throw Error(TGV_ERROR_NOT_SUPPORTED, "this build has no sm_90a kernels (TGV_CUDA_ARCHS does not list 90a)");
#else
  const Tactic& t = tactic(plan.tactic);
  Sm90Launch l{};
  TGV_CUDA_CHECK(cudaGetDevice(&l.device));
  bind_primary_context(l.device);
  const bool gated = g.act != Act::None;
  // The gated map is 5-D already: no room for the folded chunk dimension.
  const int w_fold = gated ? 0 : fold_chunks(g.w, g.k, t.cta_k), x_fold = fold_chunks(g.x, g.k, t.cta_k);
  l.tmap_w = gated ? make_gated_map(g.w, g.n, g.k, g.l, t.cta_m, g.in_type)
                   : make_map("w", g.w, g.n, g.k, g.l, t.cta_m, w_fold, g.in_type);
  l.tmap_x = make_map("x", g.x, g.m, g.k, g.l, t.cta_n, x_fold, g.in_type);
  l.cta_k = t.cta_k;
  l.w_mn_major = g.w.major == Major::MN;
  l.x_mn_major = g.x.major == Major::MN;
  l.fp16 = g.in_type == DType::FP16;
  l.pdl = plan.pdl;
  l.stream = stream;

  kernels::sm90::Params& p = l.params;
  p.out = g.out.ptr;
  p.bias = g.bias;
  p.m = static_cast<int32_t>(g.m);
  p.n = static_cast<int32_t>(g.n);
  p.num_k_blocks = static_cast<int32_t>((g.k + t.cta_k - 1) / t.cta_k);
  p.stages = plan.stages;
  p.w_lead = plan.w_lead;
  p.pace_ctas = plan.pace_ctas;
  p.trigger_at_entry = plan.trigger_at_entry ? 1 : 0;
  p.k_groups = sm90_k_groups(g, t, plan.split_k);
  const bool stream_k = plan.split_k == kSplitKStream;
  p.split_k = stream_k ? 1 : plan.split_k;
  k_groups_override(p, plan.split_k);
  w_lead_override(p, g);
  p.split_push =
      !stream_k && sm90_split_push_bytes(t.cta_m, t.cta_n, plan.split_k) > 0 && !split_k_pull_forced() ? 1 : 0;
  p.w_folded = w_fold > 0;
  p.x_folded = x_fold > 0;
  set_output_params(p, g);
  p.res_vectorized = (g.residual.ld % 8 == 0 && g.residual.batch_stride % 8 == 0) ? 1 : 0;
  l.smem_bytes = static_cast<int>(sm90_smem_bytes(t, plan.stages, plan.split_k));
  // A gated tile's cta_m rows are cta_m / 2 output columns, so as many tiles as ungated.
  const int64_t tiles_n = (g.n + t.cta_m - 1) / t.cta_m, tiles_m = (g.m + t.cta_n - 1) / t.cta_n;
  if (stream_k) {
    const int64_t tiles = tiles_n * tiles_m * g.l;
    if (plan.stream_k_ctas < 1 || int64_t(plan.stream_k_ctas) * kStreamKMinItersPerCta > tiles * p.num_k_blocks ||
        tiles > kStreamKMaxTiles || int64_t(t.cta_m) * t.cta_n > kStreamKMaxTileFloats)
      throw Error(TGV_ERROR_INTERNAL, strfmt("stream-K plan of %d CTAs over %lld tiles of %dx%d does not fit its workspace",
                                             plan.stream_k_ctas, (long long)tiles, t.cta_m, t.cta_n));
    int sms = 0;
    TGV_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, l.device));
    if (plan.stream_k_ctas > sms)
      throw Error(TGV_ERROR_INTERNAL, strfmt("stream-K plan of %d CTAs on %d SMs", plan.stream_k_ctas, sms));
    const StreamKWorkspace ws = stream_k_workspace(l.device, sms, stream);
    p.stream_k = 1;
    p.sk_ctas = plan.stream_k_ctas;
    p.tiles_n = static_cast<int32_t>(tiles_n);
    p.tiles_m = static_cast<int32_t>(tiles_m);
    p.sk_dp_tiles = static_cast<int32_t>(sk_whole_tiles_override(g, t, plan));
    p.sk_iters = (tiles - p.sk_dp_tiles) * p.num_k_blocks;
    p.sk_partials = ws.partials;
    p.sk_counters = ws.counters;
    l.grid = dim3(static_cast<unsigned>(plan.stream_k_ctas), 1, 1);
  } else {
    // The split_k CTAs of a tile are adjacent in x: one cluster.
    l.grid = dim3(static_cast<unsigned>(tiles_n * plan.split_k), static_cast<unsigned>(tiles_m),
                  static_cast<unsigned>(g.l));
  }
  early_trigger_override(p, g, t, plan, l.grid, l.device);
  pace_waited_override(p);
  return l;
#endif
}

void launch_sm90(const GemmDesc& g, const Plan& plan, cudaStream_t stream) {
  // Throws where the build has no sm_90a kernels.
  [[maybe_unused]] const Sm90Launch l = prepare_sm90(g, plan, stream);
#ifdef TGV_WITH_SM90
  const Tactic& t = tactic(plan.tactic);
#define TGV_DISPATCH_SM90_TILE(cm, cn) \
  if (t.cta_m == cm && t.cta_n == cn) return launch_sm90_tile<cm, cn>(l);
  TGV_SM90_TILES(TGV_DISPATCH_SM90_TILE)
#undef TGV_DISPATCH_SM90_TILE
  throw Error(TGV_ERROR_INTERNAL, strfmt("tactic %d has no compiled SM90 kernel", plan.tactic));
#endif
}

}  // namespace tgv::detail

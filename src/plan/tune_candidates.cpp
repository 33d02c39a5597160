#include "plan/tune_candidates.hpp"

#include <algorithm>

#include "plan/cost_model.hpp"
#include "tactics/tactics.hpp"

namespace tgv::detail {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

tgv_options tgv_candidate(int32_t tactic, int32_t split_k, int32_t stages) {
  tgv_options o;
  tgv_default_options(&o);
  o.backend = TGV_BACKEND_TGV;
  o.tactic = tactic;
  o.split_k = split_k;
  o.stages = stages;
  return o;
}

}  // namespace

std::vector<tgv_options> tune_candidates(const DeviceInfo& dev, int64_t n, int64_t k, int64_t m) {
  const int32_t family = arch_family(dev.sm());
  // The weights are read once when the token tile covers all of M (up to the
  // largest tile, 256): the smallest such tile of the family, and each of its
  // weight tiles and depths.
  const int32_t cta_n = covering_cta_n(family, m);
  std::vector<tgv_options> out;
  GemmDesc g;
  g.n = n, g.k = k, g.m = m, g.l = 1;
  for (int32_t i = 0; i < kNumTactics; ++i) {
    const Tactic& t = tactics()[i];
    const int32_t deepest = t.arch == family ? stages_for(t, dev.smem_optin_bytes) : 0;
    if (t.arch != family || t.cta_n != cta_n || deepest == 0) continue;
    const int64_t tiles = ceil_div(n, t.cta_m) * ceil_div(m, t.cta_n);
    for (int32_t split : kTuneSplitKs) {
      if (split > 1 && (!kSplitKClustersInPlans || t.arch != 90 || split > ceil_div(k, t.cta_k) ||
                        tiles * split > 2 * int64_t(dev.num_sms)))
        continue;  // off (cost_model.hpp); the sm_100 kernel has no split-K; no empty slices; at most two waves
      // The ring stages 0 runs (plan.cpp): the split-K receive buffer beside it
      // can cost it a stage, and so can K groups (an even ring).
      const int32_t ring = t.arch == 90 ? sm90_plan_stages(g, t, split, dev) : deepest;
      if (ring >= min_stages_for(t, split)) out.push_back(tgv_candidate(t.id, split, 0));
      if (t.arch != 90) continue;  // an sm_100 tactic fixes its depth
      for (int32_t stages : kTuneShallowStages)
        if (stages < ring && stages >= min_stages_for(t, split)) out.push_back(tgv_candidate(t.id, split, stages));
    }
    // Stream-K at its deepest ring, where it can share the problem out.
    if (t.arch == 90 && stream_k_ctas(g, t, dev) > 0) out.push_back(tgv_candidate(t.id, kSplitKStream, 0));
  }
  tgv_options cublas;
  tgv_default_options(&cublas);
  cublas.backend = TGV_BACKEND_CUBLAS;
  out.push_back(cublas);
  return out;
}

DeviceInfo device_from_desc(const tgv_device_desc& desc) {
  DeviceInfo d;
  d.cc_major = desc.sm / 10;
  d.cc_minor = desc.sm % 10;
  d.num_sms = desc.sm_count;
  d.smem_optin_bytes = desc.smem_optin_bytes;
  return d;
}

}  // namespace tgv::detail

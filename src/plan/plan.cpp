#include "plan/plan.hpp"

#include <cstdint>
#include <cstdlib>

#include "common/error.hpp"
#include "common/strfmt.hpp"
#include "plan/cost_model.hpp"
#include "plan/epilogue_rules.hpp"
#include "tactics/tactics.hpp"

namespace tgv::detail {
namespace {

constexpr int64_t kTmaPlaneLimit = int64_t(1) << 32;   // bytes one TMA plane may span
constexpr int64_t kTmaStrideLimit = int64_t(1) << 40;  // bytes, per tensor-map stride
constexpr int64_t kMaxGridYZ = 65535;                  // grid.y carries token tiles, grid.z batches
// Untuned, the cost model (src/plan/cost_model.*) was fitted to measurements
// up to 128 tokens; past that cuBLASLt's compute-oriented tiles serve auto.
constexpr int64_t kMaxModelTokens = 128;
// The sm_100 family has never run (no Blackwell GPU was available): untuned,
// auto keeps it to the decode range the SM90 kernel first measured ahead in.
constexpr int64_t kMaxSm100AutoTokens = 32;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

#ifdef TGV_WITH_SM90
constexpr bool kBuiltSm90 = true;
#else
constexpr bool kBuiltSm90 = false;
#endif
#ifdef TGV_WITH_SM100A
constexpr bool kBuiltSm100 = true;
#else
constexpr bool kBuiltSm100 = false;
#endif
#ifdef TGV_WITH_SM103A
constexpr bool kBuiltSm103 = true;
#else
constexpr bool kBuiltSm103 = false;
#endif

// The sm_100 tactic on rung `rung` of the reference design's ladder (the
// tactic list marks the rungs).
int32_t sm100_rung(int32_t rung) {
  for (int32_t i = 0; i < kNumTactics; ++i)
    if (tactics()[i].arch == 100 && tactics()[i].ladder_rung == rung) return i;
  return -1;
}

// Bytes of the (outer x ld) plane a tensor map describes for one batch.
std::string tma_reason(const char* op, const Operand& o, int64_t rows, int64_t k, int64_t l) {
  const int64_t outer = o.major == Major::K ? rows : k;
  const __int128 plane = __int128(outer) * o.ld * 2;  // validation bounds the extent, not this product
  if (plane >= kTmaPlaneLimit)
    return strfmt("%s spans %.0f bytes per batch (%lld rows of %lld bytes): over the 4 GiB that TMA's 32-bit plane "
                  "reaches",
                  op, double(plane), (long long)outer, (long long)o.ld * 2);
  if (o.batch_stride * 2 >= kTmaStrideLimit)
    return strfmt("%s_stride_l=%lld: over TMA's 2^40-byte stride limit", op, (long long)o.batch_stride);
  if (l > 1 && o.batch_stride == 0)
    return strfmt("%s_stride_l=0 with l=%lld: the tgv kernels do not broadcast an input over the batch", op,
                  (long long)l);
  return {};
}

}  // namespace

std::string family_unavailable_reason(const DeviceInfo& dev) {
  const int sm = dev.sm();
  if (sm < 90)
    return strfmt("the tgv kernels need sm_90 or newer; device %d (%s) is sm_%d", dev.ordinal, dev.name.c_str(), sm);
  const bool blackwell = sm == 100 || sm == 103;
  if (sm != 90 && !blackwell) return strfmt("no tgv kernel for sm_%d (%s)", sm, dev.name.c_str());
  if (sm == 90 && !kBuiltSm90) return "this build has no sm_90a kernels (TGV_CUDA_ARCHS does not list 90a)";
  if ((sm == 100 && !kBuiltSm100) || (sm == 103 && !kBuiltSm103))
    return strfmt("this build has no sm_%da kernels (TGV_CUDA_ARCHS does not list %da)", sm, sm);
  return {};
}

std::string gate_refusal(const DeviceInfo& dev, const GateVerdict& gate) {
  return strfmt("the tgv kernels for sm_%d are disabled in this process on device %d (%s): %s", dev.sm(), dev.ordinal,
                dev.name.c_str(), gate.reason.c_str());
}

std::string tgv_unsupported_reason(const GemmDesc& g, const DeviceInfo& dev, int32_t tactic_id,
                                   const GateVerdict* gate) {
  if (std::string r = family_unavailable_reason(dev); !r.empty()) return r;
  const int sm = dev.sm();
  const bool blackwell = sm == 100 || sm == 103;
  const GateState state = gate != nullptr ? gate->state : GateState::Unknown;
  if (state == GateState::Failed) return gate_refusal(dev, *gate) + "; use backend=cublas or auto";
  if (blackwell) {
    if (state != GateState::Passed)
      return strfmt("the tgv kernels for sm_%d (Blackwell) are unvalidated: compiled, but no self-check has passed on "
                    "device %d (%s); use backend=cublas or auto",
                    sm, dev.ordinal, dev.name.c_str());
    if (g.x.major != Major::K)
      return "x is M-major (tokens contiguous): the sm_100 tgv kernel reads K-major x only; use backend=cublas or auto";
    if (g.w.major != Major::K)
      return "w is N-major (weight rows contiguous): the sm_100 tgv kernel reads K-major w only; use backend=cublas or "
             "auto";
  }
  if (g.l > kMaxGridYZ) return strfmt("l=%lld: over the %lld batches one grid holds", (long long)g.l, (long long)kMaxGridYZ);
  if (g.m > kMaxGridYZ * 8)
    return strfmt("m=%lld: over the %lld tokens one grid holds", (long long)g.m, (long long)(kMaxGridYZ * 8));
  for (const std::string& r :
       {tma_reason("x", g.x, g.m, g.k, g.l), tma_reason("w", g.w, g.n, g.k, g.l)})
    if (!r.empty()) return r;
  if (tactic_id >= 0) {
    const Tactic& t = tactic(tactic_id);
    if (t.arch != arch_family(sm))
      return strfmt("tactic=%d is an sm_%d tactic; this device is sm_%d", tactic_id, t.arch, sm);
    const int32_t need = t.stages > 0 ? t.stages : 2;
    if (stages_for(t, dev.smem_optin_bytes) == 0)
      return strfmt("tactic=%d needs %lld bytes of shared memory for %d stages; the device offers %lld", tactic_id,
                    (long long)smem_bytes_for(t, need), need, (long long)dev.smem_optin_bytes);
  }
  return {};
}

int32_t ladder_sm100(const GemmDesc& g, const DeviceInfo& dev) {
  int32_t best = -1;
  int64_t best_ctas = 0;
  for (int32_t rung = 1, id; (id = sm100_rung(rung)) >= 0; ++rung) {
    const Tactic& t = tactic(id);
    if (stages_for(t, dev.smem_optin_bytes) == 0) continue;
    const int64_t ctas = t.cluster * ceil_div(g.n, int64_t(t.cta_m) * t.cluster) * ceil_div(g.m, t.cta_n) * g.l;
    if (ctas <= dev.num_sms) return id;
    if (best < 0 || ctas < best_ctas) {
      best = id;
      best_ctas = ctas;
    }
  }
  if (best < 0) throw Error(TGV_ERROR_INTERNAL, "the sm_100 tactic ladder found no tactic that fits shared memory");
  return best;
}

namespace {

// Why `stages` (0: the deepest) cannot run tactic t on this device; empty if it can.
std::string stages_reason(const Tactic& t, int32_t stages, const DeviceInfo& dev, int32_t split_k = 1) {
  if (stages == 0) return {};
  if (t.stages > 0 && stages != t.stages)
    return strfmt("stages=%d: tactic=%d (sm_%d) runs a fixed %d-stage pipeline; use stages=0 or %d", stages, t.id,
                  t.arch, t.stages, t.stages);
  if (sm90_smem_bytes(t, stages, split_k) > dev.smem_optin_bytes)
    return strfmt("stages=%d: tactic=%d%s needs %lld bytes of shared memory for %d stages; device %d (%s) offers %lld "
                  "(at most %d stages)",
                  stages, t.id, split_k == kSplitKStream ? " with stream-K" : "",
                  (long long)sm90_smem_bytes(t, stages, split_k), stages, dev.ordinal, dev.name.c_str(),
                  (long long)dev.smem_optin_bytes, sm90_deepest_stages(t, split_k, dev));
  return {};
}

// Why a ring of `stages` cannot hold what tactic t reuses it for at split_k
// (the epilogue tile, the split-K partials); empty if it can.
std::string ring_reason(const Tactic& t, int32_t stages, int32_t split_k) {
  const int32_t need = min_stages_for(t, split_k);
  if (stages >= need) return {};
  const int64_t epilogue = sm90_epilogue_bytes(t.cta_m, t.cta_n);
  const int64_t partials = sm90_ring_partial_bytes(t.cta_m, t.cta_n, split_k);
  return strfmt("tactic=%d's ring of %d stages (%lld bytes) is too small for its %s (%lld bytes), kept there "
                "after the main loop; it needs %d or more stages",
                t.id, stages, (long long)(stage_bytes(t) * stages),
                partials > epilogue ? "split-K partial sums" : "epilogue tile",
                (long long)(partials > epilogue ? partials : epilogue), need);
}

// TGV_EXP_TUNED_GATED=1: a gated call takes its (n, k, M) entry too, as before
// §47, so bench/experiments/chain_plans.py can set the layer's gated gate_up plan
// from a tuning file. Read per plan: each chain run is its own process.
bool gated_tuning_experiment() {
  const char* v = std::getenv("TGV_EXP_TUNED_GATED");
  return v != nullptr && v[0] == '1';
}

// A tuned tgv choice is used only where it is still legal for this problem.
bool usable(const TunedChoice& c, const GemmDesc& g, const DeviceInfo& dev) {
  const bool stream_k = c.split_k == kSplitKStream;
  if (c.tactic < 0 || c.tactic >= kNumTactics || (!stream_k && (c.split_k < 1 || c.split_k > kMaxSplitK))) return false;
  if (c.stages < 0 || c.stages > kMaxStages || c.stages == 1) return false;
  const Tactic& t = tactics()[c.tactic];
  if (t.arch == 100 && c.split_k != 1) return false;  // the sm_100 kernel has no split-K
  if (c.split_k > 1 && !kSplitKClustersInPlans) return false;  // off: the cost model plans instead
  if (stream_k && stream_k_ctas(g, t, dev) == 0) return false;
  const int32_t deepest = sm90_deepest_stages(t, c.split_k, dev);
  const int32_t stages = c.stages > 0 ? c.stages : deepest;
  return t.arch == arch_family(dev.sm()) && deepest > 0 && c.split_k <= ceil_div(g.k, t.cta_k) &&
         stages_reason(t, c.stages, dev, c.split_k).empty() && ring_reason(t, stages, c.split_k).empty();
}

}  // namespace

Plan plan(const GemmDesc& g, const tgv_options& o, const DeviceInfo& dev, const TuningTable* tuning,
          const GateVerdict* gate) {
  Plan p;
  p.pdl = o.pdl != 0;
  if (o.backend == TGV_BACKEND_CUBLAS) return p;
  const bool stream_k_asked = o.split_k == kSplitKStream;
  const bool tgv_required =
      o.backend == TGV_BACKEND_TGV || o.tactic >= 0 || o.split_k > 1 || stream_k_asked || o.stages > 0;
  const bool blackwell = dev.sm() == 100 || dev.sm() == 103;
  // A family the gate disabled, and Blackwell until its self-check passed, are
  // refused here: auto falls back to cuBLASLt, backend=tgv gets the reason.
  std::string reason = tgv_unsupported_reason(g, dev, o.tactic, gate);
  if (reason.empty()) reason = epilogue_unsupported_reason(g, dev);  // dtypes, residual, gating
  if (!reason.empty()) {
    if (tgv_required) throw_unsupported(reason);
    return p;  // auto: cuBLASLt serves what our kernels cannot
  }
  // A tuned entry is one measured (tactic, split-K, stages): an explicit part
  // of it makes the measurement moot.
  const bool all_auto = o.tactic < 0 && o.split_k == 0 && o.stages == 0;
  const TunedChoice* tuned = (tuning != nullptr && all_auto) ? tuning->find(g.n, g.k, g.m) : nullptr;
  // The tuners time GEMMs with the caller's bias and no other epilogue. A gated
  // call runs another kernel (gate and up rows per tile) that no entry timed, and
  // cuBLASLt's route for a residual adds our epilogue kernel and an fp32 scratch
  // round trip that a cuBLASLt verdict never paid: the cost model plans those.
  if (tuned != nullptr && ((g.act != Act::None && !gated_tuning_experiment()) || (tuned->cublas && g.has_residual())))
    tuned = nullptr;
  if (tuned != nullptr && tuned->cublas) {
    if (!tgv_required) return p;  // measured: cuBLASLt is faster here
    tuned = nullptr;              // backend=tgv: the cost model picks among ours
  }
  if (tuned != nullptr && !usable(*tuned, g, dev)) tuned = nullptr;
  if (blackwell) {
    if (tuned == nullptr && !tgv_required && g.m > kMaxSm100AutoTokens) return p;
    p.backend = TGV_BACKEND_TGV;
    if (o.split_k > 1 || stream_k_asked)
      throw_unsupported(strfmt("split_k=%d: the sm_100 tgv kernel has no split-K or stream-K; use split_k=0 or 1",
                               o.split_k));
    p.tactic = o.tactic >= 0 ? o.tactic : tuned ? tuned->tactic : ladder_sm100(g, dev);
    if (std::string r = stages_reason(tactic(p.tactic), o.stages, dev); !r.empty()) throw_unsupported(r);
    p.stages = stages_for(tactic(p.tactic), dev.smem_optin_bytes);
    p.split_k = 1;
    return p;
  }
  // Untuned: the cost model's fastest candidate, and cuBLASLt where the model
  // predicts it faster (auto only).
  Sm90Candidate pick;
  if (tuned == nullptr) {
    pick = best_sm90(g, dev, o.tactic, o.split_k);
    // An explicit split no candidate can run: plan the tactic alone, and the
    // checks below name what is wrong with the split.
    if (pick.tactic < 0 && o.split_k != 0) pick = best_sm90(g, dev, o.tactic, 0);
    if (pick.tactic < 0) {
      if (tgv_required) throw Error(TGV_ERROR_INTERNAL, "the cost model found no SM90 candidate that fits");
      return p;
    }
    if (!tgv_required &&
        (g.m > kMaxModelTokens || cublas_predicted_faster(g, dev, pick.us, cublas_epilogue_extra_us(g, dev))))
      return p;
  }

  p.backend = TGV_BACKEND_TGV;
  p.tactic = o.tactic >= 0 ? o.tactic : tuned ? tuned->tactic : pick.tactic;
  const Tactic& t = tactic(p.tactic);
  const int64_t k_blocks = ceil_div(g.k, t.cta_k);
  if (o.split_k > k_blocks)
    throw_invalid(strfmt("split_k=%d: more than the %lld K blocks of %d columns that k=%lld has", o.split_k,
                         (long long)k_blocks, t.cta_k, (long long)g.k));
  p.split_k = o.split_k != 0 ? o.split_k : tuned ? tuned->split_k : pick.split_k;
  if (p.split_k == kSplitKStream) {
    std::string why;
    p.stream_k_ctas = stream_k_ctas(g, t, dev, &why);
    if (p.stream_k_ctas == 0) {
      if (stream_k_asked) throw_unsupported(strfmt("split_k=%d (stream-K): %s", o.split_k, why.c_str()));
      p.split_k = 1;
    }
  }
  // The library's own stream-K gives way to a caller's ring depth it cannot fit.
  if (p.split_k == kSplitKStream && o.split_k == 0 && !stages_reason(t, o.stages, dev, p.split_k).empty()) {
    p.split_k = 1;
    p.stream_k_ctas = 0;
  }
  if (std::string r = stages_reason(t, o.stages, dev, p.split_k); !r.empty()) throw_unsupported(r);
  const int32_t wanted = o.stages > 0 ? o.stages : tuned ? tuned->stages : 0;
  p.stages = wanted > 0 ? wanted : sm90_plan_stages(g, t, p.split_k, dev);
  // The library's own split-K keeps to what the ring can hold; a caller's is
  // refused below with the reason.
  if (o.split_k == 0 && p.stages < min_stages_for(t, p.split_k)) {
    p.split_k = 1;
    p.stream_k_ctas = 0;
  }
  if (std::string r = ring_reason(t, p.stages, p.split_k); !r.empty())
    throw_unsupported(o.stages > 0 ? strfmt("stages=%d with split_k=%d: %s", o.stages, p.split_k, r.c_str())
                                   : strfmt("split_k=%d: %s", p.split_k, r.c_str()));
  if (p.split_k == kSplitKStream) p.stream_k_whole_tiles = stream_k_whole_tiles(g, t, p.stream_k_ctas, kStreamKWholeWaves);
  p.w_lead = sm90_w_lead(g, t, p.split_k, p.stream_k_ctas, p.stages, dev);
  p.pace_ctas = sm90_pace_ctas(g, t, p.split_k, p.stream_k_ctas, p.stages, p.w_lead, dev);
  p.trigger_at_entry = sm90_trigger_at_entry(g, t, p.split_k, p.stream_k_ctas, dev);
  return p;
}

}  // namespace tgv::detail

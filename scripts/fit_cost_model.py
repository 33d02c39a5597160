#!/usr/bin/env python3
"""Fits the dispatcher's cost model (src/plan/cost_model.cpp) to a sweep of
measured candidates (bench/experiments/sweep.py) and reports how often its
pick lands within 5% of the measured best, with the misses.

  python3 scripts/fit_cost_model.py bench/experiments/data/sweep-h200-2026-12-03.csv \
      [--occupancy bench/experiments/data/cluster-occupancy-h200.txt]
  python3 scripts/fit_cost_model.py --evaluate src/plan/cost_model.cpp bench/experiments/data/sweep-*.csv
  python3 scripts/fit_cost_model.py --peak-gbps 3352 --wide src/plan/cost_model.cpp \
      docs/data/2026-12-06-h100-c/sweep-m64.csv.gz
  python3 scripts/fit_cost_model.py --peak-gbps 3352 --prices src/plan/cost_model.cpp \
      docs/data/2026-12-06-h100-b/sweep.csv.gz

The model (the same arithmetic as cost_model.cpp; keep them in step:
scripts/check_model_sync.py, a ctest, compares the two picks on the committed
sweeps; on an
H100 the 64-token tile has rates, split costs and a price of its own, fitted
with --wide, the tiles of <= 32 tokens prices of their own, fitted with
--prices, and those of <= 16 no partial-grid factor):
  tgv:    fixed(cta_n) + [split > 1] (split_us + per_rank_us (split - 1))
          + waves * bytes_per_cta / rate + (waves - 1) wave_us
          rate = min(rate(cta_m, cta_k, K groups), hbm_gbps / active_ctas)
          waves over the clusters of `split` CTAs the GPU holds at once
  cublas: fixed + W bytes / hbm_gbps + 2 M N K / tflops

The ranking constants are fitted to the pick itself (coordinate search on the
count of points within 5% of the best); the fixed costs then by least squares
of the predicted against the measured time of what is picked. Needs numpy.
"""

import argparse
import collections
import csv
import gzip
import math
import os
import re

import numpy as np

SMS = 132
HBM_GBPS = 4500.0  # the read bandwidth tgv-bench measures on the H200 (perf-notes)
H200_PEAK_GBPS = 4814.0  # cost_model.cpp's kPeakHbmGbps
# cost_model.cpp scales every bandwidth (HBM, the per-SM rates, cuBLASLt's) by
# the device's peak over the H200's; --peak-gbps sets this for a sweep of
# another GPU (the H100: 3352) so that --evaluate sees what the library picks.
SCALE = 1.0
K_GROUP_MAX_CTAS = 80  # cost_model.hpp's kSm90KGroupMaxCtas


def ceil_div(a, b):
    return -(-a // b)


def load_occupancy(path):
    occ = {}
    for line in open(path):
        m = re.match(r"threads 384 cluster\s+(\d+):\s+(\d+) clusters", line)
        if m:
            occ[int(m.group(1))] = int(m.group(2))
    return occ


# The token tiles the H100 ranks by rates of its own (cost_model.cpp's
# kH100Rate<N>Tokens[] and kH100Rate<N>TokensMinBytes, where committed), by the
# prefix of their keys in a fit's constants: t_<cta_m>_<cta_k>_<K groups>, t32_min_bytes.
NARROW_RATES = {32: "t", 16: "s"}


def sm_rate(c, cta_m, cta_n, cta_k, ctas, weight_bytes=0.0):
    """A CTA's stream rate (GB/s) by its stage geometry and consumer warpgroups:
    a 64-row tile has one, or two K groups on small grids (sm90_k_groups); a
    128-row tile two row groups. cost_model.cpp's kSm90Rate; the tiles with K
    groups are tactics.hpp's sm90_tile_has_k_groups."""
    if cta_n == 64 and "w_%d_%d" % (cta_m, cta_k) in c:  # the H100's 64-token rates (kSm90Rate64Tokens)
        return c["w_%d_%d" % (cta_m, cta_k)]
    kg = 2 if cta_m == 64 and cta_n <= 32 and ctas <= K_GROUP_MAX_CTAS else 1
    if cta_n in NARROW_RATES:  # the H100's own rates (kH100Rate<cta_n>Tokens), from its MinBytes up
        key = "%s_%d_%d_%d" % (NARROW_RATES[cta_n], cta_m, cta_k, kg)
        if key in c and weight_bytes >= c.get("%s%d_min_bytes" % (NARROW_RATES[cta_n], cta_n), 0.0):
            return c[key]
    return c["rate_%d_%d_%d" % (cta_m, cta_k, kg)]


def tgv_body(c, n, k, m, cand, occ):
    """Predicted time less the fixed cost, for candidate (cta_m, cta_n, cta_k, split)."""
    cta_m, cta_n, cta_k, split = cand
    tiles = ceil_div(n, cta_m) * ceil_div(m, cta_n)
    clusters = occ.get(split, SMS // split)
    waves = ceil_div(tiles, clusters)
    active = min(tiles, clusters) * split
    kb_cta = ceil_div(ceil_div(k, cta_k), split)
    bytes_cta = cta_m * kb_cta * cta_k * 2
    rate = min(sm_rate(c, cta_m, cta_n, cta_k, tiles * split, 2.0 * n * k) * SCALE, HBM_GBPS * SCALE / active)
    narrow = cta_n <= c.get("narrow_tokens", 0)  # the H100's narrow tiles (kH100NarrowTokens)
    t = waves * bytes_cta / rate * 1e-3 + (waves - 1) * c["wave_us"]
    if 2 * active > SMS and 4 * active < 3 * SMS:  # the next call's grid finds too few free SMs to start whole
        if cta_n == 64 and "w_part_factor" in c and 2.0 * n * k >= c["w_part_min_bytes"]:
            t *= 1.0 + c["w_part_factor"]  # the H100's 64-token grids on large weights (kH100WidePartialGridFactor)
        else:
            t *= 1.0 + (c["narrow_part_factor"] if narrow else c.get("part_factor", 0.0))
    if split > 1:
        if cta_n == 64 and "w_split_us" in c:  # kSplitUs64Tokens, kPerRankUs64Tokens
            t += c["w_split_us"] + c["w_rank_us"] * (split - 1)
        else:
            t += c["split_us"] + c["per_rank_us"] * (split - 1)
    return t


# cuBLASLt with out rows that are not 16-byte aligned (an odd N): none of its
# Hopper kernels that store through TMA apply. The sweep's one such shape,
# 4097x4104, ran 1.4x (M = 1) to 5x (M = 64) the time of 4096x4096 in torch.
MISALIGNED_OUT_FACTOR = 2.0


def cublas_time(q, n, k, m):
    t = q[0] + 2.0 * n * k / (q[1] * SCALE) * 1e-3 + 2.0 * m * n * k / q[2] * 1e-6
    return t * (MISALIGNED_OUT_FACTOR if (n * 2) % 16 else 1.0)


def load(paths, occ, time="chain"):
    """Sweep CSVs of either format: sweep.py's one `us` column (back to back), or
    isolated.py --csv's chain_us and isolated_us (`time` picks one). Gzipped too."""
    # A point swept more than once (several sweeps of one GPU) keeps the mean of its
    # timings: one sweep's best is the least of ~30 noisy candidates, biased low by
    # the noise of a single run (perf-notes §46).
    points = collections.OrderedDict()
    for path in paths:
        f = gzip.open(path, "rt") if path.endswith(".gz") else open(path)
        for r in csv.DictReader(f):
            if "us" in r:
                us = float(r["us"])
            else:
                if int(r.get("stages") or 0) != 0:
                    continue  # the deepest ring only: what the planner runs
                us = float(r["chain_us" if time == "chain" else "isolated_us"])
            key = (int(r["n"]), int(r["k"]), int(r["m"]))
            d = points.setdefault(key, {"tgv": {}})
            if r["cand"] == "tgv":
                cand = (int(r["cta_m"]), int(r["cta_n"]), int(r["cta_k"]), int(r["split"]))
                d["tgv"].setdefault(cand, []).append(us)
            elif r["cand"] != "auto":
                d.setdefault(r["cand"], []).append(us)
    for d in points.values():
        for col in [c for c in d if c != "tgv"]:
            d[col] = sum(d[col]) / len(d[col])
        d["tgv"] = {cand: sum(v) / len(v) for cand, v in d["tgv"].items()}
    return points


def allowed(key, cand, occ):
    """The planner's pruning (cost_model.cpp): a split keeps >= 4 K blocks per
    slice and its clusters fit the device at once."""
    n, k, m = key
    cta_m, cta_n, cta_k, split = cand
    if split == 1:
        return True
    tiles = ceil_div(n, cta_m) * ceil_div(m, cta_n)
    return ceil_div(k, cta_k) >= 4 * split and tiles <= occ.get(split, SMS // split)


def pick_tgv(c, key, d, occ):
    return min((cand for cand in d["tgv"] if allowed(key, cand, occ)), key=lambda cand: tgv_body(c, *key, cand, occ))


def fit_cublas(points, column="cublas"):
    """cuBLASLt's time per M: least squares on (1, weight bytes, flops) of
    `column` (torch's own cuBLAS call: the same library, timed the same way)."""
    cub = {}
    for mm in sorted({k[2] for k in points}):
        keys = [k for k, d in points.items() if k[2] == mm and column in d and (k[0] * 2) % 16 == 0]
        A = np.array([[1.0, 2.0 * n * k * 1e-3, 2.0 * m * n * k * 1e-6] for n, k, m in keys])
        y = np.array([points[k][column] for k in keys])
        sol, *_ = np.linalg.lstsq(A, y, rcond=None)
        # Bandwidth in the H200's units (cublas_time scales it back by SCALE).
        cub[mm] = (sol[0], 1.0 / sol[1] / SCALE if sol[1] > 0 else 1e9, 1.0 / sol[2] if sol[2] > 0 else 1e9)
    return cub


def nearest_m(table, m):
    return table[min(table, key=lambda mm: abs(math.log(mm / m)))]


def floor_us(n, k):
    return 2.0 * n * k / (HBM_GBPS * SCALE) * 1e-3


def price(c, points, occ):
    """Per token tile, the picked candidate's time as fixed + body_scale * body
    + floor_scale * (W bytes / HBM), by least squares over the picks."""
    obs = collections.defaultdict(list)
    for key, d in points.items():
        if d["tgv"]:
            cand = pick_tgv(c, key, d, occ)
            obs[cand[1]].append(([1.0, tgv_body(c, *key, cand, occ), floor_us(key[0], key[1])], d["tgv"][cand]))
    # Relative errors (each row over its measured time): a least-squares fit of
    # absolute microseconds is ruled by the lm_heads and misprices the small
    # weights, where the pick against cuBLASLt is decided.
    return {cta_n: np.linalg.lstsq(np.array([np.array(x) / t for x, t in v]), np.ones(len(v)), rcond=None)[0]
            for cta_n, v in sorted(obs.items())}


# cuBLASLt serves unless our prediction beats its own by this much: the
# model's errors cost more where our kernel loses (a 0.98x floor against torch
# matters more than the last percent of the mean). Chosen on the sweep by
# scan_margins below.
MARGIN_SMALL_M = 0.05  # M <= 32
MARGIN_LARGE_M = 0.10


CUBLAS_COLUMN = "torch"


# cost_model.cpp's stream_k_evens_waves (perf-notes §41): a split-1 pick of a
# plain call of <= STREAM_K_MAX_TOKENS tokens runs as stream-K where its tiles
# are under short_row_cols columns, or its grid is under two waves with a last
# wave at most last_wave_share of the SMs, or from two to max_waves waves with a
# last wave of min_last_wave_share to hybrid_last_wave_share (perf-notes §50);
# its prediction against cuBLASLt's is split 1's x gain. cpp_model reads them.
STREAM_K = dict(short_row_cols=1536, last_wave_share=0.43, min_last_wave_share=0.05, hybrid_last_wave_share=0.65,
                max_waves=5, max_tokens=32, gain=0.96)
# src/tactics/tactics.hpp's limits of a stream-K grid (cpp_model reads them too).
STREAM_K_LIMITS = dict(max_tiles=1 << 16, max_tile_floats=128 * 64, min_iters_per_cta=4)


def stream_k_evens_waves(key, cand):
    n, k, m = key
    cta_m, cta_n, cta_k, split = cand
    tiles = ceil_div(n, cta_m) * ceil_div(m, cta_n)
    if split != 1 or cta_n > STREAM_K["max_tokens"] or tiles <= SMS or tiles > STREAM_K_LIMITS["max_tiles"]:
        return False
    if (cta_m * cta_n > STREAM_K_LIMITS["max_tile_floats"]
            or min(SMS, tiles * ceil_div(k, cta_k) // STREAM_K_LIMITS["min_iters_per_cta"]) < 2):
        return False
    if ceil_div(k, cta_k) * cta_k < STREAM_K["short_row_cols"]:
        return True
    last = tiles % SMS
    if tiles < 2 * SMS:
        return last <= STREAM_K["last_wave_share"] * SMS
    return (tiles < STREAM_K["max_waves"] * SMS
            and STREAM_K["min_last_wave_share"] * SMS <= last <= STREAM_K["hybrid_last_wave_share"] * SMS)


def decide(c, key, d, occ, prices, cub, margins=(MARGIN_SMALL_M, MARGIN_LARGE_M)):
    """The model's choice for one point: ("cublas", us) or (candidate, us); a
    cuBLASLt pick costs the time of the column its price was fitted to. A
    split-1 pick that stream_k_evens_waves makes stream-K costs the sweep's
    stream-K time where it has one, else split 1's."""
    n, k, m = key
    cand = pick_tgv(c, key, d, occ)
    pred_tgv = float(np.dot(prices[cand[1]], [1.0, tgv_body(c, *key, cand, occ), floor_us(n, k)]))
    stream_k = stream_k_evens_waves(key, cand)
    if stream_k:
        pred_tgv *= STREAM_K["gain"]
    margin = margins[0] if m <= 32 else margins[1]
    if CUBLAS_COLUMN in d and cublas_time(nearest_m(cub, m), n, k, m) < pred_tgv * (1 + margin):
        return "cublas", d[CUBLAS_COLUMN]
    if stream_k:
        sk = cand[:3] + (-1,)
        return sk, d["tgv"].get(sk, d["tgv"][cand])
    return cand, d["tgv"][cand]


# The search's objective: the points whose pick lands within 5% of the best,
# less LOSS_WEIGHT for each pick under 0.98x torch's time (what a user sees).
LOSS_WEIGHT = 2.0


def evaluate(c, points, occ, cub, margins=None):
    margins = margins or (MARGIN_SMALL_M, MARGIN_LARGE_M)
    prices = price(c, points, occ)
    score = 0.0
    for key, d in points.items():
        if d["tgv"] and CUBLAS_COLUMN in d:
            got = decide(c, key, d, occ, prices, cub, margins)[1]
            score += got <= 1.05 * min(min(d["tgv"].values()), d[CUBLAS_COLUMN])
            if "torch" in d and d["torch"] < 0.98 * got:
                score -= LOSS_WEIGHT
    return score, prices


def scan_margins(c, points, occ, cub):
    prices = price(c, points, occ)
    print("margin (M<=32, M>32): geomean vs torch at M<=32, min, points below 0.98x")
    for small in (0.0, 0.05, 0.1):
        for large in (0.0, 0.1, 0.15, 0.2):
            ratios = [(key[2], d["torch"] / decide(c, key, d, occ, prices, cub, (small, large))[1])
                      for key, d in points.items() if d["tgv"] and CUBLAS_COLUMN in d and "torch" in d]
            low = [r for _, r in ratios if r <= 32]
            small_m = [r for m, r in ratios if m <= 32]
            print("  %.2f %.2f: %.3f, %.3f, %d" % (small, large, math.exp(sum(map(math.log, small_m)) / len(small_m)),
                                                    min(r for _, r in ratios), sum(r < 0.98 for _, r in ratios)))
            del low


# cost_model.cpp's names of the constants each GPU is priced by: the peak that
# selects them (plain_margin_small_m), the peak whose GB/s the bandwidths are
# in, and the rest. The H100 takes the H200's with plain-call margins of its own.
CPP_NAMES = {
    "H200": dict(peak="kPeakHbmGbps", units="kPeakHbmGbps", hbm="kHbmGbps", split="kSplitUs", rank="kPerRankUs",
                 wave="kWaveUs", part="kPartialGridFactor", rate="kSm90Rate[]", price="kSm90Price[]",
                 cublas="kCublasPrice[]", small="kCublasMarginSmallM", large="kCublasMarginLargeM"),
}
CPP_NAMES["H100"] = dict(CPP_NAMES["H200"], peak="kH100PeakHbmGbps", small="kH100CublasMarginSmallM",
                         large="kH100CublasMarginLargeM",
                         narrow_part="kH100PartialGridFactor", narrow_tokens="kH100NarrowTokens",
                         price="kH100Price[]",
                         wide="kSm90Rate64Tokens[]", wide_split="kSplitUs64Tokens", wide_rank="kPerRankUs64Tokens",
                         narrow_rates="kH100Rate%dTokens",
                         wide_price="kH100Price64Tokens", wide_part="kH100WidePartialGridFactor",
                         wide_part_min_bytes="kH100WidePartialGridMinBytes")


def cpp_model(path, gpu="H200"):
    """One GPU's constants committed in src/plan/cost_model.cpp: (ranking
    constants, prices per cta_n, cuBLASLt prices per M, margins, (selecting
    peak, units peak, hbm) GB/s), read from its source."""
    src = open(path).read()
    names = CPP_NAMES[gpu]
    if names["price"] == "kH100Price[]":  # the H100's table for whether split-K clusters are planned
        names = dict(names, price="kH100PriceSplitK[]" if len(planned_splits(path)) > 1 else "kH100PriceSplit1[]")

    def const(name):
        return float(re.search(r"constexpr double %s = ([0-9.e]+);" % name, src).group(1))

    body = lambda name: src[src.index(name):src.index("};", src.index(name))]
    for key, name in (("short_row_cols", "kStreamKShortRowCols"), ("last_wave_share", "kStreamKLastWaveShare"),
                      ("min_last_wave_share", "kStreamKMinLastWaveShare"),
                      ("hybrid_last_wave_share", "kStreamKHybridLastWaveShare"),
                      ("max_waves", "kStreamKMaxWaves"), ("max_tokens", "kStreamKMaxTokens"), ("gain", "kStreamKGain")):
        STREAM_K[key] = float(re.search(r"constexpr \w+ %s = ([0-9.e]+);" % name, src).group(1))
    tactics = open(os.path.join(os.path.dirname(path), "..", "tactics", "tactics.hpp")).read()
    for key, name in (("max_tiles", "kStreamKMaxTiles"), ("max_tile_floats", "kStreamKMaxTileFloats"),
                      ("min_iters_per_cta", "kStreamKMinItersPerCta")):
        expr = re.search(r"constexpr int64_t %s = ([0-9 *<]+);" % name, tactics).group(1)
        STREAM_K_LIMITS[key] = int(eval(expr, {"__builtins__": {}}))  # an integer literal, a product or a shift
    c = {"rate_%s_%s_%s" % m[:3]: float(m[3])
         for m in re.findall(r"\{(\d+), (\d+), (\d), ([0-9.]+)\}", body(names["rate"]))}
    c.update(split_us=const(names["split"]), per_rank_us=const(names["rank"]), wave_us=const(names["wave"]),
             part_factor=const(names["part"]))
    if "narrow_part" in names:
        c.update(narrow_part_factor=const(names["narrow_part"]),
                 narrow_tokens=int(re.search(r"constexpr int32_t %s = (\d+);" % names["narrow_tokens"], src).group(1)))
    # price_for: a token tile the GPU's own table lacks takes the H200's price.
    prices = {int(m[0]): np.array([float(v) for v in m[1:]])
              for table in sorted({CPP_NAMES["H200"]["price"], names["price"]}, key=lambda t: t != "kSm90Price[]")
              for m in re.findall(r"\{(\d+), ([0-9.]+), ([0-9.]+), ([0-9.]+)\}", body(table))}
    for tokens, prefix in NARROW_RATES.items() if "narrow_rates" in names else ():  # a token tile's own rates
        table = names["narrow_rates"] % tokens
        if table + "[]" in src:
            c.update({"%s_%s_%s_%s" % ((prefix,) + m[:3]): float(m[3])
                      for m in re.findall(r"\{(\d+), (\d+), (\d), ([0-9.]+)\}", body(table + "[]"))})
            c["%s%d_min_bytes" % (prefix, tokens)] = const(table + "MinBytes")
    if "wide" in names:  # the 64-token tile's own constants
        c.update({"w_%s_%s" % m[:2]: float(m[2])
                  for m in re.findall(r"\{(\d+), (\d+), ([0-9.]+)\}", body(names["wide"]))})
        c.update(w_split_us=const(names["wide_split"]), w_rank_us=const(names["wide_rank"]),
                 w_part_factor=const(names["wide_part"]), w_part_min_bytes=const(names["wide_part_min_bytes"]))
        wp = re.search(r"%s = \{64, ([0-9.]+), ([0-9.]+), ([0-9.]+)\};" % names["wide_price"], src)
        prices[64] = np.array([float(v) for v in wp.groups()])
    cub = {int(m[0]): (float(m[1]), float(m[2]), float(m[3]))
           for m in re.findall(r"\{(\d+), ([0-9.]+), ([0-9.]+), ([0-9.]+)\}", body(names["cublas"]))}
    return (c, prices, cub, (const(names["small"]), const(names["large"])),
            (const(names["peak"]), const(names["units"]), const(names["hbm"])))


def planned_splits(path):
    """The splits the library plans itself: 1..8, or only 1 while
    kSplitKClustersInPlans (src/plan/cost_model.hpp, beside `path`) is false."""
    hpp = open(os.path.join(os.path.dirname(path), "cost_model.hpp")).read()
    on = re.search(r"constexpr bool kSplitKClustersInPlans = (true|false);", hpp).group(1) == "true"
    return range(1, 9) if on else range(1, 2)


def library_points(points, path):
    """The sweep's candidates the library plans among: split-K clusters at
    planned_splits, the deepest ring (stream-K is not in auto)."""
    splits = planned_splits(path)
    return collections.OrderedDict(
        (key, dict(d, tgv={cand: us for cand, us in d["tgv"].items() if cand[3] in splits})) for key, d in points.items())


def committed_fit(path, peak_gbps):
    """(gpu, cpp_model) of the GPU whose committed constants the library uses at
    this peak bandwidth (the nearest selecting peak on a log scale), with SCALE
    and HBM_GBPS set as the library scales them."""
    global SCALE, HBM_GBPS
    fits = {gpu: cpp_model(path, gpu) for gpu in CPP_NAMES}
    gpu = min(fits, key=lambda g: abs(math.log(peak_gbps / fits[g][4][0])))
    _, units, hbm = fits[gpu][4]
    SCALE, HBM_GBPS = peak_gbps / units, hbm
    return gpu, fits[gpu]


def evaluate_cpp(points, occ, path, peak_gbps):
    """How the committed model's pick (its split 1..8 candidates at the deepest
    ring, or cuBLASLt at torch's time) compares with the best measured at each
    point, with the fit the library uses on a GPU of this peak bandwidth."""
    gpu, (c, prices, cub, margins, _) = committed_fit(path, peak_gbps)
    print("committed model (%s, the %s fit): %s" % (path, gpu, ", ".join("%s=%g" % kv for kv in c.items())))
    report_library(c, library_points(points, path), occ, prices, cub, margins, path)


def report_library(c, planned, occ, prices, cub, margins, path):
    """report() over the candidates the library plans (library_points), with
    cost_model.cpp's price_for: 256 tokens take the widest fitted."""
    prices[256] = prices[max(prices)]
    report(c, planned, occ, prices, cub, margins, "the library's splits (%s) at the deepest ring, or torch's "
           "cuBLAS" % ", ".join(map(str, planned_splits(path))), 20)


def report(c, points, occ, prices, cub, margins, candidates, shown):
    """The model's pick (decide) against the best measured at each point: the
    count within 5%, the worst `shown` misses, the pick against torch per M."""
    within, misses, vs_torch = 0, [], collections.defaultdict(list)
    for key, d in points.items():
        n, k, m = key
        if not d["tgv"] or CUBLAS_COLUMN not in d:
            continue
        best = min(d["tgv"], key=d["tgv"].get)
        measured_best = d["tgv"][best]
        if d[CUBLAS_COLUMN] < measured_best:
            best, measured_best = CUBLAS_COLUMN, d[CUBLAS_COLUMN]
        what, got = decide(c, key, d, occ, prices, cub, margins)
        if got <= 1.05 * measured_best:
            within += 1
        else:
            misses.append((got / measured_best, n, k, m, what, best))
        if "torch" in d:
            vs_torch[m].append(d["torch"] / got)
    total = within + len(misses)
    print("pick within 5%% of the measured best (%s): %d of %d (%.0f%%)" % (
        candidates, within, total, 100.0 * within / total))
    for r, n, k, m, what, best in sorted(misses, reverse=True)[:shown]:
        print("  miss %.2fx  N=%d K=%d M=%d picked %s, best %s" % (r, n, k, m, what, best))
    for m, v in sorted(vs_torch.items()):
        print("  M=%d: the pick vs torch: geomean %.3f, min %.3f" % (m, math.exp(sum(map(math.log, v)) / len(v)),
                                                                     min(v)))


def coordinate_search(c, grids, score, rounds=3):
    """Each constant over its grid in turn, the others held, `rounds` times;
    a trial replaces the constants only where it scores higher. (best score,
    constants)."""
    best = score(c)
    for _ in range(rounds):
        for name, grid in grids.items():
            for v in grid:
                trial = dict(c, **{name: v})
                s = score(trial)
                if s > best:
                    best, c = s, trial
    return best, c


def fit_wide(points, occ, path, peak_gbps):
    """The 64-token constants (on the H100: kSm90Rate64Tokens, kSplitUs64Tokens,
    kPerRankUs64Tokens, kH100Price64Tokens) fitted to a sweep at M = 64 on the
    GPU whose constants the library would use at this peak bandwidth, the
    narrow tiles' constants and cuBLASLt's price held at the committed ones:
    coordinate search on the points within 5% less LOSS_WEIGHT per point under
    0.98x torch, at the committed margin for M > 32. (The H200 has no 64-token
    constants yet: its search starts from the H100's defaults below.)"""
    gpu, (c, _, cub, margins, _) = committed_fit(path, peak_gbps)
    print("fitting the %s's 64-token constants" % gpu)
    grids = {"w_64_64": [20, 30, 40, 50, 60, 80, 100, 120, 150, 200], "w_64_128": [15, 20, 25, 30, 40, 50, 60, 80, 100],
             "w_128_64": [3, 5, 7, 10, 15, 20, 30], "w_128_128": [5, 10, 15, 20, 25, 30, 40, 60],
             "w_split_us": [0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 2], "w_rank_us": [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0]}
    c = dict(c, **{k: v for k, v in dict(w_64_64=40.0, w_64_128=60.0, w_128_64=40.0, w_128_128=20.0, w_split_us=0.1,
                                         w_rank_us=0.1).items() if k not in c})
    both = (margins[1], margins[1])
    print("as committed (or the defaults): score %.1f over %d points (within 5%% less %g per point under 0.98x)" % (
        evaluate(c, points, occ, cub, both)[0], len(points), LOSS_WEIGHT))
    _, c = coordinate_search(c, grids, lambda trial: evaluate(trial, points, occ, cub, both)[0])
    _, prices = evaluate(c, points, occ, cub, both)
    print("64-token constants: " + ", ".join("%s=%g" % kv for kv in c.items() if kv[0].startswith("w_")))
    print("tgv cta_n=64: fixed_us=%.3f body_scale=%.3f floor_scale=%.3f" % tuple(prices[64]))
    report(c, points, occ, prices, cub, both, "tgv candidates and cuBLASLt at the committed price", 20)


def fit_narrow(points, occ, path, peak_gbps, tokens, min_bytes=0.0):
    """A narrow tile's own rates on the H100 (32 tokens: kH100Rate32Tokens, keys
    t_*; 16 tokens: kH100Rate16Tokens, keys s_*; per cta_m, cta_k and K groups)
    and its price, fitted to the sweep's points of M = tokens/2+1 .. tokens as
    fit_wide fits the 64-token constants: coordinate search on the points within
    5% less LOSS_WEIGHT per point under 0.98x torch, among the splits the
    library plans, at the committed margin; the price by least squares over the
    picks. Starts from the committed rates (the H200's when the H100 has none of
    its own); the rates apply to weights of at least min_bytes (where none are
    committed)."""
    prefix = NARROW_RATES[tokens]
    gpu, (c, prices, cub, margins, _) = committed_fit(path, peak_gbps)
    c.setdefault("%s%d_min_bytes" % (prefix, tokens), min_bytes)
    planned = library_points(collections.OrderedDict(
        (k, d) for k, d in points.items() if tokens // 2 < k[2] <= tokens), path)
    print("fitting the %s's %d-token rates over %d points (weights >= %g bytes)" % (
        gpu, tokens, len(planned), c["%s%d_min_bytes" % (prefix, tokens)]))
    for cta_m, cta_k, kg in ((64, 64, 1), (64, 64, 2), (64, 128, 1), (64, 128, 2), (128, 64, 1), (128, 128, 1)):
        c.setdefault("%s_%d_%d_%d" % (prefix, cta_m, cta_k, kg), c["rate_%d_%d_%d" % (cta_m, cta_k, kg)])
    names = [k for k in c if k.startswith(prefix + "_")]
    grid = [10, 15, 20, 25, 30, 40, 50, 60, 70, 85, 100, 120, 150, 200]
    print("as committed: score %.1f (within 5%% less %g per point under 0.98x)" % (
        evaluate(c, planned, occ, cub, margins)[0], LOSS_WEIGHT))
    best, c = coordinate_search(c, {name: grid for name in names},
                                lambda trial: evaluate(trial, planned, occ, cub, margins)[0])
    _, fitted = evaluate(c, planned, occ, cub, margins)
    print("%d-token rates (score %.1f): %s" % (tokens, best, ", ".join("%s=%g" % (k, c[k]) for k in names)))
    print("tgv cta_n=%d: fixed_us=%.3f body_scale=%.3f floor_scale=%.3f" % ((tokens,) + tuple(fitted[tokens])))
    prices[tokens] = fitted[tokens]
    report_library(c, planned, occ, prices, cub, margins, path)


def fit_prices(points, occ, path, peak_gbps):
    """The narrow tiles' prices (fixed_us, body_scale, floor_scale per cta_n <=
    32; on the H100 kH100PriceSplitK[] or kH100PriceSplit1[], as kSplitKClustersInPlans
    picks) by least squares over the picks of the
    committed ranking constants of the GPU the library would use at this peak
    bandwidth, among the splits it plans, then evaluated as --evaluate does with
    the committed margins."""
    gpu, (c, prices, cub, margins, _) = committed_fit(path, peak_gbps)
    print("fitting the %s's prices to the picks of its committed ranking: %s" % (
        gpu, ", ".join("%s=%g" % kv for kv in c.items())))
    planned = library_points(points, path)
    fitted = price(c, planned, occ)
    for cta_n, p in sorted(fitted.items()):
        if cta_n <= 32:
            print("tgv cta_n=%d: fixed_us=%.3f body_scale=%.3f floor_scale=%.3f" % (cta_n, p[0], p[1], p[2]))
            prices[cta_n] = p
    report_library(c, planned, occ, prices, cub, margins, path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--occupancy", default="bench/experiments/data/cluster-occupancy-h200.txt")
    ap.add_argument("--cublas-column", default="torch",
                    help="the timing cuBLASLt's price is fitted to (torch: torch's own call; cublas: our path's)")
    ap.add_argument("--time", choices=("chain", "isolated"), default="chain",
                    help="with isolated.py's CSVs: back-to-back or between-kernels times (default chain)")
    ap.add_argument("--evaluate", metavar="COST_MODEL_CPP",
                    help="only evaluate the constants committed in this source (src/plan/cost_model.cpp)")
    ap.add_argument("--peak-gbps", type=float, default=H200_PEAK_GBPS,
                    help="the swept GPU's peak read bandwidth (H200 4814, H100 3352): scales as the library does")
    ap.add_argument("--prices", metavar="COST_MODEL_CPP",
                    help="fit the H100's narrow tiles' prices to a sweep, the ranking as committed in this source")
    ap.add_argument("--wide", metavar="COST_MODEL_CPP",
                    help="fit the H100's 64-token constants to an M = 64 sweep, the rest as committed in this source")
    ap.add_argument("--tokens32", metavar="COST_MODEL_CPP",
                    help="fit the H100's 32-token rates and price to a sweep's M = 17-32 points, the rest as committed")
    ap.add_argument("--tokens16", metavar="COST_MODEL_CPP",
                    help="fit the H100's 16-token rates and price to a sweep's M = 9-16 points, the rest as committed")
    ap.add_argument("--min-mb", type=float, default=0.0,
                    help="with --tokens16: the fitted rates apply to weights of at least this many MB")
    a = ap.parse_args()
    global SCALE
    SCALE = a.peak_gbps / H200_PEAK_GBPS
    if a.prices:
        occ = load_occupancy(a.occupancy)
        fit_prices(load(a.csv, occ, a.time), occ, a.prices, a.peak_gbps)
        return
    if a.tokens32:
        occ = load_occupancy(a.occupancy)
        fit_narrow(load(a.csv, occ, a.time), occ, a.tokens32, a.peak_gbps, 32)
        return
    if a.tokens16:
        occ = load_occupancy(a.occupancy)
        fit_narrow(load(a.csv, occ, a.time), occ, a.tokens16, a.peak_gbps, 16, a.min_mb * 1e6)
        return
    if a.wide:
        occ = load_occupancy(a.occupancy)
        fit_wide(load(a.csv, occ, a.time), occ, a.wide, a.peak_gbps)
        return
    if a.evaluate:
        occ = load_occupancy(a.occupancy)
        evaluate_cpp(load(a.csv, occ, a.time), occ, a.evaluate, a.peak_gbps)
        return
    global CUBLAS_COLUMN
    CUBLAS_COLUMN = a.cublas_column
    occ = load_occupancy(a.occupancy)
    points = load(a.csv, occ, a.time)

    rates = ["rate_64_64_1", "rate_64_64_2", "rate_64_128_1", "rate_64_128_2", "rate_128_64_1", "rate_128_128_1"]
    c = dict({r: 50.0 for r in rates}, split_us=0.2, per_rank_us=0.1, wave_us=2.5, part_factor=0.0)
    grids = dict({r: [20, 30, 40, 50, 60, 70, 85, 100, 120, 150] for r in rates},
                 split_us=[0, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0], per_rank_us=[0, 0.05, 0.1, 0.2, 0.3, 0.5],
                 wave_us=[0, 1, 2, 2.5, 3, 4, 6], part_factor=[0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0])
    cub = fit_cublas(points, a.cublas_column)
    _, c = coordinate_search(c, grids, lambda trial: evaluate(trial, points, occ, cub)[0], rounds=4)
    print("ranking constants: " + ", ".join("%s=%g" % kv for kv in c.items()))
    _, prices = evaluate(c, points, occ, cub)
    for cta_n, p in prices.items():
        print("tgv cta_n=%d: fixed_us=%.3f body_scale=%.3f floor_scale=%.3f" % (cta_n, p[0], p[1], p[2]))
    scan_margins(c, points, occ, cub)
    for mm, q in cub.items():
        print("cublas M=%d: fixed_us=%.3f hbm_gbps=%.0f tflops=%.0f" % (mm, q[0], q[1], q[2]))
    if SCALE != 1.0:  # cost_model.cpp keeps each GPU's constants in its own GB/s
        print("in the swept GPU's GB/s (x %.4f): hbm %.0f, peak %.0f; rates %s; cublas gbps %s" % (
            SCALE, HBM_GBPS * SCALE, H200_PEAK_GBPS * SCALE,
            ", ".join("%s=%.1f" % (r, c[r] * SCALE) for r in sorted(c) if r.startswith("rate_")),
            ", ".join("M=%d %.0f" % (mm, q[1] * SCALE) for mm, q in cub.items())))

    report(c, points, occ, prices, cub, (MARGIN_SMALL_M, MARGIN_LARGE_M), "tgv candidates and cuBLASLt", 30)


if __name__ == "__main__":
    main()

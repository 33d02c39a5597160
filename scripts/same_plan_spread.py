#!/usr/bin/env python3
"""How far two graphs of one plan disagree in a corpus run: the corpus bench
times `auto` and the `tgv` backend as separate graphs, and where auto picked
our kernel both run the same plan (and where it picked cuBLASLt, auto and
`backend=cublas` run the same call). Their ratio is run-to-run spread, not a
plan difference: the noise floor under "every point >= 0.98x torch".

  python3 scripts/same_plan_spread.py RUN.csv.gz [RUN2.csv.gz ...]

Per run: for ours (auto / tgv) and for cuBLASLt (auto / cublas), the
percentiles of the ratio and the points beyond +-3%.
"""

import csv
import gzip
import sys


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, max(0, int(round(q / 100.0 * (len(xs) - 1)))))]


def main(paths):
    for path in paths:
        rows = list(csv.DictReader(gzip.open(path, "rt") if path.endswith(".gz") else open(path)))
        print(path)
        for label, other, sel in (("ours: auto / tgv", "tgv_us", lambda r: r["plan"].startswith("tgv")),
                                  ("cuBLASLt: auto / cublas", "cublas_us", lambda r: r["plan"] == "cublas")):
            ratios = [float(r["auto_us"]) / float(r[other]) for r in rows if sel(r) and r["auto_status"] == "ok"]
            if not ratios:
                continue
            print("  %-24s %4d points: p1 %.3f p5 %.3f p50 %.3f p95 %.3f p99 %.3f, beyond +-3%%: %d" % (
                label, len(ratios), pct(ratios, 1), pct(ratios, 5), pct(ratios, 50), pct(ratios, 95), pct(ratios, 99),
                sum(abs(x - 1.0) > 0.03 for x in ratios)))
    return 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env bash
# perf-notes §10, run ON the device machine after bench/experiments/trace.sh:
# the trace of mid-size GEMMs under each kernel variant, into $OUT/trace.txt.
#   bench/experiments/trace-runs.sh [carry-dir]
# (The early-trigger and L2-prefetch binaries it also ran are gone with their
# kernel variants; see perf-notes §10 and commit 5855d2c.)
set -uo pipefail
d=${1:-build-gpu/carry}
out=${OUT:-$(mktemp -d)}
bins="tgv-trace"
cases=("4096 4096 1 2 12 1" "4096 4096 1 2 12 0" "4096 4096 1 2 12 1 64 0" "4096 4096 1 2 8 1" "4096 4096 1 2 6 1"
  "4096 4096 1 2 4 1" "1280 8192 1 4 12 1" "1280 8192 1 4 6 1" "6144 4096 1 1 12 1" "6144 4096 1 1 6 1"
  "28672 4096 1 1 12 1" "28672 4096 1 1 6 1" "4096 14336 1 2 12 1" "4096 14336 1 2 6 1")
{
  for args in "${cases[@]}"; do
    for b in $bins; do
      echo "### $b $args"
      "$d/$b" $args
    done
  done
} > "$out/trace.txt" 2>&1
echo "trace: done"

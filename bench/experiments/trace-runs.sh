#!/usr/bin/env bash
# perf-notes §10, run ON the device machine after bench/experiments/trace.sh:
# the trace of mid-size GEMMs under each kernel variant, into $OUT/trace.txt.
#   bench/experiments/trace-runs.sh [carry-dir] [set]   set: base (first run) or prefetch
set -uo pipefail
d=${1:-build-gpu/carry}
set_name=${2:-prefetch}
out=${OUT:-$(mktemp -d)}
if [ "$set_name" = base ]; then
  bins="tgv-trace tgv-trace-early"
  cases=("4096 4096 1 2 12 1" "4096 4096 1 2 12 0" "4096 4096 1 2 12 1 64 0" "4096 4096 1 2 8 1" "4096 4096 1 2 6 1"
    "4096 4096 1 2 4 1" "4096 4096 1 4 6 1" "1280 8192 1 4 12 1" "1280 8192 1 4 6 1" "28672 4096 1 1 12 1"
    "28672 4096 1 1 6 1" "28672 4096 1 1 4 1")
else
  bins="tgv-trace tgv-trace-pf tgv-trace-pf-early"
  cases=("4096 4096 1 2 12 1" "4096 4096 1 2 8 1" "4096 4096 1 2 6 1" "4096 4096 1 2 4 1" "4096 4096 1 1 6 1"
    "1280 8192 1 4 12 1" "1280 8192 1 4 6 1" "1280 8192 1 4 4 1" "6144 4096 1 1 12 1" "6144 4096 1 1 6 1"
    "6144 4096 1 2 6 1" "28672 4096 1 1 12 1" "28672 4096 1 1 6 1" "28672 4096 1 1 6 1 64 1 8"
    "4096 14336 1 2 6 1" "4096 14336 1 2 12 1")
fi
{
  for args in "${cases[@]}"; do
    for b in $bins; do
      echo "### $b $args"
      "$d/$b" $args
    done
  done
} > "$out/trace.txt" 2>&1
echo "trace: done"

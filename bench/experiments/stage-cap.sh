#!/usr/bin/env bash
# perf-notes §9, run ON the device machine from the repo root after build-gpu.sh:
# the tgv backend at several ring depths (--stages; 0 = the deepest), cuBLASLt beside it,
# then Nsight Compute on one shape at the default depth and at a capped one.
# Writes stage-cap.csv and ncu.txt under $OUT.
set -uo pipefail
dir=${1:-build-gpu/carry}
out=${OUT:-$(mktemp -d)}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
ms=${MS:-1,8,32}
tmp=$(mktemp -d)
"$dir/tgv-bench" --backend cublas --m "$ms" --reps 7 --csv "$tmp/cublas.csv" > /dev/null
for cap in ${CAPS:-0 8 6 4 3}; do
  "$dir/tgv-bench" --backend tgv --stages "$cap" --m "$ms" --reps 7 --csv "$tmp/cap$cap.csv" > /dev/null ||
    echo "stage cap $cap: tgv-bench failed"
done
{
  head -1 "$tmp/cublas.csv" | sed 's/^/cap,/'
  tail -n +2 "$tmp/cublas.csv" | sed 's/^/-,/'
  for f in "$tmp"/cap*.csv; do
    c=$(basename "$f" .csv)
    tail -n +2 "$f" | sed "s/^/${c#cap},/"
  done
} > "$out/stage-cap.csv"
{
  for cap in 0 4; do
    echo "##### --stages $cap"
    ncu --clock-control none --kernel-name regex:tgv_gemm_sm90 --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy \
      --section WarpStateStats --section SchedulerStats \
      "$dir/tgv-bench" --shapes bench/experiments/o_proj.shapes --m 1 --backend tgv --stages "$cap" --reps 1 2>&1 | tail -150
  done
} > "$out/ncu.txt" 2>&1
echo "stage-cap: done"

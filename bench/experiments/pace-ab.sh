#!/usr/bin/env bash
# perf-notes §20, run ON the device machine from the repository root: the W
# producer paced (Params::w_lead, set from the grid) against the whole ring in
# flight, back to back and between spacer kernels.
#   OLD=path/to/an/unpaced/libtgv_gemm.so bench/experiments/pace-ab.sh
# Writes to $OUT: trace.txt (tgv-trace, lead 0 and the library's lead),
# isolated-{old,new}.log (bench/experiments/isolated.py, every candidate at its
# deepest ring, split 1 and 2).
set -uo pipefail
c=build-gpu/carry
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
new=$c/bin/libtgv_gemm.so
py() {
  local lib=$1
  shift
  env TGV_GEMM_LIBRARY="$lib" PYTHONPATH=$c/python PYTHONUNBUFFERED=1 python3 "$@"
}
# N K M split lead: 96, 128 and 80 CTAs of 64x8x128 at 12 stages (leads 7, 5, 8).
for run in "6144 4096 1 1 7" "8192 3584 1 1 5" "5120 2048 1 1 8"; do
  set -- $run
  for lead in 0 "$5"; do
    echo "== between spacer kernels, lead $lead"
    $c/tgv-trace "$1" "$2" "$3" "$4" 12 0 64 1 1 "$lead"
    echo "== back to back with PDL, lead $lead"
    $c/tgv-trace "$1" "$2" "$3" "$4" 12 1 64 1 0 "$lead"
  done
done > "$out/trace.txt" 2>&1
grep -E "^N=|median over" "$out/trace.txt"
shapes=6144:4096,5120:2048,5120:2880,3072:2048,4096:4096,8192:3584,14336:4096,2112:7168,1280:8192,28672:4096
for which in old new; do
  lib=$new
  [ "$which" = old ] && lib=${OLD:?OLD=the unpaced library}
  py "$lib" bench/experiments/isolated.py --all --stages 0 --splits 1,2 --m 1,16 --shapes "$shapes" \
    > "$out/isolated-$which.log" 2>&1
  echo "== isolated.py, $which library"
  grep '|' "$out/isolated-$which.log"
done

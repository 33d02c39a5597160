#!/usr/bin/env bash
# Runs bench/experiments/threads.py in fresh processes, on the device machine, in
# each mode (see threads.py) and with the self-check probe on or off. Counts
# failures; the first lines of each failure go to $OUT/threads.txt.
set -uo pipefail
lib=${1:-build-gpu/carry/libtgv_gemm.so}
runs=${RUNS:-4}
out=${OUT:-$(mktemp -d)}
export TGV_GEMM_LIBRARY=$PWD/$lib PYTHONPATH=$PWD/python LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
{
  for mode in ${MODES:-mixed cublas tgv nopdl streams}; do
    for setting in ${SETTINGS:-TGV_SELF_CHECK=pass}; do
      fails=0
      for i in $(seq "$runs"); do
        r=$(env $setting python3 bench/experiments/threads.py 2 "$mode" 2>&1)
        if [ "$r" != OK ]; then fails=$((fails + 1)); echo "$r" | head -3 | cut -c1-1200; fi
      done
      echo "== mode $mode, $setting: $fails of $runs runs failed"
    done
  done
} > "$out/threads.txt" 2>&1
grep "^==" "$out/threads.txt"

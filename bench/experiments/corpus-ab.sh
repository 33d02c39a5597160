#!/usr/bin/env bash
# Two builds of the library over the whole untuned corpus in one device call,
# between other kernels and back to back, the runs alternated (A, B, A, B) so a
# drift of the GPU over the call lands on both. Run ON the device machine from
# the repository root:
#   A=path/to/libtgv_gemm.so B=path/to/other/libtgv_gemm.so bench/experiments/corpus-ab.sh
# Writes corpus-{iso,b2b}-{A,B}.{csv,log} to $OUT (perf-notes §24 is one such run).
set -uo pipefail
c=build-gpu/carry
out=${OUT:-$(mktemp -d)}
mkdir -p "$out"
export PYTHONPATH=$c/python PYTHONUNBUFFERED=1
for mode in iso b2b; do
  for v in A B; do
    lib=${!v:?A= and B= name the two libraries}
    flag=()
    [ "$mode" = iso ] && flag=(--isolated)
    TGV_GEMM_LIBRARY=$lib python3 bench/python/corpus_bench.py --tgv-bench $c/bin/tgv-bench "${flag[@]}" \
      --csv "$out/corpus-$mode-$v.csv" > "$out/corpus-$mode-$v.log" 2>&1
    echo "== $mode $v (rc $?)"
    grep -E "^\| (auto|cublas|tgv) " "$out/corpus-$mode-$v.log"
  done
done

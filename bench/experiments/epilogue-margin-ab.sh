#!/usr/bin/env bash
# One device call (2026-12-05, perf-notes §30): the cuBLASLt margin turned
# round for fused-epilogue calls. B = build-gpu/carry/bin (this change), A =
# the library before it (build-gpu/carry/var.tgz: A/tgv-bench and
# A/libtgv_gemm.so built from the previous src/plan/cost_model.cpp). The
# decoder-layer chain alternated A B A B, racecheck on the sanitizer subset
# without cuBLAS's kernels (SAN=1), then e2e_decode --quick --no-tune on B. Run ON the device
# from the repository root; everything tarred into $OUT.
set -u
c=build-gpu/carry; o=/tmp/o; mkdir -p $o /tmp/var
tar xzf $c/var.tgz -C /tmp/var
export PYTHONUNBUFFERED=1
for r in 1 2; do
  for L in A B; do
    b=$c/bin/tgv-bench; [ $L = A ] && b=/tmp/var/A/tgv-bench
    echo "### chain $L round $r"
    timeout 60 $b --mode chain --m 1,4,16 2>&1 | grep -E "^llama|FAIL"
  done
done | tee $o/chain.txt
if [ "${SAN:-0}" = 1 ]; then
  TESTS=0 BENCH=0 HOST_TESTS=0 PYTEST=0 SANITIZE=1 OUT=$o/san timeout 150 bash $c/gpu-check.sh 2>&1 | grep -E "===|SUMMARY|PASSED" | tee $o/san.txt
fi
TGV_GEMM_LIBRARY=$c/bin/libtgv_gemm.so PYTHONPATH=$c/python timeout ${E2E_S:-200} python3 bench/python/e2e_decode.py --quick --no-tune \
  --batches 1 4 16 --csv $o/e2e.csv > $o/e2e.txt 2>&1
echo "e2e rc=$?"; tail -24 $o/e2e.txt
tar czf $OUT/f.tgz -C $o .

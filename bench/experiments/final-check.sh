#!/usr/bin/env bash
# One device call for a build about to land: the GPU suite and the Python tests
# (scripts/gpu-check.sh, TESTS=1 PYTEST=1, no bench table), the decoder-layer
# chain and bench/python/e2e_decode.py --quick, untuned. Run ON the device from
# the repository root after scripts/build-gpu.sh; everything tarred into $OUT.
# Written 2026-12-04 night for 3ed6bcb; not yet run (no device was lent).
set -u
c=build-gpu/carry; o=/tmp/o; mkdir -p $o
OUT_SAVE=$OUT
OUT=$o/check TESTS=1 BENCH=0 HOST_TESTS=0 PYTEST=1 PERF=0 timeout 330 bash $c/gpu-check.sh > $o/gpu-check.txt 2>&1
echo "gpu-check rc=$?"; grep -E "^===|PASSED|FAILED|passed|failed" $o/gpu-check.txt | head -30
export LD_LIBRARY_PATH=$c/bin PYTHONUNBUFFERED=1
timeout 60 $c/bin/tgv-bench --mode chain --m 1,4,16 > $o/chain.txt 2>&1; grep -E "^llama|FAIL" $o/chain.txt
TGV_GEMM_LIBRARY=$c/bin/libtgv_gemm.so PYTHONPATH=$c/python timeout 230 python3 bench/python/e2e_decode.py --quick --csv $o/e2e.csv > $o/e2e.txt 2>&1
echo "e2e rc=$?"; tail -25 $o/e2e.txt
tar czf $OUT_SAVE/f.tgz -C $o .

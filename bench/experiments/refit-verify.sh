#!/usr/bin/env bash
# The refitted cost model on the device (2026-12-04 evening, perf-notes §28), in
# two calls: `refit-verify.sh corpus` (the untuned corpus both ways, A = the
# previous library in build-gpu/carry/libA-prev.so, B = this build), then
# `refit-verify.sh layer` (chain mode, the end-to-end decode step, sanitizers).
set -u
c=build-gpu/carry; o=/tmp/o; mkdir -p $o
export LD_LIBRARY_PATH=$c/bin:${LD_LIBRARY_PATH:-} PYTHONPATH=$c/python PYTHONUNBUFFERED=1
case "${1:?corpus or layer}" in
corpus)
  A=$c/libA-prev.so B=$c/bin/libtgv_gemm.so OUT=$o timeout 560 bash bench/experiments/corpus-ab.sh
  tar czf $OUT/corpus.tgz -C $o . ;;
layer)
  untuned=/nonexistent/tgv-untuned.json
  TGV_TUNING_FILE=$untuned timeout 90 $c/bin/tgv-bench --mode chain --m 1,4,16 > $o/chain.txt 2>&1
  echo "chain rc=$?"; grep -E "^\||us" $o/chain.txt | tail -12
  TGV_GEMM_LIBRARY=$c/bin/libtgv_gemm.so timeout 240 python3 bench/python/e2e_decode.py --quick \
    --csv $o/e2e.csv > $o/e2e.txt 2>&1
  echo "e2e rc=$?"; tail -15 $o/e2e.txt
  for tool in racecheck synccheck; do
    timeout 100 compute-sanitizer --tool $tool --error-exitcode 1 $c/bin/tgv_gpu_tests --gtest_brief=1 \
      --gtest_filter='*TgvKGroups*/0:*TgvKGroups*/6:*TgvTactic*/0:*TgvTactic*/9' > $o/san-$tool.txt 2>&1
    echo "$tool rc=$?"; tail -1 $o/san-$tool.txt
  done
  tar czf $OUT/layer.tgz -C $o . ;;
esac

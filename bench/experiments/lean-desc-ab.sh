#!/usr/bin/env bash
# The lean-descriptor A/B of 2026-12-04 (perf-notes §27), as one device call.
# Expects in build-gpu/carry, beside scripts/build-gpu.sh's output:
#   tgv-trace-old  tgv-trace built from the previous kernel (bench/experiments/trace.sh)
#   libA-prev.so   the previous library (the A side of corpus-ab.sh)
# Traces old / new with one and two K groups, the GPU suite, sanitizers on the
# K-group and tactic cases, a SASS census, then the corpus A/B; results in $OUT.
set -u
c=build-gpu/carry; o=/tmp/o; mkdir -p $o
export LD_LIBRARY_PATH=$c/bin:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $o/gpu.txt
{
for a in "64 16384 1 1 12 0 64 1 1" "64 16384 1 1 6 0 64 1 1" "3072 2048 1 1 12 0 64 1 1" "3072 2048 1 1 12 1 64 1 0" "5120 2048 1 1 12 0 64 1 1" "5120 2048 1 1 12 1 64 1 0" "6144 4096 1 1 12 0 64 1 1" "6144 4096 1 1 12 1 64 1 0" "4096 512 1 1 12 0 64 1 1"; do
  echo "### old $a"; timeout 20 $c/tgv-trace-old $a 0
  for kg in 1 2; do echo "### new $a 0 $kg"; timeout 20 $c/tgv-trace $a 0 $kg; done
done
} > $o/trace.txt 2>&1
grep -E "###|graph replay" $o/trace.txt | paste - - | awk '{print $2,$3,$4,$7,$8,$13,$14,$15,$18}'
( time timeout 200 $c/bin/tgv_gpu_tests --gtest_filter='*:-*TgvPaced*' --gtest_brief=1 ) > $o/gpu-tests.txt 2>&1; echo "tests rc=$?"; tail -4 $o/gpu-tests.txt
timeout 90 $c/bin/tgv_gpu_tests --gtest_filter='*TgvPaced*/0:*TgvPaced*/3:*TgvPaced*/6' --gtest_brief=1 > $o/gpu-tests-paced.txt 2>&1; echo "paced rc=$?"
for tool in racecheck synccheck; do
  timeout 100 compute-sanitizer --tool $tool --error-exitcode 1 $c/bin/tgv_gpu_tests --gtest_brief=1 \
    --gtest_filter='*TgvKGroups*/0:*TgvKGroups*/6:*TgvTactic*/0:*TgvTactic*/9' > $o/san-$tool.txt 2>&1; echo "$tool rc=$?"; tail -1 $o/san-$tool.txt
done
cuobjdump --dump-sass $c/bin/tgv-bench | grep -oE "HGMMA\.[0-9x]+\.[A-Z0-9.]+|UTMALDG\.[0-9]D|ACQBULK|PREEXIT|SETMAXREG\.[A-Z.]+" | sort | uniq -c > $o/sass.txt
tar czf $OUT/r3-checks.tgz -C $o .
# corpus: A = the previous library (cf8bc6a), B = this build, alternated
mkdir -p /tmp/o2; A=$c/libA-prev.so B=$c/bin/libtgv_gemm.so OUT=/tmp/o2 timeout 330 bash bench/experiments/corpus-ab.sh
tar czf $OUT/r3-corpus.tgz -C /tmp/o2 .

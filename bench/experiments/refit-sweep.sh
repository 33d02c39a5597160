#!/usr/bin/env bash
# One device call (2026-12-04 evening, perf-notes §28): the uniform-datapath
# kernel against the lean one in tgv-trace, the GPU suite on this build, then
# the candidate sweep the cost model is refitted to. Expects in build-gpu/carry,
# beside scripts/build-gpu.sh's output, tgv-trace (this tree, trace.sh) and
# tgv-trace-lean (the previous kernel's). Results tarred into $OUT.
set -u
c=build-gpu/carry; o=/tmp/o; mkdir -p $o
export LD_LIBRARY_PATH=$c/bin:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $o/gpu.txt
{
for a in "64 16384 1 1 12 0 64 1 1" "3072 2048 1 1 12 0 64 1 1" "3072 2048 1 1 12 1 64 1 0" \
         "5120 2048 1 1 12 0 64 1 1" "5120 2048 1 1 12 1 64 1 0" "6144 4096 1 1 12 0 64 1 1" \
         "6144 4096 1 1 12 1 64 1 0" "4096 512 1 1 12 0 64 1 1"; do
  for kg in 1 2; do
    echo "### lean $a 0 $kg"; timeout 20 $c/tgv-trace-lean $a 0 $kg
    echo "### uni $a 0 $kg"; timeout 20 $c/tgv-trace $a 0 $kg
  done
done
} > $o/trace.txt 2>&1
grep -E "###|graph replay" $o/trace.txt | paste - - | awk '{print $2,$3,$4,$7,$8,$13,$14,$15,$18}'
( time timeout 150 $c/bin/tgv_gpu_tests --gtest_filter='*:-*TgvPaced*' --gtest_brief=1 ) > $o/gpu-tests.txt 2>&1
echo "tests rc=$?"; tail -4 $o/gpu-tests.txt
cuobjdump --dump-sass $c/bin/tgv-bench | grep -oE "HGMMA\.[0-9x]+\.[A-Z0-9.]+|UTMALDG\.[0-9]D|ACQBULK|PREEXIT|R2UR" | sort | uniq -c > $o/sass.txt
tar czf $OUT/checks.tgz -C $o .
mkdir -p /tmp/o2
( time TGV_GEMM_LIBRARY=$c/bin/libtgv_gemm.so PYTHONPATH=$c/python timeout ${SWEEP_S:-360} python3 bench/experiments/isolated.py \
  --corpus bench/corpus/decode.shapes --min-mb 4 --stages 0 --splits 1,2,4 --m ${SWEEP_M:-1,4,16,32} --replays 3 \
  --csv /tmp/o2/sweep.csv ) > /tmp/o2/sweep.log 2>&1
echo "sweep rc=$?"; tail -3 /tmp/o2/sweep.log
gzip -f /tmp/o2/sweep.csv; tar czf $OUT/sweep.tgz -C /tmp/o2 .

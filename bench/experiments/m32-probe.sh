#!/usr/bin/env bash
# Run ON the device (perf-notes §46): why qwen3-30b's qkv (5120 x 2048) at M = 32
# runs its 128x32x64 plan in 9.3 us in every sweep (isolated.py, 20 weight copies)
# and 10.85 us in every corpus run (corpus_bench.py, 10 copies at its default
# --l2-factor 4), torch 9.8-9.9 in both. The same shapes (and two more M = 32
# weights that trail torch) through both harnesses, the corpus at 4x and 8x L2 of
# copies; one file per step under $OUT/r (tar it: the tool returns only a few).
#   bash bench/experiments/m32-probe.sh     (build-gpu/carry carried)
c=build-gpu/carry; export TGV_TUNING_FILE=/nonexistent/x.json TGV_GEMM_LIBRARY=$c/bin/libtgv_gemm.so PYTHONPATH=$c/python PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp}; mkdir -p $OUT/r
nvidia-smi --query-gpu=name,uuid --format=csv,noheader | tee $OUT/r/gpu.txt
timeout 70 python3 bench/experiments/isolated.py --shapes 5120:2048,4608:2048,10240:2560 --m 32 --splits 1,2,-1 \
  --chain-only --all --replays 5 2>&1 | tee $OUT/r/iso.txt | grep -vE "^ +[0-9]+x[0-9]+x[0-9]+/" | head -30
grep -E "^ +(128x32x64/1|64x32x128/1|128x32x128/2|64x32x128/sk|128x32x64/sk) " $OUT/r/iso.txt
for f in 4 8; do
  timeout 50 python3 bench/python/corpus_bench.py --tgv-bench $c/bin/tgv-bench --shapes 5120x2048 4608x2048 10240x2560 \
    --m 16 32 --l2-factor $f --csv $OUT/r/c$f.csv > $OUT/r/c$f.log 2>&1
  echo "l2-factor $f rc=$?"; cut -d, -f2-4,7-13 $OUT/r/c$f.csv
done

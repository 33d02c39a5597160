#!/usr/bin/env bash
# Run ON the device (perf-notes §47): why our small grids (36-64 CTAs, weights of
# 4-21 MB) run 10-20% slower in the corpus bench than in the sweeps (isolated.py)
# while torch's F.linear runs the same in both. The same shapes through isolated.py,
# then through corpus_bench.py as it is and with one of the sweep's habits at a
# time: a host sync per replay, one allocation per weight copy, a preallocated out;
# then all three. One file per step under $OUT/r (tar it: the tool returns few).
#   bash bench/experiments/harness-probe.sh     (build-gpu/carry carried)
c=build-gpu/carry; export TGV_TUNING_FILE=/nonexistent/x.json TGV_GEMM_LIBRARY=$c/bin/libtgv_gemm.so PYTHONPATH=$c/python PYTHONUNBUFFERED=1
o=${OUT:-/tmp}/r; mkdir -p $o
shapes="4096x512 4096x1536 2880x1024 3072x1536 4096x2560 5120x2048 1024x4608 14336x4096"
nvidia-smi --query-gpu=name,uuid --format=csv,noheader | tee $o/gpu.txt
timeout 90 python3 bench/experiments/isolated.py --shapes "$(echo $shapes | tr ' x' ',:')" --m 1,32 --splits 1 \
  --chain-only --replays 5 2>&1 | tee $o/hp-iso.txt | grep -E "^[0-9]+ [0-9]+ [0-9]+ \|"
for v in plain sync separate out all; do
  case $v in plain) f=;; sync) f=--sync-replays;; separate) f=--separate-copies;; out) f=--out-buffer;;
    all) f="--sync-replays --separate-copies --out-buffer";; esac
  timeout 60 python3 bench/python/corpus_bench.py --tgv-bench $c/bin/tgv-bench --shapes $shapes --m 1 32 $f \
    --csv $o/hp-$v.csv > $o/hp-$v.log 2>&1
  echo "## $v rc=$? (n,k,m,plan,auto,tgv,torch)"; cut -d, -f2-4,9,10,12,13 $o/hp-$v.csv | tail -n +2 | tr '\n' ' '; echo
done

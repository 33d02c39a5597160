#!/usr/bin/env bash
# One device call (2026-12-04 night, perf-notes §29): the persistent schedule
# (stream-K's walk over whole tiles, one CTA per SM at most) against one tile
# per CTA and classic stream-K, on a build of the tree with
# bench/experiments/persistent-schedule.patch applied (git apply; not in the
# library: it lost in the decoder-layer chain). The patch reads two switches
# (since round 1 the plan, not the launcher, sizes the persistent grid, so
# w_lead counts its real CTAs: 6 stages instead of 5 for the 8B gate_up):
# TGV_EXP_PERSIST=1 makes a stream-K launch persistent; TGV_EXP_PERSIST_AUTO=1
# makes a split-1 plan of more tiles than SMs a stream-K one. Run ON the device
# machine from the repository root; results tarred into $OUT.
set -u
c=build-gpu/carry; o=/tmp/o; mkdir -p $o
export LD_LIBRARY_PATH=$c/bin:${LD_LIBRARY_PATH:-} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $o/gpu.txt
( TGV_EXP_PERSIST=1 TGV_EXP_PERSIST_AUTO=1 timeout 120 $c/bin/tgv_gpu_tests \
    --gtest_filter='*TgvStreamK*:*TgvGemm*:*AutoGemm*:*TgvIssueGrid*:*Epilogue*:*Pdl*' --gtest_brief=1 ) > $o/tests-persist.txt 2>&1
echo "tests rc=$?"; grep -E "FAILED|PASSED|SKIPPED" $o/tests-persist.txt | head -20
S=28672:4096,14336:4096,4096:14336,7168:8192,8192:3584,6144:4096,4096:4096,18944:3584,27648:5120,1280:8192,8192:1024
for e in 0 1; do
  TGV_EXP_PERSIST=$e TGV_GEMM_LIBRARY=$c/bin/libtgv_gemm.so PYTHONPATH=$c/python timeout 150 python3 \
    bench/experiments/isolated.py --shapes $S --m 1,16 --splits 1,2,-1 --replays 5 --csv $o/iso-p$e.csv > $o/iso-p$e.log 2>&1
  echo "isolated p$e rc=$?"
done
for e in 0 1 0 1; do
  echo "### chain persist=$e"
  TGV_EXP_PERSIST=$e TGV_EXP_PERSIST_AUTO=$e timeout 60 $c/bin/tgv-bench --mode chain --m 1,4,16 2>&1 | grep -E "^llama"
done | tee $o/chain.txt
for e in 0 1; do
  TGV_EXP_PERSIST=$e TGV_EXP_PERSIST_AUTO=$e TGV_GEMM_LIBRARY=$c/bin/libtgv_gemm.so PYTHONPATH=$c/python timeout 120 \
    python3 bench/python/corpus_bench.py --tgv-bench $c/bin/tgv-bench --csv $o/corpus-b2b-p$e.csv > $o/corpus-b2b-p$e.log 2>&1
  echo "corpus p$e rc=$?"; grep -E "^\| (auto|cublas|tgv) " $o/corpus-b2b-p$e.log | head -3
done
tar czf $OUT/p.tgz -C $o .

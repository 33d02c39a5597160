#!/usr/bin/env bash
# One device call (2026-12-04 night, perf-notes §29): cost models against the
# decoder-layer chain, not only the corpus. L0 = build-gpu/carry/bin (the
# 2026-12-04 evening refit, 1362175), L1/L2 = variants staged in
# build-gpu/carry/var.tgz, each a tgv-bench and a libtgv_gemm.so built with one
# src/plan/cost_model.cpp (L1: aa4e3cf's; L2: aa4e3cf's plus the partial-grid
# factor, the model committed after this run), staged by
# bench/experiments/stage-variants.sh. Chains alternated twice; then the
# corpus both ways for L1 and L2. Run ON the device from the repository root.
set -u
c=build-gpu/carry; o=/tmp/o; mkdir -p $o /tmp/var
tar xzf $c/var.tgz -C /tmp/var
export PYTHONUNBUFFERED=1
bench() { [ "$1" = L0 ] && echo $c/bin/tgv-bench || echo /tmp/var/$1/tgv-bench; }
lib() { [ "$1" = L0 ] && echo $c/bin/libtgv_gemm.so || echo /tmp/var/$1/libtgv_gemm.so; }
for r in 1 2; do
  for L in L0 L1 L2; do
    echo "### chain $L round $r"
    LD_LIBRARY_PATH=$c/bin timeout 60 $(bench $L) --mode chain --m 1,4,16 2>&1 | grep -E "^llama|FAIL"
  done
done | tee $o/chain.txt
echo "### chain L1 persist"; TGV_EXP_PERSIST=1 TGV_EXP_PERSIST_AUTO=1 timeout 60 $(bench L1) --mode chain --m 1,4,16 2>&1 | grep -E "^llama" | tee -a $o/chain.txt
for mode in b2b iso; do
  for L in L1 L2; do
    flag=(); [ $mode = iso ] && flag=(--isolated)
    TGV_GEMM_LIBRARY=$(lib $L) PYTHONPATH=$c/python timeout 120 python3 bench/python/corpus_bench.py \
      --tgv-bench $c/bin/tgv-bench "${flag[@]}" --csv $o/corpus-$mode-$L.csv > $o/corpus-$mode-$L.log 2>&1
    echo "== $mode $L rc=$?"; grep -E "^\| (auto|cublas|tgv) " $o/corpus-$mode-$L.log | head -3
  done
done
tar czf $OUT/m.tgz -C $o .

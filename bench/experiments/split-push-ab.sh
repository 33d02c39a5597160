#!/usr/bin/env bash
# Device calls for the pushed split-K reduction (perf-notes §31). B =
# build-gpu/carry/bin (peers push their partial sums into the leader's receive
# buffer and exit), A = the library before it (build-gpu/carry/var.tgz:
# A/tgv-bench, A/libtgv_gemm.so: two cluster barriers around the leader's
# reads of the peers' rings). Run ON the device from the repository root;
# everything tarred into $OUT.
#   PART=1: the GPU suite and the sanitizer subset on B, then the decoder-layer
#           chain A B A B.
#   PART=2: isolated.py on split-K shapes (back to back and between kernels,
#           splits 1/2/4/8) A then B, then the corpus back to back A, B.
#   PART=3 (the final build): the GPU suite, pytest and the sanitizer subset,
#           the chain on B, the corpus between kernels A, B; with E2E=1 also
#           e2e_decode --quick --no-tune on B.
set -u
c=build-gpu/carry; o=/tmp/o; mkdir -p $o /tmp/var
tar xzf $c/var.tgz -C /tmp/var
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $o/gpu.txt
bench_of() { [ "$1" = A ] && echo /tmp/var/A/tgv-bench || echo $c/bin/tgv-bench; }
lib_of() { [ "$1" = A ] && echo /tmp/var/A/libtgv_gemm.so || echo $c/bin/libtgv_gemm.so; }
if [ "${PART:-1}" = 3 ]; then
  TESTS=1 BENCH=0 HOST_TESTS=0 PYTEST=1 SANITIZE=1 OUT=$o/check timeout 330 bash $c/gpu-check.sh > $o/check.txt 2>&1
  echo "check rc=$?"; grep -E "^=== .*(FAILED|skipped)|tests ran|PASSED|FAILED|SUMMARY|passed" $o/check.txt | head -30
  timeout 60 $c/bin/tgv-bench --mode chain --m 1,4,16 2>&1 | grep -E "^llama|FAIL" | tee $o/chain.txt
  for L in A B; do
    TGV_GEMM_LIBRARY=$(lib_of $L) PYTHONPATH=$c/python timeout 130 python3 bench/python/corpus_bench.py --isolated \
      --tgv-bench $(bench_of $L) --csv $o/corpus-iso-$L.csv > $o/corpus-iso-$L.log 2>&1
    echo "corpus isolated $L rc=$?"; grep -E "^\| (auto|cublas|tgv) " $o/corpus-iso-$L.log | head -3
  done
  if [ "${E2E:-0}" = 1 ]; then
    TGV_GEMM_LIBRARY=$c/bin/libtgv_gemm.so PYTHONPATH=$c/python timeout 100 python3 bench/python/e2e_decode.py --quick \
      --no-tune --batches 1 4 16 --csv $o/e2e.csv > $o/e2e.txt 2>&1
    echo "e2e rc=$?"; grep -E "^\| (8b|70b)|check:" $o/e2e.txt
  fi
elif [ "${PART:-1}" = 1 ]; then
  TESTS=1 BENCH=0 HOST_TESTS=0 PYTEST=0 SANITIZE=1 OUT=$o/check timeout 330 bash $c/gpu-check.sh > $o/check.txt 2>&1
  echo "check rc=$?"; grep -E "===|tests ran|PASSED|FAILED|SUMMARY" $o/check.txt | head -30
  # SASS of the push: the remote stores and the cluster barrier beside HGMMA.
  cuobjdump -sass $c/bin/libtgv_gemm.so 2>/dev/null | grep -oE "\b(HGMMA|UTMALDG|STAS|ST\.ASYNC|UCGABAR_[A-Z]+|CCTL[A-Z.]*|SYNCS\.[A-Z.]+)\b" |
    sort | uniq -c > $o/sass.txt; cat $o/sass.txt
  for r in 1 2; do
    for L in A B; do
      echo "### chain $L round $r"
      timeout 60 $(bench_of $L) --mode chain --m 1,4,16 2>&1 | grep -E "^llama|FAIL"
    done
  done | tee $o/chain.txt
else
  S=1280:8192,1024:4096,2112:7168,1280:2880,4096:4096,576:7168,3072:1536,5120:2880,2048:4096,8192:1024
  for L in A B; do
    TGV_GEMM_LIBRARY=$(lib_of $L) PYTHONPATH=$c/python timeout 150 python3 bench/experiments/isolated.py \
      --shapes $S --m 1,16 --splits 1,2,4,8 --replays 5 --csv $o/iso-$L.csv > $o/iso-$L.log 2>&1
    echo "isolated $L rc=$?"
  done
  for L in A B; do
    TGV_GEMM_LIBRARY=$(lib_of $L) PYTHONPATH=$c/python timeout 150 python3 bench/python/corpus_bench.py \
      --tgv-bench $(bench_of $L) --csv $o/corpus-b2b-$L.csv > $o/corpus-b2b-$L.log 2>&1
    echo "corpus $L rc=$?"; grep -E "^\| (auto|cublas|tgv) " $o/corpus-b2b-$L.log | head -3
  done
fi
tar czf $OUT/r.tgz -C $o .

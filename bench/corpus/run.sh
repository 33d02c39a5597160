#!/usr/bin/env bash
# The corpus runs of docs/PERFORMANCE.md ("The shape corpus"), ON the device machine
# from the repo root, against the folder scripts/build-gpu.sh stages:
#   bench/corpus/run.sh [folder]        (default build-gpu/carry)
# Both untuned: TGV_TUNING_FILE names a file that does not exist. Switches:
#   CPP=0|1 [1]  tgv-bench over the corpus (tgv, auto, cuBLASLt, both floors; ~4-6 min)
#   PY=0|1 [1]   bench/python/corpus_bench.py (auto, cublas, tgv, F.linear; ~2-3 min)
#   QUICK=0|1 [0] the Python bench on its 40-shape subset (under a minute)
#   MS (default 1,2,4,8,16,32,64,128)
# Writes to $OUT (a temp folder if unset) at most 7 files; exits non-zero if a run failed.
set -uo pipefail
dir=$(cd "${1:-build-gpu/carry}" && pwd) || exit 2
out=${OUT:-$(mktemp -d)}
ms=${MS:-1,2,4,8,16,32,64,128}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
untuned=$(mktemp -d)/no-such-tuning.json
status=0
nvidia-smi -L
if [ "${CPP:-1}" = 1 ]; then
  echo "=== tgv-bench corpus (untuned: TGV_TUNING_FILE=$untuned)"
  start=$SECONDS
  TGV_TUNING_FILE=$untuned "$dir/tgv-bench" --shapes bench/corpus/decode.shapes --m "$ms" \
    --backend tgv,auto,cublas --csv "$out/corpus.csv" --json "$out/corpus.json" > "$out/corpus.txt" 2> "$out/corpus.err"
  rc=$?
  echo "exit $rc after $((SECONDS - start)) s"; tail -3 "$out/corpus.err"
  [ "$rc" -eq 0 ] || status=1
  python3 scripts/perf_table.py --corpus "$out/corpus.csv" > "$out/corpus-summary.md" && cat "$out/corpus-summary.md"
fi
if [ "${PY:-1}" = 1 ]; then
  echo "=== corpus_bench.py"
  start=$SECONDS
  quick=()
  [ "${QUICK:-0}" = 1 ] && quick=(--quick)
  TGV_GEMM_LIBRARY="$dir/libtgv_gemm.so" PYTHONPATH="$PWD/python" \
    python3 bench/python/corpus_bench.py ${quick[@]+"${quick[@]}"} --m ${ms//,/ } --tgv-bench "$dir/tgv-bench" \
    --csv "$out/corpus_py.csv" > "$out/corpus_py.md"
  rc=$?
  echo "exit $rc after $((SECONDS - start)) s"
  cat "$out/corpus_py.md"
  [ "$rc" -eq 0 ] || status=1
fi
exit $status

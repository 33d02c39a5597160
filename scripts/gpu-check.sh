#!/usr/bin/env bash
# Step 2 of the GPU round trip, run ON the device machine:
#   build-gpu/carry/gpu-check.sh          (the staged copy: uses only its own folder)
#   scripts/gpu-check.sh [folder]         (default build-gpu/carry, staged by scripts/build-gpu.sh)
# Steps can be turned off or on for a short round trip (default in brackets):
#   BENCH=0|1 [1]  the full tgv-bench table;  PYTEST=0|1 [1]  the Python tests;
#   HOST_TESTS=0|1 [1 where staged]  the host tests (CI runs them too; build-gpu.sh stages
#                 them with HOST_TESTS=1 only: with them the carry is past the tool's 64 MiB);
#   SANITIZE=0|1 [0]  compute-sanitizer memcheck, racecheck, synccheck on a subset;
#   TUNE=0|1 [0]  tgv-bench --tune over the default shapes into $OUT/tuning.json, which
#                 the bench step then loads (TGV_TUNING_FILE): the table shows tuned choices
#   GTEST_FILTER   restricts the GPU tests (gtest's own variable)
#   TESTS=0|1 [1]  the GPU tests, the example and the SASS census (0: a performance-only call)
#   PERF=0|1 [0]   from the repository root: the untuned corpus bench against torch
#                  (bench/python/corpus_bench.py, ~1 min), the same with each call between
#                  other kernels (--isolated, as inside a model, ~1.5 min), the end-to-end decode step
#                  (bench/python/e2e_decode.py --quick, ~3 min), tgv-bench --mode chain and
#                  bench/experiments/cublas_vs_torch.py; results in $OUT
#   SWEEP=0|1 [0]  from the repository root: every candidate (split 1, 2, 4; deepest ring and 6
#                  stages) back to back and between spacer kernels over the corpus's weights of
#                  >= 4 MB at M = 1 and 16 (bench/experiments/isolated.py --corpus, ~4 min), the data
#                  to fit the cost model to both arrangements (perf-notes §22): $OUT/stage-sweep.csv.gz
# Runs every step even when one fails; logs go to $OUT (a temp folder if unset),
# at most 8 files per step set (the device tool's limit: with TESTS=1 and PERF=1 together
# there are 11, so send OUT elsewhere and tar it into $OUT, as the 2026-12-03 afternoon run
# did); exits non-zero if any step failed.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ -x "$here/bin/tgv_gpu_tests" ]; then
  default=$here  # this is the staged copy
else
  default=build-gpu/carry
fi
dir=$(cd "${1:-$default}" && pwd) || { echo "gpu-check: no staged folder ${1:-$default}"; exit 1; }
bin=$dir/bin
logs=${OUT:-$(mktemp -d)}
mkdir -p "$logs"
failed=()
# The programs carry an $ORIGIN rpath (build-gpu.sh); the path is for a folder staged otherwise.
export LD_LIBRARY_PATH=$bin:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}

step() {  # step NAME COMMAND...
  local name=$1
  shift
  echo "=== $name: $*"
  "$@" > "$logs/$name.log" 2>&1
  local rc=$?
  tail -4 "$logs/$name.log"
  [ "$rc" -eq 0 ] || { echo "=== $name FAILED (exit $rc)"; failed+=("$name"); }
}

nvidia-smi -L
if [ "${TESTS:-1}" = 1 ]; then
step gpu-tests "$bin/tgv_gpu_tests"
# On the device machine a GPU suite that skipped everything found no GPU: a failure.
if grep -q '^\[  PASSED  \] 0 tests' "$logs/gpu-tests.log"; then
  echo "=== gpu-tests: every test skipped (no CUDA device visible)"
  failed+=(gpu-tests-skipped)
fi
# Each skip must be one this device cannot run, and say why (issue 12): list them.
ran_skip='^\[  SKIPPED \] .* ([0-9]* ms)$'
skipped=$(grep -c "$ran_skip" "$logs/gpu-tests.log")
echo "=== gpu-tests: $skipped skipped; their reasons (numbers as N):"
grep -B1 "$ran_skip" "$logs/gpu-tests.log" | grep -v '^\[  SKIPPED \]\|^--$' | sed 's/[0-9]\+/N/g' | sort | uniq -c |
  sort -rn | head -20
step example "$bin/decode_gemm" 4 4096 8
fi
host_default=0; [ -x "$bin/tgv_host_tests" ] && host_default=1
if [ "${HOST_TESTS:-$host_default}" = 1 ]; then
  step host-tests env -u GTEST_FILTER "$bin/tgv_host_tests" --gtest_brief=1
fi
if [ "${SANITIZE:-0}" = 1 ]; then
  # A tactic, split-K 4 and 16 (the pushed and the pulled DSMEM reductions), stream-K (its fix-up through
  # global memory, many partials per tile; a staged token tile), the PDL
  # ordering test, the epilogues on a one- and a two-consumer tactic
  # (direct and staged stores), and a grid wide enough to be paced.
  subset='*TgvTactic*/0:*TgvSplitK*/3:*TgvSplitK*/6:*TgvStreamK.*m8_n128_k16384*:*TgvStreamK.*m33_n200*:*TgvStreamKTactic*/5'
  subset+=':Sm90/EpilogueStreamK.*m33_n1040*:*Pdl.Activation*:Sm90/EpilogueTactics.*_t5_*:Sm90/EpilogueTactics.*_t11_*:EpiloguePdl.*'
  subset+=':*TgvPaced*/0'  # the paced W producer and its pace barrier (perf-notes §21)
  subset+=':*TgvKGroups*/0:*TgvKGroups*/6'  # two K groups of one and of two row groups (perf-notes §25)
  # racecheck leaves out EpiloguePdl: where auto hands its 4096x8192 M = 8 GEMM to
  # cuBLASLt (an H100 does) racecheck reports hazards inside NVIDIA's own split-K
  # kernel (nvjet_*; 2026-12-05: 21, none in ours), which this project can neither
  # see into nor fix; and racecheck's --kernel-name-exclude (tried for nvjet)
  # makes the sanitizer fail on every kernel ("failed to handle a hardware
  # exception", compute-sanitizer of CUDA 13.0 on an H100, 2026-12-05).
  # memcheck and synccheck still run it. racecheck also hangs on the split-K peers'
  # pushed partial sums (st.async remote stores; passes without the sanitizer, and
  # under memcheck and synccheck), so it runs every split-K cluster through the
  # pulled reduction (TGV_SPLIT_K_PULL=1), whose DSMEM reads it can check.
  for tool in memcheck racecheck synccheck; do
    tool_subset=$subset pull=0
    [ "$tool" = racecheck ] && tool_subset=${subset/:EpiloguePdl.\*/} pull=1
    step "sanitize-$tool" env -u GTEST_FILTER TGV_SPLIT_K_PULL=$pull compute-sanitizer --tool "$tool" --error-exitcode 1 \
      "$bin/tgv_gpu_tests" --gtest_filter="$tool_subset"
  done
fi
if [ "${TUNE:-0}" = 1 ]; then
  step tune "$bin/tgv-bench" --tune "$logs/tuning.json"
  export TGV_TUNING_FILE="$logs/tuning.json"
fi
if [ "${BENCH:-1}" = 1 ]; then
  step bench "$bin/tgv-bench" --backend tgv,auto,cublas --host-overhead --csv "$logs/bench.csv"
fi
if [ "${PYTEST:-1}" = 1 ]; then
  step pytest env TGV_GEMM_LIBRARY="$bin/libtgv_gemm.so" PYTHONPATH="$dir/python" \
    python3 -m pytest "$dir/tests/python" -q -p no:cacheprovider -rs
fi
if [ "${PERF:-0}" = 1 ]; then
  py=(env TGV_GEMM_LIBRARY="$bin/libtgv_gemm.so" PYTHONPATH="$dir/python" PYTHONUNBUFFERED=1)
  untuned=$(mktemp -d)/no-such-tuning.json
  step corpus env TGV_TUNING_FILE="$untuned" "${py[@]}" python3 bench/python/corpus_bench.py \
    --tgv-bench "$bin/tgv-bench" --csv "$logs/corpus_py.csv"
  step corpus-isolated env TGV_TUNING_FILE="$untuned" "${py[@]}" python3 bench/python/corpus_bench.py \
    --tgv-bench "$bin/tgv-bench" --isolated --csv "$logs/corpus_isolated.csv"
  step e2e "${py[@]}" python3 bench/python/e2e_decode.py --quick --csv "$logs/e2e_decode.csv"
  step chain env TGV_TUNING_FILE="$untuned" "$bin/tgv-bench" --mode chain --m 1,4,16
  step cublas-vs-torch "${py[@]}" python3 bench/experiments/cublas_vs_torch.py
fi
if [ "${SWEEP:-0}" = 1 ]; then
  step sweep env TGV_GEMM_LIBRARY="$bin/libtgv_gemm.so" PYTHONPATH="$dir/python" PYTHONUNBUFFERED=1 \
    python3 bench/experiments/isolated.py --corpus bench/corpus/decode.shapes --min-mb 4 --stages 0,6 \
    --splits 1,2,4 --m 1,16 --replays 3 --csv "$logs/stage-sweep.csv"
  gzip -f "$logs/stage-sweep.csv"
fi
if [ "${TESTS:-1}" = 1 ]; then
cuobjdump --dump-sass "$bin/tgv-bench" |
  grep -oE "HGMMA\.[0-9x]+\.[A-Z0-9.]+|UTMALDG\.[0-9]D|ACQBULK|PREEXIT|SETMAXREG\.[A-Z.]+|UCGABAR_[A-Z]+|ATOMG\.[A-Z0-9.]+" |
  sort | uniq -c > "$logs/sass.txt"
echo "=== sass (HGMMA, TMA loads, griddepcontrol.wait = ACQBULK, launch_dependents = PREEXIT, stream-K's counter = ATOMG):"
cat "$logs/sass.txt"
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "gpu-check: FAILED: ${failed[*]}"
  exit 1
fi
echo "gpu-check: all steps passed"

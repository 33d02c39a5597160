#!/usr/bin/env bash
# Step 2 of the GPU round trip, run ON the device machine from the repo root:
#   scripts/gpu-check.sh [build-folder]     (default build-gpu, prebuilt by scripts/build-gpu.sh)
# Runs every step even when one fails; logs go to $OUT (a temp folder if unset); exits
# non-zero if any step failed.
set -uo pipefail
build=${1:-build-gpu}
logs=${OUT:-$(mktemp -d)}
failed=()

step() {  # step NAME COMMAND...
  local name=$1
  shift
  echo "=== $name: $*"
  "$@" 2>&1 | tee "$logs/$name.log"
  local rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || { echo "=== $name FAILED (exit $rc)"; failed+=("$name"); }
}

step gpu nvidia-smi -L
step gpu-tests "$build/tests/tgv_gpu_tests" --gtest_brief=1
# On the device machine a GPU suite that skipped everything found no GPU: a failure.
if grep -q '^\[  PASSED  \] 0 tests' "$logs/gpu-tests.log"; then
  echo "=== gpu-tests: every test skipped (no CUDA device visible)"
  failed+=(gpu-tests-skipped)
fi
step host-tests "$build/tests/tgv_host_tests" --gtest_brief=1
if [ -x "$build/bench/tgv-bench" ]; then
  step bench "$build/bench/tgv-bench" --m 1,8,64 --reps 7
else
  echo "=== bench: $build/bench/tgv-bench missing, skipped"
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "gpu-check: FAILED: ${failed[*]}"
  exit 1
fi
echo "gpu-check: all steps passed"

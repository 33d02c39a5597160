#!/usr/bin/env bash
# Builds everything and runs the tests: the README's test command.
# Without a GPU the tests labelled `gpu` report as skipped.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${TGV_BUILD_DIR:-build}
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" -j "$(nproc)"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)"

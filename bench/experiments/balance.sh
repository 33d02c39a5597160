#!/usr/bin/env bash
# Builds balance (bench/experiments/balance.cu, perf-notes §54) here into
# build-gpu/carry/bin; run it on the device: PART=48 bash bench/experiments/h200-round.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p build-gpu/carry/bin
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/experiments/balance.cu \
  -o build-gpu/carry/bin/balance
echo "built build-gpu/carry/bin/balance"

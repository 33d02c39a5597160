#!/usr/bin/env bash
# Builds row-segments (bench/experiments/row_segments.cu, perf-notes §37) here into
# build-gpu/carry/bin; run it on the device: PART=9 bash bench/experiments/h200-round.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p build-gpu/carry/bin
nvcc -O3 -std=c++17 -gencode=arch=compute_90a,code=sm_90a bench/experiments/row_segments.cu \
  -o build-gpu/carry/bin/row-segments
echo "built build-gpu/carry/bin/row-segments"

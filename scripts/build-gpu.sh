#!/usr/bin/env bash
# Step 1 of the GPU round trip, run here: builds an sm_90a-only tree in
# build-gpu/ for the H200. Step 2 runs on the device machine, carrying
# build-gpu: `scripts/gpu-check.sh build-gpu` (see docs/gpu-roundtrip.md).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DTGV_CUDA_ARCHS=90a
cmake --build build-gpu -j "$(nproc)"
du -sh build-gpu

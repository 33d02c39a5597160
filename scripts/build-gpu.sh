#!/usr/bin/env bash
# Step 1 of the GPU round trip, run here: builds an sm_90a-only tree in build-gpu/
# and stages what the device machine runs in build-gpu/carry (under the device
# tool's 64 MiB: the test and bench binaries each embed every kernel). Step 2
# runs there: carry "build-gpu/carry", command `scripts/gpu-check.sh`
# (docs/gpu-roundtrip.md).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DTGV_CUDA_ARCHS=90a
cmake --build build-gpu -j "$(nproc)"
rm -rf build-gpu/carry
mkdir -p build-gpu/carry
cp build-gpu/tests/tgv_gpu_tests build-gpu/tests/tgv_host_tests build-gpu/bench/tgv-bench build-gpu/libtgv_gemm.so \
  build-gpu/examples/decode_gemm build-gpu/carry/
du -sh build-gpu/carry

#!/usr/bin/env bash
# Builds tgv-trace (bench/experiments/trace.cu) here, into build-gpu/carry, so it
# travels with the GPU round trip. Not part of the CMake build on purpose: the
# trace points must never reach the library. Needs build-gpu configured (the
# generated tgv/version.h).
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p build-gpu/carry
nvcc -std=c++17 -O3 -DNDEBUG --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a \
  -Isrc -Iinclude -Ibuild-gpu/generated/include -isystem deps/cutlass/include \
  bench/experiments/trace.cu src/launch/tensor_map.cpp src/common/cuda_context.cpp src/tactics/tactics.cpp -lcuda -o build-gpu/carry/tgv-trace
# The same at 128 x 128 (two row groups: the per-SM rate of perf-notes §25).
nvcc -std=c++17 -O3 -DNDEBUG -DTRACE_CTA_M=128 --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a \
  -Isrc -Iinclude -Ibuild-gpu/generated/include -isystem deps/cutlass/include \
  bench/experiments/trace.cu src/launch/tensor_map.cpp src/common/cuda_context.cpp src/tactics/tactics.cpp -lcuda -o build-gpu/carry/tgv-trace-128

#!/usr/bin/env bash
# Builds tgv-layer-trace (bench/experiments/layer_trace.cu, perf-notes §57) here,
# into build-gpu/carry/bin, against build-gpu's static library (run
# scripts/build-gpu.sh first). The binary holds every kernel of the library: carry
# it alone (`build-gpu/carry/bin/tgv-layer-trace`), the whole carry with it is
# past the device tool's 64 MiB. Run on the device: PART=52 bash
# bench/experiments/h200-round.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p build-gpu/carry/bin
nvcc -std=c++17 -O3 -DNDEBUG --expt-relaxed-constexpr -gencode=arch=compute_90a,code=sm_90a \
  -Isrc -Iinclude -Ibuild-gpu/generated/include -isystem deps/cutlass/include \
  bench/experiments/layer_trace.cu build-gpu/libtgv_gemm_static.a -lcublasLt -lcublas -lcuda \
  -o build-gpu/carry/bin/tgv-layer-trace
echo "built build-gpu/carry/bin/tgv-layer-trace"

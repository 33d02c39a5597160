#!/usr/bin/env bash
# Step 1 of the GPU round trip, run here: builds an sm_90a-only tree in build-gpu/
# and stages in build-gpu/carry everything the device machine runs, so that the
# folder alone is enough (docs/gpu-roundtrip.md):
#   bin/     tgv_gpu_tests, tgv-bench, decode_gemm, libtgv_gemm.so (the programs
#            find the library next to them: $ORIGIN rpath); tgv_host_tests only with
#            HOST_TESTS=1 (CI runs them; with them the carry is past the tool's limit)
#   python/tgv_gemm, tests/python, include/tgv: the Python package, its tests and
#            the header the struct-layout test reads, in the repository's layout
#   gpu-check.sh: step 2, run there as `build-gpu/carry/gpu-check.sh`
# Under the device tool's 64 MiB (the test and bench binaries each embed every
# kernel): the script fails past 60 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DTGV_CUDA_ARCHS=90a '-DCMAKE_BUILD_RPATH=$ORIGIN'
cmake --build build-gpu -j "$(nproc)"
carry=build-gpu/carry
rm -rf "$carry"
mkdir -p "$carry/bin" "$carry/python" "$carry/tests" "$carry/include"
cp build-gpu/tests/tgv_gpu_tests build-gpu/bench/tgv-bench build-gpu/libtgv_gemm.so \
  build-gpu/examples/decode_gemm "$carry/bin/"
if [ "${HOST_TESTS:-0}" = 1 ]; then cp build-gpu/tests/tgv_host_tests "$carry/bin/"; fi
cp -r python/tgv_gemm "$carry/python/"
cp -r tests/python "$carry/tests/"
cp -r include/tgv "$carry/include/"
cp scripts/gpu-check.sh "$carry/"
find "$carry" -name __pycache__ -prune -exec rm -rf {} +
size_kib=$(du -sk "$carry" | cut -f1)
echo "staged $carry: $((size_kib / 1024)) MiB"
if [ "$size_kib" -gt $((60 * 1024)) ]; then
  echo "build-gpu.sh: $carry is over 60 MiB: the device tool carries at most 64 MiB with the repository" >&2
  exit 1
fi

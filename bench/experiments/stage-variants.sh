#!/usr/bin/env bash
# Stages variant builds for bench/experiments/model-chain-ab.sh: for each
# NAME=FILE argument, src/plan/cost_model.cpp is replaced by FILE (a path, or
# REV:src/plan/cost_model.cpp for a committed version; src/plan/cost_model.cpp
# itself is the working tree's), the library and
# tgv-bench are rebuilt in build-gpu/, and both are copied to NAME/; the
# originals are restored and rebuilt at the end. The variants go into
# build-gpu/carry/var.tgz (after scripts/build-gpu.sh, which clears the folder).
#   bench/experiments/stage-variants.sh L1=aa4e3cf:src/plan/cost_model.cpp L2=/tmp/cost_model.cpp
set -euo pipefail
cd "$(dirname "$0")/../.."
[ -d build-gpu/carry ] || { echo "stage-variants: run scripts/build-gpu.sh first" >&2; exit 1; }
model=src/plan/cost_model.cpp
work=$(mktemp -d)
cp "$model" "$work/original.cpp"
restore() { cp "$work/original.cpp" "$model"; ninja -C build-gpu tgv_gemm tgv-bench > /dev/null; }
trap restore EXIT
for arg in "$@"; do
  name=${arg%%=*} src=${arg#*=}
  case $src in
    *:*) git show "$src" > "$model" ;;
    "$model" | "./$model") cp "$work/original.cpp" "$model" ;;  # the working tree's own
    *) cp "$src" "$model" ;;
  esac
  ninja -C build-gpu tgv_gemm tgv-bench > /dev/null
  mkdir -p "$work/var/$name"
  cp build-gpu/libtgv_gemm.so build-gpu/bench/tgv-bench "$work/var/$name/"
  echo "staged $name from $src"
done
tar czf build-gpu/carry/var.tgz -C "$work/var" .
echo "build-gpu/carry/var.tgz: $(du -h build-gpu/carry/var.tgz | cut -f1) (the carry's limit is 64 MiB in all)"

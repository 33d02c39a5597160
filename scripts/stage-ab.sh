#!/usr/bin/env bash
# Stages an A/B device call (h200-round.sh PART=3 / 6, the chain and corpus of
# two builds in one session), run here: A = the working tree as it is, B = the
# same with PATCH applied (git apply). Leaves build-gpu/carry holding B's
# programs and A's tgv-bench and libtgv_gemm.so in var.tgz as A/ (the host
# tests stay out, as build-gpu.sh leaves them), and the tree as it was.
#   scripts/stage-ab.sh bench/experiments/k-rotate.patch
# Then, for example: run `MORE=1 PART=19 bash bench/experiments/h200-round.sh`
# (B under the replay stress) and `ROUNDS=1 PART=6 ...` (chain A B, corpus B A).
set -euo pipefail
cd "$(dirname "$0")/.."
patch=${1:?usage: scripts/stage-ab.sh PATCH}
git apply --check "$patch"
c=build-gpu/carry
bash scripts/build-gpu.sh
tmp=$(mktemp -d)
mkdir -p "$tmp/A"
cp $c/bin/tgv-bench $c/bin/libtgv_gemm.so "$tmp/A/"
git apply "$patch"
trap 'git apply -R "$patch"' EXIT
bash scripts/build-gpu.sh
tar czf $c/var.tgz -C "$tmp" A
rm -rf "$tmp"
size_kib=$(du -sk $c | cut -f1)
echo "staged $c: B = $patch, A in var.tgz; $((size_kib / 1024)) MiB"
if [ "$size_kib" -gt $((60 * 1024)) ]; then
  echo "stage-ab.sh: $c is over 60 MiB: the device tool carries at most 64 MiB" >&2
  exit 1
fi

#!/usr/bin/env bash
# The order of the global loads, global stores and wgmmas in one SM90 kernel
# instance, from its PTX: runs here, with no GPU and no cuobjdump (perf-notes §32).
# A residual epilogue whose loads sit between its stores ("ld st ld st ...") waits
# out one global round trip per register at the end of the kernel; since the
# early residual read (2026-12-06) the loads come before the main loop's wgmmas.
#   bench/experiments/ptx-epilogue-order.sh [build dir] [tile]
# build dir: a configured tree with sm_90a (default build-gpu, scripts/build-gpu.sh);
# tile: an instance of sm90_instances/ (default 64_16: 64 rows x 16 tokens).
# Prints the bf16 K-major x / K-major W entry's sequence, runs of one kind counted.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build-gpu} tile=${2:-64_16}
obj=CMakeFiles/tgv_objects.dir/sm90_instances/tile_$tile.cu.o
cmd=$(ninja -C "$build" -t commands "$obj" | tail -1)
[ -n "$cmd" ] || { echo "ptx-epilogue-order: no compile command for $obj in $build" >&2; exit 1; }
ptx=$(mktemp --suffix=.ptx)
trap 'rm -f "$ptx"' EXIT
# The object's own command, made to stop at PTX.
cmd=$(echo "$cmd" | sed -e 's# -MD -MT [^ ]* -MF [^ ]*##' -e 's# -c # -ptx #' -e "s#-o CMakeFiles[^ ]*#-o $ptx#")
(cd "$build" && eval "$cmd")
# The first entry of Traits<..., Major K, Major K, bfloat16_t> (the widest K block): its mangled
# name has "E0ELS7_0EN7cutlass10bfloat16_t".
awk '/^\.visible \.entry/ { on = !done && /E0ELS7_0EN7cutlass10bfloat16_t/; if (on) done = 1 } on' "$ptx" |
  grep -oE "(ld|st)\.global[.a-z0-9]*|wgmma\.mma_async[.a-z0-9]*" |
  awk '{ if ($0 == last) c++; else { if (last != "") printf "%4d %s\n", c, last; last = $0; c = 1 } }
       END { if (last != "") printf "%4d %s\n", c, last }'

#!/usr/bin/env bash
# Installs the CUTLASS/CuTe 4.2.0 headers into deps/cutlass/include (git-ignored).
# They come from the nvidia-cutlass==4.2.0.0 wheel, where they sit under
# cutlass_library/source/include. Idempotent: does nothing once installed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/deps/cutlass"
version=4.2.0.0
if [ -f "$dest/VERSION" ] && [ "$(cat "$dest/VERSION")" = "$version" ] && [ -f "$dest/include/cute/tensor.hpp" ]; then
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download --quiet --no-deps --only-binary=:all: "nvidia-cutlass==$version" -d "$tmp"
wheel=$(ls "$tmp"/nvidia_cutlass-*.whl)
python3 - "$wheel" "$tmp/unpacked" <<'PY'
import sys, zipfile
prefix = "cutlass_library/source/include/"
with zipfile.ZipFile(sys.argv[1]) as z:
    names = [n for n in z.namelist() if n.startswith(prefix) and not n.endswith("/")]
    if not names:
        sys.exit("nvidia-cutlass wheel has no headers under " + prefix)
    for n in names:
        z.extract(n, sys.argv[2])
PY
rm -rf "$dest"
mkdir -p "$dest"
mv "$tmp/unpacked/cutlass_library/source/include" "$dest/include"
echo "$version" > "$dest/VERSION"
echo "setup-deps: CUTLASS/CuTe $version headers in $dest/include"

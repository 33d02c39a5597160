#!/usr/bin/env bash
# Installs the CUTLASS/CuTe 4.2.0 headers into deps/cutlass/include (git-ignored).
# They come from the nvidia-cutlass==4.2.0.0 wheel, where they sit under
# cutlass_library/source/include. Idempotent: does nothing once installed.
#
# The wheel is fetched from PyPI with the Python standard library alone (a pip
# build-isolation environment has python3 but no pip) and checked against the
# sha256 PyPI lists. Offline: TGV_CUTLASS_WHEEL=/path/to/the.whl.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/deps/cutlass"
version=4.2.0.0
if [ -f "$dest/VERSION" ] && [ "$(cat "$dest/VERSION")" = "$version" ] && [ -f "$dest/include/cute/tensor.hpp" ]; then
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 - "$version" "$tmp" "${TGV_CUTLASS_WHEEL:-}" <<'PY'
import hashlib, json, os, sys, urllib.request, zipfile

version, tmp, local = sys.argv[1], sys.argv[2], sys.argv[3]
if local:
    wheel = local
else:
    # PyPI's simple index (PEP 691 JSON): the one API every mirror serves.
    index = urllib.request.Request("https://pypi.org/simple/nvidia-cutlass/",
                                   headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(index, timeout=60) as r:
        files = json.load(r)["files"]
    name = f"nvidia_cutlass-{version}-py3-none-any.whl"
    pick = [f for f in files if f["filename"] == name]
    if not pick:
        sys.exit(f"setup-deps: {name} is not on PyPI's index")
    wheel = os.path.join(tmp, name)
    with urllib.request.urlopen(pick[0]["url"], timeout=300) as r, open(wheel, "wb") as out:
        out.write(r.read())
    digest = hashlib.sha256(open(wheel, "rb").read()).hexdigest()
    if digest != pick[0]["hashes"]["sha256"]:
        sys.exit(f"setup-deps: sha256 mismatch for {name}")
prefix = "cutlass_library/source/include/"
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if n.startswith(prefix) and not n.endswith("/")]
    if not names:
        sys.exit("setup-deps: the nvidia-cutlass wheel has no headers under " + prefix)
    for n in names:
        z.extract(n, os.path.join(tmp, "unpacked"))
PY
rm -rf "$dest"
mkdir -p "$dest"
mv "$tmp/unpacked/cutlass_library/source/include" "$dest/include"
echo "$version" > "$dest/VERSION"
echo "setup-deps: CUTLASS/CuTe $version headers in $dest/include"

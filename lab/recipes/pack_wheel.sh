#!/usr/bin/env bash
# Pack large wheels for the trip to the GPU machine: a wheel is a zip (deflate); its files
# as tar.xz are about a third smaller (llvmlite 0.47.0: 56 -> 37 MB; numba-cuda-mlir 0.6.0:
# 71 -> 50 MB), which decides how many 64 MiB calls the staging takes.
# `bash lab/recipes/setup_env.sh stage` zips them back into the wheel (pip installs it as usual).
#
#   bash lab/recipes/pack_wheel.sh OUT_DIR WHEEL...     -> OUT_DIR/<wheel file name>.txz
. "$(dirname "${BASH_SOURCE[0]}")/settings.sh"
set -euo pipefail
out=${1:?usage: bash lab/recipes/pack_wheel.sh OUT_DIR WHEEL...}; shift
mkdir -p "$out"
for whl in "$@"; do
    name=$(basename "$whl")
    tmp=$(mktemp -d)
    unzip -q "$whl" -d "$tmp"
    tar -C "$tmp" -cf - . | xz -T0 -9 > "$out/$name.txz"
    rm -rf "$tmp"
    echo "$out/$name.txz: $(du -h "$out/$name.txz" | cut -f1) (wheel $(du -h "$whl" | cut -f1))"
done

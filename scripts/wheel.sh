#!/usr/bin/env bash
# Build the `nzfs` wheel (issue #32): the nzfs binary (default features:
# remote, icechunk, zfp) as the wheel's script, and the Python API of
# src/python/nzfs, for manylinux_2_17 on x86_64 (glibc 2.17, 2012: CentOS 7
# and anything newer), cross-linked by zig against that glibc.
#   bash scripts/wheel.sh        -> target/wheels/nzfs-VERSION-py3-none-manylinux_2_17_x86_64.whl
# Tools (maturin, ziglang, auditwheel; pinned in scripts/wheel-requirements.txt)
# go into .venv-wheel (or $NZFS_WHEEL_VENV). Building needs what the crate
# needs (scripts/setup.sh: a C compiler for blosc and zfp, libclang for
# zfp's bindings). Prints the wheel's path last.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${NZFS_WHEEL_VENV:-.venv-wheel}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q -r scripts/wheel-requirements.txt
venv=$(cd "$venv" && pwd)
export PATH="$venv/bin:$PATH"
rm -f target/wheels/nzfs-*.whl
start=$(date +%s)
# zig links against glibc 2.17's symbols; --locked: Cargo.lock as committed.
(cd src/python && maturin build --release --locked --zig --compatibility manylinux_2_17 \
  --target x86_64-unknown-linux-gnu --out ../../target/wheels >&2)
wheel=$(ls target/wheels/nzfs-*.whl)
echo "wheel: built in $(( $(date +%s) - start )) s, $(du -k "$wheel" | cut -f1) KiB" >&2
auditwheel show "$wheel" >&2
echo "$wheel"

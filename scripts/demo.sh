#!/usr/bin/env bash
# Build nzfs, mount the bundled sample NZ dataset, show its tree, a header
# and a chunk, then unmount. Usage: scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --locked --quiet
mp=$(mktemp -d /tmp/nzfs-demo.XXXXXX)
trap './target/release/nzfs unmount "$mp" 2>/dev/null || true; rmdir "$mp"' EXIT
./target/release/nzfs mount tests/data/sample.zarr "$mp"
echo; echo "== the tree (ls -lR $mp, first lines)"
ls -lR "$mp" | head -n 30
echo; echo "== $mp/header.cdl"
cat "$mp/header.cdl"
echo; echo "== first 7 floats of $mp/t2m/0.0.0.bin (time 0, lat 0, lon 0..6; -9999 is _FillValue)"
od -A d -t f4 -N 28 "$mp/t2m/0.0.0.bin"

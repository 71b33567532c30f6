#!/usr/bin/env bash
# Build nzfs, mount the bundled sample NZ dataset, show its tree, a header
# and a chunk, then unmount. Usage: scripts/demo.sh
#
# The sample is local, so the demo builds the light local-only binary
# (--no-default-features: no object storage, Icechunk or zfp; issue #34: the
# full build's three cloud SDKs made the first mount wait minutes) into
# target/demo; `cargo build --release` builds the full one when needed.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --demo
start=$(date +%s)
echo "demo: building nzfs (local stores only) into target/demo: about 3 minutes on 2 cores the first time, seconds after; cargo shows its progress"
# No --quiet: a build of minutes shows what it is doing.
cargo build --release --locked --no-default-features --target-dir target/demo
nzfs=./target/demo/release/nzfs
echo "demo: built $($nzfs --version) in $(( $(date +%s) - start )) s"
mp=$(mktemp -d /tmp/nzfs-demo.XXXXXX)
trap '"$nzfs" unmount "$mp" 2>/dev/null || true; rmdir "$mp"' EXIT
"$nzfs" mount tests/data/sample.zarr "$mp"
echo; echo "== the tree: $mp and each array directory (ls -l)"
for d in "$mp" "$mp"/*/; do
  echo "-- $d"
  ls -l "$d"
done
echo; echo "== $mp/header.cdl"
cat "$mp/header.cdl"
echo; echo "== first 7 floats of $mp/t2m/0.0.0.bin (time 0, lat 0, lon 0..6)"
od -A d -t f4 -N 28 "$mp/t2m/0.0.0.bin"
cat <<'TEXT'

-9999 above is t2m's _FillValue: xarray wrote missing values into the data
as -9999, the CF missing value netCDF tools look for. The Zarr fill_value in
the header's guide is NaN: what a chunk absent from the store reads as.
Both are in header.cdl; only _FillValue marks missing data in the files.
TEXT

echo "demo: the binary is $nzfs (local stores only). For the full one (object"
echo "storage, Icechunk, zfp) on your PATH: cargo install --locked --path .  (it goes to"
echo "~/.cargo/bin/nzfs, which rustup put on PATH); scripts/test.sh builds target/debug/nzfs."

#!/usr/bin/env bash
# Build nzfs (release), set up a venv with zarr-python, tensorstore and
# zstandard, and run the benchmark. Extra arguments go to scripts/bench.py
# (e.g. --size-mib 512 --repeat 3). Needs ~2 GiB of disk under --workdir
# (default /tmp/nzfs-bench) and root (or fuse) to mount.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --locked --quiet
venv=${NZFS_VENV:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q -r scripts/requirements.txt -r scripts/bench-requirements.txt
exec "$venv/bin/python" scripts/bench.py "$@"

#!/usr/bin/env bash
# Build nzfs (release), set up a venv with zarr-python, tensorstore and
# zstandard, and run the benchmark. Extra arguments go to scripts/bench.py
# (e.g. --size-mib 512 --repeat 3). With --remote first, run the remote
# benchmark instead (scripts/bench_remote.py: moto + a latency proxy); with
# --refs, the reference-set benchmark (scripts/bench_refs.py: kerchunk sets
# vs xarray through fsspec, local and on moto, in a Python 3.12 venv,
# .venv-kerchunk). Needs ~2 GiB of disk under --workdir
# (default /tmp/nzfs-bench) and root (or fuse) to mount.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cargo build --release --locked --quiet
if [ "${1:-}" = "--refs" ]; then
    shift
    venv=$(NZFS_VENV312=${NZFS_REFS_VENV:-.venv-kerchunk} NZFS_REQUIREMENTS=scripts/requirements-kerchunk.txt \
        bash scripts/setup_2026.sh)
    exec "$venv/bin/python" scripts/bench_refs.py "$@"
fi
venv=${NZFS_VENV:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q -r scripts/requirements.txt -r scripts/bench-requirements.txt
if [ "${1:-}" = "--remote" ]; then
    shift
    "$venv/bin/pip" install -q -r scripts/servers-requirements.txt
    exec "$venv/bin/python" scripts/bench_remote.py "$@"
fi
exec "$venv/bin/python" scripts/bench.py "$@"

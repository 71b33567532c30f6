#!/usr/bin/env bash
# Build nzfs (release), set up the venv the benchmark needs, and run it:
#   bash scripts/bench.sh [WHAT] [options]
# WHAT is one of scripts/bench/__main__.py's (default: local, the main
# table: nzfs beside zarr-python and tensorstore); the options are its
# (`bash scripts/bench.sh local --help`), e.g. --size-mib 512 --repeat 3.
# remote adds moto to the venv; refs runs in a Python 3.12 venv
# (.venv-kerchunk) with kerchunk and xarray. Needs ~2 GiB of disk under
# --workdir (default /tmp/nzfs-bench) and root (or fuse) to mount.
set -euo pipefail
cd "$(dirname "$0")/.."
what=local
case "${1:-}" in
    local|disk|hierarchy|cores|remote|refs|probe|write|commit) what=$1; shift ;;
esac
bash scripts/setup.sh
cargo build --release --locked --quiet
if [ "$what" = refs ]; then
    venv=$(NZFS_VENV312=${NZFS_REFS_VENV:-.venv-kerchunk} NZFS_REQUIREMENTS=scripts/requirements-kerchunk.txt \
        bash scripts/setup_2026.sh)
    exec "$venv/bin/python" scripts/bench refs "$@"
fi
venv=${NZFS_VENV:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q -r scripts/requirements.txt -r scripts/bench-requirements.txt
if [ "$what" = remote ]; then
    "$venv/bin/pip" install -q -r scripts/servers-requirements.txt
fi
exec "$venv/bin/python" scripts/bench "$what" "$@"

#!/usr/bin/env bash
# Regenerate the fixtures with the pinned zarr-python/xarray into a temporary
# directory and check that the committed ones match: every decoded array and
# every metadata document. (Compressed chunk bytes are not compared: gzip
# stamps the time into its header.)
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${NZFS_VENV:-.venv}
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install -q -r scripts/requirements.txt
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$venv/bin/python" scripts/make_fixtures.py "$out" >/dev/null
"$venv/bin/python" scripts/fixtures_living.py "$out/living" >/dev/null
# The formats of 2026 need zarr-python 3.4, which needs Python 3.12.
venv312=$(bash scripts/setup_2026.sh)
"$venv312/bin/python" scripts/fixtures_2026.py "$out" >/dev/null
# What zarr-python 2.18 writes (numcodecs 0.15; its own venv).
venv218=${NZFS_VENV218:-.venv218}
[ -x "$venv218/bin/python" ] || python3 -m venv "$venv218"
"$venv218/bin/pip" install -q -r scripts/requirements-zarr218.txt
"$venv218/bin/python" scripts/fixtures_zarr218.py "$out/zarr218" >/dev/null
diff -r tests/data/expected "$out/expected"
diff -r tests/data/zarr218/expected "$out/zarr218/expected"
diff -r tests/data/expected_2026 "$out/expected_2026"
diff -r tests/data/living/expected "$out/living/expected"
# (kerchunk/ comes from scripts/fixtures_kerchunk.py, whose tools these venvs
# lack, tolerant/ from scripts/fixtures_tolerant.py, which needs npm and GDAL
# 3.6, ome/ from scripts/fixtures_ome.py, which needs ome-zarr, and orbax/
# from scripts/fixtures_orbax.py, which needs JAX and names its files at
# random.)
meta() { (cd "$1" && find . \( -path ./kerchunk -o -path ./tolerant -o -path ./ome \) -prune -o \( -name zarr.json -o -name .zarray -o -name .zgroup -o -name .zattrs -o -name .zmetadata \) -print | sort | while read -r f; do echo "== $f"; cat "$f"; echo; done); }
diff <(meta tests/data) <(meta "$out")
for nc in differential.nc nczarr_src.nc; do
  diff <(ncdump -h "tests/data/$nc" | tail -n +2) <(ncdump -h "$out/$nc" | tail -n +2)
done
cmp tests/data/icechunk/virtual-src/temp.nc "$out/icechunk/virtual-src/temp.nc"
echo "fixtures: regenerated arrays and metadata match tests/data"

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
diff -r tests/data/expected "$out/expected"
diff <(cd tests/data && find . -name zarr.json | sort | xargs cat) <(cd "$out" && find . -name zarr.json | sort | xargs cat)
diff <(ncdump -h tests/data/differential.nc | tail -n +2) <(ncdump -h "$out/differential.nc" | tail -n +2)
echo "fixtures: regenerated arrays and metadata match tests/data"

#!/usr/bin/env bash
# The venv for the formats of 2026 (issue #30): zarr-python 3.4 needs
# Python >= 3.12, which this machine has under pyenv (or as python3.12 on
# PATH). Makes .venv312 (or $NZFS_VENV312) with scripts/requirements-2026.txt
# (or $NZFS_REQUIREMENTS: scripts/bench.sh refs makes the kerchunk venv
# with it) and prints its path. Usage: bash scripts/setup_2026.sh
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${NZFS_VENV312:-.venv312}
if [ ! -x "$venv/bin/python" ]; then
  # pyenv's own interpreters first: its python3.12 shim on PATH fails
  # unless 3.12 is the selected version. Each candidate must really run.
  py=""
  for c in "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.1[23]*/bin/python python3.13 python3.12; do
    if "$c" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      py=$c
      break
    fi
  done
  if [ -z "$py" ]; then
    echo "setup_2026: no Python >= 3.12 (zarr-python 3.4 needs it): install one, e.g. pyenv install 3.12" >&2
    exit 1
  fi
  "$py" -m venv "$venv" >&2
fi
"$venv/bin/pip" install -q -r "${NZFS_REQUIREMENTS:-scripts/requirements-2026.txt}" >&2
echo "$venv"

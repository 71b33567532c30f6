#!/usr/bin/env bash
# Install the test requirements and run the whole test suite (unit, golden
# and real-mount tests). As root, the suite runs with FUSE passthrough forced
# on, then the real-mount tests run again with every read through the daemon
# (--passthrough never), so both read paths are proven. Usage: scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
if [ "$(id -u)" = 0 ]; then
    NZFS_TEST_PASSTHROUGH=always cargo test --locked
    NZFS_TEST_PASSTHROUGH=never cargo test --locked --test mount --test netcdf --test robustness --test security --test limits --test remote --test faults --test icechunk --test references --test previews --test fresh
else
    cargo test --locked
fi

#!/usr/bin/env bash
# Install the test requirements and run the whole test suite (unit, golden
# and real-mount tests). As root, the suite runs with FUSE passthrough forced
# on, then the real-mount tests run again with every read through the daemon
# (--passthrough never), so both read paths are proven. The remote tests
# run once: what they add (a store over the network) is below the read
# path, which both runs prove on local stores, and their data.bin and .nc
# reads go through the daemon either way. Usage: scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
if [ "$(id -u)" = 0 ]; then
    NZFS_TEST_PASSTHROUGH=always cargo test --locked
    NZFS_TEST_PASSTHROUGH=never cargo test --locked --test mount --test netcdf --test robustness --test security --test limits --test faults --test icechunk --test references --test previews --test fresh
else
    cargo test --locked
fi

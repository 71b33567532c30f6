#!/usr/bin/env bash
# Install the test requirements and run the whole test suite (unit, golden
# and real-mount tests). The real-mount tests of the read paths are a matrix
# inside the suite (`read_paths!` in tests/common/mount.rs): each runs
# twice, once with FUSE passthrough forced on (as root; others skip that
# half) and once with every read through the daemon, so one `cargo test`
# proves both. Usage: scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
cargo test --locked

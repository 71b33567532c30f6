#!/usr/bin/env bash
# Install the test requirements and run the whole test suite (unit, golden
# and real-mount tests). Usage: scripts/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
cargo test --locked

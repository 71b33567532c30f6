#!/usr/bin/env bash
# Run every cargo-fuzz target for a bounded time (default 60 s each).
# Usage: scripts/fuzz.sh [SECONDS] [TARGET...]
# Targets: metadata, codecs, sharding, cdl (tests/fuzz/fuzz_targets/).
# libFuzzer needs nightly-only flags; RUSTC_BOOTSTRAP=1 lets the stable
# toolchain accept them. Crashes are saved under tests/fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(metadata codecs sharding cdl)
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1
for t in "${targets[@]}"; do
  echo "== fuzzing $t for ${secs}s"
  mkdir -p "tests/fuzz/corpus/$t"
  # Seed the metadata-shaped targets with every fixture's zarr.json.
  if [ "$t" = metadata ] || [ "$t" = cdl ]; then
    n=0
    while IFS= read -r f; do n=$((n + 1)); cp "$f" "tests/fuzz/corpus/$t/seed-$n.json"; done \
      < <(find tests/data -name zarr.json | sort)
  fi
  cargo fuzz run --fuzz-dir tests/fuzz "$t" "tests/fuzz/corpus/$t" -- -max_total_time="$secs" -rss_limit_mb=2048 -max_len=65536
done
echo "fuzz: no crashes in ${targets[*]}"

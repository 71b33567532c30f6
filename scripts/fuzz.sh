#!/usr/bin/env bash
# Run every cargo-fuzz target for a bounded time (default 60 s each), from
# the checked-in seed corpus tests/fuzz/seeds/<target>/ (real chunks and
# zarr.json documents of the fixtures). CI runs it with --total 120.
# Usage: scripts/fuzz.sh --build-only   (build the targets, as CI does in
#        the background while its tests run)
#        scripts/fuzz.sh [SECONDS] [TARGET...]
#        scripts/fuzz.sh --total SECONDS [TARGET...]  (the run's wall time,
#        shared by the targets: CI's budget for fuzzing is fixed however
#        many targets there are)
# The targets run side by side, one per CPU (NZFS_FUZZ_JOBS to change):
# with --total, each gets SECONDS x jobs / targets.
# Targets: metadata, codecs, sharding, cdl, names, references, http, zip, netcdf, ocdbt (tests/fuzz/fuzz_targets/).
#
# The netcdf target's seeds are made by scripts/netcdf_seeds.sh.
#
# A crash fails the run; the crashing input is kept under
# tests/fuzz/artifacts/<target>/ and printed to the log as base64, so a CI
# log alone reproduces it: `base64 -d > crash; cargo fuzz run --fuzz-dir
# tests/fuzz TARGET crash`.
#
# A crash CI once found stays in the seeds as a regression (codecs/
# xz-footer-overflow: lzma-rs 0.3 overflowed on it; nzfs now uses lzma-rust2).
#
# Longer campaigns: `scripts/fuzz.sh 3600 codecs` keeps what it learns in
# tests/fuzz/corpus/<target>/ (ignored by git) and resumes from it next time.
#
# libFuzzer needs nightly-only flags; RUSTC_BOOTSTRAP=1 lets the stable
# toolchain accept them.
set -euo pipefail
cd "$(dirname "$0")/.."
total=""
secs=60
build_only=""
if [ "${1:-}" = "--build-only" ]; then
  build_only=1
  shift
elif [ "${1:-}" = "--total" ]; then
  total=$2
  shift 2
elif [ $# -gt 0 ]; then
  secs=$1
  shift
fi
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(metadata codecs sharding cdl names references http zip netcdf ocdbt)
jobs=${NZFS_FUZZ_JOBS:-$(nproc)}
[ "$jobs" -ge 1 ] || jobs=1
if [ -n "$total" ]; then
  secs=$(( total * jobs / ${#targets[@]} ))
  [ "$secs" -ge 1 ] || secs=1
fi
command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
export RUSTC_BOOTSTRAP=1
# C libraries built from source (zfp, blosc) under ASAN too, so their reads
# past a hostile stream are caught, not only the Rust side's.
export CFLAGS="${CFLAGS:-} -fsanitize=address"
# Every target in one build; 16 codegen units (cargo-fuzz's default is 1)
# build in about half the time on 2 CPUs, for somewhat slower runs.
cargo fuzz build --fuzz-dir tests/fuzz --codegen-units 16
[ -z "$build_only" ] || exit 0
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
fuzz_one() {
  local t=$1 corpus="tests/fuzz/corpus/$1"
  mkdir -p "$corpus" "tests/fuzz/artifacts/$t"
  cp tests/fuzz/seeds/"$t"/* "$corpus"/
  cargo fuzz run --fuzz-dir tests/fuzz --codegen-units 16 "$t" "$corpus" -- \
    -max_total_time="$secs" -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1
}
echo "== fuzzing ${targets[*]}, ${secs}s each, $jobs at a time"
pids=()
names=()
failed=()
reap() {
  local i=$1
  if ! wait "${pids[$i]}"; then failed+=("${names[$i]}"); fi
  echo "== ${names[$i]}:"
  tail -n 12 "$logs/${names[$i]}.log"
}
next=0
for t in "${targets[@]}"; do
  if [ ${#pids[@]} -ge $(( next + jobs )) ]; then
    reap "$next"
    next=$(( next + 1 ))
  fi
  fuzz_one "$t" >"$logs/$t.log" 2>&1 &
  pids+=($!)
  names+=("$t")
done
while [ "$next" -lt ${#pids[@]} ]; do
  reap "$next"
  next=$(( next + 1 ))
done
for t in "${failed[@]}"; do
  for f in tests/fuzz/artifacts/"$t"/*; do
    [ -f "$f" ] || continue
    echo "== $t crash input $f (base64):"
    base64 -w0 "$f"; echo
  done
  echo "fuzz: $t found a crash (input above)" >&2
done
[ ${#failed[@]} -eq 0 ] || exit 1
echo "fuzz: no crashes in ${targets[*]}"

#!/usr/bin/env bash
# Which source files one cold read of one chunk file crosses, measured
# exactly: source-based coverage (-C instrument-coverage) of two mounts of
# the sample that differ only in that read. Both open and close
# t2m/0.0.0.bin (lookup, getattr, open, release); the second also reads it
# whole (one cold decode through the daemon: --passthrough never,
# --no-prefetch). A file is crossed when one of its lines ran more often in
# the second. Prints each file with how many of its lines the read ran, then
# the count. Needs root (the mounts) and rustup's llvm-tools
# (`rustup component add llvm-tools`); builds into target/cov.
#   bash scripts/read_path_files.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
RUSTFLAGS="-C instrument-coverage" cargo build --locked --no-default-features --target-dir target/cov >&2
bin=$root/target/cov/debug/nzfs
tools=$(dirname "$(find "$(rustc --print sysroot)" -name llvm-profdata -type f | head -n 1)")
[ -x "$tools/llvm-profdata" ] || { echo "read_path_files: no llvm-profdata: rustup component add llvm-tools" >&2; exit 1; }
work=$(mktemp -d)
# Every run of the instrumented binary (the unmounts too) writes its
# profile under $work, never into the working directory.
export LLVM_PROFILE_FILE="$work/other-%p.profraw"
mp=$work/mnt
mkdir -p "$mp"
trap '"$bin" unmount "$mp" 2>/dev/null || true; rm -rf "$work"' EXIT
for run in open read; do
    LLVM_PROFILE_FILE="$work/$run-%p.profraw" "$bin" mount --passthrough never --no-prefetch \
        --log-file "$work/$run.log" "$root/tests/data/sample.zarr" "$mp" >&2
    python3 - "$mp/t2m/0.0.0.bin" "$run" <<'EOF'
import os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
if sys.argv[2] == "read":
    assert len(os.pread(fd, 1 << 20, 0)) == 1400
os.close(fd)
EOF
    "$bin" unmount "$mp" >&2
    # The daemon writes its profile as it exits, after the unmount returns.
    for _ in $(seq 50); do
        ls "$work"/$run-*.profraw >/dev/null 2>&1 && [ "$(ls "$work"/$run-*.profraw | wc -l)" -ge 2 ] && break
        sleep 0.1
    done
    sleep 1
    "$tools/llvm-profdata" merge -sparse "$work"/$run-*.profraw -o "$work/$run.profdata"
    "$tools/llvm-cov" export -format=lcov -instr-profile="$work/$run.profdata" "$bin" >"$work/$run.lcov"
done
python3 - "$work/open.lcov" "$work/read.lcov" "$root/" <<'EOF'
import sys

def lines(path):
    hits, current = {}, None
    for line in open(path):
        if line.startswith("SF:"):
            current = hits.setdefault(line[3:].strip(), {})
        elif line.startswith("DA:"):
            number, count = line[3:].split(",")[:2]
            current[int(number)] = int(count)
    return hits

before, after = lines(sys.argv[1]), lines(sys.argv[2])
crossed = []
for path, hits in after.items():
    if not path.startswith(sys.argv[3] + "src/"):
        continue
    ran = [n for n, c in hits.items() if c > before.get(path, {}).get(n, 0)]
    if ran:
        crossed.append((path[len(sys.argv[3]):], len(ran)))
for path, n in sorted(crossed):
    print(f"{n:5d}  {path}")
print(f"read_path_files: one cold chunk read crosses {len(crossed)} source files")
EOF

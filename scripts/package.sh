#!/usr/bin/env bash
# Build the Debian package: target/debian/nzfs_<version>-1_amd64.deb with
# the binary, man pages and shell completions, depending on fuse3.
# The binary is the wheel's (scripts/wheel.sh: the default features,
# linked by zig against glibc 2.17, so the package asks only libc6 (>=
# 2.17) and fuse3); where wheel.sh has built it already, as
# CI's wheel stage has, cargo finds nothing to do, and one release build
# serves both. Prints the package's path last.
#   bash scripts/package.sh --tool-only   installs cargo-deb (when missing)
#                                         and stops: CI does it early, in
#                                         the background
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo-deb >/dev/null; then
    cargo install cargo-deb --locked --version 3.8.0
fi
[ "${1:-}" != --tool-only ] || exit 0
target=x86_64-unknown-linux-gnu
bash scripts/wheel.sh >/dev/null
bin=target/$target/release/nzfs
assets=target/deb-assets
rm -rf "$assets" target/debian
mkdir -p "$assets/man" "$assets/completions" target/debian
"$bin" man "$assets/man" >/dev/null
"$bin" completions bash >"$assets/completions/nzfs"
"$bin" completions zsh >"$assets/completions/_nzfs"
"$bin" completions fish >"$assets/completions/nzfs.fish"
# --target: the binary at target/$target/release/ (the assets' path
# target/release/ is read under it).
cargo deb --no-build --locked --target "$target" --output target/debian >&2
ls target/debian/nzfs_*.deb

#!/usr/bin/env bash
# Build the Debian package (issue #17): target/debian/nzfs_<version>-1_<arch>.deb
# with the binary, man pages and shell completions, depending on fuse3.
# Extra cargo flags (e.g. --no-default-features --features remote, without
# Icechunk) pass through to the build.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo-deb >/dev/null; then
    cargo install cargo-deb --locked --version 3.8.0
fi
cargo build --release --locked "$@"
assets=target/deb-assets
rm -rf "$assets"
mkdir -p "$assets/man" "$assets/completions"
target/release/nzfs man "$assets/man" >/dev/null
target/release/nzfs completions bash >"$assets/completions/nzfs"
target/release/nzfs completions zsh >"$assets/completions/_nzfs"
target/release/nzfs completions fish >"$assets/completions/nzfs.fish"
cargo deb --no-build --locked

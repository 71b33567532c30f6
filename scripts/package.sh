#!/usr/bin/env bash
# Build the Debian package (issue #17): target/debian/nzfs_<version>-1_<arch>.deb
# with the binary, man pages and shell completions, depending on fuse3.
# Extra cargo flags (e.g. --no-default-features --features remote, without
# Icechunk) pass through to the build.
#   --prebuilt TRIPLE: package target/TRIPLE/release/nzfs as it is, built
#   already (CI packages the binary scripts/wheel.sh built for the wheel,
#   x86_64-unknown-linux-gnu linked against glibc 2.17: one release build
#   for both).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo-deb >/dev/null; then
    cargo install cargo-deb --locked --version 3.8.0
fi
deb_target=()
bin=target/release/nzfs
if [ "${1:-}" = "--prebuilt" ]; then
    bin=target/$2/release/nzfs
    deb_target=(--target "$2")
    [ -x "$bin" ] || { echo "package: $bin is not built (scripts/wheel.sh builds it)" >&2; exit 1; }
else
    cargo build --release --locked "$@"
fi
assets=target/deb-assets
rm -rf "$assets"
mkdir -p "$assets/man" "$assets/completions"
"$bin" man "$assets/man" >/dev/null
"$bin" completions bash >"$assets/completions/nzfs"
"$bin" completions zsh >"$assets/completions/_nzfs"
"$bin" completions fish >"$assets/completions/nzfs.fish"
rm -f target/debian/nzfs_*.deb
cargo deb --no-build --locked "${deb_target[@]}" --output target/debian/

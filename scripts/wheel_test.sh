#!/usr/bin/env bash
# Check a built wheel (issue #32), as CI does after scripts/wheel.sh:
# - auditwheel gives it the manylinux_2_17 tag;
# - the binary needs no glibc symbol newer than 2.17 (objdump -T), the
#   check for "runs on an older glibc" when no older userland is at hand;
# - `pip install` into a fresh venv works, and that venv's `nzfs --version`;
# - tests/python/test_api.py (pytest) drives the Python API on the sample:
#   mount, data.bin against zarr-python, status, unmount, the context
#   manager after an exception, errors, cdl/check, and a normal user
#   through fusermount3.
# - on Debian 11 (glibc 2.31, older than this machine's; debootstrap from
#   the Debian registry), the wheel's binary mounts the sample as root and
#   serves data.bin as zarr-python reads it.
# Usage: bash scripts/wheel_test.sh [WHEEL]   (default: target/wheels/nzfs-*.whl)
set -euo pipefail
cd "$(dirname "$0")/.."
wheel=${1:-$(ls target/wheels/nzfs-*.whl)}
tools=${NZFS_WHEEL_VENV:-.venv-wheel}
shown=$("$tools/bin/auditwheel" show "$wheel")
echo "$shown" >&2
grep -q 'consistent with the following platform tag: "manylinux_2_17_x86_64"' <<<"$(tr '\n' ' ' <<<"$shown" | tr -s ' ')" \
  || { echo "wheel_test: $wheel is not manylinux_2_17_x86_64" >&2; exit 1; }
case "$(basename "$wheel")" in
  nzfs-*-py3-none-*manylinux_2_17_x86_64.whl) ;;
  *) echo "wheel_test: unexpected wheel name $(basename "$wheel")" >&2; exit 1 ;;
esac
# The newest glibc symbol version the binary asks for.
tmp=$(mktemp -d)
chmod 755 "$tmp"
trap 'rm -rf "$tmp"' EXIT
python3 -m zipfile -e "$wheel" "$tmp/unpacked"
exe=$(find "$tmp/unpacked" -path '*.data/scripts/nzfs')
newest=$(objdump -T "$exe" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
echo "wheel_test: the binary's newest glibc symbol is $newest" >&2
[ "$(printf '%s\nGLIBC_2.17\n' "$newest" | sort -V | tail -1)" = "GLIBC_2.17" ] \
  || { echo "wheel_test: needs $newest, more than manylinux_2_17's GLIBC_2.17" >&2; exit 1; }
# A fresh venv with nothing but the wheel and the test's readers.
venv="$tmp/venv"
# The system's interpreter when there is one: the test runs it as a normal
# user too, who cannot reach an interpreter under /root (pyenv's).
py=${NZFS_WHEEL_PYTHON:-python3}
[ -n "${NZFS_WHEEL_PYTHON:-}" ] || [ ! -x /usr/bin/python3 ] || py=/usr/bin/python3
"$py" -m venv "$venv"
"$venv/bin/pip" install -q "$wheel" -r scripts/wheel-test-requirements.txt
"$venv/bin/nzfs" --version
(cd "$tmp" && "$venv/bin/python" -m pytest -q -p no:cacheprovider "$OLDPWD/tests/python/test_api.py")
# An older userland: Debian 11 (glibc 2.31; this machine has 2.36) made
# with debootstrap from the Debian registry, where the wheel's binary runs,
# mounts the sample and serves t2m's data.bin as zarr-python reads it.
# Skipped (said so) when not root or without debootstrap's mirror.
if [ "$(id -u)" -ne 0 ]; then
  echo "wheel_test: not root: the Debian 11 check is skipped" >&2
  exit 0
fi
if ! command -v debootstrap >/dev/null \
  && ! DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; then
  echo "wheel_test: debootstrap cannot be installed: the older-glibc check is skipped" >&2
  exit 0
fi
old=$(mktemp -d /tmp/nzfs-bullseye.XXXXXX)
cleanup_old() {
  # Never remove the tree while /dev or /proc is mounted inside it.
  umount "$old/mnt/nz" 2>/dev/null || true
  umount -l "$old/proc" 2>/dev/null || true
  umount -l "$old/dev" 2>/dev/null || true
  if ! grep -q " $old/" /proc/mounts; then rm -rf --one-file-system "$old"; fi
}
trap 'cleanup_old; rm -rf "$tmp"' EXIT
if ! debootstrap --variant=minbase bullseye "$old" http://deb.debian.org/debian >"$tmp/debootstrap.log" 2>&1; then
  tail -3 "$tmp/debootstrap.log" >&2
  echo "wheel_test: debootstrap of Debian 11 failed: the older-glibc check is skipped" >&2
  exit 0
fi
install -m 755 "$exe" "$old/usr/local/bin/nzfs"
cp -r tests/data/sample.zarr "$old/sample.zarr"
mkdir -p "$old/mnt/nz"
chroot "$old" /lib/x86_64-linux-gnu/libc.so.6 | head -1 >&2
chroot "$old" nzfs --version
mount --bind /dev "$old/dev"
mount -t proc proc "$old/proc"
chroot "$old" nzfs mount /sample.zarr /mnt/nz >&2
got=$(chroot "$old" md5sum /mnt/nz/t2m/data.bin | cut -d' ' -f1)
chroot "$old" nzfs unmount /mnt/nz
want=$("$venv/bin/python" -c 'import hashlib, numpy as np, zarr; a = np.asarray(zarr.open_array("tests/data/sample.zarr", path="t2m", mode="r")[...]); print(hashlib.md5(a.astype(a.dtype.newbyteorder("=")).tobytes()).hexdigest())')
[ "$got" = "$want" ] || { echo "wheel_test: Debian 11: data.bin md5 $got, zarr-python's $want" >&2; exit 1; }
echo "wheel_test: on Debian 11 (glibc 2.31) the wheel's nzfs mounts the sample; t2m/data.bin equals zarr-python's read" >&2

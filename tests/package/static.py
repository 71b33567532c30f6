#!/usr/bin/env python3
"""The static binary, as a user of a machine without pip or dpkg meets it:
the tarball that scripts/static.sh built is unpacked, its nzfs is checked to
be static (an ELF with no program interpreter, so no dynamic loader or libc
is needed), its man pages and licences are there, and it mounts the sample
store, where t2m/data.bin must equal what zarr-python reads from the store
itself. Usage: python tests/package/static.py TARBALL (as root, for the
mount). Prints one line per check and 'static: N passed, 0 failed'."""

import glob
import os
import struct
import sys
import tarfile
import tempfile


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from checks import Checks, data_bin_equals_zarr  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
STORE = os.path.join(ROOT, "tests", "data", "sample.zarr")
CHECKS = Checks("static")
check, run = CHECKS.check, CHECKS.run
PT_INTERP, PT_DYNAMIC = 3, 2


def program_headers(path):
    """The types of an ELF64 little-endian file's program headers."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
            return None
        phoff, = struct.unpack_from("<Q", head, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
        types = []
        for i in range(phnum):
            f.seek(phoff + i * phentsize)
            types.append(struct.unpack("<I", f.read(4))[0])
        return types


def main():
    tarball = sys.argv[1]
    work = tempfile.mkdtemp(prefix="nzfs-static.")
    with tarfile.open(tarball) as t:
        t.extractall(work, filter="data")
    top = glob.glob(os.path.join(work, "nzfs-*-x86_64-linux-musl"))
    check(len(top) == 1, "the tarball holds one nzfs-VERSION-x86_64-linux-musl folder", str(os.listdir(work)))
    top = top[0]
    nzfs = os.path.join(top, "nzfs")
    for name in ["nzfs", "README.md", "CHANGELOG.md", "LICENSE-MIT", "LICENSE-APACHE", "man/nzfs.1",
                 "man/nzfs-mount.1"]:
        check(os.path.isfile(os.path.join(top, name)), f"the tarball holds {name}")
    types = program_headers(nzfs)
    check(types is not None and PT_INTERP not in types and PT_DYNAMIC not in types,
          "nzfs is a static ELF (no interpreter, no dynamic section)", str(types))
    version = run(nzfs, "--version").stdout
    check("features:" in version and "remote" in version, "nzfs --version names its features", version)
    mp = tempfile.mkdtemp(prefix="nzfs-static-mp.")
    try:
        run(nzfs, "mount", STORE, mp)
        try:
            check(data_bin_equals_zarr(mp, STORE, "t2m"),
                  "t2m/data.bin through the static binary's mount equals zarr-python")
        finally:
            run(nzfs, "unmount", mp, ok=False)
    finally:
        os.rmdir(mp)
    CHECKS.done()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The Debian package, installed for real: `apt-get install ./DEB`
(docs/install.md's command) installs the .deb that scripts/package.sh built, then
`man nzfs` reads the installed page, the
bash completion is where bash-completion looks, and `mount -t fuse.nzfs`
mounts the sample store with /usr/bin/nzfs as its helper. The value read
through that mount is compared with zarr-python reading the store itself.
The package is removed at the end, whatever happened.

Usage: python tests/package/run.py target/debian/nzfs_*.deb
Needs root, dpkg, man-db and the fixture venv. Prints one line per check and
'package: N passed, 0 failed'; exits 1 on the first failure."""

import os
import sys
import tempfile


HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from checks import Checks, data_bin_equals_zarr  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
STORE = os.path.join(ROOT, "tests", "data", "sample.zarr")
CHECKS = Checks("package")
check, run = CHECKS.check, CHECKS.run


def daemon_exe(mp):
    """The executable of the process serving the FUSE mount at `mp`: the
    nzfs process whose command line names the mount point."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                args = f.read().split(b"\0")
            exe = os.readlink(f"/proc/{pid}/exe")
        except OSError:
            continue
        if mp.encode() in args and os.path.basename(exe) == "nzfs":
            return exe
    return None


def main():
    deb = sys.argv[1]
    check(os.geteuid() == 0, "runs as root (apt-get install)")
    fields = run("dpkg-deb", "--field", deb, "Package", "Depends").stdout
    check("Package: nzfs" in fields and "fuse3" in fields, "the package depends on fuse3", fields)
    # The wheel's binary: any glibc from 2.17 on.
    check("libc6 (>= 2.17)" in fields, "the package asks glibc 2.17, as its binary does", fields)
    check(run("dpkg", "-s", "nzfs", ok=False).returncode != 0, "nzfs is not installed beforehand")
    # mount.fuse3 searches /usr/local/bin before /usr/bin: a stray copy there
    # would stand in for the packaged binary.
    check(not os.path.exists("/usr/local/bin/nzfs"), "no /usr/local/bin/nzfs shadows the package")
    mp = tempfile.mkdtemp(prefix="nzfs-package.")
    try:
        run("apt-get", "install", "-y", "--no-install-recommends", os.path.abspath(deb),
            env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
        files = run("dpkg", "-L", "nzfs").stdout.split()
        for f in [
            "/usr/bin/nzfs",
            "/usr/share/man/man1/nzfs.1.gz",
            "/usr/share/man/man1/nzfs-mount.1.gz",
            "/usr/share/bash-completion/completions/nzfs",
            "/usr/share/zsh/vendor-completions/_nzfs",
            "/usr/share/fish/vendor_completions.d/nzfs.fish",
        ]:
            check(f in files and os.path.exists(f), f"the package installs {f}")
        page = run("man", "-w", "nzfs").stdout.strip()
        check(page == "/usr/share/man/man1/nzfs.1.gz", "man finds the installed page", page)
        text = run("man", "-P", "cat", "nzfs-mount", env={**os.environ, "MANWIDTH": "80"}).stdout
        check("--cache-size" in text, "man nzfs-mount shows the mount options")
        comp = run(
            "bash",
            "-c",
            ". /usr/share/bash-completion/completions/nzfs && complete -p nzfs",
        ).stdout
        check("nzfs" in comp, "the installed bash completion registers nzfs", comp)

        run("mount", "-t", "fuse.nzfs", STORE, mp, "-o", "ro")
        try:
            exe = daemon_exe(mp)
            check(exe == "/usr/bin/nzfs", "mount -t fuse.nzfs runs the packaged /usr/bin/nzfs", str(exe))
            check(
                data_bin_equals_zarr(mp, STORE, "t2m"),
                "t2m/data.bin through the packaged mount equals zarr-python",
            )
        finally:
            run("umount", mp, ok=False)
    finally:
        run("dpkg", "-r", "nzfs", ok=False)
        os.rmdir(mp)
    check(run("dpkg", "-s", "nzfs", ok=False).returncode != 0, "dpkg -r removed the package")
    check(not os.path.exists("/usr/bin/nzfs"), "and its binary")
    CHECKS.done()


if __name__ == "__main__":
    main()

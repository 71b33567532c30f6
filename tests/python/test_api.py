"""The wheel's Python API through real mounts.

Run by scripts/wheel_test.sh in a fresh venv where only the built wheel,
pytest, zarr-python and numpy are installed: `import nzfs` is the wheel's,
and so is the binary it runs. The values read through a mount are compared
with what zarr-python reads from the same store. The last test does it all
again as a normal user (created here, removed at the end) through
fusermount3.
"""

import json
import os
import pathlib
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile

import numpy as np
import pytest
import zarr

import nzfs

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "data" / "sample.zarr"
ARRAYS = ["t2m", "lat", "lon", "time"]


def mounted(path):
    with open("/proc/mounts") as f:
        return any(line.split()[1] == str(path) for line in f)


def same_as_zarr_python(root, store=SAMPLE):
    for name in ARRAYS:
        want = np.asarray(zarr.open_array(str(store), path=name, mode="r")[...])
        got = np.fromfile(pathlib.Path(root) / name / "data.bin", dtype=want.dtype.newbyteorder("="))
        assert np.array_equal(got.reshape(want.shape), want, equal_nan=True), name


def test_the_binary_is_the_wheels_not_the_one_on_path(tmp_path, monkeypatch):
    exe = pathlib.Path(nzfs.binary())
    assert exe.parent == pathlib.Path(sys.prefix) / "bin", exe
    # A different `nzfs` first on PATH is not used.
    fake = tmp_path / "nzfs"
    fake.write_text("#!/bin/sh\necho not the wheel >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    assert nzfs.version().startswith("nzfs ")


def test_mount_status_unmount_and_values_as_zarr_python_reads_them():
    m = nzfs.mount(SAMPLE, cache_size="64MiB")
    try:
        assert isinstance(m.path, pathlib.Path) and m.path.is_absolute()
        assert mounted(m.path)
        same_as_zarr_python(m.path)
        status = m.status()
        assert status["store"].endswith("sample.zarr") and status["chunks_decoded"] > 0, status
        assert status["cache"]["budget_bytes"] == 64 << 20, status
        assert (m / "t2m" / "header.cdl").read_text().startswith("netcdf t2m")
    finally:
        m.unmount()
    assert not mounted(m.path) and not m.path.exists() and not m.mounted
    m.unmount()  # again: nothing to do


def test_the_context_manager_unmounts_after_an_exception():
    seen = []
    with pytest.raises(ZeroDivisionError):
        with nzfs.mount(SAMPLE) as root:
            seen.append(root)
            assert mounted(root)
            # A file still open when the block fails: detached all the same.
            held = open(root / "t2m" / "data.bin", "rb")
            1 / 0
    held.close()
    assert not mounted(seen[0]) and not seen[0].exists()


def test_a_given_mount_point_is_kept(tmp_path):
    mp = tmp_path / "mnt"
    mp.mkdir()
    with nzfs.mount(SAMPLE, mp) as root:
        assert root == mp and mounted(mp)
    assert mp.is_dir() and not mounted(mp)


def test_odd_mount_point_names_and_foreground(tmp_path, monkeypatch):
    # A relative mount point that starts with `-`, and one with a tab (an
    # escape in /proc/mounts): mounted and unmounted by their names.
    monkeypatch.chdir(tmp_path)
    for name in ["-dash", "tab\there"]:
        (tmp_path / name).mkdir()
        m = nzfs.mount(SAMPLE, name)
        assert os.path.ismount(tmp_path / name), name
        assert (tmp_path / name / "t2m" / "header.cdl").read_text().startswith("netcdf t2m")
        m.unmount()
        assert not os.path.ismount(tmp_path / name), name
    # foreground=True would never return: refused at once, with the way out.
    with pytest.raises(ValueError, match="foreground"):
        nzfs.mount(SAMPLE, tmp_path / "-dash", foreground=True)


def test_errors_carry_nzfs_one_line_message(tmp_path):
    made = set(pathlib.Path(tempfile.gettempdir()).glob("nzfs-*"))
    with pytest.raises(nzfs.NzfsError) as e:
        nzfs.mount(tmp_path / "missing.zarr")
    text = str(e.value)
    assert "missing.zarr" in text and "\n" not in text and not text.startswith("nzfs: "), text
    assert e.value.returncode != 0
    # The temporary mount point it made is gone again.
    assert set(pathlib.Path(tempfile.gettempdir()).glob("nzfs-*")) == made
    with pytest.raises(nzfs.NzfsError, match="cache"):
        nzfs.mount(SAMPLE, cache_size="lots")


def test_cdl_and_check(tmp_path):
    text = nzfs.cdl(SAMPLE)
    assert text.startswith("netcdf sample"), text[:80]
    cdl = tmp_path / "h.cdl"
    cdl.write_text(text)
    made = subprocess.run(["ncgen", "-k", "nc4", "-o", str(tmp_path / "h.nc"), str(cdl)], capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    report = nzfs.check(SAMPLE)
    assert report["conforms"] is True and report["errors"] == 0, report
    assert nzfs.check(ROOT / "tests" / "data" / "nz_undeclared.zarr", no_values=True)["conforms"] is False
    with pytest.raises(nzfs.NzfsError):
        nzfs.check(tmp_path / "missing.zarr")


USER_SCRIPT = r"""
import json, os, sys
import numpy as np
import nzfs
with nzfs.mount(sys.argv[1]) as root:
    line = [l for l in open("/proc/mounts") if l.split()[1] == str(root)][0]
    got = np.fromfile(root / "t2m" / "data.bin", dtype="<f4")
print(json.dumps({"line": line, "n": int(got.size), "sum": float(np.nansum(got)), "unmounted": not os.path.exists(root)}))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to create a user")
def test_as_a_normal_user_through_fusermount3(tmp_path):
    user = "nzfswheeltest"
    subprocess.run(["userdel", "-r", user], capture_output=True)
    subprocess.run(["useradd", "--create-home", user], check=True)
    # /dev/fuse open to every user, as udev sets it on Debian. Not changed
    # here: a mode changed for the whole machine is seen by every other
    # process, and a second run would restore the first's change.
    fuse_mode = os.stat("/dev/fuse").st_mode & 0o7777
    assert fuse_mode & 0o666 == 0o666, f"/dev/fuse is {fuse_mode:o}: a normal user's mount needs 0666 (udev's default)"
    try:
        pw = pwd.getpwnam(user)
        # The store where the user may read it; the venv is world-readable.
        home = pathlib.Path(pw.pw_dir)
        store = home / "sample.zarr"
        shutil.copytree(SAMPLE, store)
        subprocess.run(["chown", "-R", f"{user}:{user}", str(store)], check=True)
        script = home / "use.py"
        script.write_text(USER_SCRIPT)
        # The venv and its interpreter must be usable by the user
        # (scripts/wheel_test.sh makes the venv from /usr/bin/python3).
        for p in [pathlib.Path(sys.prefix), *pathlib.Path(sys.prefix).parents,
                  *pathlib.Path(os.path.realpath(sys.executable)).parents]:
            assert p.stat().st_mode & stat.S_IXOTH, f"{p} is not searchable by other users"
        env = {"PATH": "/usr/bin:/bin", "HOME": str(home)}
        runuser = shutil.which("runuser") or "/usr/sbin/runuser"
        run = subprocess.run([runuser, "-u", user, "--", sys.executable, str(script), str(store)],
                             capture_output=True, text=True, env=env, cwd=str(home))
        assert run.returncode == 0, run.stderr
        got = json.loads(run.stdout)
        fields = got["line"].split()
        # A user mount (fusermount3 made it): nzfs's type, the user's id.
        assert fields[2] == "fuse.nzfs" and f"user_id={pw.pw_uid}" in fields[3], got["line"]
        want = np.asarray(zarr.open_array(str(SAMPLE), path="t2m", mode="r")[...])
        assert got["n"] == want.size and got["sum"] == pytest.approx(float(np.nansum(want)), rel=1e-6)
        assert got["unmounted"]
        # Without fusermount3 (where fuser would run it from): the error
        # names the package to install.
        env_nofuse = {**env, "FUSERMOUNT_PATH": "/nonexistent/fusermount3"}
        probe = "import nzfs, sys\ntry:\n    nzfs.mount(sys.argv[1])\nexcept nzfs.NzfsError as e:\n    print(e)\n"
        run = subprocess.run([runuser, "-u", user, "--", sys.executable, "-c", probe, str(store)],
                             capture_output=True, text=True, env=env_nofuse, cwd=str(home))
        assert "fusermount3" in run.stdout and "fuse3" in run.stdout, (run.stdout, run.stderr)
    finally:
        subprocess.run(["userdel", "-r", user], capture_output=True)

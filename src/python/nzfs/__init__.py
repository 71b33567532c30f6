"""Mount Zarr stores as files, from Python.

nzfs mounts a Zarr store (v3, v2, NCZarr, zip, object storage, Icechunk)
read-only: every array becomes a directory of raw decoded chunk files, a
``data.bin`` of the whole array and a ``header.cdl``; every group a
directory with a virtual netCDF file that CDO, NCO and netCDF-C read.
This module drives the ``nzfs`` binary that came with it (never another
``nzfs`` on ``PATH``), for notebooks and workflow scripts::

    import subprocess, nzfs

    with nzfs.mount("s3://bucket/era5.zarr", anonymous=True, cache_size="2GiB") as root:
        subprocess.run(["cdo", "sinfon", root / "era5.nc"], check=True)

A mount is a FUSE filesystem served by a daemon; ``unmount()`` (or leaving
the ``with`` block, even on an exception) ends it. Mounting as a normal user
needs ``fusermount3`` (Debian/Ubuntu: ``apt install fuse3``; Fedora/RHEL:
``dnf install fuse3``), which no wheel can ship because it is setuid.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

__all__ = ["NzfsError", "Mount", "mount", "cdl", "check", "binary", "version"]

StrPath = Union[str, "os.PathLike[str]"]


class NzfsError(RuntimeError):
    """A failed nzfs command. ``str(error)`` is nzfs's own one-line message;
    ``command`` is the argument list and ``returncode`` its exit status."""

    def __init__(self, message: str, command: Sequence[str] = (), returncode: int = 1) -> None:
        super().__init__(message)
        self.command = list(command)
        self.returncode = returncode


def binary() -> str:
    """The path of the ``nzfs`` binary installed with this package.

    Found through the installed distribution's own file list, so a
    different ``nzfs`` earlier on ``PATH`` is never used. ``NZFS_BINARY``
    overrides it (for running this module from a source tree)."""
    override = os.environ.get("NZFS_BINARY")
    if override:
        return override
    try:
        from importlib.metadata import PackageNotFoundError, distribution
    except ImportError:  # Python < 3.8 has no importlib.metadata
        distribution = None  # type: ignore[assignment]
    if distribution is not None:
        try:
            dist = distribution("nzfs")
        except PackageNotFoundError:
            dist = None
        for f in (dist.files or []) if dist is not None else []:
            if f.name == "nzfs" and {"bin", "scripts"} & set(f.parts[:-1]):
                path = pathlib.Path(str(dist.locate_file(f))).resolve()
                if path.is_file() and os.access(path, os.X_OK):
                    return str(path)
    # The scripts directory of this interpreter's environment.
    here = pathlib.Path(sys.prefix) / "bin" / "nzfs"
    if here.is_file():
        return str(here)
    raise NzfsError(
        "the nzfs binary of this package is missing: reinstall it (pip install --force-reinstall nzfs)"
    )


def _message(stderr: str, returncode: int) -> str:
    """nzfs's one-line error: its ``nzfs: ...`` line (or a usage error's
    ``error: ...`` line), without the prefix; else its last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    for prefix in ("nzfs: ", "error: "):
        for line in lines:
            if line.startswith(prefix):
                return line[len(prefix):]
    return lines[-1] if lines else f"nzfs exited with status {returncode}"


def _run(args: Sequence[str], *, ok: Iterable[int] = (0,)) -> subprocess.CompletedProcess:
    command = [binary(), *args]
    try:
        done = subprocess.run(command, capture_output=True, text=True)
    except OSError as e:
        raise NzfsError(f"cannot run {command[0]}: {e}", command, 127) from None
    if done.returncode not in tuple(ok):
        raise NzfsError(_message(done.stderr, done.returncode), command, done.returncode)
    return done


def _flags(options: Mapping[str, Any]) -> List[str]:
    """Keyword arguments as command-line flags: ``cache_size="2GiB"`` is
    ``--cache-size 2GiB``, ``anonymous=True`` is ``--anonymous``,
    ``store_options={"aws_region": "eu-west-1"}`` is ``--store-option
    aws_region=eu-west-1``, ``mount_options=["allow_other"]`` is ``-o
    allow_other``; ``None`` and ``False`` are left out."""
    out: List[str] = []
    for key, value in options.items():
        if value is None or value is False:
            continue
        if key == "store_options":
            for k, v in dict(value).items():
                out += ["--store-option", f"{k}={v}"]
            continue
        if key == "mount_options":
            items = [value] if isinstance(value, str) else list(value)
            if items:
                out += ["-o", ",".join(items)]
            continue
        flag = "--" + key.replace("_", "-")
        if value is True:
            out.append(flag)
        elif isinstance(value, (list, tuple)):
            for v in value:
                out += [flag, str(v)]
        else:
            out += [flag, str(value)]
    return out


def version() -> str:
    """``nzfs --version`` of the packaged binary."""
    return _run(["--version"]).stdout.strip()


class Mount:
    """A live nzfs mount. ``path`` is its root; use it as a context manager
    to unmount on leaving the block, even on an exception."""

    def __init__(self, path: pathlib.Path, store: str, made_mountpoint: bool) -> None:
        self.path = path
        self.store = store
        self._made = made_mountpoint
        self._mounted = True

    def __fspath__(self) -> str:
        return str(self.path)

    def __truediv__(self, other: StrPath) -> pathlib.Path:
        return self.path / other

    def __repr__(self) -> str:
        state = "mounted" if self._mounted else "unmounted"
        return f"<nzfs.Mount {self.store!r} at {str(self.path)!r} ({state})>"

    @property
    def mounted(self) -> bool:
        """Whether :meth:`unmount` has not been called yet."""
        return self._mounted

    def status(self) -> Dict[str, Any]:
        """The mount's ``nzfs status --json`` document: cache, decodes,
        store reads, prefetch, errors (shape in nzfs's docs/troubleshooting.md)."""
        return json.loads(_run(["status", "--json", str(self.path)]).stdout)

    def unmount(self, lazy: bool = False) -> None:
        """Unmount (``lazy``: detach now, finish when the last file is
        closed) and remove the mount point if :func:`mount` made it.
        Calling it again does nothing."""
        if not self._mounted:
            return
        _run(["unmount", *(["--lazy"] if lazy else []), "--", str(self.path)])
        self._mounted = False
        if self._made:
            try:
                self.path.rmdir()
            except OSError:
                pass

    def __enter__(self) -> pathlib.Path:
        return self.path

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        try:
            self.unmount()
        except NzfsError:
            if exc_type is None:
                raise
            # Busy after an exception (a file still open): detach, so the
            # exception that ended the block is the one that propagates.
            self.unmount(lazy=True)


def mount(store: StrPath, mountpoint: Optional[StrPath] = None, **options: Any) -> Mount:
    """Mount ``store`` (a directory, a zip, ``s3://``, ``gs://``, ``az://``,
    ``http(s)://`` or an Icechunk repository) read-only and return the
    :class:`Mount` once it is live.

    With no ``mountpoint``, a temporary directory is made and removed at
    unmount. ``options`` are ``nzfs mount`` flags by their long names with
    ``_`` for ``-``: ``cache_size="2GiB"``, ``anonymous=True``,
    ``missing_chunks="error"``, ``disk_cache="/scratch/nzfs"``,
    ``store_options={"aws_endpoint": "http://127.0.0.1:9000"}``,
    ``mount_options=["allow_other"]``, ``branch="main"``.

    Raises :class:`NzfsError` with nzfs's message when the mount fails; a
    normal user without ``fusermount3`` is told which system package has
    it."""
    if options.get("foreground"):
        raise ValueError(
            "nzfs.mount(foreground=True) would not return until the mount ends; "
            "mount() starts a background daemon and returns a Mount: leave foreground out, "
            "or run `nzfs mount -f STORE MOUNTPOINT` yourself to stay attached"
        )
    made = mountpoint is None
    mp = pathlib.Path(tempfile.mkdtemp(prefix="nzfs-")) if made else pathlib.Path(mountpoint)
    source = os.fspath(store)
    # Local paths absolute: the daemon does not share this process's cwd.
    if "://" not in source and os.path.exists(source):
        source = os.path.abspath(source)
    try:
        # `--`: a store or mount point may start with `-`.
        _run(["mount", *_flags(options), "--", source, str(mp)])
    except BaseException:
        if made:
            try:
                mp.rmdir()
            except OSError:
                pass
        raise
    return Mount(mp.absolute(), source, made)


def cdl(store: StrPath, **options: Any) -> str:
    """The CDL header of ``store``'s root (``nzfs cdl``), as ``ncdump -h``
    would print it, without mounting. ``options`` as for :func:`mount`'s
    store flags (``anonymous=True``, ``store_options={...}``)."""
    return _run(["cdl", *_flags(options), os.fspath(store)]).stdout


def check(store: StrPath, **options: Any) -> Dict[str, Any]:
    """``nzfs check --json``: the store's NZ-1.0 findings as a dict
    (``conforms``, the findings, the counts). A store that does not conform
    is not an error; one that cannot be read is. ``no_values=True`` skips
    reading coordinate values."""
    done = _run(["check", "--json", *_flags(options), os.fspath(store)], ok=(0, 1))
    try:
        return json.loads(done.stdout)
    except ValueError:
        raise NzfsError(_message(done.stderr, done.returncode), ["check", os.fspath(store)], done.returncode) from None

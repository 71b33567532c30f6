"""nzfs write-back benchmark: a netCDF file of --size-mib (default 1024)
written into an Icechunk repository on local disk, two ways, in the same
run, for each of two formats: netCDF classic (CDF-2, as netCDF4-python
writes it) and netCDF-4 (HDF5, zlib level 1, chunks of one record's
half, as netCDF4-python writes it with zlib=True):

  nzfs    `cp FILE MOUNT/run.nc` through a writable mount (`--writable`)
          of the repository: the close() converts and commits it as the
          group `run` (zstd level 3, chunks of at most 4 MiB);
  xarray  `xr.open_dataset(FILE).to_zarr(session.store, group="run")` and
          `session.commit(...)` into a fresh repository of the same kind
          (zarr-python's defaults: zstd, its own chunks).

Each row is wall seconds from the first byte to the commit, the median of
--repeat runs, each into a fresh repository; the ratio is xarray's time
over nzfs's (above 1: nzfs is faster). The daemon's peak memory is
printed beside its --cache-size. Both commits are then read back with
xarray through icechunk and compared with the file, every value.

Usage:  python3 scripts/bench write [--size-mib 1024] [--repeat 1]
        [--workdir /tmp/nzfs-bench-write]
(scripts/bench.sh write builds the release binary and sets up the venv.)
"""

import argparse
import os
import shutil
import statistics
import subprocess
import time

import numpy as np

from common import MIB, Mounted, log


def make_file(path, size_mib, netcdf4=False):
    """A model's output: t2m(time, lat, lon) float32, 4 MiB a record, as
    many records as --size-mib holds, and a lat coordinate; 64-bit offset
    (CDF-2), as netCDF4-python writes it, or `netcdf4`: netCDF-4, t2m
    deflated (level 1) in chunks of half a record."""
    import netCDF4

    records = max(1, size_mib // 4)
    rng = np.random.default_rng(63)
    y, x = np.meshgrid(np.arange(720, dtype="f4"), np.arange(1440, dtype="f4"), indexing="ij")
    base = 280 + 15 * np.sin(x / 113) * np.cos(y / 71)
    fmt = "NETCDF4" if netcdf4 else "NETCDF3_64BIT_OFFSET"
    packing = {"zlib": True, "complevel": 1, "chunksizes": (1, 360, 1440)} if netcdf4 else {}
    with netCDF4.Dataset(path, "w", format=fmt) as ds:
        ds.createDimension("time", None)
        ds.createDimension("lat", 720)
        ds.createDimension("lon", 1440)
        lat = ds.createVariable("lat", "f8", ("lat",))
        lat.units = "degrees_north"
        lat[:] = np.linspace(-89.875, 89.875, 720)
        t = ds.createVariable("t2m", "f4", ("time", "lat", "lon"), fill_value=np.float32(-9999), **packing)
        t.units = "K"
        for r in range(records):
            t[r] = (base + rng.normal(0, 0.5, base.shape)).astype("f4")
    return records


def fresh_repo(path):
    import icechunk
    import zarr

    shutil.rmtree(path, ignore_errors=True)
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(path))
    session = repo.writable_session("main")
    zarr.open_group(session.store, mode="w")
    session.commit("an empty root group")
    return repo


def by_nzfs(work, nc, binary):
    repo_dir = os.path.join(work, "repo-nzfs")
    fresh_repo(repo_dir)
    mp = os.path.join(work, "mnt")
    spool = os.path.join(work, "spool")
    shutil.rmtree(spool, ignore_errors=True)
    with Mounted(repo_dir, mp, nzfs=binary, writable=True, spool_dir=spool, cache_size="256MiB") as m:
        t0 = time.perf_counter()
        subprocess.run(["cp", nc, os.path.join(mp, "run.nc")], check=True)
        seconds = time.perf_counter() - t0
        peak = m.memory("VmHWM")
    return seconds, peak, repo_dir


def by_xarray(work, nc):
    import xarray as xr

    repo_dir = os.path.join(work, "repo-xarray")
    repo = fresh_repo(repo_dir)
    t0 = time.perf_counter()
    session = repo.writable_session("main")
    with xr.open_dataset(nc, mask_and_scale=False) as ds:
        ds.to_zarr(session.store, group="run", zarr_format=3, consolidated=False)
    session.commit("run.nc by xarray")
    return time.perf_counter() - t0, repo_dir


def same_as_file(repo_dir, nc):
    import icechunk
    import xarray as xr

    repo = icechunk.Repository.open(icechunk.local_filesystem_storage(repo_dir))
    store = repo.readonly_session(branch="main").store
    raw = {"mask_and_scale": False}
    with xr.open_dataset(nc, **raw) as want, xr.open_zarr(store, group="run", consolidated=False, **raw) as got:
        # A record at a time (t2m's records are 4 MiB; the whole is 1 GiB).
        for v in want.variables:
            parts = range(want[v].shape[0]) if "time" in want[v].dims else [slice(None)]
            if not all(np.array_equal(got[v][r].values, want[v][r].values) for r in parts):
                return False
    return True


def main(argv):
    p = argparse.ArgumentParser(prog="bench write", description=__doc__.split("\n\n")[0])
    p.add_argument("--size-mib", type=int, default=1024)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--workdir", default="/tmp/nzfs-bench-write")
    p.add_argument("--nzfs", default=os.path.join(os.path.dirname(__file__), "..", "..", "target", "release", "nzfs"))
    a = p.parse_args(argv)
    os.makedirs(a.workdir, exist_ok=True)
    print(f"{'file':<10} {'writer':<40} {'seconds':>8} {'MiB/s':>8}  time / nzfs's")
    failed = []
    for kind in ("classic", "netcdf4"):
        nc = os.path.join(a.workdir, f"model-{kind}.nc")
        records = make_file(nc, a.size_mib, netcdf4=kind == "netcdf4")
        # MiB/s of the values (a deflated file is smaller than what it holds).
        values = records * 720 * 1440 * 4
        log(f"bench write: {nc}, {os.path.getsize(nc) / MIB:.0f} MiB on disk, {records} records of t2m(720, 1440) float32")
        ours, theirs, peaks = [], [], []
        for _ in range(a.repeat):
            seconds, peak, nzfs_repo = by_nzfs(a.workdir, nc, a.nzfs)
            ours.append(seconds)
            peaks.append(peak)
            seconds, xr_repo = by_xarray(a.workdir, nc)
            theirs.append(seconds)
        n, x = statistics.median(ours), statistics.median(theirs)
        print(f"{kind:<10} {'nzfs: cp into a writable mount':<40} {n:8.2f} {values / MIB / n:8.1f}  1.00")
        print(f"{kind:<10} {'xarray: open_dataset().to_zarr()':<40} {x:8.2f} {values / MIB / x:8.1f}  {x / n:.2f}")
        print(f"{kind}: xarray / nzfs: {x / n:.2f} (above 1: nzfs is faster); daemon peak RSS "
              f"{max(peaks) / MIB:.0f} MiB with --cache-size 256MiB")
        ok_n, ok_x = same_as_file(nzfs_repo, nc), same_as_file(xr_repo, nc)
        print(f"{kind}: read back with xarray through icechunk, every value equal to the file's: nzfs {ok_n}, xarray {ok_x}")
        if not (ok_n and ok_x):
            failed.append(kind)
    if failed:
        raise SystemExit(f"bench write: a commit does not read back as the file ({', '.join(failed)})")

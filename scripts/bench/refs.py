"""nzfs reference-set benchmark (issue #35): a kerchunk set of daily
netCDF-4 files, read whole by nzfs through a real mount and by xarray
opening the same set through fsspec's reference:// filesystem, in the same
run; with the files local, and in moto's S3 server on 127.0.0.1 behind a
proxy adding --latency-ms (default 20) to every request.

Usage:  python3 scripts/bench refs [--days 24] [--repeat 3] [--latency-ms 20]
(scripts/bench.sh --refs sets up the venv and builds nzfs first.)

The dataset: --days netCDF-4 files (netCDF4-python), each sst(1, 720, 1440)
float32 in zlib + shuffle chunks of (1, 180, 360), combined along time by
kerchunk's MultiZarrToZarr into one JSON set and its Parquet form. Every
run starts cold for nzfs (a fresh mount: empty decoded-chunk cache) and for
xarray (a fresh fsspec filesystem, no cache); the source files themselves
are in the page cache (local) or behind the proxy (remote). Each row is the
median of --repeat runs; values are checked equal to netCDF4-python's.
"""

import argparse
import os
import shutil
import statistics
import subprocess
import time

import numpy as np

import remote as br  # its proxy, mount helpers and moto start
from common import MIB


def build(workdir, days):
    import netCDF4
    from kerchunk.combine import MultiZarrToZarr
    from kerchunk.df import refs_to_dataframe
    from kerchunk.hdf import SingleHdf5ToZarr
    import json

    rng = np.random.default_rng(35)
    y, x = np.meshgrid(np.arange(720, dtype="f4"), np.arange(1440, dtype="f4"), indexing="ij")
    base = 285 + 10 * np.sin(x / 97) * np.cos(y / 61)
    files, parts = [], []
    for d in range(days):
        path = os.path.join(workdir, f"day{d:03d}.nc")
        with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
            ds.createDimension("time", None)
            ds.createDimension("lat", 720)
            ds.createDimension("lon", 1440)
            t = ds.createVariable("time", "f8", ("time",))
            t.units = "days since 2026-01-01"
            t[:] = [float(d)]
            v = ds.createVariable("sst", "f4", ("time", "lat", "lon"), chunksizes=(1, 180, 360),
                                  zlib=True, shuffle=True, complevel=4)
            field = (base + rng.normal(0, 0.3, base.shape)).astype("f4")
            v[:] = field[None]
            parts.append(field)
        files.append(path)
    singles = [SingleHdf5ToZarr(f, inline_threshold=0).translate() for f in files]
    refs = MultiZarrToZarr(singles, concat_dims=["time"], inline_threshold=0).translate()
    local = os.path.join(workdir, "local.json")
    with open(local, "w") as f:
        json.dump(refs, f)
    # The same set with s3:// targets, for the remote rows.
    for v in refs["refs"].values():
        if isinstance(v, list) and v and isinstance(v[0], str):
            v[0] = "s3://bench/k/" + os.path.basename(v[0])
    remote = os.path.join(workdir, "remote.json")
    with open(remote, "w") as f:
        json.dump(refs, f)
    refs_to_dataframe(refs, os.path.join(workdir, "remote.parq"))
    return files, local, remote, np.stack(parts)


def cat(path):
    return br.cat([path])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--days", type=int, default=24)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--latency-ms", type=float, default=20)
    ap.add_argument("--workdir", default="/tmp/nzfs-bench-refs")
    ap.add_argument("--nzfs", default=br.NZFS, help="the nzfs binary (default: the release build)")
    args = ap.parse_args(argv)
    br.NZFS = args.nzfs
    import boto3
    import fsspec
    import xarray as xr
    import zarr

    shutil.rmtree(args.workdir, ignore_errors=True)
    os.makedirs(args.workdir)
    br.log("building the dataset…")
    files, local, remote, expected = build(args.workdir, args.days)
    size = expected.nbytes
    mp = os.path.join(args.workdir, "mnt")
    os.makedirs(mp)
    rows = {}

    def run(name, fn):
        runs = []
        for _ in range(args.repeat):
            try:
                runs.append(fn())
            except Exception as e:  # reported, not fatal
                br.log(f"{name}: {type(e).__name__}: {e}")
                break
        if runs:
            rows[name] = runs

    def nzfs_read(url, proxy=None):
        def go():
            br.mount(url, mp, proxy.port if proxy else None)
            try:
                if proxy:
                    proxy.reset()
                t = time.perf_counter()
                cat(os.path.join(mp, "sst", "data.bin"))
                dt = time.perf_counter() - t
                got = np.fromfile(os.path.join(mp, "sst", "data.bin"), "<f4").reshape(expected.shape)
                assert np.array_equal(got, expected), "nzfs differs from netCDF4-python"
                return dt, proxy.counts()[0] if proxy else 0
            finally:
                br.unmount(mp)
        return go

    def xarray_read(fo, remote_protocol, remote_options, proxy=None):
        def go():
            if proxy:
                proxy.reset()
            t = time.perf_counter()
            # zarr-python 3 reads through an asynchronous filesystem.
            fs = fsspec.filesystem("reference", fo=fo, remote_protocol=remote_protocol,
                                   remote_options={**remote_options, "asynchronous": True}, asynchronous=True,
                                   skip_instance_cache=True)
            store = zarr.storage.FsspecStore(fs, read_only=True)
            ds = xr.open_dataset(store, engine="zarr", consolidated=False, zarr_format=2,
                                 chunks=None, mask_and_scale=False, decode_times=False)
            got = ds["sst"].values
            dt = time.perf_counter() - t
            assert np.array_equal(got, expected), "xarray differs from netCDF4-python"
            return dt, proxy.counts()[0] if proxy else 0
        return go

    for f in files:  # the sources in the page cache for the local rows
        cat(f)
    run("local: nzfs, cat data.bin", nzfs_read(local))
    run("local: xarray + fsspec reference://", xarray_read(local, "file", {}))

    moto_port = br.free_port()
    moto = subprocess.Popen([os.path.join(br.VENV_BIN, "moto_server"), "-H", "127.0.0.1", "-p", str(moto_port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    proxy = None
    try:
        br.wait_port(moto_port, "moto_server")
        s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{moto_port}", region_name="us-east-1",
                          aws_access_key_id="test", aws_secret_access_key="test")
        s3.create_bucket(Bucket="bench")
        for f in files:
            s3.upload_file(f, "bench", "k/" + os.path.basename(f))
        s3.upload_file(remote, "bench", "k/refs.json")
        br.upload(s3, os.path.join(args.workdir, "remote.parq"), "bench", "k/refs.parq")
        proxy = br.Proxy(moto_port, args.latency_ms / 1000, moto.pid)
        options = {"key": "test", "secret": "test", "client_kwargs": {
            "endpoint_url": f"http://127.0.0.1:{proxy.port}", "region_name": "us-east-1"}}
        run("S3: nzfs, cat data.bin (JSON set on S3)", nzfs_read("s3://bench/k/refs.json", proxy))
        run("S3: nzfs, cat data.bin (Parquet set on S3)", nzfs_read("s3://bench/k/refs.parq", proxy))
        run("S3: xarray + fsspec reference:// (JSON set)", xarray_read(remote, "s3", options, proxy))
        run("S3: xarray + fsspec reference:// (Parquet set)",
            xarray_read(os.path.join(args.workdir, "remote.parq"), "s3", options, proxy))
    finally:
        if proxy:
            proxy.stop()
        moto.terminate()
        moto.wait()

    print(f"\nReading a {args.days}-file kerchunk set whole ({size // MIB} MiB float32, {args.days * 16} zlib "
          f"chunks of 253 KiB), cold; S3 rows: moto on 127.0.0.1 behind a proxy adding {args.latency_ms:g} ms "
          f"per request; medians of {args.repeat} runs.\n")
    print(f"| {'reader':48} | {'seconds':>8} | {'MiB/s':>7} | {'requests':>8} |")
    print(f"|{'-' * 50}|{'-' * 10}|{'-' * 9}|{'-' * 10}|")
    med = {}
    for name, runs in rows.items():
        dt = statistics.median(r[0] for r in runs)
        req = statistics.median(r[1] for r in runs)
        med[name] = dt
        shown = f"{req:8.0f}" if name.startswith("S3") else f"{'-':>8}"
        print(f"| {name:48} | {dt:8.2f} | {size / MIB / dt:7.1f} | {shown} |")
    print()
    for a, b in [("local: nzfs, cat data.bin", "local: xarray + fsspec reference://"),
                 ("S3: nzfs, cat data.bin (JSON set on S3)", "S3: xarray + fsspec reference:// (JSON set)"),
                 ("S3: nzfs, cat data.bin (Parquet set on S3)", "S3: xarray + fsspec reference:// (Parquet set)")]:
        if a in med and b in med:
            print(f"{a} vs {b}: {med[b] / med[a]:.2f}x (above 1: nzfs is faster)")


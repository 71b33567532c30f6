#!/usr/bin/env python3
"""Write back, as users' programs write and as xarray reads (docs/writing.md):
netCDF4-python (CDF-1, CDF-2, CDF-5, netCDF-4 and its classic model),
xarray's default to_netcdf (netCDF-4) and its h5netcdf engine, and a Fortran model
(classic and netCDF-4)
(tests/legacy/write_model.f90: netCDF-C through ISO_C_BINDING, as
netCDF-Fortran is) write NAME.nc through a writable mount of a copy of the
Icechunk fixture repository; icechunk-python then opens each new commit,
and xarray on the group NAME must equal xarray on the file the same
program wrote to local disk: the variables, dimensions, types and stored
values, the attributes (compared as the file's types), the fill values, and
the decoded values, masked where the file's are; a char variable reads as
the same fixed-length strings. netCDF4-python's nested groups and two
unlimited dimensions read back by zarr-python as netCDF4-python reads the
local file. A file that is not netCDF must fail its close() and leave
the branch where it was.

Writes into what is there, read back by zarr-python through icechunk:
numpy.memmap in r+ mode on an array's data.bin, a Fortran program's stream
I/O opened readwrite (tests/legacy/patch_stream.f90), dd conv=notrunc on a
chunk file; each is one commit and changes only the bytes written. mkdir
makes a group zarr-python opens, rm -r removes an array.
Usage: python scripts/check_writable.py [path/to/nzfs]
Prints one line per check and 'writable: N passed, 0 failed'."""

import os
import shutil
import subprocess
import sys
import tempfile

import icechunk
import netCDF4
import numpy as np
import xarray as xr
import zarr

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
NZFS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target", "debug", "nzfs")
REPO = os.path.join(ROOT, "tests", "data", "icechunk", "history")
passed = 0


def check(cond, what):
    global passed
    if not cond:
        print(f"FAILED: {what}")
        print(f"writable: {passed} passed, 1 failed")
        sys.exit(1)
    passed += 1
    print(f"ok: {what}")


def python_model(path, fmt):
    """What a Python model writes with netCDF4-python: a record variable
    with masked values, a packed short with its own fill, attributes."""
    rng = np.random.default_rng(20261128)
    with netCDF4.Dataset(path, "w", format=fmt) as ds:
        ds.createDimension("time", None)
        ds.createDimension("lat", 7)
        ds.createDimension("lon", 9)
        lat = ds.createVariable("lat", "f8", ("lat",))
        lat.units = "degrees_north"
        lat[:] = np.linspace(-60, 60, 7)
        t = ds.createVariable("t2m", "f4", ("time", "lat", "lon"), fill_value=np.float32(-9999.0))
        t.units = "K"
        t.setncattr("valid_range", np.array([150, 350], "f4"))
        values = rng.normal(280, 10, (4, 7, 9)).astype("f4")
        t[0:4] = np.ma.masked_array(values, mask=values > 295)
        p = ds.createVariable("precip", "i2", ("time", "lat", "lon"), fill_value=np.int16(-32767))
        p.setncattr("scale_factor", np.float32(0.01))
        p.set_auto_maskandscale(False)
        p[0:4] = rng.integers(0, 3000, (4, 7, 9), dtype="i2")
        ds.createDimension("name_len", 6)
        n = ds.createVariable("station", "S1", ("lat", "name_len"))
        n.long_name = "station name"
        n[:] = netCDF4.stringtochar(np.array(["alpha", "beta", "gamma", "delta", "eps", "zeta", "eta"], "S6"))
        ds.title = "a python model"
        ds.setncattr("run", np.int32(7))
        if fmt == "NETCDF3_64BIT_DATA":
            u = ds.createVariable("counts", "u8", ("lat",))
            u[:] = np.arange(7, dtype="u8") * (1 << 40)


def xarray_default(path, engine=None):
    """What xarray's to_netcdf writes with no arguments (netCDF-4 through
    netCDF4-python), or through h5netcdf: a dataset with a time
    coordinate, NaNs and attributes."""
    rng = np.random.default_rng(20261204)
    values = rng.normal(280, 10, (3, 4, 5)).astype("f4")
    values[0, 1, 2] = np.nan
    ds = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), values, {"units": "K", "long_name": "2 m temperature"}),
         "mask": (("lat", "lon"), (rng.integers(0, 2, (4, 5))).astype("u1"))},
        coords={"time": np.array(["2026-01-01", "2026-01-02", "2026-01-03"], "datetime64[ns]"),
                "lat": np.linspace(-30, 30, 4), "lon": np.arange(5, dtype="i4")},
        attrs={"title": "xarray's default", "version": np.int32(3)},
    )
    ds.to_netcdf(path, **({"engine": engine} if engine else {}))


def xarray_strings(path):
    """xarray's default to_netcdf of str values: netCDF-4 `string`
    variables (a station coordinate, a 2-D variable with an empty string,
    a newline and UTF-8)."""
    ds = xr.Dataset(
        {"note": (("station", "k"), np.array([["ok", ""], ["two\nlines", "\u00e9t\u00e9"], ["back\\slash", "x"]],
                                             dtype=object)),
         "depth": (("station",), np.array([1.5, 2.5, 3.5]))},
        coords={"station": np.array(["Mawson", "Davis", "Casey"], dtype=object)},
    )
    ds.to_netcdf(path)


def nested_groups(path):
    """netCDF4-python with nested groups and two unlimited dimensions."""
    with netCDF4.Dataset(path, "w", format="NETCDF4") as ds:
        ds.createDimension("time", None)
        ds.createDimension("obs", None)
        t = ds.createVariable("time", "f8", ("time",))
        t[0:3] = [0.0, 1.0, 2.0]
        o = ds.createVariable("obs", "i8", ("obs",))
        o[0:2] = [1 << 40, -7]
        ds.title = "nested"
        inner = ds.createGroup("forecast")
        inner.createDimension("member", 4)
        v = inner.createVariable("t2m", "f4", ("time", "member"), zlib=True, complevel=4)
        v.units = "K"
        v[:] = np.arange(12, dtype="f4").reshape(3, 4)
        deeper = inner.createGroup("stats")
        d = deeper.createVariable("count", "u2", ("member",))
        d[:] = [1, 2, 3, 65000]


def nested_values(path):
    """Each variable of every group, by its path: what netCDF4-python reads."""
    out = {}
    with netCDF4.Dataset(path) as ds:
        pending = [("", ds)]
        while pending:
            prefix, g = pending.pop()
            for name, v in g.variables.items():
                v.set_auto_maskandscale(False)
                out[prefix + name] = (v.dimensions, v.dtype, v[:].tolist(), {a: v.getncattr(a) for a in v.ncattrs()})
            pending.extend((prefix + n + "/", sub) for n, sub in g.groups.items())
    return out


def fortran_model(path, exe, *kind):
    subprocess.run([exe, path, *kind], check=True)


def refs(repo):
    out = []
    for d, _, files in os.walk(os.path.join(repo, "refs")):
        for f in files:
            with open(os.path.join(d, f), "rb") as fh:
                out.append((os.path.join(d, f), fh.read()))
    return sorted(out)


def main_group(repo):
    r = icechunk.Repository.open(icechunk.local_filesystem_storage(repo))
    return zarr.open_group(r.readonly_session(branch="main").store, mode="r")


def into_arrays(repo, mp, work):
    """Writes into existing arrays and directories, read back by zarr-python."""
    g = main_group(repo)
    temp, pressure, humidity = g["temp"][:], g["pressure"][:], g["humidity"][:]
    before = refs(repo)
    m = np.memmap(os.path.join(mp, "temp", "data.bin"), dtype=temp.dtype.newbyteorder("="), mode="r+")
    m[6:12] = np.arange(6, dtype=m.dtype) + 1000.5
    m.flush()
    del m
    temp[1, :] = np.arange(6) + 1000.5
    check(refs(repo) != before, "numpy.memmap r+ on temp/data.bin: one commit")
    check(np.array_equal(main_group(repo)["temp"][:], temp, equal_nan=True),
          "zarr-python reads temp as the memmap wrote it, the other rows as they were")
    exe = os.path.join(work, "patch_stream")
    subprocess.run(["gfortran", "-O0", "-o", exe, os.path.join(ROOT, "tests", "legacy", "patch_stream.f90")], check=True)
    before = refs(repo)
    subprocess.run([exe, os.path.join(mp, "pressure", "data.bin")], check=True)
    pressure[1:3] = [-5, 77]
    check(refs(repo) != before, "Fortran stream I/O readwrite on pressure/data.bin: one commit")
    check(np.array_equal(main_group(repo)["pressure"][:], pressure),
          "zarr-python reads pressure as Fortran wrote it, across two chunks")
    before = refs(repo)
    src = os.path.join(work, "two.bin")
    with open(src, "wb") as f:
        f.write(bytes([42, 43]))
    subprocess.run(["dd", f"if={src}", f"of={os.path.join(mp, 'humidity', '0.1.bin')}", "bs=1", "seek=4",
                    "conv=notrunc", "status=none"], check=True)
    humidity[1, 4:6] = [42, 43]
    check(refs(repo) != before, "dd conv=notrunc on humidity/0.1.bin: one commit")
    check(np.array_equal(main_group(repo)["humidity"][:], humidity),
          "zarr-python reads humidity with the chunk file's bytes in place")
    failed = None
    try:
        with open(os.path.join(mp, "pressure", "data.bin"), "r+b") as f:
            f.seek(16)
            f.write(b"grow")
    except OSError as e:
        failed = e.errno
    check(failed == 27, "a write past the end of data.bin is EFBIG")
    os.mkdir(os.path.join(mp, "derived"))
    check("derived" in main_group(repo).group_keys(), "mkdir derived: zarr-python opens the group")
    subprocess.run(["rm", "-r", os.path.join(mp, "x")], check=True)
    check("x" not in main_group(repo).array_keys() and not os.path.exists(os.path.join(mp, "x")),
          "rm -r x: the array is gone from the branch and the mount")


def group_of(repo, name, **decoding):
    r = icechunk.Repository.open(icechunk.local_filesystem_storage(repo))
    session = r.readonly_session(branch="main")
    return xr.open_zarr(session.store, group=name, consolidated=False, **decoding).load()


def same_attrs(got, want):
    """Same names and values; a value compared as the file's type (JSON
    attributes have numbers, not float32 or int16: docs/writing.md)."""
    if got.keys() != want.keys():
        return False
    for k, w in want.items():
        w = np.asarray(w)
        g = np.asarray(got[k], dtype=w.dtype) if w.dtype.kind in "iuf" else np.asarray(got[k])
        if not np.array_equal(g, w, equal_nan=w.dtype.kind == "f"):
            return False
    return True


def same_fill(got, want):
    """The same fill value (NaN is NaN's), or none for both."""
    if got is None or want is None:
        return got is want
    got, want = np.asarray(got), np.asarray(want)
    return np.array_equal(got, want, equal_nan=want.dtype.kind == "f")


def compare(name, local, repo):
    """xarray on the commit against xarray on the file the program wrote."""
    raw = {"mask_and_scale": False, "decode_times": False}
    got = group_of(repo, name, **raw)
    with xr.open_dataset(local, **raw) as ds:
        want = ds.load()
    check(sorted(got.variables) == sorted(want.variables) and dict(got.sizes) == dict(want.sizes),
          f"{name}: the variables and dimensions {sorted(want.variables)} {dict(want.sizes)}")
    for v in want.variables:
        g, w = got[v], want[v]
        # Strings: numpy's fixed width as netCDF4-python gives them, or the
        # object or StringDType zarr-python's variable-length ones read as.
        same_type = g.dtype == w.dtype or (g.dtype.kind in "UOT" and w.dtype.kind in "UOT")
        check(g.dims == w.dims and same_type and np.array_equal(g.values, w.values, equal_nan=w.dtype.kind == "f"),
              f"{name}/{v}: {w.dtype} {w.dims}, the values as written (got {g.dtype} {g.values.tolist()})")
        check(same_attrs(g.attrs, w.attrs), f"{name}/{v}: attributes {dict(w.attrs)} (got {dict(g.attrs)})")
    check(same_attrs(got.attrs, want.attrs), f"{name}: global attributes {dict(want.attrs)}")
    # Decoded: the same cells missing, the same values (scale_factor is a
    # double in JSON, so a packed variable decodes to float64, not float32).
    got, want = group_of(repo, name), xr.open_dataset(local).load()
    for v in want.data_vars:
        g, w = got[v].values, want[v].values
        if w.dtype.kind not in "iuf":
            check(np.array_equal(g, w), f"{name}/{v}: decoded, the same strings {w.tolist()}")
            continue
        check(np.array_equal(np.isnan(g), np.isnan(w)) and np.allclose(g, w, rtol=1e-6, equal_nan=True),
              f"{name}/{v}: decoded, masked where the file is")
        check(same_fill(got[v].encoding.get("_FillValue"), want[v].encoding.get("_FillValue")),
              f"{name}/{v}: fill value {want[v].encoding.get('_FillValue')}")


def main():
    work = tempfile.mkdtemp(prefix="nzfs-writable.")
    repo = os.path.join(work, "repo")
    shutil.copytree(REPO, repo)
    mp = os.path.join(work, "mnt")
    os.mkdir(mp)
    exe = os.path.join(work, "write_model")
    subprocess.run(["gfortran", "-O0", "-o", exe, os.path.join(ROOT, "tests", "legacy", "write_model.f90"), "-lnetcdf"],
                   check=True)
    writers = [
        ("py_classic", lambda p: python_model(p, "NETCDF3_CLASSIC")),
        ("py_offset64", lambda p: python_model(p, "NETCDF3_64BIT_OFFSET")),
        ("py_cdf5", lambda p: python_model(p, "NETCDF3_64BIT_DATA")),
        ("fortran", lambda p: fortran_model(p, exe)),
        ("fortran_netcdf4", lambda p: fortran_model(p, exe, "netcdf4")),
        ("py_netcdf4", lambda p: python_model(p, "NETCDF4")),
        ("py_netcdf4_classic", lambda p: python_model(p, "NETCDF4_CLASSIC")),
        ("xarray_default", xarray_default),
        ("xarray_h5netcdf", lambda p: xarray_default(p, "h5netcdf")),
        ("xarray_strings", xarray_strings),
    ]
    subprocess.run([NZFS, "mount", "--writable", "--spool-dir", os.path.join(work, "spool"), repo, mp], check=True)
    try:
        for name, write in writers:
            local = os.path.join(work, f"{name}.nc")
            write(local)
            before = refs(repo)
            write(os.path.join(mp, f"{name}.nc"))
            check(refs(repo) != before, f"{name}: one commit on main")
            check(os.path.isdir(os.path.join(mp, name)), f"{name}: the mount shows the group {name}")
            compare(name, local, repo)
        # Nested groups: each a group of the commit, zarr-python reading
        # what netCDF4-python reads of the file written to local disk.
        local = os.path.join(work, "nested.nc")
        nested_groups(local)
        before = refs(repo)
        nested_groups(os.path.join(mp, "nested.nc"))
        check(refs(repo) != before, "nested: one commit on main")
        r = icechunk.Repository.open(icechunk.local_filesystem_storage(repo))
        root = zarr.open_group(r.readonly_session(branch="main").store, mode="r", path="nested")
        for name, (dims, dtype, values, attrs) in nested_values(local).items():
            a = root[name]
            check(tuple(a.metadata.dimension_names) == dims and a.dtype == dtype and a[...].tolist() == values
                  and {k: a.attrs[k] for k in attrs} == attrs,
                  f"nested/{name}: {dtype} {dims}, the values and attributes netCDF4-python reads")
        before = refs(repo)
        bad = os.path.join(mp, "notes.nc")
        failed = False
        try:
            with open(bad, "w") as f:
                f.write("not netCDF")
        except OSError as e:
            failed = e.errno == 5
        check(failed, "a file that is not netCDF classic fails its close() with EIO")
        check(refs(repo) == before, "and the branch did not move")
        into_arrays(repo, mp, work)
    finally:
        subprocess.run([NZFS, "unmount", mp], check=False)
    shutil.rmtree(work, ignore_errors=True)
    print(f"writable: {passed} passed, 0 failed")


if __name__ == "__main__":
    main()

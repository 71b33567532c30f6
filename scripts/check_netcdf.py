#!/usr/bin/env python3
"""Read nzfs's virtual netCDF files and data.bin with the Python stack, through
a real mount: xarray (netcdf4 engine) on <name>.nc equals xarray on the Zarr
store; scipy and GDAL read the CDF-2 file; numpy.memmap of data.bin equals
zarr-python. Usage: python scripts/check_netcdf.py [path/to/nzfs]
Exits non-zero on the first mismatch; prints 'N passed, 0 failed'."""

import os
import subprocess
import sys
import tempfile

import numpy as np
import scipy.io
import xarray as xr
import zarr

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
NZFS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target", "debug", "nzfs")
DATA = os.path.join(ROOT, "tests", "data")
passed = 0


def check(cond, what):
    global passed
    if not cond:
        print(f"FAILED: {what}")
        print("0 passed, 1 failed")
        sys.exit(1)
    passed += 1


def mounted(store):
    mp = tempfile.mkdtemp()
    subprocess.run([NZFS, "mount", os.path.join(DATA, store), mp], check=True, capture_output=True)
    return mp


def unmount(mp):
    subprocess.run([NZFS, "unmount", mp], check=True)
    os.rmdir(mp)


# 1. xarray on the virtual file equals xarray on the Zarr store (root and subgroup).
mp = mounted("differential.zarr")
try:
    for group, nc in [(None, "differential.nc"), ("sub", "sub/sub.nc")]:
        with xr.open_dataset(os.path.join(mp, nc), engine="netcdf4") as ds:
            via_nc = ds.load()
        via_zarr = xr.open_zarr(os.path.join(DATA, "differential.zarr"), group=group, consolidated=False).load()
        xr.testing.assert_equal(via_nc, via_zarr)
        for v in [None, *via_zarr.variables]:
            a, b = (via_nc.attrs, via_zarr.attrs) if v is None else (via_nc[v].attrs, via_zarr[v].attrs)
            same = a.keys() == b.keys() and all(np.array_equal(np.asarray(a[k]), np.asarray(b[k])) for k in a)
            check(same, f"{nc}: attributes of {v or 'the group'}: {a} != {b}")
finally:
    unmount(mp)

# 2. scipy (CDF-1/2 only) reads the CDF-2 file of keys.zarr: same values.
mp = mounted("keys.zarr")
try:
    f = scipy.io.netcdf_file(os.path.join(mp, "keys.nc"), "r", mmap=False)
    for name in ["default_slash", "v2_dot"]:
        want = zarr.open_array(os.path.join(DATA, "keys.zarr"), path=name, mode="r")[...]
        v = f.variables[name][...]  # _Unsigned = "true": signed storage
        got = v.view(v.dtype.byteorder.replace("=", "<") + "u2").astype(np.uint16)
        check(np.array_equal(got, want), f"scipy keys.nc/{name}")
    f.close()
    # GDAL (netCDF driver) reads the CDF-2 file too, honouring _Unsigned; it
    # presents rows bottom-up when there are no coordinate variables.
    want = zarr.open_array(os.path.join(DATA, "keys.zarr"), path="default_slash", mode="r")[...]
    rows = want.shape[0]
    for x, y in [(0, 0), (5, 0), (0, 4), (3, 2)]:
        out = subprocess.run(["gdallocationinfo", "-valonly", f"NETCDF:{mp}/keys.nc:default_slash", str(x), str(y)],
                             check=True, capture_output=True, text=True).stdout
        check(int(out) == want[rows - 1 - y, x], f"gdal keys.nc pixel ({x}, {y}): {out.strip()}")
finally:
    unmount(mp)

# 3. numpy.fromfile and numpy.memmap of data.bin equal zarr-python's decoding.
for store, path in [("sample.zarr", "t2m"), ("sharding.zarr", "rows"), ("endian.zarr", "float64_big"),
                    ("codecs.zarr", "transpose_zstd"), ("blosc.zarr", "zstd_bitshuffle")]:
    mp = mounted(store)
    try:
        want = zarr.open_array(os.path.join(DATA, store), path=path, mode="r")[...]
        dt = want.dtype.newbyteorder("=")
        f = os.path.join(mp, path, "data.bin")
        check(np.array_equal(np.fromfile(f, dt).reshape(want.shape), want, equal_nan=True), f"fromfile {store}/{path}")
        mm = np.memmap(f, dt, mode="r", shape=want.shape)
        check(np.array_equal(mm, want, equal_nan=True), f"memmap {store}/{path}")
        del mm
    finally:
        unmount(mp)

# 4. Zarr v2: xarray's v2 store. Its virtual file reads in xarray as the
# store does (less the string variable, which the classic file leaves out),
# and ncdump -t and cdo show its dates; data.bin of v2 arrays (Fortran
# order, filter chains) equals zarr-python.
mp = mounted("v2_xarray.zarr")
try:
    nc = os.path.join(mp, "v2_xarray.nc")
    with xr.open_dataset(nc, engine="netcdf4") as ds:
        via_nc = ds.load()
    via_zarr = xr.open_zarr(os.path.join(DATA, "v2_xarray.zarr"), zarr_format=2).drop_vars("station").load()
    xr.testing.assert_equal(via_nc, via_zarr)
    check(True, "xarray v2_xarray.nc")
    dump = subprocess.run(["ncdump", "-t", "-v", "time", nc], check=True, capture_output=True, text=True).stdout
    check('"2000-01-02"' in dump and '"2000-01-04"' in dump, f"ncdump -t dates: {dump[-200:]}")
    cdo = subprocess.run(["cdo", "sinfon", nc], check=True, capture_output=True, text=True).stdout
    check("2000-01-03 00:00:00" in cdo and "temp" in cdo, f"cdo sinfon: {cdo[-400:]}")
finally:
    unmount(mp)
for store, path in [("v2_layout.zarr", "order_f_blosc"), ("v2_codecs.zarr", "chain"), ("v2_dtypes.zarr", "t03_be_i2")]:
    mp = mounted(store)
    try:
        want = zarr.open_array(os.path.join(DATA, store), path=path, mode="r", zarr_format=2)[...]
        got = np.fromfile(os.path.join(mp, path, "data.bin"), want.dtype.newbyteorder("=")).reshape(want.shape)
        check(np.array_equal(got, want, equal_nan=True), f"fromfile {store}/{path}")
    finally:
        unmount(mp)

# 5. Strings and datetimes (v3): fixed-length strings are CF character
# arrays (netCDF4-python turns them back into the same strings), datetime64
# arrays carry CF units that ncdump -t and xarray turn into the same dates.
mp = mounted("strings_v3.zarr")
try:
    import netCDF4
    nc = os.path.join(mp, "strings_v3.nc")
    with netCDF4.Dataset(nc) as d:
        for name, enc in [("utf32", None), ("fixed_bytes", "ascii")]:
            want = zarr.open_array(os.path.join(DATA, "strings_v3.zarr"), path=name, mode="r")[...]
            want = [w.decode("latin-1") if isinstance(w, bytes) else str(w) for w in want.tolist()]
            got = [str(g) for g in d.variables[name][:].tolist()]
            check(got == want, f"netCDF4 {name}: {got} != {want}")
    # (ncdump -t prints NaT's _FillValue as a garbled date comment: not ours.)
    dump = subprocess.run(["ncdump", "-t", "-v", "when", nc], check=True, capture_output=True).stdout
    dump = dump.decode("utf-8", "replace")
    check('"1970-01-02"' in dump and '"2001-09-09 01:46:40"' in dump, f"ncdump -t when: {dump[-300:]}")
    with xr.open_dataset(nc, engine="netcdf4") as ds:
        # (when_10s's fourth value, 10^10 s, is past xarray's nanosecond range.)
        for name, n in [("when", 4), ("when_10s", 3)]:
            got = ds[name].values[:n]
            want = zarr.open_array(os.path.join(DATA, "strings_v3.zarr"), path=name, mode="r")[:n]
            check(np.array_equal(got.astype("M8[s]"), want.astype("M8[s]")), f"xarray {name}: {got} != {want}")
finally:
    unmount(mp)

print(f"{passed} passed, 0 failed")

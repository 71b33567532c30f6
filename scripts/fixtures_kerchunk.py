#!/usr/bin/env python3
"""Reference sets as kerchunk and VirtualiZarr write them (issue #35), in
tests/data/kerchunk/. Sources, written by the real libraries:

  t.nc            netCDF-4 (netCDF4-python), one zlib-chunked variable
  day0..2.nc      netCDF-4 daily files: sst(time, lat, lon) zlib + shuffle
                  chunks with a fill value, CF time, lat decreasing, lon
                  contiguous
  h5.h5           HDF5 (h5py): a subgroup, a big-endian gzip-chunked
                  dataset, and a small one kerchunk inlines
  gen.bin         a flat file of float64 blocks for the `gen` set

Reference sets made from them, targets relative to the set:

  refs.json(.gz)  kerchunk SingleHdf5ToZarr of t.nc
  refs.parq/      kerchunk.df.refs_to_dataframe of refs.json
  multi.json      kerchunk MultiZarrToZarr of day0..2.nc along time
  multi.parq/     the same as Parquet, record_size 2, so each variable
                  spans several refs.N.parq files
  h5.json         kerchunk SingleHdf5ToZarr of h5.h5, with inline data
  gen.json        a version-1 set with `templates` and `gen` (by hand: no
                  writer makes one)
  vz.json         VirtualiZarr's to_kerchunk of day1.nc (HDFParser)

Expected values, expected/<set>/<array path>.bin (little-endian, C order):
what xarray reads through fsspec's reference:// filesystem from the set
(jinja templates on, so `gen` is expanded), checked here to equal what
netCDF4-python or h5py read from the sources.

Needs scripts/requirements-kerchunk.txt (a Python 3.12 venv); not part of
check_fixtures.sh. Usage: python scripts/fixtures_kerchunk.py [OUT_DIR]
"""
import gzip
import json
import os
import shutil
import sys

import fsspec
import h5py
import netCDF4
import numpy as np
import xarray as xr
from kerchunk.combine import MultiZarrToZarr
from kerchunk.df import refs_to_dataframe
from kerchunk.hdf import SingleHdf5ToZarr

OUT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data"))


def relative(refs, out):
    """Targets relative to the set's directory, as a published set's are."""
    prefixes = [out + "/", "file://" + out + "/"]
    for k, v in refs["refs"].items():
        if isinstance(v, list) and v and isinstance(v[0], str):
            for p in prefixes:
                if v[0].startswith(p):
                    v[0] = v[0][len(p):]
    return refs


def dump(refs, path):
    with open(path, "w") as f:
        json.dump(refs, f, indent=1, sort_keys=True)


def write_sources(out):
    nc = os.path.join(out, "t.nc")
    with netCDF4.Dataset(nc, "w", format="NETCDF4") as ds:
        ds.createDimension("y", 4)
        ds.createDimension("x", 5)
        v = ds.createVariable("t", "f4", ("y", "x"), chunksizes=(2, 5), zlib=True)
        v[:] = np.arange(20, dtype="f4").reshape(4, 5)
        v.units = "K"
    rng = np.random.default_rng(35)
    for day in range(3):
        with netCDF4.Dataset(os.path.join(out, f"day{day}.nc"), "w", format="NETCDF4") as ds:
            ds.createDimension("time", None)
            ds.createDimension("lat", 6)
            ds.createDimension("lon", 8)
            t = ds.createVariable("time", "f8", ("time",))
            t.units = "days since 2026-01-01"
            t.calendar = "standard"
            t.standard_name = "time"
            t[:] = [float(day)]
            lat = ds.createVariable("lat", "f4", ("lat",), contiguous=True)
            lat.units = "degrees_north"
            lat[:] = np.linspace(75, -75, 6, dtype="f4")
            lon = ds.createVariable("lon", "f4", ("lon",), contiguous=True)
            lon.units = "degrees_east"
            lon[:] = np.arange(8, dtype="f4") * 45
            sst = ds.createVariable(
                "sst", "f4", ("time", "lat", "lon"), chunksizes=(1, 3, 4), zlib=True, shuffle=True, fill_value=-999.0
            )
            sst.units = "K"
            sst.long_name = "sea surface temperature"
            field = (270 + 30 * rng.random((1, 6, 8))).astype("f4")
            field[0, 0, 0] = -999.0
            sst[:] = field
    with h5py.File(os.path.join(out, "h5.h5"), "w", track_order=True) as f:
        g = f.create_group("grp").create_group("sub")
        g.create_dataset("big", data=np.arange(24, dtype=">i4").reshape(4, 6) * 1000 - 7, chunks=(2, 3), compression="gzip")
        g["big"].attrs["units"] = "m"
        f.create_dataset("small", data=np.array([1.5, 2.5, 3.5], dtype="<f8"))
    np.arange(24, dtype="<f8").tofile(os.path.join(out, "gen.bin"))


def sets(out):
    refs = relative(SingleHdf5ToZarr(os.path.join(out, "t.nc"), inline_threshold=0).translate(), out)
    dump(refs, os.path.join(out, "refs.json"))
    with gzip.GzipFile(os.path.join(out, "refs.json.gz"), "wb", mtime=0) as f:
        f.write(json.dumps(refs, sort_keys=True).encode())
    refs_to_dataframe(refs, os.path.join(out, "refs.parq"))

    days = [SingleHdf5ToZarr(os.path.join(out, f"day{d}.nc"), inline_threshold=0).translate() for d in range(3)]
    multi = MultiZarrToZarr(days, concat_dims=["time"], identical_dims=["lat", "lon"], inline_threshold=0).translate()
    multi = relative(multi, out)
    dump(multi, os.path.join(out, "multi.json"))
    refs_to_dataframe(multi, os.path.join(out, "multi.parq"), record_size=2)

    h5 = relative(SingleHdf5ToZarr(os.path.join(out, "h5.h5"), inline_threshold=100).translate(), out)
    assert any(isinstance(v, str) and k.startswith("small/") and not k.endswith((".zarray", ".zattrs")) for k, v in h5["refs"].items()), "nothing inlined"
    dump(h5, os.path.join(out, "h5.json"))

    zarray = {"shape": [4, 6], "chunks": [1, 6], "dtype": "<f8", "fill_value": None, "order": "C",
              "filters": None, "compressor": None, "zarr_format": 2}
    gen = {
        "version": 1,
        "templates": {"f": "gen.bin"},
        "refs": {".zgroup": json.dumps({"zarr_format": 2}), "g/.zarray": json.dumps(zarray),
                 "g/.zattrs": json.dumps({"_ARRAY_DIMENSIONS": ["row", "col"]})},
        "gen": [{"key": "g/{{ r }}.0", "url": "{{f}}", "offset": "{{ (3 - r) * 48 }}", "length": "48",
                 "dimensions": {"r": {"stop": 4}}}],
    }
    dump(gen, os.path.join(out, "gen.json"))

    from obspec_utils.registry import ObjectStoreRegistry
    from obstore.store import LocalStore
    from virtualizarr import open_virtual_dataset
    from virtualizarr.parsers import HDFParser

    url = "file://" + os.path.join(out, "day1.nc")
    registry = ObjectStoreRegistry({"file://": LocalStore()})
    vds = open_virtual_dataset(url, registry=registry, parser=HDFParser(), loadable_variables=[])
    vz = vds.vz.to_kerchunk(format="dict")
    dump(relative(vz, out), os.path.join(out, "vz.json"))


def through_fsspec(path, out):
    """Every array of the set at `path`, as xarray reads it through fsspec."""
    fs = fsspec.filesystem("reference", fo=path, remote_protocol="file", simple_templates=False)
    m = fs.get_mapper("")
    found = {}

    def walk(group):
        ds = xr.open_zarr(fs.get_mapper(group), consolidated=False, decode_times=False, mask_and_scale=False,
                          zarr_format=2)
        for name, v in ds.variables.items():
            found[f"{group}/{name}".strip("/")] = np.asarray(v.values)
        for k in m.keys():
            if k.endswith(".zgroup") and k != ".zgroup" and os.path.dirname(os.path.dirname(k)) == group:
                walk(os.path.dirname(k))

    cwd = os.getcwd()
    os.chdir(out)  # relative targets: fsspec resolves them against the working directory
    try:
        walk("")
    finally:
        os.chdir(cwd)
    return found


def from_sources(out):
    """What netCDF4-python and h5py read from the sources."""
    def nc(paths, var):
        parts = []
        for p in paths:
            with netCDF4.Dataset(os.path.join(out, p)) as ds:
                ds.set_auto_maskandscale(False)
                parts.append(ds.variables[var][:])
        return np.concatenate(parts) if var in ("sst", "time") else parts[0]

    days = [f"day{d}.nc" for d in range(3)]
    with h5py.File(os.path.join(out, "h5.h5")) as f:
        big, small = f["grp/sub/big"][:], f["small"][:]
    gen = np.fromfile(os.path.join(out, "gen.bin"), "<f8").reshape(4, 6)[::-1]
    return {
        "refs.json": {"t": nc(["t.nc"], "t")},
        "multi.json": {v: nc(days, v) for v in ("sst", "time", "lat", "lon")},
        "h5.json": {"grp/sub/big": big, "small": small},
        "gen.json": {"g": gen},
        "vz.json": {v: nc(["day1.nc"], v) for v in ("sst", "time", "lat", "lon")},
    }


def main():
    out = os.path.join(OUT, "kerchunk")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    write_sources(out)
    sets(out)
    truth = from_sources(out)
    for name, want in truth.items():
        got = through_fsspec(os.path.join(out, name), out)
        for var, values in want.items():
            assert var in got, f"{name}: fsspec shows no {var} ({sorted(got)})"
            assert got[var].shape == values.shape and np.array_equal(got[var], values), f"{name}/{var}"
            dest = os.path.join(out, "expected", name, var + ".bin")
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            values.astype(values.dtype.newbyteorder("<")).tofile(dest)
    # t.bin: the first fixture's expected values, where older tests look.
    shutil.copy(os.path.join(out, "expected", "refs.json", "t.bin"), os.path.join(out, "t.bin"))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

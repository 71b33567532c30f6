#!/usr/bin/env python3
"""Reference sets as kerchunk writes them (issue #35): tests/data/kerchunk/
t.nc (netCDF-4, two zlib chunks), refs.json (kerchunk's SingleHdf5ToZarr,
version 1, targets relative to the file) and refs.json.gz, which nzfs
mounts; refs.parq/ (kerchunk.df.refs_to_dataframe: a .zmetadata with
record_size, refs.N.parq per variable), which nzfs refuses; and t.bin, what
netCDF4-python reads from t.nc, little-endian.

Needs kerchunk, h5py, netCDF4, pandas and fastparquet (pinned in
scripts/requirements-kerchunk.txt); not part of check_fixtures.sh, whose
venvs do not carry them. Usage: python scripts/fixtures_kerchunk.py [OUT_DIR]
"""
import gzip
import json
import os
import shutil
import sys

import netCDF4
import numpy as np
from kerchunk.df import refs_to_dataframe
from kerchunk.hdf import SingleHdf5ToZarr

OUT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data"))


def main():
    out = os.path.join(OUT, "kerchunk")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    nc = os.path.join(out, "t.nc")
    with netCDF4.Dataset(nc, "w", format="NETCDF4") as ds:
        ds.createDimension("y", 4)
        ds.createDimension("x", 5)
        v = ds.createVariable("t", "f4", ("y", "x"), chunksizes=(2, 5), zlib=True)
        v[:] = np.arange(20, dtype="f4").reshape(4, 5)
        v.units = "K"
    refs = SingleHdf5ToZarr(nc, inline_threshold=0).translate()
    # Relative to the reference file, as a published set would be.
    for k, v in refs["refs"].items():
        if isinstance(v, list):
            v[0] = "t.nc"
    with open(os.path.join(out, "refs.json"), "w") as f:
        json.dump(refs, f, indent=1, sort_keys=True)
    with gzip.GzipFile(os.path.join(out, "refs.json.gz"), "wb", mtime=0) as f:
        f.write(json.dumps(refs, sort_keys=True).encode())
    refs_to_dataframe(refs, os.path.join(out, "refs.parq"))
    # What netCDF-C/HDF5 read from t.nc, for the mount to be checked against.
    with netCDF4.Dataset(nc) as ds:
        ds.set_auto_mask(False)
        ds.variables["t"][:].astype("<f4").tofile(os.path.join(out, "t.bin"))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

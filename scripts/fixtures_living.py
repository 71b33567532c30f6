#!/usr/bin/env python3
"""A store as a real writer grows it, state by state, for tests/follow.rs.

xarray 2026.9 and zarr-python 3.1 write, into tests/data/living/:
- s0.zarr: t2m(time=4, y=3, x=2), float32, 3 time steps per chunk;
- s1.zarr: s0 after `to_zarr(append_dim="time")` of 2 more steps (the
  shape grows to 6, and chunk c/1/0/0, which held step 3, is rewritten to
  hold steps 3 to 5);
- s2.zarr: s1 with a new variable sst(y, x) added by `to_zarr(mode="a")`;
- s3.zarr: s2 with t2m's `units` attribute changed by zarr-python;
and for each state the values zarr-python reads back of each array, as
little-endian C-order bytes: expected/<state>.<array>.bin.

Usage: .venv/bin/python scripts/fixtures_living.py [OUT_DIR]
(default tests/data/living)
"""
import os
import shutil
import zipfile
import sys
import warnings

import numpy as np
import xarray as xr
import zarr

OUT = os.path.abspath(
    sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data", "living")
)


def steps(first, n):
    t = np.arange(first, first + n)
    values = (1000 * t[:, None, None] + 64 * np.arange(3)[None, :, None] + np.arange(2)[None, None, :]).astype("float32")
    return xr.Dataset(
        {"t2m": (("time", "y", "x"), values, {"units": "K"})},
        coords={"time": ("time", t.astype("int64"), {"units": "days since 2000-01-01"})},
    )


def expected(state):
    root = zarr.open_group(os.path.join(OUT, f"{state}.zarr"), mode="r")
    for name, array in root.arrays():
        data = np.ascontiguousarray(array[...])
        data.astype(data.dtype.newbyteorder("<")).tofile(os.path.join(OUT, "expected", f"{state}.{name}.bin"))


def main():
    # Consolidated metadata is what xarray writes by default; zarr-python
    # warns that Zarr v3 does not specify it.
    warnings.filterwarnings("ignore", message="Consolidated metadata")
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(os.path.join(OUT, "expected"))
    s = lambda n: os.path.join(OUT, f"s{n}.zarr")
    encoding = {"t2m": {"chunks": (3, 3, 2)}, "time": {"chunks": (3,)}}
    steps(0, 4).to_zarr(s(0), encoding=encoding, zarr_format=3, consolidated=True)
    shutil.copytree(s(0), s(1))
    steps(4, 2).to_zarr(s(1), append_dim="time", consolidated=True)
    shutil.copytree(s(1), s(2))
    sst = xr.Dataset({"sst": (("y", "x"), np.arange(6, dtype="float64").reshape(3, 2) + 270.5)})
    sst.to_zarr(s(2), mode="a", consolidated=True)
    shutil.copytree(s(2), s(3))
    group = zarr.open_group(s(3), mode="r+")
    group["t2m"].attrs["units"] = "degC"
    zarr.consolidate_metadata(s(3))
    for n in range(4):
        expected(f"s{n}")
    # The first two states zipped (stored members, fixed times: the same
    # bytes each run), for a zip replaced under a live mount.
    for n in range(2):
        with zipfile.ZipFile(os.path.join(OUT, f"s{n}.zarr.zip"), "w", zipfile.ZIP_STORED) as z:
            for root, _, files in sorted(os.walk(s(n))):
                for f in sorted(files):
                    full = os.path.join(root, f)
                    info = zipfile.ZipInfo(os.path.relpath(full, s(n)), date_time=(2026, 1, 1, 0, 0, 0))
                    with open(full, "rb") as fh:
                        z.writestr(info, fh.read())


if __name__ == "__main__":
    main()

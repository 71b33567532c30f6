"""Fixtures of the conventions and the views built on them, called by
scripts/make_fixtures.py in its order (they draw from its generator): one
store per NZ-1.0 rule (`nz_*.zarr`, what `nzfs check` and the headers are
tested on), an xarray dataset packed in int16 (`packed.zarr`, the `.nc`
GDAL 3.6 opens), and `previews.zarr`, whose `preview.png` files
scripts/check_previews.py compares pixel for pixel.
"""
import os
import shutil

import numpy as np
import xarray as xr
import zarr
from zarr.codecs import ZstdCodec


def make_nz(fx):
    """One store per NZ-1.0 rule: nz_conforming passes, the others break one rule."""
    def store(name, conventions="NZ-1.0", key="conventions"):
        attrs = {key: conventions} if conventions is not None else {}
        return fx.fresh_group(name, **attrs)

    def arr(g, name, data, dims, **kw):
        a = g.create_array(name, shape=data.shape, chunks=tuple(max(1, (n + 1) // 2) for n in data.shape) or None,
                           dtype=data.dtype, dimension_names=dims, fill_value=0, **kw)
        a[...] = data
        return a

    g = store("nz_conforming")
    arr(g, "x", np.array([1.0, 2.0, 4.0, 8.0]), ["x"])
    arr(g, "y", np.array([30, 20, 10], dtype="int32"), ["y"])
    arr(g, "field", fx.RNG.standard_normal((4, 3)).astype("float32"), ["x", "y"],
        attributes={"_FillValue": "AAAAAICHw8A=", "units": "K", "valid_range": [0.0, 1.5]})
    sub = g.create_group("sub")
    arr(sub, "x", np.array([5, 6], dtype="int16"), ["x"])  # another group, another length: fine

    g = store("nz_capital_conventions", "CF-1.12 nz-1.0", key="Conventions")
    arr(g, "x", np.arange(3, dtype="int64"), ["x"])

    g = store("nz_undeclared", None)
    arr(g, "x", np.arange(3, dtype="int64"), ["x"])

    g = store("nz_shared_dimension")
    arr(g, "a", np.zeros(3, dtype="float32"), ["x"])
    arr(g, "b", np.zeros(4, dtype="float32"), ["x"])

    g = store("nz_fill_value_string")
    arr(g, "counts", np.arange(4, dtype="int32"), ["n"], attributes={"_FillValue": "missing"})

    g = store("nz_fill_value_range")
    arr(g, "bytes", np.arange(4, dtype="uint8"), ["n"], attributes={"_FillValue": 300})

    g = store("nz_mixed_attribute")
    arr(g, "v", np.arange(4, dtype="int32"), ["n"], attributes={"flags": [1, "two", 3.0]})

    g = store("nz_not_monotonic")
    arr(g, "x", np.array([1.0, 3.0, 2.0, 4.0]), ["x"])

    g = store("nz_dimension_names")
    arr(g, "unnamed", np.zeros((2, 2), dtype="int8"), None)
    arr(g, "partly", np.zeros((2, 2), dtype="int8"), ["y", "x"])
    fx.edit_json(os.path.join(fx.store_path("nz_dimension_names"), "partly", "zarr.json"),
              lambda d: d.update(dimension_names=["y", None]))

    g = store("nz_naming")
    arr(g, "2nd-field", np.zeros(2, dtype="int8"), ["n"])
    arr(g, "Temp", np.zeros(2, dtype="int8"), ["n"])
    arr(g, "temp", np.zeros(2, dtype="int8"), ["n"])

    g = store("nz_reserved")
    arr(g, "v", np.zeros(2, dtype="int8"), ["n"], attributes={"conventions": "NZ-1.0"})
    g.create_group("grp", attributes={"_FillValue": 0})

    g = store("nz_consolidated_mismatch")
    arr(g, "v", np.zeros(2, dtype="int8"), ["n"], attributes={"units": "m"})
    zarr.consolidate_metadata(fx.store_path("nz_consolidated_mismatch"))
    fx.edit_json(os.path.join(fx.store_path("nz_consolidated_mismatch"), "v", "zarr.json"),
              lambda d: d["attributes"].update(units="km"))


def make_packed(fx):
    """An ordinary xarray dataset whose variable is packed in int16
    (scale_factor, add_offset, _FillValue -32768) with its valid range in
    packed values: JSON integers, which take the variable's type in the
    .nc (NUG), so that nothing in it needs CDF-5 and GDAL 3.6 opens it."""
    path = fx.store_path("packed")
    shutil.rmtree(path, ignore_errors=True)
    t = np.linspace(250.0, 300.0, 24).reshape(2, 3, 4)
    t[0, 0, 0] = np.nan
    ds = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), t, {"units": "K", "valid_min": 0, "valid_max": 20000})},
        coords={"time": np.array([0, 6], dtype="int32"), "lat": [10.0, 20.0, 30.0], "lon": [0.0, 1.0, 2.0, 3.0]},
    )
    enc = {"t2m": {"dtype": "int16", "scale_factor": 0.01, "add_offset": 200.0, "_FillValue": -32768,
                   "chunks": (1, 3, 4)}}
    ds.to_zarr(path, mode="w", zarr_format=3, consolidated=False, encoding=enc)
    for name in ["t2m", "time", "lat", "lon"]:
        fx.record("packed", name)


def make_previews(fx):
    """previews.zarr (issue #37): arrays whose preview.png is checked pixel
    for pixel against one computed from zarr-python's values
    (scripts/check_previews.py): a float field with NaN and fill values
    over an increasing latitude (shown north-up), strided 2; an int16 array
    with no coordinates; a sharded uint16 array strided 3, whose preview
    must decode only the inner chunks its sample points fall in."""
    g = fx.fresh_group("previews", Conventions="NZ-1.0")
    y = np.linspace(-60, 60, 520, dtype="float32")
    lat = g.create_array("lat", shape=(520,), chunks=(520,), dtype="float32", dimension_names=["lat"],
                         fill_value=np.nan)
    lat[:] = y
    lat.attrs.update(units="degrees_north", standard_name="latitude")
    lon = g.create_array("lon", shape=(260,), chunks=(260,), dtype="float32", dimension_names=["lon"],
                         fill_value=np.nan)
    lon[:] = np.linspace(0, 359, 260, dtype="float32")
    lon.attrs.update(units="degrees_east")
    yy, xx = np.meshgrid(np.arange(520), np.arange(260), indexing="ij")
    base = np.round(280 + 15 * np.sin(yy / 60.0) * np.cos(xx / 45.0), 1).astype("float32")
    field = np.stack([base, base[::-1]])
    field[0, 100:140, 30:90] = np.nan
    field[0, 300:330, 150:200] = -999.0
    f = g.create_array("field", shape=field.shape, chunks=(1, 130, 130), dtype="float32",
                       dimension_names=["time", "lat", "lon"], fill_value=-999.0)
    f[:] = field
    f.attrs.update(units="K", long_name="a smooth field with holes", _FillValue=-999.0)
    t = g.create_array("time", shape=(2,), chunks=(2,), dtype="int32", dimension_names=["time"], fill_value=0)
    t[:] = [0, 1]
    t.attrs.update(units="days since 2026-01-01")
    counts = ((yy[:, :90] // 7 + xx[:, :90] // 5) % 50).astype("int16")
    c = g.create_array("counts", shape=(520, 90), chunks=(100, 90), dtype="int16", dimension_names=["y", "x"],
                       fill_value=0)
    c[:] = counts
    sy, sx = np.meshgrid(np.arange(1030), np.arange(700), indexing="ij")
    sharded = ((sy // 3 + sx // 4) % 4000).astype("uint16")
    s = g.create_array("sharded", shape=(1030, 700), shards=(520, 350), chunks=(40, 50), dtype="uint16",
                       dimension_names=["row", "col"], fill_value=0, compressors=[ZstdCodec(level=3)])
    s[:] = sharded
    # Strided 8 over inner chunks 4 rows high: the preview reads every
    # other inner chunk only (tests/previews.rs counts the decodes).
    st = g.create_array("strided", shape=(4096, 64), shards=(4096, 64), chunks=(4, 64), dtype="uint8",
                        dimension_names=["r", "c"], fill_value=0, compressors=[ZstdCodec(level=3)])
    st[:] = ((np.arange(4096)[:, None] // 16 + np.arange(64)[None, :]) % 251).astype("uint8")
    for path in ["field", "counts", "sharded", "strided", "lat", "lon", "time"]:
        fx.record("previews", path)

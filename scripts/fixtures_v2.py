"""Zarr v2 fixtures, written by zarr-python (zarr_format=2), xarray and
netCDF-C's nccopy (NCZarr). Called by make_fixtures.py, whose helpers
(`expect`, `store_path`, `RNG`, ...) arrive as `fx`.

Expected arrays come from zarr-python reading each store back, except for
the NCZarr stores: those are checked against the numpy arrays the netCDF
file was generated from (zarr-python 3 refuses their "<u1"-style dtypes).
"""

import os
import shutil
import subprocess

import numcodecs
import numpy as np
import xarray as xr
import zarr


def little_any(a):
    """Little-endian C-order bytes for any dtype nzfs exposes as .bin."""
    a = np.ascontiguousarray(a)
    if a.dtype.kind in "Mm":
        a = a.astype(a.dtype.newbyteorder("<")).view("<i8")
    elif a.dtype.kind in "iufcU" and a.dtype.itemsize > 1:
        a = a.astype(a.dtype.newbyteorder("<"))
    return a.tobytes(order="C")


def record(fx, store, path, fill_bits=None):
    a = zarr.open_array(fx.store_path(store), path=path, mode="r", zarr_format=2)
    data = np.asarray(a[...])
    fx.expect(store, path, little_any(data), a.metadata.dtype.to_native_dtype().str, a.metadata.chunks,
              fill_bits=fill_bits, shape=list(data.shape))


def fresh(fx, name):
    path = fx.store_path(name)
    shutil.rmtree(path, ignore_errors=True)
    return zarr.open_group(path, mode="w", zarr_format=2)


V2_DTYPES = {
    # dtype: fill value
    "|b1": True, "|i1": -3, "<i2": -300, ">i2": 301, "<i4": 7, ">i4": -8, "<i8": -(2**40), ">i8": 2**41,
    "|u1": 200, "<u2": 60000, ">u2": 60001, "<u4": 4000000000, ">u4": 5, "<u8": 2**63 + 5, ">u8": 9,
    "<f2": -1.5, ">f2": 2.5, "<f4": "NaN", ">f4": -9999.5, "<f8": "-Infinity", ">f8": 1e300,
    "<c8": None, ">c16": None,
    "<M8[s]": None, ">M8[10s]": None, "<m8[ms]": None, "<M8[D]": None,
    "|S6": None, "<U4": None, ">U3": None,
}


def sample(dtype, shape, rng):
    dt = np.dtype(dtype)
    if dt.kind == "M":
        return (np.datetime64("2020-01-01T00:00:00") + rng.integers(0, 10**6, size=shape).astype("m8[s]")).astype(dt)
    if dt.kind == "m":
        return rng.integers(-10**6, 10**6, size=shape).astype(dt)
    if dt.kind == "S":
        return np.array([b"ab", b"stationX", b"", b"xyz\x01"] * 10)[:np.prod(shape)].reshape(shape).astype(dt)
    if dt.kind == "U":
        return np.array(["ab", "\u00e9t\u00e9", "", "\U0001f600x"] * 10)[:np.prod(shape)].reshape(shape).astype(dt)
    if dt.kind == "b":
        return rng.integers(0, 2, size=shape).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, size=shape, dtype=dt.newbyteorder("="), endpoint=True).astype(dt)
    if dt.kind == "f":
        return (rng.standard_normal(shape) * 1000).astype(dt)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)


def make_dtypes(fx):
    g = fresh(fx, "v2_dtypes")
    for i, (dtype, fill) in enumerate(V2_DTYPES.items()):
        name = f"t{i:02d}_" + dtype.replace("<", "le_").replace(">", "be_").replace("|", "").replace("[", "_") \
            .replace("]", "")
        kw = {} if fill is None else {"fill_value": fill}
        a = g.create_array(name, shape=(5, 7), chunks=(2, 3), dtype=dtype, compressors=numcodecs.Zstd(level=1), **kw)
        data = sample(dtype, (5, 7), fx.RNG)
        a[:3, :] = data[:3, :]  # the last chunk row stays absent: the fill value
        record(fx, "v2_dtypes", name)


def make_codecs(fx):
    """Every compressor, filter and checksum, alone and chained."""
    g = fresh(fx, "v2_codecs")
    f8 = (np.cumsum(fx.RNG.standard_normal(200)) * 10).astype("<f8").reshape(20, 10)
    i4 = fx.RNG.integers(-1000, 1000, size=(20, 10)).astype(">i4")
    cases = {
        "none": (f8, None, None),
        "zlib": (f8, numcodecs.Zlib(level=5), None),
        "gzip": (f8, numcodecs.GZip(level=5), None),
        "bz2": (f8, numcodecs.BZ2(level=5), None),
        "lz4": (f8, numcodecs.LZ4(acceleration=1), None),
        "lzma": (f8, numcodecs.LZMA(), None),
        "zstd": (f8, numcodecs.Zstd(level=3), None),
        "crc32": (i4, numcodecs.CRC32(), None),
        "crc32_end": (i4, numcodecs.CRC32(location="end"), None),
        "adler32": (i4, numcodecs.Adler32(), None),
        "fletcher32": (i4, numcodecs.Fletcher32(), None),
        "jenkins": (i4, numcodecs.JenkinsLookup3(initval=7), None),
        "delta": (i4, numcodecs.Zlib(), [numcodecs.Delta(dtype=">i4", astype=">i2")]),
        "delta_float": (f8.astype("<f4"), None, [numcodecs.Delta(dtype="<f4")]),
        "fixedscaleoffset": (f8, numcodecs.Zlib(), [numcodecs.FixedScaleOffset(offset=0, scale=10, dtype="<f8",
                                                                               astype="<i4")]),
        "quantize": (f8, None, [numcodecs.Quantize(digits=2, dtype="<f8", astype="<f4")]),
        "bitround": (f8.astype("<f4"), numcodecs.Zstd(), [numcodecs.BitRound(keepbits=8)]),
        "shuffle": (i4, numcodecs.Zlib(), [numcodecs.Shuffle(elementsize=4)]),
        "astype": (f8, None, [numcodecs.AsType(encode_dtype="<f4", decode_dtype="<f8")]),
        "packbits": (fx.RNG.integers(0, 2, size=(20, 10)).astype(bool), None, [numcodecs.PackBits()]),
        "chain": (i4, numcodecs.Blosc(cname="zstd", clevel=3, shuffle=numcodecs.Blosc.BITSHUFFLE),
                  [numcodecs.Delta(dtype=">i4"), numcodecs.Shuffle(elementsize=4), numcodecs.Adler32()]),
    }
    for cname in ["lz4", "lz4hc", "blosclz", "zlib", "zstd"]:
        for shuffle in [numcodecs.Blosc.NOSHUFFLE, numcodecs.Blosc.SHUFFLE, numcodecs.Blosc.BITSHUFFLE]:
            cases[f"blosc_{cname}_{shuffle}"] = (f8, numcodecs.Blosc(cname=cname, clevel=5, shuffle=shuffle), None)
    labels = ["low", "mid", "h\u00efgh"]
    cat = np.array(labels * 70)[:200].reshape(20, 10).astype("<U4")
    cases["categorize"] = (cat, None, [numcodecs.Categorize(labels, dtype="<U4", astype="u1")])
    for name, (data, compressor, filters) in cases.items():
        a = g.create_array(name, shape=data.shape, chunks=(7, 4), dtype=data.dtype, compressors=compressor,
                           filters=filters, fill_value=None)
        a[...] = data
        record(fx, "v2_codecs", name)


def make_layout(fx):
    """Fortran order, "/" keys, fills over absent chunks, 0-d, nesting."""
    g = fresh(fx, "v2_layout")
    d3 = fx.RNG.integers(-10**6, 10**6, size=(6, 7, 5)).astype("<i4")
    a = g.create_array("order_f", shape=d3.shape, chunks=(4, 3, 2), dtype="<i4", order="F", compressors=None)
    a[...] = d3
    record(fx, "v2_layout", "order_f")
    a = g.create_array("order_f_blosc", shape=d3.shape, chunks=(4, 3, 2), dtype=">f8", order="F",
                       compressors=numcodecs.Blosc(cname="lz4", shuffle=numcodecs.Blosc.SHUFFLE))
    a[...] = d3.astype(">f8") / 7
    record(fx, "v2_layout", "order_f_blosc")
    a = g.create_array("slash", shape=(5, 6), chunks=(2, 4), dtype="<u2", chunk_key_encoding={"name": "v2",
                       "separator": "/"}, compressors=numcodecs.Zlib())
    a[...] = np.arange(30, dtype="<u2").reshape(5, 6)
    record(fx, "v2_layout", "slash")
    for name, dtype, fill, bits in [("fill_nan", "<f4", "NaN", np.float32(np.nan)),
                                    ("fill_int", ">i2", -7, np.int16(-7)),
                                    ("fill_null", "<f8", None, np.float64(0))]:
        a = g.create_array(name, shape=(7, 4), chunks=(3, 3), dtype=dtype, fill_value=fill, compressors=None)
        a[:3, :] = np.arange(12).reshape(3, 4).astype(dtype)
        record(fx, "v2_layout", name, fill_bits=fx.little(np.array([bits])).hex())
    a = g.create_array("scalar", shape=(), dtype="<f8", compressors=None)
    a[...] = 273.15
    record(fx, "v2_layout", "scalar")
    sub = g.create_group("sub").create_group("deep")
    a = sub.create_array("leaf", shape=(3,), chunks=(2,), dtype="|i1", compressors=numcodecs.Zlib())
    a[...] = [1, -2, 3]
    record(fx, "v2_layout", "sub/deep/leaf")
    # An implicit group: arrays under a directory without .zgroup.
    a = g.create_group("implicit").create_array("inner", shape=(4,), chunks=(4,), dtype="<i8", compressors=None)
    a[...] = [5, 6, 7, 8]
    record(fx, "v2_layout", "implicit/inner")
    os.remove(os.path.join(fx.store_path("v2_layout"), "implicit", ".zgroup"))


def make_xarray(fx):
    """What xarray writes by default in v2 (blosc, consolidated, CF encoding)."""
    path = fx.store_path("v2_xarray")
    shutil.rmtree(path, ignore_errors=True)
    time = np.array(["2000-01-01", "2000-01-02", "2000-01-03", "2000-01-04"], dtype="M8[ns]")
    temp = (280 + 5 * fx.RNG.standard_normal((4, 3, 2))).astype("float32")
    temp[0, 0, 0] = np.nan
    ds = xr.Dataset(
        {"temp": (("time", "lat", "lon"), temp, {"units": "K", "long_name": "air temperature"}),
         "station": (("lat",), np.array(["north", "mid", "south"], dtype=object))},
        coords={"time": time, "lat": ("lat", np.array([10.0, 0.0, -10.0]), {"units": "degrees_north"}),
                "lon": ("lon", np.array([100.0, 110.0], dtype="float32"), {"units": "degrees_east"})},
        attrs={"title": "nzfs v2 fixture", "Conventions": "CF-1.12"},
    )
    enc = {"temp": {"dtype": "int16", "scale_factor": 0.01, "add_offset": 280.0, "_FillValue": -32768},
           "time": {"units": "days since 2000-01-01", "calendar": "proleptic_gregorian", "dtype": "int64"}}
    ds.to_zarr(path, mode="w", zarr_format=2, consolidated=True, encoding=enc)
    for v in ["temp", "time", "lat", "lon"]:
        record(fx, "v2_xarray", v)


NC_CDL = """netcdf nczarr_src {
dimensions:
	time = 3 ;
	nv = 4 ;
	bnds = 2 ;
variables:
	double time(time) ;
		time:units = "days since 2000-01-01" ;
		time:long_name = "time" ;
	float v(time, nv) ;
		v:_FillValue = -999.f ;
		v:flags = 1b, 2b ;
		v:weights = 0.5f, 0.25f ;
		v:count = 3s ;
	ubyte q(nv) ;
	int sc ;
		sc:note = "a scalar" ;

// global attributes:
		:title = "NCZarr fixture" ;
		:version = 2 ;
data:
 time = 0, 1, 2 ;
 v = 1, 2, 3, 4, 5, _, 7, 8, 9, 10, 11, 12.5 ;
 q = 250, 1, 2, 3 ;
 sc = 7 ;

group: sub {
  dimensions:
  	n = 2 ;
  variables:
  	short w(n, nv) ;
  		w:units = "m" ;
  	uint64 big(n) ;

  // group attributes:
  		:level = 1 ;
  data:
   w = 1, 2, 3, 4, 5, 6, 7, 8 ;
   big = 18446744073709551615, 1 ;
  } // group sub
}
"""

NC_VALUES = {
    "time": np.array([0, 1, 2], "<f8"),
    "v": np.array([1, 2, 3, 4, 5, -999, 7, 8, 9, 10, 11, 12.5], "<f4").reshape(3, 4),
    "q": np.array([250, 1, 2, 3], "u1"),
    "sc": np.array(7, "<i4"),
    "sub/w": np.arange(1, 9, dtype="<i2").reshape(2, 4),
    "sub/big": np.array([2**64 - 1, 1], "<u8"),
}


def make_nczarr(fx):
    """netCDF-4 (subgroup, a dimension without a coordinate variable, typed
    attributes, a scalar) copied by nccopy into mode=nczarr and mode=zarr."""
    nc = os.path.join(fx.OUT, "nczarr_src.nc")
    cdl = os.path.join(fx.OUT, "nczarr_src.cdl")
    with open(cdl, "w") as f:
        f.write(NC_CDL)
    subprocess.run(["ncgen", "-k", "nc4", "-o", nc, cdl], check=True)
    os.remove(cdl)
    for mode in ["nczarr", "zarr"]:
        store = f"v2_{mode}"
        path = fx.store_path(store)
        shutil.rmtree(path, ignore_errors=True)
        subprocess.run(["nccopy", nc, f"file://{path}#mode={mode},file"], check=True)
        for var, data in NC_VALUES.items():
            fx.expect(store, var, fx.little(data), data.dtype.str, list(data.shape) or [], shape=list(data.shape))


def make_bad(fx):
    """Broken v2 nodes, edited by hand after zarr-python wrote them: the
    mount must refuse each with EIO naming it, and read the rest."""
    g = fresh(fx, "v2_bad")
    root = fx.store_path("v2_bad")
    for name in ["bad_json", "unknown_codec", "structured", "short_chunk", "bad_crc32", "good"]:
        comp = numcodecs.CRC32() if name == "bad_crc32" else None
        a = g.create_array(name, shape=(4,), chunks=(2,), dtype="<i4", compressors=comp, fill_value=0)
        a[...] = np.arange(1, 5, dtype="<i4")
    with open(os.path.join(root, "bad_json", ".zarray"), "w") as f:
        f.write('{"zarr_format": 2, "shape": [4')
    fx.edit_json(os.path.join(root, "unknown_codec", ".zarray"), lambda d: d.update(compressor={"id": "mystery"}))
    fx.edit_json(os.path.join(root, "structured", ".zarray"), lambda d: d.update(dtype=[["a", "<i4"], ["b", "|O"]]))
    with open(os.path.join(root, "short_chunk", "1"), "r+b") as f:
        f.truncate(5)
    with open(os.path.join(root, "bad_crc32", "1"), "r+b") as f:
        raw = bytearray(f.read())
        raw[-1] ^= 0xFF
        f.seek(0)
        f.write(raw)
    record(fx, "v2_bad", "good")


def make_all(fx):
    for make in [make_dtypes, make_codecs, make_layout, make_xarray, make_nczarr, make_bad]:
        make(fx)

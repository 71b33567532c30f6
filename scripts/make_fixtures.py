#!/usr/bin/env python3
"""Write the test fixtures under tests/data/ with zarr-python 3 and xarray.

Usage:  python scripts/make_fixtures.py [OUT_DIR]     (default: tests/data)

Each store is written by zarr-python or xarray, then the expected decoded
arrays are read back with zarr-python (or, where zarr-python cannot read a
store, built with numpy) and saved as raw little-endian C-order bytes:

    OUT_DIR/<store>.zarr/...                 the store
    OUT_DIR/expected/<store>/<path>.bin      the whole decoded array
    OUT_DIR/expected/manifest.json           one entry per array

A few stores are edited by hand after writing, to hold what the spec allows
but zarr-python does not write (r* types, "0x..." NaN payloads, short-hand
names, v2 keys with "/") and what must be refused (unknown fields and
codecs, a corrupt crc32c, broken JSON). Those edits are below, in code.
"""

import json
import os
import shutil
import sys
import warnings

import numpy as np
import xarray as xr
import zarr
from zarr.codecs import (BloscCodec, BytesCodec, Crc32cCodec, GzipCodec, ShardingCodec, TransposeCodec,
                         ZstdCodec)

warnings.filterwarnings("ignore")

OUT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data"))
RNG = np.random.default_rng(20261122)
MANIFEST = []


def store_path(name):
    return os.path.join(OUT, name + ".zarr")


def fresh_group(name, **attrs):
    path = store_path(name)
    shutil.rmtree(path, ignore_errors=True)
    g = zarr.open_group(path, mode="w", zarr_format=3)
    if attrs:
        g.attrs.update(attrs)
    return g


def little(a):
    """The array as little-endian bytes in C order (nzfs's host order here)."""
    a = np.ascontiguousarray(a)
    if a.dtype.kind in "iufc" and a.dtype.itemsize > 1:
        a = a.astype(a.dtype.newbyteorder("<"))
    return a.tobytes(order="C")


def expect(store, path, data, dtype_name, chunk_shape, fill_bits=None, shape=None):
    """Record the expected decoded content of one array."""
    rel = os.path.join("expected", store, path + ".bin")
    full = os.path.join(OUT, rel)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    raw = little(data) if isinstance(data, np.ndarray) else data
    with open(full, "wb") as f:
        f.write(raw)
    if shape is None:
        shape = list(np.shape(data)) if isinstance(data, np.ndarray) else None
    MANIFEST.append(
        {
            "store": store + ".zarr",
            "path": path,
            "data_type": dtype_name,
            "shape": shape,
            "chunk_shape": list(chunk_shape),
            "expected": rel,
            # Hex of one fill element in little-endian order: the bytes an
            # absent chunk must hold beyond the array bounds too.
            "fill": fill_bits,
        }
    )


def from_zarr(store, path):
    a = zarr.open_array(store_path(store), path=path, mode="r")
    return np.asarray(a[...]), a


def record(store, path):
    data, a = from_zarr(store, path)
    meta = a.metadata.to_dict()
    dtype = meta["data_type"] if isinstance(meta["data_type"], str) else meta["data_type"]["name"]
    # The chunk grid's chunks: for a sharded array, the shards.
    expect(store, path, data, dtype, meta["chunk_grid"]["configuration"]["chunk_shape"])


def partial(a, data):
    """Write data to the first half of the array, leaving later chunks absent."""
    if a.ndim == 0:
        a[...] = data
        return
    cut = tuple(slice(0, max(1, s // 2 + 1)) if i == 0 else slice(None) for i, s in enumerate(a.shape))
    a[cut] = data[cut]


def random_data(dtype, shape):
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return RNG.integers(0, 2, size=shape).astype(bool)
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return RNG.integers(info.min, info.max, size=shape, dtype=dt, endpoint=True)
    if dt.kind == "f":
        return (RNG.standard_normal(shape) * 1000).astype(dt)
    if dt.kind == "c":
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dt)
    raise ValueError(dtype)


def edit_json(path, fn):
    with open(path) as f:
        doc = json.load(f)
    fn(doc)
    with open(path, "w") as f:
        json.dump(doc, f, indent=2, allow_nan=True)


# --- every data type, partially written, non-zero fill values ----------------
DTYPES = {
    "bool": True,
    "int8": -3,
    "int16": -300,
    "int32": 7,
    "int64": -(2**40),
    "uint8": 200,
    "uint16": 60000,
    "uint32": 4000000000,
    "uint64": 2**63 + 5,
    "float16": -1.5,
    "float32": -9999.5,
    "float64": 1e300,
    "complex64": 1.5 - 2j,
    "complex128": -0.25 + 1e10j,
}


def make_dtypes():
    g = fresh_group("dtypes")
    for name, fill in DTYPES.items():
        a = g.create_array(name, shape=(5, 7), chunks=(2, 3), dtype=name, fill_value=fill,
                           compressors=[ZstdCodec(level=3)], dimension_names=["y", "x"])
        partial(a, random_data(name, (5, 7)))
        record("dtypes", name)
    # zarr-python's own raw-bytes extension type.
    a = g.create_array("raw_bytes", shape=(5,), chunks=(2,), dtype="V3", fill_value=b"\x01\x02\x03")
    a[:2] = np.array([b"abc", b"xyz"], dtype="V3")
    record("dtypes", "raw_bytes")


def make_endian():
    g = fresh_group("endian")
    for name in ["int16", "int32", "int64", "uint16", "uint32", "uint64", "float16", "float32", "float64",
                 "complex64", "complex128", "int8", "bool"]:
        for endian in ["big", "little"]:
            path = f"{name}_{endian}"
            a = g.create_array(path, shape=(6, 5), chunks=(4, 4), dtype=name,
                               serializer=BytesCodec(endian=endian if np.dtype(name).itemsize > 1 else None),
                               compressors=None)
            a[...] = random_data(name, (6, 5))
            record("endian", path)


def make_codecs():
    g = fresh_group("codecs")
    data3 = random_data("int32", (6, 7, 5))
    specs = {
        "transpose_zstd": dict(filters=[TransposeCodec(order=(2, 0, 1))], compressors=[ZstdCodec(level=5)]),
        "transpose_big_gzip": dict(filters=[TransposeCodec(order=(1, 2, 0))], serializer=BytesCodec(endian="big"),
                                   compressors=[GzipCodec(level=6)]),
        "gzip": dict(compressors=[GzipCodec(level=1)]),
        "crc32c": dict(compressors=[Crc32cCodec()]),
        "zstd_crc32c": dict(compressors=[ZstdCodec(level=1, checksum=True), Crc32cCodec()]),
        "transpose_reversed_crc32c": dict(filters=[TransposeCodec(order=(2, 1, 0))], compressors=[Crc32cCodec()]),
    }
    for path, kw in specs.items():
        a = g.create_array(path, shape=data3.shape, chunks=(4, 3, 5), dtype="int32", fill_value=-1, **kw)
        a[...] = data3
        record("codecs", path)
    # The draft's "F" order, which zarr-python no longer writes: same bytes
    # as the explicit reversed permutation.
    shutil.copytree(os.path.join(store_path("codecs"), "transpose_reversed_crc32c"),
                    os.path.join(store_path("codecs"), "transpose_F"))
    edit_json(os.path.join(store_path("codecs"), "transpose_F", "zarr.json"),
              lambda d: d["codecs"][0]["configuration"].update(order="F"))
    expect("codecs", "transpose_F", data3, "int32", (4, 3, 5))


def make_fills():
    g = fresh_group("fills")
    forms = {
        # path: (dtype, fill_value as written in zarr.json, fill element for numpy)
        "nan": ("float32", "NaN", np.float32(np.nan)),
        "bare_nan": ("float64", float("nan"), np.float64(np.nan)),
        "inf": ("float32", "Infinity", np.float32(np.inf)),
        "neg_inf": ("float64", "-Infinity", np.float64(-np.inf)),
        "nan_payload32": ("float32", "0x7fc00001", np.frombuffer(np.uint32(0x7fc00001).tobytes(), "<f4")[0]),
        "nan_payload64": ("float64", "0xfff0000000000123",
                          np.frombuffer(np.uint64(0xfff0000000000123).tobytes(), "<f8")[0]),
        "hex_one16": ("float16", "0x3c00", np.float16(1.0)),
        "number": ("float32", -9999, np.float32(-9999)),
        "integer": ("int16", -7, np.int16(-7)),
        "complex_pair": ("complex64", ["NaN", 1.5], np.complex64(complex(np.nan, 1.5))),
        "complex_inf": ("complex128", ["-Infinity", "0x3ff0000000000000"], np.complex128(complex(-np.inf, 1.0))),
        "boolean": ("bool", True, np.bool_(True)),
    }
    for path, (dtype, fill_json, fill_np) in forms.items():
        a = g.create_array(path, shape=(7, 4), chunks=(3, 3), dtype=dtype, fill_value=0,
                           compressors=[ZstdCodec(level=1)])
        data = random_data(dtype, (7, 4))
        a[:3, :] = data[:3, :]  # whole chunks: the fill is edited below
        edit_json(os.path.join(store_path("fills"), path, "zarr.json"), lambda d: d.update(fill_value=fill_json))
        want = np.full((7, 4), fill_np, dtype=dtype)
        want[:3, :] = data[:3, :]
        expect("fills", path, want, dtype, (3, 3), fill_bits=little(np.array([fill_np], dtype=dtype)).hex())


def make_raw():
    """r* data types: written by hand (zarr-python does not write them)."""
    path = store_path("raw")
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(os.path.join(path, "r16", "c"))
    os.makedirs(os.path.join(path, "r24"))
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "group", "attributes": {}}, f)
    data = RNG.integers(0, 256, size=(5, 2), dtype=np.uint8)  # 5 elements of r16
    meta = {"zarr_format": 3, "node_type": "array", "shape": [5], "data_type": "r16",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": [1, 2],
            "codecs": [{"name": "bytes"}], "attributes": {}, "dimension_names": ["n"]}
    with open(os.path.join(path, "r16", "zarr.json"), "w") as f:
        json.dump(meta, f, indent=2)
    for i in range(2):  # chunk 2 absent -> fill
        with open(os.path.join(path, "r16", "c", str(i)), "wb") as f:
            f.write(data[2 * i:2 * i + 2].tobytes())
    want = np.concatenate([data[:4].ravel(), np.array([1, 2], np.uint8)])
    expect("raw", "r16", want.tobytes(), "r16", (2,), fill_bits="0102")
    MANIFEST[-1]["shape"] = [5]
    meta.update(shape=[3], data_type="r24", fill_value=[9, 8, 7])
    meta["chunk_grid"]["configuration"]["chunk_shape"] = [2]
    with open(os.path.join(path, "r24", "zarr.json"), "w") as f:
        json.dump(meta, f, indent=2)
    expect("raw", "r24", bytes([9, 8, 7]) * 3, "r24", (2,), fill_bits="090807")
    MANIFEST[-1]["shape"] = [3]


def make_keys():
    g = fresh_group("keys")
    data = random_data("uint16", (5, 6))
    encodings = {
        "default_slash": {"name": "default", "separator": "/"},
        "default_dot": {"name": "default", "separator": "."},
        "v2_dot": {"name": "v2", "separator": "."},
        "v2_slash": {"name": "v2", "separator": "/"},
    }
    for path, enc in encodings.items():
        a = g.create_array(path, shape=(5, 6), chunks=(2, 4), dtype="uint16", chunk_key_encoding=enc,
                           compressors=[ZstdCodec(level=1)])
        a[...] = data
        record("keys", path)
    # 0-d arrays under each encoding: keys "c" and "0".
    for path, enc in [("scalar_default", {"name": "default"}), ("scalar_v2", {"name": "v2"})]:
        a = g.create_array(path, shape=(), dtype="float64", fill_value=0, chunk_key_encoding=enc)
        a[...] = 3.25
        record("keys", path)


def make_hierarchy():
    g = fresh_group("hier", title="nested groups", nan_attr=float("nan"), inf_attr=float("inf"),
                    neg_inf=float("-inf"), ints=[1, 2, 3], mixed=[1, "a"], flag=True, nested={"a": [1, 2]},
                    nothing=None, text='quote " and \\ and\nnewline')
    sub = g.create_group("sub", attributes={"level": 1})
    deep = sub.create_group("deep")
    a = deep.create_array("edge", shape=(7, 5), chunks=(3, 2), dtype="float32", fill_value=float("nan"),
                          dimension_names=["y", "x"], attributes={"units": "K", "scale": 0.5, "nan": float("nan")})
    a[...] = random_data("float32", (7, 5))
    record("hier", "sub/deep/edge")
    s = g.create_array("scalar", shape=(), dtype="int32", fill_value=0, dimension_names=[])
    s[...] = 42
    record("hier", "scalar")
    z = g.create_array("empty", shape=(0, 3), chunks=(2, 2), dtype="float64", dimension_names=["t", "x"])
    record("hier", "empty")
    # An implicit group: an array whose parent group has no zarr.json.
    imp = g.create_group("implicit")
    b = imp.create_array("inner", shape=(4,), chunks=(3,), dtype="int8", fill_value=5, dimension_names=["i"])
    b[:2] = [1, 2]
    record("hier", "implicit/inner")
    os.remove(os.path.join(store_path("hier"), "implicit", "zarr.json"))
    # A node literally named like the generated header.
    h = g.create_array("header.cdl", shape=(2,), chunks=(2,), dtype="uint8", dimension_names=["two"])
    h[...] = [7, 9]
    record("hier", "header.cdl")


def make_consolidated():
    g = fresh_group("consolidated", conventions="NZ-1.0")
    for i in range(3):
        a = g.create_array(f"v{i}", shape=(4, 4), chunks=(2, 2), dtype="float64", dimension_names=["y", "x"])
        a[...] = random_data("float64", (4, 4))
        record("consolidated", f"v{i}")
    grp = g.create_group("grp")
    a = grp.create_array("w", shape=(3,), chunks=(2,), dtype="int64", dimension_names=["n"])
    a[...] = [1, 2, 3]
    record("consolidated", "grp/w")
    zarr.consolidate_metadata(store_path("consolidated"))
    # Written after consolidation: a reader that prefers the consolidated
    # view (as NZ asks) does not list it.
    late = zarr.open_group(store_path("consolidated"), mode="r+", use_consolidated=False)
    late.create_array("not_consolidated", shape=(1,), chunks=(1,), dtype="int8")
    edit_json(os.path.join(store_path("consolidated"), "zarr.json"), lambda d: None)


def make_sample():
    """The bundled NZ sample: what xarray writes for a small CF dataset."""
    path = store_path("sample")
    shutil.rmtree(path, ignore_errors=True)
    time = np.arange(10, dtype="int64")
    lat = np.linspace(-45, 45, 20, dtype="float32")
    lon = np.linspace(0, 350, 14, dtype="float32")
    field = (280 + 20 * np.cos(np.deg2rad(lat))[None, :, None] + np.sin(np.deg2rad(lon))[None, None, :]
             + 0.1 * time[:, None, None] + RNG.standard_normal((10, 20, 14))).astype("float32")
    field[0, 0, 0] = np.nan
    ds = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), field, {"units": "K", "long_name": "2 metre temperature",
                                                 "standard_name": "air_temperature"})},
        coords={"time": ("time", time, {"units": "days since 2000-01-01", "calendar": "standard"}),
                "lat": ("lat", lat, {"units": "degrees_north"}),
                "lon": ("lon", lon, {"units": "degrees_east"})},
        attrs={"conventions": "NZ-1.0 CF-1.12", "title": "nzfs sample: smooth field plus noise"},
    )
    enc = {"t2m": {"chunks": (5, 10, 7), "_FillValue": -9999.0, "compressors": [ZstdCodec(level=3)]},
           "time": {"_FillValue": None}}
    ds.to_zarr(path, mode="w", zarr_format=3, consolidated=True, encoding=enc)
    for v in ["t2m", "time", "lat", "lon"]:
        record("sample", v)


def make_zips():
    """Zip stores (issue #30): zarr-python's ZipStore (members stored) and
    the same store as a directory, then that directory zipped with its
    top-level folder and deflated members, as `zip -r` makes one. The zips
    are not compared by check_fixtures.sh (zip stamps times); the tests
    compare each zip's mount with the directory's."""
    import zipfile
    data = np.arange(20 * 14, dtype="float32").reshape(20, 14) / 7
    ints = np.arange(64, dtype="int16").reshape(8, 8)
    zpath = os.path.join(OUT, "zipped.zarr.zip")
    dpath = store_path("zipped")
    shutil.rmtree(dpath, ignore_errors=True)
    for p in [zpath, os.path.join(OUT, "zipped.zip")]:
        if os.path.exists(p):
            os.remove(p)
    zs = zarr.storage.ZipStore(zpath, mode="w")
    for store in [zs, dpath]:
        g = zarr.open_group(store, mode="w", zarr_format=3, attributes={"title": "zipped"})
        a = g.create_array("field", shape=data.shape, chunks=(5, 7), dtype="float32", fill_value=-1,
                           compressors=ZstdCodec(level=3), dimension_names=["y", "x"])
        a[:15] = data[:15]  # the last chunk row stays absent
        sub = g.create_group("g")
        b = sub.create_array("ints", shape=(8, 8), chunks=(4, 4), shards=(8, 8), dtype="int16", fill_value=0,
                             dimension_names=["i", "j"])
        b[...] = ints
    zs.close()
    with zipfile.ZipFile(os.path.join(OUT, "zipped.zip"), "w", zipfile.ZIP_DEFLATED) as z:
        for root, _, files in sorted(os.walk(dpath)):
            for f in sorted(files):
                full = os.path.join(root, f)
                z.write(full, os.path.join("zipped.zarr", os.path.relpath(full, dpath)))


def make_spec_forms():
    """Short-hand names and must_understand: false, written by hand."""
    path = store_path("spec_forms")
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(os.path.join(path, "short", "c"))
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "group", "attributes": {},
                   "future_extension": {"must_understand": False, "anything": 1}}, f)
    meta = {"zarr_format": 3, "node_type": "array", "shape": [6], "data_type": {"name": "uint8"},
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
            "chunk_key_encoding": "default", "fill_value": 9,
            "codecs": ["bytes", {"name": "some.future.codec", "must_understand": False}],
            "dimension_names": ["n"], "storage_transformers": [],
            "unknown_optional": {"must_understand": False}}
    with open(os.path.join(path, "short", "zarr.json"), "w") as f:
        json.dump(meta, f, indent=2)
    with open(os.path.join(path, "short", "c", "0"), "wb") as f:
        f.write(bytes([1, 2, 3, 4]))
    expect("spec_forms", "short", np.array([1, 2, 3, 4, 9, 9], np.uint8), "uint8", (4,), fill_bits="09")


def make_bad():
    """Nodes nzfs must refuse, next to one it must keep serving."""
    g = fresh_group("bad")
    good = g.create_array("good", shape=(4,), chunks=(2,), dtype="int32", dimension_names=["n"])
    good[...] = [1, 2, 3, 4]
    record("bad", "good")
    crc = g.create_array("bad_crc", shape=(4,), chunks=(2,), dtype="int32", compressors=[Crc32cCodec()],
                         dimension_names=["n"])
    crc[...] = [5, 6, 7, 8]
    chunk = os.path.join(store_path("bad"), "bad_crc", "c", "1")
    with open(chunk, "r+b") as f:
        f.seek(0)
        b = f.read(1)
        f.seek(0)
        f.write(bytes([b[0] ^ 0xFF]))
    for name, edit in [
        ("unknown_field", lambda d: d.update(mystery=1)),
        ("unknown_codec", lambda d: d["codecs"].append({"name": "mystery_codec"})),
        ("unknown_transformer", lambda d: d.update(storage_transformers=[{"name": "mystery"}])),
        ("bad_fill", lambda d: d.update(fill_value="yes")),
    ]:
        a = g.create_array(name, shape=(2,), chunks=(2,), dtype="int32", dimension_names=["n"])
        a[...] = [1, 2]
        edit_json(os.path.join(store_path("bad"), name, "zarr.json"), edit)
    os.makedirs(os.path.join(store_path("bad"), "truncated"))
    with open(os.path.join(store_path("bad"), "truncated", "zarr.json"), "w") as f:
        f.write('{"zarr_format": 3, "node_type": "arr')


def make_root_array():
    """A store whose root node is an array."""
    path = store_path("root_array")
    shutil.rmtree(path, ignore_errors=True)
    a = zarr.create_array(path, shape=(3, 4), chunks=(2, 2), dtype="int16", fill_value=-1,
                          dimension_names=["y", "x"], zarr_format=3)
    a[:2, :] = random_data("int16", (2, 4))
    data = np.asarray(zarr.open_array(path, mode="r")[...])
    expect("root_array", "", data, "int16", (2, 2))


def make_blosc():
    """Every blosc compressor with every shuffle, and the other knobs."""
    g = fresh_group("blosc")
    data = (np.cumsum(RNG.integers(-3, 4, size=(40, 30)), axis=1) * 10).astype("int32")
    # numcodecs builds c-blosc without snappy; nzfs decodes it (unit test in src/codec/blosc.rs).
    for cname in ["blosclz", "lz4", "lz4hc", "zlib", "zstd"]:
        for shuffle in ["noshuffle", "shuffle", "bitshuffle"]:
            path = f"{cname}_{shuffle}"
            a = g.create_array(path, shape=data.shape, chunks=(16, 16), dtype="int32", fill_value=0,
                               compressors=[BloscCodec(cname=cname, clevel=5, shuffle=shuffle, typesize=4)])
            a[...] = data
            record("blosc", path)
    variants = {
        "clevel0": dict(cname="lz4", clevel=0, shuffle="shuffle", typesize=4),
        "clevel9_blocksize": dict(cname="zstd", clevel=9, shuffle="bitshuffle", typesize=4, blocksize=256),
        "typesize1": dict(cname="lz4", clevel=3, shuffle="shuffle", typesize=1),
        "typesize8_f64": dict(cname="blosclz", clevel=7, shuffle="shuffle", typesize=8),
    }
    for path, kw in variants.items():
        dtype = "float64" if "f64" in path else "int32"
        a = g.create_array(path, shape=data.shape, chunks=(16, 16), dtype=dtype, fill_value=0,
                           compressors=[BloscCodec(**kw)])
        a[...] = data.astype(dtype)
        record("blosc", path)


def make_sharding():
    g = fresh_group("sharding")
    data = (RNG.standard_normal((10, 9)) * 100).astype("float32")
    bytes_le = [BytesCodec(endian="little")]
    cases = {
        # path: (sharding codec kwargs, outer compressors, shape/shard/inner)
        "index_end": dict(chunk_shape=(2, 3), codecs=bytes_le + [ZstdCodec(level=3)], index_location="end"),
        "index_start": dict(chunk_shape=(2, 3), codecs=bytes_le + [ZstdCodec(level=3)], index_location="start"),
        "inner_gzip": dict(chunk_shape=(2, 3), codecs=bytes_le + [GzipCodec(level=5)]),
        "inner_blosc": dict(chunk_shape=(2, 3), codecs=bytes_le + [BloscCodec(cname="zstd", shuffle="shuffle", typesize=4)]),
        "inner_transpose_big": dict(chunk_shape=(2, 3), codecs=[TransposeCodec(order=(1, 0)), BytesCodec(endian="big")]),
        "index_big_no_crc": dict(chunk_shape=(2, 3), codecs=bytes_le, index_codecs=[BytesCodec(endian="big")]),
        "index_big_crc_start": dict(chunk_shape=(2, 3), codecs=bytes_le,
                                    index_codecs=[BytesCodec(endian="big"), Crc32cCodec()], index_location="start"),
        "nested": dict(chunk_shape=(2, 6), codecs=[ShardingCodec(chunk_shape=(1, 3), codecs=bytes_le + [ZstdCodec()])]),
    }
    for path, kw in cases.items():
        a = g.create_array(path, shape=data.shape, chunks=(4, 6), dtype="float32", fill_value=-1.0,
                           serializer=ShardingCodec(**kw), compressors=None, dimension_names=["y", "x"])
        a[...] = data
        record("sharding", path)
    # Partly written: some inner chunks empty, some shards absent, edge shards.
    a = g.create_array("partial", shape=(10, 9), chunks=(2, 3), shards=(4, 6), dtype="float32",
                       fill_value=float("nan"), compressors=[ZstdCodec(level=1)])
    a[0:2, 0:3] = data[0:2, 0:3]   # one inner chunk of shard (0, 0)
    a[4:6, 6:9] = data[4:6, 6:9]   # one inner chunk of edge shard (1, 1)
    record("sharding", "partial")
    # Sharding followed by a bytes -> bytes codec: decoded whole, not partially.
    a = g.create_array("outer_zstd", shape=(10, 9), chunks=(2, 3), shards=(4, 6), dtype="float32",
                       compressors=[ZstdCodec(level=1)], fill_value=0)
    edit = ShardingCodec(chunk_shape=(2, 3), codecs=bytes_le)
    b = g.create_array("sharded_then_crc", shape=(10, 9), chunks=(4, 6), dtype="float32", fill_value=0,
                       serializer=edit, compressors=[Crc32cCodec()])
    b[...] = data
    record("sharding", "sharded_then_crc")
    a[...] = data
    record("sharding", "outer_zstd")
    # The partial-decoding proof: one 256 KiB shard of 16 inner chunks of
    # whole rows (16 KiB each), zstd-compressed.
    big = (np.sin(np.arange(256 * 256, dtype="float32") / 50) * 100).reshape(256, 256).astype("float32")
    a = g.create_array("rows", shape=(256, 256), chunks=(16, 256), shards=(256, 256), dtype="float32",
                       compressors=[ZstdCodec(level=3)], fill_value=0, dimension_names=["y", "x"])
    a[...] = big
    record("sharding", "rows")


def make_bad_sharding():
    """Shards with a corrupt index checksum, or an entry past the end."""
    import crc32c as _crc
    g = fresh_group("bad_sharding")
    data = np.arange(16, dtype="int32")
    for name in ["bad_checksum", "past_end"]:
        a = g.create_array(name, shape=(16,), chunks=(2,), shards=(8,), dtype="int32", compressors=None,
                           dimension_names=["n"])
        a[...] = data
    shard = os.path.join(store_path("bad_sharding"), "bad_checksum", "c", "1")
    with open(shard, "r+b") as f:
        raw = bytearray(f.read())
        raw[-8] ^= 0xFF  # inside the index, before the checksum
        f.seek(0)
        f.write(raw)
    shard = os.path.join(store_path("bad_sharding"), "past_end", "c", "1")
    with open(shard, "r+b") as f:
        raw = bytearray(f.read())
        n_index = 4 * 16
        index = bytearray(raw[-(n_index + 4):-4])
        index[0:8] = (10**9).to_bytes(8, "little")  # inner chunk 0 starts far past the end
        raw[-(n_index + 4):] = index + _crc.crc32c(bytes(index)).to_bytes(4, "little")
        f.seek(0)
        f.write(raw)


def make_differential():
    """One dataset written by xarray both as Zarr v3 and as netCDF-4, so that
    header.cdl can be checked against ncdump -h of the real netCDF file."""
    zpath = store_path("differential")
    ncpath = os.path.join(OUT, "differential.nc")
    shutil.rmtree(zpath, ignore_errors=True)
    if os.path.exists(ncpath):
        os.remove(ncpath)
    lat = np.linspace(-30, 30, 4, dtype="float32")
    lon = np.linspace(0, 90, 3, dtype="float32")
    t2m = (RNG.standard_normal((2, 4, 3)) + 280).astype("float32")
    root = xr.Dataset(
        {"t2m": (("time", "lat", "lon"), t2m, {"units": "K", "valid_range": [200.5, 330.25], "flags": [1, 2, 3],
                                               "note": 'line one\n"quoted" line two', "count": 42, "scale": 0.1}),
         "counts": (("time",), np.array([3, 4], dtype="int32"), {"long_name": "counts per step"})},
        coords={"time": ("time", np.array([0, 6], dtype="int64"), {"units": "hours since 2000-01-01 00:00:00"}),
                "lat": ("lat", lat, {"units": "degrees_north"}),
                "lon": ("lon", lon, {"units": "degrees_east"}),
                "height": ((), np.float64(2.0), {"units": "m", "positive": "up"})},
        attrs={"conventions": "NZ-1.0 CF-1.12", "title": "differential: xarray to Zarr v3 and netCDF-4",
               "version": 3, "weights": [0.25, 0.75]},
    )
    sub = xr.Dataset({"w": (("n",), np.array([1.5, 2.5, 3.5], dtype="float64"), {"units": "m s-1"})},
                     coords={"n": ("n", np.array([10, 20, 30], dtype="int16"))}, attrs={"level": 1})
    root.to_zarr(zpath, mode="w", zarr_format=3, consolidated=False)
    sub.to_zarr(zpath, mode="a", group="sub", zarr_format=3, consolidated=False)
    root.to_netcdf(ncpath, mode="w", format="NETCDF4", engine="netcdf4")
    sub.to_netcdf(ncpath, mode="a", group="sub", format="NETCDF4", engine="netcdf4")
    for v in ["t2m", "counts", "time", "lat", "lon", "height", "sub/w", "sub/n"]:
        record("differential", v)


def main():
    os.makedirs(OUT, exist_ok=True)
    shutil.rmtree(os.path.join(OUT, "expected"), ignore_errors=True)
    import fixtures_conventions as conventions
    me = sys.modules[__name__]
    for make in [make_dtypes, make_endian, make_codecs, make_fills, make_raw, make_keys, make_hierarchy,
                 make_consolidated, make_sample, make_spec_forms, make_bad, make_root_array, make_blosc,
                 make_sharding, make_bad_sharding, make_differential, lambda: conventions.make_nz(me), make_zips,
                 lambda: conventions.make_previews(me), lambda: conventions.make_packed(me)]:
        make()
    import fixtures_strings
    import fixtures_structs
    import fixtures_v2
    fixtures_v2.make_all(sys.modules[__name__])
    fixtures_strings.make_all(sys.modules[__name__])
    fixtures_structs.make_all(sys.modules[__name__])
    import fixtures_icechunk
    fixtures_icechunk.make_all(sys.modules[__name__])
    import fixtures_registry
    fixtures_registry.make_all(sys.modules[__name__])
    import fixtures_hdf5
    fixtures_hdf5.make_all(sys.modules[__name__])
    import fixtures_ocdbt
    fixtures_ocdbt.make_all(sys.modules[__name__])
    with open(os.path.join(OUT, "expected", "manifest.json"), "w") as f:
        json.dump({"zarr_python": zarr.__version__, "xarray": xr.__version__, "numpy": np.__version__,
                   "arrays": MANIFEST}, f, indent=1)
    print(f"wrote {len(MANIFEST)} arrays under {OUT}")


if __name__ == "__main__":
    main()

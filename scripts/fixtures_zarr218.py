"""What zarr-python 2.18 with numcodecs 0.15 writes, where nzfs read it
wrong or not at all: string arrays in order "F" (vlen-utf8 and
vlen-bytes, 1-D and 2-D, "." and "/" keys), pcodec as the compressor, and
lzma's raw format with each kind of filter chain. Each store's expected
values are what zarr-python 2.18 reads back: a numeric array's as
little-endian C-order bytes (expected/<store>/<array>.bin), a string
array's as one line per value in C order (.txt).

Usage: python scripts/fixtures_zarr218.py OUT  (the venv of
scripts/requirements-zarr218.txt; scripts/check_fixtures.sh makes it)
"""

import lzma
import os
import shutil
import sys

import numcodecs
import numpy as np
import zarr
from numcodecs import LZMA, PCodec, VLenBytes, VLenUTF8

OUT = os.path.abspath(sys.argv[1])


def store(name):
    path = os.path.join(OUT, name + ".zarr")
    shutil.rmtree(path, ignore_errors=True)
    return zarr.open_group(path, mode="w")


def expect(name, array):
    a = zarr.open_array(os.path.join(OUT, name + ".zarr", array), mode="r")[...]
    base = os.path.join(OUT, "expected", name, array)
    os.makedirs(os.path.dirname(base), exist_ok=True)
    if a.dtype == object:
        lines = [v.decode() if isinstance(v, bytes) else v for v in a.ravel(order="C")]
        with open(base + ".txt", "w") as f:
            f.write("".join(line + "\n" for line in lines))
    else:
        with open(base + ".bin", "wb") as f:
            f.write(np.ascontiguousarray(a.astype(a.dtype.newbyteorder("<"))).tobytes(order="C"))


def strings_in_f_order():
    g = store("strings_f")
    words = np.array([["a", "bb", "ccc", "é"], ["dddd", "", "ff", "雪"], ["g", "hh", "iii", "jjjj"]], dtype=object)
    for sep in [".", "/"]:
        name = "utf8_2d" + ("_slash" if sep == "/" else "")
        z = g.create_dataset(name, shape=words.shape, chunks=(2, 3), dtype=object, object_codec=VLenUTF8(),
                             order="F", dimension_separator=sep)
        z[...] = words
    z = g.create_dataset("bytes_2d", shape=words.shape, chunks=(2, 2), dtype=object, object_codec=VLenBytes(),
                         order="F", compressor=None)
    z[...] = np.array([[w.encode() for w in row] for row in words], dtype=object)
    z = g.create_dataset("utf8_1d", shape=(5,), chunks=(2,), dtype=object, object_codec=VLenUTF8(), order="F")
    z[...] = np.array(["x", "yy", "", "zzz", "w"], dtype=object)
    for name in ["utf8_2d", "utf8_2d_slash", "bytes_2d", "utf8_1d"]:
        expect("strings_f", name)


def pcodec_compressor():
    g = store("pcodec_v2")
    data = {
        "f8": np.linspace(-1.0, 1.0, 500).reshape(20, 25),
        "f4": np.sin(np.arange(300, dtype="float32") / 10),
        "i4": ((np.arange(400, dtype="int64") ** 2) % 10007 - 5000).astype("int32").reshape(20, 20),
        "u2": (np.arange(300) * 37 % 65535).astype("uint16"),
    }
    for name, a in data.items():
        chunks = tuple(max(1, n // 3) for n in a.shape)
        z = g.create_dataset(name, shape=a.shape, chunks=chunks, dtype=a.dtype, compressor=PCodec(level=8))
        z[...] = a
        expect("pcodec_v2", name)


def lzma_raw():
    g = store("lzma_raw")
    F = lzma
    chains = {
        "delta_lzma2": [dict(id=F.FILTER_DELTA, dist=4), dict(id=F.FILTER_LZMA2, preset=1)],
        "lzma2_extreme": [dict(id=F.FILTER_LZMA2, preset=9 | F.PRESET_EXTREME)],
        "lzma1": [dict(id=F.FILTER_LZMA1, preset=6)],
        "lzma1_lc1_lp1_pb1": [dict(id=F.FILTER_LZMA1, lc=1, lp=1, pb=1)],
        "x86_lzma2": [dict(id=F.FILTER_X86), dict(id=F.FILTER_LZMA2)],
        "arm_delta_lzma2": [dict(id=F.FILTER_ARM), dict(id=F.FILTER_DELTA, dist=2), dict(id=F.FILTER_LZMA2)],
        "sparc_powerpc_armthumb_lzma2": [dict(id=F.FILTER_SPARC), dict(id=F.FILTER_POWERPC),
                                         dict(id=F.FILTER_ARMTHUMB), dict(id=F.FILTER_LZMA2)],
    }
    data = ((np.arange(1200, dtype="int64") ** 2) % 7919).astype("<i4").reshape(30, 40)
    for name, filters in chains.items():
        z = g.create_dataset(name, shape=data.shape, chunks=(10, 16), dtype=data.dtype,
                             compressor=LZMA(format=lzma.FORMAT_RAW, filters=filters))
        z[...] = data
        expect("lzma_raw", name)
    # The other formats, for the class: xz (the default), alone.
    for name, fmt in [("xz", lzma.FORMAT_XZ), ("alone", lzma.FORMAT_ALONE)]:
        z = g.create_dataset(name, shape=data.shape, chunks=(10, 16), dtype=data.dtype, compressor=LZMA(format=fmt))
        z[...] = data
        expect("lzma_raw", name)


def n5_default():
    """N5 arrays as zarr-python 2.18's N5Store writes them (gzip, raw and
    blosc blocks, edge blocks padded), each given the zarr.json that
    zarr-extensions' n5_default describes beside its attributes.json: the
    Zarr array takes N5's axes in N5's order, which is zarr-python's
    reversed, so the expected values are zarr-python's read transposed."""
    import json
    from numcodecs import Blosc, GZip
    from zarr.n5 import N5Store

    path = os.path.join(OUT, "n5.n5")
    shutil.rmtree(path, ignore_errors=True)
    root = zarr.group(store=N5Store(path), overwrite=True)
    types = {"float32": "float32", "uint16": "uint16", "int8": "int8", "float64": "float64"}
    for name, dtype, shape, chunks, compressor in [
        ("gzip_f4", "<f4", (7, 10), (3, 4), GZip(level=1)),
        ("raw_u2", "<u2", (5, 9), (2, 4), None),
        ("blosc_i1_3d", "i1", (3, 5, 6), (2, 2, 4), Blosc(cname="zstd", clevel=3, shuffle=Blosc.SHUFFLE)),
    ]:
        data = (np.arange(np.prod(shape)) % 251 - 100).astype(dtype).reshape(shape)
        z = root.create_dataset(name, shape=shape, chunks=chunks, dtype=dtype, compressor=compressor)
        z[...] = data
        with open(os.path.join(path, name, "attributes.json")) as f:
            attrs = json.load(f)
        comp = attrs["compression"]
        nested = [{"name": "transpose", "configuration": {"order": list(range(len(shape)))[::-1]}},
                  {"name": "bytes", "configuration": {"endian": "big"}}]
        if comp["type"] == "gzip":
            nested.append({"name": "gzip", "configuration": {"level": comp["level"]}})
        elif comp["type"] == "blosc":
            nested.append({"name": "blosc", "configuration": {
                "cname": comp["cname"], "clevel": comp["clevel"], "shuffle": "shuffle", "typesize": 1,
                "blocksize": comp["blocksize"]}})
        meta = {"zarr_format": 3, "node_type": "array", "shape": attrs["dimensions"],
                "data_type": types[attrs["dataType"]] if attrs["dataType"] in types else attrs["dataType"],
                "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": attrs["blockSize"]}},
                "chunk_key_encoding": {"name": "v2", "configuration": {"separator": "/"}},
                "fill_value": 0, "codecs": [{"name": "n5_default", "configuration": {"codecs": nested}}]}
        with open(os.path.join(path, name, "zarr.json"), "w") as f:
            json.dump(meta, f, indent=2)
        back = zarr.open_array(store=N5Store(path), path=name, mode="r")[...]
        base = os.path.join(OUT, "expected", "n5", name + ".bin")
        os.makedirs(os.path.dirname(base), exist_ok=True)
        with open(base, "wb") as f:
            f.write(np.ascontiguousarray(back.T.astype(back.dtype.newbyteorder("<"))).tobytes())
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "group", "attributes": {}}, f, indent=2)


if __name__ == "__main__":
    shutil.rmtree(os.path.join(OUT, "expected"), ignore_errors=True)
    strings_in_f_order()
    pcodec_compressor()
    lzma_raw()
    n5_default()
    print(f"zarr {zarr.__version__}, numcodecs {numcodecs.__version__}: wrote {OUT}")

#!/usr/bin/env python3
"""The formats of 2026 (issue #30), written by zarr-python 3.4 itself.

zarr-python 3.4 needs Python >= 3.12: scripts/setup_2026.sh makes the venv
(.venv312, from pyenv's 3.12 or any python3.12 on PATH), with cast-value-rs
for `cast_value` and pcodec for `numcodecs.pcodec`.
Writes tests/data/formats_2026.zarr and, for every array, the values
zarr-python reads back as little-endian C-order bytes under
tests/data/expected_2026/ (with index.json: path, dtype, shape), which
tests/extensions.rs compares with data.bin through a mount.

Usage: python scripts/fixtures_2026.py [OUT_DIR]   (default tests/data)
"""
import json
import os
import shutil
import sys

import numpy as np
import zarr
from zarr.codecs import BytesCodec, CastValue, ScaleOffset, ZstdCodec
from zarr.codecs.numcodecs import ZFPY, PCodec

OUT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "tests", "data"))
RNG = np.random.default_rng(2026)


def main():
    store = os.path.join(OUT, "formats_2026.zarr")
    expected = os.path.join(OUT, "expected_2026")
    shutil.rmtree(store, ignore_errors=True)
    shutil.rmtree(expected, ignore_errors=True)
    os.makedirs(expected)
    g = zarr.open_group(store, mode="w", zarr_format=3)
    index = []

    def add(name, data, chunks, filters, fill, absent_rows=0, serializer=None):
        compressors = ZstdCodec(level=1) if serializer is None else None
        a = g.create_array(name, shape=data.shape, chunks=chunks, dtype=data.dtype, fill_value=fill,
                           filters=filters, serializer=serializer or BytesCodec(), compressors=compressors)
        n = data.shape[0] - absent_rows
        a[:n] = data[:n]
        back = np.asarray(a[...])
        with open(os.path.join(expected, name + ".bin"), "wb") as f:
            f.write(back.astype(back.dtype.newbyteorder("<")).tobytes())
        index.append({"path": name, "dtype": back.dtype.str, "shape": list(back.shape)})

    # Reflectance-like floats (the spec's example: offset 5, scale 0.1).
    f32 = (RNG.standard_normal((12, 10)) * 3 + 5).astype("float32")
    add("so_float32", f32, (5, 4), [ScaleOffset(offset=5, scale=0.1)], np.float32("nan"), absent_rows=2)
    f64 = RNG.standard_normal((9, 7)) * 1e3
    add("so_float64", f64, (4, 4), [ScaleOffset(offset=-273.15, scale=100.0)], 0.0)
    # uint16 counts in [1000, 1255] shifted down (the spec's range reduction).
    u16 = RNG.integers(1000, 1256, size=(8, 8)).astype("uint16")
    add("so_uint16", u16, (3, 8), [ScaleOffset(offset=1000)], 1000)
    # Even int16 values with scale 2 (an exact integer division).
    i16 = (RNG.integers(-500, 500, size=(6, 5)) * 1).astype("int16")
    add("so_int16", i16, (4, 5), [ScaleOffset(offset=-3, scale=2)], 0, absent_rows=2)
    # cast_value: the spec's range reduction (uint16 in [1000, 1255] stored
    # as uint8 after scale_offset).
    add("cv_uint16_as_uint8", u16, (3, 8), [ScaleOffset(offset=1000), CastValue(data_type="uint8")], 1000)
    # Reflectance in [0, 1] with NaNs, stored as uint16 hundredths (NaN as 0).
    refl = RNG.uniform(0, 1, size=(10, 6)).astype("float32")
    refl[RNG.uniform(size=refl.shape) < 0.1] = np.nan
    add("cv_reflectance", refl, (4, 6),
        [ScaleOffset(offset=0, scale=100),
         CastValue(data_type="uint16", rounding="nearest-even", out_of_range="clamp",
                   scalar_map={"encode": [("NaN", 0)], "decode": [(0, "NaN")]})],
        np.float32("nan"), absent_rows=2)
    # float64 stored as int16 rounded towards zero, out-of-range values clamped.
    wide = np.concatenate([RNG.uniform(-300, 300, size=30), [40000.0, -40000.0]]).reshape(8, 4)
    add("cv_float64_as_int16", wide, (8, 2),
        [CastValue(data_type="int16", rounding="towards-zero", out_of_range="clamp")], 0.0)
    # numcodecs.pcodec (pcodec's standalone format) as the serializer.
    smooth = (np.sin(np.linspace(0, 20, 24 * 16)) * 50 + 280).astype("float32").reshape(24, 16)
    add("pco_float32", smooth, (10, 16), [], np.float32(-9999), absent_rows=4, serializer=PCodec(level=8))
    counts = RNG.integers(0, 60000, size=(12, 12)).astype("uint16")
    add("pco_uint16", counts, (5, 12), [], 0, serializer=PCodec(level=4))
    times = (np.arange(100, dtype="int64") * 3600 + 10**9).reshape(10, 10)
    add("pco_int64", times, (4, 10), [], 0, serializer=PCodec())
    # numcodecs.zfpy (zfp's full header, then the blocks) in each of its
    # modes: 4 fixed accuracy, 3 fixed precision, 2 fixed rate.
    field = (np.cos(np.linspace(0, 9, 13 * 11)) * 20).reshape(13, 11).astype("float32")
    add("zfp_float32_accuracy", field, (8, 6), [], np.float32(0), absent_rows=5,
        serializer=ZFPY(mode=4, tolerance=0.01))
    cube = RNG.standard_normal((5, 6, 7)).cumsum(axis=2)
    add("zfp_float64_precision", cube, (4, 4, 4), [], 0.0, serializer=ZFPY(mode=3, precision=20))
    add("zfp_float64_rate", cube, (5, 3, 7), [], 0.0, serializer=ZFPY(mode=2, rate=12))
    hyper = RNG.standard_normal((3, 5, 4, 6)).astype("float32")
    add("zfp_float32_4d", hyper, (2, 5, 4, 3), [], np.float32(0), serializer=ZFPY(mode=4, tolerance=1e-3))
    ints = RNG.integers(-1000, 1000, size=(21,)).astype("int32")
    add("zfp_int32", ints, (10,), [], 0, serializer=ZFPY(mode=3, precision=32))
    longs = (np.arange(30, dtype="int64") * 123457 - 10**6).reshape(5, 6)
    add("zfp_int64", longs, (4, 4), [], 0, serializer=ZFPY(mode=3, precision=64))
    # A Zarr v2 array with zfpy as its compressor (zarr-python 3.4 writing
    # v2), in a store of its own: tests/data/zfpy_v2.zarr.
    import numcodecs
    v2 = zarr.open_group(os.path.join(OUT, "zfpy_v2.zarr"), mode="w", zarr_format=2)
    z2 = v2.create_array("temp", shape=(7, 9), chunks=(4, 4), dtype="<f8", fill_value=0.0,
                         compressors=numcodecs.ZFPY(mode=4, tolerance=0.01))
    z2[:5] = (np.arange(63.0).reshape(7, 9) / 7)[:5]
    back = np.asarray(z2[...])
    with open(os.path.join(expected, "zfpy_v2.bin"), "wb") as f:
        f.write(back.astype("<f8").tobytes())
    index.append({"store": "zfpy_v2.zarr", "path": "temp", "expected": "zfpy_v2", "dtype": "<f8",
                  "shape": list(back.shape)})
    import zfpy
    with open(os.path.join(OUT, "zfp_arange16.bin"), "wb") as f:
        f.write(zfpy.compress_numpy(np.arange(16.0).reshape(4, 4), tolerance=1e-3))

    # zarr-extensions' zfp: zfp's blocks with no header, the mode in the
    # configuration. zarr-python 3.4 does not write it; each chunk is what
    # zfpy writes in that mode with its header cut off (zfp_write_header's
    # 32 + 52 + 12 bits, 12 bytes, for these modes), and the expected values
    # are zfpy's own decode of the whole stream. The 8- and 16-bit integers
    # go in promoted to int32 as the registry's README says, and come back
    # demoted.
    def add_zfp(name, data, chunks, config, params, fill, absent=(), promote=None):
        a = g.create_array(name, shape=data.shape, chunks=chunks, dtype=data.dtype, fill_value=fill,
                           serializer=BytesCodec(), compressors=None)
        meta_path = os.path.join(store, name, "zarr.json")
        meta = json.load(open(meta_path))
        meta["codecs"] = [{"name": "zfp", "configuration": config}]
        with open(meta_path, "w") as f:
            json.dump(meta, f, indent=2)
        back = np.full(data.shape, fill, data.dtype)
        grid = [-(-n // c) for n, c in zip(data.shape, chunks)]
        for idx in np.ndindex(*grid):
            if idx in absent:
                continue
            span = tuple(slice(i * c, min((i + 1) * c, n)) for i, c, n in zip(idx, chunks, data.shape))
            inner = tuple(slice(0, s.stop - s.start) for s in span)
            block = np.zeros(chunks, data.dtype)
            block[inner] = data[span]
            if promote is not None:
                bits, signed = promote
                wide = block.astype("int64")
                wide = (wide if signed else wide - (1 << (bits - 1))) << (31 - bits)
                block = wide.astype("int32")
            stream = zfpy.compress_numpy(block, **params)
            decoded = zfpy.decompress_numpy(stream)
            if promote is not None:
                v = decoded.astype("int64") >> (31 - bits)
                v = v.clip(-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (v + (1 << (bits - 1))).clip(0, (1 << bits) - 1)
                decoded = v.astype(data.dtype)
            back[span] = decoded[inner]
            key = os.path.join(store, name, "c", *map(str, idx))
            os.makedirs(os.path.dirname(key), exist_ok=True)
            with open(key, "wb") as f:
                f.write(stream[12:])
        del a
        with open(os.path.join(expected, name + ".bin"), "wb") as f:
            f.write(back.astype(back.dtype.newbyteorder("<")).tobytes())
        index.append({"path": name, "dtype": back.dtype.str, "shape": list(back.shape)})

    add_zfp("zfpx_float32_accuracy", field, (8, 6), {"mode": "fixed_accuracy", "tolerance": 0.01},
            dict(tolerance=0.01), np.float32(-1), absent={(1, 1)})
    add_zfp("zfpx_float64_precision", cube, (4, 4, 4), {"mode": "fixed_precision", "precision": 20},
            dict(precision=20), 0.0)
    add_zfp("zfpx_float64_rate", cube, (5, 3, 7), {"mode": "fixed_rate", "rate": 12}, dict(rate=12), 0.0)
    add_zfp("zfpx_float32_4d", hyper, (2, 5, 4, 3), {"mode": "fixed_accuracy", "tolerance": 1e-3},
            dict(tolerance=1e-3), np.float32(0))
    add_zfp("zfpx_int32_reversible", ints, (10,), {"mode": "reversible"}, {}, 0)
    add_zfp("zfpx_int64_reversible", longs, (4, 4), {"mode": "reversible"}, {}, 0)
    # fixed_precision 20 spelled as expert mode: zfp's own limits around it.
    add_zfp("zfpx_float64_expert", cube, (4, 4, 4),
            {"mode": "expert", "minbits": 1, "maxbits": 16658, "maxprec": 20, "minexp": -1074},
            dict(precision=20), 0.0)
    # A generator of their own, so that the fixtures after these keep their values.
    zrng = np.random.default_rng(20261128)
    small = zrng.integers(-128, 128, size=(9, 7)).astype("int8")
    add_zfp("zfpx_int8_reversible", small, (4, 4), {"mode": "reversible"}, {}, 0, promote=(8, True))
    counts16 = zrng.integers(0, 65536, size=(9, 7)).astype("uint16")
    add_zfp("zfpx_uint16_reversible", counts16, (4, 4), {"mode": "reversible"}, {}, 0, promote=(16, False))

    # Rectilinear chunk grids (zarr-extensions' chunk-grids/rectilinear),
    # experimental in zarr-python 3.4. Each array's chunk files are written
    # out as zarr-python's values in each chunk's span, padded with the fill
    # value where a chunk reaches past the array (what zarr-python writes
    # there), under expected_2026/NAME.chunks/I.J.bin.
    zarr.config.set({"array.rectilinear_chunks": True})

    def add_rect(name, data, edges, fill, absent=(), shards=None, extent=None):
        kw = dict(chunks=edges) if shards is None else dict(chunks=shards[1], shards=shards[0])
        a = g.create_array(name, shape=data.shape, dtype=data.dtype, fill_value=fill,
                           compressors=ZstdCodec(level=1), **kw)
        if extent is not None:
            # zarr-python writes only edges that sum to the shape; a resize
            # keeps them, leaving the last chunk past the extent.
            a.resize(extent)
            data = data[tuple(slice(0, n) for n in extent)]
        grid = shards[0] if shards is not None else edges
        chunk_dir = os.path.join(expected, name + ".chunks")
        os.makedirs(chunk_dir)
        starts = [np.concatenate([[0], np.cumsum(e)]) for e in grid]
        for idx in np.ndindex(*[sum(1 for s in st[:-1] if s < n) for st, n in zip(starts, data.shape)]):
            span = tuple(slice(int(st[i]), int(min(st[i + 1], n))) for st, i, n in zip(starts, idx, data.shape))
            if idx not in absent:
                a[span] = data[span]
        back = np.asarray(a[...])
        with open(os.path.join(expected, name + ".bin"), "wb") as f:
            f.write(back.astype(back.dtype.newbyteorder("<")).tobytes())
        index.append({"path": name, "dtype": back.dtype.str, "shape": list(back.shape)})
        for idx in np.ndindex(*[sum(1 for s in st[:-1] if s < n) for st, n in zip(starts, data.shape)]):
            shape = [int(e[i]) for e, i in zip(grid, idx)]
            chunk = np.full(shape, fill, dtype=data.dtype)
            span = tuple(slice(int(st[i]), int(min(st[i + 1], n))) for st, i, n in zip(starts, idx, data.shape))
            chunk[tuple(slice(0, s.stop - s.start) for s in span)] = back[span]
            with open(os.path.join(chunk_dir, ".".join(map(str, idx)) + ".bin"), "wb") as f:
                f.write(chunk.astype(chunk.dtype.newbyteorder("<")).tobytes())

    add_rect("rect_int32", np.arange(70, dtype="int32").reshape(10, 7), [[3, 3, 4], [2, 5]], -1, absent=[(1, 1)])
    # Runs of equal edges (written run-length encoded), a regular second axis.
    add_rect("rect_runs", RNG.integers(0, 255, size=(40, 6)).astype("uint8"), [[1] * 10 + [10] * 3, [4, 2]], 7)
    # Edges that reach past the extent (9 rows in chunks of 2, 4, 6).
    add_rect("rect_overflow", RNG.standard_normal((12, 5)), [[2, 4, 6], [3, 2]], np.nan, absent=[(0, 1)],
             extent=(9, 5))
    # A rectilinear grid of shards with regular inner chunks.
    add_rect("rect_sharded", np.arange(108, dtype="float32").reshape(12, 9), None, 0.0,
             absent=[(1, 0)], shards=([[4, 8], [6, 3]], (2, 3)))
    packed = write_packbits(os.path.join(OUT, "packbits.zarr"), expected)
    with open(os.path.join(expected, "index.json"), "w") as f:
        json.dump({"zarr_python": zarr.__version__, "numpy": np.__version__, "arrays": index,
                   "packbits": packed}, f, indent=1)
    print(f"wrote {len(index)} arrays to {store}")


def pack(values, dtype, first_bit, last_bit, padding):
    """zarr-extensions' packbits, encoded with numpy from the spec's text
    (no library writes it: zarr-python 3.4 has only numcodecs' packbits
    filter, tensorstore 0.1.86 does not register it). Each component's
    little-endian bits first_bit..=last_bit, in element order, least
    significant bit first; padded with 0 bits to a byte."""
    comps = values.reshape(-1)
    if dtype.kind == "c":
        comps = comps.view(dtype.type(0).real.dtype)
    nbits = 1 if dtype.kind == "b" else comps.dtype.itemsize * 8
    raw = comps.astype(comps.dtype.newbyteorder("<")).view(np.uint8).reshape(len(comps), -1)
    bits = np.unpackbits(raw, axis=1, bitorder="little")[:, :nbits]
    stream = bits[:, first_bit:last_bit + 1].reshape(-1)
    pad = (8 - len(stream) % 8) % 8
    out = np.packbits(np.concatenate([stream, np.zeros(pad, np.uint8)]), bitorder="little").tobytes()
    return {"none": out, "first_byte": bytes([pad]) + out, "last_byte": out + bytes([pad])}[padding]


def unpack_expected(values, dtype, first_bit, last_bit):
    """What decoding gives: the kept bits shifted back, sign-extended from
    last_bit for signed integers, the other bits 0."""
    if dtype.kind == "b":
        return values
    comps = values.reshape(-1)
    if dtype.kind == "c":
        comps = comps.view(dtype.type(0).real.dtype)
    u = comps.view(f"u{comps.dtype.itemsize}").astype(np.uint64)
    nbits = comps.dtype.itemsize * 8
    keep = ((1 << (last_bit - first_bit + 1)) - 1) << first_bit
    u = u & np.uint64(keep)
    if dtype.kind == "i" and last_bit < nbits - 1:
        sign = (u >> np.uint64(last_bit)) & np.uint64(1)
        high = ((1 << nbits) - 1) & ~((1 << (last_bit + 1)) - 1)
        u = np.where(sign == 1, u | np.uint64(high), u)
    return u.astype(f"u{comps.dtype.itemsize}").view(comps.dtype).view(dtype).reshape(values.shape)


def write_packbits(store, expected):
    """tests/data/packbits.zarr: zarr-python writes each array's metadata
    (with the bytes codec), then its chunks are rewritten packed and its
    codecs set to packbits. Expected values under expected_2026/packbits/."""
    shutil.rmtree(store, ignore_errors=True)
    out = os.path.join(expected, "packbits")
    os.makedirs(out)
    g = zarr.open_group(store, mode="w", zarr_format=3)
    cases = [
        ("bool_first_byte", RNG.integers(0, 2, size=(7, 5)).astype(bool), (4, 3), {"padding_encoding": "first_byte"}),
        ("int16_low4", RNG.integers(-8, 8, size=(9, 6)).astype("int16"), (4, 6), {"last_bit": 3, "padding_encoding": "last_byte"}),
        ("uint16_bits4to9", RNG.integers(0, 1 << 16, size=(10,)).astype("uint16"), (4,), {"first_bit": 4, "last_bit": 9}),
        ("int32_whole", RNG.integers(-2**31, 2**31, size=(5, 5)).astype("int32"), (3, 2), {}),
        ("float32_top20", RNG.standard_normal((6, 4)).astype("float32"), (6, 4), {"first_bit": 12, "last_bit": 31}),
        ("int64_low40", RNG.integers(-2**39, 2**39, size=(11,)).astype("int64"), (5,), {"last_bit": 39}),
        ("complex64_whole", (RNG.standard_normal(6) + 1j * RNG.standard_normal(6)).astype("complex64"), (4,), {}),
    ]
    index = []
    for name, data, chunks, cfg in cases:
        a = g.create_array(name, shape=data.shape, chunks=chunks, dtype=data.dtype, fill_value=0,
                           compressors=None)
        nbits = 1 if data.dtype.kind == "b" else (data.dtype.itemsize * 8 // (2 if data.dtype.kind == "c" else 1))
        first, last = cfg.get("first_bit", 0), cfg.get("last_bit", nbits - 1)
        padding = cfg.get("padding_encoding", "none")
        for idx in np.ndindex(*[-(-n // c) for n, c in zip(data.shape, chunks)]):
            chunk = np.zeros(chunks, dtype=data.dtype)
            span = tuple(slice(i * c, min((i + 1) * c, n)) for i, c, n in zip(idx, chunks, data.shape))
            chunk[tuple(slice(0, s.stop - s.start) for s in span)] = data[span]
            if idx == (1,) * len(chunks):
                continue  # one absent chunk per array
            key = os.path.join(store, name, "c", *map(str, idx))
            os.makedirs(os.path.dirname(key), exist_ok=True)
            with open(key, "wb") as f:
                f.write(pack(chunk, data.dtype, first, last, padding))
        meta_path = os.path.join(store, name, "zarr.json")
        meta = json.load(open(meta_path))
        meta["codecs"] = [{"name": "packbits", "configuration": cfg}]
        with open(meta_path, "w") as f:
            json.dump(meta, f, indent=2)
        want = unpack_expected(data, data.dtype, first, last).copy()
        absent = tuple(slice(c, 2 * c) for c in chunks)
        want[absent] = 0
        with open(os.path.join(out, name + ".bin"), "wb") as f:
            f.write(want.astype(want.dtype.newbyteorder("<")).tobytes())
        item = data.dtype.itemsize // (2 if data.dtype.kind == "c" else 1)
        index.append({"path": name, "dtype": data.dtype.str, "item": item, "shape": list(data.shape)})
    return index


if __name__ == "__main__":
    main()

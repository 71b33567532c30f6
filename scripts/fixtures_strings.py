"""String and datetime fixtures (v3 and v2), written by zarr-python and
xarray. Called by make_fixtures.py, whose helpers arrive as `fx`.

Expected text is computed here, independently of nzfs, from the values
zarr-python reads back: one line per element, `\\` -> `\\\\`, newline ->
`\\n`, carriage return -> `\\r`, bytes that are not UTF-8 -> `\\xNN`,
trailing NULs of fixed-length values removed. Each variable-length chunk's
expected text comes from decoding its stored object with numcodecs
(zstd, then VLenUTF8/VLenBytes), or from the fill value when absent.
"""

import json
import os
import shutil

import numcodecs
import numpy as np
import xarray as xr
import zarr
from zarr.core.dtype import VariableLengthBytes

from fixtures_v2 import little_any
from text_form import text_of


def write(fx, rel, data):
    full = os.path.join(fx.OUT, rel)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "wb") as f:
        f.write(data)


def expect_text(fx, store, path, a, v2):
    """data.txt, plus each chunk's .txt for variable-length arrays."""
    data = np.asarray(a[...])
    rel = os.path.join("expected", store, path + ".txt")
    write(fx, rel, text_of(data))
    chunks = {}
    meta = a.metadata.to_dict()
    variable = meta.get("data_type") in ("string", "variable_length_bytes") or meta.get("dtype") == "|O"
    if variable and a.shards is not None:
        # Sharded (as anndata writes every v3 array): a chunk file is a
        # shard, whose text is zarr-python's read of the shard's region
        # (these fixtures' shards divide the array).
        assert all(s % c == 0 for s, c in zip(a.shape, a.shards))
        grid = [s // c for s, c in zip(a.shape, a.shards)]
        for linear in range(int(np.prod(grid))):
            idx = np.unravel_index(linear, grid)
            region = tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, a.shards))
            crel = os.path.join("expected", store, path + ".chunks", f"{linear}.txt")
            write(fx, crel, text_of(np.asarray(a[region])))
            chunks[linear] = crel
    elif variable:
        grid = [-(-s // c) for s, c in zip(a.shape, a.chunks)]
        fill = meta["fill_value"] if meta["fill_value"] is not None else ""
        is_bytes = meta.get("data_type") == "variable_length_bytes" or any(
            "vlen-bytes" in json.dumps(c) for c in (meta.get("codecs") or meta.get("filters") or []))
        vlen = numcodecs.VLenBytes() if is_bytes else numcodecs.VLenUTF8()
        if is_bytes and isinstance(fill, str):
            fill = fill.encode()
        n = int(np.prod(a.chunks))
        for linear in range(int(np.prod(grid))):
            idx = np.unravel_index(linear, grid) if grid else ()
            key = ".".join(map(str, idx)) if v2 else "c/" + "/".join(map(str, idx))
            if not grid:
                key = "0" if v2 else "c"
            obj = os.path.join(fx.store_path(store), path, key)
            if os.path.exists(obj):
                raw = open(obj, "rb").read()
                items = vlen.decode(numcodecs.Zstd().decode(raw))
            else:
                items = [fill] * n
            crel = os.path.join("expected", store, path + ".chunks", f"{linear}.txt")
            write(fx, crel, text_of(np.array(list(items), dtype=object)))
            chunks[linear] = crel
    fx.MANIFEST.append({"store": store + ".zarr", "path": path, "data_type": str(data.dtype),
                        "shape": list(data.shape), "chunk_shape": list(a.shards or a.chunks), "expected": None,
                        "text": rel, "chunk_texts": chunks or None, "fill": None})


STRINGS = ["alpha", "b\\c", "two\nlines", "cr\rhere", "\u00e9t\u00e9 \U0001f600", "", "tab\tok"]


def make_strings(fx):
    """v3: string, bytes, fixed_length_utf32, null_terminated_bytes,
    datetime64/timedelta64; v2: the same as |O, <U, |S, M8, m8."""
    for fmt in [3, 2]:
        name = f"strings_v{fmt}"
        path = fx.store_path(name)
        shutil.rmtree(path, ignore_errors=True)
        g = zarr.open_group(path, mode="w", zarr_format=fmt)
        comp = numcodecs.Zstd(level=1) if fmt == 2 else zarr.codecs.ZstdCodec(level=1)
        s = np.array((STRINGS * 3)[:15], dtype=object).reshape(5, 3)
        a = g.create_array("names", shape=(5, 3), chunks=(2, 2), dtype=str, fill_value="n/a", compressors=comp)
        a[:3, :] = s[:3, :]  # the last chunk row stays absent: "n/a"
        expect_text(fx, name, "names", a, fmt == 2)
        b = np.array([b"x", b"\xff\x00raw", b"", b"line\n", b"ok"], dtype=object)
        a = g.create_array("blobs", shape=(5,), chunks=(2,), dtype=VariableLengthBytes(), compressors=comp)
        a[:4] = b[:4]
        expect_text(fx, name, "blobs", a, fmt == 2)
        for dtype, vals in [("<U6", ["h\u00efgh", "x", "", "sixsix"]), ("S5", [b"ab", b"c\0d", b"", b"fives"])]:
            arr = np.array(vals, dtype=dtype)
            key = "utf32" if dtype.startswith("<U") else "fixed_bytes"
            a = g.create_array(key, shape=(4,), chunks=(3,), dtype=dtype, compressors=comp)
            a[...] = arr
            expect_text(fx, name, key, a, fmt == 2)
            fx.expect(name, key, little_any(np.asarray(a[...])), arr.dtype.str, a.chunks, shape=[4])
        # Fills and an absent chunk (issue #30): zarr-python writes a v2 `U`
        # fill as the string itself ("abcd" is also valid base64) and an `S`
        # fill as base64.
        for key, dtype, fill, vals in [("utf32_fill", "<U4", "abcd", ["one", "two"]),
                                       ("fixed_bytes_fill", "S4", b"ab", [b"x", b"yz"])]:
            a = g.create_array(key, shape=(5,), chunks=(2,), dtype=dtype, fill_value=fill, compressors=comp)
            a[:2] = np.array(vals, dtype=dtype)
            expect_text(fx, name, key, a, fmt == 2)
            fx.expect(name, key, little_any(np.asarray(a[...])), np.dtype(dtype).str, a.chunks, shape=[5])
        if fmt == 3:
            # Strings and bytes in shards (anndata shards every v3 array):
            # each shard has an empty inner chunk; the 2-D one has a 2 x 2
            # grid of inner chunks, so their lines interleave.
            a = g.create_array("names_sharded", shape=(8,), chunks=(2,), shards=(4,), dtype=str,
                               fill_value="n/a", compressors=comp)
            a[:2] = s.ravel()[:2]
            a[6:] = s.ravel()[6:8]
            expect_text(fx, name, "names_sharded", a, False)
            a = g.create_array("grid_sharded", shape=(4, 6), chunks=(2, 3), shards=(4, 6), dtype=str,
                               compressors=comp)
            a[...] = np.array((STRINGS * 4)[:24], dtype=object).reshape(4, 6)
            expect_text(fx, name, "grid_sharded", a, False)
            a = g.create_array("blobs_sharded", shape=(6,), chunks=(3,), shards=(6,), dtype=VariableLengthBytes(),
                               compressors=comp)
            a[:3] = b[:3]
            expect_text(fx, name, "blobs_sharded", a, False)
            # A type nzfs does not know: the directory holds only header.cdl.
            a = g.create_array("mystery", shape=(4,), chunks=(2,), dtype="u1", compressors=None, fill_value=0)
            a[...] = [1, 2, 3, 4]
            fx.edit_json(os.path.join(path, "mystery", "zarr.json"), lambda d: d.update(data_type="float7_e3m3"))
        for key, dtype in [("when", "M8[s]"), ("when_10s", "M8[10s]"), ("span", "m8[ms]")]:
            vals = np.array([0, 86400, -1, 10**9], dtype="i8").view(dtype)
            a = g.create_array(key, shape=(6,), chunks=(4,), dtype=dtype, compressors=comp)
            a[:4] = vals
            fx.expect(name, key, little_any(np.asarray(a[...])), dtype, a.chunks, shape=[6],
                      fill_bits=(-(2**63)).to_bytes(8, "little", signed=True).hex())


def make_xarray_strings(fx):
    """xarray: a string coordinate and a datetime coordinate stored as
    numpy.datetime64 (not CF-encoded), in v3."""
    path = fx.store_path("xarray_strings")
    shutil.rmtree(path, ignore_errors=True)
    ds = xr.Dataset(
        {"t": (("station", "time"), np.arange(6, dtype="float32").reshape(3, 2), {"units": "K"})},
        coords={"station": ("station", np.array(["Oslo", "Bergen", "Troms\u00f8"], dtype=object)),
                "time": ("time", np.array(["2001-02-03T04:05:06", "2001-02-04T00:00:00"], dtype="M8[s]"))},
        attrs={"title": "stations"},
    )
    ds.to_zarr(path, mode="w", zarr_format=3, consolidated=False)
    a = zarr.open_array(path, path="station", mode="r")
    expect_text(fx, "xarray_strings", "station", a, False)


def make_numcodecs_v3(fx):
    """zarr-python 3's numcodecs.* codecs in Zarr v3: each alone, a chain,
    and inside a shard."""
    from zarr.codecs import numcodecs as znc
    g = fx.fresh_group("numcodecs_v3")
    f8 = (np.cumsum(fx.RNG.standard_normal(120)) * 10).astype("<f8").reshape(12, 10)
    i4 = fx.RNG.integers(-1000, 1000, size=(12, 10)).astype("<i4")
    b1 = fx.RNG.integers(0, 2, size=(12, 10)).astype(bool)
    cases = {
        "zlib": (f8, [], [znc.Zlib(level=3)]),
        "gzip": (f8, [], [znc.GZip(level=3)]),
        "bz2": (f8, [], [znc.BZ2(level=3)]),
        "lz4": (f8, [], [znc.LZ4()]),
        "lzma": (f8, [], [znc.LZMA()]),
        "zstd": (f8, [], [znc.Zstd(level=2)]),
        "blosc": (f8, [], [znc.Blosc(cname="zstd", clevel=3, shuffle=2)]),
        "crc32": (i4, [], [znc.CRC32()]),
        "adler32": (i4, [], [znc.Adler32()]),
        "fletcher32": (i4, [], [znc.Fletcher32()]),
        "jenkins_lookup3": (i4, [], [znc.JenkinsLookup3()]),
        "shuffle": (i4, [], [znc.Shuffle(elementsize=4), znc.Zlib()]),
        "delta": (i4, [znc.Delta(dtype="<i4", astype="<i2")], [znc.Zlib()]),
        "fixedscaleoffset": (f8, [znc.FixedScaleOffset(offset=0, scale=100, dtype="<f8", astype="<i4")], []),
        "quantize": (f8, [znc.Quantize(digits=3, dtype="<f8")], [znc.Zstd()]),
        "bitround": (f8.astype("<f4"), [znc.BitRound(keepbits=10)], [znc.Zstd()]),
        "astype": (f8, [znc.AsType(encode_dtype="<f4", decode_dtype="<f8")], []),
        "packbits": (b1, [znc.PackBits()], []),
        "chain": (i4, [znc.Delta(dtype="<i4")], [znc.Shuffle(elementsize=4), znc.Zlib(level=1), znc.Adler32()]),
    }
    for name, (data, filters, compressors) in cases.items():
        a = g.create_array(name, shape=data.shape, chunks=(5, 4), dtype=data.dtype, filters=filters,
                           compressors=compressors, fill_value=0)
        a[:10, :] = data[:10, :]  # the last chunk row stays absent
        fx.record("numcodecs_v3", name)
    a = g.create_array("in_shard", shape=f8.shape, chunks=(3, 5), shards=(6, 10), dtype="<f8",
                       compressors=[znc.Zlib(level=2), znc.CRC32()], fill_value=0)
    a[...] = f8
    fx.record("numcodecs_v3", "in_shard")


def make_bfloat16(fx):
    """bfloat16 (hand-edited: zarr-python writes it only with ml_dtypes):
    uint16 arrays holding the top halves of float32 values, relabelled.
    Expected: those halves widened to float32, absent chunks the fill."""
    g = fx.fresh_group("bfloat16")
    f = (fx.RNG.standard_normal((5, 6)) * 100).astype("<f4")
    halves = (f.view("<u4") >> 16).astype("<u2")
    for name, endian, fill_json, fill_f32, shards in [
        ("le", "little", -1.5, np.float32(-1.5), None),
        ("be_nan_fill", "big", "0x7fc0", np.frombuffer(np.uint32(0x7FC00000).tobytes(), "<f4")[0], None),
        ("sharded", "little", 2.0, np.float32(2.0), (4, 6)),
    ]:
        a = g.create_array(name, shape=(5, 6), chunks=(2, 3), shards=shards, dtype="<u2",
                           serializer=zarr.codecs.BytesCodec(endian=endian), compressors=[zarr.codecs.ZstdCodec()],
                           fill_value=0)
        a[:4, :] = halves[:4, :]  # row 4 stays absent
        fx.edit_json(os.path.join(fx.store_path("bfloat16"), name, "zarr.json"),
                     lambda d: d.update(data_type="bfloat16", fill_value=fill_json))
        want = (halves.astype("<u4") << 16).view("<f4").copy()
        want[4, :] = fill_f32
        fx.expect("bfloat16", name, want, "bfloat16", (2, 3) if shards is None else shards,
                  fill_bits=np.array([fill_f32], "<f4").tobytes().hex() if shards is None else None)


def make_all(fx):
    make_strings(fx)
    make_xarray_strings(fx)
    make_numcodecs_v3(fx)
    make_bfloat16(fx)

"""The zarr-extensions registry's narrow types and its last three codecs.

The same types as tensorstore's zarr (v2) driver writes them, named in
`.zarray`'s dtype as v3 names them, into tests/data/narrow_v2.zarr, with
bfloat16 beside them. Expected: what tensorstore reads back, widened.

The narrow types (int2/int4/uint2/uint4, the 4-, 6- and 8-bit floats and
the complex forms), into tests/data/narrow.zarr:

- What tensorstore writes (the types Orbax and JAX checkpoints hold:
  int2, int4 and every float8/float4 tensorstore 0.1.86 registers), with
  its own codecs, absent chunks and a sharded array. Expected: what
  tensorstore reads back, widened by numpy to int8/float32 (ml_dtypes'
  conversion), as nzfs shows them.
- What tensorstore cannot write yet (uint2/uint4, float8_e4m3, the
  float6 types, the complex forms, `packbits`): stored codes written by
  hand under zarr-python's metadata, as the registry lays each out.
  Expected: ml_dtypes' decoding of those codes, widened the same way.

The codecs `reshape` and `conditional`, into tests/data/registry_codecs.zarr:
no writer in scripts/requirements.txt writes them (zarr-python 3.1 and
tensorstore 0.1.86 register neither), so their chunks are encoded here, step
by step as the registry's READMEs lay them out, with numcodecs' zstd and
shuffle and crc32c's checksum. Expected: the numpy arrays encoded.
(`n5_default` comes from zarr-python 2.18's own N5 writer:
scripts/fixtures_zarr218.py.)

Run by scripts/make_fixtures.py (tensorstore and ml_dtypes are in
scripts/requirements.txt).
"""
import base64
import json
import os

import ml_dtypes
import numpy as np

STORE = "narrow"
# Its own generator, so that the other fixtures' values do not move.
RNG = np.random.default_rng(20261128)
SHAPE = (5, 6)
CHUNKS = (2, 3)

# tensorstore name -> (what nzfs shows, fill value as JSON).
TENSORSTORE = [
    ("int2", "int8", -1),
    ("int4", "int8", -8),
    ("float4_e2m1fn", "float32", 1.5),
    ("float8_e3m4", "float32", "NaN"),
    ("float8_e4m3fn", "float32", "NaN"),
    ("float8_e4m3fnuz", "float32", 0),
    ("float8_e4m3b11fnuz", "float32", -2.0),
    ("float8_e5m2", "float32", "-Infinity"),
    ("float8_e5m2fnuz", "float32", "NaN"),
    # tensorstore 0.1.86 writes a numeric fill of this type 2^64 times too
    # large ("0x7f", 1.0, as 1.8446744073709552e19) and reads it back
    # 2^64 times too small, where the registry and ml_dtypes take the
    # number as the value: only NaN means the same to both.
    # src/zarr/data_type/narrow.rs tests the numeric forms.
    ("float8_e8m0fnu", "float32", "NaN"),
]


def widen(values, shown):
    return np.asarray(values).astype(shown)


def fill_bits(value):
    """Hex of one shown fill element, little-endian."""
    return np.asarray(value).astype(np.asarray(value).dtype.newbyteorder("<")).tobytes().hex()


def codes(bits, count):
    """Random stored codes of `bits` bits (upper bits clear, as writers do)."""
    return RNG.integers(0, 1 << bits, size=count, dtype=np.uint8)


def make_tensorstore(fx, root):
    import tensorstore as ts

    for name, shown, fill in TENSORSTORE:
        for sharded in (False, True):
            if sharded and name not in ("int4", "float8_e4m3fn"):
                continue
            path = name + ("_sharded" if sharded else "")
            inner = [{"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd"}]
            codecs = inner if not sharded else [{
                "name": "sharding_indexed",
                "configuration": {"chunk_shape": list(CHUNKS), "codecs": inner,
                                  "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}},
                                                   {"name": "crc32c"}]}}]
            grid = (4, 6) if sharded else CHUNKS
            t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": os.path.join(root, path)},
                         "metadata": {"data_type": name, "shape": list(SHAPE), "fill_value": fill,
                                      "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(grid)}},
                                      "codecs": codecs}}, create=True).result()
            dtype = t.dtype.numpy_dtype
            bits = 8 if name.startswith("float8") else int(name[-1]) if name.startswith(("int", "uint")) else 4
            values = codes(bits, SHAPE[0] * SHAPE[1]).view(dtype).reshape(SHAPE)
            # Rows 0..3 written; row 4 stays absent (the fill).
            t[:4, :] = values[:4, :]
            back = t.read().result()
            fx.expect(STORE, path, widen(back, shown), name, grid,
                      fill_bits=None if sharded else fill_bits(widen(back[4, 0], shown)))


V2_STORE = "narrow_v2"
# Its own generator too, so that the v3 fixtures' values do not move.
V2_RNG = np.random.default_rng(20261204)


def make_tensorstore_v2(fx):
    """The same types as tensorstore's zarr (v2) driver writes them, as
    Orbax does with use_zarr3=False (its default): `"dtype": "int4"`,
    `"bfloat16"`, … by name, one element a byte as in v3, blosc as its
    default compressor, row 4 absent."""
    import tensorstore as ts

    root = fx.store_path(V2_STORE)
    import shutil
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(root)
    with open(os.path.join(root, ".zgroup"), "w") as f:
        json.dump({"zarr_format": 2}, f)
    for name, shown, fill in TENSORSTORE + [("bfloat16", "float32", 1.5)]:
        dtype = getattr(ml_dtypes, name)
        if name.startswith("float4"):
            # tensorstore's v2 spelling of a 4-bit float's fill: the base64
            # of its byte (a float8's and bfloat16's is the number).
            fill = base64.b64encode(np.array([float(fill)]).astype(dtype).tobytes()).decode()
        t = ts.open({"driver": "zarr", "kvstore": {"driver": "file", "path": os.path.join(root, name)},
                     "metadata": {"dtype": name, "shape": list(SHAPE), "chunks": list(CHUNKS), "fill_value": fill}},
                    create=True).result()
        dtype = t.dtype.numpy_dtype
        if name == "bfloat16":
            values = V2_RNG.normal(0, 4, SHAPE).astype(dtype)
        else:
            bits = 8 if name.startswith("float8") else int(name[-1]) if name.startswith(("int", "uint")) else 4
            values = V2_RNG.integers(0, 1 << bits, size=SHAPE, dtype=np.uint8).view(dtype)
        t[:4, :] = values[:4, :]
        back = t.read().result()
        fx.expect(V2_STORE, name, widen(back, shown), name, CHUNKS, fill_bits=fill_bits(widen(back[4, 0], shown)))


def write_group_member(root, path, meta, chunks):
    """An array written by hand: its zarr.json and its chunk objects."""
    d = os.path.join(root, path)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "zarr.json"), "w") as f:
        json.dump(meta, f, indent=2)
    for key, data in chunks.items():
        p = os.path.join(d, "c", *key.split("."))
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)


def meta(data_type, fill, codecs):
    return {"zarr_format": 3, "node_type": "array", "shape": list(SHAPE), "data_type": data_type,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(CHUNKS)}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": fill, "codecs": codecs, "attributes": {}}


def chunk_boxes():
    """Each chunk's key and its slices; the last chunk row stays absent."""
    for i in range(0, SHAPE[0] - 1, CHUNKS[0]):
        for j in range(0, SHAPE[1], CHUNKS[1]):
            yield f"{i // CHUNKS[0]}.{j // CHUNKS[1]}", (slice(i, i + CHUNKS[0]), slice(j, j + CHUNKS[1]))


def pack(values, bits, padding):
    """The registry's packbits layout: element i is bits [i*k, (i+1)*k) of
    a little-endian bit stream, 0-padded, with a first or last padding byte."""
    stream = []
    for v in values:
        stream.extend((int(v) >> b) & 1 for b in range(bits))
    pad = (8 - len(stream) % 8) % 8
    stream.extend([0] * pad)
    out = bytes(sum(stream[i + b] << b for b in range(8)) for i in range(0, len(stream), 8))
    if padding == "first_byte":
        return bytes([pad]) + out
    return out + bytes([pad]) if padding == "last_byte" else out


def make_by_hand(fx, root):
    little = [{"name": "bytes", "configuration": {"endian": "little"}}]
    # (name, ml_dtypes type of a component, bits, shown, fill, codecs, complex)
    cases = [
        ("uint2", ml_dtypes.uint2, 2, "int8", 3, little, False),
        ("uint4", ml_dtypes.uint4, 4, "int8", 15, little, False),
        ("float8_e4m3", ml_dtypes.float8_e4m3, 8, "float32", "Infinity", little, False),
        ("float6_e2m3fn", ml_dtypes.float6_e2m3fn, 6, "float32", -7.5, little, False),
        ("float6_e3m2fn", ml_dtypes.float6_e3m2fn, 6, "float32", "0x1f", little, False),
        ("complex_float8_e4m3fn", ml_dtypes.float8_e4m3fn, 8, "complex64", ["NaN", 0.5], little, True),
        ("complex_float4_e2m1fn", ml_dtypes.float4_e2m1fn, 4, "complex64", [1.0, -6.0], little, True),
        ("complex_float16", np.float16, 16, "complex64", [1.5, "-Infinity"], little, True),
        ("complex_bfloat16", ml_dtypes.bfloat16, 16, "complex64", ["0x3fc0", 2.0],
         [{"name": "bytes", "configuration": {"endian": "big"}}], True),
        ("int4_packbits", ml_dtypes.int4, 4, "int8", -3,
         [{"name": "packbits", "configuration": {"padding_encoding": "first_byte"}}], False),
        ("float4_e2m1fn_packbits", ml_dtypes.float4_e2m1fn, 4, "float32", 0.5,
         [{"name": "packbits", "configuration": {"padding_encoding": "last_byte"}}], False),
        ("complex_float6_e3m2fn_packbits", ml_dtypes.float6_e3m2fn, 6, "complex64", [0, 0],
         [{"name": "packbits"}], True),
    ]
    for path, component, bits, shown, fill, codecs, is_complex in cases:
        name = path.removesuffix("_packbits")
        parts = 2 if is_complex else 1
        n = SHAPE[0] * SHAPE[1] * parts
        if bits == 16:
            stored = RNG.integers(0, 1 << 16, size=n, dtype=np.uint16)
            stored[(stored & 0x7c00) == 0x7c00] = 0x3c00  # no float16 NaN/infinity payloads
            if component is ml_dtypes.bfloat16:
                stored &= 0xbfff  # finite bfloat16s only
        else:
            stored = codes(bits, n)
        values = stored.view(component)
        widened = values.astype("float32" if shown != "int8" else "int8").reshape(SHAPE + ((2,) if is_complex else ()))
        if is_complex:
            widened = complex_of(widened[..., 0], widened[..., 1])
        stored = stored.reshape(SHAPE + ((2,) if is_complex else ()))
        chunks = {}
        for key, box in chunk_boxes():
            block = stored[box]
            if codecs[0]["name"] == "packbits":
                chunks[key] = pack(block.reshape(-1), bits, codecs[0].get("configuration", {}).get("padding_encoding"))
            elif bits == 16:
                chunks[key] = block.astype(">u2" if codecs[0]["configuration"]["endian"] == "big" else "<u2").tobytes()
            else:
                chunks[key] = block.tobytes()
        write_group_member(root, path, meta(name, fill, codecs), chunks)
        expected = widened.copy()
        fill_value = shown_fill(name, fill, shown)
        expected[SHAPE[0] - 1, :] = fill_value
        fx.expect(STORE, path, expected, name, CHUNKS, fill_bits=fill_bits(np.asarray(fill_value, shown)))


def complex_of(re, im):
    """complex64 from its parts, each kept exactly (-0.0 included, which
    `re + 1j * im` would lose)."""
    out = np.empty(np.shape(re), np.complex64)
    out.real = re
    out.imag = im
    return out if out.shape else out[()]


def shown_fill(name, fill, shown):
    """The fill value as ml_dtypes widens it."""
    if isinstance(fill, list):
        re, im = (shown_fill(name.removeprefix("complex_"), f, "float32") for f in fill)
        return complex_of(re, im)
    dtype = {"complex_float16": np.float16, "float16": np.float16}.get(name) or getattr(ml_dtypes, name)
    if isinstance(fill, str) and fill.startswith("0x"):
        bits = int(fill, 16)
        width = np.dtype(dtype).itemsize
        return np.frombuffer(bits.to_bytes(width, "little"), dtype=dtype)[0].astype(shown)
    if isinstance(fill, str):
        return np.asarray(float(fill.replace("Infinity", "inf")), dtype=dtype).astype(shown)
    return np.asarray(fill, dtype=dtype).astype(shown)


CODECS_STORE = "registry_codecs"


def encode_chunks(root, path, data, chunks, encode):
    """Write each chunk of `data` as `encode(block, index)`, all but the
    last, which stays absent; returns the expected values (the last chunk's
    the fill, 0)."""
    want = data.copy()
    last = (-(-data.shape[0] // chunks[0]) - 1, -(-data.shape[1] // chunks[1]) - 1)
    want[last[0] * chunks[0]:, last[1] * chunks[1]:] = 0
    for i in range(0, data.shape[0], chunks[0]):
        for j in range(0, data.shape[1], chunks[1]):
            if (i // chunks[0], j // chunks[1]) == last:
                continue
            block = np.zeros(chunks, data.dtype)
            part = data[i:i + chunks[0], j:j + chunks[1]]
            block[:part.shape[0], :part.shape[1]] = part
            key = f"{i // chunks[0]}/{j // chunks[1]}"
            p = os.path.join(root, path, "c", *key.split("/"))
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(encode(block, (i // chunks[0]) * -(-data.shape[1] // chunks[1]) + j // chunks[1]))
    return want


def array_meta(shape, chunks, dtype, fill, codecs):
    return {"zarr_format": 3, "node_type": "array", "shape": list(shape), "data_type": dtype,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
            "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
            "fill_value": fill, "codecs": codecs, "attributes": {}}


def make_codecs(fx):
    from numcodecs import Shuffle, Zstd
    import crc32c

    fx.fresh_group(CODECS_STORE)
    root = fx.store_path(CODECS_STORE)
    data = (np.arange(7 * 10, dtype="<f4") * 1.25 - 20).reshape(7, 10)

    def add(path, chunks, codecs, encode):
        os.makedirs(os.path.join(root, path), exist_ok=True)
        with open(os.path.join(root, path, "zarr.json"), "w") as f:
            json.dump(array_meta(data.shape, chunks, "float32", 0.0, codecs), f, indent=2)
        want = encode_chunks(root, path, data, chunks, encode)
        fx.expect(CODECS_STORE, path, want, "float32", chunks, fill_bits=np.float32(0).tobytes().hex())

    # reshape: the 4 x 6 chunk seen as 8 x 3, transposed to 3 x 8 for the
    # bytes codec, then zstd.
    add("reshape_transpose", (4, 6),
        [{"name": "reshape", "configuration": {"shape": [-1, 3]}},
         {"name": "transpose", "configuration": {"order": [1, 0]}},
         {"name": "bytes", "configuration": {"endian": "little"}}, {"name": "zstd", "configuration": {"level": 1}}],
        lambda block, _: Zstd(level=1).encode(np.ascontiguousarray(block.reshape(8, 3).T).tobytes()))
    # reshape by input dimensions: [[0, 1]] flattens the chunk to 24.
    add("reshape_flat", (4, 6),
        [{"name": "reshape", "configuration": {"shape": [[0, 1]]}},
         {"name": "bytes", "configuration": {"endian": "big"}}],
        lambda block, _: block.astype(">f4").tobytes())

    # conditional over shuffle, zstd and crc32c: each of the 16 chunks'
    # masks picks (bit 0 shuffle, bit 1 zstd, bit 2 crc32c), all eight twice.
    nested = [{"name": "numcodecs.shuffle", "configuration": {"elementsize": 4}},
              {"name": "zstd", "configuration": {"level": 3}}, {"name": "crc32c"}]

    def conditional(header_bytes):
        def encode(block, index):
            mask = index % 8
            out = block.astype("<f4").tobytes()
            if mask & 1:
                out = bytes(Shuffle(elementsize=4).encode(out))
            if mask & 2:
                out = Zstd(level=3).encode(out)
            if mask & 4:
                out = out + crc32c.crc32c(out).to_bytes(4, "little")
            return mask.to_bytes(header_bytes, "little") + out
        return encode

    add("conditional", (2, 3), [{"name": "bytes", "configuration": {"endian": "little"}},
                        {"name": "conditional", "configuration": {"codecs": nested}}], conditional(1))
    add("conditional_header_bits_16", (2, 3),
        [{"name": "bytes", "configuration": {"endian": "little"}},
         {"name": "conditional", "configuration": {"codecs": nested, "header_bits": 16}}], conditional(2))


def make_all(fx):
    fx.fresh_group(STORE)
    root = fx.store_path(STORE)
    make_tensorstore(fx, root)
    make_tensorstore_v2(fx)
    make_by_hand(fx, root)
    make_codecs(fx)

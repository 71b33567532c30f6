"""Record (structured) arrays: numpy record dtypes as zarr-python writes them
in Zarr v3 (the legacy `structured` type: `[name, type]` fields, a base64
fill, `bytes` without `endian`) and in Zarr v2 (a record list whose fields
each name their byte order, nested records), as tensorstore writes a
subarray field in Zarr v2, plus the
`struct` form of zarr-extensions (object fields, an object fill, big-endian
`bytes`) written here with numpy, which zarr-python 3.1 cannot write.
Called by make_fixtures.py, whose helpers arrive as `fx`.

Expected bytes are the records as numpy holds them, packed, every field
little-endian (the host order of the tests): zarr-python's read of what it
wrote where it can read it, tensorstore's read of what tensorstore wrote,
and otherwise the numpy array that was written.
"""

import json
import os
import shutil

import numpy as np
import zarr

V2_STORE = "structs_v2"
V3_STORE = "structs"


def little_records(a):
    """Packed records, every field little-endian."""
    a = np.ascontiguousarray(a)
    return a.astype(a.dtype.newbyteorder("<")).tobytes(order="C")


def fill_hex(a):
    """One fill record as little-endian hex (the manifest's `fill`)."""
    return little_records(np.asarray(a.fill_value, dtype=a.dtype).reshape(1)).hex()


def numbered(dt, shape):
    """Values that differ in every field, so that a swapped or shifted field shows."""
    n = int(np.prod(shape))
    out = np.zeros(n, dtype=dt)

    def fill(view, names, k):
        for name in names:
            sub = view[name]
            if sub.dtype.names:
                fill(sub, sub.dtype.names, k + 7)
                continue
            base = np.arange(n * max(1, sub[0].size), dtype=np.int64).reshape(sub.shape) + k * 1000
            if sub.dtype.kind == "S":
                view[name] = np.char.encode(np.char.add("s", (base % 997).astype(str)), "ascii")
            elif sub.dtype.kind == "M":
                view[name] = (base * 3600 + 1_700_000_000).astype(sub.dtype)
            elif sub.dtype.kind == "f":
                view[name] = base * 1.25 - 3.5
            else:
                view[name] = (base * 37 - 5) % np.iinfo(sub.dtype).max
            k += 1

    fill(out, dt.names, 1)
    return out.reshape(shape)


def make_v3(fx):
    path = fx.store_path(V3_STORE)
    shutil.rmtree(path, ignore_errors=True)
    g = zarr.open_group(path, mode="w", zarr_format=3)
    dt = np.dtype([("a", "<u2"), ("b", "<f4"), ("c", "<i4")])
    fill = np.array([(7, 1.5, -1)], dtype=dt)[0]
    a = g.create_array("legacy", shape=(5,), chunks=(2,), dtype=dt, fill_value=fill)
    data = numbered(dt, (5,))
    a[:3] = data[:3]  # the chunk of records 4 and 5 stays absent: the fill
    got = np.asarray(a[...])
    fx.expect(V3_STORE, "legacy", little_records(got), "structured", (2,), fill_bits=fill_hex(a), shape=[5])

    # zarr-extensions `struct`, written with numpy: object fields, a
    # nested record, an object fill, big-endian bytes, one chunk absent.
    point = np.dtype([("x", ">f4"), ("y", ">f4")])
    dt = np.dtype([("id", ">i4"), ("flags", "u1"), ("point", point), ("value", ">f8")])
    shape, chunks = (3, 4), (2, 3)
    data = numbered(dt, shape)
    fill = np.array([(-9, 255, (0.5, -0.5), 3.25)], dtype=dt)[0]
    meta = {
        "zarr_format": 3,
        "node_type": "array",
        "shape": list(shape),
        "data_type": {
            "name": "struct",
            "configuration": {
                "fields": [
                    {"name": "id", "data_type": "int32"},
                    {"name": "flags", "data_type": "uint8"},
                    {"name": "point", "data_type": {"name": "struct", "configuration": {"fields": [
                        {"name": "x", "data_type": "float32"}, {"name": "y", "data_type": "float32"}]}}},
                    {"name": "value", "data_type": {"name": "float64"}},
                ]
            },
        },
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunks)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": {"id": -9, "flags": 255, "point": {"x": 0.5, "y": -0.5}, "value": 3.25},
        "codecs": [{"name": "bytes", "configuration": {"endian": "big"}}],
        "attributes": {"long_name": "records in the struct form"},
    }
    os.makedirs(os.path.join(path, "modern"))
    with open(os.path.join(path, "modern", "zarr.json"), "w") as f:
        json.dump(meta, f, indent=2)
    full = np.full((4, 6), fill, dtype=dt)
    full[:3, :4] = data
    for i in range(2):
        for j in range(2):
            if (i, j) == (1, 1):
                continue  # absent: the fill
            chunk = np.ascontiguousarray(full[2 * i:2 * i + 2, 3 * j:3 * j + 3]).astype(dt)
            key = os.path.join(path, "modern", "c", str(i), str(j))
            os.makedirs(os.path.dirname(key), exist_ok=True)
            with open(key, "wb") as f:
                f.write(chunk.tobytes())
    expected = data.copy()
    expected[2, 3] = fill
    fx.expect(V3_STORE, "modern", little_records(expected), "struct", chunks,
              fill_bits=little_records(np.array([fill], dtype=dt)).hex(), shape=list(shape))


def make_v2(fx):
    path = fx.store_path(V2_STORE)
    shutil.rmtree(path, ignore_errors=True)
    g = zarr.open_group(path, mode="w", zarr_format=2)
    # Fields in both byte orders and a fixed-length string, a base64 fill,
    # the last row of chunks absent.
    dt = np.dtype([("a", "<u2"), ("b", ">f8"), ("s", "S3")])
    fill = np.array([(513, -2.5, b"zz")], dtype=dt)[0]
    a = g.create_array("plain", shape=(4, 3), chunks=(3, 2), dtype=dt, fill_value=fill)
    data = numbered(dt, (4, 3))
    a[:3] = data[:3]
    got = np.asarray(a[...])
    fx.expect(V2_STORE, "plain", little_records(got), "structured", (3, 2), fill_bits=fill_hex(a), shape=[4, 3])

    # A nested record and a datetime: zarr-python writes it but cannot read
    # it back, so the expected records are the numpy array written.
    dt = np.dtype([("p", [("x", "<f4"), ("y", ">i2")]), ("t", "<M8[s]")])
    a = g.create_array("nested", shape=(4, 3), chunks=(3, 2), dtype=dt, fill_value=None, compressors=None)
    data = numbered(dt, (4, 3))
    a[...] = data
    fx.expect(V2_STORE, "nested", little_records(data), "structured", (3, 2), shape=[4, 3])

    # A subarray field, as tensorstore writes it (zarr-python 3.1 writes
    # such a field as opaque `|V8` and reads none): the expected records
    # are assembled from tensorstore's read of each field.
    import tensorstore as ts

    fields = [["a", "<u2"], ["c", "<i4", [2]], ["d", ">f4", [2, 2]]]
    dt = np.dtype([tuple(f[:2]) + ((tuple(f[2]),) if len(f) > 2 else ()) for f in fields])

    def spec(field):
        return {"driver": "zarr", "kvstore": {"driver": "file", "path": os.path.join(path, "subarray")},
                "field": field, "metadata": {"shape": [4, 3], "chunks": [3, 2], "dtype": fields,
                                             "compressor": {"id": "zlib", "level": 1}, "fill_value": None}}

    data = numbered(dt, (4, 3))
    ts.open(spec("a"), create=True).result()
    for name in dt.names:
        ts.open(spec(name)).result()[...] = data[name]
    back = np.zeros((4, 3), dtype=dt)
    for name in dt.names:
        back[name] = ts.open(spec(name)).result().read().result()
    fx.expect(V2_STORE, "subarray", little_records(back), "structured", (3, 2), shape=[4, 3])


def make_all(fx):
    make_v3(fx)
    make_v2(fx)

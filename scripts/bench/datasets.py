"""The benchmarks' local stores, written by zarr-python (the main array,
its sharded copies and a Zarr v2 copy) or as JSON (hierarchies of many
nodes), and built once per work directory: each is left complete or
rebuilt (a marker file is written last).
"""

import json
import os
import shutil
import subprocess

import numpy as np
import zarr
from zarr.codecs import ZstdCodec

from common import log


def build_main(path, size_mib):
    """A float32 NZ array of size_mib decoded, 4 MiB chunks, zstd, a smooth
    field plus noise; and a sharded copy (64 MiB shards of 2048 inner chunks
    of 32 KiB: 8 whole rows each)."""
    t = max(8, size_mib // 4)
    t -= t % 8
    shape = (t, 1024, 1024)
    g = zarr.open_group(path, mode="w", zarr_format=3)
    g.attrs["conventions"] = "NZ-1.0"
    a = g.create_array("field", shape=shape, chunks=(1, 1024, 1024), dtype="float32",
                       compressors=[ZstdCodec(level=3)], dimension_names=["time", "y", "x"], fill_value=0)
    s = g.create_array("sharded", shape=shape, chunks=(1, 8, 1024), shards=(16, 1024, 1024), dtype="float32",
                       compressors=[ZstdCodec(level=3)], dimension_names=["time", "y", "x"], fill_value=0)
    y, x = np.meshgrid(np.arange(1024, dtype="float32"), np.arange(1024, dtype="float32"), indexing="ij")
    base = 280 + 10 * np.sin(x / 97) * np.cos(y / 131)
    rng = np.random.default_rng(1)
    step = 16
    for t0 in range(0, t, step):
        slab = np.stack([base + 0.05 * k + rng.normal(0, 0.5, base.shape).astype("float32")
                         for k in range(t0, t0 + step)]).astype("float32")
        a[t0:t0 + step] = slab
        s[t0:t0 + step] = slab
    return shape


def build_square(path):
    """The layout a legacy program usually meets: the main array again in
    64 MiB shards of 16x1024x1024 whose inner chunks are square 128x128
    float32 (64 KiB)."""
    src = zarr.open_array(path, path="field", mode="r")
    g = zarr.open_group(path, mode="a", zarr_format=3)
    sq = g.create_array("square", shape=src.shape, chunks=(1, 128, 128), shards=(16, 1024, 1024), dtype="float32",
                        compressors=[ZstdCodec(level=3)], dimension_names=["time", "y", "x"], fill_value=0,
                        overwrite=True)
    for t0 in range(0, src.shape[0], 16):
        sq[t0:t0 + 16] = src[t0:t0 + 16]


def build_v2(path, v3_store):
    """A Zarr v2 copy of the main array as xarray writes it by default
    (blosc lz4, byte shuffle, _ARRAY_DIMENSIONS), same chunks."""
    import numcodecs
    src = zarr.open_array(v3_store, path="field", mode="r")
    g = zarr.open_group(path, mode="w", zarr_format=2)
    a = g.create_array("field", shape=src.shape, chunks=(1, 1024, 1024), dtype="float32", fill_value=0,
                       compressors=numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE))
    a.attrs["_ARRAY_DIMENSIONS"] = ["time", "y", "x"]
    for t0 in range(0, src.shape[0], 16):
        a[t0:t0 + 16] = src[t0:t0 + 16]


def build_many(path, n):
    """A hierarchy of n tiny arrays with inline consolidated metadata."""
    os.makedirs(path, exist_ok=True)
    meta = {}
    for i in range(n):
        doc = {"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "float32",
               "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
               "chunk_key_encoding": {"name": "default"}, "fill_value": 0.0,
               "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
               "dimension_names": ["n"], "attributes": {}}
        name = f"g{i // 1000:02d}/v{i:05d}"
        os.makedirs(os.path.join(path, name), exist_ok=True)
        with open(os.path.join(path, name, "zarr.json"), "w") as f:
            json.dump(doc, f)
        meta[name] = doc
    for gname in {k.split("/")[0] for k in meta}:
        doc = {"zarr_format": 3, "node_type": "group", "attributes": {}}
        with open(os.path.join(path, gname, "zarr.json"), "w") as f:
            json.dump(doc, f)
        meta[gname] = doc
    root = {"zarr_format": 3, "node_type": "group", "attributes": {"conventions": "NZ-1.0"},
            "consolidated_metadata": {"kind": "inline", "must_understand": False, "metadata": meta}}
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump(root, f)


def build_million(path):
    """One array of 1,000,000 (absent) chunks."""
    os.makedirs(os.path.join(path, "big"), exist_ok=True)
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "group"}, f)
    doc = {"zarr_format": 3, "node_type": "array", "shape": [1000, 1000], "data_type": "uint8",
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1, 1]}},
           "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
           "codecs": [{"name": "bytes"}], "dimension_names": ["y", "x"]}
    with open(os.path.join(path, "big", "zarr.json"), "w") as f:
        json.dump(doc, f)


def build_groups(path, n):
    """n nodes of consolidated metadata, all groups (1,000 per parent): a
    million arrays would pass the 64 MiB limit of one zarr.json."""
    os.makedirs(path, exist_ok=True)
    meta = {}
    grp = {"zarr_format": 3, "node_type": "group"}
    for i in range(n - 1):
        g = f"g{i // 1000:04d}"
        meta[g if i % 1000 == 0 else f"{g}/{i % 1000:03d}"] = grp
    root = {"zarr_format": 3, "node_type": "group", "attributes": {"conventions": "NZ-1.0"},
            "consolidated_metadata": {"kind": "inline", "must_understand": False, "metadata": meta}}
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump(root, f, separators=(",", ":"))


def build_wide(path, n):
    """One group of n tiny arrays (consolidated), and beside it one array of
    n chunks: `ls -la` of each lists n entries."""
    os.makedirs(os.path.join(path, "wide"), exist_ok=True)
    arr = {"zarr_format": 3, "node_type": "array", "shape": [1], "data_type": "uint8",
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1]}},
           "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]}
    meta = {"wide": {"zarr_format": 3, "node_type": "group"}}
    for i in range(n):
        meta[f"wide/v{i:06d}"] = arr
    meta["chunks"] = dict(arr, shape=[n])
    root = {"zarr_format": 3, "node_type": "group",
            "consolidated_metadata": {"kind": "inline", "must_understand": False, "metadata": meta}}
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump(root, f, separators=(",", ":"))


def main_stores(work, size_mib):
    """The main store (field, sharded, square) and its Zarr v2 copy under
    `work`, built where missing: (v3 store, v2 store)."""
    store = os.path.join(work, f"bench-{size_mib}.zarr")
    marker = os.path.join(store, ".complete-v2")
    if not os.path.exists(marker):
        log(f"building {store} ({size_mib} MiB decoded) with zarr-python {zarr.__version__} ...")
        shutil.rmtree(store, ignore_errors=True)
        build_main(store, size_mib)
        open(marker, "w").close()
    if not os.path.exists(os.path.join(store, "square", ".complete")):
        log("building the square-inner-chunk sharded copy ...")
        build_square(store)
        open(os.path.join(store, "square", ".complete"), "w").close()
    store_v2 = os.path.join(work, f"bench-{size_mib}-v2.zarr")
    if not os.path.exists(os.path.join(store_v2, ".complete")):
        log(f"building the Zarr v2 copy {store_v2} (blosc lz4) ...")
        shutil.rmtree(store_v2, ignore_errors=True)
        build_v2(store_v2, store)
        open(os.path.join(store_v2, ".complete"), "w").close()
    return store, store_v2


def field_only(full_store):
    """A store holding only `field` (hard links to the main store's), so
    its group's .nc holds that one variable."""
    store = full_store[:-len(".zarr")] + "-field.zarr"
    if not os.path.exists(os.path.join(store, "field", "zarr.json")):
        shutil.rmtree(store, ignore_errors=True)
        os.makedirs(store)
        root = json.load(open(os.path.join(full_store, "zarr.json")))
        root.pop("consolidated_metadata", None)
        with open(os.path.join(store, "zarr.json"), "w") as f:
            json.dump(root, f)
        subprocess.run(["cp", "-al", os.path.join(full_store, "field"), os.path.join(store, "field")], check=True)
    return store


def decoded_bytes(store, array="field"):
    """The decoded size of a float32 array of `store`, and its shape."""
    meta = json.load(open(os.path.join(store, array, "zarr.json")))
    return int(np.prod(meta["shape"])) * 4, tuple(meta["shape"])

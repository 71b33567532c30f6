#!/usr/bin/env python3
"""The formats of 2026 (issue #30), written by zarr-python 3.4 itself.

zarr-python 3.4 needs Python >= 3.12: scripts/setup_2026.sh makes the venv
(.venv312, from pyenv's 3.12 or any python3.12 on PATH), with cast-value-rs
for `cast_value` and pcodec for `numcodecs.pcodec`.
Writes tests/data/formats_2026.zarr and, for every array, the values
zarr-python reads back as little-endian C-order bytes under
tests/data/expected_2026/ (with index.json: path, dtype, shape), which
tests/formats_2026.rs compares with data.bin through a mount.

Usage: python scripts/fixtures_2026.py [OUT_DIR]   (default tests/data)
"""
import json
import os
import shutil
import sys

import numpy as np
import zarr
from zarr.codecs import BytesCodec, CastValue, ScaleOffset, ZstdCodec
from zarr.codecs.numcodecs import PCodec

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
    with open(os.path.join(expected, "index.json"), "w") as f:
        json.dump({"zarr_python": zarr.__version__, "numpy": np.__version__, "arrays": index}, f, indent=1)
    print(f"wrote {len(index)} arrays to {store}")


if __name__ == "__main__":
    main()

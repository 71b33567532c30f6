#!/usr/bin/env python3
"""OME-Zarr images as ome-zarr-py writes them, in tests/data/ome/:

  ngff04.zarr   NGFF 0.4 (Zarr v2): a 2 x 3 x 32 x 48 c/z/y/x uint16 image
                (round cells in channel 0, stripes in 1) with ome-zarr's
                default pyramid (levels s0..s4), whose level arrays carry
                no dimension names of their own; physical sizes (z 2 um, y and
                x 0.5 um at level 0) and an `omero` block giving each channel
                a colour and a display window
  ngff05.zarr   NGFF 0.5 (Zarr v3): a t/c/z/y/x float32 image, the axes
                under the group's `ome` attribute
  plate.zarr    NGFF 0.4: a plate of one row and two wells (A/1, A/2), one
                field each, each a 2 x 40 x 56 c/y/x uint8 image of two
                levels with a `labels/cells` uint16 label image
  zhalved.zarr  NGFF 0.5: a z/y/x uint16 image whose level 1 halves z as
                well (ngff-zarr's default), so that only levels 0 and 2
                (which keeps z) can share its planes in a pyramid
  ngffzarr.zarr NGFF 0.5 as ngff-zarr 0.50 writes it, sharded (shards of
                2 x 2 x 2 chunks of 8 x 8 x 8): a 16 x 64 x 64 z/y/x uint8
                image whose level 1 halves z too (left out of its pyramid)
  ngffzarr_t.zarr  the same writer: a t/y/x float32 time series, t in
                seconds, levels that keep t
  wide.zarr     NGFF 0.4: a 48 x 8300 y/x uint16 image in 30 x 1000
                chunks, wider than 8192, so its OME-TIFF holds level 0 in
                tiles (and level 1, 24 x 4150, in strips)

ome-zarr-py 0.21 writes all but the ngffzarr* stores, which ngff-zarr
0.50 writes. The values are what numpy wrote; tests/extensions.rs and the corpus check
(scripts/corpus.py, with zarr-python and tifffile) read them back.

Needs scripts/requirements-ome.txt (a Python 3.12 venv); not part of CI's
fixture check, whose venvs lack ome-zarr. Rerun it by hand:
    python3.12 -m venv /tmp/vome && /tmp/vome/bin/pip install -r scripts/requirements-ome.txt
    /tmp/vome/bin/python scripts/fixtures_ome.py
"""
import os
import shutil

import numpy as np
import zarr
from ome_zarr.format import FormatV04, FormatV05
from ome_zarr.io import parse_url
from ome_zarr.writer import write_image, write_labels, write_multiscale, write_plate_metadata, write_well_metadata
from ome_zarr_models.common.omero import Omero
import ngff_zarr

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, "tests", "data", "ome")


def image(name, data, axes, fmt, zarr_format, **extra):
    path = os.path.join(OUT, name)
    shutil.rmtree(path, ignore_errors=True)
    store = parse_url(path, mode="w", fmt=fmt).store
    root = zarr.group(store=store, zarr_format=zarr_format)
    write_image(image=data, group=root, axes=axes, fmt=fmt, **extra)


def main():
    os.makedirs(OUT, exist_ok=True)
    # Two channels of three z planes, 32 x 48: round "cells" that grow
    # with z, and a pattern of stripes, so that a viewer shows something.
    yy, xx = np.mgrid[0:32, 0:48].astype(np.float64)
    cells = [(8, 10, 3.0), (20, 30, 5.0), (11, 38, 2.5), (25, 9, 4.0), (6, 24, 2.0)]
    planes = []
    for z in range(3):
        blobs = sum(np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * (r + z) ** 2)) for cy, cx, r in cells)
        stripes = 0.5 + 0.5 * np.sin(xx / 3.0 + yy / 5.0 + z)
        planes.append(np.stack([blobs / blobs.max(), stripes]))
    c = (np.stack(planes, axis=1) * 4000).astype(np.uint16)  # (c, z, y, x)
    omero = {"channels": [
        {"label": "cells", "color": "00FF00", "active": True,
         "window": {"start": 200, "end": 3000, "min": 0, "max": 65535}},
        {"label": "stripes", "color": "FF00FF", "active": True,
         "window": {"start": 0, "end": 4000, "min": 0, "max": 65535}},
    ]}
    image("ngff04.zarr", c, "czyx", FormatV04(), 2, scale={"c": 1.0, "z": 2.0, "y": 0.5, "x": 0.5},
          axes_units={"z": "micrometer", "y": "micrometer", "x": "micrometer"},
          omero=Omero.model_validate(omero))
    rng = np.random.default_rng(5)
    t = rng.normal(100, 15, size=(2, 2, 3, 16, 24)).astype(np.float32)
    image("ngff05.zarr", t, "tczyx", FormatV05(), 3)
    plate(rng)
    zhalved(rng)
    ngffzarr(rng)
    yy, xx = np.mgrid[0:48, 0:8300]
    wide = (xx // 16 * 3 + yy * 5).astype(np.uint16)
    image("wide.zarr", wide, "yx", FormatV04(), 2, scale_factors=(2,), storage_options={"chunks": (30, 1000)})
    print(f"fixtures_ome: wrote {OUT}")


def plate(rng):
    """A plate whose fields each have an image and a label image."""
    path = os.path.join(OUT, "plate.zarr")
    shutil.rmtree(path, ignore_errors=True)
    fmt = FormatV04()
    root = zarr.group(store=parse_url(path, mode="w", fmt=fmt).store, zarr_format=2)
    write_plate_metadata(root, ["A"], ["1", "2"], ["A/1", "A/2"], fmt=fmt, name="tiny plate")
    for well in ("A/1", "A/2"):
        w = root.require_group(well)
        write_well_metadata(w, ["0"], fmt=fmt)
        field = w.require_group("0")
        pixels = rng.integers(0, 255, size=(2, 40, 56), dtype=np.uint8)
        write_image(image=pixels, group=field, axes="cyx", fmt=fmt, scale_factors=(2,),
                    scale={"c": 1.0, "y": 0.65, "x": 0.65}, axes_units={"y": "micrometer", "x": "micrometer"})
        labels = (pixels[0] > 128).astype(np.uint16) * np.arange(1, 57, dtype=np.uint16)
        write_labels(labels, field, name="cells", axes="yx", fmt=fmt, scale_factors=(2,))


def zhalved(rng):
    """Levels as ngff-zarr's default makes them: level 1 halves z too."""
    path = os.path.join(OUT, "zhalved.zarr")
    shutil.rmtree(path, ignore_errors=True)
    fmt = FormatV05()
    root = zarr.group(store=parse_url(path, mode="w", fmt=fmt).store, zarr_format=3)
    l0 = rng.integers(0, 4000, size=(4, 24, 32), dtype=np.uint16)
    l1 = l0[::2, ::2, ::2].copy()
    l2 = l0[:, ::4, ::4].copy()
    transforms = [[{"type": "scale", "scale": s}] for s in ([1.0, 0.5, 0.5], [2.0, 1.0, 1.0], [1.0, 2.0, 2.0])]
    write_multiscale([l0, l1, l2], root, fmt=fmt, axes="zyx", coordinate_transformations=transforms,
                     axes_units={"z": "micrometer", "y": "micrometer", "x": "micrometer"})


def ngffzarr(rng):
    """Images as ngff-zarr writes them (NGFF 0.5, sharded)."""
    z = np.clip(rng.normal(120, 40, size=(16, 64, 64)), 0, 255).astype(np.uint8)
    img = ngff_zarr.to_ngff_image(z, dims=["z", "y", "x"], scale={"z": 2.0, "y": 0.5, "x": 0.5},
                                  axes_units={"z": "micrometer", "y": "micrometer", "x": "micrometer"})
    ms = ngff_zarr.to_multiscales(img, scale_factors=[2], chunks=8)
    path = os.path.join(OUT, "ngffzarr.zarr")
    shutil.rmtree(path, ignore_errors=True)
    ngff_zarr.to_ngff_zarr(path, ms, version="0.5", chunks_per_shard=2)
    t = rng.normal(0, 1, size=(3, 40, 48)).astype(np.float32)
    img = ngff_zarr.to_ngff_image(t, dims=["t", "y", "x"], scale={"t": 0.5, "y": 1.5, "x": 1.5},
                                  axes_units={"t": "second", "y": "micrometer", "x": "micrometer"})
    ms = ngff_zarr.to_multiscales(img, scale_factors=[{"y": 2, "x": 2}], chunks=16)
    path = os.path.join(OUT, "ngffzarr_t.zarr")
    shutil.rmtree(path, ignore_errors=True)
    ngff_zarr.to_ngff_zarr(path, ms, version="0.5")


if __name__ == "__main__":
    main()

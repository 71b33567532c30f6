#!/usr/bin/env python3
"""Check preview.png and index.html through real mounts (issue #37).

For every array with a preview in the given stores, the PNG is decoded with
Pillow and compared pixel for pixel with an image computed here,
independently, from zarr-python's values: the first plane of the last two
dimensions, the same stride (long side at most 512; a small plane scaled up by a whole factor to a long side of at least 256), numpy's 2nd and 98th
percentiles of the sampled values, matplotlib's viridis, what is missing
transparent (a point whose chunk or shard object the store does not hold,
NaN, and, except in an NGFF image level, a value of the `_FillValue` or
`missing_value` attribute, a Zarr v2 array's fill_value being its
`_FillValue`), rows
flipped when a latitude coordinate increases along them; a level of an
OME-NGFF image whose `omero` gives channel 0 a window and colour is drawn
black at the window's start to the colour at its end instead of viridis.
Its tEXt range must be those percentiles. Then, where Debian's `chromium` is installed,
headless Chromium opens index.html from the mount of the first store and
takes a screenshot (kept in target/previews/), which must show the
thumbnails: at least 60% of their area in viridis colours.

Usage: python scripts/check_previews.py NZFS_BINARY STORE.zarr...
(needs zarr, numpy, Pillow and matplotlib: scripts/requirements.txt)
"""
import base64
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import zarr
from matplotlib import colormaps
from PIL import Image

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
LUT = colormaps["viridis"](np.arange(256), bytes=True)[:, :3]


def fail(msg):
    print(f"check_previews: {msg}", file=sys.stderr)
    sys.exit(1)


def ngff(attrs, key):
    """An NGFF attribute: at the top (0.4) or under `ome` (0.5)."""
    return attrs.get(key, (attrs.get("ome") or {}).get(key))


def omero_window(root, path):
    """(start, end, (r, g, b)) of channel 0 of the NGFF image that array
    `path` is a level of, where its omero block gives a usable window."""
    parts = path.split("/")
    for up in range(1, min(4, len(parts)) + 1):
        gpath = "/".join(parts[:-up])
        group = root[gpath] if gpath else root
        attrs = dict(group.attrs)
        for image in ngff(attrs, "multiscales") or []:
            if "/".join(parts[-up:]) in [d.get("path") for d in image.get("datasets", [])]:
                try:
                    ch = ngff(attrs, "omero")["channels"][0]
                    start, end = float(ch["window"]["start"]), float(ch["window"]["end"])
                    color = ch.get("color", "FFFFFF")
                    rgb = tuple(int(color[i:i + 2], 16) for i in (0, 2, 4))
                except (KeyError, IndexError, TypeError, ValueError):
                    return None
                if len(color) == 6 and math.isfinite(start) and math.isfinite(end) and end > start:
                    return start, end, rgb
                return None
    return None


def image_level(root, path):
    """Whether array `path` is a level (a `datasets` path) of an NGFF image."""
    parts = path.split("/")
    for up in range(1, min(4, len(parts)) + 1):
        gpath = "/".join(parts[:-up])
        group = root[gpath] if gpath else root
        for image in ngff(dict(group.attrs), "multiscales") or []:
            for d in image.get("datasets", []):
                if "/".join(filter(None, [gpath, d.get("path", "")])) == path:
                    return True
    return False


def declared_missing(arr):
    """The values the attributes declare missing: `_FillValue` (a Zarr v2
    array's fill_value where it has none, as xarray reads it) and
    `missing_value` (one or a list), in the array's type."""
    out = []
    fill = arr.attrs.get("_FillValue", None)
    if isinstance(fill, str):
        # NZ-1.0's forms: "NaN", "Infinity", or base64 of a float64.
        fill = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}.get(fill) \
            or float(np.frombuffer(base64.b64decode(fill), "<f8")[0])
    if fill is None and arr.metadata.zarr_format == 2:
        fill = arr.fill_value
    if fill is not None:
        out.append(fill)
    mv = arr.attrs.get("missing_value", None)
    if isinstance(mv, list):
        out.extend(mv[:16])
    elif isinstance(mv, (int, float)):
        out.append(mv)
    if arr.dtype.kind == "f":
        out = [float(np.asarray(v).astype(arr.dtype)) for v in out]  # in the array's type, as netCDF does
    return [float(v) for v in out if not math.isnan(float(v))]


def present_mask(arr, store, ys, xs):
    """For the sampled rows `ys` and columns `xs` (leading indices 0):
    whether the object holding each point (its shard, else its chunk) is
    in the store at `store`."""
    obj = arr.shards or arr.chunks
    lead = (0,) * (arr.ndim - 2)
    keys = {}
    out = np.zeros((len(ys), len(xs)), dtype=bool)
    for i, y in enumerate(ys):
        for j, x in enumerate(xs):
            coords = lead + (y // obj[-2], x // obj[-1])
            if coords not in keys:
                key = arr.metadata.encode_chunk_key(coords)
                keys[coords] = os.path.exists(os.path.join(store, arr.path, key))
            out[i, j] = keys[coords]
    return out


def expected_image(arr, group, window, image, store):
    """The RGBA image and range of the preview of zarr array `arr`."""
    shape = arr.shape
    ny, nx = shape[-2], shape[-1]
    s = max(1, math.ceil(max(ny, nx) / 512))
    plane = np.asarray(arr[(0,) * (len(shape) - 2) + (slice(None), slice(None))])
    sample = plane[::s, ::s].astype("float64")
    valid = ~np.isnan(sample) & present_mask(arr, store, range(0, ny, s), range(0, nx, s))
    if not image:
        for v in declared_missing(arr):
            valid &= sample != v
    values = sample[valid]
    dims = getattr(arr.metadata, "dimension_names", None) or [None] * len(shape)
    flip = False
    ydim = dims[-2]
    if ydim is not None and ydim in group.array_keys():
        c = group[ydim]
        units = c.attrs.get("units", "")
        if c.shape == (ny,) and (c.attrs.get("standard_name") == "latitude" or units in (
                "degrees_north", "degree_north", "degree_N", "degrees_N", "degreeN", "degreesN")):
            lat = np.asarray(c[:])
            flip = float(lat[0]) < float(lat[-1])
    h, w = sample.shape
    img = np.zeros((h, w, 4), dtype="uint8")
    rng = None
    # The percentiles of the finite values: +-Inf take the ends of the scale.
    finite = values[np.isfinite(values)]
    if finite.size:
        lo, hi = np.percentile(finite, [2, 98])
        rng = (float(lo), float(hi))
        if hi > lo:
            idx = np.clip(np.floor((sample - lo) / (hi - lo) * 255 + 0.5), 0, 255)
        else:
            idx = np.zeros_like(sample)
        idx = np.where(valid, idx, 0).astype(int)
        img[..., :3] = LUT[idx]
        img[..., 3] = np.where(valid, 255, 0)
        img[~valid] = 0
    if window is not None:
        start, end, rgb = window
        widx = np.clip(np.floor((np.nan_to_num(sample) - start) / (end - start) * 255 + 0.5), 0, 255).astype(int)
        for k in range(3):
            img[..., k] = (rgb[k] * widx + 127) // 255
        img[..., 3] = np.where(valid, 255, 0)
        img[~valid] = 0
    if flip:
        img = img[::-1]
    # A small plane is scaled up by a whole factor k (each value k x k
    # pixels): the long side at least 256, at most 512.
    if s == 1:
        long = max(ny, nx, 1)
        k = max(1, min(math.ceil(256 / long), 512 // long))
        img = np.repeat(np.repeat(img, k, axis=0), k, axis=1)
    return img, rng


def rust_exp(x):
    """Rust's `{:+.6e}` of x: sign, 7 digits, `e` and the bare exponent."""
    m, e = f"{x:+.6e}".split("e")
    return f"{m}e{int(e)}"


def check_store(nzfs, store, mp):
    subprocess.run([nzfs, "mount", store, mp], check=True, stdout=subprocess.DEVNULL)
    checked = 0
    try:
        root = zarr.open_group(store, mode="r")
        for path, arr in sorted(root.members(max_depth=None)):
            if not isinstance(arr, zarr.Array):
                continue
            png = os.path.join(mp, path, "preview.png")
            has = os.path.exists(png)
            want = arr.ndim >= 2 and arr.dtype.kind in "iuf" and all(arr.shape)
            if has != want:
                fail(f"{store}/{path}: preview.png {'shown' if has else 'missing'}")
            if not has:
                continue
            size = os.stat(png).st_size
            with open(png, "rb") as f:
                data = f.read()
            if len(data) != size:
                fail(f"{path}: stat says {size} bytes, the file has {len(data)}")
            im = Image.open(png)
            im.load()
            got = np.asarray(im.convert("RGBA"))
            parent = root[os.path.dirname(path)] if os.path.dirname(path) else root
            want_img, rng = expected_image(arr, parent, omero_window(root, path), image_level(root, path), store)
            if got.shape != want_img.shape:
                fail(f"{path}: {got.shape} pixels, expected {want_img.shape}")
            diff = np.argwhere(np.any(got != want_img, axis=-1))
            if len(diff):
                y, x = diff[0]
                fail(f"{path}: {len(diff)} pixels differ, first at row {y} column {x}: "
                     f"{got[y, x].tolist()} vs {want_img[y, x].tolist()}")
            shown = im.text.get("nzfs:range", "").split()
            # A packed variable's range is shown unpacked (CF).
            sf, ao = arr.attrs.get("scale_factor"), arr.attrs.get("add_offset")
            if rng and (isinstance(sf, (int, float)) or isinstance(ao, (int, float))):
                sf = sf if isinstance(sf, (int, float)) else 1.0
                ao = ao if isinstance(ao, (int, float)) else 0.0
                a, b = rng[0] * sf + ao, rng[1] * sf + ao
                rng = (min(a, b), max(a, b))
            expect_range = [rust_exp(rng[0]), rust_exp(rng[1])] if rng else ["none"]
            if shown != expect_range:
                fail(f"{path}: tEXt range {shown}, expected {expect_range}")
            if im.text.get("nzfs:units", None) != arr.attrs.get("units", ""):
                fail(f"{path}: tEXt units {im.text.get('nzfs:units')!r}")
            checked += 1
        html = os.path.join(mp, "index.html")
        with open(html) as f:
            page = f.read()
        if len(page.encode()) != os.stat(html).st_size or "<script" in page or "http" in page.split("<body>")[1]:
            fail("index.html: wrong size, a script or a network link")
        for path, arr in root.members(max_depth=None):
            if isinstance(arr, zarr.Array) and os.path.exists(os.path.join(mp, path, "preview.png")):
                if f'src="{path}/preview.png"' not in page:
                    fail(f"index.html has no thumbnail of {path}")
    finally:
        subprocess.run([nzfs, "unmount", mp], check=False)
    return checked


def screenshot(nzfs, store, mp):
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        if os.environ.get("CI"):
            fail("chromium is missing (scripts/setup.sh --test installs it)")
        print("check_previews: no chromium; the screenshot is skipped")
        return
    out_dir = os.path.join(ROOT, "target", "previews")
    os.makedirs(out_dir, exist_ok=True)
    shot = os.path.join(out_dir, f"{os.path.basename(store).removesuffix('.zarr')}-index.png")
    subprocess.run([nzfs, "mount", store, mp], check=True, stdout=subprocess.DEVNULL)
    try:
        # Tall enough for every entry of the page (each at most ~280 px).
        with open(os.path.join(mp, "index.html")) as f:
            height = max(560, 200 + 280 * f.read().count("<li"))
        with tempfile.TemporaryDirectory() as profile:
            subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                            f"--user-data-dir={profile}", "--force-device-scale-factor=1",
                            f"--window-size=1000,{height}", "--virtual-time-budget=5000",
                            f"--screenshot={shot}", f"file://{mp}/index.html"],
                           check=True, capture_output=True, timeout=120)
        status = json.loads(subprocess.run([nzfs, "status", "--json", mp], capture_output=True, text=True,
                                           check=True).stdout)
        with open(os.path.join(mp, "index.html")) as f:
            html = f.read()
    finally:
        subprocess.run([nzfs, "unmount", mp], check=False)
    rendered = status["previews"]["rendered"]
    page = np.asarray(Image.open(shot).convert("RGB")).reshape(-1, 3)
    # Pixels in viridis colours (the page's own colours are greys and blue;
    # thumbnails are scaled with image-rendering: pixelated, which keeps
    # their colours).
    packed = (page[:, 0].astype(np.int64) << 16) | (page[:, 1].astype(np.int64) << 8) | page[:, 2]
    lut = (LUT[:, 0].astype(np.int64) << 16) | (LUT[:, 1].astype(np.int64) << 8) | LUT[:, 2]
    coloured = int(np.isin(packed, lut).sum())
    # The area the thumbnails take, as index.html sizes them.
    area = sum(int(w) * int(h) for w, h in re.findall(r'<img [^>]*width="(\d+)" height="(\d+)"', html))
    print(f"check_previews: screenshot {shot}: {coloured} viridis pixels over {area} of thumbnails, "
          f"{rendered} previews rendered")
    if rendered == 0 or coloured < 0.6 * area:
        fail(f"the screenshot does not show the thumbnails ({coloured} viridis pixels, {area} expected)")


def main():
    nzfs = os.path.abspath(sys.argv[1])
    stores = sys.argv[2:]
    with tempfile.TemporaryDirectory() as tmp:
        mp = os.path.join(tmp, "mnt")
        os.makedirs(mp)
        checked = sum(check_store(nzfs, s, mp) for s in stores)
        screenshot(nzfs, stores[0], mp)
    print(f"check_previews: {checked} previews equal to the images computed from zarr-python's values")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The OME-TIFF of every OME-Zarr multiscale image, through a real mount,
read by tifffile, ome-types and libtiff, never by nzfs's own code:

- every group with NGFF `multiscales` (images, label images, a plate's
  fields) shows `<name>.ome.tif`;
- tifffile reads it as OME, and its pyramid (`series[0].levels`) is the
  image's level 0 and each level with level 0's planes (the same leading
  dimensions), whose values equal zarr-python's;
- ome-types parses its OME-XML with validation against the OME schema,
  and the sizes, dimension order, physical sizes and channels it gives are
  what the NGFF metadata says;
- libtiff's `tiffinfo -D` reads every directory (each page and its
  SubIFDs) with nothing on stderr.

It also makes a `data.tif` past 4 GiB (a 5 x 32768 x 32768 uint8 array of
absent chunks, metadata only) and has tifffile read it as a BigTIFF of 5
pages, the last strip of the last page holding the fill value.

Usage: check_ome_tiff.py NZFS STORE... (each an OME-Zarr store; needs
zarr-python 3.4, tifffile, ome-types and xmlschema: the venv of
scripts/setup_2026.sh).
"""
import os
import subprocess
import sys
import tempfile

import numpy as np
import ome_types
import tifffile
import zarr

UNITS = {"micrometer": "µm", "nanometer": "nm", "millimeter": "mm"}
failures = []


def check(ok, what, detail=""):
    print(f"{'ok' if ok else 'FAIL'}: {what}" + ("" if ok else f"\n    {detail}"))
    if not ok:
        failures.append(what)


def images(group, path=""):
    """(path, group) of every group below `group` with multiscales."""
    attrs = dict(group.attrs)
    if "multiscales" in attrs or "multiscales" in attrs.get("ome", {}):
        yield path, group
    for name, child in sorted(group.groups()):
        yield from images(child, f"{path}/{name}" if path else name)


def expected(group):
    """The multiscale's axes, scale of level 0, levels the pyramid holds
    (level 0 and those with its leading dimensions and type), and the
    omero channels."""
    attrs = dict(group.attrs)
    ms = (attrs.get("multiscales") or attrs["ome"]["multiscales"])[0]
    omero = attrs.get("omero") or attrs.get("ome", {}).get("omero") or {}
    axes = ms["axes"]
    paths = [d["path"] for d in ms["datasets"]]
    first = group[paths[0]]
    kept = [p for p in paths if group[p].shape[:-2] == first.shape[:-2] and group[p].dtype == first.dtype]
    scale = next((t["scale"] for t in ms["datasets"][0].get("coordinateTransformations", []) if t["type"] == "scale"), None)
    return axes, scale, kept, omero.get("channels", [])


def letter(axis):
    return {"time": "T", "channel": "C", "space": "Z"}.get(axis.get("type"), axis["name"].upper())


def check_image(mp, store_name, path, group):
    name = path.rsplit("/", 1)[-1] if path else store_name
    tif = os.path.join(mp, path, f"{name}.ome.tif")
    where = f"{store_name}/{path or '.'}"
    if not os.path.exists(tif):
        check(False, f"{where}: {name}.ome.tif shown", f"listing: {os.listdir(os.path.join(mp, path))}")
        return
    axes, scale, kept, channels = expected(group)
    with tifffile.TiffFile(tif) as t:
        check(t.is_ome, f"{where}: tifffile reads {name}.ome.tif as OME")
        levels = t.series[0].levels
        check(len(levels) == len(kept), f"{where}: its pyramid holds the {len(kept)} levels with level 0's planes ({', '.join(kept)})",
              f"tifffile found {len(levels)}: {[lv.shape for lv in levels]}")
        for lv, p in zip(levels, kept):
            want = group[p][...]
            got = lv.asarray()
            check(got.size == want.size and np.array_equal(got.reshape(want.shape), want),
                  f"{where}: level {p} through tifffile equals zarr-python's values",
                  f"{got.shape} {got.dtype} vs {want.shape} {want.dtype}")
        xml = t.ome_metadata
    ome = ome_types.from_xml(xml, validate=True)
    pixels = ome.images[0].pixels
    shape = group[kept[0]].shape
    letters = [letter(a) for a in axes[:-2]] + ["Y", "X"]
    size = {k: 1 for k in "XYZCT"}
    size.update({ltr: n for ltr, n in zip(letters, shape)})
    got = {k: getattr(pixels, f"size_{k.lower()}") for k in "XYZCT"}
    check(got == size, f"{where}: the schema-valid OME-XML gives the sizes {size}", f"{got}")
    order = "XY" + "".join(reversed(letters[:-2])) + "".join(k for k in "ZCT" if k not in letters)
    check(pixels.dimension_order.value == order, f"{where}: DimensionOrder {order} (pages in C order)",
          pixels.dimension_order.value)
    for i, (ltr, axis) in enumerate(zip(letters, axes)):
        if ltr == "T":
            seconds = axis.get("unit") == "second" and scale
            check(pixels.time_increment == (scale[i] if seconds else None)
                  and (not seconds or pixels.time_increment_unit.value == "s"),
                  f"{where}: TimeIncrement {scale[i] if seconds else None}", f"{pixels.time_increment}")
        if ltr not in "XYZ":
            continue
        unit = UNITS.get(axis.get("unit")) if isinstance(axis, dict) else None
        value = getattr(pixels, f"physical_size_{ltr.lower()}")
        if unit and scale:
            check(value == scale[i] and getattr(pixels, f"physical_size_{ltr.lower()}_unit").value == unit,
                  f"{where}: PhysicalSize{ltr} = {scale[i]} {unit}", f"{value}")
        else:
            check(value is None, f"{where}: no PhysicalSize{ltr} without a unit", f"{value}")
    if channels and len(channels) == size["C"]:
        names = [c.name for c in pixels.channels]
        colours = ["%02X%02X%02X" % c.color.as_rgb_tuple()[:3] if c.color else None for c in pixels.channels]
        check(names == [c.get("label") for c in channels], f"{where}: channel names {names}")
        want = [c.get("color", "").upper() for c in channels]
        check([(c or "")[:6] for c in colours] == [w[:6] for w in want], f"{where}: channel colours {want}",
              f"{colours}")
    r = subprocess.run(["tiffinfo", "-D", tif], capture_output=True, text=True)
    # libtiff lists each page's SubIFDs as directories of their own.
    directories = int(np.prod(shape[:-2])) * len(kept)
    found = r.stdout.count("TIFF Directory")
    check(r.returncode == 0 and not r.stderr.strip() and found == directories,
          f"{where}: libtiff reads its {directories} directories (pages and SubIFDs) with no warning",
          f"{found}: {r.stderr.strip()[:300]}")


def bigtiff_last_strip(nzfs):
    with tempfile.TemporaryDirectory() as tmp:
        store = os.path.join(tmp, "big.zarr")
        os.makedirs(os.path.join(store, "img"))
        with open(os.path.join(store, "zarr.json"), "w") as f:
            f.write('{"zarr_format": 3, "node_type": "group"}')
        with open(os.path.join(store, "img", "zarr.json"), "w") as f:
            f.write('{"zarr_format": 3, "node_type": "array", "shape": [5, 32768, 32768], "data_type": "uint8", '
                    '"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1, 4096, 4096]}}, '
                    '"chunk_key_encoding": {"name": "default"}, "fill_value": 7, "codecs": [{"name": "bytes"}]}')
        mp = tempfile.mkdtemp(prefix="nzfs-big.")
        subprocess.run([nzfs, "mount", store, mp, "--no-prefetch"], check=True, capture_output=True)
        try:
            with tifffile.TiffFile(os.path.join(mp, "img", "data.tif")) as t:
                page = t.pages[-1]
                check(t.is_bigtiff and len(t.pages) == 5 and page.shape == (32768, 32768),
                      "a 5 GiB data.tif is a BigTIFF of 5 pages of 32768 x 32768 for tifffile",
                      f"{t.is_bigtiff} {len(t.pages)} {page.shape}")
                offset, count = page.dataoffsets[-1], page.databytecounts[-1]
                t.filehandle.seek(offset)
                strip = np.frombuffer(t.filehandle.read(count), dtype=np.uint8)
                check(offset > 4 << 30 and strip.size == count and (strip == 7).all(),
                      f"tifffile reads its last strip, {count} bytes at {offset}, as the fill value",
                      f"{strip.size} bytes, values {np.unique(strip)[:5]}")
        finally:
            subprocess.run([nzfs, "unmount", mp])
            os.rmdir(mp)


def main():
    nzfs, stores = sys.argv[1], sys.argv[2:]
    bigtiff_last_strip(nzfs)
    for store in stores:
        root = zarr.open_group(store, mode="r")
        store_name = os.path.basename(store.rstrip("/")).removesuffix(".zarr")
        mp = tempfile.mkdtemp(prefix="nzfs-ome.")
        subprocess.run([nzfs, "mount", store, mp], check=True, capture_output=True)
        try:
            for path, group in images(root):
                check_image(mp, store_name, path, group)
        finally:
            subprocess.run([nzfs, "unmount", mp])
            os.rmdir(mp)
    print(f"check_ome_tiff: {len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Stores other writers make that bend the spec, and that zarr-python reads
anyway (issue: faithful and fresh): tests/data/tolerant/.

- gdal36.zarr: GDAL 3.6 (Debian 12's gdal-bin) `gdal_translate -of Zarr
  -co COMPRESS=BLOSC -co BLOSC_SHUFFLE=BIT` of a 16-bit PGM: Zarr v2 whose
  blosc `shuffle` is the string "BIT" (numcodecs writes 0, 1 or 2).
- zarrita.zarr: zarrita.js 0.5.4 (npm) writing a Zarr v3 bool array
  without a fill value: `"fill_value": null`, which zarr-python reads as
  False.

The values zarr-python 3.1 reads back are written little-endian under
tests/data/tolerant/expected/<store>/<array>.bin, for tests/tolerant.rs.
Not run by CI's fixture check (it needs npm and GDAL 3.6); rerun it by hand:
    .venv/bin/python scripts/fixtures_tolerant.py
"""
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import zarr

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUT = os.path.join(ROOT, "tests", "data", "tolerant")

ZARRITA = """
import * as zarr from "zarrita";
import { FileSystemStore } from "@zarrita/storage";
const store = new FileSystemStore(process.argv[2]);
const root = await zarr.create(store, { attributes: {} });
const arr = await zarr.create(root.resolve("flags"), {
  shape: [6], chunk_shape: [4], data_type: "bool",
  codecs: [{ name: "bytes", configuration: { endian: "little" } }],
});
const data = new zarr.BoolArray(new Uint8Array([1, 0, 1]).buffer);
await zarr.set(arr, [zarr.slice(0, 3)], { data, shape: [3], stride: [1] });
"""


def gdal(tmp):
    version = subprocess.run(["gdalinfo", "--version"], capture_output=True, text=True, check=True).stdout
    if not version.startswith("GDAL 3.6."):
        sys.exit(f"needs GDAL 3.6 (Debian 12's gdal-bin), not {version.strip()}")
    rows, cols = 6, 5
    values = (np.arange(rows * cols, dtype=">u2") * 2113).reshape(rows, cols)
    pgm = os.path.join(tmp, "src.pgm")
    with open(pgm, "wb") as f:
        f.write(f"P5\n{cols} {rows}\n65535\n".encode() + values.tobytes())
    dst = os.path.join(OUT, "gdal36.zarr")
    subprocess.run(["gdal_translate", "-q", "-of", "Zarr", "-co", "FORMAT=ZARR_V2", "-co", "COMPRESS=BLOSC",
                    "-co", "BLOSC_SHUFFLE=BIT", pgm, dst], check=True)
    # GDAL's side files (.aux.xml) are not part of the store.
    for dirpath, _, files in os.walk(dst):
        for name in files:
            if name.endswith(".aux.xml"):
                os.remove(os.path.join(dirpath, name))
    return dst


def zarrita(tmp):
    subprocess.run(["npm", "init", "-y"], cwd=tmp, check=True, capture_output=True)
    subprocess.run(["npm", "install", "--no-audit", "--no-fund", "zarrita@0.5.4", "@zarrita/storage@0.1.1"],
                   cwd=tmp, check=True, capture_output=True)
    script = os.path.join(tmp, "write.mjs")
    with open(script, "w") as f:
        f.write(ZARRITA)
    dst = os.path.join(OUT, "zarrita.zarr")
    subprocess.run(["node", script, dst], cwd=tmp, check=True)
    return dst


def expect(store, path):
    a = zarr.open_array(os.path.join(store, path), mode="r")
    back = np.asarray(a[...])
    rel = os.path.join(OUT, "expected", os.path.basename(store), path + ".bin")
    os.makedirs(os.path.dirname(rel), exist_ok=True)
    with open(rel, "wb") as f:
        f.write(back.astype(back.dtype.newbyteorder("<")).tobytes())


def main():
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    with tempfile.TemporaryDirectory() as tmp:
        store = gdal(tmp)
        expect(store, "gdal36")
    with tempfile.TemporaryDirectory() as tmp:
        store = zarrita(tmp)
        expect(store, "flags")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()

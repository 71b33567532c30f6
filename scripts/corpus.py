#!/usr/bin/env python3
"""Corpus check: every store under CORPUS_DIR through a real mount.

Mount every Zarr store found under CORPUS_DIR with nzfs and compare every
array that zarr-python can read with what the mount shows: data.bin (or
data.txt for strings) against zarr-python's values, and data.tif, where
a numeric array of two or more dimensions has one, read by tifffile
against the same values (and its absence where it has none) and by
libtiff's `tiffinfo -D`, which must read every page's strips with no
error or warning. Before any
value is
read, every group's virtual .nc is opened header-only with netCDF-C
(`ncdump -h`), and `nzfs status` must then count no decode; every
header.cdl must pass `ncgen`. Prints one line per array that zarr-python
cannot read (skipped, with the reason), per array nzfs refuses or shows
differently, per header ncgen rejects, then the counts; exits non-zero
on any difference.

CI runs it on the fixtures (`.ci/run`: tests/data with zarr-python 3.4 from
.venv312).

Usage:
    python scripts/corpus.py CORPUS_DIR [path/to/nzfs]

The corpus used for the #14 report is zarrs' test data (zarrs/zarrs,
zarrs/tests/data), e.g.:
    git -C <zarrs checkout> archive HEAD zarrs/tests/data | tar -x -C /tmp/corpus
    python scripts/corpus.py /tmp/corpus/zarrs/tests/data
"""

import json
import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import tifffile
import zarr

sys.path.insert(0, os.path.dirname(__file__))
from text_form import text_of  # noqa: E402

warnings.filterwarnings("ignore")
# Rectilinear chunk grids are experimental in zarr-python 3.4: read them.
try:
    zarr.config.set({"array.rectilinear_chunks": True})
except Exception:  # noqa: BLE001 (an older zarr-python without them)
    pass
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))


def stores(top):
    """Top-most directories named *.zarr (a store's nested .zarr names are
    part of it)."""
    out = []
    for d, subdirs, _ in os.walk(top):
        if d.endswith(".zarr"):
            out.append(d)
            subdirs[:] = []
    return sorted(out)


def array_paths(store):
    """Every directory of `store` that holds an array's metadata, as a
    hierarchy path ("" for a root array)."""
    out = []
    for d, _, files in os.walk(store):
        rel = os.path.relpath(d, store).replace(os.sep, "/")
        rel = "" if rel == "." else rel
        if ".zarray" in files:
            out.append(rel)
        elif "zarr.json" in files:
            try:
                with open(os.path.join(d, "zarr.json")) as f:
                    if json.load(f).get("node_type") == "array":
                        out.append(rel)
            except (ValueError, OSError):
                out.append(rel)  # zarr-python's own error says why
    return sorted(out)


def shown_dir(mp, path):
    """The directory nzfs shows node `path` as: a node named like a file of
    its parent's directory (header.cdl, data.bin, <parent>.nc) gets `.node`
    (docs/usage.md, "The mounted layout")."""
    d = mp
    for part in [p for p in path.split("/") if p]:
        nxt = os.path.join(d, part)
        while os.path.exists(nxt) and not os.path.isdir(nxt):
            nxt += ".node"
        d = nxt
    return d


def consolidated_paths(store):
    """The array paths a store's consolidated metadata lists (the hierarchy
    nzfs and zarr-python follow), or None."""
    try:
        with open(os.path.join(store, "zarr.json")) as f:
            meta = (json.load(f).get("consolidated_metadata") or {}).get("metadata")
        if meta is not None:
            return sorted(p for p, m in meta.items() if m.get("node_type") == "array")
    except (OSError, ValueError, AttributeError):
        return None
    try:
        with open(os.path.join(store, ".zmetadata")) as f:
            meta = json.load(f).get("metadata", {})
        return sorted(p[: -len("/.zarray")] for p in meta if p.endswith("/.zarray")) + (
            [""] if ".zarray" in meta else [])
    except (OSError, ValueError, AttributeError):
        return None


def compare(mp, path, a):
    want = np.asarray(a[...])
    d = shown_dir(mp, path)
    if want.dtype == object or want.dtype.kind == "T":
        got = open(os.path.join(d, "data.txt"), "rb").read()
        return got == text_of(want.astype(object)), "data.txt differs"
    raw = open(os.path.join(d, "data.bin"), "rb").read()
    kind = want.dtype.kind
    dt = want.dtype.newbyteorder("=")
    if dt.kind in "Mm":
        dt = np.dtype("i8")
        want = want.astype(want.dtype.newbyteorder("=")).view("i8")
    got = np.frombuffer(raw, dt).reshape(want.shape)
    if dt.kind == "V":
        # Records: each field in host order, as data.bin holds them.
        return got.tobytes() == want.astype(dt).tobytes(), "data.bin differs"
    if not np.array_equal(got, want.astype(dt), equal_nan=dt.kind in "fc"):
        return False, "data.bin differs"
    return compare_tiff(d, want, kind)


def compare_tiff(d, want, kind):
    """data.tif through tifffile: the array's values, one page per plane of
    the last two dimensions; present exactly for numeric arrays (numpy
    kind `kind`: not times, complex, text or records) of two or more
    dimensions, none empty."""
    path = os.path.join(d, "data.tif")
    expected = want.ndim >= 2 and kind in "biuf" and want.size > 0
    if os.path.exists(path) != expected:
        return False, f"data.tif {'missing' if expected else 'shown'} for a {want.dtype} array of shape {want.shape}"
    if not expected:
        return True, ""
    with tifffile.TiffFile(path) as t:
        if any(p.is_tiled for p in t.pages):
            return False, "data.tif is tiled"
        pixels = np.stack([p.asarray() for p in t.pages]).reshape(want.shape)
    wanted = want.astype(np.uint8) if want.dtype.kind == "b" else want
    if pixels.dtype != wanted.dtype.newbyteorder("="):
        return False, f"data.tif holds {pixels.dtype}, the array {want.dtype}"
    if not np.array_equal(pixels, wanted, equal_nan=want.dtype.kind == "f"):
        return False, "data.tif differs"
    return libtiff_reads(path, int(np.prod(want.shape[:-2])))


def libtiff_reads(path, pages):
    """libtiff (Debian's tiffinfo, the reference reader) reads every
    directory of data.tif and its strips' data, with nothing on stderr."""
    r = subprocess.run(["tiffinfo", "-D", path], capture_output=True, text=True)
    found = r.stdout.count("TIFF Directory at offset")
    if r.returncode != 0 or r.stderr.strip() or found != pages:
        return False, f"tiffinfo -D: exit {r.returncode}, {found} of {pages} pages: {r.stderr.strip()[:300]}"
    return True, ""


def headers_only(nzfs, mp):
    """Open every group's .nc header-only, then ncgen every header.cdl.
    Returns (problems, number of .nc files, number of headers)."""
    problems, ncs, cdls = [], 0, 0
    for d, _, files in os.walk(mp):
        for f in files:
            if f.endswith(".nc") and os.path.isfile(os.path.join(d, f)):
                ncs += 1
                r = subprocess.run(["ncdump", "-h", os.path.join(d, f)], capture_output=True, text=True)
                if r.returncode != 0:
                    problems.append(f"{os.path.relpath(os.path.join(d, f), mp)}: ncdump -h failed: {r.stderr.strip()[:200]}")
    status = json.loads(subprocess.run([nzfs, "status", "--json", mp], capture_output=True, text=True, check=True).stdout)
    if status["chunks_decoded"] != 0:
        problems.append(f"ncdump -h of the .nc files decoded {status['chunks_decoded']} chunks (expected none)")
    with tempfile.TemporaryDirectory() as tmp:
        for d, _, files in os.walk(mp):
            if "header.cdl" in files:
                cdls += 1
                r = subprocess.run(["ncgen", "-k", "nc4", "-o", os.path.join(tmp, "h.nc"), os.path.join(d, "header.cdl")],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    problems.append(f"{os.path.relpath(d, mp) or '.'}/header.cdl: ncgen: {r.stderr.strip()[:200]}")
    return problems, ncs, cdls


def main():
    top = sys.argv[1]
    nzfs = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "target", "debug", "nzfs")
    readable = same = tiffs = 0
    skipped = 0
    problems = []
    nc_total = cdl_total = 0
    for store in stores(top):
        rel = os.path.relpath(store, top)
        ok = []
        paths = consolidated_paths(store)
        for path in array_paths(store) if paths is None else paths:
            try:
                a = zarr.open_array(store, path=path, mode="r")
                a[...]
                ok.append((path, a))
            except Exception as e:  # noqa: BLE001
                why = " ".join(str(e).split())[:120]
                print(f"skip  {rel}/{path}: zarr-python cannot read it ({type(e).__name__}: {why})")
                skipped += 1
        if not ok:
            continue
        readable += len(ok)
        mp = tempfile.mkdtemp()
        r = subprocess.run([nzfs, "mount", store, mp], capture_output=True, text=True)
        if r.returncode != 0:
            problems += [f"{rel}/{p}: mount failed: {r.stderr.strip()}" for p, _ in ok]
            os.rmdir(mp)
            continue
        try:
            found, ncs, cdls = headers_only(nzfs, mp)
            problems += [f"{rel}: {p}" for p in found]
            nc_total += ncs
            cdl_total += cdls
            for path, a in ok:
                try:
                    good, why = compare(mp, path, a)
                except Exception as e:  # noqa: BLE001
                    good, why = False, f"{type(e).__name__}: {e}"
                if good:
                    same += 1
                    tiffs += os.path.exists(os.path.join(shown_dir(mp, path), "data.tif"))
                else:
                    problems.append(f"{rel}/{path} ({a.dtype}): {why}")
        finally:
            u = subprocess.run([nzfs, "unmount", mp], capture_output=True, text=True)
            if u.returncode != 0:
                print(f"note  {rel}: unmount: {u.stderr.strip()}; detaching lazily")
                subprocess.run([nzfs, "unmount", "--lazy", mp], capture_output=True)
            os.rmdir(mp)
    for p in problems:
        print(f"DIFF  {p}")
    print(f"corpus: {same} of {readable} arrays that zarr-python reads are equal through nzfs "
          f"({skipped} arrays or stores zarr-python cannot read skipped); "
          f"{tiffs} data.tif files equal through tifffile and read by libtiff, "
          f"{nc_total} .nc files opened header-only with no decode, {cdl_total} header.cdl files through ncgen, "
          f"{len(problems)} problems")
    sys.exit(0 if same == readable and not problems else 1)


if __name__ == "__main__":
    main()

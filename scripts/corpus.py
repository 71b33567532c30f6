#!/usr/bin/env python3
"""Real-world corpus check (not in CI: it needs another project's stores).

Mount every Zarr store found under CORPUS_DIR with nzfs and compare every
array that zarr-python can read with what the mount shows: data.bin (or
data.txt for strings) against zarr-python's values. Prints one line per
array that differs or that nzfs cannot show, then the counts.

Usage:
    python scripts/corpus.py CORPUS_DIR [path/to/nzfs]

The corpus used for the #14 report is zarrs' test data (zarrs/zarrs,
zarrs/tests/data), e.g.:
    git -C <zarrs checkout> archive HEAD zarrs/tests/data | tar -x -C /tmp/corpus
    python scripts/corpus.py /tmp/corpus/zarrs/tests/data
"""

import os
import subprocess
import sys
import tempfile
import warnings

import numpy as np
import zarr

sys.path.insert(0, os.path.dirname(__file__))
from fixtures_strings import text_of  # noqa: E402

warnings.filterwarnings("ignore")
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


def all_arrays(group, prefix=""):
    out = []
    for name, member in group.members():
        path = f"{prefix}{name}"
        if isinstance(member, zarr.Array):
            out.append((path, member))
        else:
            out.extend(all_arrays(member, path + "/"))
    return out


def compare(mp, path, a):
    want = np.asarray(a[...])
    d = os.path.join(mp, path)
    if want.dtype == object or want.dtype.kind == "T":
        got = open(os.path.join(d, "data.txt"), "rb").read()
        return got == text_of(want.astype(object)), "data.txt differs"
    raw = open(os.path.join(d, "data.bin"), "rb").read()
    dt = want.dtype.newbyteorder("=")
    if dt.kind in "Mm":
        dt = np.dtype("i8")
        want = want.astype(want.dtype.newbyteorder("=")).view("i8")
    got = np.frombuffer(raw, dt).reshape(want.shape)
    if dt.kind == "V":
        return got.tobytes() == want.tobytes(), "data.bin differs"
    return np.array_equal(got, want.astype(dt), equal_nan=dt.kind in "fc"), "data.bin differs"


def main():
    top = sys.argv[1]
    nzfs = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "target", "debug", "nzfs")
    readable = same = 0
    problems = []
    for store in stores(top):
        rel = os.path.relpath(store, top)
        try:
            node = zarr.open(store, mode="r")
        except Exception as e:  # noqa: BLE001
            print(f"skip  {rel}: zarr-python cannot open it ({type(e).__name__})")
            continue
        found = [("", node)] if isinstance(node, zarr.Array) else all_arrays(node)
        ok = []
        for path, a in found:
            try:
                a[...]
                ok.append((path, a))
            except Exception as e:  # noqa: BLE001
                print(f"skip  {rel}/{path}: zarr-python cannot read it ({type(e).__name__})")
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
            for path, a in ok:
                try:
                    good, why = compare(mp, path, a)
                except Exception as e:  # noqa: BLE001
                    good, why = False, f"{type(e).__name__}: {e}"
                if good:
                    same += 1
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
    print(f"corpus: {same} of {readable} arrays that zarr-python reads are equal through nzfs")
    sys.exit(0 if same == readable else 1)


if __name__ == "__main__":
    main()

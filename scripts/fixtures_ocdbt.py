"""An OCDBT key-value store as tensorstore writes one (its `ocdbt` driver
over a file kvstore, the layout Orbax saves checkpoints in by default): a
zarr3 array `w` of 2 x 3 float32 inside manifest.ocdbt and d/, into
tests/data/ocdbt/, which src/store/ocdbt's tests read (its chunk inline
in the leaf, its zarr.json out of line) and tests/lifecycle.rs damages.
Orbax's own checkpoints come from scripts/fixtures_orbax.py.
Called by make_fixtures.py (`make_all(fx)`).
"""

import os
import shutil

import numpy as np


def make_all(fx):
    import tensorstore as ts

    root = os.path.join(fx.OUT, "ocdbt")
    shutil.rmtree(root, ignore_errors=True)
    kv = {"driver": "ocdbt", "base": {"driver": "file", "path": root}}
    t = ts.open({"driver": "zarr3", "kvstore": {**kv, "path": "w/"}}, dtype=ts.float32, shape=[2, 3],
                create=True).result()
    t[...] = np.arange(6, dtype=np.float32).reshape(2, 3)

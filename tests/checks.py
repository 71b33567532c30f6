"""What the Python test runners (tests/legacy/run.py, tests/package/)
share: one printed line per check, a stop at the first failure with the
count so far ('NAME: N passed, 1 failed', exit 1), and the comparison
of a mount's data.bin with zarr-python."""

import os
import subprocess
import sys


class Checks:
    def __init__(self, name):
        self.name = name
        self.passed = 0

    def check(self, cond, what, detail=""):
        if not cond:
            print(f"FAILED: {what} {detail}")
            print(f"{self.name}: {self.passed} passed, 1 failed")
            sys.exit(1)
        print(f"ok: {what}")
        self.passed += 1

    def run(self, *cmd, ok=True, **kw):
        """Run `cmd`, capturing its output; with `ok`, a non-zero exit is a
        failure (printed with the output)."""
        p = subprocess.run(cmd, capture_output=True, text=True, **kw)
        if ok and p.returncode != 0:
            print(f"FAILED: {' '.join(cmd)} exited {p.returncode}\n{p.stdout}\n{p.stderr}")
            sys.exit(1)
        return p

    def done(self):
        print(f"{self.name}: {self.passed} passed, 0 failed")


def data_bin_equals_zarr(mp, store, path):
    """Whether `path`/data.bin in the mount at `mp` holds what zarr-python
    reads from array `path` of `store` (data.bin is in the host's byte
    order; these tests run on little-endian hosts)."""
    import numpy as np
    import zarr

    want = zarr.open_array(store, path=path, mode="r")[...]
    got = np.fromfile(os.path.join(mp, path, "data.bin"), dtype=want.dtype.newbyteorder("<"))
    return got.size == want.size and np.array_equal(got.reshape(want.shape), want, equal_nan=True)

"""Orbax checkpoints as Orbax 0.12.8 saves them by default (OCDBT, Zarr v2
arrays inside, JAX on CPU), into tests/data/orbax/:

- checkpoint/: PyTreeCheckpointer().save of a small tree: a float32
  kernel of 16 x 32 random values, out of line in a data file (Orbax
  keeps values of at most 1 KiB in the B+tree's leaves), a bias, a
  bfloat16 embedding and an int32 scalar, inline;
- steps/: a CheckpointManager's three steps (0, 1, 2) of the same tree,
  each value plus its step, under STEP/default/.

expected.json lists every array (its path in the mount, the type it is
shown as, its shape) with expected/<store>/<path>.bin: what tensorstore
reads of it through its ocdbt driver, little-endian, bfloat16 widened to
float32 as nzfs shows it; each is checked against what Orbax restores.
Orbax names its data files at random, so the stores differ at each run
while their values do not; CI does not regenerate them.

Usage: python scripts/fixtures_orbax.py [OUT]   (a venv of
scripts/requirements-orbax.txt; OUT defaults to tests/data/orbax)
"""

import json
import os
import shutil
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tree(step):
    import jax.numpy as jnp

    return {
        "dense": {
            # Random values (fixed): a chunk zstd cannot make small, so it
            # is stored out of line, in a data file.
            "kernel": np.random.default_rng(0).normal(size=(16, 32)).astype(np.float32) + step,
            "bias": np.full(4, 0.5 * step, np.float32),
        },
        "emb": jnp.asarray(np.arange(6, dtype=np.float32).reshape(2, 3) / 4 + step, dtype=jnp.bfloat16),
        "step": np.int32(step),
    }


def leaves(t, prefix=""):
    """(Orbax's name of a leaf, its value): names joined by '.'."""
    for k, v in t.items():
        name = f"{prefix}{k}"
        if isinstance(v, dict):
            yield from leaves(v, name + ".")
        else:
            yield name, np.asarray(v)


def read_back(db, name):
    import tensorstore as ts

    spec = {"driver": "zarr", "kvstore": {"driver": "ocdbt", "base": f"file://{db}", "path": f"{name}/"}}
    return ts.open(spec, open=True).result().read().result()


def main():
    import orbax.checkpoint as ocp

    out = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "data", "orbax"))
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    ocp.PyTreeCheckpointer().save(os.path.join(out, "checkpoint"), tree(0))
    manager = ocp.CheckpointManager(os.path.join(out, "steps"), options=ocp.CheckpointManagerOptions(max_to_keep=5))
    for step in range(3):
        manager.save(step, args=ocp.args.StandardSave(tree(step)))
    manager.wait_until_finished()

    expected = []
    dbs = [("checkpoint", "", 0)] + [("steps", f"{s}/default/", s) for s in range(3)]
    for store, at, step in dbs:
        db = os.path.join(out, store, at)
        restored = ocp.PyTreeCheckpointer().restore(db)
        for name, want in leaves(tree(step)):
            got = read_back(db, name)
            assert np.array_equal(np.asarray(got), want), (store, at, name)
            assert np.array_equal(np.asarray(dict(leaves(restored))[name]), want), (store, at, name)
            shown = np.float32 if got.dtype.name == "bfloat16" else got.dtype
            values = np.asarray(got).astype(np.dtype(shown).newbyteorder("<"))
            rel = os.path.join("expected", store, at + name + ".bin")
            os.makedirs(os.path.dirname(os.path.join(out, rel)), exist_ok=True)
            with open(os.path.join(out, rel), "wb") as f:
                f.write(values.tobytes())
            expected.append({"store": store, "path": at + name, "stored": got.dtype.name,
                             "shape": list(got.shape), "expected": rel})
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f, indent=1)
        f.write("\n")
    print(f"{len(expected)} arrays in {out}")


if __name__ == "__main__":
    main()

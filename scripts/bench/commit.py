"""nzfs commit benchmark: what one change costs in a small and in a wide
repository, in the same run.

  edit    a one-value write into one array's data.bin through a writable
          mount of an Icechunk repository (open, pwrite 4 bytes, close:
          the close commits), beside zarr-python writing the same value
          (`array[1] = v; session.commit()`) into the same repository,
          in a repository of 20 arrays and in one of 2,000 (20 groups of
          100 float32 arrays of 1,024 values, written by zarr-python);
  append  an array of a plain Zarr store grown by one chunk (the chunk,
          then its zarr.json), and the seconds until a live mount of it
          (--metadata-ttl 1) shows the new size, in a store of 20 and of
          2,000 arrays.

Each figure is the median of --repeat changes. The rows print each
figure beside zarr-python's where it has one (zarr-python / nzfs: above 1,
nzfs is faster), and nzfs's 2,000-array figure over its 20-array one
(1.00: the wide repository costs nothing more), and what the wide
repository adds to each client's edit in seconds (both pay icechunk's
own commit, which writes a snapshot listing every node). The decodes the edits
cost are printed (`nzfs status`): each decodes only the chunk it changes.

Usage:  python3 scripts/bench commit [--repeat 5] [--workdir /tmp/nzfs-bench-commit]
(scripts/bench.sh commit builds the release binary and sets up the venv.)
"""

import argparse
import os
import shutil
import statistics
import struct
import time

import numpy as np

from common import Mounted, log

SIZES = [20, 2000]
PER_GROUP = 100


def layout(arrays):
    """(group, array) names of a store of `arrays` arrays."""
    per = min(arrays, PER_GROUP)
    return [(f"g{g}", f"a{a}") for g in range(arrays // per) for a in range(per)]


def fill(root, arrays):
    for i, (g, a) in enumerate(layout(arrays)):
        group = root.require_group(g)
        arr = group.create_array(a, shape=(1024,), chunks=(1024,), dtype="f4", dimension_names=["x"])
        arr[:] = np.arange(1024, dtype="f4") + i


def make_repo(path, arrays):
    import icechunk
    import zarr

    shutil.rmtree(path, ignore_errors=True)
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(path))
    session = repo.writable_session("main")
    fill(zarr.open_group(session.store, mode="w"), arrays)
    session.commit(f"{arrays} arrays")
    return repo


def make_store(path, arrays):
    import zarr

    shutil.rmtree(path, ignore_errors=True)
    fill(zarr.open_group(path, mode="w", zarr_format=3), arrays)


def nzfs_edits(work, repo_dir, binary, repeat):
    """Seconds of each one-value edit's open-write-close through a
    writable mount, and the decodes they cost."""
    mp = os.path.join(work, "mnt")
    spool = os.path.join(work, "spool")
    shutil.rmtree(spool, ignore_errors=True)
    times = []
    with Mounted(repo_dir, mp, nzfs=binary, writable=True, spool_dir=spool, cache_size="256MiB") as m:
        target = os.path.join(mp, "g0", "a7", "data.bin")
        for r in range(repeat):
            t0 = time.perf_counter()
            fd = os.open(target, os.O_WRONLY)
            os.pwrite(fd, struct.pack("<f", -1.0 - r), 4)
            os.close(fd)
            times.append(time.perf_counter() - t0)
        decodes = m.status()["cache"]["decodes"]
    return times, decodes


def zarr_edits(repo_dir, repeat):
    import icechunk
    import zarr

    repo = icechunk.Repository.open(icechunk.local_filesystem_storage(repo_dir))
    times = []
    for r in range(repeat):
        t0 = time.perf_counter()
        session = repo.writable_session("main")
        arr = zarr.open_array(session.store, path="g0/a7", mode="r+")
        arr[1] = -100.0 - r
        session.commit(f"edit {r}")
        times.append(time.perf_counter() - t0)
    return times


def appends(work, store, binary, repeat):
    """Seconds from each append's zarr.json to the live mount showing it."""
    import zarr

    mp = os.path.join(work, "mnt-append")
    times = []
    with Mounted(store, mp, nzfs=binary, metadata_ttl="1") as m:
        shown = os.path.join(mp, "g0", "a7", "data.bin")
        arr = zarr.open_array(store, path="g0/a7", mode="r+")
        for r in range(repeat):
            n = arr.shape[0]
            arr.resize((n + 1024,))
            t0 = time.perf_counter()
            arr[n:] = np.full(1024, r, dtype="f4")
            while os.path.getsize(shown) != (n + 1024) * 4:
                time.sleep(0.01)
            times.append(time.perf_counter() - t0)
        m.status()
    return times


def main(argv):
    p = argparse.ArgumentParser(prog="bench commit", description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--workdir", default="/tmp/nzfs-bench-commit")
    p.add_argument("--nzfs", default=os.path.join(os.path.dirname(__file__), "..", "..", "target", "release", "nzfs"))
    a = p.parse_args(argv)
    os.makedirs(a.workdir, exist_ok=True)
    rows = {}
    for n in SIZES:
        repo_dir = os.path.join(a.workdir, f"repo-{n}")
        log(f"bench commit: a repository of {n} arrays")
        make_repo(repo_dir, n)
        ours, decodes = nzfs_edits(a.workdir, repo_dir, a.nzfs, a.repeat)
        theirs = zarr_edits(repo_dir, a.repeat)
        store = os.path.join(a.workdir, f"store-{n}.zarr")
        make_store(store, n)
        grown = appends(a.workdir, store, a.nzfs, a.repeat)
        rows[n] = (statistics.median(ours), statistics.median(theirs), statistics.median(grown), decodes)
    print(f"{'change':<46} {'arrays':>6} {'nzfs s':>8} {'zarr-python s':>14}  zarr-python / nzfs")
    for n, (ours, theirs, _, decodes) in rows.items():
        print(f"{'one-value edit, committed':<46} {n:>6} {ours:8.3f} {theirs:14.3f}  {theirs / ours:.2f}"
              f"   ({decodes} decodes for {a.repeat} edits)")
    for n, (_, _, grown, _) in rows.items():
        print(f"{'append seen by a live mount (ttl 1 s)':<46} {n:>6} {grown:8.3f} {'-':>14}")
    small, wide = rows[SIZES[0]], rows[SIZES[-1]]
    print(f"nzfs {SIZES[-1]} arrays / {SIZES[0]}: edit {wide[0] / small[0]:.2f}, append {wide[2] / small[2]:.2f} "
          f"(zarr-python's edit: {wide[1] / small[1]:.2f}); 1.00 is no slower in the wide repository")
    # Both clients' edits pay icechunk's own commit, whose snapshot lists
    # every node: what the wide repository adds to each, side by side.
    print(f"the wide repository adds: nzfs's edit {wide[0] - small[0]:+.3f} s, zarr-python's {wide[1] - small[1]:+.3f} s "
          f"(icechunk's commit, which both pay, writes a snapshot of every node)")

"""Rows of large hierarchies, in linear time: the mount of 1,000,000
consolidated nodes beside zarr-python opening the same group, and `ls -la`
of a group of 100,000 arrays beside `ls -la` of an array's 100,000 chunk
files.

Usage: python3 scripts/bench hierarchy [--repeat 3] [--workdir DIR] [--nzfs BIN]
"""

import argparse
import os
import statistics
import subprocess
import time

import zarr

from common import MIB, RELEASE, Mounted, log, median_time, print_table
from datasets import build_groups, build_wide


def rows(args, work, mp):
    """The two rows (figure, nzfs, peer, ratio, target, met, notes)."""
    million_nodes, wide = os.path.join(work, "groups-1m.zarr"), os.path.join(work, "wide-100k.zarr")
    if not os.path.exists(os.path.join(million_nodes, "zarr.json")):
        log("building 1,000,000 consolidated nodes ...")
        build_groups(million_nodes, 1_000_000)
    if not os.path.exists(os.path.join(wide, "zarr.json")):
        log("building a group of 100,000 arrays ...")
        build_wide(wide, 100_000)
    log("mount of 1,000,000 consolidated nodes; zarr-python opening them ...")
    mounts, peaks, resident = [], [], []
    for _ in range(args.repeat):
        with Mounted(million_nodes, mp, args.nzfs) as m:
            mounts.append(m.seconds)
            peaks.append(m.memory("VmHWM"))
            resident.append(m.memory("VmRSS"))

    def zarr_open():
        g = zarr.open_group(million_nodes, mode="r", use_consolidated=True)
        return sum(1 for _ in g.members(max_depth=None))
    t_zarr_open = median_time(zarr_open, args.repeat)
    log("ls -la of a group of 100,000 arrays and of an array of 100,000 chunk files ...")
    ls = {"wide": [], "chunks": []}
    for _ in range(args.repeat):
        for d in ls:
            with Mounted(wide, mp, args.nzfs):
                t0 = time.perf_counter()
                out = subprocess.run(["ls", "-la", os.path.join(mp, d)], check=True, capture_output=True).stdout
                ls[d].append((time.perf_counter() - t0) / max(1, out.count(b"\n") - 1))
    t_mount = statistics.median(mounts)
    per_wide, per_chunks = statistics.median(ls["wide"]), statistics.median(ls["chunks"])
    return [
        ("mount of 1,000,000 consolidated nodes (groups) vs zarr-python opening them", f"{t_mount:.2f} s",
         f"{t_zarr_open:.2f} s", f"{t_zarr_open / t_mount:.2f}x", "a few seconds", t_mount < 5,
         f"RSS {statistics.median(resident) / MIB:.0f} MiB, peak {statistics.median(peaks) / MIB:.0f} MiB "
         f"({statistics.median(resident) / 1e6:.0f} bytes per node)"),
        ("ls -la of a group of 100,000 arrays vs of an array's 100,000 chunk files, per entry",
         f"{per_wide * 1e6:.0f} us", f"{per_chunks * 1e6:.0f} us", f"{per_chunks / per_wide:.2f}x",
         "<= 200 us, flat in the group's size", per_wide <= 200e-6,
         "ls -l's three getxattr per entry are answered by the kernel (the mount has no attributes)"),
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench hierarchy", description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", default="/tmp/nzfs-bench")
    ap.add_argument("--nzfs", default=RELEASE)
    args = ap.parse_args(argv)
    os.makedirs(args.workdir, exist_ok=True)
    table = rows(args, args.workdir, os.path.join(args.workdir, "mnt"))
    print(f"\nnzfs benchmark, large hierarchies; {os.cpu_count()} cores; medians of {args.repeat}; "
          f"zarr-python {zarr.__version__}; store files in the page cache\n")
    print_table(table, last="notes")

"""Compare nzfs builds on the benchmark's data, interleaved, in one run.

Where `bench local` sets nzfs against zarr-python and tensorstore, this
sets two or more nzfs binaries against each other, which is how docs/performance.md's
"what changed" figures were measured: each build mounts the same store in
turn, a run of each per round, and the medians are printed side by side.

Usage (after scripts/bench.sh --size-mib 256 has built /tmp/nzfs-bench/bench-256.zarr):
  python3 scripts/bench probe cold   OLD_NZFS NEW_NZFS   # chunk files, 1 and 2 readers
  python3 scripts/bench probe dbin   OLD_NZFS NEW_NZFS   # data.bin against chunk files
  python3 scripts/bench probe disk   OLD_NZFS NEW_NZFS   # the same from a cold disk (root: drops caches)
  python3 scripts/bench probe nc     OLD_NZFS NEW_NZFS   # netCDF4-python on the .nc (bench venv)
  python3 scripts/bench probe random OLD_NZFS NEW_NZFS   # 2,000 random 4 KiB reads (root: drops caches)
Options: --rounds 5, --store DIR, --mountpoint DIR, --cache-size 256MiB.

"Cold" is a fresh mount with the store's files in the page cache (read once
first), as in the benchmark. Each figure carries the daemon's peak RSS
(VmHWM) and, for cold reads, its CPU time.
"""

import argparse
import os
import random
import statistics
import subprocess
import time

from common import MIB, Mounted, chunk_files, drop_page_cache


def mounted(nzfs, args):
    return Mounted(args.store, args.mountpoint, nzfs, cache_size=args.cache_size)


def timed_cat(files, readers):
    t0 = time.perf_counter()
    procs = [subprocess.Popen(["cat", *files[i::readers]], stdout=subprocess.DEVNULL) for i in range(readers)]
    for p in procs:
        assert p.wait() == 0
    return time.perf_counter() - t0


def cold(nzfs, args, readers, data_bin=False, disk=False):
    """GB/s of a cold read of array "field" (`disk`: the page cache dropped
    first), daemon CPU s, VmHWM MiB."""
    with mounted(nzfs, args) as m:
        files = [os.path.join(m.mp, "field", "data.bin")] if data_bin else chunk_files(m.mp)
        size = sum(os.path.getsize(f) for f in files)
        if disk:
            drop_page_cache()
        c0 = m.cpu_seconds()
        t = timed_cat(files, readers)
        return size / t / 1e9, m.cpu_seconds() - c0, m.memory("VmHWM") // MIB


def netcdf(nzfs, args):
    import netCDF4  # the bench venv has it

    with mounted(nzfs, args) as m:
        nc = next(f for f in os.listdir(m.mp) if f.endswith(".nc"))
        t0 = time.perf_counter()
        ds = netCDF4.Dataset(os.path.join(m.mp, nc))
        v = ds.variables["field"]
        v.set_auto_maskandscale(False)
        n = v[:].nbytes
        ds.close()
        return n / (time.perf_counter() - t0) / 1e9, 0.0, m.memory("VmHWM") // MIB


def timed_preads(picks, legacy):
    """Seconds for one 4 KiB pread per (path, offset) of picks: each with
    its own open and close (legacy, as an old program does), or with the
    files kept open under POSIX_FADV_RANDOM. Shared with `bench local`."""
    fds = {}
    t0 = time.perf_counter()
    try:
        for path, off in picks:
            if legacy:
                fd = os.open(path, os.O_RDONLY)
                assert len(os.pread(fd, 4096, off)) == 4096
                os.close(fd)
                continue
            fd = fds.get(path)
            if fd is None:
                fd = fds[path] = os.open(path, os.O_RDONLY)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
            assert len(os.pread(fd, 4096, off)) == 4096
        return time.perf_counter() - t0
    finally:
        for fd in fds.values():
            os.close(fd)


def random_reads(nzfs, args, array, legacy):
    """op/s of 2,000 aligned 4 KiB reads of shard files (one 1024-float
    row each): open/pread/close (legacy), or kept open with FADV_RANDOM."""
    if not drop_page_cache():
        print("(not root: the store stays in the page cache)")
    with mounted(nzfs, args) as m:
        names = chunk_files(m.mp, array)
        rng = random.Random(7)
        picks = [(names[rng.randrange(len(names))], (rng.randrange(16) * 1024 + rng.randrange(1024)) * 4096)
                 for _ in range(2000)]
        t = timed_preads(picks, legacy)
        return len(picks) / t, 0.0, m.memory("VmHWM") // MIB


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench probe", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["cold", "dbin", "disk", "nc", "random"])
    ap.add_argument("nzfs", nargs="+", help="nzfs binaries to compare")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--store", default="/tmp/nzfs-bench/bench-256.zarr")
    ap.add_argument("--mountpoint", default="/tmp/nzfs-probe-mnt")
    ap.add_argument("--cache-size", default="256MiB")
    args = ap.parse_args(argv)
    if not os.path.isdir(os.path.join(args.store, "field")):
        raise SystemExit(f"no {args.store}/field: run scripts/bench.sh --size-mib 256 first")
    subprocess.run(f"cat $(find {args.store} -type f) > /dev/null", shell=True, check=True)
    cases = {
        "cold": [("1 reader", lambda b: cold(b, args, 1)), ("2 readers", lambda b: cold(b, args, 2))],
        "dbin": [("chunk files", lambda b: cold(b, args, 1)), ("data.bin", lambda b: cold(b, args, 1, True))],
        "disk": [("chunk files, 2 readers", lambda b: cold(b, args, 2, disk=True)),
                 ("data.bin, 1 reader", lambda b: cold(b, args, 1, True, disk=True))],
        "nc": [(".nc", lambda b: netcdf(b, args))],
        "random": [("square, open/pread/close", lambda b: random_reads(b, args, "square", True)),
                   ("rows, FADV_RANDOM", lambda b: random_reads(b, args, "sharded", False))],
    }[args.what]
    unit = "op/s" if args.what == "random" else "GB/s"
    medians = {}
    for name, run in cases:
        results = {b: [] for b in args.nzfs}
        for _ in range(args.rounds):
            for b in args.nzfs:
                results[b].append(run(b))
        for b, rs in results.items():
            speeds = [r[0] for r in rs]
            medians[(name, b)] = statistics.median(speeds)
            fmt = "{:,.0f}" if unit == "op/s" else "{:.2f}"
            cpu = (f", daemon cpu {statistics.median(r[1] for r in rs):.2f} s"
                   if args.what in ("cold", "dbin", "disk") else "")
            print(f"{name:26} {b}: median {fmt.format(statistics.median(speeds))} {unit} "
                  f"(range {fmt.format(min(speeds))}-{fmt.format(max(speeds))}){cpu}, "
                  f"peak RSS {min(r[2] for r in rs)}-{max(r[2] for r in rs)} MiB", flush=True)
    if args.what in ("dbin", "disk"):
        (first, _), (second, _) = cases
        for b in args.nzfs:
            print(f"{b}: {second} / {first} = {medians[(second, b)] / medians[(first, b)]:.2f}")

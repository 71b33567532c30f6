"""nzfs through a real mount, side by side with zarr-python and tensorstore
reading the same store into memory, in the same run: the benchmark's main
table.

Usage: python3 scripts/bench local [--size-mib 512] [--repeat 3] [--workdir DIR] [--nzfs BIN]
       [--cache-size 256MiB] [--random-reads 2000] [--passthrough never]

Every figure is the median of --repeat runs. "Cold" means a fresh mount:
nzfs's cache and the kernel's page cache of the mount are empty; the store's
own files are in the page cache for every contender alike (they are read
once before timing). Rows with passthrough forced on are added when run as
root. `bench disk` has the rows with the store on disk, `bench hierarchy`
those of large hierarchies (also printed here).
"""

import argparse
import multiprocessing
import os
import random
import shutil
import statistics
import subprocess
import time

import tensorstore as ts
import zarr

import hierarchy
from common import (MIB, Mounted, Usage, cat, cat_parallel, chunk_files, chunk_objects, decode_files,
                    drop_page_cache, log, main_store_args, median_time, parse_size, print_table, warm_page_cache)
from datasets import build_many, build_million, decoded_bytes, main_stores
from probe import timed_preads


def chunk_objects_v2(store):
    d = os.path.join(store, "field")
    return sorted(os.path.join(d, f) for f in os.listdir(d) if not f.startswith("."))


class Run:
    """One run's settings and what its nzfs mounts peaked at."""

    def __init__(self, args, store):
        self.args, self.store = args, store
        self.mp = os.path.join(args.workdir, "mnt")
        self.rss = {}

    def mount(self, source=None, passthrough=None, **options):
        options.setdefault("cache_size", self.args.cache_size)
        return Mounted(source or self.store, self.mp, self.args.nzfs,
                       passthrough=passthrough or self.args.passthrough, **options)

    def cold(self, read, name, source=None, passthrough=None):
        """Median seconds of read(mount point) on fresh mounts; the peak RSS
        is noted as `name`."""
        times, peak = [], 0
        for _ in range(self.args.repeat):
            with self.mount(source, passthrough) as m:
                t0 = time.perf_counter()
                read(self.mp)
                times.append(time.perf_counter() - t0)
                peak = max(peak, m.memory("VmHWM"))
        self.rss[name] = peak
        return statistics.median(times)


def peers(run, objects):
    """zarr-python's and tensorstore's whole reads, and the zstd decode limit
    on 1 and 2 cores."""
    args, store = run.args, run.store
    log("zarr-python whole read ...")
    t = {"zarr": median_time(lambda: zarr.open_array(store, path="field", mode="r")[...], args.repeat)}
    log("tensorstore whole read ...")
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": os.path.join(store, "field")}}
    t["ts"] = median_time(lambda: ts.open(spec).result().read().result(), args.repeat)
    log("zstd decode limit ...")
    t["dec1"] = median_time(lambda: decode_files(objects), args.repeat)
    with multiprocessing.Pool(2) as pool:
        t["dec2"] = median_time(lambda: pool.map(decode_files, [objects[0::2], objects[1::2]]), args.repeat)
    return t


def cold_reads(run, store_v2, decoded):
    """Cold chunk files (1 and 2 readers, the v2 copy, passthrough forced
    as root), data.bin, and netCDF4-python on the .nc."""
    t = {}
    log("nzfs cold, 1 reader ...")
    t["cold1"] = run.cold(lambda root: cat(chunk_files(root)), "cold, 1 reader")
    log("nzfs cold, 2 readers ...")
    t["cold2"] = run.cold(lambda root: cat_parallel([chunk_files(root)[i::2] for i in range(2)]), "cold, 2 readers")
    if os.geteuid() == 0 and run.args.passthrough != "always":
        log("nzfs cold, 1 reader, and warm re-read, with --passthrough always ...")
        t["cold1_pt"] = run.cold(lambda root: cat(chunk_files(root)), "cold, 1 reader, passthrough",
                                 passthrough="always")
        with run.mount(passthrough="always", cache_size=f"{decoded // MIB + 64}MiB"):
            files = chunk_files(run.mp)
            cat(files)
            t["warm_pt"] = median_time(lambda: cat(files), run.args.repeat)
    log("nzfs cold, 1 reader, Zarr v2 copy; zarr-python on it ...")
    warm_page_cache(chunk_objects_v2(store_v2))
    t["cold1_v2"] = run.cold(lambda root: cat(chunk_files(root)), "cold, v2 copy", store_v2)
    t["zarr_v2"] = median_time(lambda: zarr.open_array(store_v2, path="field", mode="r")[...], run.args.repeat)

    log("data.bin cold; netCDF4-python on the virtual file ...")
    import netCDF4
    nc_name = os.path.basename(run.store)[:-len(".zarr")] + ".nc"

    def read_netcdf(root):
        with netCDF4.Dataset(os.path.join(root, nc_name)) as ds:
            ds.set_auto_mask(False)
            ds.variables["field"][:]

    t["databin_cold"] = run.cold(lambda root: cat([os.path.join(root, "field", "data.bin")]), "data.bin cold")
    t["netcdf"] = run.cold(read_netcdf, "netCDF4 on .nc")
    return t


def warm_reads(run, warm_cache):
    """Warm re-reads of the chunk files and of data.bin, beside the same
    bytes on tmpfs."""
    t = {}
    log("nzfs warm re-read vs tmpfs (chunk files, then data.bin) ...")
    with run.mount(cache_size=warm_cache) as m:
        t["path"] = "passthrough" if m.passthrough_on() else "daemon"
        files = chunk_files(run.mp)
        cat(files)
        t["warm"] = median_time(lambda: cat(files), run.args.repeat)
        shm = "/dev/shm/nzfs-bench"
        shutil.rmtree(shm, ignore_errors=True)
        os.makedirs(shm)
        for f in files:
            shutil.copy(f, shm)
        shm_files = sorted(os.path.join(shm, f) for f in os.listdir(shm))
        t["tmpfs"] = median_time(lambda: cat(shm_files), run.args.repeat)
        shutil.rmtree(shm)
        run.rss["warm re-read"] = m.memory("VmHWM")
    with run.mount(cache_size=warm_cache):
        data_bin = os.path.join(run.mp, "field", "data.bin")
        cat([data_bin])
        t["warm_databin"] = median_time(lambda: cat([data_bin]), run.args.repeat)
        shm = "/dev/shm/nzfs-bench-data.bin"
        shutil.copy(data_bin, shm)
        t["tmpfs_databin"] = median_time(lambda: cat([shm]), run.args.repeat)
        os.remove(shm)
    return t


def random_reads(run, shape):
    """ops/s of nzfs and zarr-python: random aligned 4 KiB reads, each one
    1024-float row of one shard, of the square and the row-chunked arrays."""
    rng = random.Random(7)
    picks = []
    for _ in range(run.args.random_reads):
        g = [rng.randrange(shape[0] // 16), 0, 0]
        t_in, y_in = rng.randrange(16), rng.randrange(1024)
        picks.append((g, (t_in * 1024 + y_in) * 4096, (g[0] * 16 + t_in, y_in)))
    width = len(str(shape[0] // 16 - 1))
    profile = {}

    def phase(array, legacy):
        """Each side from dropped caches, so neither is measured against the
        other's warm cache. legacy: open, pread, close per read with no
        fadvise (what a legacy program does); else descriptors kept open
        with POSIX_FADV_RANDOM."""
        dropped = drop_page_cache()
        with run.mount() as m:
            paths = [(os.path.join(run.mp, array, f"{g[0]:0{width}d}.0.0.bin"), off) for g, off, _ in picks]
            usage = Usage(run.store)
            a = usage.snapshot()
            t = median_time(lambda: timed_preads(paths, legacy), 1)
            _, cores, disk, read = Usage.between(a, usage.snapshot())
            profile[array] = (f"; cores busy {cores:.2f} of {os.cpu_count()}, disk busy {100 * disk:.0f}%, "
                              f"{read / len(picks) / 1024:.0f} KiB read from it per read")
            run.rss[f"random, {array}"] = m.memory("VmHWM")
        drop_page_cache()
        za = zarr.open_array(run.store, path=array, mode="r")
        n = min(len(picks), 200)

        def zarr_reads():
            for _, _, (t_, y) in picks[:n]:
                za[t_, y, 0:1024]

        return len(picks) / t, n / median_time(zarr_reads, 1), dropped

    log("random 4 KiB reads, square 64 KiB inner chunks, open/pread/close, no fadvise ...")
    square = phase("square", True)
    log("random 4 KiB reads, 32 KiB-row inner chunks, FADV_RANDOM ...")
    rows = phase("sharded", False)
    if not square[2]:
        log("warning: cannot drop caches (not root): random reads measured with warm store objects")
    return square[:2], rows[:2], profile


def listings(run, many, million):
    """The mount of 10,000 consolidated arrays and listing them; `ls` of a
    1,000,000-chunk array and the daemon's RSS around it."""
    log("mount and ls of 10,000 arrays; ls of 1,000,000 chunks ...")
    mounts, t = [], {}
    for _ in range(run.args.repeat):
        with Mounted(many, run.mp, run.args.nzfs, passthrough=run.args.passthrough) as m:
            mounts.append(m.seconds)
            t0 = time.perf_counter()
            t["listed"] = sum(len(os.listdir(os.path.join(run.mp, g))) for g in os.listdir(run.mp) if g.startswith("g"))
            t["ls_many"] = time.perf_counter() - t0
            run.rss["10,000 arrays"] = m.memory("VmHWM")
    t["mount_many"] = statistics.median(mounts)
    with Mounted(million, run.mp, run.args.nzfs, passthrough=run.args.passthrough) as m:
        t["before"] = m.memory("VmRSS")
        t0 = time.perf_counter()
        t["chunks"] = int(subprocess.run(f"ls -f {run.mp}/big | wc -l", shell=True, check=True,
                                         capture_output=True, text=True).stdout)
        t["ls_million"] = time.perf_counter() - t0
        t["after"] = m.memory("VmRSS")
        run.rss["1,000,000 chunks"] = m.memory("VmHWM")
    return t


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench local", description=__doc__.split("\n\n")[0])
    main_store_args(ap)
    ap.add_argument("--random-reads", type=int, default=2000)
    args = ap.parse_args(argv)
    work = args.workdir
    os.makedirs(work, exist_ok=True)
    store, store_v2 = main_stores(work, args.size_mib)
    many, million = os.path.join(work, "many.zarr"), os.path.join(work, "million.zarr")
    if not os.path.exists(os.path.join(many, "zarr.json")):
        log("building a hierarchy of 10,000 arrays ...")
        build_many(many, 10_000)
    build_million(million)
    decoded, shape = decoded_bytes(store)
    objects = chunk_objects(store, "field")
    warm_page_cache(objects + chunk_objects(store, "sharded") + chunk_objects(store, "square"))
    run = Run(args, store)
    # Warm means the decoded data is held: a cache budget that fits it.
    warm_cache = f"{decoded // MIB + 64}MiB"

    p = peers(run, objects)
    c = cold_reads(run, store_v2, decoded)
    w = warm_reads(run, warm_cache)
    (sq_ops, sq_zarr), (row_ops, row_zarr), profile = random_reads(run, shape)
    ls = listings(run, many, million)

    gbs = lambda t: f"{decoded / t / 1e9:.2f} GB/s"  # noqa: E731
    chunks, daemon = w["path"], "daemon"
    rows = []

    def ratio(name, mine, peer, r, target, at_least, path, fmt="{:.2f}x"):
        rows.append((name, mine, peer, fmt.format(r), f">= {at_least}x" if target is None else target,
                     r >= at_least, path))

    ratio("cold, 1 reader vs zarr-python whole read", gbs(c["cold1"]), gbs(p["zarr"]), p["zarr"] / c["cold1"],
          None, 1.2, chunks)
    ratio("cold, 2 readers vs tensorstore whole read", gbs(c["cold2"]), gbs(p["ts"]), p["ts"] / c["cold2"],
          None, 1.2, chunks)
    ratio("cold, 2 readers vs 2-core zstd decode limit", gbs(c["cold2"]),
          f"{gbs(p['dec2'])} (1 core {gbs(p['dec1'])})", p["dec2"] / c["cold2"], None, 0.8, chunks)
    ratio("cold, 1 reader (store in page cache) vs 2-core zstd decode limit", gbs(c["cold1"]), gbs(p["dec2"]),
          p["dec2"] / c["cold1"], None, 0.8, chunks)
    ratio("cold, 1 reader, Zarr v2 copy (blosc lz4) vs the v3 store (zstd)", gbs(c["cold1_v2"]),
          f"{gbs(c['cold1'])} (zarr-python on v2: {gbs(c['zarr_v2'])})", c["cold1"] / c["cold1_v2"], None, 0.9,
          chunks)
    ratio("warm re-read vs tmpfs, chunk files", gbs(w["warm"]), gbs(w["tmpfs"]), w["tmpfs"] / w["warm"], None, 0.9,
          chunks)
    ratio("warm re-read vs tmpfs, data.bin", gbs(w["warm_databin"]), gbs(w["tmpfs_databin"]),
          w["tmpfs_databin"] / w["warm_databin"], None, 0.9, daemon + " (kernel page cache)")
    ratio("random 4 KiB, 64 KiB square inner chunks, open/pread/close, no fadvise, vs zarr-python",
          f"{sq_ops:,.0f} op/s", f"{sq_zarr:,.0f} op/s", sq_ops / sq_zarr, None, 20,
          daemon + " (shard file), store on disk" + profile["square"], "{:.1f}x")
    ratio("random 4 KiB, 32 KiB-row inner chunks, FADV_RANDOM, vs zarr-python", f"{row_ops:,.0f} op/s",
          f"{row_zarr:,.0f} op/s", row_ops / row_zarr, None, 30,
          daemon + " (shard file), store on disk" + profile["sharded"], "{:.1f}x")
    if "cold1_pt" in c:
        ratio("cold, 1 reader vs zarr-python whole read", gbs(c["cold1_pt"]), gbs(p["zarr"]),
              p["zarr"] / c["cold1_pt"], None, 1.2, "passthrough (forced)")
        ratio("warm re-read vs tmpfs, chunk files", gbs(c["warm_pt"]), gbs(w["tmpfs"]), w["tmpfs"] / c["warm_pt"],
              None, 0.9, "passthrough (forced)")
    ratio("data.bin sequential cold vs chunk files", gbs(c["databin_cold"]), gbs(c["cold1"]),
          c["cold1"] / c["databin_cold"], None, 0.95, daemon)
    ratio("netCDF4-python on the virtual .nc vs zarr-python", gbs(c["netcdf"]), gbs(p["zarr"]),
          p["zarr"] / c["netcdf"], None, 0.8, daemon)
    budget = parse_size(args.cache_size)
    peak = max(v for k, v in run.rss.items() if k != "warm re-read")
    rows.append(("peak RSS (cold and random rows)", f"{peak / MIB:.0f} MiB", f"cache {budget / MIB:.0f} MiB",
                 f"+{(peak - budget) / MIB:.0f} MiB", "<= cache + 64 MiB", peak <= budget + 64 * MIB, ""))
    rows.append(("mount of 10,000 arrays (consolidated)", f"{ls['mount_many']:.3f} s",
                 f"ls {ls['ls_many']:.3f} s ({ls['listed']} entries)", "", "< 1 s", ls["mount_many"] < 1, ""))
    rows.extend(hierarchy.rows(args, work, run.mp))
    rows.append(("ls of a 1,000,000-chunk array", f"{ls['ls_million']:.2f} s ({ls['chunks'] - 2} names)",
                 f"RSS {ls['before'] / MIB:.1f} -> {ls['after'] / MIB:.1f} MiB", "", "streams, flat memory",
                 ls["after"] - ls["before"] < 16 * MIB, ""))

    print(f"\nnzfs benchmark: {decoded / MIB:.0f} MiB float32 {shape}, 4 MiB zstd chunks; "
          f"{os.cpu_count()} cores; medians of {args.repeat}; zarr-python {zarr.__version__}, "
          f"tensorstore {getattr(ts, '__version__', '0.1.x')}; nzfs cache {args.cache_size} "
          f"(warm rows {warm_cache}); --passthrough {args.passthrough}\n")
    print_table(rows)
    print("\ndaemon peak RSS (VmHWM): " + ", ".join(f"{k} {v / MIB:.0f} MiB" for k, v in run.rss.items()))
    print("(passthrough backing files are memfds: kernel memory, not in the daemon's RSS; the pool keeps them "
          "and the decoded cache within --cache-size together)")

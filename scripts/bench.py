#!/usr/bin/env python3
"""nzfs benchmark: nzfs through a real mount, side by side with zarr-python
and tensorstore reading the same store into memory, in the same run.

Usage:  python scripts/bench.py [--size-mib 512] [--repeat 3] [--workdir DIR]
(scripts/bench.sh sets up the venv and builds nzfs first.)

Every figure is the median of --repeat runs. "Cold" means a fresh mount:
nzfs's cache and the kernel's page cache of the mount are empty; the store's
own files are in the page cache for every contender alike (they are read
once before timing). With --cold-disk (root) only the store-on-disk rows
run, the page cache dropped before every pass (issue #33).
"""

import argparse
import json
import multiprocessing
import os
import random
import shutil
import statistics
import subprocess
import sys
import time

import numpy as np
import tensorstore as ts
import zarr
import zstandard
from zarr.codecs import ZstdCodec

from probe import timed_preads

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
MIB = 1 << 20


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# --- datasets ------------------------------------------------------------------

def build_main(path, size_mib):
    """A float32 NZ array of size_mib decoded, 4 MiB chunks, zstd, a smooth
    field plus noise; and a sharded copy (64 MiB shards of 2048 inner chunks
    of 32 KiB: 8 whole rows each)."""
    t = max(8, size_mib // 4)
    t -= t % 8
    shape = (t, 1024, 1024)
    g = zarr.open_group(path, mode="w", zarr_format=3)
    g.attrs["conventions"] = "NZ-1.0"
    a = g.create_array("field", shape=shape, chunks=(1, 1024, 1024), dtype="float32",
                       compressors=[ZstdCodec(level=3)], dimension_names=["time", "y", "x"], fill_value=0)
    s = g.create_array("sharded", shape=shape, chunks=(1, 8, 1024), shards=(16, 1024, 1024), dtype="float32",
                       compressors=[ZstdCodec(level=3)], dimension_names=["time", "y", "x"], fill_value=0)
    y, x = np.meshgrid(np.arange(1024, dtype="float32"), np.arange(1024, dtype="float32"), indexing="ij")
    base = 280 + 10 * np.sin(x / 97) * np.cos(y / 131)
    rng = np.random.default_rng(1)
    step = 16
    for t0 in range(0, t, step):
        slab = np.stack([base + 0.05 * k + rng.normal(0, 0.5, base.shape).astype("float32")
                         for k in range(t0, t0 + step)]).astype("float32")
        a[t0:t0 + step] = slab
        s[t0:t0 + step] = slab
    return shape


def build_square(path):
    """The layout a legacy program usually meets: the main array again in
    64 MiB shards of 16x1024x1024 whose inner chunks are square 128x128
    float32 (64 KiB)."""
    src = zarr.open_array(path, path="field", mode="r")
    g = zarr.open_group(path, mode="a", zarr_format=3)
    sq = g.create_array("square", shape=src.shape, chunks=(1, 128, 128), shards=(16, 1024, 1024), dtype="float32",
                        compressors=[ZstdCodec(level=3)], dimension_names=["time", "y", "x"], fill_value=0,
                        overwrite=True)
    for t0 in range(0, src.shape[0], 16):
        sq[t0:t0 + 16] = src[t0:t0 + 16]


def build_v2(path, v3_store):
    """A Zarr v2 copy of the main array as xarray writes it by default
    (blosc lz4, byte shuffle, _ARRAY_DIMENSIONS), same chunks."""
    import numcodecs
    src = zarr.open_array(v3_store, path="field", mode="r")
    g = zarr.open_group(path, mode="w", zarr_format=2)
    a = g.create_array("field", shape=src.shape, chunks=(1, 1024, 1024), dtype="float32", fill_value=0,
                       compressors=numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE))
    a.attrs["_ARRAY_DIMENSIONS"] = ["time", "y", "x"]
    for t0 in range(0, src.shape[0], 16):
        a[t0:t0 + 16] = src[t0:t0 + 16]


def build_many(path, n):
    """A hierarchy of n tiny arrays with inline consolidated metadata."""
    os.makedirs(path, exist_ok=True)
    meta = {}
    for i in range(n):
        doc = {"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "float32",
               "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [4]}},
               "chunk_key_encoding": {"name": "default"}, "fill_value": 0.0,
               "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
               "dimension_names": ["n"], "attributes": {}}
        name = f"g{i // 1000:02d}/v{i:05d}"
        os.makedirs(os.path.join(path, name), exist_ok=True)
        with open(os.path.join(path, name, "zarr.json"), "w") as f:
            json.dump(doc, f)
        meta[name] = doc
    for gname in {k.split("/")[0] for k in meta}:
        doc = {"zarr_format": 3, "node_type": "group", "attributes": {}}
        with open(os.path.join(path, gname, "zarr.json"), "w") as f:
            json.dump(doc, f)
        meta[gname] = doc
    root = {"zarr_format": 3, "node_type": "group", "attributes": {"conventions": "NZ-1.0"},
            "consolidated_metadata": {"kind": "inline", "must_understand": False, "metadata": meta}}
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump(root, f)


def build_million(path):
    """One array of 1,000,000 (absent) chunks."""
    os.makedirs(os.path.join(path, "big"), exist_ok=True)
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "group"}, f)
    doc = {"zarr_format": 3, "node_type": "array", "shape": [1000, 1000], "data_type": "uint8",
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1, 1]}},
           "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
           "codecs": [{"name": "bytes"}], "dimension_names": ["y", "x"]}
    with open(os.path.join(path, "big", "zarr.json"), "w") as f:
        json.dump(doc, f)


def build_groups(path, n):
    """n nodes of consolidated metadata, all groups (1,000 per parent): a
    million arrays would pass the 64 MiB limit of one zarr.json."""
    os.makedirs(path, exist_ok=True)
    meta = {}
    grp = {"zarr_format": 3, "node_type": "group"}
    for i in range(n - 1):
        g = f"g{i // 1000:04d}"
        meta[g if i % 1000 == 0 else f"{g}/{i % 1000:03d}"] = grp
    root = {"zarr_format": 3, "node_type": "group", "attributes": {"conventions": "NZ-1.0"},
            "consolidated_metadata": {"kind": "inline", "must_understand": False, "metadata": meta}}
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump(root, f, separators=(",", ":"))


def build_wide(path, n):
    """One group of n tiny arrays (consolidated), and beside it one array of
    n chunks: `ls -la` of each lists n entries."""
    os.makedirs(os.path.join(path, "wide"), exist_ok=True)
    arr = {"zarr_format": 3, "node_type": "array", "shape": [1], "data_type": "uint8",
           "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1]}},
           "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]}
    meta = {"wide": {"zarr_format": 3, "node_type": "group"}}
    for i in range(n):
        meta[f"wide/v{i:06d}"] = arr
    meta["chunks"] = dict(arr, shape=[n])
    root = {"zarr_format": 3, "node_type": "group",
            "consolidated_metadata": {"kind": "inline", "must_understand": False, "metadata": meta}}
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump(root, f, separators=(",", ":"))


def hierarchy_rows(args, work, mp):
    """Issue #29's linear-time rows: the mount of 1,000,000 consolidated
    nodes beside zarr-python opening the same group, and `ls -la` of a group
    of 100,000 arrays beside `ls -la` of an array's 100,000 chunk files."""
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
        m = Mount(args.nzfs, million_nodes, mp)
        mounts.append(m.mount_seconds)
        peaks.append(m.status("VmHWM"))
        resident.append(m.status("VmRSS"))
        m.close()

    def zarr_open():
        g = zarr.open_group(million_nodes, mode="r", use_consolidated=True)
        return sum(1 for _ in g.members(max_depth=None))
    t_zarr_open = median_time(zarr_open, args.repeat)
    log("ls -la of a group of 100,000 arrays and of an array of 100,000 chunk files ...")
    ls = {"wide": [], "chunks": []}
    for _ in range(args.repeat):
        for d in ls:
            m = Mount(args.nzfs, wide, mp)
            t0 = time.perf_counter()
            out = subprocess.run(["ls", "-la", os.path.join(mp, d)], check=True, capture_output=True).stdout
            ls[d].append((time.perf_counter() - t0) / max(1, out.count(b"\n") - 1))
            m.close()
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


# --- mounting -------------------------------------------------------------------

class Mount:
    passthrough = "auto"

    def __init__(self, nzfs, store, mp, *extra):
        os.makedirs(mp, exist_ok=True)
        self.log_file = os.path.join(os.path.dirname(mp), "nzfs-bench.log")
        if os.path.exists(self.log_file):
            os.remove(self.log_file)
        t0 = time.perf_counter()
        out = subprocess.run([nzfs, "mount", store, mp, "--log-file", self.log_file,
                              "--passthrough", Mount.passthrough, *extra],
                             check=True, capture_output=True, text=True).stdout
        self.mount_seconds = time.perf_counter() - t0
        self.pid = int(out.split("daemon pid ")[1].split(",")[0])
        self.nzfs, self.mp = nzfs, mp

    def passthrough_on(self):
        with open(self.log_file) as f:
            return "passthrough on" in f.read()

    def status(self, field):
        with open(f"/proc/{self.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
        return 0

    def close(self):
        subprocess.run([self.nzfs, "unmount", self.mp], check=True)
        for _ in range(200):
            if not os.path.exists(f"/proc/{self.pid}"):
                break
            time.sleep(0.01)


# --- measurements ---------------------------------------------------------------

def median_time(fn, repeat):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def cat(files):
    subprocess.run(["cat", *files], check=True, stdout=subprocess.DEVNULL)


def cat_parallel(groups):
    procs = [subprocess.Popen(["cat", *g], stdout=subprocess.DEVNULL) for g in groups if g]
    for p in procs:
        assert p.wait() == 0


def chunk_objects(store, array):
    out = []
    for root, _, files in os.walk(os.path.join(store, array, "c")):
        out.extend(os.path.join(root, f) for f in files)
    return sorted(out)


def chunk_objects_v2(store):
    d = os.path.join(store, "field")
    return sorted(os.path.join(d, f) for f in os.listdir(d) if not f.startswith("."))


def decode_files(files):
    d = zstandard.ZstdDecompressor()
    n = 0
    for f in files:
        with open(f, "rb") as fh:
            n += len(d.decompress(fh.read()))
    return n


def warm_page_cache(files):
    for f in files:
        with open(f, "rb") as fh:
            while fh.read(8 * MIB):
                pass


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size-mib", type=int, default=512)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", default="/tmp/nzfs-bench")
    ap.add_argument("--nzfs", default=os.path.join(ROOT, "target", "release", "nzfs"))
    ap.add_argument("--cache-size", default="256MiB")
    ap.add_argument("--random-reads", type=int, default=2000)
    ap.add_argument("--passthrough", default="never", choices=["auto", "always", "never"],
                    help="the path for every row (default: nzfs's default); rows with passthrough forced on "
                         "are added when run as root")
    ap.add_argument("--only", choices=["all", "hierarchy"], default="all",
                    help="hierarchy: only the rows of large hierarchies (1,000,000 nodes, 100,000-entry groups)")
    ap.add_argument("--cold-disk", action="store_true",
                    help="only the rows with the store on disk: the page cache is dropped before every timed "
                         "pass of every contender (needs root)")
    args = ap.parse_args()
    Mount.passthrough = args.passthrough
    work = args.workdir
    os.makedirs(work, exist_ok=True)
    if args.only == "hierarchy":
        print_hierarchy_rows(hierarchy_rows(args, work, os.path.join(work, "mnt")), args)
        return
    store = os.path.join(work, f"bench-{args.size_mib}.zarr")
    marker = os.path.join(store, ".complete-v2")
    if not os.path.exists(marker):
        log(f"building {store} ({args.size_mib} MiB decoded) with zarr-python {zarr.__version__} ...")
        shutil.rmtree(store, ignore_errors=True)
        build_main(store, args.size_mib)
        open(marker, "w").close()
    if not os.path.exists(os.path.join(store, "square", ".complete")):
        log("building the square-inner-chunk sharded copy ...")
        build_square(store)
        open(os.path.join(store, "square", ".complete"), "w").close()
    store_v2 = os.path.join(work, f"bench-{args.size_mib}-v2.zarr")
    if not os.path.exists(os.path.join(store_v2, ".complete")):
        log(f"building the Zarr v2 copy {store_v2} (blosc lz4) ...")
        shutil.rmtree(store_v2, ignore_errors=True)
        build_v2(store_v2, store)
        open(os.path.join(store_v2, ".complete"), "w").close()
    if args.cold_disk:
        if os.geteuid() != 0:
            sys.exit("bench: --cold-disk drops the page cache, which needs root")
        rows = disk_rows(args, store, os.path.join(work, "mnt"))
        meta = json.load(open(os.path.join(store, "field", "zarr.json")))
        print(f"\nnzfs benchmark, store on disk: {int(np.prod(meta['shape'])) * 4 / MIB:.0f} MiB float32 "
              f"{tuple(meta['shape'])}, 4 MiB zstd chunks ({sum(map(os.path.getsize, chunk_objects(store, 'field'))) / MIB:.0f} MiB stored); "
              f"{os.cpu_count()} cores; medians of {args.repeat}; zarr-python {zarr.__version__}; "
              f"nzfs cache {args.cache_size}\n")
        print_table(rows)
        return
    many, million = os.path.join(work, "many.zarr"), os.path.join(work, "million.zarr")
    if not os.path.exists(os.path.join(many, "zarr.json")):
        log("building a hierarchy of 10,000 arrays ...")
        build_many(many, 10_000)
    build_million(million)
    meta = json.load(open(os.path.join(store, "field", "zarr.json")))
    shape = tuple(meta["shape"])
    decoded = int(np.prod(shape)) * 4
    objects = chunk_objects(store, "field")
    warm_page_cache(objects + chunk_objects(store, "sharded") + chunk_objects(store, "square"))
    mp = os.path.join(work, "mnt")
    rows = []
    rss = {}

    log("zarr-python whole read ...")
    t_zarr = median_time(lambda: zarr.open_array(store, path="field", mode="r")[...], args.repeat)
    log("tensorstore whole read ...")
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": os.path.join(store, "field")}}
    t_ts = median_time(lambda: ts.open(spec).result().read().result(), args.repeat)
    log("zstd decode limit ...")
    t_dec1 = median_time(lambda: decode_files(objects), args.repeat)
    halves = [objects[0::2], objects[1::2]]
    with multiprocessing.Pool(2) as pool:
        t_dec2 = median_time(lambda: pool.map(decode_files, halves), args.repeat)

    def chunk_files(root):
        d = os.path.join(root, "field")
        return sorted(os.path.join(d, f) for f in os.listdir(d) if f != "data.bin" and f.endswith(".bin"))

    def cold(read, source=store):
        """Median seconds of read(mount_point) on fresh mounts, and the peak RSS."""
        times, peak = [], 0
        for _ in range(args.repeat):
            m = Mount(args.nzfs, source, mp, "--cache-size", args.cache_size)
            try:
                t0 = time.perf_counter()
                read(mp)
                times.append(time.perf_counter() - t0)
                peak = max(peak, m.status("VmHWM"))
            finally:
                m.close()
        return statistics.median(times), peak

    log("nzfs cold, 1 reader ...")
    t_cold1, rss["cold, 1 reader"] = cold(lambda root: cat(chunk_files(root)))
    log("nzfs cold, 2 readers ...")
    t_cold2, rss["cold, 2 readers"] = cold(lambda root: cat_parallel([chunk_files(root)[i::2] for i in range(2)]))

    t_cold1_pt = t_warm_pt = None
    if os.geteuid() == 0 and Mount.passthrough != "always":
        log("nzfs cold, 1 reader, and warm re-read, with --passthrough always ...")
        default, Mount.passthrough = Mount.passthrough, "always"
        t_cold1_pt, rss["cold, 1 reader, passthrough"] = cold(lambda root: cat(chunk_files(root)))
        m = Mount(args.nzfs, store, mp, "--cache-size", f"{decoded // MIB + 64}MiB")
        try:
            files_pt = chunk_files(mp)
            cat(files_pt)
            t_warm_pt = median_time(lambda: cat(files_pt), args.repeat)
        finally:
            m.close()
            Mount.passthrough = default

    log("nzfs cold, 1 reader, Zarr v2 copy; zarr-python on it ...")
    warm_page_cache(chunk_objects_v2(store_v2))
    t_cold1_v2, rss["cold, v2 copy"] = cold(lambda root: cat(chunk_files(root)), store_v2)
    t_zarr_v2 = median_time(lambda: zarr.open_array(store_v2, path="field", mode="r")[...], args.repeat)

    log("nzfs warm re-read vs tmpfs (chunk files, then data.bin) ...")
    # Warm means the decoded data is held: a cache budget that fits it.
    warm_cache = f"{decoded // MIB + 64}MiB"
    m = Mount(args.nzfs, store, mp, "--cache-size", warm_cache)
    try:
        path_chunks = "passthrough" if m.passthrough_on() else "daemon"
        files = chunk_files(mp)
        cat(files)
        t_warm = median_time(lambda: cat(files), args.repeat)
        shm = "/dev/shm/nzfs-bench"
        shutil.rmtree(shm, ignore_errors=True)
        os.makedirs(shm)
        for f in files:
            shutil.copy(f, shm)
        shm_files = sorted(os.path.join(shm, f) for f in os.listdir(shm))
        t_tmpfs = median_time(lambda: cat(shm_files), args.repeat)
        shutil.rmtree(shm)
        rss["warm re-read"] = m.status("VmHWM")
    finally:
        m.close()
    m = Mount(args.nzfs, store, mp, "--cache-size", warm_cache)
    try:
        data_bin = os.path.join(mp, "field", "data.bin")
        cat([data_bin])
        t_warm_databin = median_time(lambda: cat([data_bin]), args.repeat)
        shm = "/dev/shm/nzfs-bench-data.bin"
        shutil.copy(data_bin, shm)
        t_tmpfs_databin = median_time(lambda: cat([shm]), args.repeat)
        os.remove(shm)
    finally:
        m.close()

    log("data.bin cold; netCDF4-python on the virtual file ...")
    import netCDF4
    nc_name = os.path.basename(store)[:-len(".zarr")] + ".nc"

    def read_netcdf(root):
        with netCDF4.Dataset(os.path.join(root, nc_name)) as ds:
            ds.set_auto_mask(False)
            ds.variables["field"][:]

    t_databin_cold, rss["data.bin cold"] = cold(lambda root: cat([os.path.join(root, "field", "data.bin")]))
    t_netcdf, rss["netCDF4 on .nc"] = cold(read_netcdf)

    def drop_caches():
        """Both sides start a random phase with the store's objects out of the
        page cache, so neither is measured against the other's warm cache."""
        subprocess.run(["sync"], check=True)
        try:
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3\n")
            return True
        except OSError:
            return False

    rng = random.Random(7)
    picks = []
    for _ in range(args.random_reads):
        # One aligned 4 KiB read: one 1024-float row of one shard.
        g = [rng.randrange(shape[0] // 16), 0, 0]
        t_in, y_in = rng.randrange(16), rng.randrange(1024)
        picks.append((g, (t_in * 1024 + y_in) * 4096, (g[0] * 16 + t_in, y_in)))
    width = len(str(shape[0] // 16 - 1))

    def shard_name(g):
        return f"{g[0]:0{width}d}.0.0.bin"

    def random_phase(array, legacy):
        """ops/s of nzfs and zarr-python, each from dropped caches. legacy:
        open, pread, close per read with no fadvise (what a legacy program
        does); else descriptors kept open with POSIX_FADV_RANDOM."""
        dropped = drop_caches()
        m = Mount(args.nzfs, store, mp, "--cache-size", args.cache_size)
        try:
            paths = [(os.path.join(mp, array, shard_name(g)), off) for g, off, _ in picks]
            usage = Usage(store)
            a = usage.snapshot()
            t = median_time(lambda: timed_preads(paths, legacy), 1)
            _, cores, disk, read = Usage.between(a, usage.snapshot())
            profile[array] = (f"; cores busy {cores:.2f} of {os.cpu_count()}, disk busy {100 * disk:.0f}%, "
                              f"{read / len(picks) / 1024:.0f} KiB read from it per read")
            rss[f"random, {array}"] = m.status("VmHWM")
        finally:
            m.close()
        drop_caches()
        za = zarr.open_array(store, path=array, mode="r")
        n = min(len(picks), 200)

        def zarr_reads():
            for _, _, (t_, y) in picks[:n]:
                za[t_, y, 0:1024]

        tz = median_time(zarr_reads, 1)
        return len(picks) / t, n / tz, dropped

    profile = {}
    log("random 4 KiB reads, square 64 KiB inner chunks, open/pread/close, no fadvise ...")
    sq_ops, sq_zarr, dropped = random_phase("square", True)
    log("random 4 KiB reads, 32 KiB-row inner chunks, FADV_RANDOM ...")
    row_ops, row_zarr, _ = random_phase("sharded", False)
    if not dropped:
        log("warning: cannot drop caches (not root): random reads measured with warm store objects")

    log("mount and ls of 10,000 arrays; ls of 1,000,000 chunks ...")
    mounts = []
    for _ in range(args.repeat):
        m = Mount(args.nzfs, many, mp)
        mounts.append(m.mount_seconds)
        t0 = time.perf_counter()
        n_listed = sum(len(os.listdir(os.path.join(mp, g))) for g in os.listdir(mp) if g.startswith("g"))
        t_ls_many = time.perf_counter() - t0
        rss["10,000 arrays"] = m.status("VmHWM")
        m.close()
    t_mount_many = statistics.median(mounts)
    m = Mount(args.nzfs, million, mp)
    try:
        before = m.status("VmRSS")
        t0 = time.perf_counter()
        n_chunks = int(subprocess.run(f"ls -f {mp}/big | wc -l", shell=True, check=True, capture_output=True,
                                      text=True).stdout)
        t_ls_million = time.perf_counter() - t0
        after = m.status("VmRSS")
        rss["1,000,000 chunks"] = m.status("VmHWM")
    finally:
        m.close()

    gbs = lambda t: decoded / t / 1e9
    budget = parse_size(args.cache_size)
    print(f"\nnzfs benchmark: {decoded / MIB:.0f} MiB float32 {shape}, 4 MiB zstd chunks; "
          f"{os.cpu_count()} cores; medians of {args.repeat}; zarr-python {zarr.__version__}, "
          f"tensorstore {getattr(ts, '__version__', '0.1.x')}; nzfs cache {args.cache_size} "
          f"(warm rows {warm_cache}); --passthrough {Mount.passthrough}\n")
    print("| figure | nzfs | peer | ratio | target | path |")
    print("|---|---|---|---|---|---|")

    def row(name, mine, peer, ratio, target, ok, path):
        print(f"| {name} | {mine} | {peer} | {ratio} | {target} {'met' if ok else 'NOT met'} | {path} |")

    daemon = "daemon"
    r1 = t_zarr / t_cold1
    row("cold, 1 reader vs zarr-python whole read", f"{gbs(t_cold1):.2f} GB/s", f"{gbs(t_zarr):.2f} GB/s",
        f"{r1:.2f}x", ">= 1.2x", r1 >= 1.2, path_chunks)
    r2 = t_ts / t_cold2
    row("cold, 2 readers vs tensorstore whole read", f"{gbs(t_cold2):.2f} GB/s", f"{gbs(t_ts):.2f} GB/s",
        f"{r2:.2f}x", ">= 1.2x", r2 >= 1.2, path_chunks)
    r3 = t_dec2 / t_cold2
    row("cold, 2 readers vs 2-core zstd decode limit", f"{gbs(t_cold2):.2f} GB/s",
        f"{gbs(t_dec2):.2f} GB/s (1 core {gbs(t_dec1):.2f})", f"{r3:.2f}x", ">= 0.8x", r3 >= 0.8, path_chunks)
    r1d = t_dec2 / t_cold1
    row("cold, 1 reader (store in page cache) vs 2-core zstd decode limit", f"{gbs(t_cold1):.2f} GB/s",
        f"{gbs(t_dec2):.2f} GB/s", f"{r1d:.2f}x", ">= 0.8x", r1d >= 0.8, path_chunks)
    rv2 = t_cold1 / t_cold1_v2
    row("cold, 1 reader, Zarr v2 copy (blosc lz4) vs the v3 store (zstd)", f"{gbs(t_cold1_v2):.2f} GB/s",
        f"{gbs(t_cold1):.2f} GB/s (zarr-python on v2: {gbs(t_zarr_v2):.2f})", f"{rv2:.2f}x", ">= 0.9x", rv2 >= 0.9,
        path_chunks)
    r4 = t_tmpfs / t_warm
    row("warm re-read vs tmpfs, chunk files", f"{gbs(t_warm):.2f} GB/s", f"{gbs(t_tmpfs):.2f} GB/s", f"{r4:.2f}x",
        ">= 0.9x", r4 >= 0.9, path_chunks)
    r4b = t_tmpfs_databin / t_warm_databin
    row("warm re-read vs tmpfs, data.bin", f"{gbs(t_warm_databin):.2f} GB/s", f"{gbs(t_tmpfs_databin):.2f} GB/s",
        f"{r4b:.2f}x", ">= 0.9x", r4b >= 0.9, daemon + " (kernel page cache)")
    r5 = sq_ops / sq_zarr
    row("random 4 KiB, 64 KiB square inner chunks, open/pread/close, no fadvise, vs zarr-python",
        f"{sq_ops:,.0f} op/s", f"{sq_zarr:,.0f} op/s", f"{r5:.1f}x", ">= 20x", r5 >= 20,
        daemon + " (shard file), store on disk" + profile["square"])
    r5b = row_ops / row_zarr
    row("random 4 KiB, 32 KiB-row inner chunks, FADV_RANDOM, vs zarr-python",
        f"{row_ops:,.0f} op/s", f"{row_zarr:,.0f} op/s", f"{r5b:.1f}x", ">= 30x", r5b >= 30,
        daemon + " (shard file), store on disk" + profile["sharded"])
    if t_cold1_pt is not None:
        rp = t_zarr / t_cold1_pt
        row("cold, 1 reader vs zarr-python whole read", f"{gbs(t_cold1_pt):.2f} GB/s", f"{gbs(t_zarr):.2f} GB/s",
            f"{rp:.2f}x", ">= 1.2x", rp >= 1.2, "passthrough (forced)")
        rw = t_tmpfs / t_warm_pt
        row("warm re-read vs tmpfs, chunk files", f"{gbs(t_warm_pt):.2f} GB/s", f"{gbs(t_tmpfs):.2f} GB/s",
            f"{rw:.2f}x", ">= 0.9x", rw >= 0.9, "passthrough (forced)")
    r7 = t_cold1 / t_databin_cold
    row("data.bin sequential cold vs chunk files", f"{gbs(t_databin_cold):.2f} GB/s",
        f"{gbs(t_cold1):.2f} GB/s", f"{r7:.2f}x", ">= 0.95x", r7 >= 0.95, daemon)
    r6 = t_zarr / t_netcdf
    row("netCDF4-python on the virtual .nc vs zarr-python", f"{gbs(t_netcdf):.2f} GB/s", f"{gbs(t_zarr):.2f} GB/s",
        f"{r6:.2f}x", ">= 0.8x", r6 >= 0.8, daemon)
    peak = max(v for k, v in rss.items() if k not in ("warm re-read",))
    row("peak RSS (cold and random rows)", f"{peak / MIB:.0f} MiB", f"cache {budget / MIB:.0f} MiB",
        f"+{(peak - budget) / MIB:.0f} MiB", "<= cache + 64 MiB", peak <= budget + 64 * MIB, "")
    row("mount of 10,000 arrays (consolidated)", f"{t_mount_many:.3f} s", f"ls {t_ls_many:.3f} s "
        f"({n_listed} entries)", "", "< 1 s", t_mount_many < 1, "")
    for r in hierarchy_rows(args, work, mp):
        row(*r)
    row("ls of a 1,000,000-chunk array", f"{t_ls_million:.2f} s ({n_chunks - 2} names)",
        f"RSS {before / MIB:.1f} -> {after / MIB:.1f} MiB", "", "streams, flat memory",
        after - before < 16 * MIB, "")
    print("\ndaemon peak RSS (VmHWM): " + ", ".join(f"{k} {v / MIB:.0f} MiB" for k, v in rss.items()))
    print("(passthrough backing files are memfds: kernel memory, not in the daemon's RSS; the pool keeps them "
          "and the decoded cache within --cache-size together)")


def drop_page_cache():
    """Empty the kernel page cache (root only): the next read of the store
    comes off the disk, as a user's data does the first time."""
    subprocess.run(["sync"], check=True)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")


class Usage:
    """How busy the cores and the store's disk were over a stretch of time,
    from /proc/stat and /proc/diskstats (the disk's io_ticks: time with at
    least one request in flight), and how many bytes the disk read."""

    def __init__(self, path):
        dev = os.stat(path).st_dev
        self.dev = (os.major(dev), os.minor(dev))

    def snapshot(self):
        with open("/proc/stat") as f:
            cpu = [int(x) for x in f.readline().split()[1:]]
        busy = sum(cpu) - cpu[3] - cpu[4]  # all but idle and iowait
        disk = (0, 0)
        with open("/proc/diskstats") as f:
            for line in f:
                x = line.split()
                if (int(x[0]), int(x[1])) == self.dev:
                    disk = (int(x[5]) * 512, int(x[12]))
        return time.perf_counter(), busy / os.sysconf("SC_CLK_TCK"), disk

    @staticmethod
    def between(a, b):
        """(seconds, cores busy on average, disk busy fraction, bytes read)."""
        dt = b[0] - a[0]
        return dt, (b[1] - a[1]) / dt, (b[2][1] - a[2][1]) / 1000 / dt, b[2][0] - a[2][0]


def disk_rows(args, full_store, mp):
    """Issue #33's rows with the store on disk: the page cache is dropped
    before every timed pass of every contender (root only). The limit is
    max(reading the objects off the disk, 2-core zstd decode of them). They
    read a store holding only `field` (hard links to the bench store's), so
    its group's .nc holds that one variable."""
    import netCDF4
    store = full_store[:-len(".zarr")] + "-field.zarr"
    if not os.path.exists(os.path.join(store, "field", "zarr.json")):
        shutil.rmtree(store, ignore_errors=True)
        os.makedirs(store)
        root = json.load(open(os.path.join(full_store, "zarr.json")))
        root.pop("consolidated_metadata", None)
        with open(os.path.join(store, "zarr.json"), "w") as f:
            json.dump(root, f)
        subprocess.run(["cp", "-al", os.path.join(full_store, "field"), os.path.join(store, "field")], check=True)
    objects = chunk_objects(store, "field")
    stored = sum(os.path.getsize(o) for o in objects)
    meta = json.load(open(os.path.join(store, "field", "zarr.json")))
    decoded = int(np.prod(meta["shape"])) * 4

    def on_disk(fn):
        times = []
        for _ in range(args.repeat):
            drop_page_cache()
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return statistics.median(times)

    usage = Usage(store)
    usages = {}

    def mounted(read, name=None):
        # A fresh mount each pass (it reads metadata only), then the page
        # cache dropped: the timed read finds the daemon running and the
        # chunk objects on the disk.
        times = []
        for _ in range(args.repeat):
            m = Mount(args.nzfs, store, mp, "--cache-size", args.cache_size)
            try:
                drop_page_cache()
                a = usage.snapshot()
                read(mp)
                u = Usage.between(a, usage.snapshot())
                times.append(u[0])
                if name:
                    usages.setdefault(name, []).append(u)
            finally:
                m.close()
        return statistics.median(times)

    def chunk_files(root):
        d = os.path.join(root, "field")
        return sorted(os.path.join(d, f) for f in os.listdir(d) if f != "data.bin" and f.endswith(".bin"))

    nc_name = os.path.basename(store)[:-len(".zarr")] + ".nc"

    def read_netcdf(root):
        # netCDF4-python (netCDF-C, and numpy's byte swap) on the .nc.
        with netCDF4.Dataset(os.path.join(root, nc_name)) as ds:
            ds.set_auto_mask(False)
            ds.variables["field"][:]

    def read_nc_like_netcdf_c(root):
        # The .nc's bytes as netCDF-C's POSIX layer reads them: sequential
        # pread()s of st_blksize bytes, from the first variable's data to
        # the end of `field` (the first variable in the bench store).
        path = os.path.join(root, nc_name)
        fd = os.open(path, os.O_RDONLY)
        try:
            block = os.fstat(fd).st_blksize
            # `field` is the file's one variable: its data ends the file.
            end = os.fstat(fd).st_size
            off = end - decoded
            while off < end:
                got = os.pread(fd, min(block, end - off), off)
                if not got:
                    break
                off += len(got)
        finally:
            os.close(fd)

    log("store on disk: reading the objects (2 readers) ...")
    t_disk = on_disk(lambda: cat_parallel([objects[0::2], objects[1::2]]))
    log("2-core zstd decode (objects in the page cache) ...")
    warm_page_cache(objects)
    with multiprocessing.Pool(2) as pool:
        t_dec2 = median_time(lambda: pool.map(decode_files, [objects[0::2], objects[1::2]]), args.repeat)
    log("tensorstore and zarr-python whole reads from disk ...")
    spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": os.path.join(store, "field")}}
    t_ts = on_disk(lambda: ts.open(spec).result().read().result())
    t_zarr = on_disk(lambda: zarr.open_array(store, path="field", mode="r")[...])
    log("nzfs from disk: chunk files (2 readers), data.bin, the .nc ...")
    t_chunks = mounted(lambda root: cat_parallel([chunk_files(root)[0::2], chunk_files(root)[1::2]]), "chunks2")
    t_chunks1 = mounted(lambda root: cat(chunk_files(root)), "chunks1")
    t_databin = mounted(lambda root: cat([os.path.join(root, "field", "data.bin")]), "data.bin")
    t_nc = mounted(read_nc_like_netcdf_c, "nc")
    t_nc4 = mounted(read_netcdf)
    # Where the time went: both cores busy means CPU-bound; the disk busy
    # for a small part of the pass means it was not the limit.
    def busy(name):
        us = usages[name]
        med = lambda i: statistics.median(u[i] for u in us)  # noqa: E731
        return (f"; cores busy {med(1):.2f} of {os.cpu_count()}, disk busy {100 * med(2):.0f}% of the pass, "
                f"{med(3) / MIB:.0f} MiB read ({stored / MIB:.0f} MiB stored)")
    gbs = lambda t: decoded / t / 1e9
    limit = max(t_disk, t_dec2)
    path = "daemon; store on disk, page cache dropped before every pass"
    rows = []
    r = limit / t_chunks
    rows.append(("chunk files, 2 readers vs max(disk read, 2-core decode)", f"{gbs(t_chunks):.2f} GB/s",
                 f"disk {gbs(t_disk):.2f}, decode {gbs(t_dec2):.2f} GB/s", f"{r:.2f}x", ">= 0.85x", r >= 0.85, path + busy("chunks2")))
    r = t_ts / t_chunks
    rows.append(("chunk files, 2 readers vs tensorstore", f"{gbs(t_chunks):.2f} GB/s", f"{gbs(t_ts):.2f} GB/s",
                 f"{r:.2f}x", ">= 1.3x", r >= 1.3, path))
    r = t_zarr / t_chunks1
    rows.append(("chunk files, 1 reader vs zarr-python", f"{gbs(t_chunks1):.2f} GB/s", f"{gbs(t_zarr):.2f} GB/s",
                 f"{r:.2f}x", "", True, path + busy("chunks1")))
    r = t_chunks / t_databin
    rows.append(("data.bin, 1 reader vs chunk files, 2 readers", f"{gbs(t_databin):.2f} GB/s",
                 f"{gbs(t_chunks):.2f} GB/s", f"{r:.2f}x", ">= 0.95x", r >= 0.95, path + busy("data.bin")))
    r = t_chunks / t_nc
    rows.append(("the .nc, netCDF-C's way (sequential st_blksize preads) vs chunk files, 2 readers",
                 f"{gbs(t_nc):.2f} GB/s", f"{gbs(t_chunks):.2f} GB/s", f"{r:.2f}x", ">= 0.95x", r >= 0.95,
                 path + busy("nc")))
    r = t_chunks / t_nc4
    rows.append(("netCDF4-python reading the variable from the .nc vs chunk files, 2 readers",
                 f"{gbs(t_nc4):.2f} GB/s", f"{gbs(t_chunks):.2f} GB/s", f"{r:.2f}x", "", True,
                 path + "; includes netCDF-C's byte swap into numpy"))
    return rows


def print_table(rows):
    print("| figure | nzfs | peer | ratio | target | path |")
    print("|---|---|---|---|---|---|")
    for name, mine, peer, ratio, target, ok, path in rows:
        verdict = ("met" if ok else "NOT met") if target else ""
        print(f"| {name} | {mine} | {peer} | {ratio} | {target} {verdict} | {path} |")


def print_hierarchy_rows(rows, args):
    print(f"\nnzfs benchmark, large hierarchies; {os.cpu_count()} cores; medians of {args.repeat}; "
          f"zarr-python {zarr.__version__}; store files in the page cache\n")
    print("| figure | nzfs | peer | ratio | target | notes |")
    print("|---|---|---|---|---|---|")
    for name, mine, peer, ratio, target, ok, path in rows:
        print(f"| {name} | {mine} | {peer} | {ratio} | {target} {'met' if ok else 'NOT met'} | {path} |")


def parse_size(text):
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    for u, f in units.items():
        if text.endswith(u):
            return int(float(text[:-len(u)]) * f)
    return int(text)


if __name__ == "__main__":
    main()

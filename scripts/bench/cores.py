"""nzfs on many cores: one run, every figure a GB/s and a ratio to
tensorstore's whole-array read of the same store in the same run.

Usage (root, for mounts and for dropping the page cache):
    python3 scripts/bench cores --nzfs target/release/nzfs [--nzfs OTHER ...]
        [--size-mib 2048] [--repeat 3] [--workdir /tmp/nzfs-cores]
        [--zarrs PATH/zarrs_benchmark_read_sync] [--no-disk] [--ra-kb 1024,4096]
        [--max-read-kb 128]
    taskset -c 0,1 python3 scripts/bench cores ...   # pinned to 2 cores

Needs numpy and tensorstore only (tensorstore writes the store); netCDF4
(netCDF-C) for the .nc row, and zarrs' zarrs_benchmark_read_sync where
given. The store: a float32 Zarr v3 array of --size-mib with 4 MiB zstd
chunks (a smooth field plus noise), and the same array with no codec, so
that the FUSE path shows apart from decoding. Every nzfs pass gets a fresh
mount with default flags. "page cache": the store's objects are in the page
cache; "disk": the page cache is dropped before every pass. Readers are
processes reading 1 MiB at a time; N is the CPU count this process sees
(its affinity mask), as nzfs sizes itself. One more data.bin reader opens
it with O_DIRECT: past the kernel page cache, as a program that reads each
byte once may choose. Each --nzfs binary is measured in the same run, so
that two builds compare on one machine.

Each nzfs row also gives what it cost: the readers' CPU seconds (user and
kernel, the page cache's filling and copying included) and the daemon's, per
GB read, and the throughput those costs allow on N CPUs if nothing waited
(readers' share on at most as many CPUs as there are readers, all of it on
N). Measured on a few cores, these per-GB costs predict the ceiling on
many. The .nc row has its own ceiling beside it: netCDF-C reading the same
.nc as a plain file in the page cache.
"""

import argparse
import json
import mmap
import multiprocessing
import os
import shutil
import statistics
import subprocess
import time

import numpy as np
import tensorstore as ts

from common import MIB, Mounted, drop_page_cache, log

REQ = MIB


def cpus_seen():
    n = len(os.sched_getaffinity(0))
    why = f"{n} in the affinity mask"
    try:
        rel = open("/proc/self/cgroup").read().split("::", 1)[1].strip()
        q, p = open(f"/sys/fs/cgroup/{rel}/cpu.max").read().split()
        if q != "max":
            why += f", cgroup quota {int(q) / int(p):.2f}"
    except (OSError, IndexError, ValueError):
        pass
    return n, why


# --- the store --------------------------------------------------------------------

def write_store(path, size_mib, zstd):
    steps = max(4, size_mib // 4)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    with open(os.path.join(path, "zarr.json"), "w") as f:
        json.dump({"zarr_format": 3, "node_type": "group", "attributes": {}}, f)
    codecs = [{"name": "bytes", "configuration": {"endian": "little"}}]
    if zstd:
        codecs.append({"name": "zstd", "configuration": {"level": 3, "checksum": False}})
    arr = ts.open({
        "driver": "zarr3",
        "kvstore": {"driver": "file", "path": os.path.join(path, "field")},
        "metadata": {
            "shape": [steps, 1024, 1024],
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1, 1024, 1024]}},
            "chunk_key_encoding": {"name": "default"},
            "data_type": "float32", "codecs": codecs, "fill_value": 0,
            "dimension_names": ["time", "y", "x"],
        },
        "create": True, "delete_existing": True,
    }).result()
    y, x = np.meshgrid(np.arange(1024, dtype="float32"), np.arange(1024, dtype="float32"), indexing="ij")
    base = 280 + 10 * np.sin(x / 97) * np.cos(y / 131)
    rng = np.random.default_rng(1)
    for t0 in range(0, steps, 16):
        t1 = min(steps, t0 + 16)
        block = base[None] + rng.normal(0, 0.5, (t1 - t0, 1024, 1024)).astype("float32")
        block += np.arange(t0, t1, dtype="float32")[:, None, None] * 0.01
        arr[t0:t1].write(block.astype("float32")).result()
    return steps * 1024 * 1024 * 4


def objects(path):
    out = []
    for d, _, files in os.walk(os.path.join(path, "field", "c")):
        out += [os.path.join(d, f) for f in files]
    return sorted(out)


# --- readers ----------------------------------------------------------------------

def read_files(files):
    buf = bytearray(REQ)
    total = 0
    for f in files:
        fd = os.open(f, os.O_RDONLY)
        try:
            while n := os.readv(fd, [buf]):
                total += n
        finally:
            os.close(fd)
    return total


def read_range(path, start, end, flags=0):
    buf = mmap.mmap(-1, REQ)  # page-aligned, as O_DIRECT may want
    fd = os.open(path, os.O_RDONLY | flags)
    try:
        off = start
        while off < end:
            n = os.preadv(fd, [memoryview(buf)[:min(REQ, end - off)]], off)
            if n <= 0:
                break
            off += n
    finally:
        os.close(fd)


def _run(cpu, i, fn, a):
    fn(*a)
    t = os.times()  # this process's own, from its fork on
    cpu[i] = t.user + t.system


def parallel(jobs):
    """Run (fn, args) jobs in processes at once: (wall seconds, the CPU
    seconds the readers spent, their user and kernel time together)."""
    ctx = multiprocessing.get_context("fork")
    cpu = ctx.Array("d", len(jobs))
    procs = [ctx.Process(target=_run, args=(cpu, i, fn, a)) for i, (fn, a) in enumerate(jobs)]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise RuntimeError(f"a reader failed ({p.exitcode})")
    return time.perf_counter() - t0, sum(cpu)


def files_job(files, readers):
    return [(read_files, (files[i::readers],)) for i in range(readers)]


def ranges_job(path, size, readers, flags=0):
    step = -(-size // readers)
    step += -step % REQ
    return [(read_range, (path, i * step, min(size, (i + 1) * step), flags)) for i in range(readers) if i * step < size]


def read_nc(path):
    import netCDF4

    with netCDF4.Dataset(path) as ds:
        v = ds.variables["field"]
        v.set_auto_maskandscale(False)
        v[:]


# --- mounts -----------------------------------------------------------------------

def mount(nzfs, store, mp, ra_kb=None, mount_options=()):
    """A fresh mount with default flags (`mount_options`: -o options);
    `ra_kb` sets its readahead after the daemon's own setting."""
    m = Mounted(store, mp, nzfs, mount_options=list(mount_options))
    if ra_kb:
        time.sleep(0.3)
        dev = os.stat(mp).st_dev
        with open(f"/sys/class/bdi/{os.major(dev)}:{os.minor(dev)}/read_ahead_kb", "w") as f:
            f.write(str(ra_kb))
    return m


def drop_caches():
    assert drop_page_cache(), "dropping the page cache needs root"


def warm(files):
    read_files(files)


# --- main -------------------------------------------------------------------------

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--nzfs", action="append", required=True, help="an nzfs binary (repeat to compare builds)")
    ap.add_argument("--size-mib", type=int, default=2048)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--workdir", default="/tmp/nzfs-cores")
    ap.add_argument("--zarrs", help="zarrs_benchmark_read_sync, where available")
    ap.add_argument("--no-disk", action="store_true", help="skip the store-on-disk rows")
    ap.add_argument("--ra-kb", default="", help="also read data.bin with these readahead sizes (KiB, comma-separated)")
    ap.add_argument("--max-read-kb", default="",
                    help="also read data.bin of the store with no codec in requests of these sizes (KiB, comma-"
                         "separated; -o max_read): the same bytes in more requests, so the daemon's cost per "
                         "request shows against the 1 MiB row")
    ap.add_argument("--json", help="write the rows here too")
    args = ap.parse_args(argv)

    n, why = cpus_seen()
    print(f"CPUs seen: {n} ({why}); {os.cpu_count()} online; kernel {os.uname().release}", flush=True)
    work = os.path.abspath(args.workdir)
    os.makedirs(work, exist_ok=True)
    stores = {"zstd": os.path.join(work, "zstd.zarr"), "raw": os.path.join(work, "raw.zarr")}
    size = 0
    for name, path in stores.items():
        t0 = time.perf_counter()
        size = write_store(path, args.size_mib, name == "zstd")
        log(f"wrote {name} ({size / MIB:.0f} MiB decoded) in {time.perf_counter() - t0:.1f} s")
    mp = os.path.join(work, "mnt")
    rows = []
    ctx = ts.Context({"data_copy_concurrency": {"limit": n}})

    def median(fn, cold=False, store=None):
        times = []
        for _ in range(args.repeat):
            if cold:
                drop_caches()
            elif store:
                warm(objects(store))
            times.append(fn())
        return statistics.median(times)

    def ts_read(store):
        def once():
            arr = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": os.path.join(store, "field")}},
                          context=ctx).result()
            t0 = time.perf_counter()
            arr.read().result()
            return time.perf_counter() - t0
        return once

    def row(where, store, what, seconds, rss=None, label="", cost=None):
        gbs = size / seconds / 1e9
        r = {"where": where, "store": store, "what": what, "nzfs": label, "gb_s": gbs, "rss_mib": rss}
        note = f"  peak RSS {rss:.0f} MiB" if rss else ""
        if cost:
            # CPU seconds per GB read, the readers' and the daemon's; what
            # they allow on n CPUs if nothing ever waited: the readers'
            # share runs on at most `readers` CPUs, all of it on n.
            readers, reader_s, daemon_s = cost
            gb = size / 1e9
            r["reader_cpu_s_per_gb"], r["daemon_cpu_s_per_gb"] = reader_s / gb, daemon_s / gb
            r["cpu_bound_gb_s"] = gb / max(reader_s / min(readers, n), (reader_s + daemon_s) / n)
            note += (f"  CPU s/GB: readers {r['reader_cpu_s_per_gb']:.2f}, daemon {r['daemon_cpu_s_per_gb']:.2f}"
                     f" (CPU-bound at {r['cpu_bound_gb_s']:.2f} GB/s)")
        rows.append(r)
        log(f"  {where:10} {store:4} {label:8} {what:44} {gbs:6.2f} GB/s" + note)

    def mounted(nzfs, store, jobs, cold=False, ra_kb=None, options=()):
        """Median seconds of running the reader jobs `jobs(mount)`, a fresh
        mount each pass; the largest daemon peak RSS; (readers, median
        reader CPU seconds, median daemon CPU seconds)."""
        peaks, readers, reader_cpu, daemon_cpu = [], 0, [], []

        def once():
            if cold:
                drop_caches()
            m = mount(nzfs, store, mp, ra_kb, options)
            try:
                nonlocal readers
                todo = jobs(m)
                readers = len(todo)
                before = m.cpu_seconds()
                t, cpu = parallel(todo)
                reader_cpu.append(cpu)
                daemon_cpu.append(m.cpu_seconds() - before)
                peaks.append(m.memory("VmHWM") / MIB)
                return t
            finally:
                m.close()
        times = []
        for _ in range(args.repeat):
            if not cold:
                warm(objects(store))
            times.append(once())
        cost = (readers, statistics.median(reader_cpu), statistics.median(daemon_cpu))
        return statistics.median(times), max(peaks), cost

    def chunk_files(m):
        d = os.path.join(m.mp, "field")
        return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".bin") and f != "data.bin")

    # What each nzfs row runs: its reader jobs on a mount.
    data = lambda m: os.path.join(m.mp, "field", "data.bin")  # noqa: E731
    cases = {f"chunk files, {k} reader{'s' * (k > 1)}": (lambda k: lambda m: files_job(chunk_files(m), k))(k)
             for k in sorted({1, 4, n})}
    cases["data.bin, 1 reader"] = lambda m: ranges_job(data(m), size, 1)
    # The same reader past the kernel page cache: each read one request,
    # the daemon's reply copied straight into the reader's buffer.
    cases["data.bin, 1 reader, O_DIRECT"] = lambda m: ranges_job(data(m), size, 1, os.O_DIRECT)
    if n > 1:
        cases[f"data.bin, {n} range readers"] = lambda m: ranges_job(data(m), size, n)
    nc_file = lambda m: os.path.join(m.mp, next(f for f in os.listdir(m.mp) if f.endswith(".nc")))  # noqa: E731
    try:
        import netCDF4  # noqa: F401

        cases[".nc through netCDF-C, 1 reader"] = lambda m: [(read_nc, (nc_file(m),))]
    except ImportError:
        log("netCDF4 is not installed: no .nc row")

    for where in ["page cache"] + ([] if args.no_disk else ["disk"]):
        cold = where == "disk"
        for name, store in stores.items():
            if cold and name == "raw":
                continue
            log(f"{where}, {name}:")
            if cold:
                t = median(lambda: parallel(files_job(objects(store), n))[0], cold=True)
                row(where, name, f"the objects from disk, {n} readers (decoded-equivalent)", t)
            elif name == "raw":
                # What one buffered reader of a file in the page cache gets:
                # the ceiling of a single reader through any filesystem.
                t = median(lambda: parallel(files_job(objects(store), 1))[0], store=store)
                row(where, name, "the objects from the page cache, 1 reader", t)
                if ".nc through netCDF-C, 1 reader" in cases:
                    # netCDF-C's own speed: the same .nc as a plain file in
                    # the page cache, the ceiling of the .nc row.
                    plain = os.path.join(work, "plain.nc")
                    m = mount(args.nzfs[0], store, mp)
                    try:
                        shutil.copyfile(nc_file(m), plain)
                    finally:
                        m.close()
                    t = median(lambda: parallel([(read_nc, (plain,))])[0])
                    os.remove(plain)
                    row(where, name, "the .nc as a plain file, netCDF-C, 1 reader", t)
            t = median(ts_read(store), cold=cold, store=None if cold else store)
            row(where, name, "tensorstore read()", t, label="")
            if args.zarrs and not cold:
                def zarrs_once():
                    t0 = time.perf_counter()
                    subprocess.run([args.zarrs, os.path.join(store, "field")], check=True, capture_output=True)
                    return time.perf_counter() - t0
                row(where, name, "zarrs, chunk by chunk", median(zarrs_once, store=store))
            for binary in args.nzfs:
                label = os.path.basename(binary)
                for case, jobs in cases.items():
                    if (name == "raw" or cold) and case.startswith("chunk files") and case != f"chunk files, {n} reader{'s' * (n > 1)}":
                        continue
                    if cold and (".nc" in case or "O_DIRECT" in case):
                        continue
                    t, rss, cost = mounted(binary, store, jobs, cold=cold)
                    row(where, name, "nzfs " + case, t, rss, label, cost)
                if not cold and name == "zstd":
                    for ra in [int(x) for x in args.ra_kb.split(",") if x]:
                        t, rss, cost = mounted(binary, store, cases["data.bin, 1 reader"], ra_kb=ra)
                        row(where, name, f"nzfs data.bin, 1 reader, readahead {ra} KiB", t, rss, label, cost)
                if not cold and name == "raw":
                    for kb in [int(x) for x in args.max_read_kb.split(",") if x]:
                        t, rss, cost = mounted(binary, store, cases["data.bin, 1 reader"],
                                               options=(f"max_read={kb * 1024}",))
                        row(where, name, f"nzfs data.bin, 1 reader, {kb} KiB requests", t, rss, label, cost)

    # The table: ratios to tensorstore of the same store and place.
    print(f"\n{'where':10} {'store':5} {'nzfs':10} {'what':48} {'GB/s':>6} {'x ts':>6} {'RSS MiB':>8}"
          f" {'reader s/GB':>11} {'daemon s/GB':>11} {'CPU-bound':>9}")
    for r in rows:
        ref = next(x for x in rows if x["where"] == r["where"] and x["store"] == r["store"]
                   and x["what"] == "tensorstore read()")
        r["x_tensorstore"] = r["gb_s"] / ref["gb_s"]
        rss = f"{r['rss_mib']:8.0f}" if r["rss_mib"] else " " * 8
        cost = (f" {r['reader_cpu_s_per_gb']:11.2f} {r['daemon_cpu_s_per_gb']:11.2f} {r['cpu_bound_gb_s']:9.2f}"
                if "cpu_bound_gb_s" in r else "")
        print(f"{r['where']:10} {r['store']:5} {r['nzfs']:10} {r['what']:48} {r['gb_s']:6.2f} {r['x_tensorstore']:6.2f} {rss}{cost}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"cpus": n, "why": why, "size_bytes": size, "rows": rows}, f, indent=1)


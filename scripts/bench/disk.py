"""Rows with the store on disk: the page cache is dropped before every
timed pass of every contender (root only), and each nzfs row says where
its time went (cores busy, the disk busy, bytes read off it).

Usage: python3 scripts/bench disk [--size-mib 512] [--repeat 3] [--workdir DIR] [--nzfs BIN]
       [--cache-size 256MiB] [--passthrough never]
"""

import argparse
import multiprocessing
import os
import statistics
import sys
import time

import tensorstore as ts
import zarr

from common import (MIB, Mounted, Usage, cat, cat_parallel, chunk_files, chunk_objects, decode_files,
                    drop_page_cache, log, main_store_args, median_time, print_table, warm_page_cache)
from datasets import decoded_bytes, field_only, main_stores


def rows(args, full_store, mp):
    """The rows with the store on disk: the page cache is dropped
    before every timed pass of every contender (root only). The limit is
    max(reading the objects off the disk, 2-core zstd decode of them). They
    read a store holding only `field` (hard links to the bench store's), so
    its group's .nc holds that one variable."""
    import netCDF4
    store = field_only(full_store)
    objects = chunk_objects(store, "field")
    stored = sum(os.path.getsize(o) for o in objects)
    decoded, _ = decoded_bytes(store)

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
            with Mounted(store, mp, args.nzfs, cache_size=args.cache_size, passthrough=args.passthrough):
                drop_page_cache()
                a = usage.snapshot()
                read(mp)
                u = Usage.between(a, usage.snapshot())
                times.append(u[0])
                if name:
                    usages.setdefault(name, []).append(u)
        return statistics.median(times)

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


def main(argv=None):
    ap = argparse.ArgumentParser(prog="bench disk", description=__doc__.split("\n\n")[0])
    main_store_args(ap)
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        sys.exit("bench disk: dropping the page cache needs root")
    os.makedirs(args.workdir, exist_ok=True)
    store, _ = main_stores(args.workdir, args.size_mib)
    table = rows(args, store, os.path.join(args.workdir, "mnt"))
    decoded, shape = decoded_bytes(store)
    stored = sum(map(os.path.getsize, chunk_objects(store, "field")))
    print(f"\nnzfs benchmark, store on disk: {decoded / MIB:.0f} MiB float32 {shape}, 4 MiB zstd chunks "
          f"({stored / MIB:.0f} MiB stored); {os.cpu_count()} cores; medians of {args.repeat}; "
          f"zarr-python {zarr.__version__}; nzfs cache {args.cache_size}\n")
    print_table(table)

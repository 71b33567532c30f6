"""Hostile netCDF-4 (HDF5) files, made by netCDF4-python and h5py and then
damaged here: group graphs that are not trees (a hard link back to a
parent, to the root, a soft link to the root, one group under two names),
groups nested too deep or too many, an external link (which must not be
followed), a global heap that claims 2^60 bytes, and a chunk index whose
B-tree points back to its own root, claims 65535 entries, a chunk of 4 GiB
or one a PiB past the end, and a char variable of 9 MiB deflated into a
few KiB. Each file is a few KiB; the test that reads
them (tests/write_netcdf4.rs) writes each through a writable mount and
expects its close refused, the branch unchanged and the daemon alive.
Also a plain HDF5 file as h5py writes it (no dimension scales: datasets,
a group, attributes, a chunked gzip dataset), h5py/plain.h5, with what
numpy holds of each dataset in h5py/expected/PATH.bin, for the test that
closes it through a mount as NAME.h5.
Called by make_fixtures.py (`make_all(fx)`), or alone: `python
scripts/fixtures_hdf5.py OUT` writes OUT/hostile_hdf5/ and OUT/h5py/.
"""

import os
import shutil
import struct
import sys

import h5py
import netCDF4
import numpy as np

DIR = "hostile_hdf5"


def plain(path):
    """A netCDF-4 file of one variable and one group holding another."""
    d = netCDF4.Dataset(path, "w", format="NETCDF4")
    d.createDimension("x", 4)
    d.createVariable("v", "f4", ("x",))[:] = np.arange(4)
    d.createGroup("g").createVariable("w", "i4", ("x",))[:] = 1
    d.title = "hostile"
    d.close()


def linked(path, link):
    plain(path)
    with h5py.File(path, "a") as f:
        link(f)


def patched(src, path, at, raw):
    b = bytearray(open(src, "rb").read())
    b[at:at + len(raw)] = raw
    with open(path, "wb") as f:
        f.write(b)


def btree_nodes(b):
    """The v1 B-tree nodes of `b`: (offset, level) of each `TREE`."""
    at = [i for i in range(len(b) - 8) if b[i:i + 4] == b"TREE"]
    return [(i, b[i + 5]) for i in at]


def make(out):
    d = os.path.join(out, DIR)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    p = lambda name: os.path.join(d, name + ".nc")
    linked(p("cycle"), lambda f: f["g"].__setitem__("loop", f["g"]))
    linked(p("self_root"), lambda f: f.__setitem__("root", f["/"]))
    linked(p("soft_root"), lambda f: f["g"].__setitem__("up", h5py.SoftLink("/")))
    linked(p("twice"), lambda f: f.__setitem__("g2", f["g"]))
    ds = netCDF4.Dataset(p("deep"), "w")
    g = ds
    for i in range(40):
        g = g.createGroup(f"g{i}")
    ds.close()
    ds = netCDF4.Dataset(p("many"), "w")
    for i in range(1100):
        ds.createGroup(f"g{i}")
    ds.close()
    # Read as any other file, but its external link is not followed.
    linked(os.path.join(d, "external.nc.ok"),
           lambda f: f["g"].__setitem__("ext", h5py.ExternalLink("/etc/passwd", "/")))
    strings = os.path.join(d, "strings.tmp")
    ds = netCDF4.Dataset(strings, "w")
    ds.createDimension("x", 2)
    v = ds.createVariable("s", str, ("x",))
    v[0], v[1] = "abc", "de"
    ds.close()
    b = open(strings, "rb").read()
    patched(strings, p("huge_heap"), b.index(b"GCOL") + 8, struct.pack("<Q", 1 << 60))
    os.remove(strings)
    # 9 MiB of text deflated into a few KiB: a char variable is read
    # whole, at most 8 MiB.
    ds = netCDF4.Dataset(p("long_text"), "w")
    ds.createDimension("n", 9 << 10)
    ds.createDimension("len", 1 << 10)
    text = ds.createVariable("c", "S1", ("n", "len"), zlib=True, chunksizes=(1 << 10, 1 << 10))
    text[:] = np.full((9 << 10, 1 << 10), b"b", dtype="S1")
    ds.close()
    chunked = os.path.join(d, "chunked.tmp")
    ds = netCDF4.Dataset(chunked, "w")
    ds.createDimension("x", 1000)
    ds.createVariable("v", "f4", ("x",), chunksizes=(10,), zlib=True)[:] = np.arange(1000)
    ds.close()
    b = open(chunked, "rb").read()
    nodes = btree_nodes(b)
    root = max(nodes, key=lambda n: n[1])[0]
    leaf = min(nodes, key=lambda n: n[1])[0]
    # A node: signature, type, level, entries (2), siblings (2 x 8), then
    # keys and children; a rank-1 chunk key is a size (4), a filter mask
    # (4) and two offsets (8 each).
    key = 4 + 4 + 2 * 8
    patched(chunked, p("btree_cycle"), root + 24 + key, struct.pack("<Q", root))
    patched(chunked, p("btree_entries"), root + 6, struct.pack("<H", 65535))
    patched(chunked, p("chunk_huge"), leaf + 24, struct.pack("<I", 0xFFFFFFF0))
    patched(chunked, p("chunk_far"), leaf + 24 + key, struct.pack("<Q", 1 << 50))
    os.remove(chunked)


def make_plain(out):
    d = os.path.join(out, "h5py")
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "expected", "g"))
    values = {
        "a": np.arange(6, dtype="<i4").reshape(2, 3),
        "g/b": np.linspace(0, 1, 5),
        "c": np.arange(16, dtype="<f4").reshape(4, 4) / 4,
    }
    with h5py.File(os.path.join(d, "plain.h5"), "w", track_times=False) as f:
        f["a"] = values["a"]
        f["a"].attrs["units"] = "m"
        f.create_group("g")["b"] = values["g/b"]
        f.create_dataset("c", data=values["c"], chunks=(2, 2), compression="gzip")
        f.attrs["title"] = "written by h5py"
    for path, v in values.items():
        with open(os.path.join(d, "expected", path + ".bin"), "wb") as out_file:
            out_file.write(v.astype(v.dtype.newbyteorder("<")).tobytes())


def make_all(fx):
    make(fx.OUT)
    make_plain(fx.OUT)


if __name__ == "__main__":
    make(sys.argv[1])
    make_plain(sys.argv[1])

"""Icechunk fixtures (issue #18), written by icechunk-python (1.x on Python
3.11: the first on-disk format, spec version 1) with xarray and zarr-python.
Called by make_fixtures.py, whose helpers arrive as `fx`.

    OUT_DIR/icechunk/history/                      the repository
    OUT_DIR/expected/icechunk/<version>/<path>.bin every array of every version
    OUT_DIR/expected/icechunk.json                 what each version holds
    OUT_DIR/icechunk/virtual/                      virtual chunks into a netCDF file
    OUT_DIR/icechunk/virtual-src/temp.nc           that file (the test serves it from S3)

The history: three commits on main after the initial one (each changes
`temp` and adds an array), the tag v1 at the second, and a branch dev from
the second with a commit of its own. Snapshot ids and commit times are new
at every run, so the expected files name snapshots by commit message, which
is unique here, and nothing in expected/ depends on an id.

Every expected array is read back with zarr-python through icechunk's own
store at that version, never from nzfs."""

import json
import os
import shutil

import icechunk
import numpy as np
import xarray as xr
import zarr


def _commit(repo, branch, message, edit):
    session = repo.writable_session(branch)
    edit(session.store)
    return session.commit(message)


def _expected(fx, repo, version_dir, **version):
    """Read every array of one version with zarr-python, save it under
    expected/icechunk/<version_dir>/ and return the manifest's entries."""
    session = repo.readonly_session(**version)
    try:
        group = zarr.open_group(session.store, mode="r")
    except zarr.errors.GroupNotFoundError:
        return []  # the initial snapshot: an empty repository, no root group
    arrays = []
    for path, a in sorted(group.arrays()):
        data = np.asarray(a[...])
        rel = os.path.join("expected", "icechunk", version_dir, path + ".bin")
        full = os.path.join(fx.OUT, rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(fx.little(data))
        arrays.append({"path": path, "data_type": str(data.dtype), "shape": list(data.shape), "expected": rel})
    return arrays


def make_history(fx):
    path = os.path.join(fx.OUT, "icechunk", "history")
    shutil.rmtree(path, ignore_errors=True)
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(path))
    time = np.arange(4, dtype="i4")
    x = np.arange(6, dtype="f8") * 0.5

    def first(store):
        ds = xr.Dataset(
            {"temp": (("time", "x"), np.arange(24, dtype="f4").reshape(4, 6) + 270.0, {"units": "K"})},
            coords={"time": ("time", time, {"units": "days since 2026-01-01"}), "x": ("x", x, {"units": "m"})},
            attrs={"title": "icechunk history fixture"},
        )
        encoding = {"temp": {"chunks": (2, 3)}}
        ds.to_zarr(store, zarr_format=3, consolidated=False, mode="w", encoding=encoding)

    def second(store):
        g = zarr.open_group(store, mode="r+")
        g["temp"][0, :] = -1.0
        p = g.create_array("pressure", shape=(4,), chunks=(2,), dtype="i4", fill_value=0,
                           dimension_names=["time"], attributes={"units": "hPa"})
        p[:] = np.array([1000, 1001, 1002, 1003], dtype="i4")

    def third(store):
        g = zarr.open_group(store, mode="r+")
        g["temp"][3, :] = 300.5
        h = g.create_array("humidity", shape=(4, 6), chunks=(4, 3), dtype="u1", fill_value=255,
                           dimension_names=["time", "x"], attributes={"units": "percent"})
        h[:2, :] = np.arange(12, dtype="u1").reshape(2, 6)  # later chunks' rows stay fill

    def experiment(store):
        g = zarr.open_group(store, mode="r+")
        g["pressure"][:] = np.array([990, 991, 992, 993], dtype="i4")

    _commit(repo, "main", "first: temperature", first)
    second_id = _commit(repo, "main", "second: pressure added, first row set to -1", second)
    repo.create_tag("v1", second_id)
    repo.create_branch("dev", second_id)
    _commit(repo, "main", "third: humidity added, last row set to 300.5", third)
    _commit(repo, "dev", "dev: pressure lowered", experiment)

    versions = []
    for kind, names in [("branch", sorted(repo.list_branches())), ("tag", sorted(repo.list_tags()))]:
        for name in names:
            d = f"{kind}es/{name}" if kind == "branch" else f"tags/{name}"
            arrays = _expected(fx, repo, d, **{kind: name})
            versions.append({"dir": d, "kind": kind, "name": name, "arrays": arrays})
    seen = {}
    for branch in sorted(repo.list_branches()):
        for info in repo.ancestry(branch=branch):
            seen.setdefault(info.id, info)
    snapshots = []
    for info in sorted(seen.values(), key=lambda i: i.written_at, reverse=True):
        d = "snapshots/" + info.message.split(":")[0].replace(" ", "-")
        arrays = _expected(fx, repo, d, snapshot_id=info.id)
        snapshots.append({"message": info.message, "expected_dir": d, "arrays": arrays})
    return {"repo": "icechunk/history", "spec_version": 1, "versions": versions, "snapshots": snapshots}


VIRTUAL_PREFIX = "s3://nzfs-virtual/"
VIRTUAL_FILE = VIRTUAL_PREFIX + "nc/temp.nc"


def make_virtual(fx):
    """A repository whose arrays `temp` and `stale` hold no chunk bytes:
    each chunk is a reference to a byte range of a netCDF-3 file that the
    tests serve from moto's S3 at VIRTUAL_FILE. `stale`'s references record
    a last-modified time long before any upload, so a reader must refuse
    them as changed. `native` is an ordinary array beside them.

    The expected `temp` is netCDF4-python's read of the file itself, the
    independent decoder here; `native` is zarr-python's read through
    icechunk."""
    import datetime

    import netCDF4

    src_dir = os.path.join(fx.OUT, "icechunk", "virtual-src")
    os.makedirs(src_dir, exist_ok=True)
    nc_path = os.path.join(src_dir, "temp.nc")
    temp = (np.arange(24, dtype="f4").reshape(4, 6) - 10.0) * 1.5
    with netCDF4.Dataset(nc_path, "w", format="NETCDF3_CLASSIC") as nc:
        nc.createDimension("time", 4)
        nc.createDimension("x", 6)
        v = nc.createVariable("temp", "f4", ("time", "x"))
        v[:] = temp
    # The only variable, with no record dimension: its big-endian values
    # are the file's last 96 bytes.
    size = os.path.getsize(nc_path)
    begin = size - temp.nbytes
    with open(nc_path, "rb") as f:
        f.seek(begin)
        assert np.array_equal(np.frombuffer(f.read(), dtype=">f4").reshape(4, 6), temp)
    with netCDF4.Dataset(nc_path) as nc:
        from_nc = np.asarray(nc["temp"][:])

    path = os.path.join(fx.OUT, "icechunk", "virtual")
    shutil.rmtree(path, ignore_errors=True)
    config = icechunk.RepositoryConfig.default()
    # Declared the way a user on AWS would; the tests point reads at moto
    # with --store-option aws_endpoint=.
    config.set_virtual_chunk_container(
        icechunk.VirtualChunkContainer(VIRTUAL_PREFIX, icechunk.s3_store(region="us-east-1")))
    repo = icechunk.Repository.create(icechunk.local_filesystem_storage(path), config=config)
    session = repo.writable_session("main")
    store = session.store
    g = zarr.open_group(store, mode="w", attributes={"title": "icechunk virtual chunks fixture"})
    for name in ["temp", "stale"]:
        g.create_array(name, shape=(4, 6), chunks=(2, 6), dtype="f4", fill_value=0.0,
                       serializer=zarr.codecs.BytesCodec(endian="big"), compressors=None,
                       dimension_names=["time", "x"], attributes={"units": "K"})
    native = g.create_array("native", shape=(4,), chunks=(2,), dtype="i2", fill_value=0,
                            dimension_names=["time"])
    native[:] = np.array([7, -7, 70, -70], dtype="i2")
    long_ago = datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc)
    for row in range(2):
        offset, length = begin + row * 48, 48
        store.set_virtual_ref(f"temp/c/{row}/0", VIRTUAL_FILE, offset=offset, length=length)
        store.set_virtual_ref(f"stale/c/{row}/0", VIRTUAL_FILE, offset=offset, length=length, checksum=long_ago)
    session.commit("virtual: temp and stale refer into nc/temp.nc")

    arrays = []
    for name, data in [("native", np.asarray(zarr.open_group(repo.readonly_session(branch="main").store,
                                                             mode="r")["native"][...])),
                       ("temp", from_nc)]:
        rel = os.path.join("expected", "icechunk", "virtual", name + ".bin")
        full = os.path.join(fx.OUT, rel)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(fx.little(data))
        arrays.append({"path": name, "data_type": str(data.dtype), "shape": list(data.shape), "expected": rel})
    return {"repo": "icechunk/virtual", "spec_version": 1, "source": "icechunk/virtual-src/temp.nc",
            "virtual_prefix": VIRTUAL_PREFIX, "virtual_file": VIRTUAL_FILE, "arrays": arrays}


def make_all(fx):
    manifest = {
        "icechunk_python": icechunk.__version__,
        "repos": [make_history(fx)],
        "virtual": make_virtual(fx),
    }
    with open(os.path.join(fx.OUT, "expected", "icechunk.json"), "w") as f:
        json.dump(manifest, f, indent=1)

#!/usr/bin/env python3
"""The legacy-tool story, proven on the bundled sample store through a real
mount: Fortran direct access and dd/od on data.bin, a netCDF-C program, CDO,
NCO and GDAL on the virtual sample.nc, numpy.memmap, and ImageJ 1.x opening
t2m/data.tif as a stack. Every expected value
comes from zarr-python or xarray reading the store itself, never from nzfs.

Usage: python tests/legacy/run.py [path/to/nzfs]
Needs gfortran, gcc with libnetcdf-dev, cdo, nco, gdal-bin, imagej and xvfb
(scripts/setup.sh --test installs them) and the fixture venv (zarr, xarray, numpy). Prints one
line per check and 'legacy: N passed, 0 failed'; exits 1 on the first failure."""

import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import xarray as xr
import zarr

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from checks import Checks  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
NZFS = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target", "debug", "nzfs")
STORE = os.path.join(ROOT, "tests", "data", "sample.zarr")
CHECKS = Checks("legacy")
check = CHECKS.check


def run(*cmd, **kw):
    return CHECKS.run(*cmd, **kw).stdout


def bits(x):
    return int(np.array([x], "<f4").view("<i4")[0])


def gdal_reads(nc, ds, at, want, how):
    """gdalinfo and gdallocationinfo read t2m of `nc` as xarray does."""
    t, y, x = at
    nt, ny, nx = ds.t2m.shape
    sub = f'NETCDF:"{nc}":t2m'
    out = run("gdalinfo", sub)
    check(f"Size is {nx}, {ny}" in out, f"gdalinfo shows the raster size{how}", out)
    check(len(re.findall(r"^Band \d+ ", out, re.M)) == nt, f"gdalinfo shows one band per time step{how}", out)
    # GDAL shows north up: rows run from the last latitude when they ascend.
    lat = ds.lat.values
    row = ny - 1 - y if lat[-1] > lat[0] else y
    out = run("gdallocationinfo", "-valonly", "-b", str(t + 1), sub, str(x), str(row))
    check(np.isclose(float(out), want, rtol=1e-6), f"gdallocationinfo reads a band value{how}", f"{out!r} vs {want}")


IMAGEJ_MACRO = """
args = split(getArgument(), "|");
open(args[0]);
print("size " + getWidth() + " " + getHeight() + " " + nSlices + " bits " + bitDepth());
for (i = 1; i <= nSlices; i++) {
    setSlice(i);
    getStatistics(area, mean, min, max);
    print("slice " + i + " " + d2s(mean, 9) + " " + d2s(min, 9) + " " + d2s(max, 9));
}
if (args.length > 1) {
    run("Make Montage...", "columns=3 rows=2 scale=6 border=2");
    run("Enhance Contrast", "saturated=0.35");
    run("8-bit");
    saveAs("PNG", args[1]);
}
"""
OME_STORE = os.path.join(ROOT, "tests", "data", "ome", "ngff04.zarr")
# What ImageJ showed, kept for the README (copy it to docs/ when it changes).
IMAGEJ_PICTURE = os.path.join(ROOT, "target", "previews", "imagej-ngff04.png")


def imagej_stack(tif, values, picture=None):
    """Open `tif` in ImageJ 1.x (Debian's imagej, the jar itself in batch
    mode under a virtual display), saving a montage of it as `picture`
    when given. Returns ImageJ's `size W H SLICES bits B` line and, per
    slice, its mean, minimum and maximum, beside numpy's of `values`' planes
    (the last two dimensions), NaNs left out as ImageJ leaves them."""
    with tempfile.NamedTemporaryFile("w", suffix=".ijm") as macro:
        macro.write(IMAGEJ_MACRO)
        macro.flush()
        arg = tif if picture is None else f"{tif}|{picture}"
        out = run("xvfb-run", "-a", "java", "-jar", "/usr/share/java/ij.jar", "-batch", macro.name, arg)
    got = np.array([[float(v) for v in line.split()[2:]] for line in out.splitlines() if line.startswith("slice ")])
    planes = values.reshape(-1, values.shape[-2] * values.shape[-1]).astype("f8")
    want = np.stack([np.nanmean(planes, axis=1), np.nanmin(planes, axis=1), np.nanmax(planes, axis=1)], axis=1)
    return out, got, want


def imagej_reads_ome():
    """An OME-Zarr image (ome-zarr-py's NGFF 0.4, c/z/y/x uint16) through its
    level 0's data.tif in ImageJ: a 16-bit stack of c x z slices whose
    statistics are numpy's; the montage ImageJ makes of it is saved."""
    level = zarr.open_array(OME_STORE, path="s0", mode="r")[...]
    nc, nz, ny, nx = level.shape
    os.makedirs(os.path.dirname(IMAGEJ_PICTURE), exist_ok=True)
    mp = tempfile.mkdtemp(prefix="nzfs-legacy-ome.")
    run(NZFS, "mount", OME_STORE, mp)
    try:
        out, got, want = imagej_stack(os.path.join(mp, "s0", "data.tif"), level, IMAGEJ_PICTURE)
        # The image's OME-TIFF: ImageJ 1.x reads its main IFDs, level 0.
        ome_out, ome_got, _ = imagej_stack(os.path.join(mp, "ngff04.ome.tif"), level)
    finally:
        subprocess.run([NZFS, "unmount", mp])
        os.rmdir(mp)
    check(f"size {nx} {ny} {nc * nz} bits 16" in out, "ImageJ opens an OME-Zarr level's data.tif as a 16-bit stack", out)
    check(got.shape == want.shape and np.allclose(got, want, rtol=1e-9),
          "ImageJ's statistics of each c/z plane equal numpy's", f"{got} vs {want}")
    check(f"size {nx} {ny} {nc * nz} bits 16" in ome_out,
          "ImageJ opens the image's .ome.tif at level 0 as a 16-bit stack", ome_out)
    check(ome_got.shape == want.shape and np.allclose(ome_got, want, rtol=1e-9),
          "ImageJ's statistics of each plane of the .ome.tif equal numpy's", f"{ome_got} vs {want}")
    check(os.path.getsize(IMAGEJ_PICTURE) > 0, f"ImageJ's montage saved as {os.path.relpath(IMAGEJ_PICTURE, ROOT)}")


def imagej_reads(tif, t2m):
    """ImageJ opens t2m's data.tif as a stack of the array's planes: its
    size, type and each slice's mean, minimum and maximum are numpy's."""
    out, got, want = imagej_stack(tif, t2m)
    nt, ny, nx = t2m.shape
    check(f"size {nx} {ny} {nt} bits 32" in out, "ImageJ opens data.tif as a float32 stack of every time step", out)
    check(got.shape == want.shape and np.allclose(got, want, rtol=1e-6),
          "ImageJ's mean, min and max of each slice equal numpy's", f"{got} vs {want}")


def main():
    for tool in ["gfortran", "gcc", "nc-config", "cdo", "ncks", "gdalinfo", "gdallocationinfo", "dd", "od",
                 "xvfb-run", "java"]:
        check(shutil.which(tool) is not None, f"{tool} is installed")
    t2m = zarr.open_array(STORE, path="t2m", mode="r")[...]
    ds = xr.open_zarr(STORE, consolidated=False)
    nt, ny, nx = t2m.shape
    # A finite value away from the array's corners.
    t, y, x = next(i for i in np.ndindex(t2m.shape) if i >= (3, 6, 4) and np.isfinite(t2m[i]))
    want = t2m[t, y, x]
    build = tempfile.mkdtemp(prefix="nzfs-legacy-build.")
    mp = tempfile.mkdtemp(prefix="nzfs-legacy.")
    run(NZFS, "mount", STORE, mp)
    try:
        data = os.path.join(mp, "t2m", "data.bin")
        nc = os.path.join(mp, "sample.nc")

        # Fortran: direct-access record = one time step of data.bin.
        exe = os.path.join(build, "read_record")
        run("gfortran", "-O0", "-o", exe, os.path.join(HERE, "read_record.f90"))
        out = run(exe, data, str(nx), str(ny), str(t + 1), str(x + 1), str(y + 1)).split()
        check(int(out[0]) == bits(want), "Fortran direct access reads data.bin record", f"{out} vs {want}")

        # C with netCDF-C on the virtual .nc.
        exe = os.path.join(build, "nc_read")
        flags = run("nc-config", "--cflags").split() + run("nc-config", "--libs").split()
        run("gcc", "-O0", "-o", exe, os.path.join(HERE, "nc_read.c"), *flags)
        out = run(exe, nc, "t2m", str(t), str(y), str(x)).split()
        check(int(out[0]) == bits(want), "netCDF-C nc_get_vara_float on sample.nc", f"{out} vs {want}")

        # Shell: dd one float out of data.bin, od a chunk file.
        flat = (t * ny + y) * nx + x
        out = run("sh", "-c", f"dd if='{data}' bs=4 skip={flat} count=1 status=none | od -A n -t d4")
        check(int(out.split()[0]) == bits(want), "dd bs=4 skip=N count=1 on data.bin")
        out = run("od", "-A", "n", "-t", "d4", "-N", "28", os.path.join(mp, "t2m", "0.0.0.bin")).split()
        chunk0 = zarr.open_array(STORE, path="t2m", mode="r")[0, 0, 0:7]
        check([int(v) for v in out] == [bits(v) for v in chunk0], "od on a chunk file")

        # numpy.memmap of data.bin.
        mm = np.memmap(data, "<f4", mode="r", shape=t2m.shape)
        check(np.array_equal(mm, t2m, equal_nan=True), "numpy.memmap of data.bin equals zarr-python")
        del mm

        # CDO: dates and unweighted field means equal xarray's.
        out = run("cdo", "-s", "showdate", nc).split()
        want_dates = [str(d)[:10] for d in ds.time.values]
        check(out == want_dates, "cdo showdate equals xarray's decoded times", f"{out} vs {want_dates}")
        out = run("cdo", "-s", "sinfon", nc)
        check(re.search(r"F32\s*:\s*t2m\s*$", out, re.M) is not None, "cdo sinfon lists t2m as float32", out)
        check(f"points={nx * ny} ({nx}x{ny})" in out, "cdo sinfon shows the lon-lat grid", out)
        check(re.search(rf"time : {nt} steps", out) is not None, "cdo sinfon shows every time step", out)
        out = run("cdo", "-s", "outputf,%.9g", "-fldmean,weights=false", "-selname,t2m", nc).split()
        means = np.nanmean(ds.t2m.values.astype("f8"), axis=(1, 2))
        got = np.array([float(v) for v in out])
        check(np.allclose(got, means, rtol=1e-6), "cdo fldmean equals xarray's means", f"{got} vs {means}")

        # NCO: ncks -H with hyperslabs.
        out = run("ncks", "--trd", "-H", "-C", "-v", "t2m", "-d", f"time,{t}", "-d", f"lat,{y}", "-d", f"lon,{x}", nc)
        found = re.search(r"t2m\[\d+\]=(\S+)", out)
        value = float(found.group(1)) if found else float("nan")
        check(np.isclose(value, want, rtol=1e-5), "ncks -H -d reads one value", f"{out!r} vs {want}")

        imagej_reads(os.path.join(mp, "t2m", "data.tif"), t2m)
    finally:
        subprocess.run([NZFS, "unmount", mp])
        os.rmdir(mp)

    # GDAL 3.6 (Debian 12) does not open CDF-5 files, and the sample's .nc is
    # CDF-5 because its time is int64. A copy whose time zarr-python stores as
    # float64 gets a CDF-2 .nc (nzfs picks CDF-2 whenever the types fit).
    store2 = os.path.join(build, "sample_f8time.zarr")
    shutil.copytree(STORE, store2)
    root = zarr.open_group(store2, mode="r+")
    tv = root["time"][...].astype("f8")
    attrs = dict(root["time"].attrs)
    del root["time"]
    root.create_array("time", shape=tv.shape, dtype="f8", chunks=tv.shape, dimension_names=["time"], attributes=attrs)[...] = tv
    mp = tempfile.mkdtemp(prefix="nzfs-legacy.")
    run(NZFS, "mount", store2, mp)
    try:
        nc = os.path.join(mp, "sample_f8time.nc")
        with open(nc, "rb") as f:
            check(f.read(4) == b"CDF\x02", "a float64 time gives a CDF-2 .nc")
        gdal_reads(nc, ds, (t, y, x), want, "")
    finally:
        subprocess.run([NZFS, "unmount", mp])
        os.rmdir(mp)
        shutil.rmtree(build)

    # Or the store as it is, with --nc-format cdf2: its int64 time is left
    # out of a CDF-2 .nc (saying why), and GDAL 3.6 reads t2m from it.
    mp = tempfile.mkdtemp(prefix="nzfs-legacy.")
    run(NZFS, "mount", "--nc-format", "cdf2", STORE, mp)
    try:
        nc = os.path.join(mp, "sample.nc")
        with open(nc, "rb") as f:
            check(f.read(4) == b"CDF\x02", "--nc-format cdf2 gives a CDF-2 .nc")
        out = run("ncdump", "-h", nc)
        check("time: 64-bit integers" in out, "the .nc says why time is left out", out)
        gdal_reads(nc, ds, (t, y, x), want, " (--nc-format cdf2)")
    finally:
        subprocess.run([NZFS, "unmount", mp])
        os.rmdir(mp)
    imagej_reads_ome()
    CHECKS.done()


main()

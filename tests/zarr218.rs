//! What zarr-python 2.18 with numcodecs 0.15 writes and nzfs read wrong or
//! not at all (scripts/fixtures_zarr218.py): string arrays in `order: "F"`
//! (vlen-utf8 and vlen-bytes, 1-D and 2-D, `.` and `/` keys), `pcodec` as
//! the compressor, and lzma's raw format with each kind of filter chain
//! (and its xz and alone formats, for the class), and N5 blocks through
//! zarr-extensions' `n5_default`. Every array's
//! `data.bin` (numbers) or `data.txt` (strings, one value a line) is
//! compared with what zarr-python 2.18 read back.

mod common;

use std::path::{Path, PathBuf};

use common::mount::Mount;

fn zarr218() -> PathBuf {
    common::data_dir().join("zarr218")
}

/// `(array, expected file)` of every array of `store` the fixtures expect.
fn expected(store: &str) -> Vec<(String, PathBuf)> {
    let mut out: Vec<(String, PathBuf)> = std::fs::read_dir(zarr218().join("expected").join(store))
        .unwrap()
        .map(|e| e.unwrap().path())
        .map(|p| (p.file_stem().unwrap().to_str().unwrap().to_string(), p))
        .collect();
    out.sort();
    out
}

/// Each expected array of `store` reads in the mount at `mp` as zarr-python
/// 2.18 read it; returns how many were compared.
fn same_values(mp: &Path, store: &str) -> usize {
    let arrays = expected(store);
    for (array, file) in &arrays {
        let view = match file.extension().and_then(|x| x.to_str()) {
            Some("txt") => "data.txt",
            _ => "data.bin",
        };
        let got = std::fs::read(mp.join(array).join(view)).unwrap_or_else(|e| panic!("{store}/{array}/{view}: {e}"));
        assert!(
            got == std::fs::read(file).unwrap(),
            "{store}/{array}/{view} differs from zarr-python 2.18's read"
        );
        let header = std::fs::read_to_string(mp.join(array).join("header.cdl")).unwrap();
        assert!(header.contains("variables:"), "{store}/{array}/header.cdl: {header}");
    }
    arrays.len()
}

/// Old code: every one EIO, with no header.cdl (`.zarray: member order is
/// invalid: "F" with an object dtype`).
#[test]
fn string_arrays_in_fortran_order_read_as_zarr_python_reads_them() {
    let m = Mount::at(&zarr218().join("strings_f.zarr"), &[]);
    assert_eq!(same_values(&m.mp, "strings_f"), 4);
    // A chunk file holds its chunk's values in C order too.
    let chunk = std::fs::read_to_string(m.mp.join("utf8_2d/0.0.txt")).unwrap();
    assert_eq!(chunk, "a\nbb\nccc\ndddd\n\nff\n");
}

/// A store whose root is such an array mounts (old code: `nzfs mount`
/// exited 1).
#[test]
fn a_root_string_array_in_fortran_order_mounts() {
    let m = Mount::at(&zarr218().join("strings_f.zarr/bytes_2d"), &[]);
    let want = std::fs::read(zarr218().join("expected/strings_f/bytes_2d.txt")).unwrap();
    assert_eq!(std::fs::read(m.mp.join("data.txt")).unwrap(), want);
}

/// pcodec as a Zarr v2 compressor compresses the chunk as an array of its
/// type (numcodecs hands it the array), as numcodecs.pcodec does in v3.
/// Old code: EIO (`a second array -> bytes codec`), and the arrays were
/// left out of the `.nc`.
#[test]
fn pcodec_as_the_compressor_reads_and_is_in_the_nc() {
    let m = Mount::at(&zarr218().join("pcodec_v2.zarr"), &[]);
    assert_eq!(same_values(&m.mp, "pcodec_v2"), 4);
    let dump = common::netcdf_tools::ncdump(&["-h"], &m.mp.join("pcodec_v2.nc"));
    assert!(!dump.contains("_nz_omitted"), "{dump}");
    for v in ["f8", "f4", "i4", "u2"] {
        assert!(dump.contains(&format!(" {v}(")), "{v} is in the .nc: {dump}");
    }
}

/// Every lzma format numcodecs writes: raw streams with delta, BCJ (x86,
/// ARM, ARM-Thumb, PowerPC, SPARC), LZMA1 (default and custom lc/lp/pb)
/// and LZMA2 (up to preset 9e), and the xz and alone formats. Old code:
/// every raw chunk EIO (`range decoder first byte is not zero`).
#[test]
fn every_lzma_format_numcodecs_writes_reads() {
    let m = Mount::at(&zarr218().join("lzma_raw.zarr"), &[]);
    assert_eq!(same_values(&m.mp, "lzma_raw"), 9);
}

/// N5 arrays as zarr-python 2.18's N5Store writes them (gzip, raw and
/// blosc blocks, 2-D and 3-D, padded edge blocks), read through
/// zarr-extensions' `n5_default` codec: each `data.bin` is zarr-python's
/// read with its axes reversed (the Zarr array takes N5's axis order), and
/// the group's `.nc` holds all three. Old code: every array's values EIO
/// (`codec n5_default is not supported`).
#[test]
fn n5_blocks_read_through_n5_default_as_zarr_python_reads_them() {
    let m = Mount::at(&zarr218().join("n5.n5"), &[]);
    assert_eq!(same_values(&m.mp, "n5"), 3);
    let dump = common::netcdf_tools::ncdump(&["-h"], &m.mp.join("n5.n5.nc"));
    assert!(!dump.contains("_nz_omitted"), "{dump}");
}

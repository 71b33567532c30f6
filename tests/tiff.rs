//! `data.tif` through real mounts: GDAL's GTiff driver reads its pages as
//! the array's planes (byte for byte what `data.bin` holds, which the
//! corpus check compares with zarr-python through tifffile), a read of one
//! strip decodes only the chunks under it, and `--no-tiff` turns it off.

mod common;

use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::process::Command;

use common::image_tools::gdal_pixel;
use common::mount::Mount;
use nzfs::tiff::{Layout, Sample};

/// Page `page` (from 1) of the TIFF at `tif`, as GDAL reads it: raw samples
/// in the host's byte order (GDAL's ENVI writer).
fn gdal_page(tif: &Path, page: u64) -> Vec<u8> {
    let out = tempfile::tempdir().unwrap();
    let raw = out.path().join("page.raw");
    let r = Command::new("gdal_translate")
        .args(["-q", "-of", "ENVI"])
        .arg(format!("GTIFF_DIR:{page}:{}", tif.display()))
        .arg(&raw)
        .output()
        .expect("gdal_translate (scripts/setup.sh --test installs gdal-bin)");
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    std::fs::read(raw).unwrap()
}

#[test]
fn gdal_reads_each_page_as_a_plane_of_the_array() {
    let m = Mount::new("sample.zarr", &[]);
    let tif = m.mp.join("t2m/data.tif");
    let data = std::fs::read(m.mp.join("t2m/data.bin")).unwrap();
    // t2m is (time 10, lat 20, lon 14) float32: ten pages of 20 x 14.
    let plane = 20 * 14 * 4;
    let info = Command::new("gdalinfo").arg(&tif).output().unwrap();
    let info = String::from_utf8_lossy(&info.stdout);
    assert!(info.contains("Size is 14, 20"), "{info}");
    assert!(
        info.contains("SUBDATASET_10_NAME") && !info.contains("SUBDATASET_11_NAME"),
        "{info}"
    );
    for page in [1, 4, 10] {
        let at = (page as usize - 1) * plane;
        assert_eq!(gdal_page(&tif, page), data[at..at + plane], "page {page}");
    }
    // Every sample type, from stores of either byte order.
    let m = Mount::new("endian.zarr", &[]);
    let mut checked = 0;
    for d in std::fs::read_dir(&m.mp).unwrap().map(|e| e.unwrap().path()) {
        let tif = d.join("data.tif");
        if !tif.exists() {
            continue;
        }
        let mut data = std::fs::read(d.join("data.bin")).unwrap();
        if d.to_string_lossy().contains("float16") {
            // GDAL reads half floats as float32.
            data = data
                .chunks(2)
                .flat_map(|h| half::f16::from_ne_bytes([h[0], h[1]]).to_f32().to_ne_bytes())
                .collect();
        }
        let name = d.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with("int64") || name.starts_with("uint64") {
            // GDAL's ENVI writer has no 64-bit integers: ask its GTiff
            // reader for pixels instead.
            for (row, col) in [(0, 0), (2, 3), (5, 4)] {
                let at = (row * 5 + col) * 8;
                let bytes: [u8; 8] = data[at..at + 8].try_into().unwrap();
                let want = match name.starts_with("int64") {
                    true => i64::from_ne_bytes(bytes) as f64,
                    false => u64::from_ne_bytes(bytes) as f64,
                };
                let got = gdal_pixel(&tif, col, row);
                assert!(
                    (got - want).abs() <= want.abs() * 1e-14,
                    "{name} ({row}, {col}): {got} != {want}"
                );
            }
        } else {
            assert_eq!(gdal_page(&tif, 1), data, "{}", tif.display());
        }
        checked += 1;
    }
    // bool, int8 to int64, uint16 to uint64, float16 to float64, each big-
    // and little-endian in the store (complex values have no TIFF).
    assert_eq!(checked, 22);
}

#[test]
fn a_strip_read_decodes_only_the_chunks_under_it() {
    let m = Mount::new("sample.zarr", &["--no-prefetch"]);
    // t2m's chunks are (5, 10, 7): a strip is 10 rows of one page, which
    // lie in the two chunks of its band (chunk rows 10..20, both columns).
    let layout = Layout::of(&[10, 20, 14], (32, Sample::Float), 10).unwrap();
    let tif = m.mp.join("t2m/data.tif");
    assert_eq!(std::fs::metadata(&tif).unwrap().len(), layout.size);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(&tif)
        .unwrap();
    let decodes = || {
        m.status()
            .get("cache")
            .and_then(|c| c.get("decodes"))
            .and_then(|v| v.as_u64())
            .unwrap()
    };
    let before = decodes();
    // Page 6 (time 5), strip 2: rows 10..20.
    let row = 14 * 4;
    let at = strip_offsets(&tif)[5] + 10 * row;
    let mut strip = vec![0u8; 10 * row as usize];
    file.read_exact_at(&mut strip, at).unwrap();
    assert_eq!(decodes() - before, 2, "one strip decodes the two chunks under it");
    let data = std::fs::read(m.mp.join("t2m/data.bin")).unwrap();
    let from = (5 * 20 * row + 10 * row) as usize;
    assert_eq!(strip, data[from..from + strip.len()]);
}

#[test]
fn only_numeric_arrays_of_two_or_more_dimensions_have_one_and_no_tiff_hides_them() {
    let m = Mount::new("sample.zarr", &[]);
    assert!(m.mp.join("t2m/data.tif").exists());
    // 1-D coordinates: no image.
    assert!(!m.mp.join("time/data.tif").exists() && !m.mp.join("lat/data.tif").exists());
    let m = Mount::new("strings_v3.zarr", &[]);
    let files = common::servers::files(&m.mp);
    let tifs = files.iter().filter(|p| p.ends_with("data.tif")).count();
    let bins = files.iter().filter(|p| p.ends_with("data.bin")).count();
    assert!(
        bins > 0 && tifs < bins,
        "{tifs} data.tif for {bins} data.bin in a store of strings"
    );
    for flag in [&["--no-tiff"][..], &["-o", "no_tiff"][..]] {
        let m = Mount::new("sample.zarr", flag);
        assert!(m.mp.join("t2m/data.bin").exists());
        assert!(!m.mp.join("t2m/data.tif").exists(), "{flag:?}");
    }
}

#[test]
fn a_file_past_4_gib_is_a_bigtiff_that_gdal_reads_to_its_last_strip() {
    // 5 x 32768 x 32768 uint8 = 5 GiB, every chunk absent: the fill, 7.
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("big.zarr");
    std::fs::create_dir_all(store.join("img")).unwrap();
    std::fs::write(store.join("zarr.json"), r#"{"zarr_format": 3, "node_type": "group"}"#).unwrap();
    std::fs::write(
        store.join("img/zarr.json"),
        r#"{"zarr_format": 3, "node_type": "array", "shape": [5, 32768, 32768], "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1, 4096, 4096]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 7, "codecs": [{"name": "bytes"}]}"#,
    )
    .unwrap();
    let m = Mount::at(&store, &["--no-prefetch"]);
    let tif = m.mp.join("img/data.tif");
    let size = std::fs::metadata(&tif).unwrap().len();
    assert!(size > 5 << 30, "{size}");
    let mut magic = [0u8; 4];
    std::fs::File::open(&tif).unwrap().read_exact_at(&mut magic, 0).unwrap();
    assert_eq!(u16::from_ne_bytes([magic[2], magic[3]]), 43, "BigTIFF's version");
    let last = format!("GTIFF_DIR:5:{}", tif.display());
    assert_eq!(gdal_pixel(Path::new(&last), 32767, 32767), 7.0);
}

/// `data.tif` combines every chunk of its array, as `data.bin` does, so it
/// follows the same rule under `allow_other`: another user reads it when
/// every chunk object is readable, and is refused it when one is not.
#[test]
fn data_tif_denies_what_its_chunks_deny() {
    let users = common::users::Users::create();
    for restricted in [false, true] {
        let (_tmp, m) = common::users::mount_for_others("sample.zarr", restricted.then_some("t2m/c/1/1/0"));
        // Root reads it either way.
        assert!(std::fs::read(m.mp.join("t2m/data.tif")).is_ok());
        for f in ["t2m/data.bin", "t2m/data.tif"] {
            let out = common::users::cat_output(&users.other, &m.mp.join(f));
            match restricted {
                // One chunk object is root's alone: refused, as data.bin is.
                true => assert!(
                    !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("Permission denied"),
                    "{f}: {out:?}"
                ),
                // Every object readable: another user reads it whole.
                false => assert_eq!(out.stdout, std::fs::read(m.mp.join(f)).unwrap(), "{f}: {out:?}"),
            }
        }
    }
}

/// A changed chunk shows in `data.tif` on the next read after the
/// attribute timeout, as it does in `data.bin` (its mtime follows the
/// array's objects, and the kernel drops its stale pages).
#[test]
fn data_tif_shows_a_replaced_chunk() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s.zarr");
    common::copy_dir(&common::data_dir().join("sample.zarr"), &store);
    let m = Mount::at(&store, &[]);
    let tif = m.mp.join("t2m/data.tif");
    let before = std::fs::read(&tif).unwrap();
    std::fs::copy(store.join("t2m/c/1/1/1"), store.join("t2m/c/0/0/0")).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let after = std::fs::read(&tif).unwrap();
    let data = std::fs::read(m.mp.join("t2m/data.bin")).unwrap();
    assert_ne!(before, after, "data.tif still shows the old chunk");
    assert_eq!(
        pixels_of(&after, &strip_offsets(&tif), 20 * 14 * 4),
        data,
        "data.tif's pixels are data.bin's"
    );
}

/// Where each page's first strip starts, read from the IFD chain of the
/// classic TIFF at `tif` (`StripOffsets`: in its entry for one strip,
/// else in the table it points at).
fn strip_offsets(tif: &Path) -> Vec<u64> {
    // O_DIRECT: no readahead decodes the pixels meanwhile.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(tif)
        .unwrap();
    let u32_at = |at: u64| {
        let mut b = [0u8; 4];
        f.read_exact_at(&mut b, at).unwrap();
        u32::from_le_bytes(b)
    };
    let mut out = Vec::new();
    let mut ifd = u64::from(u32_at(4));
    while ifd != 0 {
        let n = u64::from(u32_at(ifd) & 0xffff);
        let entry = (0..n).map(|i| ifd + 2 + 12 * i).find(|&e| u32_at(e) & 0xffff == 273);
        let entry = entry.expect("StripOffsets");
        out.push(u64::from(match u32_at(entry + 4) {
            1 => u32_at(entry + 8),
            _ => u32_at(u64::from(u32_at(entry + 8))),
        }));
        ifd = u64::from(u32_at(ifd + 2 + 12 * n));
    }
    out
}

/// The pixels of `file` (a TIFF's bytes), `plane` bytes from each offset.
fn pixels_of(file: &[u8], offsets: &[u64], plane: usize) -> Vec<u8> {
    offsets
        .iter()
        .flat_map(|&o| file[o as usize..o as usize + plane].to_vec())
        .collect()
}

/// Planes smaller than a memory page, one chunk each, one chunk corrupt:
/// the planes beside it read through the page cache (the kernel reads
/// whole pages, and each plane starts on one), only the corrupt one is
/// EIO. Old code: the eight 512-byte planes shared one page, and every
/// one of them was EIO.
#[test]
fn a_corrupt_chunk_of_planes_smaller_than_a_page_hides_only_its_plane() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("small.zarr");
    std::fs::create_dir_all(store.join("a/c")).unwrap();
    std::fs::write(store.join("zarr.json"), r#"{"zarr_format":3,"node_type":"group"}"#).unwrap();
    std::fs::write(
        store.join("a/zarr.json"),
        r#"{"zarr_format":3,"node_type":"array","shape":[8,16,16],"data_type":"uint16","chunk_grid":{"name":"regular","configuration":{"chunk_shape":[1,16,16]}},"chunk_key_encoding":{"name":"default"},"fill_value":0,"codecs":[{"name":"bytes","configuration":{"endian":"little"}}]}"#,
    )
    .unwrap();
    let plane = |i: u16| -> Vec<u8> { (0..256u16).flat_map(|v| (i * 1000 + v).to_le_bytes()).collect() };
    for i in 0..8u16 {
        std::fs::create_dir_all(store.join(format!("a/c/{i}/0"))).unwrap();
        let bytes = if i == 3 { b"not 512 bytes".to_vec() } else { plane(i) };
        std::fs::write(store.join(format!("a/c/{i}/0/0")), bytes).unwrap();
    }
    let m = Mount::at(&store, &[]);
    let tif = m.mp.join("a/data.tif");
    let offsets = strip_offsets(&tif);
    assert_eq!(offsets.len(), 8);
    let f = std::fs::File::open(&tif).unwrap();
    // Planes read in an order that puts the corrupt one's neighbours
    // after it, and before it, in the page cache.
    for i in [3u16, 2, 4, 0, 7] {
        let mut got = vec![0u8; 512];
        match (i, f.read_exact_at(&mut got, offsets[usize::from(i)])) {
            (3, Err(e)) => assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}"),
            (3, Ok(())) => panic!("the corrupt chunk's plane read"),
            (_, Ok(())) => assert_eq!(got, plane(i), "plane {i}"),
            (_, Err(e)) => panic!("plane {i}, beside the corrupt chunk's: {e}"),
        }
    }
    assert!(m.log().contains("a/c/3/0/0"), "{}", m.log());
}

/// One corrupt chunk under the first pixels: the first read of the file,
/// which the kernel's readahead stretches over all of it, still answers the
/// header (it failed whole, so no reader could open the file); the file
/// keeps its size; the other pixels read; those of the corrupt chunk are
/// EIO, and the log names the chunk.
#[test]
fn a_corrupt_chunk_hides_only_its_own_pixels_of_data_tif() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("s.zarr");
    common::copy_dir(&common::data_dir().join("sample.zarr"), &store);
    std::fs::write(store.join("t2m/c/0/0/0"), b"not what the codecs wrote").unwrap();
    let m = Mount::at(&store, &[]);
    let tif = m.mp.join("t2m/data.tif");
    let layout = Layout::of(&[10, 20, 14], (32, Sample::Float), 10).unwrap();
    let f = std::fs::File::open(&tif).unwrap();
    let mut head = [0u8; 8];
    f.read_exact_at(&mut head, 0).expect("the header reads");
    assert_eq!(&head[..4], b"II*\0", "{head:?}");
    assert_eq!(
        std::fs::metadata(&tif).unwrap().len(),
        layout.size,
        "data.tif keeps its size after a read cut short"
    );
    let data = std::fs::File::open(m.mp.join("t2m/data.bin")).unwrap();
    let len = data.metadata().unwrap().len();
    let (mut want, mut got) = (vec![0u8; 400], vec![0u8; 400]);
    data.read_exact_at(&mut want, len - 400).unwrap();
    // The last page's last 400 bytes of pixels.
    let last = *strip_offsets(&tif).last().unwrap();
    f.read_exact_at(&mut got, last + 20 * 14 * 4 - 400)
        .expect("pixels of good chunks read after the short read");
    assert_eq!(got, want);
    let e = f
        .read_exact_at(&mut head, layout.prefix)
        .expect_err("the corrupt chunk's pixels");
    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
    let log = m.log();
    assert!(log.contains("t2m/c/0/0/0"), "{log}");
}

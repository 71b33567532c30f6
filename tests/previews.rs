//! Through real mounts: `preview.png` and `index.html` are sized
//! from metadata (listing and `stat` decode nothing, counted by `nzfs
//! status`), their `stat` size is their content's length, a preview of a
//! sharded array decodes only the inner chunks its sample points fall in,
//! a preview of row-wide chunks holds its pixels and not the rows, a
//! preview whose reader is killed stops, and `--no-previews` shows neither. (Their pixels are checked against
//! zarr-python's values by scripts/check_previews.py, and the page in
//! headless Chromium.)

mod common;

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use common::mount::{Mount, read_paths, vm_hwm};

/// A float64 array of `shape`, chunks one row wide, compressed by `codec`.
fn rows_array(store: &Path, name: &str, shape: [u64; 2], codec: &str) {
    let dir = store.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    let meta = format!(
        r#"{{"zarr_format": 3, "node_type": "array", "shape": [{}, {}], "data_type": "float64",
        "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [1, {}]}}}},
        "chunk_key_encoding": {{"name": "default"}}, "fill_value": 1.5,
        "codecs": [{{"name": "bytes", "configuration": {{"endian": "little"}}}}{codec}]}}"#,
        shape[0], shape[1], shape[1]
    );
    std::fs::write(dir.join("zarr.json"), meta).unwrap();
}

fn count(v: &nzfs::json::Value, path: &[&str]) -> u64 {
    path.iter()
        .fold(v, |v, k| v.get(k).unwrap_or_else(|| panic!("no {k} in {v}")))
        .as_u64()
        .unwrap()
}

read_paths!(previews_are_sized_from_metadata_and_read_as_stated);
fn previews_are_sized_from_metadata_and_read_as_stated() {
    for store in ["sample.zarr", "previews.zarr", "sharding.zarr", "dtypes.zarr"] {
        let m = Mount::new(store, &[]);
        let mut files = vec![m.mp.join("index.html")];
        for f in common::servers::files(&m.mp) {
            if f.file_name().is_some_and(|n| n == "preview.png") {
                files.push(f);
            }
        }
        let sizes: Vec<u64> = files.iter().map(|f| std::fs::metadata(f).unwrap().len()).collect();
        let s = m.status();
        assert_eq!(count(&s, &["chunks_decoded"]), 0, "{store}: stat decoded: {s}");
        assert_eq!(count(&s, &["previews", "rendered"]), 0, "{store}");
        for (f, size) in files.iter().zip(&sizes) {
            let bytes = std::fs::read(f).unwrap();
            assert_eq!(bytes.len() as u64, *size, "{}", f.display());
            if f.ends_with("preview.png") {
                assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
            }
        }
        let pngs = files.len() as u64 - 1;
        assert!(store != "previews.zarr" || pngs == 4, "{store}: {pngs} previews");
        assert_eq!(count(&m.status(), &["previews", "rendered"]), pngs, "{store}");
    }
}

read_paths!(a_sharded_preview_decodes_only_the_sampled_inner_chunks);
/// `strided` (4096 x 64 uint8, one shard of inner chunks 4 x 64) is
/// sampled every 8th row: its preview decodes every other inner chunk.
fn a_sharded_preview_decodes_only_the_sampled_inner_chunks() {
    let m = Mount::new("previews.zarr", &[]);
    let before = m.status();
    std::fs::read(m.mp.join("strided/preview.png")).unwrap();
    let after = m.status();
    let decoded = count(&after, &["chunks_decoded"]) - count(&before, &["chunks_decoded"]);
    // Independently: the inner chunks (rows / 4) that sampled rows (every
    // 8th: the long side 4096 over at most 512 pixels) fall in, one
    // column of inner chunks; plus the shard's index and the preview, each
    // held in the cache.
    let stride = 4096usize.div_ceil(512);
    let mut rows: Vec<usize> = (0..4096).step_by(stride).map(|r| r / 4).collect();
    rows.dedup();
    assert_eq!(rows.len(), 512);
    assert_eq!(decoded, rows.len() as u64 + 2, "{after}");
    // The whole array would be 1024 inner chunks.
    let data = std::fs::read(m.mp.join("strided/data.bin")).unwrap();
    let all = count(&m.status(), &["chunks_decoded"]) - count(&after, &["chunks_decoded"]);
    assert_eq!(data.len(), 4096 * 64);
    assert_eq!(all, 1024 - 512, "the rest of the inner chunks");
}

read_paths!(no_previews_hides_them);
fn no_previews_hides_them() {
    let m = Mount::new("previews.zarr", &["--no-previews"]);
    assert!(!m.mp.join("index.html").exists());
    assert!(!m.mp.join("field/preview.png").exists());
    let names: Vec<String> = std::fs::read_dir(m.mp.join("field"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(!names.iter().any(|n| n.ends_with(".png")), "{names:?}");
    assert_eq!(
        m.status().get("previews").unwrap().get("shown"),
        Some(&nzfs::json::Value::Bool(false))
    );
    // The same as a mount(8)/fstab option.
    let o = Mount::new("previews.zarr", &["-o", "no_previews"]);
    assert!(!o.mp.join("index.html").exists() && !o.mp.join("field/preview.png").exists());
    // A 1-D array has none, with previews on.
    let m = Mount::new("previews.zarr", &[]);
    assert!(!m.mp.join("lat/preview.png").exists());
    assert!(m.mp.join("field/preview.png").exists());
}

read_paths!(previews_of_row_wide_chunks_hold_their_pixels_not_the_rows);
/// Two `[512, 2^27]` float64 arrays with chunks one row wide (1 GiB each,
/// absent: the fill 1.5) and a `[2^27, 2^27]` one: their previews sample
/// 512 points a row, and each held its sampled rows whole (1 GiB a row,
/// outside the cache; the square one gave no byte in a minute). Rendered
/// at once under a 16 MiB cache, they hold their pixels only.
fn previews_of_row_wide_chunks_hold_their_pixels_not_the_rows() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("s.zarr");
    std::fs::create_dir_all(&s).unwrap();
    std::fs::write(s.join("zarr.json"), r#"{"zarr_format": 3, "node_type": "group"}"#).unwrap();
    for name in ["a", "b"] {
        rows_array(&s, name, [512, 1 << 27], "");
    }
    rows_array(&s, "square", [1 << 27, 1 << 27], "");
    let m = Mount::at(&s, &["--cache-size", "16M"]);
    let pngs: Vec<Vec<u8>> = std::thread::scope(|scope| {
        let reads: Vec<_> = ["a", "b", "square"]
            .iter()
            .map(|n| {
                let f = m.mp.join(n).join("preview.png");
                scope.spawn(move || std::fs::read(f).unwrap())
            })
            .collect();
        reads.into_iter().map(|t| t.join().unwrap()).collect()
    });
    for png in &pngs {
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    }
    let hwm = vm_hwm(m.daemon_pid());
    assert!(
        hwm < (16 << 20) + (64 << 20),
        "peak RSS {} MiB under a 16 MiB cache",
        hwm >> 20
    );
}

read_paths!(a_preview_stops_when_its_reader_is_killed);
/// A preview that decodes a 4 MiB chunk for each of its 512 rows (a
/// `[2^22, 2^19]` array sampled every 8192nd row and column) is started by
/// `cat`, which is killed: the render stops (no more chunks are decoded),
/// and the log says why. It went on for all 512 rows.
fn a_preview_stops_when_its_reader_is_killed() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("s.zarr");
    let (rows, row) = (1u64 << 22, 1u64 << 19);
    rows_array(
        &s,
        "",
        [rows, row],
        r#", {"name": "gzip", "configuration": {"level": 1}}"#,
    );
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&vec![0u8; (row * 8) as usize]).unwrap();
    let chunk = gz.finish().unwrap();
    std::fs::create_dir_all(s.join("c")).unwrap();
    for y in (0..rows).step_by(8192) {
        std::fs::create_dir_all(s.join(format!("c/{y}"))).unwrap();
        std::fs::write(s.join(format!("c/{y}/0")), &chunk).unwrap();
    }
    let m = Mount::at(&s, &["--cache-size", "64M"]);
    let decoded = || count(&m.status(), &["chunks_decoded"]);
    let mut cat = std::process::Command::new("cat")
        .arg(m.mp.join("preview.png"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    // The preview's own decode, then its rows' chunks: two rows under way.
    while decoded() < 3 {
        assert!(start.elapsed() < Duration::from_secs(60), "the preview never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    cat.kill().unwrap();
    cat.wait().unwrap();
    // The row being decoded when the reader died is finished first: a 4
    // MiB gzip chunk, most of a second in a debug build (whose zlib is not
    // optimized), and a 32 MiB one took more than 120 s on a busy CI
    // machine. So wait for the render to say it stopped, however long
    // that row takes.
    let start = Instant::now();
    loop {
        let log = m.log();
        if log.contains("stopped, its reader left") {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the render did not stop ({} chunks decoded): {log}",
            decoded()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let stopped = decoded();
    assert!(stopped < 512, "the whole preview was rendered ({stopped} chunks)");
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(decoded(), stopped, "chunks were decoded after the render stopped");
}

/// The RGBA pixels of a preview PNG that nzfs wrote (8-bit RGBA, filter
/// 0 on every row, as `preview::render` writes it), row by row.
fn png_rgba(png: &[u8]) -> (u32, Vec<[u8; 4]>) {
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    let (mut at, mut width, mut idat) = (8, 0u32, Vec::new());
    while at < png.len() {
        let len = u32::from_be_bytes(png[at..at + 4].try_into().unwrap()) as usize;
        let body = &png[at + 4..at + 8 + len];
        match &body[..4] {
            b"IHDR" => {
                width = u32::from_be_bytes(body[4..8].try_into().unwrap());
                assert_eq!(body[12..14], [8, 6], "8-bit RGBA");
            }
            b"IDAT" => idat.extend(&body[4..]),
            _ => {}
        }
        at += 12 + len;
    }
    let mut raw = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::ZlibDecoder::new(&idat[..]), &mut raw).unwrap();
    let row = 1 + 4 * width as usize;
    let mut out = Vec::new();
    for r in raw.chunks(row) {
        assert_eq!(r[0], 0, "filter type 0");
        out.extend(r[1..].chunks(4).map(|p| [p[0], p[1], p[2], p[3]]));
    }
    (width, out)
}

read_paths!(only_missing_values_are_transparent);
/// Real zeros are pixels, holes are holes: in a uint16 OME-Zarr image with
/// `fill_value` 0 (as ome-zarr writes it), a present chunk's 0 is opaque
/// and an absent chunk is transparent; in a plain Zarr v3 array, a value
/// equal to `fill_value` is shown unless `_FillValue` declares it, and a
/// `missing_value` is transparent. (Before, every value equal to the
/// fill was transparent, and an absent chunk of an image was drawn.)
fn only_missing_values_are_transparent() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("img.zarr");
    std::fs::create_dir_all(s.join("0/c/0")).unwrap();
    std::fs::write(
        s.join("zarr.json"),
        r#"{"zarr_format": 3, "node_type": "group", "attributes": {"ome": {"version": "0.5",
        "multiscales": [{"axes": [{"name": "y", "type": "space"}, {"name": "x", "type": "space"}],
        "datasets": [{"path": "0", "coordinateTransformations": [{"type": "scale", "scale": [1, 1]}]}]}]}}}"#,
    )
    .unwrap();
    let array = |dir: &std::path::Path, attrs: &str| {
        std::fs::write(
            dir.join("zarr.json"),
            format!(
                r#"{{"zarr_format": 3, "node_type": "array", "shape": [2, 4], "data_type": "uint16",
                "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [2, 2]}}}},
                "chunk_key_encoding": {{"name": "default"}}, "fill_value": 0,
                "codecs": [{{"name": "bytes", "configuration": {{"endian": "little"}}}}],
                "dimension_names": ["y", "x"], "attributes": {attrs}}}"#
            ),
        )
        .unwrap();
        // Chunk (0, 0) holds 0, 100, 200, 300; chunk (0, 1) is absent.
        let values: Vec<u8> = [0u16, 100, 200, 300].iter().flat_map(|v| v.to_le_bytes()).collect();
        std::fs::write(dir.join("c/0/0"), values).unwrap();
    };
    array(&s.join("0"), "{}");
    std::fs::create_dir_all(s.join("plain/c/0")).unwrap();
    array(&s.join("plain"), r#"{"missing_value": 300}"#);
    std::fs::create_dir_all(s.join("declared/c/0")).unwrap();
    array(&s.join("declared"), r#"{"_FillValue": 0}"#);
    let m = Mount::at(&s, &[]);
    let alpha = |array: &str| -> Vec<u8> {
        let (width, px) = png_rgba(&std::fs::read(m.mp.join(array).join("preview.png")).unwrap());
        // 2 x 4 values, scaled up by 64 (a long side of 256 pixels): one
        // pixel of each value's square.
        assert_eq!(width, 4 * 64);
        (0..2)
            .flat_map(|r| (0..4).map(move |c| (r * 64 * width + c * 64) as usize))
            .map(|i| px[i][3])
            .collect()
    };
    // Row 0 is 0, 100, then the absent chunk; row 1 is 200, 300, absent.
    assert_eq!(alpha("0"), [255, 255, 0, 0, 255, 255, 0, 0], "the image");
    assert_eq!(alpha("plain"), [255, 255, 0, 0, 255, 0, 0, 0], "missing_value 300");
    assert_eq!(alpha("declared"), [0, 255, 0, 0, 255, 255, 0, 0], "_FillValue 0");
}

read_paths!(the_index_gives_the_first_and_last_dates_of_time_coordinates);
/// `index.html` gives a CF time coordinate's first and last dates: day 0
/// and day 366 since 2000-01-01 (a leap year) are 2000-01-01 and
/// 2001-01-01, and hour 36 since 1970-01-01 is noon on the 2nd. A calendar
/// that proleptic Gregorian arithmetic would get wrong (`noleap`) shows
/// no date.
fn the_index_gives_the_first_and_last_dates_of_time_coordinates() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("t.zarr");
    std::fs::create_dir_all(&s).unwrap();
    std::fs::write(s.join("zarr.json"), r#"{"zarr_format": 3, "node_type": "group"}"#).unwrap();
    let time = |name: &str, values: &[i64], attrs: &str| {
        let dir = s.join(name);
        std::fs::create_dir_all(dir.join("c")).unwrap();
        std::fs::write(
            dir.join("zarr.json"),
            format!(
                r#"{{"zarr_format": 3, "node_type": "array", "shape": [{}], "data_type": "int64",
                "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [2]}}}},
                "chunk_key_encoding": {{"name": "default"}}, "fill_value": 0,
                "codecs": [{{"name": "bytes", "configuration": {{"endian": "little"}}}}],
                "dimension_names": ["{name}"], "attributes": {attrs}}}"#,
                values.len()
            ),
        )
        .unwrap();
        for (i, pair) in values.chunks(2).enumerate() {
            let mut bytes: Vec<u8> = pair.iter().flat_map(|v| v.to_le_bytes()).collect();
            bytes.resize(16, 0);
            std::fs::write(dir.join("c").join(i.to_string()), bytes).unwrap();
        }
    };
    time(
        "days",
        &[0, 100, 200, 366],
        r#"{"units": "days since 2000-01-01", "calendar": "standard"}"#,
    );
    time("hours", &[0, 36], r#"{"units": "hours since 1970-01-01 00:00:00"}"#);
    time(
        "model",
        &[0, 365],
        r#"{"units": "days since 2000-01-01", "calendar": "noleap"}"#,
    );
    let m = Mount::at(&s, &[]);
    let page = std::fs::read_to_string(m.mp.join("index.html")).unwrap();
    assert!(page.contains("from 2000-01-01 to 2001-01-01"), "{page}");
    assert!(page.contains("from 1970-01-01 to 1970-01-02 12:00:00"), "{page}");
    assert_eq!(page.matches("\">from ").count(), 2, "no dates for noleap: {page}");
    assert_eq!(
        std::fs::metadata(m.mp.join("index.html")).unwrap().len(),
        page.len() as u64
    );
}

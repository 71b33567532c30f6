//! The formats of 2026 through a real mount, against what
//! zarr-python 3.4 reads from the same store, or for zarr-extensions' `zfp`
//! (which zarr-python does not write) zfpy's decode of each chunk's stream
//! (scripts/fixtures_2026.py writes both: tests/data/formats_2026.zarr and
//! expected_2026/).

mod common;

use common::mount::Mount;
use nzfs::json::{Value, parse};

#[test]
fn the_2026_codecs_read_as_zarr_python_reads_them() {
    let expected = common::data_dir().join("expected_2026");
    let index = parse(&std::fs::read(expected.join("index.json")).unwrap()).unwrap();
    let Some(Value::Array(arrays)) = index.get("arrays") else {
        panic!("no arrays in index.json")
    };
    assert!(arrays.len() >= 10, "{} arrays", arrays.len());
    let m = Mount::new("formats_2026.zarr", &[]);
    // Arrays in a store of their own (a Zarr v2 one) say which.
    let mut others = std::collections::HashMap::new();
    for a in arrays {
        let path = a.get("path").and_then(Value::as_str).unwrap();
        let dtype = a.get("dtype").and_then(Value::as_str).unwrap();
        let item: usize = dtype[2..].parse().unwrap();
        let name = a.get("expected").and_then(Value::as_str).unwrap_or(path);
        let mut want = std::fs::read(expected.join(format!("{name}.bin"))).unwrap();
        let mp = match a.get("store").and_then(Value::as_str) {
            None => m.mp.clone(),
            Some(store) => others
                .entry(store.to_string())
                .or_insert_with(|| Mount::new(store, &[]))
                .mp
                .clone(),
        };
        if cfg!(target_endian = "big") {
            want.chunks_mut(item).for_each(<[u8]>::reverse);
        }
        let got = std::fs::read(mp.join(path).join("data.bin")).unwrap();
        assert_eq!(got.len(), want.len(), "{path}");
        // Bit for bit (NaN fills included).
        assert!(got == want, "{path}: data.bin differs from what zarr-python reads");
    }
}

/// Rectilinear grids: each chunk file is named by its grid
/// index and sized to its own chunk, and holds what zarr-python reads in
/// that chunk's span, padded with the fill where the chunk reaches past the
/// array (scripts/fixtures_2026.py writes those files from zarr-python's
/// values); data.bin is checked by the test above.
#[test]
fn rectilinear_chunk_files_are_each_their_own_chunk() {
    let expected = common::data_dir().join("expected_2026");
    let m = Mount::new("formats_2026.zarr", &[]);
    let mut checked = 0;
    for name in ["rect_int32", "rect_runs", "rect_overflow", "rect_sharded"] {
        let dir = expected.join(format!("{name}.chunks"));
        let mut want: Vec<(Vec<u64>, Vec<u8>)> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let stem = e.file_name().to_string_lossy().trim_end_matches(".bin").to_string();
                let index = stem.split('.').map(|p| p.parse().unwrap()).collect();
                (index, std::fs::read(e.path()).unwrap())
            })
            .collect();
        want.sort();
        let nd = want[0].0.len();
        let widths: Vec<usize> = (0..nd)
            .map(|d| want.iter().map(|(i, _)| i[d]).max().unwrap().to_string().len())
            .collect();
        let files: Vec<String> = std::fs::read_dir(m.mp.join(name))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|f| f.ends_with(".bin") && f != "data.bin")
            .collect();
        assert_eq!(files.len(), want.len(), "{name}: chunk files {files:?}");
        let item = match name {
            "rect_runs" => 1,
            "rect_overflow" => 8,
            _ => 4,
        };
        for (index, mut bytes) in want {
            if cfg!(target_endian = "big") {
                bytes.chunks_mut(item).for_each(<[u8]>::reverse);
            }
            let file = index
                .iter()
                .zip(&widths)
                .map(|(i, &w)| format!("{i:0w$}"))
                .collect::<Vec<_>>()
                .join(".");
            let path = m.mp.join(name).join(format!("{file}.bin"));
            let size = std::fs::metadata(&path).unwrap().len();
            assert_eq!(size, bytes.len() as u64, "{name}/{file}.bin: stat size");
            let got = std::fs::read(&path).unwrap();
            assert!(got == bytes, "{name}/{file}.bin differs from zarr-python's values");
            checked += 1;
        }
    }
    assert_eq!(checked, 6 + 26 + 6 + 4);
}

/// zarr-extensions' `packbits`. No library writes it
/// (zarr-python 3.4 has only numcodecs' filter of that name, tensorstore
/// 0.1.86 does not register it), so scripts/fixtures_2026.py packs the
/// chunks with numpy from the spec's text and writes the values decoding
/// must give (kept bits, sign-extended; one chunk absent) independently.
#[test]
fn packbits_arrays_decode_as_the_spec_says() {
    let expected = common::data_dir().join("expected_2026");
    let index = parse(&std::fs::read(expected.join("index.json")).unwrap()).unwrap();
    let Some(Value::Array(arrays)) = index.get("packbits") else {
        panic!("no packbits in index.json")
    };
    assert!(arrays.len() >= 7, "{} arrays", arrays.len());
    let m = Mount::new("packbits.zarr", &[]);
    for a in arrays {
        let path = a.get("path").and_then(Value::as_str).unwrap();
        let item = a.get("item").and_then(Value::as_u64).unwrap() as usize;
        let mut want = std::fs::read(expected.join("packbits").join(format!("{path}.bin"))).unwrap();
        if cfg!(target_endian = "big") {
            want.chunks_mut(item).for_each(<[u8]>::reverse);
        }
        let got = std::fs::read(m.mp.join(path).join("data.bin")).unwrap();
        assert!(got == want, "{path}: data.bin differs from the spec's decoding");
    }
}

//! The formats of 2026 (issue #30) through a real mount, against what
//! zarr-python 3.4 reads from the same store (scripts/fixtures_2026.py
//! writes both: tests/data/formats_2026.zarr and expected_2026/).

mod common;

use common::mount::Mount;
use nzfs::zarr::json::{Value, parse};

#[test]
fn the_2026_codecs_read_as_zarr_python_reads_them() {
    let expected = common::data_dir().join("expected_2026");
    let index = parse(&std::fs::read(expected.join("index.json")).unwrap()).unwrap();
    let Some(Value::Array(arrays)) = index.get("arrays") else {
        panic!("no arrays in index.json")
    };
    assert!(arrays.len() >= 10, "{} arrays", arrays.len());
    let m = Mount::new("formats_2026.zarr", &[]);
    for a in arrays {
        let path = a.get("path").and_then(Value::as_str).unwrap();
        let dtype = a.get("dtype").and_then(Value::as_str).unwrap();
        let item: usize = dtype[2..].parse().unwrap();
        let mut want = std::fs::read(expected.join(format!("{path}.bin"))).unwrap();
        if cfg!(target_endian = "big") {
            want.chunks_mut(item).for_each(<[u8]>::reverse);
        }
        let got = std::fs::read(m.mp.join(path).join("data.bin")).unwrap();
        assert_eq!(got.len(), want.len(), "{path}");
        // Bit for bit (NaN fills included).
        assert!(got == want, "{path}: data.bin differs from what zarr-python reads");
    }
}

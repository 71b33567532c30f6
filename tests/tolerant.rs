//! Stores that bend the spec the way real writers do, read as zarr-python
//! reads them (fixtures from scripts/fixtures_tolerant.py, expected values
//! from zarr-python): GDAL 3.6's blosc `"shuffle": "BIT"` and zarrita.js's
//! `"fill_value": null`, each with one log line that says what was
//! tolerated.

mod common;

use common::mount::Mount;

fn expected(store: &str, array: &str) -> Vec<u8> {
    let path = common::data_dir().join(format!("tolerant/expected/{store}/{array}.bin"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn gdal_36_blosc_shuffle_names_are_read() {
    let m = Mount::new("tolerant/gdal36.zarr", &[]);
    let data = std::fs::read(m.mp.join("gdal36/data.bin")).unwrap();
    let want = expected("gdal36.zarr", "gdal36");
    assert_eq!(data.len(), 6 * 5 * 2);
    // data.bin is in host order; the expected bytes are little-endian.
    assert_eq!(data, want);
    assert!(
        std::fs::read_to_string(m.mp.join("gdal36/header.cdl"))
            .unwrap()
            .contains("ushort gdal36(")
    );
    assert!(m.log().contains("GDAL's spelling"), "{}", m.log());
}

#[test]
fn a_null_fill_value_is_the_types_default() {
    let m = Mount::new("tolerant/zarrita.zarr", &[]);
    let data = std::fs::read(m.mp.join("flags/data.bin")).unwrap();
    assert_eq!(data, expected("zarrita.zarr", "flags"));
    assert_eq!(data, [1, 0, 1, 0, 0, 0], "the absent chunk is false");
    assert!(m.log().contains("fill_value null"), "{}", m.log());
}

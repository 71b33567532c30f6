use super::*;

/// An encoded manifest or node of `body`, uncompressed: header, body,
/// CRC-32C (for the hand-made ones here and in `store::ocdbt`'s tests).
pub(crate) fn seal(magic: u32, body: &[u8]) -> Vec<u8> {
    let mut out = magic.to_be_bytes().to_vec();
    out.extend_from_slice(&((12 + 2 + body.len() + 4) as u64).to_le_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(body);
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

fn fixture(path: &str) -> Vec<u8> {
    std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/ocdbt")
            .join(path),
    )
    .unwrap()
}

#[test]
fn tensorstore_s_manifest_names_its_latest_root() {
    let Manifest::Single {
        files,
        root,
        generation,
    } = manifest(&fixture(crate::store::ocdbt::MANIFEST)).unwrap()
    else {
        panic!("a single manifest")
    };
    assert_eq!(generation, 3);
    let (at, height) = root.unwrap();
    assert_eq!(height, 0);
    assert_eq!(files[at.file].path, "d/02f49dd27cc3c97d16d554eb021417f6");
    assert_eq!((at.offset, at.len), (0, 116));
}

#[test]
fn tensorstore_s_leaf_holds_an_inline_and_an_out_of_line_value() {
    let leaf = node(&fixture("d/02f49dd27cc3c97d16d554eb021417f6")).unwrap();
    assert_eq!(leaf.height, 0);
    let Entries::Leaf(entries) = leaf.entries else {
        panic!("a leaf")
    };
    assert_eq!(entries[0].0, b"w/c/0/0");
    assert!(matches!(&entries[0].1, Value::Inline(v) if v.len() == 24));
    assert_eq!(entries[1].0, b"w/zarr.json");
    assert!(matches!(
        entries[1].1,
        Value::At(Location {
            file: 0,
            offset: 0,
            len: 264
        })
    ));
}

/// Every damage is an error, never a panic: each byte changed, and every
/// length cut.
#[test]
fn damaged_manifests_and_nodes_are_errors() {
    for bytes in [
        fixture(crate::store::ocdbt::MANIFEST),
        fixture("d/02f49dd27cc3c97d16d554eb021417f6"),
    ] {
        for cut in 0..bytes.len() {
            assert!(manifest(&bytes[..cut]).is_err() && node(&bytes[..cut]).is_err());
        }
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x41;
            // The CRC catches each: a change that kept it would be a bug here.
            assert!(manifest(&b).is_err() && node(&b).is_err(), "byte {i}");
        }
    }
}

/// A body that checks (its CRC recomputed) but lies: counts beyond the
/// bytes, a prefix longer than the key before it, a data file past the
/// table. Each is refused before anything is allocated from it.
#[test]
fn lying_counts_are_refused() {
    let seal = |body: &[u8]| seal(BTREE_MAGIC, body);
    // Height 0, no data files, 2^60 entries.
    let huge = seal(&[0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x10]);
    assert!(node(&huge).unwrap_err().to_string().contains("node entries"));
    // Two keys, the second sharing 9 bytes of a 1-byte first.
    let prefix = seal(&[0, 0, 2, 9, 1, 1, b'a', b'b', 0, 0, 0, 0]);
    assert!(node(&prefix).unwrap_err().to_string().contains("prefix longer"));
    // One out-of-line value in data file 5 of a table of none.
    let file = seal(&[0, 0, 1, 1, b'a', 4, 1, 5, 0]);
    assert!(node(&file).unwrap_err().to_string().contains("data file 5"));
    // A well-formed leaf, to show the seal is right.
    let ok = seal(&[0, 0, 1, 1, b'a', 1, 0, b'z']);
    assert!(
        matches!(node(&ok).unwrap().entries, Entries::Leaf(e) if e == [(b"a".to_vec(), Value::Inline(b"z".to_vec()))])
    );
}

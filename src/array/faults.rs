//! Every error exit of the array layer's reads, through a store that fails
//! chosen objects with each kind of store error ([`FaultyStore`]): a whole
//! chunk, flat bytes in one chunk and across chunks (the gathered path),
//! a hyperslab, sampled points, and a shard read in part. Each fails with
//! the documented errno (`EACCES` for a denied object, else `EIO`) and a
//! message naming the key, leaves the other chunks readable, and is not
//! cached: once the object heals, the same read gives its bytes. A
//! region or points outside the array are `EINVAL`.

use std::sync::Arc;

use super::Array;
use crate::store::{Fault, FaultyStore, MemoryStore, ReadableStore};

/// The errno docs/semantics.md gives each fault.
fn errno_of(fault: Fault) -> i32 {
    match fault {
        Fault::Denied => libc::EACCES,
        _ => libc::EIO,
    }
}

/// `a`: 6 uint8 in chunks of 2 (chunk `i` holds `i, i`); `s`: 8 uint8 in one
/// shard of 4 inner chunks of 2 (inner chunk `i` holds `i, i`).
fn store() -> FaultyStore {
    let mut m = MemoryStore::default();
    let bytes = r#"{"name": "bytes", "configuration": {"endian": "little"}}"#;
    m.insert(
        "a/zarr.json",
        format!(
            r#"{{"zarr_format": 3, "node_type": "array", "shape": [6], "data_type": "uint8",
            "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [2]}}}},
            "chunk_key_encoding": {{"name": "default"}}, "fill_value": 0, "codecs": [{bytes}]}}"#
        ),
    );
    for i in 0..3u8 {
        m.insert(&format!("a/c/{i}"), vec![i; 2]);
    }
    m.insert(
        "s/zarr.json",
        format!(
            r#"{{"zarr_format": 3, "node_type": "array", "shape": [8], "data_type": "uint8",
            "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [8]}}}},
            "chunk_key_encoding": {{"name": "default"}}, "fill_value": 0,
            "codecs": [{{"name": "sharding_indexed", "configuration": {{"chunk_shape": [2],
                "codecs": [{bytes}], "index_codecs": [{bytes}]}}}}]}}"#
        ),
    );
    // The inner chunks one after another, then the index: (offset, length)
    // of each, little-endian u64s, at the end.
    let mut shard: Vec<u8> = (0..4u8).flat_map(|i| [i, i]).collect();
    for i in 0..4u64 {
        shard.extend((2 * i).to_le_bytes());
        shard.extend(2u64.to_le_bytes());
    }
    m.insert("s/c/0", shard);
    FaultyStore::over(Box::new(m))
}

fn open(store: &FaultyStore, path: &str) -> Array {
    let shared: Arc<dyn ReadableStore> = Arc::new(store.clone());
    Array::open(shared, path, 1 << 20).unwrap()
}

#[test]
fn every_store_fault_of_a_chunk_fails_each_read_of_it_alone_and_is_not_cached() {
    for fault in Fault::ALL {
        let store = store();
        let a = open(&store, "a");
        store.fail("a/c/1", fault);
        let failed = |r: Result<Vec<u8>, super::ArrayError>, what: &str| {
            let e = r.expect_err(what);
            assert_eq!(e.errno(), errno_of(fault), "{fault:?}, {what}: {e}");
            assert!(e.to_string().contains("a/c/1"), "{fault:?}, {what}: {e}");
        };
        failed(a.read_chunk(1).map(|c| c.to_vec()), "the chunk");
        failed(
            a.read_bytes(1, 2).map(|d| d.bytes().to_vec()),
            "data.bin across chunks 0 and 1",
        );
        failed(a.read_bytes(2, 2).map(|d| d.bytes().to_vec()), "data.bin in chunk 1");
        failed(a.read_region(&[1], &[3]), "a region over chunks 0 to 2");
        failed(a.read_points(&[0, 3]).map(|p| p.0), "points in chunks 0 and 1");
        assert_eq!(a.read_bytes(4, 2).unwrap().bytes(), [2, 2], "{fault:?}: another chunk");
        assert_eq!(a.read_chunk(0).unwrap().as_slice(), [0, 0], "{fault:?}: another chunk");
        store.heal("a/c/1");
        assert_eq!(a.read_bytes(1, 4).unwrap().bytes(), [0, 1, 1, 2], "{fault:?}: healed");
    }
}

#[test]
fn every_store_fault_of_a_shard_fails_a_read_in_part_and_is_not_cached() {
    for fault in Fault::ALL {
        let store = store();
        let s = open(&store, "s");
        assert!(s.reads_partially());
        store.fail("s/c/0", fault);
        let e = s.read_chunk_bytes(0, 2, 4).expect_err("inner chunks 1 and 2");
        assert_eq!(e.errno(), errno_of(fault), "{fault:?}: {e}");
        assert!(e.to_string().contains("s/c/0"), "{fault:?}: {e}");
        let e = s.read_bytes(3, 2).expect_err("data.bin across inner chunks");
        assert_eq!(e.errno(), errno_of(fault), "{fault:?}: {e}");
        store.heal("s/c/0");
        assert_eq!(
            s.read_chunk_bytes(0, 2, 4).unwrap().bytes(),
            [1, 1, 2, 2],
            "{fault:?}: healed"
        );
        assert_eq!(s.read_bytes(3, 2).unwrap().bytes(), [1, 2], "{fault:?}: healed");
    }
}

/// A region or points outside the array, asked of the array layer (by
/// `nzfs cdl`, `nzfs check`, the Python API), fail with `EINVAL` naming
/// what was asked; a file read past the end is clamped instead.
#[test]
fn a_region_or_points_outside_the_array_are_einval() {
    let a = open(&store(), "a");
    for e in [
        a.read_region(&[4], &[3]).unwrap_err(),
        a.read_region(&[0, 0], &[1, 1]).unwrap_err(),
        a.read_points(&[6]).unwrap_err(),
    ] {
        assert_eq!(e.errno(), libc::EINVAL, "{e}");
        assert!(
            e.to_string().contains("shape") || e.to_string().contains("points"),
            "{e}"
        );
    }
    assert_eq!(a.read_bytes(4, 100).unwrap().bytes(), [2, 2], "clamped to the array");
    assert!(a.read_bytes(6, 100).unwrap().bytes().is_empty(), "at the end");
}

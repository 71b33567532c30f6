//! The array layer on its own (no filesystem): every fixture array read
//! whole and by hyperslab through `Array`, compared with the arrays
//! zarr-python/numpy decoded. Regions are cut from numpy's bytes by a plain
//! model here, independent of the layer's run-by-run walk.

mod common;

use std::sync::Arc;

use nzfs::array::{Array, ArrayError, Dataset};
use nzfs::store::{FilesystemStore, ReadableStore};

fn dataset(store: &str) -> Dataset {
    let s: Arc<dyn ReadableStore> = Arc::new(FilesystemStore::new(common::data_dir().join(store)));
    Dataset::open(s, 1 << 20).unwrap()
}

/// The C-order bytes of the region at `start` of `shape`, cut from the
/// whole array's bytes one element at a time.
fn model_region(e: &common::Expected, start: &[u64], shape: &[u64]) -> Vec<u8> {
    let item = e.item_size() as u64;
    let count: u64 = shape.iter().product();
    let mut out = Vec::new();
    for linear in 0..count {
        let mut rest = linear;
        let mut flat = 0;
        let mut stride = 1;
        for d in (0..shape.len()).rev() {
            let i = start[d] + rest % shape[d];
            rest /= shape[d];
            flat += i * stride;
            stride *= e.shape[d];
        }
        out.extend_from_slice(&e.bytes[(flat * item) as usize..((flat + 1) * item) as usize]);
    }
    out
}

#[test]
fn every_fixture_array_reads_whole_and_by_region_as_numpy_decoded_it() {
    let manifest = common::manifest();
    let mut regions = 0;
    for store in common::stores(&manifest) {
        let ds = dataset(&store);
        for e in manifest.iter().filter(|e| e.store == store) {
            let id = ds.hierarchy().nodes.iter().position(|n| n.path == e.path).unwrap();
            let a = ds
                .array(id)
                .unwrap_or_else(|| panic!("{store}/{} is not a readable array", e.path));
            let whole = a.read_bytes(0, u32::MAX).unwrap();
            assert_eq!(whole.bytes(), e.bytes.as_slice(), "{store}/{}", e.path);
            if e.elements() == 0 {
                continue;
            }
            // A box from a third of the way in, half as long (at least 1),
            // crossing chunk edges in most fixtures; and the last element.
            let start: Vec<u64> = e.shape.iter().map(|s| s / 3).collect();
            let shape: Vec<u64> = e
                .shape
                .iter()
                .zip(&start)
                .map(|(s, b)| (s / 2).clamp(1, s - b))
                .collect();
            let last_start: Vec<u64> = e.shape.iter().map(|s| s - 1).collect();
            let ones = vec![1; e.shape.len()];
            for (b, s) in [(&start, &shape), (&last_start, &ones)] {
                let got = a.read_region(b, s).unwrap();
                assert_eq!(got, model_region(e, b, s), "{store}/{} region {b:?}+{s:?}", e.path);
                regions += 1;
            }
        }
    }
    assert!(regions > 100, "compared {regions} regions");
}

#[test]
fn regions_outside_the_array_are_refused() {
    let ds = dataset("sample.zarr");
    let id = ds.hierarchy().nodes.iter().position(|n| n.path == "t2m").unwrap();
    let a = ds.array(id).unwrap();
    assert_eq!(a.metadata().shape, [10, 20, 14]);
    for (start, shape) in [
        (vec![0, 0, 0], vec![11, 1, 1]),
        (vec![9, 19, 13], vec![1, 1, 2]),
        (vec![0, 0], vec![1, 1]),
        (vec![u64::MAX, 0, 0], vec![2, 1, 1]),
    ] {
        let e = a.read_region(&start, &shape).unwrap_err();
        assert!(matches!(e, ArrayError::OutOfBounds { .. }), "{start:?} {shape:?}: {e}");
    }
    assert!(a.read_chunk(a.chunk_count()).is_err());
}

#[test]
fn an_array_opens_on_its_own_from_a_store_and_a_path() {
    let manifest = common::manifest();
    let e = manifest
        .iter()
        .find(|e| e.store == "sample.zarr" && e.path == "t2m")
        .unwrap();
    let s: Arc<dyn ReadableStore> = Arc::new(FilesystemStore::new(common::data_dir().join("sample.zarr")));
    let a = Array::open(s.clone(), "t2m", 1 << 20).unwrap();
    assert_eq!(a.read_bytes(0, u32::MAX).unwrap().bytes(), e.bytes.as_slice());
    for i in 0..a.chunk_count() {
        e.check_chunk(i, a.read_chunk_bytes(i, 0, u32::MAX).unwrap().bytes())
            .unwrap();
    }
    assert!(matches!(
        Array::open(s.clone(), "", 1 << 20),
        Err(ArrayError::Unreadable { .. })
    ));
    assert!(matches!(
        Array::open(s, "nope", 1 << 20),
        Err(ArrayError::Unreadable { .. })
    ));
}

/// `chunks_touched` (the prefetcher's map from `data.bin` bytes to chunks)
/// against a model that computes each element's chunk on its own.
#[test]
fn the_chunks_a_flat_byte_range_touches() {
    let manifest = common::manifest();
    let mut checked = 0;
    for store in ["sample.zarr", "hier.zarr", "codecs.zarr"] {
        let ds = dataset(store);
        for e in manifest.iter().filter(|e| e.store == store && e.elements() > 0) {
            let id = ds.hierarchy().nodes.iter().position(|n| n.path == e.path).unwrap();
            let a = ds.array(id).unwrap();
            let item = e.item_size() as u64;
            let grid: Vec<u64> = a.grid_shape().to_vec();
            let chunk_of = |flat: u64| {
                let mut rest = flat;
                let mut pos = vec![0u64; e.shape.len()];
                for d in (0..e.shape.len()).rev() {
                    pos[d] = rest % e.shape[d];
                    rest /= e.shape[d];
                }
                (0..pos.len()).fold(0, |acc, d| acc * grid[d] + pos[d] / e.chunk_shape[d])
            };
            let total = e.elements();
            let row = e.shape.last().copied().unwrap_or(1);
            for (from, to) in [
                (0, total),
                (total / 3, total / 2 + 1),
                (total - 1, total),
                (row, total),
                (total / 7, total - total / 5),
                (row + row / 2, (3 * row + 1).min(total)),
            ] {
                if from >= to {
                    continue;
                }
                let mut model: Vec<u64> = Vec::new();
                for flat in from..to {
                    let c = chunk_of(flat);
                    if !model.contains(&c) {
                        model.push(c);
                    }
                }
                let got = a.chunks_touched(from * item, to * item, usize::MAX);
                assert_eq!(got, model, "{store}/{} elements {from}..{to}", e.path);
                let first = a.chunks_touched(from * item, to * item, 1);
                assert_eq!(first, model[..1], "{store}/{}", e.path);
                checked += 1;
            }
        }
    }
    assert!(checked > 10, "{checked}");
}

/// `data.bin` reads that lie inside one chunk which is a contiguous stretch
/// of the flat array (chunk extent 1 on the leading dimensions, the whole
/// array after one dimension) are answered from the cached chunk, no copy:
/// their bytes lie inside the chunk's own buffer, and equal numpy's. Edge
/// chunks that overhang the array are covered by the 1-d fixtures.
#[test]
fn flat_reads_inside_one_contiguous_chunk_are_not_copied() {
    let manifest = common::manifest();
    let mut checked = 0;
    for store in common::stores(&manifest) {
        let ds = dataset(&store);
        for e in manifest.iter().filter(|e| e.store == store && e.elements() > 0) {
            let nd = e.shape.len();
            let j = (0..nd).find(|&d| e.chunk_shape[d] != 1).unwrap_or(nd.saturating_sub(1));
            if nd == 0 || (j + 1..nd).any(|d| e.chunk_shape[d] != e.shape[d]) {
                continue;
            }
            let id = ds.hierarchy().nodes.iter().position(|n| n.path == e.path).unwrap();
            let a = ds.array(id).unwrap();
            if a.reads_partially() {
                continue;
            }
            // Chunk k covers rows [k*c, min((k+1)*c, n)) along j, for every
            // combination of the leading indices.
            let item = e.item_size() as u64;
            let inner: u64 = e.shape[j + 1..].iter().product();
            let leading: u64 = e.shape[..j].iter().product();
            let (c, n) = (e.chunk_shape[j], e.shape[j]);
            for lead in 0..leading {
                for k in 0..n.div_ceil(c) {
                    let first = (lead * n + k * c) * inner * item;
                    let len = (c.min(n - k * c) * inner * item) as u32;
                    let index = lead * n.div_ceil(c) + k;
                    let chunk = a.read_chunk(index).unwrap();
                    let got = a.read_bytes(first, len).unwrap();
                    let f = first as usize;
                    assert_eq!(
                        got.bytes(),
                        &e.bytes[f..f + len as usize],
                        "{store}/{} chunk {index}",
                        e.path
                    );
                    // An absent chunk's fill is made for each read: only a
                    // stored chunk is replied from the cache.
                    if a.chunk_or_fill(index).unwrap().is_none() {
                        continue;
                    }
                    let inside = chunk.as_ptr_range().contains(&got.bytes().as_ptr());
                    assert!(inside, "{store}/{} chunk {index}: the read was copied", e.path);
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 50, "checked {checked} chunks");
}

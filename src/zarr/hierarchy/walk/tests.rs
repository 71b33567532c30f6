//! Discovery's two passes against stores that answer slowly, or hold
//! more than one pass reads.

use std::time::Duration;

use super::*;
use crate::store::{Listing, MemoryStore, Stamp};

const ARRAY: &str = r#"{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "uint8",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
    "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]}"#;

/// A store whose reads each take a while, as a round trip does, and
/// that records the most reads it had in flight at once.
struct Slow {
    inner: MemoryStore,
    now: AtomicUsize,
    most: AtomicUsize,
    listing: AtomicUsize,
    most_listing: AtomicUsize,
}

impl ReadableStore for Slow {
    fn get(&self, key: &StoreKey, max_len: u64) -> crate::store::StoreResult<Option<Vec<u8>>> {
        let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(5));
        self.now.fetch_sub(1, Ordering::SeqCst);
        self.inner.get(key, max_len)
    }
    fn get_range(
        &self,
        key: &StoreKey,
        offset: u64,
        len: u64,
        expect: Option<Stamp>,
    ) -> crate::store::StoreResult<Option<Vec<u8>>> {
        self.inner.get_range(key, offset, len, expect)
    }
    fn stat(&self, key: &StoreKey) -> crate::store::StoreResult<Option<Stamp>> {
        self.inner.stat(key)
    }
}

impl crate::store::Listable for Slow {
    fn list_dir(&self, prefix: &str) -> crate::store::StoreResult<Listing> {
        let now = self.listing.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_listing.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(5));
        self.listing.fetch_sub(1, Ordering::SeqCst);
        self.inner.list_dir(prefix)
    }
}

fn slow(inner: MemoryStore) -> Slow {
    Slow {
        inner,
        now: AtomicUsize::new(0),
        most: AtomicUsize::new(0),
        listing: AtomicUsize::new(0),
        most_listing: AtomicUsize::new(0),
    }
}

/// A group's children are read several at a time, and the tree is the
/// one a walk without concurrency finds: every child, in name order,
/// v2 beside v3, an implicit group kept only where it holds a node.
#[test]
fn a_groups_children_are_read_concurrently_into_the_same_tree() {
    let mut m = MemoryStore::default();
    m.insert("zarr.json", r#"{"zarr_format": 3, "node_type": "group"}"#.to_string());
    for i in 0..100 {
        m.insert(&format!("a{i:03}/zarr.json"), ARRAY.to_string());
    }
    m.insert(
        "b/.zarray",
        r#"{"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "|u1", "compressor": null,
            "fill_value": 0, "order": "C", "filters": null}"#
            .to_string(),
    );
    m.insert("c/d/zarr.json", ARRAY.to_string());
    m.insert("e/not-metadata", "x".to_string());
    let s = slow(m);
    let h = Hierarchy::open(&s).unwrap();
    let most = s.most.load(Ordering::SeqCst);
    assert!(
        most > 1,
        "the children were read one at a time ({most} in flight at most)"
    );
    let names: Vec<&str> = h.nodes[0].children.iter().map(|&c| h.nodes[c].name.as_str()).collect();
    assert_eq!(names.len(), 102, "{names:?}");
    assert_eq!(
        (names[0], names[99], names[100], names[101]),
        ("a000", "a099", "b", "c")
    );
    assert!(names.windows(2).all(|w| w[0] < w[1]));
    let c = h.child(0, "c").unwrap();
    assert!(matches!(h.nodes[c].kind, NodeKind::Group { metadata: None }));
    assert!(matches!(h.nodes[h.child(c, "d").unwrap()].kind, NodeKind::Array(_)));
    assert!(matches!(h.nodes[h.child(0, "b").unwrap()].kind, NodeKind::Array(_)));
    assert_eq!(h.zarr_format, 2, "a v2 node below a v3 root");
}

/// The groups of a deep tree (a plate's wells, each with one field)
/// are listed at once, not one after the other, and make the tree a
/// walk one group at a time makes.
#[test]
fn the_groups_of_a_deep_tree_are_listed_at_once() {
    let group = r#"{"zarr_format": 3, "node_type": "group"}"#;
    let mut m = MemoryStore::default();
    m.insert("zarr.json", group.to_string());
    for well in 0..12 {
        m.insert(&format!("w{well:02}/zarr.json"), group.to_string());
        m.insert(&format!("w{well:02}/0/zarr.json"), group.to_string());
        m.insert(&format!("w{well:02}/0/a/zarr.json"), ARRAY.to_string());
    }
    let s = slow(m);
    let h = Hierarchy::open(&s).unwrap();
    let most = s.most_listing.load(Ordering::SeqCst);
    assert!(most > 1, "the groups were listed one at a time ({most} at most)");
    assert_eq!(h.nodes.len(), 1 + 12 * 3);
    for well in 0..12 {
        let w = h.child(0, &format!("w{well:02}")).unwrap();
        let f = h.child(w, "0").unwrap();
        assert!(matches!(h.nodes[h.child(f, "a").unwrap()].kind, NodeKind::Array(_)));
    }
    let paths: Vec<&str> = h.nodes.iter().map(|n| n.path.as_str()).collect();
    assert_eq!(
        &paths[..4],
        ["", "w00", "w00/0", "w00/0/a"],
        "depth first, in name order"
    );
}

/// A first pass that fills its cap at once leaves the rest to the
/// second, which reads it: the same tree as with no cap.
#[test]
fn a_full_first_pass_leaves_the_rest_to_the_second() {
    let mut m = MemoryStore::default();
    m.insert("zarr.json", r#"{"zarr_format": 3, "node_type": "group"}"#.to_string());
    for i in 0..40 {
        m.insert(&format!("g{}/a{i:02}/zarr.json", i % 3), ARRAY.to_string());
        m.insert(
            &format!("g{}/zarr.json", i % 3),
            r#"{"zarr_format": 3, "node_type": "group"}"#.to_string(),
        );
    }
    let tree = |cap| {
        let mut h = Hierarchy::open(&m).unwrap();
        h.nodes.truncate(1);
        h.nodes[0].children.clear();
        h.walk_within(&m, cap, MAX_NODES).unwrap();
        h.sort_children();
        h.nodes
            .iter()
            .map(|n| (n.path.clone(), matches!(n.kind, NodeKind::Array(_))))
            .collect::<Vec<_>>()
    };
    let whole = tree(SCAN_BYTES);
    assert_eq!(whole.len(), 1 + 3 + 40);
    assert_eq!(tree(0), whole);
}

/// A document larger than a batch reads at once is read again, whole,
/// when its turn comes: it makes its node as any other does.
#[test]
fn a_document_past_the_batch_limit_is_read_whole() {
    let big = ARRAY.replacen(
        "\"shape\"",
        &format!(
            r#""attributes": {{"note": "{}"}}, "shape""#,
            "x".repeat(PROBE_BYTES as usize + 1)
        ),
        1,
    );
    let mut m = MemoryStore::default();
    m.insert("zarr.json", r#"{"zarr_format": 3, "node_type": "group"}"#.to_string());
    m.insert("big/zarr.json", big);
    m.insert("small/zarr.json", ARRAY.to_string());
    let h = Hierarchy::open(&m).unwrap();
    for name in ["big", "small"] {
        let id = h.child(0, name).unwrap();
        assert!(
            matches!(h.nodes[id].kind, NodeKind::Array(_)),
            "{name}: {:?}",
            h.nodes[id].kind
        );
    }
}

/// A store with more groups and arrays than the walk makes (links that
/// make a tree without end, or a hostile store) is refused with
/// [`OpenError::TooManyNodes`] once the bound is reached, not walked on;
/// at the bound itself it opens.
#[test]
fn a_store_past_the_node_bound_is_refused_at_the_bound() {
    let mut m = MemoryStore::default();
    m.insert("zarr.json", r#"{"zarr_format": 3, "node_type": "group"}"#.to_string());
    for g in 0..4 {
        m.insert(
            &format!("g{g}/zarr.json"),
            r#"{"zarr_format": 3, "node_type": "group"}"#.to_string(),
        );
        for a in 0..4 {
            m.insert(&format!("g{g}/a{a}/zarr.json"), ARRAY.to_string());
        }
    }
    let walk = |max_nodes| {
        let mut h = Hierarchy::open(&m).unwrap();
        h.nodes.truncate(1);
        h.nodes[0].children.clear();
        h.walk_within(&m, SCAN_BYTES, max_nodes).map(|_| h.nodes.len())
    };
    assert_eq!(walk(MAX_NODES).unwrap(), 1 + 4 + 16);
    assert_eq!(walk(21).unwrap(), 21);
    assert!(matches!(walk(20), Err(OpenError::TooManyNodes)));
    assert!(matches!(walk(3), Err(OpenError::TooManyNodes)));
}

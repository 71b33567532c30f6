use super::*;
use crate::store::MemoryStore;

const GROUP: &str = r#"{"zarr_format": 3, "node_type": "group"}"#;
const ARRAY: &str = r#"{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "uint8",
    "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
    "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]}"#;

fn paths(h: &Hierarchy) -> Vec<&str> {
    h.nodes.iter().map(|n| n.path.as_str()).collect()
}

/// A node at the same path keeps its number, a new one comes after,
/// a removed one leaves an unlisted placeholder; parents and children
/// follow the numbers.
#[test]
fn a_hierarchy_read_again_keeps_the_numbers_of_the_old() {
    let mut m = MemoryStore::default();
    m.insert("zarr.json", GROUP.to_string());
    for p in ["a/zarr.json", "b/zarr.json", "b/x/zarr.json"] {
        m.insert(
            p,
            if p.contains('x') || p.starts_with('a') {
                ARRAY
            } else {
                GROUP
            }
            .to_string(),
        );
    }
    let old = Hierarchy::open(&m).unwrap();
    m.remove("a/zarr.json");
    m.insert("0new/zarr.json", ARRAY.to_string());
    m.insert("b/y/zarr.json", ARRAY.to_string());
    let mut now = Hierarchy::open(&m).unwrap();
    now.keep_numbers_of(&old);
    let before = paths(&old);
    assert_eq!(&paths(&now)[..before.len()], &before[..]);
    let a = before.iter().position(|p| *p == "a").unwrap();
    assert!(matches!(now.nodes[a].kind, NodeKind::Broken { .. }));
    assert!(!now.nodes[0].children.contains(&a), "a removed node is not listed");
    for (i, n) in now.nodes.iter().enumerate() {
        for &c in &n.children {
            assert!(c > i, "a parent before its children");
            assert_eq!(now.nodes[c].parent, Some(i));
            assert!(now.nodes[c].path.starts_with(&n.path));
        }
    }
    let mut listed: Vec<&str> = now.nodes[0]
        .children
        .iter()
        .map(|&c| now.nodes[c].name.as_str())
        .collect();
    listed.sort();
    assert_eq!(listed, ["0new", "b"]);
}

/// The shape of `h`: each node's path, kind, parent's path and
/// children's names.
fn shape(h: &Hierarchy) -> Vec<(String, NodeKind, Option<String>, Vec<String>)> {
    h.nodes
        .iter()
        .map(|n| {
            (
                n.path.clone(),
                n.kind.clone(),
                n.parent.map(|p| h.nodes[p].path.clone()),
                n.children.iter().map(|&c| h.nodes[c].name.clone()).collect(),
            )
        })
        .collect()
}

/// A hierarchy without a node (and all below it) is the one the store
/// gives once the node's documents are gone, placeholders of nodes
/// removed before left out; the root and a path that is no node give
/// none. One with a node made is the one the store gives with its
/// document there.
#[test]
fn a_hierarchy_without_a_node_is_what_a_read_gives_once_it_is_removed() {
    let mut m = MemoryStore::default();
    m.insert("zarr.json", GROUP.to_string());
    for (p, doc) in [
        ("a", ARRAY),
        ("b", GROUP),
        ("b/x", ARRAY),
        ("b/y", GROUP),
        ("b/y/z", ARRAY),
        ("c", GROUP),
        ("c/w", ARRAY),
    ] {
        m.insert(&format!("{p}/zarr.json"), doc.to_string());
    }
    let first = Hierarchy::open(&m).unwrap();
    m.remove("a/zarr.json");
    let mut served = Hierarchy::open(&m).unwrap();
    served.keep_numbers_of(&first);
    assert!(served.nodes.iter().any(|n| n.path == "a" && n.parent.is_none()));
    for k in ["b/zarr.json", "b/x/zarr.json", "b/y/zarr.json", "b/y/z/zarr.json"] {
        m.remove(k);
    }
    let derived = served.without("b").unwrap();
    assert_eq!(shape(&derived), shape(&Hierarchy::open(&m).unwrap()));
    assert_eq!(paths(&derived), ["", "c", "c/w"]);
    assert!(served.without("").is_none());
    assert!(served.without("nothing").is_none());
    assert!(served.without("a").is_none(), "a placeholder is no node");
    assert_eq!(paths(&served.as_read()), ["", "b", "b/x", "b/y", "b/y/z", "c", "c/w"]);
    // A node made: what the store gives with its document there.
    m.insert("c/new/zarr.json", GROUP.to_string());
    let made = derived.with_node("c/new", GROUP.as_bytes()).unwrap();
    let mut read = shape(&Hierarchy::open(&m).unwrap());
    let mut made = shape(&made);
    read.sort_by(|a, b| a.0.cmp(&b.0));
    made.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(made, read);
    assert!(derived.with_node("c", GROUP.as_bytes()).is_none(), "there already");
    assert!(derived.with_node("c/w/x", GROUP.as_bytes()).is_none(), "below an array");
    assert!(derived.with_node("nothing/x", GROUP.as_bytes()).is_none(), "no parent");
}

/// Two looks at an unchanged store compare equal; a document rewritten
/// or a name added changes the look, and the nodes read again that
/// differ are the changed ones.
#[test]
fn a_look_finds_changed_documents_and_new_names() {
    let mut m = MemoryStore::default();
    m.insert("zarr.json", GROUP.to_string());
    m.insert("a/zarr.json", ARRAY.to_string());
    let h = Hierarchy::open(&m).unwrap();
    let first = h.fingerprint(&m);
    assert_eq!(first, h.fingerprint(&m));
    m.insert("a/zarr.json", ARRAY.replace("[4]", "[16]"));
    let second = h.fingerprint(&m);
    assert_ne!(first, second);
    m.insert("b/zarr.json", ARRAY.to_string());
    assert_ne!(second, h.fingerprint(&m));
    // Chunks are not metadata.
    let third = h.fingerprint(&m);
    m.insert("a/c/0", vec![1u8, 2]);
    assert_eq!(third, h.fingerprint(&m));
    let mut now = Hierarchy::open(&m).unwrap();
    now.keep_numbers_of(&h);
    let changed: Vec<&str> = now
        .changed_since(&h)
        .iter()
        .map(|&i| now.nodes[i].path.as_str())
        .collect();
    assert_eq!(changed, ["", "a", "b"]);
}

/// A store of arrays that a look and a read of only what changed
/// compares with a read of the whole store.
fn followed() -> MemoryStore {
    let mut m = MemoryStore::default();
    m.insert("zarr.json", GROUP.to_string());
    m.insert("g/zarr.json", GROUP.to_string());
    m.insert("g/a/zarr.json", ARRAY.to_string());
    m.insert("g/b/zarr.json", ARRAY.to_string());
    m.insert("v2/.zarray", V2_ARRAY.to_string());
    m.insert("v2/.zattrs", r#"{"units": "m"}"#.to_string());
    let image = r#"{"zarr_format": 3, "node_type": "group", "attributes": {"ome": {"version": "0.5",
        "multiscales": [{"axes": [{"name": "x", "type": "space"}], "datasets": [{"path": "0",
        "coordinateTransformations": [{"type": "scale", "scale": [1.0]}]}]}]}}}"#;
    m.insert("img/zarr.json", image.to_string());
    m.insert("img/0/zarr.json", ARRAY.to_string());
    m
}

const V2_ARRAY: &str = r#"{"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<u1",
    "compressor": null, "fill_value": 0, "order": "C", "filters": null}"#;

/// What reading only the changed documents gives for `change` made to
/// `followed()`: `None` where the store must be read whole, else the
/// hierarchy, checked against a read of the whole store (its shape and
/// its documents' bytes) and found to share every unchanged array.
fn read_changed(change: impl FnOnce(&mut MemoryStore)) -> Option<Vec<String>> {
    let mut m = followed();
    let served = Hierarchy::open(&m).unwrap();
    let (_, before) = served.look_at(&m);
    change(&mut m);
    let (_, now) = served.look_at(&m);
    let changed = served.differ(&before, &now).expect("two looks of the same nodes");
    let names: Vec<String> = changed.iter().map(|&i| served.nodes[i].path.clone()).collect();
    let got = served.with_documents_read_again(&m, &changed)?;
    let read = Hierarchy::open(&m).unwrap();
    assert_eq!(shape(&got), shape(&read));
    assert_eq!(got.document_bytes(), read.document_bytes());
    assert_eq!(got.zarr_format, read.zarr_format);
    for (old, new) in served.nodes.iter().zip(&got.nodes) {
        if let (NodeKind::Array(o), NodeKind::Array(n)) = (&old.kind, &new.kind)
            && !names.contains(&old.path)
        {
            assert!(Arc::ptr_eq(o, n), "{}: the same array", old.path);
        }
    }
    Some(names)
}

/// An array's documents changed (resized, its attributes, written
/// broken): only they are read again, and the hierarchy is a whole
/// read's. A group's documents or names, an image's level, an array
/// become a group or gone: the store is read whole.
#[test]
fn only_the_changed_arrays_documents_are_read_again_where_a_read_would_give_the_same() {
    let resized = read_changed(|m| m.insert("g/a/zarr.json", ARRAY.replace("[4]", "[16]")));
    assert_eq!(resized.unwrap(), ["g/a"]);
    let both = read_changed(|m| {
        // (Another length: a memory store gives every object version 0.)
        m.insert("g/a/zarr.json", ARRAY.replace("[4]", "[64]"));
        m.insert("v2/.zattrs", r#"{"units": "km", "long_name": "depth"}"#.to_string());
    });
    assert_eq!(both.unwrap(), ["g/a", "v2"]);
    let broken = read_changed(|m| m.insert("g/b/zarr.json", "{not json".to_string()));
    assert_eq!(broken.unwrap(), ["g/b"]);
    let group = r#"{"zarr_format": 3, "node_type": "group", "attributes": {"title": "t"}}"#;
    assert!(read_changed(|m| m.insert("g/zarr.json", group.to_string())).is_none());
    assert!(read_changed(|m| m.insert("g/c/zarr.json", ARRAY.to_string())).is_none());
    assert!(read_changed(|m| m.insert("img/0/zarr.json", ARRAY.replace("[4]", "[64]"))).is_none());
    assert!(read_changed(|m| m.insert("g/a/zarr.json", GROUP.to_string())).is_none());
    assert!(read_changed(|m| m.remove("g/b/zarr.json")).is_none());
    let v2 = read_changed(|m| {
        m.remove("g/a/zarr.json");
        m.insert("g/a/.zarray", V2_ARRAY.to_string());
    });
    assert!(v2.is_none(), "another Zarr format");
}

/// Documents that outgrow the budget are not read alone: a read of
/// the whole store decides which node goes unread.
#[test]
fn a_change_past_the_documents_budget_reads_the_store_whole() {
    let mut m = followed();
    let full = Hierarchy::open(&m).unwrap().document_bytes();
    let served = Hierarchy::open_within(&m, full + 8).unwrap();
    let (_, before) = served.look_at(&m);
    let big = ARRAY.replace(
        "\"fill_value\": 0",
        "\"fill_value\": 0, \"attributes\": {\"history\": \"a long history of it\"}",
    );
    m.insert("g/a/zarr.json", big);
    let (_, now) = served.look_at(&m);
    let changed = served.differ(&before, &now).unwrap();
    assert!(served.with_documents_read_again(&m, &changed).is_none());
    // Two looks of other nodes name none.
    let other = Hierarchy::open(&m).unwrap().without("g/b").unwrap();
    assert!(other.differ(&before, &now).is_none());
}

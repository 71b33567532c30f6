use super::format::tests::seal;
use super::*;
use crate::store::{FilesystemStore, Listable};

fn data(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// tensorstore's ocdbt driver wrote `w` (zarr3, 2 x 3 float32 0..5): its
/// chunk inline in the leaf, its zarr.json out of line.
#[test]
fn tensorstore_s_database_reads_as_its_keys() {
    let store = OcdbtStore::open(Box::new(FilesystemStore::new(data("ocdbt")))).unwrap();
    assert_eq!(store.databases(), [""]);
    let keys: Vec<&String> = store.keys.keys().collect();
    assert_eq!(keys, ["w/c/0/0", "w/zarr.json"]);
    let chunk = store.get(&StoreKey::new("w/c/0/0").unwrap(), 1 << 20).unwrap().unwrap();
    let want: Vec<u8> = (0..6).flat_map(|v| (v as f32).to_le_bytes()).collect();
    assert_eq!(chunk, want);
    let doc = store
        .get(&StoreKey::new("w/zarr.json").unwrap(), 1 << 20)
        .unwrap()
        .unwrap();
    let doc = crate::json::parse(&doc).unwrap();
    assert_eq!(doc.get("shape").and_then(|s| s.as_array()).map(|s| s.len()), Some(2));
    let part = store
        .get_range(&StoreKey::new("w/c/0/0").unwrap(), 4, 8, None)
        .unwrap()
        .unwrap();
    assert_eq!(part, want[4..12]);
    assert!(
        store
            .get_range(&StoreKey::new("w/c/0/0").unwrap(), 20, 8, None)
            .is_err()
    );
    assert_eq!(store.list_dir("").unwrap().prefixes, ["w"]);
}

// Hand-made databases, encoded as the format says, to lie in ways
// tensorstore never writes.

fn varint(mut v: u64, out: &mut Vec<u8>) {
    loop {
        let b = (v & 0x7f) as u8;
        v >>= 7;
        if v == 0 {
            out.push(b);
            return;
        }
        out.push(b | 0x80);
    }
}

/// A data file table of `paths`, none sharing a prefix, no base paths.
fn table(paths: &[&str], out: &mut Vec<u8>) {
    varint(paths.len() as u64, out);
    for _ in 1..paths.len() {
        varint(0, out);
    }
    for p in paths {
        varint(p.len() as u64, out);
    }
    for _ in paths {
        varint(0, out);
    }
    for p in paths {
        out.extend_from_slice(p.as_bytes());
    }
}

/// A manifest whose one version's root is `len` bytes at `offset` of
/// `file`, `height` high.
fn manifest(file: &str, offset: u64, len: u64, height: u8) -> Vec<u8> {
    let mut b = vec![0u8; 16];
    for v in [0, 100, 1 << 20] {
        varint(v, &mut b);
    }
    b.push(4);
    varint(0, &mut b);
    table(&[file], &mut b);
    varint(1, &mut b); // one version
    varint(1, &mut b); // generation 1
    b.push(height);
    for v in [0, offset, len, 1, 1, 0] {
        varint(v, &mut b);
    }
    b.extend_from_slice(&0u64.to_le_bytes());
    varint(0, &mut b); // no version nodes
    seal(0x0cdb_3a2a, &b)
}

/// An interior node `height` high of `n` children, each `len` bytes at
/// `offset` of `file`, keys "a", "b", …
fn interior(height: u8, file: &str, n: usize, offset: u64, len: u64) -> Vec<u8> {
    let mut b = vec![height];
    table(&[file], &mut b);
    varint(n as u64, &mut b);
    let keys: Vec<Vec<u8>> = (0..n).map(|i| format!("k{i:08}").into_bytes()).collect();
    for _ in 1..n {
        varint(0, &mut b);
    }
    for k in &keys {
        varint(k.len() as u64, &mut b);
    }
    for _ in &keys {
        varint(0, &mut b);
    }
    for k in &keys {
        b.extend_from_slice(k);
    }
    for v in [0, offset, len, 1, 1, 0] {
        for _ in 0..n {
            varint(v, &mut b);
        }
    }
    seal(0x0cdb_20de, &b)
}

fn open(files: &[(&str, Vec<u8>)]) -> StoreResult<OcdbtStore> {
    let mut m = crate::store::MemoryStore::default();
    for (k, v) in files {
        m.insert(k, v.clone());
    }
    OcdbtStore::open(Box::new(m))
}

/// Why `files` do not open: the store's error, which says why (a
/// corrupt database: EIO).
fn refused(files: &[(&str, Vec<u8>)]) -> String {
    let e = open(files).err().expect("refused");
    assert!(matches!(e, StoreError::Corrupt(_)), "{e:?}");
    e.to_string()
}

/// A node that names itself as its child: the child must be one level
/// lower, so the walk stops at once.
#[test]
fn a_node_that_names_itself_is_refused() {
    let node = interior(1, "d/n", 1, 0, 0);
    let len = node.len() as u64;
    let node = interior(1, "d/n", 1, 0, len);
    assert_eq!(node.len() as u64, len);
    let err = refused(&[("manifest.ocdbt", manifest("d/n", 0, len, 1)), ("d/n", node)]);
    assert!(err.contains("is 1 high where 0 was named"), "{err}");
}

/// A tree higher than any tensorstore writes, one whose interior node
/// names the same leaf more times than the walk reads nodes, and a data
/// file path that leaves the database: each refused, naming why.
#[test]
fn lying_trees_are_refused_within_their_bounds() {
    let err = refused(&[("manifest.ocdbt", manifest("d/n", 0, 10, 200))]);
    assert!(err.contains("200 levels high"), "{err}");

    let mut leaf = vec![0u8];
    table(&[], &mut leaf);
    varint(0, &mut leaf);
    let leaf = seal(0x0cdb_20de, &leaf);
    let node = interior(1, "d/leaf", MAX_NODES + 1, 0, leaf.len() as u64);
    let len = node.len() as u64;
    let files = [
        ("manifest.ocdbt", manifest("d/top", 0, len, 1)),
        ("d/top", node),
        ("d/leaf", leaf),
    ];
    let err = refused(&files);
    assert!(err.contains(&format!("more than {MAX_NODES} B+tree nodes")), "{err}");

    let err = refused(&[("manifest.ocdbt", manifest("../outside", 0, 10, 0))]);
    assert!(err.contains("outside the database"), "{err}");
}

/// A manifest of the numbered kind holds the configuration alone: the
/// versions are read from the newest `manifest.XXXXXXXXXXXXXXXX` beside
/// it (an older one, naming a node that is not there, is not read).
#[test]
fn a_numbered_manifest_is_read_from_its_newest_number() {
    let mut config = vec![0u8; 16];
    for v in [1, 100, 1 << 20] {
        varint(v, &mut config);
    }
    config.push(4);
    varint(0, &mut config);
    let mut leaf = vec![0u8];
    table(&[], &mut leaf);
    for v in [1, 1] {
        varint(v, &mut leaf);
    }
    leaf.push(b'a');
    for v in [1, 0] {
        varint(v, &mut leaf);
    }
    leaf.push(b'z');
    let leaf = seal(0x0cdb_20de, &leaf);
    let files = [
        ("manifest.ocdbt", seal(0x0cdb_3a2a, &config)),
        ("manifest.0000000000000001", manifest("d/gone", 0, 10, 0)),
        ("manifest.0000000000000002", manifest("d/leaf", 0, leaf.len() as u64, 0)),
        ("d/leaf", leaf),
    ];
    let store = open(&files).unwrap();
    assert_eq!(
        store.get(&StoreKey::new("a").unwrap(), 16).unwrap().as_deref(),
        Some(&b"z"[..])
    );
    let (numbered, _) = files.split_at(1);
    assert!(refused(numbered).contains("no manifest.XXXXXXXXXXXXXXXX"));
}

//! One contract for every kind of store: the same small tree is put in a
//! local directory, memory, a zip file, a kerchunk reference set, a disk
//! cache and an S3 bucket (moto), and a tree of the same shape that holds
//! only Zarr nodes in an Icechunk snapshot (written with the icechunk
//! crate); each is held to what
//! `ReadableStore` promises: listings sorted by name, keys and prefixes
//! apart; an absent key is `None` (never an error) for `get`, `get_range`
//! and `stat`; a value past `max_len` and a range past the end are errors;
//! ranges and their batch form give the value's bytes; a stamp is the
//! value's length and does not change between looks; and a stale expected
//! stamp is refused.

mod common;

use std::path::Path;
use std::sync::Arc;

use nzfs::store::disk_cache::DiskCached;
use nzfs::store::references::{Home, ReferenceStore, TargetOptions, Targets};
use nzfs::store::zip::ZipStore;
use nzfs::store::{FilesystemStore, MemoryStore, RangeRequest, ReadableStore, Stamp, StoreKey};

/// Deterministic bytes of `n`, different per `seed`.
fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// The tree every store holds: (key, value).
fn tree() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("zarr.json", br#"{"zarr_format": 3, "node_type": "group"}"#.to_vec()),
        ("a/zarr.json", bytes(300, 1)),
        ("a/c/0", bytes(1000, 2)),
        ("a/c/1", bytes(10, 3)),
        ("a/c/10", bytes(7, 4)),
        ("b/x", bytes(1, 5)),
        ("b/y/z", bytes(2000, 6)),
    ]
}

fn key(k: &str) -> StoreKey {
    StoreKey::new(k).unwrap()
}

/// Hold `store` (named `what` in failures) to the contract, holding
/// [`tree`].
fn conforms(what: &str, store: &dyn ReadableStore) {
    conforms_to(what, store, &tree());
}

/// The names directly under `prefix` in `tree`: keys and prefixes, each
/// sorted by bytes.
fn expected_listing(tree: &[(&str, Vec<u8>)], prefix: &str) -> (Vec<String>, Vec<String>) {
    let (mut keys, mut prefixes) = (Vec::new(), Vec::new());
    for (k, _) in tree {
        let rest = match prefix {
            "" => Some(*k),
            p => k.strip_prefix(p).and_then(|r| r.strip_prefix('/')),
        };
        match rest.map(|r| r.split_once('/')) {
            Some(Some((dir, _))) => prefixes.push(dir.to_string()),
            Some(None) => keys.push(rest.unwrap_or_default().to_string()),
            None => {}
        }
    }
    for names in [&mut keys, &mut prefixes] {
        names.sort();
        names.dedup();
    }
    (keys, prefixes)
}

/// Hold `store` to the contract, holding `tree` (whose `a/c` holds keys
/// `0`, `1` and `10`, and which holds no `nope`, `a/c/2`, `a/c` or `b/y`
/// key).
fn conforms_to(what: &str, store: &dyn ReadableStore, tree: &[(&str, Vec<u8>)]) {
    let listing = |p: &str| store.list_dir(p).unwrap_or_else(|e| panic!("{what}: list {p:?}: {e}"));
    let mut dirs: Vec<String> = vec![String::new()];
    for (k, _) in tree {
        let mut at = 0;
        while let Some(i) = k[at..].find('/') {
            dirs.push(k[..at + i].to_string());
            at += i + 1;
        }
    }
    dirs.sort();
    dirs.dedup();
    for dir in &dirs {
        let got = listing(dir);
        assert_eq!(
            (got.keys, got.prefixes),
            expected_listing(tree, dir),
            "{what}: list {dir:?}"
        );
    }
    // Byte order of the names, not numeric order.
    assert_eq!(listing("a/c").keys, ["0", "1", "10"], "{what}: a/c");
    let none = listing("nowhere");
    assert!(
        none.keys.is_empty() && none.prefixes.is_empty(),
        "{what}: an absent prefix lists nothing"
    );
    // Paged listing: the same names, in order, across pages.
    let first = store.list_page("a/c", None, 2).unwrap();
    assert_eq!(first.listing.keys, ["0", "1"], "{what}: first page");
    let rest = store.list_page("a/c", first.next.as_deref(), 2).unwrap();
    assert_eq!(rest.listing.keys, ["10"], "{what}: second page");
    assert!(rest.next.is_none(), "{what}: no third page");

    for (k, value) in tree {
        let k = *k;
        let len = value.len() as u64;
        let got = store
            .get(&key(k), 1 << 20)
            .unwrap_or_else(|e| panic!("{what}: get {k}: {e}"));
        assert_eq!(got.as_deref(), Some(&value[..]), "{what}: get {k}");
        if len > 1 {
            assert!(
                store.get(&key(k), len - 1).is_err(),
                "{what}: {k} past max_len is an error"
            );
        }
        let stamp = store
            .stat(&key(k))
            .unwrap()
            .unwrap_or_else(|| panic!("{what}: stat {k}"));
        assert_eq!(stamp.len, len, "{what}: stat {k}");
        assert_eq!(
            store.stat(&key(k)).unwrap(),
            Some(stamp),
            "{what}: a second stat of {k}"
        );
        let (at, n) = (len / 3, len - len / 3);
        let part = store.get_range(&key(k), at, n, Some(stamp)).unwrap();
        assert_eq!(part.as_deref(), Some(&value[at as usize..]), "{what}: range of {k}");
        let whole = store.get_range(&key(k), 0, len, None).unwrap();
        assert_eq!(whole.as_deref(), Some(&value[..]), "{what}: whole range of {k}");
        assert!(
            store.get_range(&key(k), len, 1, None).is_err(),
            "{what}: a range past the end of {k}"
        );
        assert!(
            store.get_range(&key(k), at, n + 1, None).is_err(),
            "{what}: a range over the end of {k}"
        );
        let stale = Stamp {
            len,
            version: stamp.version ^ 1,
        };
        assert!(
            store.get_range(&key(k), 0, 1, Some(stale)).is_err(),
            "{what}: a stale stamp for {k} is refused"
        );
    }
    for absent in ["nope", "a/c/2", "a/c", "b/y"] {
        assert!(store.get(&key(absent), 100).unwrap().is_none(), "{what}: get {absent}");
        assert!(
            store.stat(&key(absent)).unwrap().is_none(),
            "{what}: stat {absent}: {:?}",
            store.stat(&key(absent))
        );
        assert!(
            store.get_range(&key(absent), 0, 1, None).unwrap().is_none(),
            "{what}: range of {absent}"
        );
    }
    // A batch: the end of the largest value, an absent key, the start of
    // the first chunk.
    let (largest, value) = tree.iter().max_by_key(|(_, v)| v.len()).unwrap();
    let chunk = &tree.iter().find(|(k, _)| *k == "a/c/0").unwrap().1;
    let requests = [
        RangeRequest {
            key: key(largest),
            offset: value.len() as u64 - 10,
            len: 10,
            expect: None,
        },
        RangeRequest {
            key: key("nope"),
            offset: 0,
            len: 1,
            expect: None,
        },
        RangeRequest {
            key: key("a/c/0"),
            offset: 0,
            len: 4,
            expect: None,
        },
    ];
    let got = store.get_ranges(&requests);
    assert_eq!(got.len(), 3, "{what}: one result per request");
    assert_eq!(
        got[0].as_ref().unwrap().as_deref(),
        Some(&value[value.len() - 10..]),
        "{what}"
    );
    assert!(got[1].as_ref().unwrap().is_none(), "{what}: an absent key in a batch");
    assert_eq!(got[2].as_ref().unwrap().as_deref(), Some(&chunk[..4]), "{what}");
}

fn write_tree(dir: &Path) {
    for (k, v) in tree() {
        let path = dir.join(k);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, v).unwrap();
    }
}

fn memory() -> MemoryStore {
    let mut mem = MemoryStore::default();
    for (k, v) in tree() {
        mem.insert(k, v);
    }
    mem
}

/// A zip file of the tree, members stored (method 0), as `zip -0` writes.
fn zip_of_tree() -> Vec<u8> {
    let entries = tree();
    let members: Vec<(&str, &[u8])> = entries.iter().map(|(k, v)| (*k, v.as_slice())).collect();
    common::zip::zip(&members, false)
}

/// A kerchunk reference set of the tree: every value a byte range of one
/// data file, the last few inline.
fn references_of_tree() -> ReferenceStore {
    let mut blob = Vec::new();
    let mut refs = Vec::new();
    for (i, (k, v)) in tree().into_iter().enumerate() {
        if i % 3 == 2 {
            use base64::Engine;
            let inline = base64::engine::general_purpose::STANDARD.encode(&v);
            refs.push(format!(r#""{k}": "base64:{inline}""#));
        } else {
            refs.push(format!(r#""{k}": ["blob", {}, {}]"#, blob.len(), v.len()));
            blob.extend(&v);
        }
    }
    let doc = format!(r#"{{"version": 1, "refs": {{{}}}}}"#, refs.join(", "));
    let mut mem = MemoryStore::default();
    mem.insert("refs.json", doc.into_bytes());
    mem.insert("blob", blob);
    let targets = Targets::new(
        Arc::new(mem),
        Home::Local("/nonexistent".into()),
        TargetOptions::home_only(),
    );
    ReferenceStore::open(targets, key("refs.json")).unwrap()
}

#[test]
fn a_local_directory_conforms() {
    let dir = tempfile::tempdir().unwrap();
    write_tree(dir.path());
    conforms("filesystem", &FilesystemStore::new(dir.path()));
}

#[test]
fn memory_conforms() {
    conforms("memory", &memory());
}

#[test]
fn a_zip_file_conforms() {
    let mut mem = MemoryStore::default();
    mem.insert("t.zip", zip_of_tree());
    conforms("zip", &ZipStore::open(Box::new(mem), key("t.zip")).unwrap());
}

#[test]
fn a_reference_set_conforms() {
    conforms("references", &references_of_tree());
}

#[test]
fn a_disk_cache_conforms_empty_and_filled() {
    let dir = tempfile::tempdir().unwrap();
    let cached = DiskCached::new(Box::new(memory()), "memory://tree", dir.path(), 1 << 20).unwrap();
    conforms("disk cache (cold)", &cached);
    conforms("disk cache (warm)", &cached);
    drop(cached);
    let again = DiskCached::new(Box::new(memory()), "memory://tree", dir.path(), 1 << 20).unwrap();
    conforms("disk cache (a second mount's)", &again);
}

#[cfg(feature = "remote")]
#[test]
fn an_s3_bucket_conforms() {
    use common::servers::Moto;
    use nzfs::store::object::{RemoteOptions, RemoteStore};
    let Some(moto) = Moto::start() else { return };
    assert_eq!(moto.request("PUT", "/tree", b""), 200);
    let dir = tempfile::tempdir().unwrap();
    write_tree(dir.path());
    moto.upload("tree", dir.path(), "s");
    let options = RemoteOptions {
        options: vec![
            ("aws_endpoint".into(), format!("http://127.0.0.1:{}", moto.port)),
            ("aws_region".into(), "us-east-1".into()),
            ("aws_access_key_id".into(), "test".into()),
            ("aws_secret_access_key".into(), "test".into()),
        ],
        environment: Vec::new(),
        anonymous: false,
        connect_timeout: std::time::Duration::from_secs(5),
        request_timeout: std::time::Duration::from_secs(10),
        retries: 2,
    };
    conforms("s3", &RemoteStore::open("s3://tree/s", &options).unwrap());
}

/// An Icechunk snapshot, written with the icechunk crate: a repository
/// holds Zarr nodes only, so its tree is groups, arrays and raw chunks.
#[cfg(feature = "icechunk")]
#[test]
fn an_icechunk_snapshot_conforms() {
    use nzfs::store::Version;
    use nzfs::store::icechunk::Repo;
    use nzfs::store::object::RemoteOptions;
    let group = br#"{"zarr_format":3,"node_type":"group","attributes":{}}"#.to_vec();
    let array = |n: usize| {
        format!(
            r#"{{"zarr_format":3,"node_type":"array","shape":[{n}],"data_type":"uint8","chunk_grid":{{"name":"regular","configuration":{{"chunk_shape":[2000]}}}},"chunk_key_encoding":{{"name":"default","configuration":{{"separator":"/"}}}},"fill_value":0,"codecs":[{{"name":"bytes"}}],"attributes":{{}}}}"#
        )
        .into_bytes()
    };
    let tree: Vec<(&str, Vec<u8>)> = vec![
        ("zarr.json", group.clone()),
        ("a/zarr.json", array(22000)),
        ("a/c/0", bytes(1000, 2)),
        ("a/c/1", bytes(10, 3)),
        ("a/c/10", bytes(7, 4)),
        ("b/zarr.json", group),
        ("b/y/zarr.json", array(2000)),
        ("b/y/c/0", bytes(2000, 6)),
    ];
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let storage = icechunk::new_local_filesystem_storage(dir.path()).await.unwrap();
        let repo = icechunk::Repository::create(storage).execute().await.unwrap();
        let session = repo.writable_session("main").await.unwrap();
        let session = Arc::new(tokio::sync::RwLock::new(session));
        let store = icechunk::Store::from_session(session.clone()).await;
        for (k, v) in &tree {
            store.set(k, bytes::Bytes::from(v.clone())).await.unwrap();
        }
        session.write().await.commit("the tree").execute().await.unwrap();
    });
    drop(runtime);
    let options = RemoteOptions {
        options: Vec::new(),
        environment: Vec::new(),
        anonymous: false,
        connect_timeout: std::time::Duration::from_secs(5),
        request_timeout: std::time::Duration::from_secs(10),
        retries: 0,
    };
    let repo = Arc::new(Repo::open(dir.path().to_str().unwrap(), &options).unwrap());
    let snapshot = repo.resolve(&Version::Branch("main".into())).unwrap();
    conforms_to("icechunk", &repo.version_store(&snapshot).unwrap(), &tree);
}

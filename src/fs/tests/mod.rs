//! Unit tests of the filesystem core: ownership and modes, which store
//! calls `open`/`access` make, the status document, and the helpers that
//! make a filesystem over chunks on disk; `reads.rs` tests the reads:
//! prefetch around drop-behind, reads that never wait on another thread's
//! decode, and failing objects.

mod reads;

use std::ffi::OsStr;

use super::*;
use crate::store::{Access, MemoryStore, Stamp, StoreKey};

/// A store with no notion of owners (as object storage will be).
fn ownerless() -> NzFs {
    ownerless_with(|_| {})
}

/// [`ownerless`], its settings changed by `change`.
fn ownerless_with(change: impl FnOnce(&mut FsConfig)) -> NzFs {
    let mut m = MemoryStore::default();
    m.insert("zarr.json", r#"{"zarr_format": 3, "node_type": "group"}"#);
    m.insert(
        "a/zarr.json",
        r#"{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]}"#,
    );
    m.insert("a/c/0", vec![1u8, 2]);
    let h = Hierarchy::open(&m).unwrap();
    let mut config = FsConfig {
        cache_bytes: 1 << 20,
        missing_chunks: MissingChunks::Fill,
        dataset_name: "t".into(),
        uid: 4242,
        gid: 4343,
        mtime: SystemTime::UNIX_EPOCH,
        ..Default::default()
    };
    change(&mut config);
    NzFs::new(Box::new(m), h, config).unwrap()
}

fn attrs(fs: &NzFs) -> Vec<(u16, u32, u32)> {
    let a = fs.lookup(1, OsStr::new("a")).unwrap();
    let names = ["0.bin", "1.bin", "data.bin", "header.cdl"];
    std::iter::once(fs.getattr(1).unwrap())
        .chain(std::iter::once(a))
        .chain(names.iter().map(|n| fs.lookup(a.ino, OsStr::new(n)).unwrap()))
        .map(|x| (x.perm, x.uid, x.gid))
        .collect()
}

#[test]
fn a_store_without_owners_shows_the_mounting_user_with_the_umask() {
    let dir = (0o555, 4242, 4343);
    let file = (0o444, 4242, 4343);
    assert_eq!(attrs(&ownerless()), [dir, dir, file, file, file, file]);
    let fs = ownerless_with(|c| {
        c.ownership = Ownership {
            uid: None,
            gid: Some(7),
            umask: Some(0o027),
        }
    });
    let (dir, file) = ((0o550, 4242, 7), (0o440, 4242, 7));
    assert_eq!(attrs(&fs), [dir, dir, file, file, file, file]);
}

/// A store that counts the owner lookups asked of it.
struct CountingAccess(MemoryStore, std::sync::Arc<std::sync::atomic::AtomicU64>);

impl ReadableStore for CountingAccess {
    fn get(&self, key: &crate::store::StoreKey, max: u64) -> crate::store::StoreResult<Option<Vec<u8>>> {
        self.0.get(key, max)
    }
    fn get_range(
        &self,
        key: &crate::store::StoreKey,
        offset: u64,
        len: u64,
        expect: Option<crate::store::Stamp>,
    ) -> crate::store::StoreResult<Option<Vec<u8>>> {
        self.0.get_range(key, offset, len, expect)
    }
    fn stat(&self, key: &crate::store::StoreKey) -> crate::store::StoreResult<Option<crate::store::Stamp>> {
        self.0.stat(key)
    }
    fn access(&self, _path: &str) -> crate::store::StoreResult<Option<Access>> {
        self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(None)
    }
}

impl crate::store::Listable for CountingAccess {
    fn list_dir(&self, prefix: &str) -> crate::store::StoreResult<crate::store::Listing> {
        self.0.list_dir(prefix)
    }
}

#[test]
fn open_and_access_ask_the_store_for_no_owner() {
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let plain = ownerless();
    let h = Hierarchy::open(plain.store()).unwrap();
    let mut m = MemoryStore::default();
    for key in ["zarr.json", "a/zarr.json", "a/c/0"] {
        let k = crate::store::StoreKey::new(key).unwrap();
        m.insert(key, plain.store().get(&k, 1 << 20).unwrap().unwrap());
    }
    let fs = NzFs::new(Box::new(CountingAccess(m, calls.clone())), h, plain.config().clone()).unwrap();
    let a = fs.lookup(1, OsStr::new("a")).unwrap();
    let chunk = fs.lookup(a.ino, OsStr::new("0.bin")).unwrap();
    let before = calls.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(fs.kind(chunk.ino).unwrap(), Kind::File);
    assert!(fs.open(chunk.ino, false).is_ok());
    assert_eq!(fs.open(a.ino, false).unwrap_err().errno(), libc::EISDIR);
    assert_eq!(fs.open(chunk.ino, true).unwrap_err().errno(), libc::EROFS);
    assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), before);
    fs.getattr(chunk.ino).unwrap();
    assert!(
        calls.load(std::sync::atomic::Ordering::Relaxed) > before,
        "getattr asks"
    );
}

/// A filesystem with its prefetch workers over array `a` of 16 chunks of
/// 1 KiB (chunk `i` holds bytes `i`), and `a`'s node.
fn sixteen_chunks(root: &std::path::Path) -> (std::sync::Arc<NzFs>, usize) {
    sixteen_chunks_through(root, |store| Box::new(store))
}

/// [`sixteen_chunks`], its store wrapped by `wrap`.
fn sixteen_chunks_through(
    root: &std::path::Path,
    wrap: impl FnOnce(crate::store::FilesystemStore) -> Box<dyn ReadableStore>,
) -> (std::sync::Arc<NzFs>, usize) {
    chunks_through(root, 16, 1024, ownerless().config().cache_bytes, wrap)
}

/// A filesystem with its prefetch workers and a cache of `cache_bytes`
/// over array `a` of `count` chunks of `len` bytes (chunk `i` holds bytes
/// `i`), its store wrapped by `wrap`; and `a`'s node.
fn chunks_through(
    root: &std::path::Path,
    count: u8,
    len: usize,
    cache_bytes: u64,
    wrap: impl FnOnce(crate::store::FilesystemStore) -> Box<dyn ReadableStore>,
) -> (std::sync::Arc<NzFs>, usize) {
    std::fs::write(root.join("zarr.json"), r#"{"zarr_format": 3, "node_type": "group"}"#).unwrap();
    std::fs::create_dir_all(root.join("a/c")).unwrap();
    let shape = usize::from(count) * len;
    std::fs::write(
        root.join("a/zarr.json"),
        format!(
            r#"{{"zarr_format": 3, "node_type": "array", "shape": [{shape}], "data_type": "uint8",
            "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [{len}]}}}},
            "chunk_key_encoding": {{"name": "default"}}, "fill_value": 0, "codecs": [{{"name": "bytes"}}]}}"#
        ),
    )
    .unwrap();
    for i in 0..count {
        std::fs::write(root.join(format!("a/c/{i}")), vec![i; len]).unwrap();
    }
    let store = wrap(crate::store::FilesystemStore::new(root));
    let h = Hierarchy::open(store.as_ref()).unwrap();
    let mut options = ownerless().config().clone();
    options.cache_bytes = cache_bytes;
    let fs = std::sync::Arc::new(NzFs::new(store, h, options).unwrap());
    fs.start_prefetcher();
    let node = (fs.lookup(1, OsStr::new("a")).unwrap().ino - 1) as usize;
    (fs, node)
}

/// The status document fits the ioctl that carries it, however long the
/// store's name and the recent errors' messages are.
#[test]
fn the_status_document_fits_its_ioctl_with_long_messages() {
    let fs = ownerless_with(|c| c.store_name = format!("s3://bucket/{}", "é".repeat(20_000)));
    for i in 0..3 * status::RECENT {
        fs.note_error(&FsError::BrokenNode {
            path: format!("g{i}/{}", "ü".repeat(50_000)),
            reason: "x".repeat(100_000),
        });
    }
    // The adapter's own members take a few hundred bytes more.
    let mut with_adapter = fs.status();
    with_adapter.cpus.why = "a".repeat(500);
    let doc = status::status_text(with_adapter, true);
    assert!(doc.len() <= status::STATUS_BYTES, "{} bytes", doc.len());
    let parsed = crate::json::parse(doc.as_bytes()).unwrap();
    let recent = parsed
        .get("errors")
        .and_then(|e| e.get("recent"))
        .and_then(|r| r.as_array())
        .unwrap();
    assert_eq!(recent.len(), status::RECENT);
    let message = recent[0].get("message").and_then(|m| m.as_str()).unwrap();
    assert!(
        message.ends_with('…') && message.len() <= status::MESSAGE_BYTES,
        "{}",
        message.len()
    );
    // Messages of control characters, six bytes each once escaped, are
    // left out rather than make the document too long.
    for _ in 0..status::RECENT {
        fs.note_error(&FsError::TooLarge {
            path: "\u{1}".repeat(5000),
            what: "data.bin",
            bytes: 0,
        });
    }
    let doc = status::status_text(fs.status(), true);
    assert!(doc.len() <= status::STATUS_BYTES, "{} bytes", doc.len());
    assert!(doc.contains("left out: too long once escaped"), "{doc}");
    // Others than root and the owner get no message, only times and kinds.
    let doc = status::status_text(fs.status(), false);
    assert!(!doc.contains('\u{1}') && !doc.contains("\\u0001"), "{doc}");
    assert!(doc.contains(status::WITHHELD), "{doc}");
    // A writable mount's commits: their messages (files, programs, users)
    // to the owner alone, and left out where they are too long.
    let mut with_commits = fs.status();
    with_commits.writes = Some(status::schema::Writes {
        commits: vec![
            status::schema::CommitMade {
                time: 1,
                snapshot: "S".into(),
                message: format!("{} written through nzfs by dd", "d/".repeat(2000)),
            };
            10
        ],
        ..Default::default()
    });
    let doc = status::status_text(with_commits.clone(), false);
    assert!(
        !doc.contains("written through") && doc.contains(r#""snapshot":"S""#),
        "{doc}"
    );
    let doc = status::status_text(with_commits, true);
    assert!(
        doc.len() <= status::STATUS_BYTES && !doc.contains("written through"),
        "{doc}"
    );
}

/// A local store that counts the `stat`s and the reads asked of it.
struct CountingCalls(
    crate::store::FilesystemStore,
    std::sync::Arc<[std::sync::atomic::AtomicUsize; 2]>,
);

impl CountingCalls {
    fn read(&self) {
        self.1[1].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl ReadableStore for CountingCalls {
    fn get(&self, key: &StoreKey, max_len: u64) -> crate::store::StoreResult<Option<Vec<u8>>> {
        self.read();
        self.0.get(key, max_len)
    }
    fn get_into(&self, key: &StoreKey, max_len: u64, buf: &mut Vec<u8>) -> crate::store::StoreResult<bool> {
        self.read();
        self.0.get_into(key, max_len, buf)
    }
    fn get_stamped(
        &self,
        key: &StoreKey,
        max_len: u64,
        buf: &mut Vec<u8>,
    ) -> crate::store::StoreResult<(bool, Option<Stamp>)> {
        self.read();
        self.0.get_stamped(key, max_len, buf)
    }
    fn get_range(
        &self,
        key: &StoreKey,
        o: u64,
        n: u64,
        e: Option<Stamp>,
    ) -> crate::store::StoreResult<Option<Vec<u8>>> {
        self.read();
        self.0.get_range(key, o, n, e)
    }
    fn stat(&self, key: &StoreKey) -> crate::store::StoreResult<Option<Stamp>> {
        self.1[0].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.0.stat(key)
    }
    fn profile(&self) -> crate::store::Profile {
        crate::store::Profile {
            rereads_are_cheap: true,
            ..Default::default()
        }
    }
}

impl crate::store::Listable for CountingCalls {
    fn list_dir(&self, prefix: &str) -> crate::store::StoreResult<crate::store::Listing> {
        self.0.list_dir(prefix)
    }
}

/// A cold chunk of a local store is read with one call, which resolves
/// and `fstat`s its object once and stamps the decode with that `fstat`
/// (old code: a `stat` first, so two resolves and two `fstat`s). A change
/// of the object is still seen: the stamp is the object's.
#[test]
fn a_cold_local_chunk_is_resolved_once() {
    use std::sync::atomic::Ordering::Relaxed;
    let dir = tempfile::tempdir().unwrap();
    let calls = std::sync::Arc::new([
        std::sync::atomic::AtomicUsize::new(0),
        std::sync::atomic::AtomicUsize::new(0),
    ]);
    let counter = calls.clone();
    let (fs, node) = sixteen_chunks_through(dir.path(), |store| Box::new(CountingCalls(store, counter)));
    let before = (calls[0].load(Relaxed), calls[1].load(Relaxed));
    assert_eq!(&fs.chunk(node, 3).unwrap()[..], &[3u8; 1024][..]);
    let after = (calls[0].load(Relaxed), calls[1].load(Relaxed));
    assert_eq!(
        (after.0 - before.0, after.1 - before.1),
        (0, 1),
        "(stats, reads) of one cold chunk"
    );
    // The decode was stamped: a rewrite of the object is seen at the next
    // open of its file, and the chunk decoded again.
    std::fs::write(dir.path().join("a/c/3"), [9u8; 1024]).unwrap();
    let ino = Inode::Chunk { node, index: 3 }.to_ino();
    assert_eq!(fs.recheck_open(ino), crate::array::Check::Changed);
    assert_eq!(&fs.chunk(node, 3).unwrap()[..], &[9u8; 1024][..]);
}

/// A child named like a file its directory shows is listed with `.node`
/// appended, as the table of file kinds says the directory holds it:
/// `index.html` only where previews are shown.
#[test]
fn a_node_named_like_a_file_its_directory_shows_is_listed_apart() {
    for previews in [true, false] {
        let mut m = MemoryStore::default();
        m.insert("zarr.json", r#"{"zarr_format": 3, "node_type": "group"}"#);
        for g in ["header.cdl", "index.html", "t.nc", "plain"] {
            m.insert(&format!("{g}/zarr.json"), r#"{"zarr_format": 3, "node_type": "group"}"#);
        }
        let h = Hierarchy::open(&m).unwrap();
        let config = FsConfig {
            cache_bytes: 1 << 20,
            dataset_name: "t".into(),
            previews,
            ..Default::default()
        };
        let fs = NzFs::new(Box::new(m), h, config).unwrap();
        let listed = |path: &str| {
            let n = fs.hierarchy().nodes.iter().position(|n| n.path == path).unwrap();
            fs.listed_name(n).unwrap().to_string()
        };
        assert_eq!(listed("header.cdl"), "header.cdl.node");
        assert_eq!(listed("t.nc"), "t.nc.node", "{:?}", fs.file_names(0));
        assert_eq!(listed("plain"), "plain");
        let index = if previews { "index.html.node" } else { "index.html" };
        assert_eq!(listed("index.html"), index, "previews {previews}");
    }
}

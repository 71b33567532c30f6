//! Unit tests of the filesystem core: ownership and modes, and which store
//! calls `open`/`access` make.

use std::ffi::OsStr;

use super::*;
use crate::store::MemoryStore;

/// A store with no notion of owners (as object storage will be).
fn ownerless() -> NzFs {
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
    let options = FsOptions {
        cache_bytes: 1 << 20,
        missing_chunks: MissingChunks::Fill,
        dataset_name: "t".into(),
        uid: 4242,
        gid: 4343,
        mtime: SystemTime::UNIX_EPOCH,
        versions: Vec::new(),
    };
    NzFs::new(Box::new(m), h, options).unwrap()
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
    let fs = ownerless().with_ownership(Ownership {
        uid: None,
        gid: Some(7),
        umask: Some(0o027),
    });
    let (dir, file) = ((0o550, 4242, 7), (0o440, 4242, 7));
    assert_eq!(attrs(&fs), [dir, dir, file, file, file, file]);
}

/// A store that counts the owner lookups asked of it.
struct CountingAccess(MemoryStore, std::sync::Arc<std::sync::atomic::AtomicU64>);

impl ReadableStore for CountingAccess {
    fn get(&self, key: &crate::store::StoreKey, max: u64) -> std::io::Result<Option<Vec<u8>>> {
        self.0.get(key, max)
    }
    fn get_range(
        &self,
        key: &crate::store::StoreKey,
        offset: u64,
        len: u64,
        expect: Option<crate::store::Stamp>,
    ) -> std::io::Result<Option<Vec<u8>>> {
        self.0.get_range(key, offset, len, expect)
    }
    fn stat(&self, key: &crate::store::StoreKey) -> std::io::Result<Option<crate::store::Stamp>> {
        self.0.stat(key)
    }
    fn list_dir(&self, prefix: &str) -> std::io::Result<crate::store::Listing> {
        self.0.list_dir(prefix)
    }
    fn access(&self, _path: &str) -> std::io::Result<Option<Access>> {
        self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(None)
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
    let fs = NzFs::new(Box::new(CountingAccess(m, calls.clone())), h, plain.options().clone()).unwrap();
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

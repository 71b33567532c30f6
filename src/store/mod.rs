//! The storage boundary: a read-only key/value view of a Zarr store.
//!
//! A [`StoreKey`] is a `/`-separated key that cannot leave the store root:
//! no empty, `.` or `..` segments, no leading `/`, no NUL. A missing key is
//! `Ok(None)`; only I/O failures are errors. nzfs never writes to a store.
//!
//! Every store kind gives the same guarantees (issue #19): a value is read
//! only from a regular object beneath the store root, a read never blocks on
//! a special file, and every read in progress is registered in
//! [`inflight`] so that a daemon can say which ones it abandoned when a
//! store stops answering.

mod filesystem;
pub mod inflight;
mod memory;

use std::fmt;
use std::io;

pub use filesystem::{FilesystemStore, Symlinks};
pub use memory::MemoryStore;

/// A validated store key (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StoreKey(String);

impl StoreKey {
    pub fn new(key: impl Into<String>) -> Result<StoreKey, io::Error> {
        let key = key.into();
        let ok = !key.is_empty()
            && !key.contains('\0')
            && key.split('/').all(|seg| !seg.is_empty() && seg != "." && seg != "..");
        if ok {
            Ok(StoreKey(key))
        } else {
            Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("invalid store key {key:?}"),
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for StoreKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Join a node prefix (`""` for the root, else `a/b`) and a relative key.
pub fn join(prefix: &str, rest: &str) -> Result<StoreKey, io::Error> {
    if prefix.is_empty() {
        StoreKey::new(rest)
    } else {
        StoreKey::new(format!("{prefix}/{rest}"))
    }
}

/// What a listing of one prefix holds.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Listing {
    /// Names of values directly under the prefix.
    pub keys: Vec<String>,
    /// Names of sub-prefixes (no trailing `/`).
    pub prefixes: Vec<String>,
}

/// Who may read a stored object or prefix: its owner, group and mode bits,
/// as the store's own filesystem has them. Object stores have none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    pub uid: u32,
    pub gid: u32,
    /// Permission bits (`0o7777` at most).
    pub mode: u32,
}

/// A readable, listable store.
pub trait ReadableStore: Send + Sync {
    /// The value at `key`, or `None` when there is none. Values longer than
    /// `max_len` are an error, so a hostile object cannot exhaust memory.
    fn get(&self, key: &StoreKey, max_len: u64) -> io::Result<Option<Vec<u8>>>;
    /// `len` bytes of the value at `key` from byte `offset`, or `None` when
    /// there is no value. A value too short for the range is an error, and
    /// so is one whose [`Stamp`] is not `expect` when that is given (the
    /// object was replaced or rewritten since it was stamped).
    fn get_range(&self, key: &StoreKey, offset: u64, len: u64, expect: Option<Stamp>) -> io::Result<Option<Vec<u8>>>;
    /// The length and version of the value at `key`, or `None` when there is none.
    fn stat(&self, key: &StoreKey) -> io::Result<Option<Stamp>>;
    /// The keys and prefixes directly under `prefix` (`""` is the root).
    fn list_dir(&self, prefix: &str) -> io::Result<Listing>;
    /// The owner and mode of the object or prefix at `path` (`""` is the
    /// root), or `None` when the store has no such notion or no such path.
    fn access(&self, path: &str) -> io::Result<Option<Access>> {
        let _ = path;
        Ok(None)
    }
}

/// What identifies one version of a stored object: its length, and a
/// number that changes when it is replaced or rewritten (inode and change
/// times on a filesystem).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub len: u64,
    pub version: u64,
}

pub(crate) fn check_stamp(key: &StoreKey, have: Stamp, expect: Option<Stamp>) -> io::Result<()> {
    match expect {
        Some(want) if want != have => Err(io::Error::other(format!(
            "{key} changed while mounted (now {} bytes, was {})",
            have.len, want.len
        ))),
        _ => Ok(()),
    }
}

pub(crate) fn short_value(key: &StoreKey, offset: u64, len: u64, have: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!(
            "range {offset}..{} is past the end of {key} ({have} bytes)",
            offset.saturating_add(len)
        ),
    )
}

pub(crate) fn too_large(len: u64, max_len: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("object of {len} bytes exceeds the {max_len}-byte limit"),
    )
}

/// A range request larger than this is refused (hostile index entries).
pub const MAX_RANGE: u64 = 4 << 30;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_cannot_escape() {
        for bad in ["", "/abs", "a/../b", "..", "a//b", "a/./b", "a/", "a\0b"] {
            assert!(StoreKey::new(bad).is_err(), "{bad:?}");
        }
        assert!(StoreKey::new("a/b.c/zarr.json").is_ok());
        assert_eq!(join("", "zarr.json").unwrap().as_str(), "zarr.json");
        assert_eq!(join("g/a", "c/0").unwrap().as_str(), "g/a/c/0");
    }

    #[test]
    fn filesystem_store_reads_lists_and_bounds() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("g/c")).unwrap();
        std::fs::write(dir.path().join("g/zarr.json"), b"{}").unwrap();
        let s = FilesystemStore::new(dir.path());
        let key = StoreKey::new("g/zarr.json").unwrap();
        assert_eq!(s.get(&key, 10).unwrap().unwrap(), b"{}");
        assert!(s.get(&key, 1).is_err());
        assert_eq!(s.get(&StoreKey::new("g/nope").unwrap(), 10).unwrap(), None);
        assert_eq!(s.get(&StoreKey::new("g/zarr.json/x").unwrap(), 10).unwrap(), None);
        assert_eq!(s.get_range(&key, 1, 1, None).unwrap().unwrap(), b"}");
        assert!(s.get_range(&key, 1, 2, None).is_err());
        let stamp = s.stat(&key).unwrap().unwrap();
        assert_eq!(stamp.len, 2);
        assert!(s.get_range(&key, 0, 1, Some(stamp)).is_ok());
        assert!(
            s.get_range(
                &key,
                0,
                1,
                Some(Stamp {
                    len: 2,
                    version: stamp.version ^ 1
                })
            )
            .is_err()
        );
        assert!(s.get_range(&key, u64::MAX, 2, None).is_err());
        assert_eq!(s.stat(&StoreKey::new("g/c").unwrap()).unwrap(), None);
        let l = s.list_dir("g").unwrap();
        assert_eq!(l.keys, ["zarr.json"]);
        assert_eq!(l.prefixes, ["c"]);
    }

    #[test]
    fn memory_store_lists() {
        let mut m = MemoryStore::default();
        m.insert("zarr.json", "{}");
        m.insert("a/zarr.json", "{}");
        m.insert("a/c/0", "x");
        m.insert("b/x/zarr.json", "{}");
        let root = m.list_dir("").unwrap();
        assert_eq!(root.keys, ["zarr.json"]);
        assert_eq!(root.prefixes, ["a", "b"]);
        assert_eq!(m.list_dir("a").unwrap().prefixes, ["c"]);
    }
}

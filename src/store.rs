//! The storage boundary: a read-only key/value view of a Zarr store.
//!
//! A [`StoreKey`] is a `/`-separated key that cannot leave the store root:
//! no empty, `.` or `..` segments, no leading `/`, no NUL. A missing key is
//! `Ok(None)`; only I/O failures are errors. nzfs never writes to a store.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::io::Read;
use std::path::{Path, PathBuf};

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
}

/// What identifies one version of a stored object: its length, and a
/// number that changes when it is replaced or rewritten (inode and change
/// times on a filesystem).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub len: u64,
    pub version: u64,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        use std::os::unix::fs::MetadataExt;
        let ctime = (meta.ctime() as u64).wrapping_mul(1_000_000_007) ^ meta.ctime_nsec() as u64;
        let mtime = (meta.mtime() as u64).wrapping_mul(998_244_353) ^ meta.mtime_nsec() as u64;
        let version = meta.ino().wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ctime.rotate_left(21) ^ mtime.rotate_left(42);
        Stamp {
            len: meta.len(),
            version,
        }
    }
}

fn check_stamp(key: &StoreKey, have: Stamp, expect: Option<Stamp>) -> io::Result<()> {
    match expect {
        Some(want) if want != have => Err(io::Error::other(format!(
            "{key} changed while mounted (now {} bytes, was {})",
            have.len, want.len
        ))),
        _ => Ok(()),
    }
}

fn short_value(key: &StoreKey, offset: u64, len: u64, have: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::UnexpectedEof,
        format!(
            "range {offset}..{} is past the end of {key} ({have} bytes)",
            offset.saturating_add(len)
        ),
    )
}

/// A range request larger than this is refused (hostile index entries).
pub const MAX_RANGE: u64 = 4 << 30;

/// A store on the local filesystem: key `a/b/c` is the file `ROOT/a/b/c`.
#[derive(Debug, Clone)]
pub struct FilesystemStore {
    root: PathBuf,
}

impl FilesystemStore {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        FilesystemStore { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, key: &StoreKey) -> PathBuf {
        self.root.join(key.as_str())
    }
}

fn too_large(len: u64, max_len: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("object of {len} bytes exceeds the {max_len}-byte limit"),
    )
}

impl ReadableStore for FilesystemStore {
    fn get(&self, key: &StoreKey, max_len: u64) -> io::Result<Option<Vec<u8>>> {
        let file = match std::fs::File::open(self.path(key)) {
            Ok(f) => f,
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => return Ok(None),
            Err(e) => return Err(e),
        };
        let meta = file.metadata()?;
        if meta.is_dir() {
            return Ok(None);
        }
        if meta.len() > max_len {
            return Err(too_large(meta.len(), max_len));
        }
        let mut buf = Vec::with_capacity(meta.len() as usize);
        // The file may grow while we read: never read past the limit.
        file.take(max_len + 1).read_to_end(&mut buf)?;
        if buf.len() as u64 > max_len {
            return Err(too_large(buf.len() as u64, max_len));
        }
        Ok(Some(buf))
    }

    fn get_range(&self, key: &StoreKey, offset: u64, len: u64, expect: Option<Stamp>) -> io::Result<Option<Vec<u8>>> {
        use std::os::unix::fs::FileExt;
        let file = match std::fs::File::open(self.path(key)) {
            Ok(f) => f,
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => return Ok(None),
            Err(e) => return Err(e),
        };
        let meta = file.metadata()?;
        check_stamp(key, Stamp::of(&meta), expect)?;
        let have = meta.len();
        if len > MAX_RANGE || offset.checked_add(len).is_none_or(|end| end > have) {
            return Err(short_value(key, offset, len, have));
        }
        let mut buf = vec![0; len as usize];
        file.read_exact_at(&mut buf, offset)
            .map_err(|_| short_value(key, offset, len, have))?;
        Ok(Some(buf))
    }

    fn stat(&self, key: &StoreKey) -> io::Result<Option<Stamp>> {
        match std::fs::metadata(self.path(key)) {
            Ok(m) if m.is_file() => Ok(Some(Stamp::of(&m))),
            Ok(_) => Ok(None),
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn list_dir(&self, prefix: &str) -> io::Result<Listing> {
        let dir = if prefix.is_empty() {
            self.root.clone()
        } else {
            self.path(&StoreKey::new(prefix)?)
        };
        let mut listing = Listing::default();
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::NotADirectory) => return Ok(listing),
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let Ok(name) = entry.file_name().into_string() else {
                tracing::warn!(dir = %dir.display(), name = ?entry.file_name(), "skipping a non-UTF-8 name");
                continue;
            };
            // Follow symlinks, as a store on disk is read through them.
            let is_dir = std::fs::metadata(entry.path()).map(|m| m.is_dir()).unwrap_or(false);
            if is_dir {
                listing.prefixes.push(name)
            } else {
                listing.keys.push(name)
            }
        }
        listing.keys.sort();
        listing.prefixes.sort();
        Ok(listing)
    }
}

/// An in-memory store, for tests.
#[derive(Debug, Default, Clone)]
pub struct MemoryStore {
    values: BTreeMap<String, Vec<u8>>,
}

impl MemoryStore {
    pub fn insert(&mut self, key: &str, value: impl Into<Vec<u8>>) {
        self.values.insert(key.to_string(), value.into());
    }
}

impl ReadableStore for MemoryStore {
    fn get(&self, key: &StoreKey, max_len: u64) -> io::Result<Option<Vec<u8>>> {
        match self.values.get(key.as_str()) {
            Some(v) if v.len() as u64 > max_len => Err(too_large(v.len() as u64, max_len)),
            v => Ok(v.cloned()),
        }
    }

    fn get_range(&self, key: &StoreKey, offset: u64, len: u64, expect: Option<Stamp>) -> io::Result<Option<Vec<u8>>> {
        let Some(v) = self.values.get(key.as_str()) else {
            return Ok(None);
        };
        check_stamp(
            key,
            Stamp {
                len: v.len() as u64,
                version: 0,
            },
            expect,
        )?;
        let end = offset.checked_add(len).filter(|&e| e <= v.len() as u64);
        match end {
            Some(end) => Ok(Some(v[offset as usize..end as usize].to_vec())),
            None => Err(short_value(key, offset, len, v.len() as u64)),
        }
    }

    fn stat(&self, key: &StoreKey) -> io::Result<Option<Stamp>> {
        Ok(self.values.get(key.as_str()).map(|v| Stamp {
            len: v.len() as u64,
            version: 0,
        }))
    }

    fn list_dir(&self, prefix: &str) -> io::Result<Listing> {
        let start = if prefix.is_empty() {
            String::new()
        } else {
            format!("{prefix}/")
        };
        let mut listing = Listing::default();
        for key in self.values.keys().filter(|k| k.starts_with(&start)) {
            match key[start.len()..].split_once('/') {
                None => listing.keys.push(key[start.len()..].to_string()),
                Some((dir, _)) => {
                    if listing.prefixes.last().map(String::as_str) != Some(dir) {
                        listing.prefixes.push(dir.to_string());
                    }
                }
            }
        }
        Ok(listing)
    }
}

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

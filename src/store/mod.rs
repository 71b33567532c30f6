//! The storage boundary: a read-only key/value view of a Zarr store.
//!
//! A [`StoreKey`] is a `/`-separated key that cannot leave the store root:
//! no empty, `.` or `..` segments, no leading `/`, no NUL. A missing key is
//! `Ok(None)`; only I/O failures are errors. nzfs never writes to a store.
//!
//! Every store kind gives the same guarantees: a value is read
//! only from a regular object beneath the store root, a read never blocks on
//! a special file, and every read in progress is registered in
//! [`inflight`] so that a daemon can say which ones it abandoned when a
//! store stops answering.

mod access;
#[cfg(feature = "remote")]
mod bounded_http;
pub mod counted;
pub mod disk_cache;
pub mod documents;
mod error;
mod filesystem;
#[cfg(feature = "icechunk")]
pub mod icechunk;
pub mod inflight;
mod memory;
pub mod notes;
#[cfg(feature = "remote")]
pub mod object;
pub mod ocdbt;
mod redact;
pub mod references;
pub mod zip;

use std::fmt;
use std::io;

pub use access::{Access, Meet, Need};
pub use error::{StoreError, StoreResult};
pub use filesystem::{FilesystemStore, Symlinks};
pub use memory::{Fault, FaultyStore, MemoryStore};
pub use redact::{Redacting, redact_text, redact_url};

/// A validated store key (see the module doc).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StoreKey(String);

impl StoreKey {
    /// `key`, if it is one: not empty, no NUL, no empty, `.` or `..` segment.
    pub fn new(key: impl Into<String>) -> StoreResult<StoreKey> {
        let key = key.into();
        let ok = !key.is_empty()
            && !key.contains('\0')
            && key.split('/').all(|seg| !seg.is_empty() && seg != "." && seg != "..");
        if ok {
            Ok(StoreKey(key))
        } else {
            Err(StoreError::Corrupt(format!("invalid store key {key:?}")))
        }
    }

    /// The key's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for StoreKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether `source` names an Icechunk repository: an `icechunk+` URL, or a
/// directory laid out as one (`refs/` and `snapshots/` of format 1, or the
/// `repo` object beside `snapshots/` of format 2). Known without the
/// `icechunk` feature, so that such a source gets a clear refusal.
pub fn icechunk_source(source: &str) -> bool {
    let p = std::path::Path::new(source);
    source.starts_with("icechunk+")
        || (p.join("snapshots").is_dir() && (p.join("refs").is_dir() || p.join("repo").is_file()))
}

/// Which version of an Icechunk repository to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Version {
    /// The tip of a branch.
    Branch(String),
    /// What a tag points at.
    Tag(String),
    /// A snapshot, by id.
    Snapshot(String),
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Version::Branch(b) => write!(f, "branch {b}"),
            Version::Tag(t) => write!(f, "tag {t}"),
            Version::Snapshot(s) => write!(f, "snapshot {s}"),
        }
    }
}

/// Join a node prefix (`""` for the root, else `a/b`) and a relative key.
pub fn join(prefix: &str, rest: &str) -> StoreResult<StoreKey> {
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

/// One byte range of [`ReadableStore::get_ranges`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RangeRequest {
    /// The object.
    pub key: StoreKey,
    /// The first byte.
    pub offset: u64,
    /// How many bytes (fewer come back past the object's end).
    pub len: u64,
    /// The version of the object the range must come from, if one was read
    /// before: a replaced object is an error, not a mix of two versions.
    pub expect: Option<Stamp>,
}

/// What a store is like, for the layers above it ([`ReadableStore::profile`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    /// How many requests it serves well at once: prefetching keeps that
    /// many in flight. A local disk wants few; object storage hides its
    /// latency behind many.
    pub concurrency: usize,
    /// Whether reading an object again is cheap (a local file, likely in
    /// the page cache) rather than a request that costs a round trip and
    /// perhaps money. Decoded chunks that the kernel page cache holds whole
    /// are let go only for such stores (`fs::served`).
    pub rereads_are_cheap: bool,
    /// Whether an object may be rewritten in place under its key while
    /// mounted, with no change of metadata (object storage: an xarray
    /// append rewrites its last chunk), so that a decode of it is checked
    /// against its version again after the mount's interval
    /// (`array::fresh`). A local directory is checked on its own terms
    /// (`rereads_are_cheap`); Icechunk snapshots, zips and reference sets
    /// are followed whole.
    pub rewritten_in_place: bool,
}

impl Default for Profile {
    /// A store with no hint: two requests at once, rereads that cost,
    /// objects never rewritten in place.
    fn default() -> Self {
        Profile {
            concurrency: 2,
            rereads_are_cheap: false,
            rewritten_in_place: false,
        }
    }
}

/// One page of a listing ([`Listable::list_page`]).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ListPage {
    /// The names of this page.
    pub listing: Listing,
    /// The name to pass as `start_after` for the next page; `None` at the end.
    pub next: Option<String>,
}

/// Whether `s` is a URL (`scheme://…`, RFC 3986's scheme: a letter, then
/// letters, digits, `+`, `-` or `.`), not a local path: the one test of
/// "is this a URL" that the command line, the daemon and the CSI plugin
/// share. A path such as `/data/a://b` is a path.
pub fn is_url(s: &str) -> bool {
    s.split_once("://").is_some_and(|(scheme, _)| {
        let mut chars = scheme.chars();
        chars.next().is_some_and(|c| c.is_ascii_alphabetic())
            && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    })
}

/// Whether `s` is an object-store URL (a scheme the `remote` feature
/// reads), whether or not this build reads it.
pub fn object_url(s: &str) -> bool {
    [
        "s3://", "gs://", "az://", "abfs://", "abfss://", "http://", "https://", "adl://", "azure://",
    ]
    .iter()
    .any(|p| s.starts_with(p))
}

/// The listing of `prefix` in a store whose keys are those of `keys` (any
/// sorted map of full keys): a memory store, a zip's members, a reference
/// set's keys. The keys under one sub-prefix are adjacent in byte order, so
/// each sub-prefix is pushed once.
pub fn sorted_listing<V>(keys: &std::collections::BTreeMap<String, V>, prefix: &str) -> Listing {
    let start = if prefix.is_empty() {
        String::new()
    } else {
        format!("{prefix}/")
    };
    let mut out = Listing::default();
    for key in keys.range(start.clone()..).map(|(k, _)| k) {
        let Some(rest) = key.strip_prefix(&start) else { break };
        match rest.split_once('/') {
            None => out.keys.push(rest.to_string()),
            Some((dir, _)) if out.prefixes.last().is_none_or(|p| p != dir) => out.prefixes.push(dir.to_string()),
            Some(_) => {}
        }
    }
    out
}

/// Whether `path` is `dir` or lies below it, as `/`-separated keys and
/// node paths do (`""` is the root, above every path).
pub fn is_at_or_below(path: &str, dir: &str) -> bool {
    dir.is_empty()
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// What a store lists: the names under a prefix, whole or a page at a
/// time. Apart from the data methods of [`ReadableStore`], so that a
/// listing is decided by each store and decorator on its own (neither
/// method forwards by default) and code that only lists says so.
pub trait Listable {
    /// The keys and prefixes directly under `prefix` (`""` is the root).
    fn list_dir(&self, prefix: &str) -> StoreResult<Listing>;
    /// At most `limit` names under `prefix` (keys and prefixes together, in
    /// byte order of the name) that sort after `start_after`, and the name
    /// to resume after when there are more. An object store overrides this
    /// with its paged LIST; the default pages a [`Listable::list_dir`].
    fn list_page(&self, prefix: &str, start_after: Option<&str>, limit: usize) -> StoreResult<ListPage> {
        let all = self.list_dir(prefix)?;
        let mut names: Vec<(String, bool)> = all
            .keys
            .into_iter()
            .map(|k| (k, false))
            .chain(all.prefixes.into_iter().map(|p| (p, true)))
            .filter(|(n, _)| start_after.is_none_or(|a| n.as_str() > a))
            .collect();
        names.sort();
        let more = names.len() > limit;
        names.truncate(limit);
        let next = more.then(|| names.last().map(|(n, _)| n.clone())).flatten();
        let mut page = ListPage::default();
        for (name, is_prefix) in names {
            if is_prefix {
                page.listing.prefixes.push(name)
            } else {
                page.listing.keys.push(name)
            }
        }
        page.next = next;
        Ok(page)
    }
}

/// A readable, listable store: its objects' values and versions, the
/// hints and facts a decorator forwards by construction, and (through
/// [`Listable`]) its listings.
pub trait ReadableStore: Listable + Send + Sync {
    /// The value at `key`, or `None` when there is none. Values longer than
    /// `max_len` are an error, so a hostile object cannot exhaust memory.
    fn get(&self, key: &StoreKey, max_len: u64) -> StoreResult<Option<Vec<u8>>>;
    /// [`ReadableStore::get`] into `buf` (emptied first), so that a caller
    /// can reuse one allocation for many values; `false` when there is no
    /// value. The default moves `get`'s value in; a local filesystem reads
    /// straight into `buf`.
    fn get_into(&self, key: &StoreKey, max_len: u64, buf: &mut Vec<u8>) -> StoreResult<bool> {
        buf.clear();
        match self.get(key, max_len)? {
            Some(value) => {
                *buf = value;
                Ok(true)
            }
            None => Ok(false),
        }
    }
    /// [`ReadableStore::get_into`], with the [`Stamp`] of the value read
    /// where the store can tell it (`None`: absent, or unknown): what a
    /// decode that is checked against its object later is read with. The
    /// default asks [`ReadableStore::stat`], then reads; a local
    /// filesystem takes the stamp from the file it opened for the read
    /// (one resolve and one `fstat` for both).
    fn get_stamped(&self, key: &StoreKey, max_len: u64, buf: &mut Vec<u8>) -> StoreResult<(bool, Option<Stamp>)> {
        let stamp = self.stat(key)?;
        Ok((self.get_into(key, max_len, buf)?, stamp))
    }
    /// `len` bytes of the value at `key` from byte `offset`, or `None` when
    /// there is no value. A value too short for the range is an error, and
    /// so is one whose [`Stamp`] is not `expect` when that is given (the
    /// object was replaced or rewritten since it was stamped).
    fn get_range(&self, key: &StoreKey, offset: u64, len: u64, expect: Option<Stamp>) -> StoreResult<Option<Vec<u8>>>;
    /// The length and version of the value at `key`, or `None` when there is none.
    fn stat(&self, key: &StoreKey) -> StoreResult<Option<Stamp>>;
    /// The version of directory `prefix` where the store has directories
    /// whose version changes when a name in them is added, removed or
    /// replaced (a local filesystem: inode, change and modification
    /// times); `None` elsewhere, and where there is no such directory.
    fn dir_stamp(&self, prefix: &str) -> StoreResult<Option<Stamp>> {
        self.wrapped().map_or(Ok(None), |s| s.dir_stamp(prefix))
    }
    /// Several byte ranges, of one key or many, in one call; the results
    /// come in request order, each as [`ReadableStore::get_range`] would
    /// give it. A remote store overrides this to issue them concurrently;
    /// the default asks one after the other, which is what a local
    /// filesystem does best.
    fn get_ranges(&self, requests: &[RangeRequest]) -> Vec<StoreResult<Option<Vec<u8>>>> {
        requests
            .iter()
            .map(|r| self.get_range(&r.key, r.offset, r.len, r.expect))
            .collect()
    }
    /// The store's metadata changed (a mount that follows it read it
    /// again): forget every look at an object's version still held as
    /// recent, so that the next read of each object asks the store (the
    /// disk cache would otherwise serve a chunk the writer rewrote as it
    /// held it, under the new metadata, until its look ran out).
    fn forget_looks(&self) {
        if let Some(s) = self.wrapped() {
            s.forget_looks()
        }
    }
    /// What the disk cache in front of this store answered itself
    /// (`--disk-cache`), where there is one.
    fn disk_cache(&self) -> Option<std::sync::Arc<disk_cache::DiskCacheStats>> {
        self.wrapped().and_then(|s| s.disk_cache())
    }
    /// What the store is like ([`Profile`]). A decorator that changes it
    /// starts from its inner store's whole, changing only what it changes,
    /// so that a hint added to [`Profile`] reaches through every decorator.
    fn profile(&self) -> Profile {
        self.wrapped().map_or_else(Profile::default, |s| s.profile())
    }
    /// A hint that the value at `key` will be read soon (the
    /// prefetch window's objects): a local filesystem asks the kernel to
    /// read it into the page cache in the background, so the disk works
    /// ahead of the decoders. Never an error; the default does nothing.
    fn will_need(&self, key: &StoreKey) {
        if let Some(s) = self.wrapped() {
            s.will_need(key)
        }
    }
    /// The owner and mode of the object or prefix at `path` (`""` is the
    /// root), or `None` when the store has no such notion or no such path.
    fn access(&self, path: &str) -> StoreResult<Option<Access>> {
        self.wrapped().map_or(Ok(None), |s| s.access(path))
    }
    /// The version of its store these bytes are of, where the store keeps
    /// versions (an Icechunk snapshot's id): a commit this mount made on
    /// that version can be served from what it serves.
    fn snapshot(&self) -> Option<String> {
        self.wrapped().and_then(|s| s.snapshot())
    }
    /// The store this one wraps, where it is a decorator (a counter, a
    /// cache, a fault injector): the hints and facts (`dir_stamp`,
    /// `forget_looks`, `disk_cache`, `profile`, `will_need`, `access`,
    /// `snapshot`)
    /// then reach it by construction, and a decorator overrides only those
    /// it changes. The methods that return values (`get`, the ranges,
    /// `stat`, the listings) never forward by default: a decorator decides
    /// each, so none is bypassed. `None` for a store of its own.
    fn wrapped(&self) -> Option<&dyn ReadableStore> {
        None
    }
}

/// The one tokio runtime every remote store runs its requests on (object
/// storage, Icechunk repositories, the targets of reference sets): started
/// on first use with [`crate::cpus::io_threads`] threads, which only move
/// bytes (decoding happens on the callers' threads), and kept for the
/// process's life. Callers block on their own request only.
#[cfg(feature = "remote")]
pub(crate) fn runtime() -> StoreResult<&'static tokio::runtime::Runtime> {
    static RUNTIME: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    if let Some(r) = RUNTIME.get() {
        return Ok(r);
    }
    let built = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(crate::cpus::io_threads())
        .thread_name("nzfs-io")
        .enable_all()
        .build()?;
    // Two first callers may both build one; the loser's is dropped unused.
    Ok(RUNTIME.get_or_init(|| built))
}

/// What identifies one version of a stored object: its length, and a
/// number that changes when it is replaced or rewritten (inode and change
/// times on a filesystem).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// The object's length.
    pub len: u64,
    /// Changes when the object is replaced or rewritten.
    pub version: u64,
}

pub(crate) fn check_stamp(key: &StoreKey, have: Stamp, expect: Option<Stamp>) -> StoreResult<()> {
    match expect {
        Some(want) if want != have => Err(StoreError::Changed(format!(
            "{key} changed while mounted (now {} bytes, was {})",
            have.len, want.len
        ))),
        _ => Ok(()),
    }
}

pub(crate) fn short_value(key: &StoreKey, offset: u64, len: u64, have: u64) -> StoreError {
    StoreError::Corrupt(format!(
        "range {offset}..{} is past the end of {key} ({have} bytes)",
        offset.saturating_add(len)
    ))
}

/// An object larger than the most its reader asked for: every store
/// refuses it with this error, so a reader can tell it from other failures
/// and ask again with a larger limit.
pub(crate) fn too_large(len: u64, max_len: u64) -> StoreError {
    StoreError::TooLarge { len, max_len }
}

/// Whether `e` (a store error carried above the store as an
/// `io::Error`) is a refusal of an object over the reader's limit.
pub fn is_too_large(e: &io::Error) -> bool {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<StoreError>())
        .is_some_and(|s| matches!(s, StoreError::TooLarge { .. }))
}

/// A range request larger than this is refused (hostile index entries).
pub const MAX_RANGE: u64 = 4 << 30;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_told_from_paths_by_their_scheme() {
        for url in ["s3://b/x.zarr", "https://h/x", "file:///d", "icechunk+s3://b", "gs://b"] {
            assert!(is_url(url), "{url}");
        }
        for path in ["/data/x.zarr", "x.zarr", "/data/a://b", "://x", "1s3://b", "a b://c"] {
            assert!(!is_url(path), "{path}");
        }
    }

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
    fn ranges_and_pages() {
        let mut m = MemoryStore::default();
        m.insert("a/x", "0123456789");
        m.insert("a/y", "abc");
        for k in ["a/b/0", "a/c/0", "a/d"] {
            m.insert(k, "z");
        }
        let req = |k: &str, offset, len| RangeRequest {
            key: StoreKey::new(k).unwrap(),
            offset,
            len,
            expect: None,
        };
        let got = m.get_ranges(&[
            req("a/x", 2, 3),
            req("a/y", 1, 2),
            req("a/nope", 0, 1),
            req("a/y", 2, 5),
        ]);
        assert_eq!(got[0].as_ref().unwrap().as_deref(), Some(&b"234"[..]));
        assert_eq!(got[1].as_ref().unwrap().as_deref(), Some(&b"bc"[..]));
        assert_eq!(got[2].as_ref().unwrap(), &None);
        assert!(got[3].is_err());
        let mut seen = Vec::new();
        let mut after: Option<String> = None;
        for _ in 0..10 {
            let page = m.list_page("a", after.as_deref(), 2).unwrap();
            seen.extend(page.listing.keys.iter().map(|k| format!("k:{k}")));
            seen.extend(page.listing.prefixes.iter().map(|p| format!("p:{p}")));
            after = page.next;
            if after.is_none() {
                break;
            }
        }
        seen.sort();
        assert_eq!(seen, ["k:d", "k:x", "k:y", "p:b", "p:c"]);
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

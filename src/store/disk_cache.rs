//! A bounded local disk cache of a remote store's raw objects
//! (`--disk-cache DIR --disk-cache-size SIZE`), as a [`ReadableStore`]
//! wrapped around the remote one.
//!
//! What is kept: whole chunk objects and byte ranges of shards, each keyed
//! by its object's version (length and ETag or generation). Metadata
//! (`zarr.json`, `.zarray`, `.zmetadata`, …) and listings always go to
//! the store, so every mount sees the hierarchy as it is now. Before a
//! cached object is used, its current version is asked of the store (one
//! `HEAD`, no body), at most once per [`RECHECK_AFTER`] per object in a
//! mount: a second mount of the same URL reads cached chunks without
//! downloading them, and a chunk rewritten in place, created or deleted
//! since (an xarray append rewrites the last chunk) is read as it is now,
//! never as the old bytes or the old absence.
//!
//! Invariants:
//! - an entry is one file, written whole to a temporary name and renamed
//!   into place, so mounts that share `DIR` never see half an entry;
//! - an entry holds its full identity (store URL and key) and a CRC-32C of
//!   its bytes: a hash collision or a damaged file is a miss (and the file
//!   is removed), never wrong data;
//! - the files under `DIR/nzfs-cache-v1` stay within the budget, give or
//!   take the entries written since the last sweep: a mount that adds an
//!   entry past the budget removes the least recently used entries (by
//!   modification time, which a hit refreshes) until 90% of it is used;
//! - the cache is an optimisation only: any error in it is logged once
//!   and the request goes to the store.
//!
//! - an object is fetched for the cache with the version its look found
//!   (`If-Match` in effect: a mismatch is an error, and the look is
//!   dropped), so no entry holds bytes under another version's name.

use crate::store::{StoreError, StoreResult};
use std::fs;
use std::hash::Hasher;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{ListPage, Listing, RangeRequest, ReadableStore, Stamp, StoreKey};
use crate::store::documents::{ZARR_JSON, ZARRAY, ZATTRS, ZGROUP, ZMETADATA};

/// How long a look at an object's version holds in a mount.
pub const RECHECK_AFTER: Duration = Duration::from_secs(60);

/// Looks kept in memory at most (all are dropped when full).
const MAX_LOOKS: usize = 1 << 20;

const MAGIC: &[u8; 8] = b"NZFSDC1\n";
const VERSION_DIR: &str = "nzfs-cache-v1";

/// What a disk cache answered itself, and its size (for `nzfs status`,
/// whose store-read counts leave these out: they never reached the store).
#[derive(Debug, Default)]
pub struct DiskCacheStats {
    /// Reads (objects and ranges) answered from the disk.
    pub hits: AtomicU64,
    /// Bytes those reads returned.
    pub hit_bytes: AtomicU64,
    /// Reads passed on to the store.
    pub misses: AtomicU64,
    /// Stats answered without the store (a look at the object's version
    /// less than [`RECHECK_AFTER`] old).
    pub stat_hits: AtomicU64,
    /// Bytes of entries, as measured at the last sweep plus those written
    /// since (`u64::MAX` until the first measurement).
    pub used_bytes: AtomicU64,
    /// The budget.
    pub budget_bytes: AtomicU64,
}

/// A remote store with a disk cache in front of it.
pub struct DiskCached {
    inner: Box<dyn ReadableStore>,
    /// `DIR/nzfs-cache-v1`.
    root: PathBuf,
    /// Identifies the store in every entry (its URL without secrets).
    store: String,
    budget: u64,
    /// Bytes written since the last sweep (a sweep measures the rest).
    written: AtomicU64,
    sweeping: Mutex<()>,
    warned: AtomicBool,
    stats: Arc<DiskCacheStats>,
    /// The versions the store gave for objects (`None`: absent), and when.
    looks: Mutex<std::collections::HashMap<String, (Option<Stamp>, Instant)>>,
}

/// Whether `key` is metadata (never cached).
fn is_metadata(key: &StoreKey) -> bool {
    let name = key.as_str().rsplit('/').next().unwrap_or_default();
    matches!(name, ZARR_JSON | ZARRAY | ZGROUP | ZATTRS | ZMETADATA)
}

/// A 128-bit name for an identity (two FNV-1a passes with different seeds).
fn file_name(identity: &str) -> String {
    let pass = |seed: u64| {
        let mut f = Fnv(seed);
        f.write(identity.as_bytes());
        f.finish()
    };
    format!(
        "{:016x}{:016x}",
        pass(0xcbf2_9ce4_8422_2325),
        pass(0x8422_2325_cbf2_9ce4)
    )
}

/// FNV-1a, stable across processes and Rust releases (unlike `DefaultHasher`).
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

impl DiskCached {
    /// Wrap `inner` (named `store` in messages) with a cache in `dir` of at
    /// most `budget` bytes. `dir` is created when missing.
    pub fn new(inner: Box<dyn ReadableStore>, store: &str, dir: &Path, budget: u64) -> StoreResult<DiskCached> {
        let root = dir.join(VERSION_DIR);
        fs::create_dir_all(&root).map_err(|e| StoreError::from(e).context(format!("disk cache {}", root.display())))?;
        let stats = Arc::new(DiskCacheStats::default());
        stats.used_bytes.store(u64::MAX, Ordering::Relaxed);
        stats.budget_bytes.store(budget, Ordering::Relaxed);
        let cache = DiskCached {
            inner,
            root,
            store: store.to_string(),
            budget,
            written: AtomicU64::new(0),
            sweeping: Mutex::new(()),
            warned: AtomicBool::new(false),
            stats,
            looks: Mutex::default(),
        };
        // What is there already, measured off the mount's path.
        let (root, stats) = (cache.root.clone(), cache.stats.clone());
        let _ = std::thread::Builder::new()
            .name("nzfs-disk-cache".into())
            .spawn(move || {
                let total = entries(&root).iter().map(|e| e.1).sum();
                let _ = stats
                    .used_bytes
                    .compare_exchange(u64::MAX, total, Ordering::Relaxed, Ordering::Relaxed);
            });
        Ok(cache)
    }

    /// A read answered from the disk, of `bytes` bytes.
    fn hit(&self, bytes: usize) {
        self.stats.hits.fetch_add(1, Ordering::Relaxed);
        self.stats.hit_bytes.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    fn path(&self, identity: &str) -> PathBuf {
        let name = file_name(identity);
        self.root.join(&name[..2]).join(name)
    }

    fn warn(&self, what: &str, e: &dyn std::fmt::Display) {
        if !self.warned.swap(true, Ordering::Relaxed) {
            tracing::warn!(cache = %self.root.display(), error = %e, "disk cache {what} failed; reading from the store (logged once)");
        }
    }

    /// The cached bytes of `identity`, at most `max_len` of them.
    fn load(&self, identity: &str, max_len: u64) -> Option<Vec<u8>> {
        let path = self.path(identity);
        let mut file = fs::File::open(&path).ok()?;
        let mut head = [0u8; 8 + 4];
        file.read_exact(&mut head).ok()?;
        let id_len = u32::from_le_bytes(head[8..12].try_into().ok()?) as usize;
        let valid = &head[..8] == MAGIC && id_len == identity.len();
        let mut id = vec![0u8; if valid { id_len } else { 0 }];
        let mut len = [0u8; 8];
        let read = valid && file.read_exact(&mut id).is_ok() && file.read_exact(&mut len).is_ok();
        if !read || id != identity.as_bytes() {
            return None; // another identity with the same name, or damaged
        }
        let len = u64::from_le_bytes(len);
        if len > max_len.min(super::MAX_RANGE) {
            return None;
        }
        let mut body = vec![0u8; len as usize + 4];
        if file.read_exact(&mut body).is_err() {
            let _ = fs::remove_file(&path);
            return None;
        }
        let crc = u32::from_le_bytes(body[len as usize..].try_into().ok()?);
        body.truncate(len as usize);
        if crc32c::crc32c(&body) != crc {
            tracing::warn!(file = %path.display(), "damaged disk-cache entry removed");
            let _ = fs::remove_file(&path);
            return None;
        }
        // A hit makes the entry recently used.
        let _ = file.set_modified(std::time::SystemTime::now());
        Some(body)
    }

    /// Keep `bytes` as `identity`; errors are logged once and ignored.
    fn keep(&self, identity: &str, bytes: &[u8]) {
        let path = self.path(identity);
        let result = (|| -> StoreResult<u64> {
            let dir = path.parent().expect("entries live in a subdirectory");
            fs::create_dir_all(dir)?;
            // A name no other writer (thread or mount) uses at the same time.
            static SEQUENCE: AtomicU64 = AtomicU64::new(0);
            let n = SEQUENCE.fetch_add(1, Ordering::Relaxed);
            let tmp_path = dir.join(format!(".{}.{n}.tmp", std::process::id()));
            let mut tmp = fs::OpenOptions::new().write(true).create_new(true).open(&tmp_path)?;
            let mut entry = Vec::with_capacity(bytes.len() + identity.len() + 24);
            entry.extend_from_slice(MAGIC);
            entry.extend_from_slice(&(identity.len() as u32).to_le_bytes());
            entry.extend_from_slice(identity.as_bytes());
            entry.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
            entry.extend_from_slice(bytes);
            entry.extend_from_slice(&crc32c::crc32c(bytes).to_le_bytes());
            let written = tmp.write_all(&entry).and_then(|()| fs::rename(&tmp_path, &path));
            if written.is_err() {
                let _ = fs::remove_file(&tmp_path);
            }
            Ok(written.map(|()| entry.len() as u64)?)
        })();
        match result {
            Ok(n) => {
                let used = &self.stats.used_bytes;
                let _ = used.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |u| {
                    (u != u64::MAX).then(|| u.saturating_add(n))
                });
                let written = self.written.fetch_add(n, Ordering::Relaxed) + n;
                if written > self.budget / 10 {
                    self.sweep();
                }
            }
            Err(e) => self.warn("write", &e),
        }
    }

    /// Remove least recently used entries while the cache is over budget.
    fn sweep(&self) {
        let Ok(_one) = self.sweeping.try_lock() else { return };
        self.written.store(0, Ordering::Relaxed);
        let mut entries = entries(&self.root);
        let mut total: u64 = entries.iter().map(|e| e.1).sum();
        self.stats.used_bytes.store(total, Ordering::Relaxed);
        if total <= self.budget {
            return;
        }
        entries.sort();
        let target = self.budget / 10 * 9;
        for (_, len, path) in entries {
            if total <= target {
                break;
            }
            if fs::remove_file(&path).is_ok() {
                total -= len;
            }
        }
        self.stats.used_bytes.store(total, Ordering::Relaxed);
    }

    /// The version of `key` in the store now: asked of it unless looked
    /// at less than [`RECHECK_AFTER`] ago; and whether the store was not
    /// asked.
    fn look(&self, key: &StoreKey) -> StoreResult<(Option<Stamp>, bool)> {
        if let Some((stamp, at)) = crate::sync::lock(&self.looks).get(key.as_str())
            && at.elapsed() < RECHECK_AFTER
        {
            return Ok((*stamp, true));
        }
        let stamp = self.inner.stat(key)?;
        let mut looks = crate::sync::lock(&self.looks);
        if looks.len() >= MAX_LOOKS {
            looks.clear();
        }
        looks.insert(key.as_str().to_string(), (stamp, Instant::now()));
        Ok((stamp, false))
    }

    /// Forget the look at `key` (a fetch found another version).
    fn forget(&self, key: &StoreKey) {
        crate::sync::lock(&self.looks).remove(key.as_str());
    }

    /// The identity of object `key` at version `stamp`.
    fn object_identity(&self, key: &StoreKey, stamp: Stamp) -> String {
        format!("{}\0{}\0{}", self.identity("object", key), stamp.len, stamp.version)
    }

    fn identity(&self, kind: &str, key: &StoreKey) -> String {
        format!("{}\n{kind}\n{key}", self.store)
    }

    /// The identity of a range of a known version; `None` (never cached)
    /// for a range read without a stamp.
    fn range_identity(&self, r: &RangeRequest) -> Option<String> {
        let s = r.expect?;
        Some(self.identity(&format!("range {} {} {} {}", r.offset, r.len, s.len, s.version), &r.key))
    }
}

/// The entries under `root`: modification time, length, path. Temporary
/// files left by a writer that died mid-entry (an hour old) are removed.
fn entries(root: &Path) -> Vec<(std::time::SystemTime, u64, PathBuf)> {
    let mut entries = Vec::new();
    for sub in fs::read_dir(root).into_iter().flatten().flatten() {
        for e in fs::read_dir(sub.path()).into_iter().flatten().flatten() {
            let Ok(m) = e.metadata() else { continue };
            let stale_tmp = e.file_name().to_string_lossy().ends_with(".tmp")
                && m.modified()
                    .is_ok_and(|t| t.elapsed().is_ok_and(|age| age.as_secs() > 3600));
            if stale_tmp {
                let _ = fs::remove_file(e.path());
            } else if m.is_file() {
                entries.push((m.modified().unwrap_or(std::time::UNIX_EPOCH), m.len(), e.path()));
            }
        }
    }
    entries
}

impl ReadableStore for DiskCached {
    fn get(&self, key: &StoreKey, max_len: u64) -> StoreResult<Option<Vec<u8>>> {
        if is_metadata(key) {
            return self.inner.get(key, max_len);
        }
        let Some(stamp) = self.look(key)?.0 else {
            return Ok(None);
        };
        let identity = self.object_identity(key, stamp);
        if let Some(hit) = self.load(&identity, max_len).filter(|h| h.len() as u64 == stamp.len) {
            self.hit(hit.len());
            return Ok(Some(hit));
        }
        self.stats.misses.fetch_add(1, Ordering::Relaxed);
        if stamp.len == 0 || stamp.len > max_len {
            // Nothing to fetch by range; the store says what is too large.
            return self.inner.get(key, max_len);
        }
        match self.inner.get_range(key, 0, stamp.len, Some(stamp)) {
            Ok(Some(v)) => {
                self.keep(&identity, &v);
                Ok(Some(v))
            }
            other => {
                // Changed (or gone) since the look: look again next time.
                self.forget(key);
                other
            }
        }
    }

    fn get_range(&self, key: &StoreKey, offset: u64, len: u64, expect: Option<Stamp>) -> StoreResult<Option<Vec<u8>>> {
        let request = RangeRequest {
            key: key.clone(),
            offset,
            len,
            expect,
        };
        self.get_ranges(std::slice::from_ref(&request))
            .pop()
            .expect("one answer per request")
    }

    fn stat(&self, key: &StoreKey) -> StoreResult<Option<Stamp>> {
        if is_metadata(key) {
            return self.inner.stat(key);
        }
        let (stamp, held) = self.look(key)?;
        if held {
            self.stats.stat_hits.fetch_add(1, Ordering::Relaxed);
        }
        Ok(stamp)
    }

    fn forget_looks(&self) {
        crate::sync::lock(&self.looks).clear();
    }

    fn get_ranges(&self, requests: &[RangeRequest]) -> Vec<StoreResult<Option<Vec<u8>>>> {
        // Hits from disk; the misses go to the store together.
        let identities: Vec<Option<String>> = requests.iter().map(|r| self.range_identity(r)).collect();
        let hits: Vec<Option<Vec<u8>>> = requests
            .iter()
            .zip(&identities)
            .map(|(r, id)| {
                let id = id.as_ref()?;
                self.load(id, r.len).filter(|h| h.len() as u64 == r.len)
            })
            .collect();
        let missing: Vec<RangeRequest> = requests
            .iter()
            .zip(&hits)
            .filter(|(_, hit)| hit.is_none())
            .map(|(r, _)| r.clone())
            .collect();
        for h in hits.iter().flatten() {
            self.hit(h.len());
        }
        self.stats.misses.fetch_add(missing.len() as u64, Ordering::Relaxed);
        let mut fetched = self.inner.get_ranges(&missing).into_iter();
        hits.into_iter()
            .zip(identities)
            .map(|(hit, id)| match hit {
                Some(h) => Ok(Some(h)),
                None => {
                    let got = fetched.next().expect("one answer per miss");
                    if let (Ok(Some(v)), Some(id)) = (&got, id) {
                        self.keep(&id, v);
                    }
                    got
                }
            })
            .collect()
    }

    fn disk_cache(&self) -> Option<Arc<DiskCacheStats>> {
        Some(self.stats.clone())
    }

    fn wrapped(&self) -> Option<&dyn ReadableStore> {
        Some(self.inner.as_ref())
    }
}

impl crate::store::Listable for DiskCached {
    fn list_dir(&self, prefix: &str) -> StoreResult<Listing> {
        self.inner.list_dir(prefix)
    }

    fn list_page(&self, prefix: &str, start_after: Option<&str>, limit: usize) -> StoreResult<ListPage> {
        self.inner.list_page(prefix, start_after, limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    fn key(k: &str) -> StoreKey {
        StoreKey::new(k).unwrap()
    }

    /// A store of `MemoryStore`'s objects whose reads with a body are
    /// counted.
    struct Counted(MemoryStore, Arc<AtomicU64>);

    impl ReadableStore for Counted {
        fn get(&self, key: &StoreKey, max_len: u64) -> StoreResult<Option<Vec<u8>>> {
            self.1.fetch_add(1, Ordering::Relaxed);
            self.0.get(key, max_len)
        }
        fn get_range(
            &self,
            key: &StoreKey,
            offset: u64,
            len: u64,
            expect: Option<Stamp>,
        ) -> StoreResult<Option<Vec<u8>>> {
            self.1.fetch_add(1, Ordering::Relaxed);
            self.0.get_range(key, offset, len, expect)
        }
        fn stat(&self, key: &StoreKey) -> StoreResult<Option<Stamp>> {
            self.0.stat(key)
        }
    }

    impl crate::store::Listable for Counted {
        fn list_dir(&self, prefix: &str) -> StoreResult<Listing> {
            self.0.list_dir(prefix)
        }
    }

    fn counted(m: MemoryStore) -> (Box<dyn ReadableStore>, Arc<AtomicU64>) {
        let n = Arc::new(AtomicU64::new(0));
        (Box::new(Counted(m, n.clone())), n)
    }

    #[test]
    fn entries_serve_a_new_cache_only_while_the_store_holds_their_version() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = MemoryStore::default();
        m.insert("a/c/0", "chunk zero");
        m.insert("a/zarr.json", "{}");
        let cache = DiskCached::new(Box::new(m.clone()), "s3://b/x.zarr", dir.path(), 1 << 20).unwrap();
        assert_eq!(cache.get(&key("a/c/0"), 100).unwrap().unwrap(), b"chunk zero");
        // A second cache over the same store: the chunk comes from disk
        // (no read with a body), the metadata does not.
        let (store, reads) = counted(m.clone());
        let again = DiskCached::new(store, "s3://b/x.zarr", dir.path(), 1 << 20).unwrap();
        assert_eq!(again.get(&key("a/c/0"), 100).unwrap().unwrap(), b"chunk zero");
        assert_eq!(reads.load(Ordering::Relaxed), 0);
        assert_eq!(again.get(&key("a/zarr.json"), 100).unwrap().unwrap(), b"{}");
        assert_eq!(reads.load(Ordering::Relaxed), 1);
        // The object rewritten (another version): its new bytes, not the
        // entry's; deleted: absent, not the entry.
        let mut rewritten = MemoryStore::default();
        rewritten.insert("a/c/0", "chunk zero, rewritten");
        let fresh = DiskCached::new(Box::new(rewritten), "s3://b/x.zarr", dir.path(), 1 << 20).unwrap();
        assert_eq!(
            fresh.get(&key("a/c/0"), 100).unwrap().unwrap(),
            b"chunk zero, rewritten"
        );
        let gone = DiskCached::new(Box::new(MemoryStore::default()), "s3://b/x.zarr", dir.path(), 1 << 20).unwrap();
        assert_eq!(gone.get(&key("a/c/0"), 100).unwrap(), None);
        assert_eq!(gone.stat(&key("a/c/0")).unwrap(), None);
        // Another store's identity never matches.
        let (store, reads) = counted(m.clone());
        let other = DiskCached::new(store, "s3://b/y.zarr", dir.path(), 1 << 20).unwrap();
        assert_eq!(other.get(&key("a/c/0"), 100).unwrap().unwrap(), b"chunk zero");
        assert_eq!(reads.load(Ordering::Relaxed), 1);
        // A damaged entry is removed and read from the store.
        let stamp = m.stat(&key("a/c/0")).unwrap().unwrap();
        let path = again.path(&again.object_identity(&key("a/c/0"), stamp));
        let mut bytes = fs::read(&path).unwrap();
        let last = bytes.len() - 6;
        bytes[last] ^= 0xff;
        fs::write(&path, bytes).unwrap();
        let (store, reads) = counted(m);
        let repaired = DiskCached::new(store, "s3://b/x.zarr", dir.path(), 1 << 20).unwrap();
        assert_eq!(repaired.get(&key("a/c/0"), 100).unwrap().unwrap(), b"chunk zero");
        assert_eq!(reads.load(Ordering::Relaxed), 1);
        assert!(path.exists(), "written again");
    }

    #[test]
    fn the_budget_is_kept_by_evicting_the_least_recently_used() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = MemoryStore::default();
        for i in 0..40 {
            m.insert(&format!("c/{i}"), vec![i as u8; 1000]);
        }
        let cache = DiskCached::new(Box::new(m), "s3://b/x.zarr", dir.path(), 10_000).unwrap();
        for i in 0..40 {
            assert_eq!(
                cache.get(&key(&format!("c/{i}")), 2000).unwrap().unwrap(),
                vec![i as u8; 1000]
            );
        }
        cache.sweep();
        let total: u64 = walk(&dir.path().join(VERSION_DIR))
            .iter()
            .map(|p| fs::metadata(p).unwrap().len())
            .sum();
        assert!(total <= 10_000, "{total} bytes on disk for a 10000-byte budget");
        // The newest entry survived.
        let newest = cache.path(&cache.object_identity(&key("c/39"), Stamp { len: 1000, version: 0 }));
        assert!(newest.exists());
    }

    fn walk(dir: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        for e in fs::read_dir(dir).unwrap().flatten() {
            if e.path().is_dir() {
                out.extend(walk(&e.path()));
            } else {
                out.push(e.path());
            }
        }
        out
    }
}

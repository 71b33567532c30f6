//! Whether a cached decode still shows its store object (issue #29).
//!
//! On a store where a second look is cheap (a local filesystem), the
//! [`Stamp`] of a chunk object (inode, size, change and modification time)
//! is taken just before the object is read for a decode, and kept beside
//! the cached chunk. A cached chunk is checked against its object again
//! when it is served more than [`RECHECK_AFTER`] after its last check, or
//! at once when a file that shows it is opened: a changed, replaced,
//! deleted or new object drops the cached decode, so the next read decodes
//! what the store holds now. Remote stores are not tracked here (a check
//! would be a request per read); their shards' ranged reads are checked
//! against the ETag the index was read with.
//!
//! Invariants: a chunk is never served from a decode whose object is known
//! to have changed; the table holds an entry per cached chunk, pruned to
//! what the cache still holds whenever it doubles; the stamp is taken
//! before the read, so a change that races the decode is seen at the next
//! check, never missed.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{ArrayCache, CacheKey};
use crate::store::{ReadableStore, Stamp, StoreKey};

/// How long a check of a cached chunk's object holds.
pub const RECHECK_AFTER: Duration = Duration::from_secs(1);

struct Seen {
    /// The object's stamp before its decode (`None`: it was absent).
    stamp: Option<Stamp>,
    checked: Instant,
}

#[derive(Default)]
struct Table {
    seen: HashMap<CacheKey, Seen>,
    /// The table's size at which it is next pruned.
    prune_at: usize,
}

pub(super) struct Freshness {
    on: bool,
    table: Mutex<Table>,
}

impl Freshness {
    pub(super) fn new(on: bool) -> Self {
        Freshness {
            on,
            table: Mutex::new(Table {
                seen: HashMap::new(),
                prune_at: 1024,
            }),
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Note the stamp of `key` before it is read for the decode cached
    /// under `ck`.
    pub(super) fn before_decode(&self, store: &dyn ReadableStore, key: &StoreKey, ck: CacheKey, cache: &ArrayCache) {
        if !self.on {
            return;
        }
        // A failed stat leaves no entry: the decode itself reports errors.
        let Ok(stamp) = store.stat(key) else {
            self.table().seen.remove(&ck);
            return;
        };
        let mut t = self.table();
        let checked = Instant::now();
        t.seen.insert(ck, Seen { stamp, checked });
        if t.seen.len() >= t.prune_at {
            t.seen.retain(|k, _| *k == ck || cache.is_present(k));
            t.prune_at = (t.seen.len() * 2).max(1024);
        }
    }

    /// Check the cached decode under `ck` against its object (`key`, made
    /// only when a look at the store is due: a read whose check still holds
    /// builds no key) when its last check is older than [`RECHECK_AFTER`]
    /// (or always, with `now`), and drop it from `cache` when the object
    /// changed.
    pub(super) fn recheck(
        &self,
        store: &dyn ReadableStore,
        key: impl FnOnce() -> Option<StoreKey>,
        ck: CacheKey,
        cache: &ArrayCache,
        now: bool,
    ) -> Check {
        if !self.on {
            return Check::Untracked;
        }
        let before = match self.table().seen.get(&ck) {
            Some(s) if now || s.checked.elapsed() >= RECHECK_AFTER => s.stamp,
            Some(_) => return Check::Fresh,
            None => return Check::Unknown,
        };
        let Some(key) = key() else {
            return Check::Unknown;
        };
        let current = store.stat(&key).ok();
        let changed = current != Some(before);
        let mut t = self.table();
        if changed {
            t.seen.remove(&ck);
            drop(t);
            cache.invalidate(&ck);
            tracing::debug!(%key, "the store object changed since its decode: decoding it again");
        } else if let Some(s) = t.seen.get_mut(&ck) {
            s.checked = Instant::now();
        }
        match changed {
            true => Check::Changed,
            false => Check::Fresh,
        }
    }
}

/// What a check of a cached decode found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The object is as it was (or was checked recently).
    Fresh,
    /// The object changed: the decode was dropped.
    Changed,
    /// No decode of it is known (never decoded, or long gone).
    Unknown,
    /// The store is not tracked (remote stores check ETags themselves).
    Untracked,
}

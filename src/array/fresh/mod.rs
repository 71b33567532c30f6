//! Whether a cached decode still shows its store object.
//!
//! On a store where a second look is cheap (a local filesystem), the
//! [`Stamp`] of a chunk object (inode, size, change and modification time)
//! is taken just before the object is read for a decode, and kept beside
//! the cached chunk. A cached chunk is checked against its object again
//! when it is served more than [`RECHECK_AFTER`] after its last check, or
//! at once when a file that shows it is opened: a changed, replaced,
//! deleted or new object drops the cached decode, so the next read decodes
//! what the store holds now. On a store whose objects may be rewritten in
//! place where a look is a request (object storage), only that check is
//! made, and no more often than the mount's interval (its
//! `--metadata-ttl`): a cached chunk served after its interval is checked
//! with one `HEAD` (at open too, after the interval), so a chunk an
//! xarray append rewrote is not served as it was; their shards' ranged
//! reads are checked against the ETag the index was read with. The kernel
//! views' generations below follow such a store too, their looks at most
//! once per interval and [`REMOTE_GENERATION_BATCH`] objects each.
//!
//! The kernel's page cache holds what the views served, long after the
//! daemon's cache let the decode go. So the stamp of every object read for
//! a decode is also noted per array (at most [`MAX_NOTED`] in all), and
//! [`Freshness::generation`] stats them again, [`GENERATION_BATCH`] at a
//! time in turn (a look costs the same however many were read): an
//! array's generation goes up when one changed, and the views show it in
//! their mtime, which the kernel (with `FUSE_AUTO_INVAL_DATA` and a short
//! attribute timeout) compares to drop its stale pages. An array past the bound gets a new
//! generation on every look: always right, only slower. The array's
//! directories and objects, as the meet of its combined files' modes last
//! walked them ([`Freshness::watch`]), are looked at in the same turns: a
//! chunk written since, which no decode has read, adds a name to a
//! directory, and a `chmod` or rewrite of an object no decode has read
//! changes its stamp (its change time); either counts the generation up,
//! so that meet is made again.
//!
//! Whoever set [`Freshness::on_change`] is told of each change found,
//! before anything decoded from the changed object is served (the FUSE
//! adapter drops the kernel's pages of every view that showed it).
//!
//! The datasets that one store read again gives share one [`Freshness`]
//! (and one cache): an array is known by its node's number and its node's
//! generation ([`Of`]), so a node whose metadata changed is noted afresh,
//! and a dataset that no longer serves it notes nothing of it.
//!
//! Invariants: a chunk is never served from a decode whose object is known
//! to have changed; the table holds an entry per cached chunk, pruned to
//! what the cache still holds whenever it doubles; the stamp is taken
//! before the read, so a change that races the decode is seen at the next
//! check, never missed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{ArrayCache, CacheKey};
use crate::store::{ReadableStore, Stamp, StoreKey};

/// How long a check of a cached chunk's object holds.
pub const RECHECK_AFTER: Duration = Duration::from_secs(1);

/// How long a check of a remote object holds, unless the mount says
/// otherwise (object storage's metadata interval: `open::REMOTE_METADATA_TTL`).
pub const REMOTE_RECHECK_AFTER: Duration = Duration::from_secs(60);

/// The most objects whose stamps are noted for the kernel's views.
pub const MAX_NOTED: usize = 1 << 18;

/// The most noted objects one look at an array's generation stats again:
/// a `stat` of a view costs the same however many chunks were read (it
/// stat'ed every one: 0.77 s for 262,144). An array with more noted
/// objects is looked at in turns, so a change among them shows within
/// `noted / GENERATION_BATCH` looks.
pub const GENERATION_BATCH: usize = 1024;

/// The most noted objects of a remote store one look at an array's
/// generation asks about (a `HEAD` each), at most once per interval: a
/// change among more shows within `noted / REMOTE_GENERATION_BATCH`
/// intervals of use.
pub const REMOTE_GENERATION_BATCH: usize = 32;

/// The places of the next `batch` of `len` entries looked at in turn from
/// `cursor`, which moves past them.
fn in_turn(len: usize, cursor: &mut usize, batch: usize) -> impl Iterator<Item = usize> {
    let take = len.min(batch);
    let start = if len == 0 { 0 } else { *cursor % len };
    *cursor = if len == 0 { 0 } else { (start + take) % len };
    (0..take).map(move |i| (start + i) % len)
}

/// What was read for one array's decodes.
#[derive(Default)]
struct Noted {
    /// The generation of the array's node these were noted under
    /// ([`super::CacheKey::generation`]): a node whose metadata changed is
    /// another array, noted afresh.
    node_generation: u32,
    stamps: HashMap<u64, Option<Stamp>>,
    /// The noted chunks in the order they were first noted (none is ever
    /// dropped), and where the next look starts.
    order: Vec<u64>,
    cursor: usize,
    generation: u64,
    overflowed: bool,
    /// The array's directories and objects as the meet of its combined
    /// files last walked them, each with its stamp from the walk, looked at
    /// in turn with the noted objects: a name added or replaced in a
    /// directory (a chunk written since), or an object whose owner, mode
    /// or bytes changed, counts one up too, though no decode read it.
    watched: Vec<Watched>,
    watch_cursor: usize,
    /// When a remote store's objects were last looked at for the
    /// generation.
    looked: Option<Instant>,
    /// Whether a file that combines the array's values (`data.bin`, the
    /// `.nc`, the TIFFs) served bytes, which the kernel may hold: only then
    /// are a remote store's objects looked at for the generation, so that
    /// listing a directory asks nothing of the store.
    shown: bool,
}

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

/// A directory or object of an array as a walk of it saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Watched {
    /// Where it is in the store.
    pub key: StoreKey,
    /// A directory (its stamp changes when a name in it is added, removed
    /// or replaced), else an object.
    pub dir: bool,
    /// Its stamp before the walk listed or read its access.
    pub stamp: Option<Stamp>,
}

impl Watched {
    /// Its stamp as the store holds it now (`None` when the look failed).
    fn now(&self, store: &dyn ReadableStore) -> Option<Option<Stamp>> {
        match self.dir {
            true => store.dir_stamp(self.key.as_str()).ok(),
            false => store.stat(&self.key).ok(),
        }
    }
}

/// A watched place and where it is in its array's list.
type WatchedAt = (usize, Watched);

/// The most directories and objects of one array watched
/// ([`Freshness::watch`]); a change to one past them shows once an object
/// read for the values changes, or at the next mount.
pub const MAX_WATCHED: usize = 1 << 16;

/// Told `(array, chunk)` when a chunk object is found changed since a
/// decode read it, before anything decoded from it now is served.
pub type OnChange = Box<dyn Fn(usize, u64) + Send + Sync>;

pub(super) struct Freshness {
    on: bool,
    /// Whether the store's objects may be rewritten in place though a
    /// look is a request ([`crate::store::Profile::rewritten_in_place`]).
    remote: bool,
    /// How long a check of such an object holds, in milliseconds (0: never
    /// checked).
    remote_every: std::sync::atomic::AtomicU64,
    table: Mutex<Table>,
    /// By array: the stamps of the objects its decodes read.
    noted: Mutex<(HashMap<usize, Noted>, usize)>,
    /// Who is told of a change (the FUSE adapter drops the kernel's pages
    /// of the views that showed the old object): the filesystem served
    /// now, which the datasets sharing these checks each set in turn.
    on_change: std::sync::RwLock<Option<Arc<OnChange>>>,
}

/// An array as the checks know it: its node's number and its node's
/// generation ([`super::CacheKey`]'s `node` and `generation`).
pub(super) type Of = (usize, u32);

/// The entry of the array `(node, generation)` in `by_array`, noted
/// afresh where its node's generation moved on (its metadata changed: its
/// chunks may be other objects now). Where a dataset that no longer serves
/// it asks (an older generation), which notes nothing: `Err` with what the
/// newer generation counted.
fn entry_of<'a>(
    by_array: &'a mut HashMap<usize, Noted>,
    total: &mut usize,
    (node, generation): Of,
) -> Result<&'a mut Noted, u64> {
    let noted = by_array.entry(node).or_insert_with(|| Noted {
        node_generation: generation,
        ..Noted::default()
    });
    if noted.node_generation < generation {
        *total = total.saturating_sub(noted.order.len());
        // One more than the old count: a view's mtime never comes back.
        *noted = Noted {
            node_generation: generation,
            generation: noted.generation + 1,
            ..Noted::default()
        };
    }
    match noted.node_generation == generation {
        true => Ok(noted),
        false => Err(noted.generation),
    }
}

impl Freshness {
    #[cfg(test)]
    pub(super) fn new(on: bool) -> Self {
        Self::with_remote(on, false)
    }

    /// For `store`: tracked whole where rereads are cheap; else checked
    /// every [`REMOTE_RECHECK_AFTER`] (until told otherwise) where its
    /// objects may be rewritten in place.
    pub(super) fn for_store(store: &dyn ReadableStore) -> Self {
        let p = store.profile();
        Self::with_remote(p.rereads_are_cheap, p.rewritten_in_place)
    }

    fn with_remote(on: bool, remote: bool) -> Self {
        let every = REMOTE_RECHECK_AFTER.as_millis() as u64;
        Freshness {
            on,
            remote,
            remote_every: std::sync::atomic::AtomicU64::new(every),
            table: Mutex::new(Table {
                seen: HashMap::new(),
                prune_at: 1024,
            }),
            noted: Mutex::new((HashMap::new(), 0)),
            on_change: std::sync::RwLock::new(None),
        }
    }

    /// Tell `f` of every change found from now on, in place of whoever
    /// was told before.
    pub(super) fn on_change(&self, f: OnChange) {
        *self.on_change.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(f));
    }

    /// Chunk `chunk` of `array` was found changed (called with no lock
    /// held: the callee may wait on the kernel).
    fn changed(&self, (node, _): Of, chunk: u64) {
        let told = self.on_change.read().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(f) = told {
            f(node, chunk);
        }
    }

    /// Whether objects are checked at all (a store where a second look is
    /// cheap).
    pub(super) fn on(&self) -> bool {
        self.on
    }

    /// Check a remote store's cached decodes every `every` (`None`: never,
    /// as a mount that does not follow its store).
    pub(super) fn check_remote_every(&self, every: Option<Duration>) {
        let ms = every.map_or(0, |d| (d.as_millis() as u64).max(1));
        self.remote_every.store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// How long a check of a cached decode holds, where decodes are checked.
    fn interval(&self) -> Option<Duration> {
        if self.on {
            return Some(RECHECK_AFTER);
        }
        match self.remote_every.load(std::sync::atomic::Ordering::Relaxed) {
            0 => None,
            _ if !self.remote => None,
            ms => Some(Duration::from_millis(ms)),
        }
    }

    /// Whether a decode's read takes its object's stamp, to be checked
    /// against later.
    pub(super) fn stamps(&self) -> bool {
        self.interval().is_some()
    }

    /// Note that chunk `chunk` of array `array` was read as `stamp` (`None`:
    /// absent) for a decode; whether it was noted as read before with
    /// another stamp (its views' generation counted up and whoever drops
    /// the kernel's pages told).
    pub(super) fn note(&self, array: Of, chunk: u64, stamp: Option<Stamp>) -> bool {
        if !self.stamps() {
            return false;
        }
        let mut guard = crate::sync::lock(&self.noted);
        let (by_array, total) = &mut *guard;
        let Ok(noted) = entry_of(by_array, total, array) else {
            return false;
        };
        let mut changed = false;
        if noted.stamps.contains_key(&chunk) || *total < MAX_NOTED {
            match noted.stamps.insert(chunk, stamp) {
                None => {
                    *total += 1;
                    noted.order.push(chunk);
                }
                // Read again, changed: what the views showed of it is old.
                Some(before) if before != stamp => {
                    noted.generation += 1;
                    changed = true;
                }
                Some(_) => {}
            }
        } else {
            noted.overflowed = true;
        }
        drop(guard);
        if changed {
            self.changed(array, chunk);
        }
        changed
    }

    /// A file that combines array `array`'s values served bytes (see
    /// `Noted::shown`); a remote store's alone is noted.
    pub(super) fn shown(&self, array: Of) {
        if self.on || !self.stamps() {
            return;
        }
        let mut guard = crate::sync::lock(&self.noted);
        let (by_array, total) = &mut *guard;
        let Ok(noted) = entry_of(by_array, total, array) else {
            return;
        };
        if !noted.shown {
            // What it showed is as fresh as the decodes: the first look is
            // due an interval from now.
            noted.shown = true;
            noted.looked = Some(Instant::now());
        }
    }

    /// Drop what was decoded from chunk `chunk` of `array` (the chunk, or a
    /// shard's index) and its check: its object changed.
    fn forget(&self, (node, generation): Of, chunk: u64, cache: &ArrayCache) {
        let whole = CacheKey::whole(node, chunk).of_generation(generation);
        cache.invalidate(&whole);
        cache.invalidate(&CacheKey::index(node, chunk).of_generation(generation));
        self.table().seen.remove(&whole);
    }

    /// The version of chunk `chunk`'s object (`key`) as the store holds it
    /// now (0: absent), for its chunk file's mtime; a change from what a
    /// decode read drops that decode and counts the array's generation up.
    /// `None` when untracked or the look fails.
    pub(super) fn current(
        &self,
        array: Of,
        chunk: u64,
        store: &dyn ReadableStore,
        key: &StoreKey,
        cache: &ArrayCache,
    ) -> Option<u64> {
        if !self.on {
            return None;
        }
        let now = store.stat(key).ok()?;
        let mut guard = crate::sync::lock(&self.noted);
        if let Some(noted) = guard.0.get_mut(&array.0).filter(|n| n.node_generation == array.1)
            && let Some(before) = noted.stamps.get_mut(&chunk)
            && *before != now
        {
            *before = now;
            noted.generation += 1;
            drop(guard);
            self.forget(array, chunk, cache);
            self.changed(array, chunk);
        }
        Some(now.map_or(0, |s| s.version ^ s.len.rotate_left(32)))
    }

    /// Watch `places` (at most [`MAX_WATCHED`]), each with its stamp from
    /// the walk, in place of those watched for `array` before.
    pub(super) fn watch(&self, array: Of, mut places: Vec<Watched>) {
        if !self.on {
            return;
        }
        places.truncate(MAX_WATCHED);
        let mut guard = crate::sync::lock(&self.noted);
        let (by_array, total) = &mut *guard;
        let Ok(noted) = entry_of(by_array, total, array) else {
            return;
        };
        noted.watched = places;
        noted.watch_cursor = 0;
    }

    /// The generation of array `array`'s values as last counted, without a
    /// look at the store.
    pub(super) fn last_generation(&self, (node, _): Of) -> u64 {
        let guard = crate::sync::lock(&self.noted);
        guard.0.get(&node).map_or(0, |n| n.generation)
    }

    /// The generation of array `array`'s values: the noted objects are
    /// stat'ed again (`key` names chunk `i`'s), at most
    /// [`GENERATION_BATCH`] of them a look, in turn, and any that changed
    /// drops its decode from `cache` and counts one up. `None` when
    /// untracked.
    pub(super) fn generation(
        &self,
        array: Of,
        store: &dyn ReadableStore,
        key: impl Fn(u64) -> Option<StoreKey>,
        cache: &ArrayCache,
    ) -> Option<u64> {
        let interval = self.interval()?;
        let lock = || crate::sync::lock(&self.noted);
        let (listed, watched): (Vec<(u64, Option<Stamp>)>, Vec<WatchedAt>) = {
            let mut guard = lock();
            let (by_array, total) = &mut *guard;
            // Nothing noted: nothing to look at (and no entry made for it).
            if !by_array.contains_key(&array.0) {
                return Some(0);
            }
            match entry_of(by_array, total, array) {
                // Asked by a dataset that no longer serves the array.
                Err(counted) => return Some(counted),
                // A remote store's objects are looked at once per interval,
                // and only once a combined file showed them.
                Ok(n) if !self.on && (!n.shown || n.looked.is_some_and(|t| t.elapsed() < interval)) => {
                    return Some(n.generation);
                }
                Ok(n) => {
                    // The next batch of them, and as many of the watched
                    // places, in turn.
                    let batch = if self.on {
                        GENERATION_BATCH
                    } else {
                        REMOTE_GENERATION_BATCH
                    };
                    n.looked = Some(Instant::now());
                    let objects = in_turn(n.order.len(), &mut n.cursor, batch)
                        .map(|i| n.order[i])
                        .map(|c| (c, n.stamps.get(&c).copied().flatten()))
                        .collect();
                    let watched = in_turn(n.watched.len(), &mut n.watch_cursor, batch)
                        .map(|i| (i, n.watched[i].clone()))
                        .collect();
                    (objects, watched)
                }
            }
        };
        let mut places_changed = Vec::new();
        for (i, place) in watched {
            let now = place.now(store);
            if now != Some(place.stamp) {
                tracing::debug!(key = %place.key, "a name was added or replaced in the array's directory, or an object's owner, mode or bytes changed: its views are refreshed");
                places_changed.push((i, place.key, now.flatten()));
            }
        }
        let mut changed = Vec::new();
        for (chunk, before) in listed {
            let Some(k) = key(chunk) else { continue };
            let now = match store.stat(&k) {
                // A remote look that failed (the network) says nothing.
                Err(_) if !self.on => continue,
                result => result.ok(),
            };
            if now != Some(before) {
                tracing::debug!(key = %k, "the store object changed since it was read: its views are refreshed");
                changed.push((chunk, now.flatten()));
            }
        }
        for &(chunk, _) in &changed {
            self.forget(array, chunk, cache);
        }
        let mut guard = lock();
        let (by_array, total) = &mut *guard;
        let noted = match entry_of(by_array, total, array) {
            Ok(noted) => noted,
            Err(counted) => return Some(counted),
        };
        if !changed.is_empty() || !places_changed.is_empty() {
            noted.generation += 1;
        }
        for (i, key, now) in places_changed {
            if let Some(w) = noted.watched.get_mut(i).filter(|w| w.key == key) {
                w.stamp = now;
            }
        }
        for &(chunk, now) in &changed {
            noted.stamps.insert(chunk, now);
        }
        if noted.overflowed {
            noted.generation += 1;
        }
        let generation = noted.generation;
        drop(guard);
        for (chunk, _) in changed {
            self.changed(array, chunk);
        }
        Some(generation)
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        crate::sync::lock(&self.table)
    }

    /// Note `stamp`, the stamp of the object read for the decode cached
    /// under `ck` as it was when the read began (`None`: the read failed,
    /// and leaves no entry: the decode itself reports errors; `Some(None)`:
    /// no object).
    pub(super) fn read_for_decode(&self, stamp: Option<Option<Stamp>>, ck: CacheKey, cache: &ArrayCache) {
        if !self.stamps() {
            return;
        }
        let Some(stamp) = stamp else {
            self.table().seen.remove(&ck);
            return;
        };
        self.note((ck.node, ck.generation), ck.chunk, stamp);
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
        let Some(interval) = self.interval() else {
            return Check::Untracked;
        };
        // Checked at once (an open) only where a look is cheap; a remote
        // object waits for its interval.
        let now = now && self.on;
        let before = match self.table().seen.get(&ck) {
            Some(s) if now || s.checked.elapsed() >= interval => s.stamp,
            Some(_) => return Check::Fresh,
            None => return Check::Unknown,
        };
        let Some(key) = key() else {
            return Check::Unknown;
        };
        let current = match store.stat(&key) {
            // A remote look that failed (the network) says nothing: the
            // decode is kept, and looked at again next time.
            Err(_) if !self.on => return Check::Unknown,
            result => result.ok(),
        };
        let changed = current != Some(before);
        let mut t = self.table();
        if changed {
            t.seen.remove(&ck);
            drop(t);
            cache.invalidate(&ck);
            tracing::debug!(%key, "the store object changed since its decode: decoding it again");
            // Noted as it is now (which counts the generation up and tells
            // whoever drops the kernel's pages), so that the coming decode
            // does not count the same change again.
            // A remote object past the noted bound is told here.
            if let Some(now) = current
                && !self.note((ck.node, ck.generation), ck.chunk, now)
                && !self.on
            {
                self.changed((ck.node, ck.generation), ck.chunk);
            }
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

#[cfg(test)]
mod tests;

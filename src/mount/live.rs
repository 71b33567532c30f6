//! The filesystem a mount serves, and how it follows the store's metadata.
//!
//! [`Live`] holds the filesystem every request is answered from. When the
//! mount follows its store (`--metadata-ttl`), the metadata's first look
//! (a `stat` per metadata document and a listing per group, or the root's
//! documents for consolidated metadata) is taken before the mount is live
//! where it is cheap; else (object storage without consolidated metadata:
//! a `HEAD` per document would make the mount take twice as long) the
//! first look, an interval after the mount, reads the metadata again and
//! compares it with what the mount read. After that, a request that arrives
//! once the interval has passed since the last look starts a look on a
//! thread of its own (the request itself never waits for the store). When
//! it differs from the last, the hierarchy is read again; where a node
//! differs (or an Icechunk branch moved), a filesystem is made from it
//! ([`NzFs::renewed`]: node numbers kept, a new decoded-chunk cache) and
//! swapped in; the kernel is told to
//! drop what it holds of each changed node, its directory and its named
//! files, and of the nodes above it (their headers and `.nc` show it), and
//! the names of removed nodes, and of the chunk files of each changed array
//! (at most [`MAX_CHUNK_DROPS`]; past them a chunk file's pages go when its
//! attributes time out, within the interval: [`Live::ttl`], as its mtime
//! changed).
//!
//! An idle mount makes no request at all; a busy one makes one look per
//! interval. One line is logged for each change seen. A commit of the
//! mount's own on the version it serves is served from that version
//! without a read ([`Live::serve_own_commit`]): only what it changed is
//! new.
//!
//! The named files of changed nodes are new files (`fs/renew.rs`): the
//! kernel is told to look their names up again, and a filesystem served
//! before answers for the old files that readers still hold open, whose
//! inode numbers only it knows.
//!
//! Invariants: at most one look runs at a time; a request loads the
//! filesystem once and answers from it whole (or from the one retired
//! version that knows the file's inode number), so no reply mixes two
//! versions of the metadata; a look that fails (the store unreachable, a
//! document half-written) changes nothing, and is tried again at the next
//! interval. A version served before is kept only while the kernel holds
//! a file that only it can answer for (an open file holds its inode; the
//! kernel is told to drop the names of the others at the change, and then
//! forgets them: [`Live::looked_up`], [`Live::forgotten`]), and
//! at most [`MAX_RETIRED`] of them, holding at most
//! [`MAX_RETIRED_DOCUMENT_BYTES`] of metadata documents, are kept: past
//! either, the oldest goes, and its readers are told the store changed. So
//! the parsed metadata a mount holds is its current version's plus at most
//! that many bytes of documents (each parsed at about four times its
//! size), however often another writer changes the store.

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use super::Invalidator;
use super::kernel::{Kernel, KernelSlot};
use crate::fs::status::schema::Metadata;
use crate::fs::{NzFs, OwnCommit, Rereading};
use arc_swap::ArcSwap;

/// The most chunk files the kernel is told to drop after one change (a
/// notification each, about a microsecond when the kernel holds none).
const MAX_CHUNK_DROPS: u64 = 1 << 20;

/// The decoded chunks kept for readers of files of an older Icechunk
/// snapshot, for each of the [`MAX_RETIRED`] older versions: what the
/// mount's memory may hold past its cache budget (each version's newest
/// chunk, where that alone is larger).
const OLD_VERSION_CACHE: u64 = 8 << 20;

/// The most versions of the metadata served before the one served now
/// whose files readers may still read (a reader holding a file open
/// across more changes than this is told the store changed).
const MAX_RETIRED: usize = 8;

/// The most bytes of metadata documents the versions served before the
/// one served now keep parsed, together (the oldest goes past it): one
/// hierarchy's budget.
const MAX_RETIRED_DOCUMENT_BYTES: u64 = crate::zarr::hierarchy::MAX_TOTAL_METADATA_BYTES;

/// The filesystem a mount serves now, and what follows the store for it.
pub struct Live {
    fs: ArcSwap<NzFs>,
    follow: Option<Follow>,
    /// The filesystems served before this one, newest first (at most
    /// [`MAX_RETIRED`]): each serves the files of its version that readers
    /// still hold open (their old inode numbers), and is kept only while
    /// the kernel holds one. Locked after `held`, where both are.
    retired: Mutex<VecDeque<Arc<NzFs>>>,
    /// The named files the kernel holds (a followed mount's only), by
    /// inode number: its lookups of each not yet forgotten.
    held: Mutex<std::collections::HashMap<u64, u64>>,
    invalidator: Option<Arc<Invalidator>>,
    notifier: KernelSlot,
}

/// How often a look at the store's metadata is due, and what the last
/// ones found.
struct Follow {
    every: Duration,
    /// How the store is looked at and read again.
    how: Arc<dyn Rereading>,
    base: Instant,
    /// When the next look is due, in milliseconds since `base`.
    due_ms: AtomicU64,
    looking: AtomicBool,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// What the last look found (`None` before the first).
    seen: Option<u64>,
    /// Changes served since the mount.
    version: u64,
    looks: u64,
    checked: Option<SystemTime>,
    changed: Option<SystemTime>,
    /// Why the last look could not read the store again, if it could not.
    failed: Option<String>,
}

impl Live {
    /// Serve `fs`, looking at the store's metadata every so often, as
    /// `follow` says (`None`: never, for a pinned version or
    /// `--metadata-ttl never`).
    pub fn new(
        fs: Arc<NzFs>,
        follow: Option<(Duration, Arc<dyn Rereading>)>,
        invalidator: Option<Arc<Invalidator>>,
        notifier: KernelSlot,
    ) -> Arc<Live> {
        // The first look is what later looks compare with (a change from
        // then on is seen); none is made while the mount is idle.
        let follow = follow.map(|(every, how)| {
            // The first look before the mount is live where it is cheap;
            // else the first look, due after the first interval, reads the
            // metadata again and compares it with what the mount read.
            let seen = match how.cheap(fs.store(), fs.hierarchy()) {
                true => Some(how.look(fs.store(), fs.hierarchy())),
                false => None,
            };
            // The next look is due an interval after this one ended (a
            // look at a large store takes a while).
            Follow {
                every,
                base: Instant::now(),
                due_ms: AtomicU64::new(every.as_millis() as u64),
                looking: AtomicBool::new(false),
                state: Mutex::new(State {
                    looks: u64::from(seen.is_some()),
                    checked: seen.map(|_| SystemTime::now()),
                    seen,
                    ..State::default()
                }),
                how,
            }
        });
        Arc::new(Live {
            fs: ArcSwap::new(fs),
            follow,
            retired: Mutex::default(),
            held: Mutex::default(),
            invalidator,
            notifier,
        })
    }

    /// The same filesystem, looked at again as `follow` says (`None`:
    /// never).
    pub fn following(&self, follow: Option<(Duration, Arc<dyn Rereading>)>) -> Arc<Live> {
        Live::new(
            self.fs_arc(),
            follow,
            self.invalidator.clone(),
            Arc::clone(&self.notifier),
        )
    }

    /// The filesystem to answer a request from.
    pub fn fs(&self) -> arc_swap::Guard<Arc<NzFs>> {
        self.fs.load()
    }

    /// The filesystem to answer a request about `ino` from, where `now`,
    /// the one served now, has another version of that file (one a reader
    /// opened before a change): the one served then, if it is among the
    /// last `MAX_RETIRED`.
    pub fn version_of(&self, now: &NzFs, ino: u64) -> Option<Arc<NzFs>> {
        if self.follow.is_none() || !now.is_stale(ino) {
            return None;
        }
        let retired = crate::sync::lock(&self.retired);
        retired.iter().find(|fs| !fs.is_stale(ino)).cloned()
    }

    /// The kernel was handed named file `ino` (a lookup or a listing with
    /// attributes): counted until it forgets it, so that the version that
    /// knows it is kept while the kernel may ask about it (an open file
    /// holds its inode). Other inodes keep their numbers across changes:
    /// not counted.
    pub fn looked_up(&self, ino: u64) {
        if self.follow.is_some() && may_go_stale(ino) {
            *crate::sync::lock(&self.held).entry(ino).or_default() += 1;
        }
    }

    /// The kernel forgot `n` of its lookups of `ino`: at the last one, the
    /// versions served before that no held file needs go.
    pub fn forgotten(&self, ino: u64, n: u64) {
        if self.follow.is_none() || !may_go_stale(ino) {
            return;
        }
        let last = {
            let mut held = crate::sync::lock(&self.held);
            match held.get_mut(&ino) {
                Some(count) if *count > n => {
                    *count -= n;
                    false
                }
                Some(_) => {
                    held.remove(&ino);
                    true
                }
                None => false,
            }
        };
        if last {
            self.prune(&self.fs.load());
        }
    }

    /// Keep, of the versions served before `now`, only those that answer
    /// for a file the kernel holds (the first, newest first, that knows a
    /// held inode `now` does not), within [`MAX_RETIRED`] and
    /// [`MAX_RETIRED_DOCUMENT_BYTES`].
    fn prune(&self, now: &NzFs) {
        let held = crate::sync::lock(&self.held);
        let mut retired = crate::sync::lock(&self.retired);
        if retired.is_empty() {
            return;
        }
        let mut needed = vec![false; retired.len()];
        for &ino in held.keys().filter(|&&ino| now.is_stale(ino)) {
            if let Some(i) = retired.iter().position(|fs| !fs.is_stale(ino)) {
                needed[i] = true;
            }
        }
        let mut bytes = 0u64;
        let mut kept = 0;
        let mut i = 0;
        retired.retain(|fs| {
            let keep = needed[i] && kept < MAX_RETIRED && {
                bytes = bytes.saturating_add(fs.hierarchy().document_bytes());
                bytes <= MAX_RETIRED_DOCUMENT_BYTES || kept == 0
            };
            i += 1;
            kept += usize::from(keep);
            keep
        });
    }

    /// How many versions served before the one served now are kept.
    fn retired_count(&self) -> usize {
        crate::sync::lock(&self.retired).len()
    }

    /// The filesystem, held past the request (a reply sent later).
    pub fn fs_arc(&self) -> Arc<NzFs> {
        self.fs.load_full()
    }

    /// How long the kernel may keep what it caches of names and
    /// attributes that do not follow the store's objects: `long`, or the
    /// interval when the metadata is followed.
    pub fn ttl(&self, long: Duration) -> Duration {
        self.follow.as_ref().map_or(long, |f| f.every.min(long))
    }

    /// Something in the mount was looked at: start a look at the store's
    /// metadata when one is due and none runs. Never waits.
    pub fn poke(self: &Arc<Self>) {
        let Some(f) = &self.follow else { return };
        let now = f.base.elapsed().as_millis() as u64;
        if now < f.due_ms.load(Ordering::Relaxed) || f.looking.swap(true, Ordering::AcqRel) {
            return;
        }
        let me = Arc::clone(self);
        let started = std::thread::Builder::new().name("nzfs-follow".into()).spawn(move || {
            me.look(false);
            if let Some(f) = &me.follow {
                let next = f.base.elapsed() + f.every;
                f.due_ms.store(next.as_millis() as u64, Ordering::Relaxed);
                f.looking.store(false, Ordering::Release);
            }
        });
        if started.is_err() {
            f.looking.store(false, Ordering::Release);
        }
    }

    /// Look at the store now and wait for it (after this mount's own
    /// commit, which must show when the writer's `close()` returns): a
    /// look already running is waited for, then one more is made.
    /// `later`: from a request the kernel answers with the directories it
    /// names locked (`mkdir`, `rmdir`, `rename`): the new filesystem is
    /// served when this returns, and the kernel is told what changed on a
    /// thread of its own, after the reply (telling it now would wait on
    /// those locks, which wait on the reply).
    fn look_now_telling(&self, later: bool) {
        self.while_looking(&mut || self.look(later));
    }

    /// Serve the metadata after `commit`, a commit this mount made itself
    /// (`from_dir_request`: told to the kernel after the reply, as a look's): made
    /// from what is served, with no read of the store's metadata, where
    /// that is the commit's parent, so that a change costs what it changed
    /// and not what the store holds; else a look.
    pub fn serve_own_commit(&self, commit: &OwnCommit<'_>, from_dir_request: bool) {
        let Some(f) = &self.follow else { return };
        self.while_looking(&mut || {
            let fs = self.fs.load_full();
            match f.how.after_own_commit(fs.store(), fs.hierarchy(), commit) {
                Some((made, seen)) => {
                    let before = crate::sync::lock(&f.state).seen;
                    self.serve(&fs, made, (before, seen), from_dir_request);
                }
                None => self.look(from_dir_request),
            }
        });
    }

    /// `look` as the one look running (a look already running is waited
    /// for); the next look is due an interval after it.
    fn while_looking(&self, look: &mut dyn FnMut()) {
        let Some(f) = &self.follow else { return };
        while f.looking.swap(true, Ordering::AcqRel) {
            std::thread::sleep(Duration::from_millis(5));
        }
        look();
        let next = f.base.elapsed() + f.every;
        f.due_ms.store(next.as_millis() as u64, Ordering::Relaxed);
        f.looking.store(false, Ordering::Release);
    }

    /// One look: compare the metadata with the last look, and serve it
    /// anew when it changed. With no last look (a store whose first look
    /// waited for the first interval), the metadata is read again and
    /// compared with what the mount serves.
    fn look(&self, tell_later: bool) {
        let Some(f) = &self.follow else { return };
        let fs = self.fs.load_full();
        let now = f.how.look(fs.store(), fs.hierarchy());
        let before = {
            let mut st = crate::sync::lock(&f.state);
            st.looks += 1;
            st.checked = Some(SystemTime::now());
            match st.seen {
                Some(before) if before == now => return,
                before => before,
            }
        };
        match f.how.reread(fs.store(), fs.hierarchy(), before) {
            Ok(reread) => self.serve(&fs, reread, (before, now), tell_later),
            Err(e) => self.failed(e.to_string(), before),
        }
    }

    /// A look that found a change cannot serve it, for `why`: what the
    /// next look compares with is `before`, so that it tries again.
    fn failed(&self, why: String, before: Option<u64>) {
        let Some(f) = &self.follow else { return };
        tracing::warn!(error = %why, "the store's metadata changed but cannot be read again; still serving what was read before (tried again at the next look)");
        let mut st = crate::sync::lock(&f.state);
        st.failed = Some(why);
        st.seen = before;
    }

    /// Serve `reread`, the metadata after `fs`, the filesystem served
    /// now; `(before, now)`: what the last look found, and what this one
    /// did.
    fn serve(&self, fs: &Arc<NzFs>, reread: crate::fs::Reread, (before, now): (Option<u64>, u64), tell_later: bool) {
        let Some(f) = &self.follow else { return };
        let other_store = reread.store.is_some();
        let renewed = match fs.renewed(reread) {
            Ok(r) => Arc::new(r),
            Err(e) => return self.failed(e.to_string(), before),
        };
        let changed = renewed.changed().to_vec();
        // Documents written again as they were (or a first look that found
        // what the mount read): nothing to serve anew. What this look saw
        // is what later looks compare with; a change since shows at the
        // next.
        if changed.is_empty() && !other_store {
            let mut st = crate::sync::lock(&f.state);
            st.seen = Some(now);
            st.failed = None;
            return;
        }
        renewed.start_prefetcher();
        if let Some(inv) = &self.invalidator {
            inv.watch(&renewed);
        }
        // No cached look at an object's version outlives the metadata it
        // was taken under (a disk cache's).
        renewed.store().forget_looks();
        // Readers holding a changed file of the old metadata open read
        // that version: from the old snapshot, which no commit changes;
        // from a store rewritten in place, not at all (fs/renew.rs).
        if !other_store {
            fs.superseded_in_place_by(&renewed);
        }
        let old = self.fs.swap(Arc::clone(&renewed));
        // What old files are read from a store rewritten in place is
        // refused: nothing to keep for it.
        let keep = if other_store { OLD_VERSION_CACHE } else { 0 };
        // A cache the new version shares (its own commit's) stays.
        if !std::ptr::eq(old.cache(), renewed.cache()) {
            old.cache().clear(keep.min(renewed.cache_budget()));
        }
        crate::sync::lock(&self.retired).push_front(Arc::clone(&old));
        self.prune(&renewed);
        match (tell_later, self.notifier.get()) {
            (_, None) => {}
            (false, Some(n)) => tell_kernel(n.as_ref(), &old, &renewed, &changed),
            (true, Some(n)) => {
                let (n, old, now, changed) = (n.clone(), Arc::clone(&old), Arc::clone(&renewed), changed.clone());
                let _ = std::thread::Builder::new()
                    .name("nzfs-tell-kernel".into())
                    .spawn(move || tell_kernel(n.as_ref(), &old, &now, &changed));
            }
        }
        let mut st = crate::sync::lock(&f.state);
        st.version += 1;
        st.changed = Some(SystemTime::now());
        st.failed = None;
        st.seen = Some(now);
        tracing::info!(
            version = st.version,
            nodes = changed.len(),
            first = %changed
                .iter()
                .take(3)
                .map(|&i| match renewed.hierarchy().nodes[i].path.as_str() {
                    "" => "/",
                    p => p,
                })
                .collect::<Vec<_>>()
                .join(", "),
            "the store's metadata changed; now serving it"
        );
    }

    /// The `metadata` member of the status document.
    pub fn status(&self) -> Metadata {
        let Some(f) = &self.follow else {
            return Metadata::default();
        };
        let st = crate::sync::lock(&f.state);
        let time = |t: Option<SystemTime>| {
            t.and_then(|t| t.duration_since(SystemTime::UNIX_EPOCH).ok())
                .map(|d| d.as_secs())
        };
        Metadata {
            followed: true,
            interval_s: f.every.as_secs(),
            version: st.version,
            looks: st.looks,
            last_checked: time(st.checked),
            last_changed: time(st.changed),
            failed: st.failed.is_some(),
            retired: self.retired_count() as u64,
        }
    }
}

/// Whether inode number `ino` may stand for another file after a change
/// (a named file, whose number carries its node's generation).
fn may_go_stale(ino: u64) -> bool {
    matches!(crate::fs::Inode::from_ino(ino), Some((crate::fs::Inode::File(..), _)))
}

/// Drop what the kernel caches of each node `changed` (numbers) and of
/// the nodes above it, in the filesystem now served; and the names of
/// the nodes `old` listed that are gone.
fn tell_kernel(n: &dyn Kernel, old: &NzFs, now: &NzFs, changed: &[usize]) {
    let h = now.hierarchy();
    // Each node whose named files are new files (new inode numbers):
    // its listing, and its files' names, which are looked up again
    // (past the budget, a lookup of an old name times out within the
    // interval, and an open or stat through it is told ESTALE, on which
    // the kernel looks the name up again). The old files' pages stay
    // with the readers that hold them open. ENOENT: the kernel holds no
    // such inode or name; nothing to drop.
    for i in now.renamed().take(MAX_CHUNK_DROPS as usize) {
        let dir = i as u64 + 1;
        let _ = n.drop_inode(dir, 0, 0);
        for name in old.file_names(i) {
            let _ = n.drop_entry(dir, OsStr::new(&name));
        }
    }
    // The chunk files of each changed array as the old metadata had
    // them (a rewritten last chunk keeps its inode): at most
    // MAX_CHUNK_DROPS in all; past them, their attributes time out
    // within the interval and their changed times drop their pages.
    let mut budget = MAX_CHUNK_DROPS;
    for &c in changed {
        for ino in old.chunk_inodes(c, budget) {
            budget -= 1;
            let _ = n.drop_inode(ino, 0, 0);
        }
    }
    // Removed nodes: their names in the directories that listed them.
    for (i, was) in old.hierarchy().nodes.iter().enumerate() {
        let gone = h.nodes.get(i).is_none_or(|now| now.parent.is_none() && i != 0);
        if let (true, Some(parent), Some(name)) = (gone, was.parent, old.listed_name(i)) {
            let _ = n.drop_entry(parent as u64 + 1, OsStr::new(name));
        }
    }
}

/// The mount core's view of the live version: what it serves, and a look
/// or a version served after its own commits.
impl super::Served for Arc<Live> {
    fn now(&self) -> Arc<NzFs> {
        self.poke();
        self.fs_arc()
    }

    fn look_now(&self, from_dir_request: bool) {
        self.look_now_telling(from_dir_request)
    }

    fn serve_own_commit(&self, commit: &OwnCommit<'_>, from_dir_request: bool) {
        Live::serve_own_commit(self, commit, from_dir_request)
    }

    fn forget_pages(&self, inos: &[u64]) {
        if let Some(inv) = &self.invalidator {
            inv.drop_files(inos);
        }
    }
}

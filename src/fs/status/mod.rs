//! What a live mount is doing, for `nzfs status`: the store, uptime, the
//! decoded-chunk cache, store reads, prefetch, and errors by kind with the
//! last few messages (each names its store key).
//!
//! The document ([`NzFs::status`], its schema in [`schema`]) is JSON, the
//! answer of the mount root to the ioctl [`STATUS_IOCTL`] (the FUSE
//! adapter's, which fills its own members). Invariants:
//! recording an error is one short critical section, and the recent list
//! is bounded ([`RECENT`] messages of at most [`MESSAGE_BYTES`]), so a
//! storm of failures costs no memory and the document always fits the
//! ioctl's [`STATUS_BYTES`].

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use super::{FsError, NzFs};
use crate::store::counted::StoreCounters;
use crate::store::disk_cache::DiskCacheStats;

pub mod schema;
use schema::{Cache, Cpus, DiskCache, Prefetch, Previews, RecentError, StatusDoc, StoreReads};

/// The most bytes of the status document: the size a restricted ioctl
/// carries (14 bits of its number).
pub const STATUS_BYTES: usize = (1 << 14) - 1;
/// The ioctl of the mount root that answers the status document:
/// `_IOR('N', 0x53, [u8; STATUS_BYTES])`; it returns the document's length.
pub const STATUS_IOCTL: u32 = (2 << 30) | ((STATUS_BYTES as u32) << 16) | ((b'N' as u32) << 8) | 0x53;
/// The most bytes `nzfs commit`'s message, and the mount's answer, hold.
pub const COMMIT_BYTES: usize = 4096;
/// The ioctl of the mount root that commits the files a writable mount
/// holds (`--commit explicit`): `_IOWR('N', 0x43, [u8; COMMIT_BYTES])`.
/// In: the commit's message, NUL-terminated (empty: one naming the
/// files). Out: the snapshot's id on the first line (empty when nothing
/// was held), then each file committed, one a line, as many as fit.
pub const COMMIT_IOCTL: u32 = (3 << 30) | ((COMMIT_BYTES as u32) << 16) | ((b'N' as u32) << 8) | 0x43;
/// The ioctl of the mount root that drops everything a writable mount
/// holds (`--commit explicit`): `_IOR('N', 0x44, [u8; COMMIT_BYTES])`.
/// Out: how many were dropped on the first line, then each path, one a
/// line, as many as fit.
pub const DISCARD_IOCTL: u32 = (2 << 30) | ((COMMIT_BYTES as u32) << 16) | ((b'N' as u32) << 8) | 0x44;
/// What stands for a recent error's message in the document others than
/// root and the mount's owner get.
pub const WITHHELD: &str = "(left out: messages name store keys; root and the mount's owner see them)";
/// How many recent errors are kept.
pub const RECENT: usize = 8;
/// The most bytes of a recent error's message, and of the store's name, in
/// the document (longer ones are cut, ending in `…`).
pub const MESSAGE_BYTES: usize = 1024;

/// `text` cut to at most [`MESSAGE_BYTES`], ending in `…` when cut.
fn bounded(text: &str) -> String {
    if text.len() <= MESSAGE_BYTES {
        return text.to_string();
    }
    format!("{}…", crate::naming::cut(text, MESSAGE_BYTES - '…'.len_utf8()))
}

pub(super) struct Status {
    started: Instant,
    pub(super) store: String,
    pub(super) store_counters: Option<Arc<StoreCounters>>,
    errors: Mutex<Errors>,
    /// `preview.png` files rendered.
    pub(super) previews_rendered: std::sync::atomic::AtomicU64,
}

#[derive(Default)]
struct Errors {
    by_kind: BTreeMap<&'static str, u64>,
    recent: VecDeque<(SystemTime, &'static str, String)>,
}

impl Status {
    /// Take over what `old` counted (the mount's start, the store's
    /// counters, the errors and their messages): the status of a
    /// filesystem made again is the mount's, not a new one's.
    pub(super) fn carry_from(&mut self, old: &Status) {
        self.started = old.started;
        self.store_counters = old.store_counters.clone();
        let errors = crate::sync::lock(&old.errors);
        *crate::sync::lock(&self.errors) = Errors {
            by_kind: errors.by_kind.clone(),
            recent: errors.recent.clone(),
        };
        self.previews_rendered = old.previews_rendered.load(Ordering::Relaxed).into();
    }
}

impl Status {
    /// The status of a mount of the store named `store`, as it starts.
    pub(super) fn of_store(store: String) -> Self {
        Status {
            started: Instant::now(),
            store,
            store_counters: None,
            errors: Mutex::default(),
            previews_rendered: Default::default(),
        }
    }
}

impl NzFs {
    /// Count an error that a reader was given (expected misses aside).
    pub fn note_error(&self, e: &FsError) {
        if e.is_expected() {
            return;
        }
        let mut errors = crate::sync::lock(&self.status.errors);
        *errors.by_kind.entry(e.kind()).or_default() += 1;
        if errors.recent.len() == RECENT {
            errors.recent.pop_front();
        }
        errors
            .recent
            .push_back((SystemTime::now(), e.kind(), bounded(&e.to_string())));
    }

    /// The status document: this filesystem's members, the adapter's
    /// (passthrough, opens, names, metadata) at their defaults for it to
    /// fill.
    pub fn status(&self) -> StatusDoc {
        let cache = self.cache();
        let stats = &cache.stats;
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let (hits, decodes, waits) = (load(&stats.hits), load(&stats.decodes), load(&stats.waits));
        let lookups = hits + waits + decodes;
        // What a disk cache answered never reached the store.
        let disk = self.store().disk_cache();
        let local = |f: fn(&DiskCacheStats) -> &AtomicU64| disk.as_ref().map_or(0, |d| load(f(d)));
        let store_reads = self.status.store_counters.as_ref().map(|c| StoreReads {
            requests: load(&c.requests).saturating_sub(local(|d| &d.hits)),
            bytes: load(&c.bytes).saturating_sub(local(|d| &d.hit_bytes)),
            lookups: load(&c.lookups).saturating_sub(local(|d| &d.stat_hits)),
            failures: load(&c.failures),
            in_flight: crate::store::inflight::count() as u64,
            concurrency: self.store().profile().concurrency as u64,
        });
        let errors = crate::sync::lock(&self.status.errors);
        let since_epoch = |t: SystemTime| t.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        StatusDoc {
            version: env!("CARGO_PKG_VERSION").into(),
            pid: u64::from(std::process::id()),
            store: bounded(&self.status.store),
            uptime_s: self.status.started.elapsed().as_secs_f64(),
            cache: Cache {
                budget_bytes: self.config.cache_bytes,
                used_bytes: cache.bytes(),
                hits,
                waits,
                decodes,
                hit_rate: (lookups > 0).then(|| (hits + waits) as f64 / lookups as f64),
                released_whole_reads: load(&stats.released),
            },
            chunks_decoded: decodes,
            previews: Previews {
                shown: self.config.previews,
                rendered: load(&self.status.previews_rendered),
            },
            store_reads,
            disk_cache: disk.as_ref().map(|d| DiskCache {
                hits: load(&d.hits),
                hit_bytes: load(&d.hit_bytes),
                misses: load(&d.misses),
                stat_hits: load(&d.stat_hits),
                used_bytes: Some(load(&d.used_bytes)).filter(|&n| n != u64::MAX),
                budget_bytes: load(&d.budget_bytes),
            }),
            prefetch: self.prefetch.get().map(|p| Prefetch {
                workers: p.workers as u64,
                queued: load(&p.counters.queued),
                done: load(&p.counters.done),
            }),
            cpus: Cpus {
                count: self.config.sizing.cpus.count as u64,
                why: self.config.sizing.cpus.reason.clone(),
                fuse_threads: self.config.sizing.fuse_threads as u64,
                decoders: self.config.sizing.decoders as u64,
            },
            errors: schema::Errors {
                total: errors.by_kind.values().sum(),
                by_kind: errors.by_kind.iter().map(|(k, n)| (k.to_string(), *n)).collect(),
                recent: errors
                    .recent
                    .iter()
                    .rev()
                    .map(|(t, kind, message)| RecentError {
                        time: since_epoch(*t),
                        kind: kind.to_string(),
                        message: message.clone(),
                    })
                    .collect(),
            },
            ..StatusDoc::default()
        }
    }
}

/// `doc` as text within [`STATUS_BYTES`], for an asker. The recent errors'
/// messages name store keys, which may lie below directories the asker
/// cannot search, and the commits' messages name files and users: they
/// are for `to_owner` alone (root or the mount's owner), and others get
/// their times, kinds and snapshots. Messages whose escaping makes the
/// document too long (control characters in a hostile key, long paths)
/// are left out too.
pub fn status_text(mut doc: StatusDoc, to_owner: bool) -> String {
    let withhold = |doc: &mut StatusDoc, note: &str| {
        for e in &mut doc.errors.recent {
            e.message = note.to_string();
        }
        // Commit messages name files, programs and users; so do the
        // reasons of failures and the spool's paths.
        for w in doc.writes.iter_mut() {
            for c in &mut w.commits {
                c.message = note.to_string();
            }
            for f in &mut w.failures {
                f.message = note.to_string();
                f.reason = note.to_string();
            }
            for k in &mut w.kept {
                k.path = note.to_string();
                k.why = note.to_string();
            }
            for p in w.staged_paths.iter_mut().chain(w.held.iter_mut()) {
                *p = note.to_string();
            }
        }
    };
    if !to_owner {
        withhold(&mut doc, WITHHELD);
        return doc.to_text();
    }
    let text = doc.to_text();
    if text.len() <= STATUS_BYTES {
        return text;
    }
    withhold(&mut doc, "(left out: too long once escaped)");
    doc.to_text()
}

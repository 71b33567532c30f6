//! What a live mount is doing, for `nzfs status`: the store, uptime, the
//! decoded-chunk cache, store reads, prefetch, and errors by kind with the
//! last few messages (each names its store key).
//!
//! The document is JSON ([`NzFs::status`]), the answer of the mount root
//! to the ioctl [`STATUS_IOCTL`] (the FUSE adapter's). Invariants:
//! recording an error is one short critical section, and the recent list
//! is bounded ([`RECENT`] messages of at most [`MESSAGE_BYTES`]), so a
//! storm of failures costs no memory and the document always fits the
//! ioctl's [`STATUS_BYTES`].

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use super::{FsError, NzFs};
use crate::json::Value;
use crate::store::counted::StoreCounters;

/// The most bytes of the status document: the size a restricted ioctl
/// carries (14 bits of its number).
pub const STATUS_BYTES: usize = (1 << 14) - 1;
/// The ioctl of the mount root that answers the status document:
/// `_IOR('N', 0x53, [u8; STATUS_BYTES])`; it returns the document's length.
pub const STATUS_IOCTL: u32 = (2 << 30) | ((STATUS_BYTES as u32) << 16) | ((b'N' as u32) << 8) | 0x53;
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

fn int(n: u64) -> Value {
    Value::UInt(n)
}

fn obj(members: Vec<(&str, Value)>) -> Value {
    Value::Object(members.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
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

    /// The status document as text, within [`STATUS_BYTES`]. `extra`
    /// members (the adapter's: passthrough) are appended. The recent
    /// errors' messages name store keys, which may lie below directories
    /// the asker cannot search: they are for `to_owner` alone (root or the
    /// mount's owner), and others get their times and kinds. Messages whose
    /// escaping makes it longer (control characters in a hostile key) are
    /// left out too.
    pub fn status_document(&self, extra: Vec<(&str, Value)>, to_owner: bool) -> String {
        if !to_owner {
            return self.status_with(extra, Some(WITHHELD)).to_string();
        }
        let doc = self.status_with(extra.clone(), None).to_string();
        if doc.len() <= STATUS_BYTES {
            return doc;
        }
        self.status_with(extra, Some("(left out: too long once escaped)"))
            .to_string()
    }

    /// The status document, `extra` members appended.
    pub fn status(&self, extra: Vec<(&str, Value)>) -> Value {
        self.status_with(extra, None)
    }

    /// The status document, with the recent errors' messages or, given
    /// one, a note in their place.
    fn status_with(&self, extra: Vec<(&str, Value)>, instead: Option<&str>) -> Value {
        let cache = self.cache();
        let stats = &cache.stats;
        let hits = stats.hits.load(Ordering::Relaxed);
        let decodes = stats.decodes.load(Ordering::Relaxed);
        let waits = stats.waits.load(Ordering::Relaxed);
        let lookups = hits + waits + decodes;
        let hit_rate = if lookups == 0 {
            Value::Null
        } else {
            Value::Float((hits + waits) as f64 / lookups as f64)
        };
        let load = |c: &std::sync::atomic::AtomicU64| int(c.load(Ordering::Relaxed));
        // What a disk cache answered never reached the store.
        let disk = self.store().disk_cache();
        let local = |f: fn(&crate::store::disk_cache::DiskCacheStats) -> &std::sync::atomic::AtomicU64| {
            disk.as_ref().map_or(0, |d| f(d).load(Ordering::Relaxed))
        };
        let less = |c: &std::sync::atomic::AtomicU64, by: u64| int(c.load(Ordering::Relaxed).saturating_sub(by));
        let store = match &self.status.store_counters {
            Some(c) => obj(vec![
                ("requests", less(&c.requests, local(|d| &d.hits))),
                ("bytes", less(&c.bytes, local(|d| &d.hit_bytes))),
                ("lookups", less(&c.lookups, local(|d| &d.stat_hits))),
                ("failures", load(&c.failures)),
                ("in_flight", int(crate::store::inflight::count() as u64)),
                ("concurrency", int(self.store().profile().concurrency as u64)),
            ]),
            None => Value::Null,
        };
        let prefetch = match self.prefetch.get() {
            Some(p) => obj(vec![
                ("workers", int(p.workers as u64)),
                ("queued", load(&p.counters.queued)),
                ("done", load(&p.counters.done)),
            ]),
            None => Value::Null,
        };
        let errors = crate::sync::lock(&self.status.errors);
        let since_epoch = |t: SystemTime| t.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let recent = errors
            .recent
            .iter()
            .rev()
            .map(|(t, kind, message)| {
                obj(vec![
                    ("time", int(since_epoch(*t))),
                    ("kind", Value::Str(kind.to_string())),
                    (
                        "message",
                        Value::Str(instead.map_or_else(|| message.clone(), str::to_string)),
                    ),
                ])
            })
            .collect();
        let mut members = vec![
            ("version", Value::Str(env!("CARGO_PKG_VERSION").into())),
            ("pid", int(u64::from(std::process::id()))),
            ("store", Value::Str(bounded(&self.status.store))),
            ("uptime_s", Value::Float(self.status.started.elapsed().as_secs_f64())),
            (
                "cache",
                obj(vec![
                    ("budget_bytes", int(self.config.cache_bytes)),
                    ("used_bytes", int(cache.bytes())),
                    ("hits", int(hits)),
                    ("waits", int(waits)),
                    ("decodes", int(decodes)),
                    ("hit_rate", hit_rate),
                    ("released_whole_reads", load(&stats.released)),
                ]),
            ),
            ("chunks_decoded", int(decodes)),
            (
                "previews",
                obj(vec![
                    ("shown", Value::Bool(self.config.previews)),
                    // Each also counts once in the cache's decodes.
                    ("rendered", load(&self.status.previews_rendered)),
                ]),
            ),
            ("store_reads", store),
            (
                "disk_cache",
                match &disk {
                    Some(d) => obj(vec![
                        ("hits", load(&d.hits)),
                        ("hit_bytes", load(&d.hit_bytes)),
                        ("misses", load(&d.misses)),
                        ("stat_hits", load(&d.stat_hits)),
                        (
                            "used_bytes",
                            match d.used_bytes.load(Ordering::Relaxed) {
                                u64::MAX => Value::Null,
                                n => int(n),
                            },
                        ),
                        ("budget_bytes", load(&d.budget_bytes)),
                    ]),
                    None => Value::Null,
                },
            ),
            ("prefetch", prefetch),
            (
                "cpus",
                obj(vec![
                    ("count", int(self.config.sizing.cpus.count as u64)),
                    ("why", Value::Str(self.config.sizing.cpus.reason.clone())),
                    ("fuse_threads", int(self.config.sizing.fuse_threads as u64)),
                    ("decoders", int(self.config.sizing.decoders as u64)),
                ]),
            ),
            (
                "errors",
                obj(vec![
                    ("total", int(errors.by_kind.values().sum())),
                    (
                        "by_kind",
                        obj(errors.by_kind.iter().map(|(k, n)| (*k, int(*n))).collect()),
                    ),
                    ("recent", Value::Array(recent)),
                ]),
            ),
        ];
        members.extend(extra);
        obj(members)
    }
}

//! What a writable mount has committed, for `nzfs status`: counts since
//! the mount, the last few commits and the last few failures (with their
//! reason), newest first; and the files the spool keeps that no handle
//! holds (a failed commit's bytes, an earlier daemon's leftovers), which
//! count against the spool's limit until their user removes them.
//!
//! Invariants: every commit the spool's target makes goes through
//! [`Spool::change`] or [`Spool::close`], which record it here; at most
//! [`KEPT`] commits and [`KEPT`] failures are kept; every kept file is
//! listed with why it is there.

use std::collections::VecDeque;
use std::time::SystemTime;

use super::{Spool, WriteError};
use crate::sync::lock;

/// How many of the last commits are kept.
pub const KEPT: usize = 10;

/// One commit made: seconds since the epoch, the snapshot, the message.
pub type Made = (u64, String, String);

/// One commit that failed: seconds since the epoch, the message, why.
pub type Failed = (u64, String, String);

/// A file the spool keeps that no handle holds: where, its bytes, why.
#[derive(Debug, Clone)]
pub struct Kept {
    /// Its path in the spool.
    pub path: std::path::PathBuf,
    /// Its size when it was kept.
    pub bytes: u64,
    /// Why it is there.
    pub why: String,
}

#[derive(Default)]
pub(super) struct History {
    made: u64,
    failed: u64,
    last: VecDeque<Made>,
    failures: VecDeque<Failed>,
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Spool {
    /// Note the outcome of a commit with `message`.
    pub(super) fn record(&self, message: &str, outcome: Result<&str, &WriteError>) {
        let mut h = lock(&self.history);
        match outcome {
            Ok(id) => {
                h.made += 1;
                h.last.push_front((now(), id.to_string(), message.to_string()));
                h.last.truncate(KEPT);
            }
            Err(e) => {
                h.failed += 1;
                h.failures.push_front((now(), message.to_string(), e.to_string()));
                h.failures.truncate(KEPT);
            }
        }
    }

    /// One commit with `message` of what `change` reads, sets and deletes
    /// at the branch's tip ([`super::Target::change`]), recorded.
    pub fn change(
        &self,
        message: &str,
        change: &mut dyn FnMut(&dyn crate::write::Stage) -> Result<(), WriteError>,
    ) -> Result<crate::write::Landed, WriteError> {
        let result = self.target.change(message, change);
        self.record(message, result.as_ref().map(|l| l.snapshot.as_str()));
        result
    }

    /// Commits made and failed since the mount, and the last ones, newest
    /// first.
    pub fn commits(&self) -> (u64, u64, Vec<Made>) {
        let h = lock(&self.history);
        (h.made, h.failed, h.last.iter().cloned().collect())
    }

    /// The last commits that failed, newest first, with why.
    pub fn failures(&self) -> Vec<Failed> {
        lock(&self.history).failures.iter().cloned().collect()
    }

    /// Keep `path` (`bytes` long) in the spool, for `why`: listed, and
    /// counted against the limit until it is removed.
    pub(super) fn keep(&self, path: &std::path::Path, bytes: u64, why: String) {
        lock(&self.kept).push(Kept {
            path: path.to_path_buf(),
            bytes,
            why,
        });
    }

    /// The files kept in the spool that are still there (a user may have
    /// removed one since: it leaves the list and the count).
    pub fn kept(&self) -> Vec<Kept> {
        let mut kept = lock(&self.kept);
        kept.retain(|k| std::fs::symlink_metadata(&k.path).is_ok());
        kept.clone()
    }

    /// The bytes kept files hold; `refresh`: those removed since leave
    /// the count first.
    pub(super) fn kept_bytes(&self, refresh: bool) -> u64 {
        match refresh {
            true => self.kept().iter().map(|k| k.bytes).sum(),
            false => lock(&self.kept).iter().map(|k| k.bytes).sum(),
        }
    }

    /// The spool paths of the files being written and edited now.
    pub fn staged_paths(&self) -> Vec<std::path::PathBuf> {
        let mut paths: Vec<_> = lock(&self.files).values().map(|s| s.path.clone()).collect();
        paths.extend(self.edit_paths());
        paths
    }

    /// Files staged (new and edited), the bytes they hold, and the limit.
    pub fn usage(&self) -> (u64, u64, u64) {
        let (new, new_bytes) = {
            let files = lock(&self.files);
            (files.len() as u64, Self::used(&files))
        };
        let (edited, edited_bytes) = self.edits_usage();
        (new + edited, new_bytes + edited_bytes, self.limit)
    }
}

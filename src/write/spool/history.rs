//! What a writable mount has committed, for `nzfs status`: counts since
//! the mount and the last few commits, newest first.
//!
//! Invariants: every commit the spool's target makes goes through
//! [`Spool::change`] or [`Spool::close`], which record it here; at most
//! [`KEPT`] commits are kept.

use std::collections::VecDeque;
use std::time::SystemTime;

use super::{Spool, WriteError};
use crate::sync::lock;

/// How many of the last commits are kept.
pub const KEPT: usize = 10;

/// One commit made: seconds since the epoch, the snapshot, the message.
pub type Made = (u64, String, String);

#[derive(Default)]
pub(super) struct History {
    made: u64,
    failed: u64,
    last: VecDeque<Made>,
}

impl Spool {
    /// Note the outcome of a commit with `message`.
    pub(super) fn record(&self, message: &str, outcome: Result<&str, &WriteError>) {
        let mut h = lock(&self.history);
        match outcome {
            Ok(id) => {
                h.made += 1;
                let now = SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                h.last.push_front((now, id.to_string(), message.to_string()));
                h.last.truncate(KEPT);
            }
            Err(_) => h.failed += 1,
        }
    }

    /// One commit with `message` of what `change` reads, sets and deletes
    /// at the branch's tip ([`super::Target::change`]), recorded.
    pub fn change(
        &self,
        message: &str,
        change: &mut dyn FnMut(&dyn crate::write::Stage) -> Result<(), WriteError>,
    ) -> Result<String, WriteError> {
        let result = self.target.change(message, change);
        self.record(message, result.as_deref());
        result
    }

    /// Commits made and failed since the mount, and the last ones, newest
    /// first.
    pub fn commits(&self) -> (u64, u64, Vec<Made>) {
        let h = lock(&self.history);
        (h.made, h.failed, h.last.iter().cloned().collect())
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

//! The writes' part of `nzfs status`: what is staged, the commits made
//! and failed, the files kept.

use super::Mount;
use crate::fs::status::schema::{CommitFailed, CommitMade, KeptFile, Writes};

impl Mount {
    /// The writes' part of the status document; `None`: a read-only mount.
    pub fn writes_status(&self) -> Option<Writes> {
        let s = self.spool()?;
        let (staged, staged_bytes, limit_bytes) = s.usage();
        let (commits_made, commits_failed, last) = s.commits();
        Some(Writes {
            staged,
            staged_bytes,
            limit_bytes,
            commits_made,
            commits_failed,
            commits: last
                .into_iter()
                .map(|(time, snapshot, message)| CommitMade {
                    time,
                    snapshot,
                    message,
                })
                .collect(),
            failures: s
                .failures()
                .into_iter()
                .map(|(time, message, reason)| CommitFailed { time, message, reason })
                .collect(),
            kept: s
                .kept()
                .into_iter()
                .map(|k| KeptFile {
                    path: k.path.display().to_string(),
                    bytes: k.bytes,
                    why: k.why,
                })
                .collect(),
            staged_paths: s.staged_paths().iter().map(|p| p.display().to_string()).collect(),
            held: s.held(),
        })
    }
}

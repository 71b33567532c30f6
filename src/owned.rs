//! Whether a directory is this user's alone: the check before nzfs writes
//! there on a privileged user's behalf (root's default log directory,
//! `install-helper`'s copy and man pages), where anyone else who could
//! change the directory could plant a link or replace the file after the
//! fact.
//!
//! Invariant: the answer names why, in words a message can quote after
//! the path.

use std::os::unix::fs::MetadataExt;

/// Why a directory of metadata `meta` is not this user's alone: another
/// owner (root may own it when `root_may_own`), or write permission for
/// its group or others. `None` when it is.
pub fn not_yours_alone(meta: &std::fs::Metadata, root_may_own: bool) -> Option<String> {
    let me = rustix::process::geteuid().as_raw();
    if meta.uid() != me && !(root_may_own && meta.uid() == 0) {
        Some(format!("belongs to uid {}, not to you (uid {me})", meta.uid()))
    } else if meta.mode() & 0o022 != 0 {
        Some(format!("is writable by others (mode {:o})", meta.mode() & 0o7777))
    } else {
        None
    }
}

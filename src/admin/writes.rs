//! The commands about a writable mount's writes: `nzfs commit` (asks the
//! mount root with [`COMMIT_IOCTL`] to commit the files a `--commit
//! explicit` mount holds), `nzfs discard` (asks it with
//! [`DISCARD_IOCTL`] to drop them) and `nzfs unmount` (which refuses while
//! anything is held, and says what the spool still holds).
//!
//! Invariant: only `nzfs discard` drops what is held, and names each; an
//! unmount with anything held refuses, naming it and how to commit or
//! drop it.

use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::Duration;

use super::{query_status_within, size};
use crate::daemon::CliError;
use crate::fs::status::schema::StatusDoc;
use crate::fs::status::{COMMIT_BYTES, COMMIT_IOCTL, DISCARD_IOCTL};

/// `nzfs commit`: the files the writable mount at `mp` holds
/// (`--commit explicit`) as one commit with `message` (empty: one naming
/// them); prints the snapshot and the files.
pub fn commit(mp: &Path, message: &str) -> Result<(), CliError> {
    if message.len() >= COMMIT_BYTES {
        return Err(CliError::new(format!(
            "nzfs commit: the message is {} bytes; at most {} are taken",
            message.len(),
            COMMIT_BYTES - 1
        ))
        .with_code(2));
    }
    if !crate::daemon::is_mount_point(mp) {
        return Err(CliError::new(format!("nzfs commit: {} is not a mount point", mp.display())).with_code(2));
    }
    let root = std::fs::File::open(mp)?;
    let mut buf = vec![0u8; COMMIT_BYTES];
    buf[..message.len()].copy_from_slice(message.as_bytes());
    // SAFETY: a restricted ioctl: the kernel reads and writes at most the
    // size its number encodes, COMMIT_BYTES, which buf holds.
    let n = unsafe { libc::ioctl(root.as_raw_fd(), COMMIT_IOCTL as libc::Ioctl, buf.as_mut_ptr()) };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        let hint = match e.raw_os_error() {
            Some(libc::ENOTTY) => " (not an nzfs mount)",
            Some(libc::EINVAL) => " (not a mount made with --commit explicit; each file was committed at its close)",
            Some(libc::EROFS) => " (a read-only mount; mount with --writable --commit explicit)",
            _ => " (the mount's log says why; the branch is as it was and every file is still held)",
        };
        return Err(CliError::new(format!("nzfs commit {}: {e}{hint}", mp.display())));
    }
    let answer = String::from_utf8_lossy(&buf[..buf.iter().position(|&b| b == 0).unwrap_or(buf.len())]).into_owned();
    let mut lines = answer.lines();
    match lines.next().filter(|id| !id.is_empty()) {
        None => println!("nzfs commit: nothing held in {}; the branch did not move", mp.display()),
        Some(id) => {
            let files: Vec<&str> = lines.collect();
            println!("committed {} as snapshot {id}:", counted(&files));
            for f in files {
                println!("  {f}");
            }
        }
    }
    Ok(())
}

/// `nzfs discard`: everything the writable mount at `mp` holds for `nzfs
/// commit` (`--commit explicit`: new files, writes into arrays' files)
/// dropped, each named; the branch does not move.
pub fn discard(mp: &Path) -> Result<(), CliError> {
    if !crate::daemon::is_mount_point(mp) {
        return Err(CliError::new(format!("nzfs discard: {} is not a mount point", mp.display())).with_code(2));
    }
    let root = std::fs::File::open(mp)?;
    let mut buf = vec![0u8; COMMIT_BYTES];
    // SAFETY: a restricted ioctl: the kernel writes at most the size its
    // number encodes, COMMIT_BYTES, which buf holds.
    let n = unsafe { libc::ioctl(root.as_raw_fd(), DISCARD_IOCTL as libc::Ioctl, buf.as_mut_ptr()) };
    if n < 0 {
        let e = std::io::Error::last_os_error();
        let hint = match e.raw_os_error() {
            Some(libc::ENOTTY) => " (not an nzfs mount)",
            Some(libc::EINVAL) => " (not a mount made with --commit explicit: nothing is held there)",
            Some(libc::EROFS) => " (a read-only mount: nothing is held there)",
            _ => " (the mount's log says why)",
        };
        return Err(CliError::new(format!("nzfs discard {}: {e}{hint}", mp.display())));
    }
    let answer = String::from_utf8_lossy(&buf[..buf.iter().position(|&b| b == 0).unwrap_or(buf.len())]).into_owned();
    let mut lines = answer.lines();
    let count: u64 = lines.next().and_then(|n| n.parse().ok()).unwrap_or(0);
    if count == 0 {
        println!("nzfs discard: nothing held in {}; nothing dropped", mp.display());
        return Ok(());
    }
    for path in lines {
        println!("dropped {path}");
    }
    Ok(())
}

/// `nzfs unmount`: first what a writable mount's spool still holds, with
/// the paths (files being written, whose writers have not closed them,
/// and files kept from failed commits), on stderr; then the unmount. Its
/// files are not committed by it: they stay in the spool.
pub fn unmount(mp: &Path, lazy: bool) -> Result<(), CliError> {
    let held = held(mp);
    if !held.is_empty() {
        let mut why = format!(
            "nzfs unmount {}: {} made but not committed (the mount holds new files, writes into arrays' files, \
             mkdir and rmdir for `nzfs commit`), so not unmounted:\n",
            mp.display(),
            counted(&held),
        );
        for p in &held {
            why += &format!("  {p}\n");
        }
        why += &format!(
            "commit them with `nzfs commit {0} -m MESSAGE`, or drop them with `nzfs discard {0}` (one with `rm \
             {0}/PATH`), then unmount",
            mp.display()
        );
        return Err(CliError::new(why));
    }
    if let Some(note) = spool_note(mp) {
        eprint!("{note}");
    }
    crate::daemon::unmount(mp, lazy)
}

/// What is held for `nzfs commit`, counted: `3 files`, `1 directory
/// change`, `2 files and 1 directory change` (a directory change is held
/// as `mkdir PATH` or `rmdir PATH`).
pub(super) fn counted(held: &[impl AsRef<str>]) -> String {
    let dirs = held
        .iter()
        .filter(|h| h.as_ref().starts_with("mkdir ") || h.as_ref().starts_with("rmdir "))
        .count() as u64;
    let files = held.len() as u64 - dirs;
    match (files, dirs) {
        (_, 0) => crate::naming::count(files, "file"),
        (0, _) => crate::naming::count(dirs, "directory change"),
        _ => format!(
            "{} and {}",
            crate::naming::count(files, "file"),
            crate::naming::count(dirs, "directory change")
        ),
    }
}

/// What a writable mount holds for `nzfs commit` (none for any other
/// mount, or one that does not answer).
fn held(mp: &Path) -> Vec<String> {
    if crate::daemon::is_stale(mp) || !crate::daemon::is_mount_point(mp) {
        return Vec::new();
    }
    let Ok(text) = query_status_within(mp, Duration::from_secs(2)) else {
        return Vec::new();
    };
    StatusDoc::parse(text.as_bytes())
        .ok()
        .and_then(|d| d.writes)
        .map(|w| w.held)
        .unwrap_or_default()
}

/// What a writable mount's spool holds, as `nzfs unmount` says it; `None`
/// when it holds nothing (or `mp` is no writable nzfs mount).
fn spool_note(mp: &Path) -> Option<String> {
    // A stale mount has no daemon to ask, and a stuck one does not hold
    // the unmount up for long.
    if crate::daemon::is_stale(mp) || !crate::daemon::is_mount_point(mp) {
        return None;
    }
    let text = query_status_within(mp, Duration::from_secs(2)).ok()?;
    let w = StatusDoc::parse(text.as_bytes()).ok()?.writes?;
    if w.staged_paths.is_empty() && w.kept.is_empty() {
        return None;
    }
    let mut out = String::new();
    if !w.staged_paths.is_empty() {
        out += &format!(
            "nzfs: {}: {} being written, not closed by their writers, so not committed; \
             they stay in the spool:\n",
            mp.display(),
            crate::naming::count(w.staged_paths.len() as u64, "file"),
        );
        for p in &w.staged_paths {
            out += &format!("  {p}\n");
        }
    }
    if !w.kept.is_empty() {
        out += &format!(
            "nzfs: {}: {} kept in the spool, not committed (write them again, then remove them):\n",
            mp.display(),
            crate::naming::count(w.kept.len() as u64, "file"),
        );
        for k in &w.kept {
            out += &format!("  {} ({}): {}\n", k.path, size(k.bytes), k.why);
        }
    }
    Some(out)
}

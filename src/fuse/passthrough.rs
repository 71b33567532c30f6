//! Passthrough: chunk files the kernel serves from backing files (sealed
//! memfds of decoded chunks), within the cache budget, and what an open
//! does when a backing is refused or would not fit.
//!
//! Invariants: every open of one inode shares its backing (a kernel rule);
//! an inode opened through the daemon because no backing fit gets no
//! backing while such an open lasts (the mount core's handle table,
//! [`crate::mount::Handles`], counts them).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use fuser::{BackingId, Errno, FileHandle, FopenFlags, ReplyOpen};

use super::FuseAdapter;
use crate::array::Check;
use crate::fs::backing::sealed_memfd;
use crate::fs::{ChunkContent, FsError, NzFs};
use crate::mount::{Held, Open};

/// Whether open chunk files are served by the kernel from backing files.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Passthrough {
    /// When the kernel offers it and the daemon may use it.
    Auto,
    /// Or the mount fails.
    Always,
    /// Every read goes through the daemon.
    Never,
}

/// Why an open could not be answered with a backing file.
pub(super) enum BackingError {
    Fs(FsError),
    /// Creating or registering the backing failed (the OS error).
    Os(std::io::Error),
    /// This file is better served by the daemon (an absent chunk whose
    /// fill is not zero).
    Skip,
    /// A new backing would take the backings held open and the decoded
    /// cache past the cache budget.
    OverBudget,
}

impl FuseAdapter {
    /// Open chunk file `ino` for `pid` through the daemon, recorded in
    /// the handle table until its release.
    pub(super) fn open_over_budget(&self, ino: u64, pid: u32, keep: FopenFlags, reply: ReplyOpen) {
        let fh = self.held(ino, pid, Held::OverBudget);
        tracing::debug!(ino, "no room for a backing within the budget: read through the daemon");
        reply.opened(FileHandle(fh), keep)
    }

    /// A handle of `ino` opened by `pid` that holds `held`.
    fn held(&self, ino: u64, pid: u32, held: Held) -> u64 {
        self.mount.handles().open(Open { ino, held, pid })
    }

    /// Answer an open of file `ino`, which shows chunk `index` of `node`,
    /// with its backing file.
    pub(super) fn open_passthrough(
        &self,
        fs: &NzFs,
        ino: u64,
        (node, index): (usize, u64),
        reply: &ReplyOpen,
    ) -> Result<Arc<BackingId>, BackingError> {
        let expected = fs.chunk_file_len(node, index);
        let opened = self.backings.open(ino, fs.cache().bytes(), expected, || {
            // An absent chunk's fill is made only for what is read: a zero
            // fill is a sparse memfd, any other is served by the daemon.
            let (file, len) = match fs.chunk_content(node, index).map_err(BackingError::Fs)? {
                ChunkContent::Decoded(content) => (sealed_memfd(&content, 0), content.len() as u64),
                ChunkContent::Fill { len, zero: true } => (sealed_memfd(&[], len), 0),
                ChunkContent::Fill { zero: false, .. } => return Err(BackingError::Skip),
            };
            let file = file.map_err(BackingError::Os)?;
            // The kernel holds the file from here on; our descriptor closes.
            let id = reply.open_backing(&file).map_err(BackingError::Os)?;
            Ok((id, len))
        })?;
        opened.ok_or(BackingError::OverBudget)
    }
}

/// Whether this process has `CAP_SYS_ADMIN` in its effective set (which
/// registering a passthrough backing file needs).
pub fn has_cap_sys_admin() -> bool {
    const CAP_SYS_ADMIN: u32 = 21;
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("CapEff:"))
                .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
        })
        .is_some_and(|caps| caps & (1 << CAP_SYS_ADMIN) != 0)
}

impl FuseAdapter {
    /// An open for reading of file `ino` the core accepted: by passthrough
    /// where a backing serves it, else through the daemon, its cached
    /// pages kept unless its chunk object changed since its decode.
    pub(super) fn open_for_reading(&self, fs: &NzFs, ino: u64, who: super::Caller, reply: ReplyOpen) {
        // A chunk object that changed since its decode: the decode is
        // dropped, and so are an unopened backing of it and the kernel's
        // cached pages (no FOPEN_KEEP_CACHE), so this open reads the store
        // as it is now.
        let check = fs.recheck_open(ino);
        if matches!(check, Check::Changed | Check::Unknown) {
            self.backings.forget_unopened(ino);
        }
        let keep = match check {
            Check::Changed => FopenFlags::empty(),
            _ => FopenFlags::FOPEN_KEEP_CACHE,
        };
        // A backing made before a runtime fallback still serves its inode:
        // the kernel requires one backing for every open of it.
        let wanted = self.mode != Passthrough::Never
            && (self.passthrough.load(Ordering::Relaxed) || self.backings.contains(ino));
        if let Some(chunk) = wanted.then(|| fs.passthrough_chunk(ino)).flatten() {
            if self.mount.handles().through_daemon(ino) {
                return self.open_over_budget(ino, who.pid, keep, reply);
            }
            match self.open_passthrough(fs, ino, chunk, &reply) {
                Ok(id) => {
                    fs.note_open(chunk.0, chunk.1);
                    let fh = self.held(ino, who.pid, Held::Passthrough);
                    return reply.opened_passthrough(FileHandle(fh), FopenFlags::empty(), &id);
                }
                Err(BackingError::Fs(e)) => return reply.error(self.errno(who, "open", ino, &e)),
                Err(BackingError::Skip) => {}
                // No room within --cache-size while other backings are held
                // open (they cannot be dropped): the daemon, whose memory
                // the budget bounds, serves this open.
                Err(BackingError::OverBudget) => return self.open_over_budget(ino, who.pid, keep, reply),
                Err(BackingError::Os(e)) if self.mode == Passthrough::Always => {
                    tracing::warn!(ino = ino, error = %e, "cannot register a backing file; returning EIO");
                    return reply.error(Errno::EIO);
                }
                Err(BackingError::Os(e)) => {
                    // The kernel or the memory said no: serve this and every
                    // later open through the daemon. No backing of this
                    // inode exists (the pool would have returned it), so the
                    // kernel accepts a cached open of it.
                    self.passthrough.store(false, Ordering::Relaxed);
                    tracing::warn!(error = %e, "passthrough off from now on: cannot register a backing file");
                }
            }
        }
        reply.opened(FileHandle(0), keep)
    }
}

//! A writable mount's writes into existing arrays: `data.bin` and chunk
//! files opened for writing (`dd conv=notrunc`, Fortran stream I/O opened
//! `readwrite`, `numpy.memmap` in `r+` mode) take writes that keep their
//! size; what was written is staged in the spool
//! ([`crate::write::spool::Shown`]) and becomes the chunks it touches,
//! re-encoded with the array's own codecs, in one commit at each `close()`
//! and `fsync()` of a handle opened for writing.
//!
//! Invariants: only the mount's owner and root open such a file for
//! writing, and only where the array's codecs can be encoded again (else
//! `EROFS`, with one log line saying which codec); a write past the file's
//! end and a change of its size are refused (`EFBIG`, `EPERM`); a handle
//! opened for writing is never served by passthrough nor kept in the page
//! cache across opens; a read of an edited file shows what was written;
//! a commit is checked against the version the writer opened the file in,
//! and a chunk someone else changed since fails the `close()` (`EIO`); a
//! flush from a process that did not open the file for writing (a child
//! closing its copy of the handle at its `exec`) commits nothing while one
//! that did runs.

use std::sync::Arc;

use super::FuseAdapter;
use super::writes::spool_errno;
use crate::fs::NzFs;
use crate::write::spool::{Base, Shown, Spool};

impl FuseAdapter {
    /// An open for writing of `ino`, a file the hierarchy shows, by
    /// `(uid, pid)`; `truncate`: opened `O_TRUNC`.
    pub(super) fn open_edit(&self, (uid, pid): (u32, u32), ino: u64, truncate: bool) -> Result<(), i32> {
        let spool = self.spool().ok_or(libc::EROFS)?;
        let fs: Arc<NzFs> = Arc::clone(&self.fs());
        let (node, chunk, size, path) = fs.array_values_file(ino).ok_or(libc::EROFS)?;
        if !self.may_write(uid) {
            return Err(libc::EACCES);
        }
        let array = fs.decoded_array(node).ok_or(libc::EIO)?;
        if let Err(why) = crate::write::edit::writable(array) {
            tracing::warn!(file = %path, pid, "not opened for writing: {why}");
            return Err(libc::EROFS);
        }
        if truncate && size > 0 {
            tracing::warn!(file = %path, pid, "not opened for writing: O_TRUNC would change its size ({size} bytes)");
            return Err(libc::EPERM);
        }
        let shown = chunk.map_or(Shown::Data, Shown::Chunk);
        let array_path = fs.hierarchy().nodes[node].path.clone();
        let base: Base = fs;
        spool
            .edit_open(
                ino,
                (node, &array_path, &path),
                shown,
                size,
                (FuseAdapter::writer(pid, uid), pid),
                base,
            )
            .map_err(|e| {
                tracing::warn!(file = %path, error = %e, "cannot stage a write");
                spool_errno(&e)
            })
    }

    /// What was written through `ino` since its last commit, as one
    /// commit (a `close()` or `fsync()` of a handle opened for writing).
    pub(super) fn commit_edit(&self, ino: u64, pid: u32) -> Result<(), i32> {
        let Some(spool) = self.spool() else { return Ok(()) };
        // One commit of an edit at a time: a handle's copies (a forked
        // child's, closed at its exec) flush it too, and the second finds
        // nothing left to commit.
        let _one = spool.edit_commits();
        let pending = match spool.edit_pending(ino) {
            Ok(Some(p)) => p,
            Ok(None) => return Ok(()),
            Err(e) => return Err(spool_errno(&e)),
        };
        let Ok(base) = Arc::clone(&pending.base).downcast::<NzFs>() else {
            return Err(libc::EIO);
        };
        let file = &pending.named;
        let message = format!(
            "{} written through nzfs by {}",
            crate::naming::escaped(file),
            pending.writer
        );
        let result = match base.decoded_array(pending.node) {
            None => Err(crate::write::WriteError::Refused(format!(
                "{}: no longer decoded",
                pending.array
            ))),
            Some(array) => spool.change(&message, &mut |stage| {
                let most = crate::write::edit::max_chunks(base.cache_budget());
                crate::write::edit::apply(array, base.store(), &pending, stage, most).map(|_| ())
            }),
        };
        match result {
            Ok(landed) => {
                tracing::info!(file = %file, pid, snapshot = %landed.snapshot, "committed the writes into an array");
                let change = crate::fs::OwnChange::Chunks(&pending.array);
                self.live.serve_own_commit(&landed.of(change), false);
                let now: Base = Arc::clone(&*self.fs()) as Base;
                spool.edit_done(ino, &pending, Some(now));
                Ok(())
            }
            Err(e) => {
                let kept = spool.edit_done(ino, &pending, None);
                tracing::warn!(
                    file = %file, pid, error = %e, kept = %kept.as_deref().unwrap_or(std::path::Path::new("-")).display(),
                    "the writes were not committed; the branch is as it was, and the bytes written are kept in the spool"
                );
                Err(libc::EIO)
            }
        }
    }

    /// A new size for `ino`, a file the hierarchy shows: only its own
    /// size is taken (a writer's `ftruncate` to where it already is).
    pub(super) fn keep_size(&self, ino: u64, size: u64) -> Result<(), i32> {
        let fs = self.fs();
        match fs.array_values_file(ino) {
            Some((.., now, _)) if now == size => Ok(()),
            Some((.., now, path)) if self.spool.is_some() => {
                tracing::warn!(file = %path, "a size of {size} refused: an array's file keeps its size ({now} bytes)");
                Err(libc::EPERM)
            }
            _ => Err(libc::EROFS),
        }
    }

    /// `data`, the bytes of edited file `ino` from `offset` as the store
    /// has them, with what was written laid over them (`None`: nothing
    /// was written there, and `data` is the answer).
    pub(super) fn patch_edited(spool: &Spool, ino: u64, offset: u64, data: &[u8]) -> Result<Option<Vec<u8>>, i32> {
        spool.edit_overlay(ino, offset, data).map_err(|e| {
            tracing::warn!(ino, error = %e, "cannot read what was written into the spool");
            spool_errno(&e)
        })
    }
}

//! Writes into existing arrays: `data.bin` and chunk files opened for
//! writing (`dd conv=notrunc`, Fortran stream I/O opened `readwrite`,
//! `numpy.memmap` in `r+` mode) take writes that keep their size; what was
//! written is staged in the spool ([`crate::write::spool::Shown`]) and
//! becomes the chunks it touches, re-encoded with the array's own codecs,
//! in one commit at each `close()` and `fsync()` of a handle opened for
//! writing.
//!
//! Invariants: such a file is opened for writing only where the array's
//! codecs can be encoded again (else `EROFS`, saying which codec); a write
//! past the file's end and a change of its size are refused (`EFBIG`,
//! `EPERM`); a read of an edited file shows what was written; a commit is
//! checked against the version the writer opened the file in, and a chunk
//! someone else changed since fails the `close()` (`EIO`), its bytes kept
//! in the spool.

use super::{Asker, Mount, writer};
use crate::fs::{FsError, NzFs};
use crate::write::spool::{Base, Shown, Spool, Version};

/// A served version is what a writer saw when it opened a file.
impl Version for NzFs {
    fn array(&self, node: usize) -> Option<&crate::array::Array> {
        self.decoded_array(node)
    }

    fn store(&self) -> &dyn crate::store::ReadableStore {
        NzFs::store(self)
    }

    fn cache_budget(&self) -> u64 {
        NzFs::cache_budget(self)
    }
}

impl Mount {
    /// An open for writing of `ino`, a file the hierarchy shows, by
    /// `who`; `truncate`: opened `O_TRUNC`.
    pub fn open_edit(&self, who: Asker, ino: u64, truncate: bool) -> Result<(), FsError> {
        let spool = self.writable_spool()?;
        let fs = self.fs();
        let (node, chunk, size, path) = fs.array_values_file(ino).ok_or(FsError::ReadOnly)?;
        self.owner_only(who.uid)?;
        let array = fs.decoded_array(node).ok_or_else(|| FsError::BrokenNode {
            path: path.clone(),
            reason: "its metadata is not decoded".into(),
        })?;
        if let Err(why) = crate::write::edit::writable(array) {
            return Err(FsError::NotWritable(format!("{path}: not opened for writing: {why}")));
        }
        if truncate && size > 0 {
            return Err(FsError::SizeFixed(format!(
                "{path}: not opened for writing: O_TRUNC would change its size ({size} bytes)"
            )));
        }
        let shown = chunk.map_or(Shown::Data, Shown::Chunk);
        let array_path = fs.hierarchy().nodes[node].path.clone();
        let base: Base = fs;
        spool.edit_open(
            ino,
            (node, &array_path, &path),
            shown,
            size,
            writer(who.pid, who.uid),
            base,
        )?;
        Ok(())
    }

    /// What was written through `ino` since its last commit, as one
    /// commit (a `close()` or `fsync()` of a handle opened for writing).
    pub(super) fn commit_edit(&self, ino: u64, pid: u32) -> Result<(), FsError> {
        let Some(spool) = self.spool() else { return Ok(()) };
        // Held for `nzfs commit` (`--commit explicit`).
        if spool.holds() {
            return Ok(());
        }
        // One commit of an edit at a time: a handle's copies (a forked
        // child's, closed at its exec) flush it too, and the second finds
        // nothing left to commit.
        let _one = spool.edit_commits();
        let Some(pending) = spool.edit_pending(ino)? else {
            return Ok(());
        };
        let file = &pending.named;
        let base = &pending.base;
        let message = format!(
            "{} written through nzfs by {}",
            crate::naming::escaped(file),
            pending.writer
        );
        let result = match base.array(pending.node) {
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
                self.served.serve_own_commit(&super::own_commit(&landed, change), false);
                let now: Base = self.fs();
                spool.edit_done(ino, &pending, Some(now));
                Ok(())
            }
            Err(e) => {
                let kept = spool.edit_done(ino, &pending, None);
                let kept = kept.as_deref().unwrap_or(std::path::Path::new("-")).display();
                Err(FsError::NotCommitted(format!(
                    "{file}: the writes were not committed; the branch is as it was, and the bytes written are kept in the spool ({kept}): {e}"
                )))
            }
        }
    }

    /// A new size for `ino`, a file the hierarchy shows: only its own
    /// size is taken (a writer's `ftruncate` to where it already is).
    pub(super) fn keep_size(&self, ino: u64, size: u64) -> Result<(), FsError> {
        match self.fs().array_values_file(ino) {
            Some((.., now, _)) if now == size => Ok(()),
            Some((.., now, path)) if self.spool.is_some() => Err(FsError::SizeFixed(format!(
                "{path}: a size of {size} refused: an array's file keeps its size ({now} bytes)"
            ))),
            _ => Err(FsError::ReadOnly),
        }
    }

    /// `data`, the bytes of edited file `ino` from `offset` as the store
    /// has them, with what was written laid over them (`None`: nothing
    /// was written there, and `data` is the answer).
    pub fn patch_edited(spool: &Spool, ino: u64, offset: u64, data: &[u8]) -> Result<Option<Vec<u8>>, FsError> {
        Ok(spool.edit_overlay(ino, offset, data)?)
    }
}

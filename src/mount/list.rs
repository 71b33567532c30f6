//! A directory's listing as a writer sees it: the hierarchy's entries
//! less the files unlinked in this mount and the nodes whose `rmdir` is
//! held, then the files being written there and the groups held there.
//!
//! Invariant: the staged entries' offsets start at [`STAGED_OFFSET`],
//! past every offset the hierarchy's entries take, so a listing resumed
//! at any offset goes on where it stopped.

use super::Mount;
use crate::fs::{DirEntry, FsError, Kind, NzFs};

/// The first listing offset of the files being written into a directory.
pub const STAGED_OFFSET: u64 = 1 << 62;

impl Mount {
    /// Hand directory `ino`'s entries from `offset` to `add`, in batches,
    /// until it says the kernel's buffer is full or none are left.
    pub fn list(
        &self,
        fs: &NzFs,
        ino: u64,
        mut offset: u64,
        mut add: impl FnMut(&DirEntry) -> bool,
    ) -> Result<(), FsError> {
        let spool = self.spool();
        // A group held for `nzfs commit` lists `.`, `..` and what is staged there.
        if let Some(up) = spool.and_then(|s| s.dir_parent(ino)) {
            for (k, (name, at)) in [(".", ino), ("..", up)].into_iter().enumerate().skip(offset as usize) {
                let entry = DirEntry {
                    ino: at,
                    next_offset: k as u64 + 1,
                    kind: Kind::Directory,
                    name: name.into(),
                };
                if add(&entry) {
                    return Ok(());
                }
            }
            offset = offset.max(STAGED_OFFSET);
        }
        while offset < STAGED_OFFSET {
            let batch = fs.readdir(ino, offset, 256)?;
            if batch.is_empty() {
                break;
            }
            for entry in &batch {
                let gone = spool.is_some_and(|s| s.is_hidden(entry.ino))
                    || (entry.name != "." && entry.name != ".." && self.removed(fs, entry.ino));
                if !gone && add(entry) {
                    return Ok(());
                }
                offset = entry.next_offset;
            }
        }
        let Some(spool) = spool else { return Ok(()) };
        let skip = offset.saturating_sub(STAGED_OFFSET) as usize;
        for (k, (name, st)) in spool.list(ino).into_iter().enumerate().skip(skip) {
            let entry = DirEntry {
                ino: st.ino,
                next_offset: STAGED_OFFSET + k as u64 + 1,
                kind: if st.dir { Kind::Directory } else { Kind::File },
                name,
            };
            if add(&entry) {
                return Ok(());
            }
        }
        Ok(())
    }
}

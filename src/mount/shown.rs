//! What the mount shows: the served version with what is staged laid over
//! it. A file unlinked in this mount is not there, nor a node whose
//! `rmdir` is held for `nzfs commit`; a file being written is, beside the
//! hierarchy's files, and so is a group whose `mkdir` is held; an open
//! says what it opened.
//!
//! Invariant: a name or inode the spool does not hold is answered by the
//! served version as it is, so a read-only mount shows exactly that.

use std::ffi::OsStr;

use super::{Asker, Held, Mount, Open};
use crate::fs::{Attr, FsError, NzFs};
use crate::write::spool::Stat;

/// A name as the mount shows it.
#[derive(Debug, Clone, Copy)]
pub enum Entry {
    /// A file or directory of the served version.
    Shown(Attr),
    /// A file being written.
    Staged(Stat),
}

/// What an open opened; a handle number where it holds something
/// ([`super::Handles`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opened {
    /// A file being written, for writing (its `flush` commits).
    StagedWrite(u64),
    /// A file being written, for reading.
    StagedRead,
    /// An array's file, for writing (an edit).
    Edit(u64),
    /// A file of the served version, for reading: the served version
    /// opens it.
    Shown,
}

impl Mount {
    /// `name` in directory `parent`, as this mount shows it.
    pub fn lookup(&self, fs: &NzFs, parent: u64, name: &OsStr) -> Result<Entry, FsError> {
        let held = |e| {
            let found = self
                .spool()
                .zip(name.to_str())
                .and_then(|(s, n)| s.lookup(parent, n).or_else(|| s.lookup_dir(parent, n)));
            found.map(Entry::Staged).ok_or(e)
        };
        // In a group held, what is staged there, and nothing else.
        if self.spool().is_some_and(|s| s.dir_path(parent).is_some()) {
            return held(FsError::NotFound);
        }
        match fs.lookup(parent, name) {
            Ok(a) if self.spool().is_some_and(|s| s.is_hidden(a.ino)) || self.removed(fs, a.ino) => {
                held(FsError::NotFound)
            }
            Ok(a) => Ok(Entry::Shown(a)),
            Err(e) => held(e),
        }
    }

    /// Whether `ino` of `fs` is a node's directory that a held `rmdir`
    /// removes (it, or a node above it).
    pub(super) fn removed(&self, fs: &NzFs, ino: u64) -> bool {
        let Some(spool) = self.spool() else { return false };
        match fs.inode(ino) {
            Ok(crate::fs::Inode::Node(n)) if n > 0 => spool.is_removed(&fs.hierarchy().nodes[n].path),
            _ => false,
        }
    }

    /// The attributes of `ino` if it is a file being written (`None`: the
    /// served version's).
    pub fn staged_attr(&self, ino: u64) -> Option<Result<Stat, FsError>> {
        let spool = self.spool().filter(|s| s.owns(ino))?;
        Some(spool.stat(ino).map_err(FsError::from))
    }

    /// Open `ino` for `who`, for writing where `write` (`truncate`: with
    /// `O_TRUNC`): what was opened.
    pub fn open(&self, who: Asker, ino: u64, write: bool, truncate: bool) -> Result<Opened, FsError> {
        if let Some(spool) = self.spool().filter(|s| s.owns(ino)) {
            spool.stat(ino)?;
            if !write {
                return Ok(Opened::StagedRead);
            }
            self.owner_only(who.uid)?;
            spool.open_for_writing(ino)?;
            return Ok(Opened::StagedWrite(self.record(who, ino, Held::StagedWrite)));
        }
        if write && self.spool().is_some() {
            self.open_edit(who, ino, truncate)?;
            return Ok(Opened::Edit(self.record(who, ino, Held::Edit)));
        }
        Ok(Opened::Shown)
    }

    /// A handle of `ino` opened by `who`, holding `held`.
    pub(super) fn record(&self, who: Asker, ino: u64, held: Held) -> u64 {
        self.handles.open(Open {
            ino,
            held,
            pid: who.pid,
        })
    }

    /// `size` bytes at `offset` of `ino` if it is a file being written
    /// (`None`: the served version reads it).
    pub fn read_staged(&self, ino: u64, offset: u64, size: u32) -> Option<Result<Vec<u8>, FsError>> {
        let spool = self.spool().filter(|s| s.owns(ino))?;
        Some(spool.read(ino, offset, size).map_err(FsError::from))
    }

    /// Whether `uid` may reach `ino` of `fs`, and write it where `write`:
    /// only what takes writes, on a writable mount, by its owner or root.
    pub fn access(&self, fs: &NzFs, uid: u32, ino: u64, write: bool) -> Result<(), FsError> {
        if write && !(self.may_write(uid) && self.takes_writes(fs, ino)) {
            return Err(FsError::ReadOnly);
        }
        if let Some(spool) = self.spool().filter(|s| s.owns(ino)) {
            return spool.stat(ino).map(|_| ()).map_err(FsError::from);
        }
        fs.kind(ino).map(|_| ())
    }
}

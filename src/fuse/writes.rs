//! The writable mount's requests (`--writable`, an Icechunk branch): a new
//! `NAME.nc` in a group's directory is staged in the spool
//! ([`crate::write::spool`]) and becomes the group `NAME` when its writer
//! closes it (or syncs it whole); the mount then looks at the branch at
//! once, so the group shows as `close()` returns. `flush` and `fsync`
//! route here for arrays' files too (`edits.rs`).
//!
//! Invariants: only the mount's owner and root create or write; a flush
//! from a process that writes no file of it (a child closing its copy of
//! the handle at its `exec`) commits nothing while a writer runs; what the
//! hierarchy shows stays read-only (`EROFS`) but for `edits.rs` and
//! `nodes.rs`; a commit that fails fails the `close()` (`EIO`),
//! with one log line naming the file and the reason; staged files' entries
//! and attributes are never cached by the kernel (TTL 0), so the name
//! leaves the directory as its group arrives.

use std::ffi::OsStr;
use std::time::Duration;

use fuser::{FileAttr, FileHandle};

use super::FuseAdapter;
use crate::fs::Inode;
use crate::naming;
use crate::write::names::{self, CreateError, FileName, NameError};
use crate::write::node_path;
use crate::write::spool::{Spool, SpoolError, Stat};
use crate::zarr::hierarchy::NodeKind;

/// The errno of a spool request.
pub(super) fn spool_errno(e: &SpoolError) -> i32 {
    match e {
        SpoolError::NotFound => libc::ENOENT,
        SpoolError::Full { .. } => libc::ENOSPC,
        SpoolError::Size { .. } => libc::EFBIG,
        SpoolError::Commit(_) => libc::EIO,
        SpoolError::Io(e) => e.raw_os_error().unwrap_or(libc::EIO),
    }
}

/// Staged files are never cached by the kernel.
pub(super) const STAGED_TTL: Duration = Duration::ZERO;

impl FuseAdapter {
    /// Attributes of a staged file, through the one builder of the
    /// kernel's attributes ([`FuseAdapter::attr`]).
    pub(super) fn staged_attr(&self, s: Stat) -> FileAttr {
        self.attr(crate::fs::Attr {
            ino: s.ino,
            kind: crate::fs::Kind::File,
            size: s.size,
            // As its creator asked: a file being written is no more open
            // to others than they chose.
            perm: s.perm,
            nlink: 1,
            uid: s.uid,
            gid: s.gid,
            mtime: s.mtime,
            blksize: 4096,
        })
    }

    /// The spool, when the mount is writable.
    pub(super) fn spool(&self) -> Option<&Spool> {
        self.spool.as_deref()
    }

    /// Whether `uid` may write here: the mount's owner or root.
    pub(super) fn may_write(&self, uid: u32) -> bool {
        uid == 0 || uid == rustix::process::getuid().as_raw()
    }

    /// Whether `ino` takes writes on a writable mount: a file being
    /// written, a node's directory (new files and groups in a group's,
    /// unlinks and removals in any), an array's `data.bin` and chunk files.
    pub(super) fn takes_writes(&self, ino: u64) -> bool {
        Spool::owns(ino) || self.fs().takes_writes(ino)
    }

    /// The group of directory `parent`, where `uid` would make a new file
    /// or group: its hierarchy path, or why not.
    pub(super) fn group_dir(&self, parent: u64, uid: u32) -> Result<String, CreateError> {
        if self.spool.is_none() {
            return Err(CreateError::ReadOnly);
        }
        if !self.may_write(uid) {
            return Err(CreateError::NotOwner);
        }
        let fs = self.fs();
        let Ok(Inode::Node(p)) = fs.inode(parent) else {
            return Err(CreateError::NotADirectory);
        };
        let node = &fs.hierarchy().nodes[p];
        match node.kind {
            NodeKind::Group { .. } => Ok(node.path.clone()),
            _ => Err(CreateError::InAnArray),
        }
    }

    /// Whether `name` in directory `parent` is taken: by a node below it,
    /// a file it shows or a file being written there.
    fn taken(&self, parent: u64, name: &str) -> bool {
        let fs = self.fs();
        let by_node = match fs.inode(parent) {
            Ok(Inode::Node(p)) => fs.hierarchy().nodes[p]
                .children
                .iter()
                .any(|&c| fs.hierarchy().nodes[c].name == name),
            _ => false,
        };
        by_node
            || fs.lookup(parent, OsStr::new(name)).is_ok()
            || self.spool().and_then(|s| s.lookup(parent, name)).is_some()
    }

    /// Where a new file `name` in directory `parent` would go: the group's
    /// hierarchy path, or why not. Only names a commit takes are staged
    /// ([`names::file_name`]): `NAME.nc`, committed as the group `NAME`,
    /// and a writer's temporary `NAME.nc.…`, committed when renamed
    /// `NAME.nc`; any other is refused, with a log line that says which
    /// names are taken, so nothing is accepted and then dropped.
    pub(super) fn creatable(&self, parent: u64, name: &OsStr, uid: u32) -> Result<String, CreateError> {
        let group = self.group_dir(parent, uid)?;
        let checked = name.to_str().ok_or(NameError::NotUtf8).and_then(|name| {
            let stem = match names::file_name(name)? {
                FileName::NetCdf(stem) => Some(stem),
                FileName::Temporary(_) => None,
            };
            Ok((name, stem))
        });
        let (name, stem) = checked.map_err(|e| refused(&group, name, "not created", e))?;
        match self.taken(parent, name) || stem.is_some_and(|s| self.taken(parent, s)) {
            true => Err(CreateError::Taken),
            false => Ok(group),
        }
    }

    /// Where `mkdir name` in directory `parent` makes its group: the new
    /// group's hierarchy path, or why not.
    pub(super) fn makeable(&self, parent: u64, name: &OsStr, uid: u32) -> Result<String, CreateError> {
        let group = self.group_dir(parent, uid)?;
        let checked = name
            .to_str()
            .ok_or(NameError::NotUtf8)
            .and_then(|name| names::group_name(name).map(|()| name));
        let name = checked.map_err(|e| refused(&group, name, "not made", e))?;
        match self.taken(parent, name) {
            true => Err(CreateError::Taken),
            false => Ok(node_path(&group, name)),
        }
    }

    /// A staged file was closed: commit it, and look at the branch at
    /// once so that its group shows. The errno of a failed commit.
    ///
    /// `from_dir_request`: a `rename`, whose directories the kernel holds
    /// locked until it is answered, so the kernel is told of the new group
    /// after the answer ([`super::follow::Live::look_now_from_dir_request`]).
    pub(super) fn close_staged(&self, ino: u64, pid: u32, from_dir_request: bool) -> Result<(), i32> {
        let Some(spool) = self.spool() else { return Ok(()) };
        match spool.close(ino) {
            Ok(None) => Ok(()),
            Ok(Some(id)) => {
                tracing::info!(ino, pid, snapshot = %id, "committed a closed file");
                match from_dir_request {
                    true => self.live.look_now_from_dir_request(),
                    false => self.live.look_now(),
                }
                Ok(())
            }
            Err(e) => {
                tracing::warn!(ino, pid, error = %e, "the closed file was not committed; the branch is as it was");
                Err(spool_errno(&e))
            }
        }
    }

    /// A new file `name` in directory `parent`, by `(uid, gid, pid)`, with
    /// permission bits `perm`.
    pub(super) fn create_staged(
        &self,
        (uid, gid, pid, perm): (u32, u32, u32, u16),
        parent: u64,
        name: &OsStr,
    ) -> Result<Stat, i32> {
        let group = self.creatable(parent, name, uid).map_err(|e| e.errno())?;
        let (Some(spool), Some(name)) = (self.spool(), name.to_str()) else {
            return Err(libc::EROFS);
        };
        let writer = FuseAdapter::writer(pid, uid);
        spool
            .create(parent, &group, name, (uid, gid, pid, perm), writer)
            .map_err(|e| {
                tracing::warn!(group, name, error = %e, "cannot stage a new file");
                spool_errno(&e)
            })
    }

    /// `data` at `offset` of staged file `ino`, by `(uid, pid)`.
    pub(super) fn write_staged(&self, (uid, pid): (u32, u32), ino: u64, offset: u64, data: &[u8]) -> Result<u32, i32> {
        let spool = self
            .spool()
            .filter(|s| Spool::owns(ino) || s.is_edited(ino))
            .ok_or(libc::EROFS)?;
        if !self.may_write(uid) {
            return Err(libc::EACCES);
        }
        let written = match Spool::owns(ino) {
            true => spool.write(ino, offset, data),
            false => spool.edit_write(ino, offset, data),
        };
        match written {
            Ok(n) => Ok(n as u32),
            Err(e) => {
                tracing::warn!(ino, pid, error = %e, "a write into the spool failed");
                Err(spool_errno(&e))
            }
        }
    }

    /// A new size for staged file `ino` (its writer's `ftruncate`), or its
    /// attributes as they are; its mode and times are its own.
    pub(super) fn set_size(&self, uid: u32, ino: u64, size: Option<u64>) -> Result<FileAttr, i32> {
        if !Spool::owns(ino) {
            // A file the hierarchy shows keeps its size.
            self.keep_size(ino, size.ok_or(libc::EROFS)?)?;
            return self.fs().getattr(ino).map(|a| self.attr(a)).map_err(|_| libc::EIO);
        }
        let spool = self.spool().ok_or(libc::EROFS)?;
        if !self.may_write(uid) {
            return Err(libc::EACCES);
        }
        match size {
            Some(size) => spool.truncate(ino, size),
            None => spool.stat(ino),
        }
        .map(|st| self.staged_attr(st))
        .map_err(|e| spool_errno(&e))
    }

    /// Remove staged file `name` of directory `parent`.
    pub(super) fn unlink_staged(&self, uid: u32, parent: u64, name: &OsStr) -> Result<(), i32> {
        let (spool, name) = self
            .spool()
            .zip(name.to_str())
            .filter(|(s, n)| s.lookup(parent, n).is_some())
            .ok_or(libc::EROFS)?;
        if !self.may_write(uid) {
            return Err(libc::EACCES);
        }
        spool.remove(parent, name).map_err(|e| spool_errno(&e))
    }

    /// Move a staged file (NCO writes `out.nc.pid….tmp`, closes it, then
    /// renames it `out.nc`): renamed `NAME.nc` in a group's directory, it
    /// is committed then.
    pub(super) fn rename_staged(
        &self,
        (uid, pid): (u32, u32),
        (parent, name): (u64, &OsStr),
        (new_parent, new_name): (u64, &OsStr),
    ) -> Result<(), i32> {
        let (spool, from) = self.spool().zip(name.to_str()).ok_or(libc::EROFS)?;
        let staged = spool.lookup(parent, from).ok_or(libc::EROFS)?;
        let group = self.creatable(new_parent, new_name, uid).map_err(|e| e.errno())?;
        let to = new_name.to_str().unwrap_or_default();
        spool
            .rename(staged.ino, new_parent, &group, to)
            .map_err(|e| spool_errno(&e))?;
        self.close_staged(staged.ino, pid, true)
    }

    /// A `close()` of `ino`: a staged file written since its last commit
    /// is committed now, and a commit that fails fails the `close()`; only
    /// for a handle opened for writing, by a user who may write. A
    /// read-only mount answers `ENOSYS`, which the kernel keeps for the
    /// connection: no close waits on the daemon (a stopped daemon's
    /// passthrough reads go on, and no close costs a round trip).
    pub(super) fn flush_staged(&self, ino: u64, fh: FileHandle, (uid, pid): (u32, u32)) -> Result<(), i32> {
        if self.spool.is_none() {
            return Err(libc::ENOSYS);
        }
        if !self.may_write(uid) {
            return Ok(());
        }
        // A copy of a writer's handle closed by another process (a child's,
        // at its exec) while every writer lives: the file may not be whole
        // yet, and the writers' own close commits it.
        let writers = self.spool().map_or_else(Vec::new, |s| s.writers(ino));
        if !writers.is_empty() && writers.iter().all(|&w| another_process(w, pid)) {
            return Ok(());
        }
        match (Spool::owns(ino), fh) {
            (true, super::passthrough::STAGED_WRITE_FH) => self.close_staged(ino, pid, false),
            (false, super::passthrough::EDIT_FH) => self.commit_edit(ino, pid),
            _ => Ok(()),
        }
    }

    /// The release of a handle of `ino`: a staged file written since its
    /// last close (a shared `mmap` written after it) is committed at the
    /// release of its last handle open for writing, and an edit's writes
    /// at the release of its last open; a failure is logged with where
    /// the bytes are kept (a release has no answer to fail).
    pub(super) fn release_staged(&self, ino: u64, fh: FileHandle, pid: u32) {
        let Some(spool) = self.spool() else { return };
        if Spool::owns(ino) {
            let (committed, kept) = spool.release(ino, fh == super::passthrough::STAGED_WRITE_FH);
            match committed {
                Ok(Some(id)) => {
                    tracing::info!(ino, pid, snapshot = %id, "committed a file written after its close, at its release");
                    self.live.look_now();
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(ino, pid, error = %e, "the released file was not committed; the branch is as it was")
                }
            }
            if let Some(kept) = kept {
                tracing::warn!(ino, kept = %kept.display(), "a file whose commit failed is kept in the spool");
            }
        } else if fh == super::passthrough::EDIT_FH {
            // The last open's writes (a shared mmap's, written back by the
            // kernel after the close) go with a commit; a failed one keeps
            // its bytes (commit_edit logs where).
            if spool.edit_last_open(ino) {
                let _ = self.commit_edit(ino, pid);
            }
            spool.edit_release(ino);
        }
    }

    /// An `fsync` of `ino`: a staged file's bytes reach the spool's disk,
    /// and it is committed when it is whole netCDF classic; an array's
    /// file opened for writing commits what was written; `ENOSYS` on a
    /// read-only mount, as [`FuseAdapter::flush_staged`]. Only a handle
    /// opened for writing, by a user who may write, commits: a reader's
    /// `fsync` of a file being written is its disk flush alone.
    pub(super) fn fsync_staged(&self, ino: u64, fh: FileHandle, (uid, pid): (u32, u32)) -> Result<(), i32> {
        let spool = self.spool().ok_or(libc::ENOSYS)?;
        let writer = self.may_write(uid);
        match (Spool::owns(ino), fh) {
            (true, super::passthrough::STAGED_WRITE_FH) if writer => match spool.sync(ino) {
                Ok(None) => Ok(()),
                Ok(Some(id)) => {
                    tracing::info!(ino, pid, snapshot = %id, "committed a synced file");
                    self.live.look_now();
                    Ok(())
                }
                Err(e) => {
                    tracing::warn!(ino, pid, error = %e, "the synced file was not committed; the branch is as it was");
                    Err(spool_errno(&e))
                }
            },
            (false, super::passthrough::EDIT_FH) if writer => self.commit_edit(ino, pid),
            _ => Ok(()),
        }
    }

    /// Who wrote a file, for its commit's message: the program's name, its
    /// pid and the user.
    pub(super) fn writer(pid: u32, uid: u32) -> String {
        let program = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        let user = user_name(uid).unwrap_or_else(|| "?".into());
        // Both are any bytes their owner chose: escaped, so that neither
        // forges a line of the log or of `nzfs status`.
        format!(
            "{} (pid {pid}) as {} (uid {uid})",
            naming::escaped(program.trim_end_matches('\n')),
            naming::escaped(&user)
        )
    }
}

/// A name refused for a new file or group in group `group`, logged once
/// with the reason (`what`: "not created", "not made").
fn refused(group: &str, name: &OsStr, what: &str, e: NameError) -> CreateError {
    let at = node_path(group, &name.to_string_lossy());
    tracing::warn!(path = %naming::escaped(&at), "{what}: {e}");
    CreateError::Name(e)
}

/// Whether thread `by` is of another process than thread `creator`, and
/// `creator` still runs (FUSE names the thread that asked).
fn another_process(creator: u32, by: u32) -> bool {
    let tgid = |tid: u32| {
        std::fs::read_to_string(format!("/proc/{tid}/status"))
            .ok()?
            .lines()
            .find_map(|l| l.strip_prefix("Tgid:")?.trim().parse::<u32>().ok())
    };
    creator != by && crate::fs::reader::alive(creator) && tgid(creator).is_some_and(|c| Some(c) != tgid(by))
}

/// The name of user `uid` in /etc/passwd.
fn user_name(uid: u32) -> Option<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let mut f = l.split(':');
        let name = f.next()?;
        (f.nth(1)?.parse::<u32>().ok()? == uid).then(|| name.to_string())
    })
}

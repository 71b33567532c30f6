//! New files on a writable mount: a new `NAME.nc` in a group's directory
//! is staged in the spool ([`crate::write::spool`]) and becomes the group
//! `NAME` when its writer closes it (or syncs it whole); the mount then
//! looks at the branch at once, so the group shows as `close()` returns.
//! `flush`, `fsync` and `release` come here for arrays' files too
//! (`edits.rs`).
//!
//! Invariants: only names a commit takes are staged
//! ([`names::file_name`]), so nothing is accepted and then dropped; a
//! flush from a process that writes no file of it (a child closing its
//! copy of the handle at its `exec`) commits nothing while a writer runs;
//! only a handle opened for writing, by a user who may write, commits; a
//! commit that fails fails the `close()` (`EIO`) with the reason.

use std::ffi::OsStr;

use super::{Asker, Handle, Held, Mount, Open, another_process, writer};
use crate::fs::{Attr, FsError, Inode, NzFs};
use crate::naming;
use crate::write::names::{self, FileName, NameError};
use crate::write::node_path;
use crate::write::spool::Stat;
use crate::zarr::hierarchy::NodeKind;

/// The attributes after a `setattr`: a staged file's, or those of a file
/// the hierarchy shows.
#[derive(Debug, Clone, Copy)]
pub enum Sized {
    /// A file being written.
    Staged(Stat),
    /// A file the hierarchy shows (its size kept).
    Shown(Attr),
}

impl Mount {
    /// The group of directory `parent`, where `uid` would make a new file
    /// or group: its hierarchy path, or why not.
    fn group_dir(&self, fs: &NzFs, parent: u64, uid: u32) -> Result<String, FsError> {
        let spool = self.writable_spool()?;
        self.owner_only(uid)?;
        // A group `mkdir` made, held for `nzfs commit`.
        if let Some(path) = spool.dir_path(parent) {
            return Ok(path);
        }
        let Ok(Inode::Node(p)) = fs.inode(parent) else {
            return Err(FsError::NotADirectory);
        };
        let node = &fs.hierarchy().nodes[p];
        match node.kind {
            NodeKind::Group { .. } => Ok(node.path.clone()),
            _ => Err(FsError::Denied("an array's directory takes no new file or group")),
        }
    }

    /// Whether `name` in directory `parent` is taken: by a node below it
    /// (but one a held `rmdir` removes), a file it shows, a file being
    /// written there or a group held there.
    fn taken(&self, fs: &NzFs, parent: u64, name: &str) -> bool {
        let spool = self.spool();
        let by_node = match fs.inode(parent) {
            Ok(Inode::Node(p)) => fs.hierarchy().nodes[p].children.iter().any(|&c| {
                let node = &fs.hierarchy().nodes[c];
                node.name == name && !spool.is_some_and(|s| s.is_removed(&node.path))
            }),
            _ => false,
        };
        by_node
            || fs
                .lookup(parent, OsStr::new(name))
                .is_ok_and(|a| !self.removed(fs, a.ino))
            || spool.is_some_and(|s| s.lookup(parent, name).is_some() || s.lookup_dir(parent, name).is_some())
    }

    /// Where a new file `name` in directory `parent` would go: the group's
    /// hierarchy path, or why not. Only names a commit takes are staged
    /// ([`names::file_name`]): `NAME.nc` or `NAME.h5`, committed as the
    /// group `NAME`, and a writer's temporary `NAME.nc.…`, committed when
    /// renamed `NAME.nc`; any other is refused with the names that are
    /// taken.
    fn creatable(&self, fs: &NzFs, parent: u64, name: &OsStr, uid: u32) -> Result<String, FsError> {
        let group = self.group_dir(fs, parent, uid)?;
        let checked = name.to_str().ok_or(NameError::NotUtf8).and_then(|name| {
            let stem = match names::file_name(name)? {
                FileName::NetCdf(stem) => Some(stem),
                FileName::Temporary(_) => None,
            };
            Ok((name, stem))
        });
        let (name, stem) = checked.map_err(|e| refused(&group, name, "not created", e))?;
        match self.taken(fs, parent, name) || stem.is_some_and(|s| self.taken(fs, parent, s)) {
            true => Err(FsError::Exists(naming::escaped(&node_path(&group, name)))),
            false => Ok(group),
        }
    }

    /// Where `mkdir name` in directory `parent` makes its group: the new
    /// group's hierarchy path, or why not.
    pub(super) fn makeable(&self, fs: &NzFs, parent: u64, name: &OsStr, uid: u32) -> Result<String, FsError> {
        let group = self.group_dir(fs, parent, uid)?;
        let checked = name
            .to_str()
            .ok_or(NameError::NotUtf8)
            .and_then(|name| names::group_name(name).map(|()| name));
        let name = checked.map_err(|e| refused(&group, name, "not made", e))?;
        if self.taken(fs, parent, name) {
            return Err(FsError::Exists(naming::escaped(&node_path(&group, name))));
        }
        // A `NAME.nc` being written or held there becomes this group.
        let claimed = names::ENDINGS
            .iter()
            .map(|e| format!("{name}{e}"))
            .find(|file| self.spool().is_some_and(|s| s.lookup(parent, file).is_some()));
        match claimed {
            Some(file) => Err(FsError::Exists(format!(
                "{} (the group {} becomes when it is committed)",
                naming::escaped(&node_path(&group, name)),
                naming::escaped(&file)
            ))),
            None => Ok(node_path(&group, name)),
        }
    }

    /// A staged file was closed: commit it, and look at the branch at
    /// once so that its group shows (`from_dir_request`: a `rename`, as
    /// [`super::Served::look_now`] says).
    fn close_staged(&self, ino: u64, pid: u32, from_dir_request: bool) -> Result<(), FsError> {
        let Some(spool) = self.spool() else { return Ok(()) };
        if let Some(id) = spool.close(ino)? {
            tracing::info!(ino, pid, snapshot = %id, "committed a closed file");
            self.served.look_now(from_dir_request);
        }
        Ok(())
    }

    /// A new file `name` in directory `parent`, by `who` (with group
    /// `gid`), with permission bits `perm`: its attributes, and the handle
    /// its creator writes it through.
    pub fn create(
        &self,
        who: Asker,
        (gid, perm): (u32, u16),
        parent: u64,
        name: &OsStr,
    ) -> Result<(Stat, u64), FsError> {
        let group = self.creatable(&self.fs(), parent, name, who.uid)?;
        let spool = self.writable_spool()?;
        // `creatable` took only UTF-8 names.
        let name = name.to_str().ok_or(FsError::NotFound)?;
        let by = writer(who.pid, who.uid);
        let st = spool.create(parent, &group, name, (who.uid, gid, perm), by)?;
        Ok((st, self.record(who, st.ino, Held::StagedWrite)))
    }

    /// `data` at `offset` of `ino`, a file being written or an array's
    /// file opened for writing, by `who`: how many bytes were taken.
    pub fn write(&self, who: Asker, ino: u64, offset: u64, data: &[u8]) -> Result<u32, FsError> {
        let spool = self
            .spool()
            .filter(|s| s.owns(ino) || s.is_edited(ino))
            .ok_or(FsError::ReadOnly)?;
        self.owner_only(who.uid)?;
        let written = match spool.owns(ino) {
            true => spool.write(ino, offset, data)?,
            false => spool.edit_write(ino, offset, data)?,
        };
        // At most the kernel's largest write, which a u32 holds.
        Ok(u32::try_from(written).unwrap_or(u32::MAX))
    }

    /// A new size for `ino` by `uid` (a writer's `ftruncate`), or its
    /// attributes as they are (`None`); its mode and times are its own.
    pub fn set_size(&self, uid: u32, ino: u64, size: Option<u64>) -> Result<Sized, FsError> {
        if !self.spool().is_some_and(|s| s.owns(ino)) {
            // A file the hierarchy shows keeps its size.
            self.keep_size(ino, size.ok_or(FsError::ReadOnly)?)?;
            return Ok(Sized::Shown(self.fs().getattr(ino)?));
        }
        let spool = self.writable_spool()?;
        self.owner_only(uid)?;
        let st = match size {
            Some(size) => spool.truncate(ino, size)?,
            None => spool.stat(ino)?,
        };
        Ok(Sized::Staged(st))
    }

    /// `unlink name` in directory `parent` by `uid`: a file being written
    /// goes (a writer that gives up on it); a file the hierarchy shows is
    /// hidden until its directory is removed (`nodes.rs`).
    pub fn unlink(&self, uid: u32, parent: u64, name: &OsStr) -> Result<(), FsError> {
        let staged = self
            .spool()
            .zip(name.to_str())
            .filter(|(s, n)| s.lookup(parent, n).is_some());
        let Some((spool, name)) = staged else {
            return self.hide_shown(uid, parent, name);
        };
        self.owner_only(uid)?;
        Ok(spool.remove(parent, name)?)
    }

    /// Move a file being written (NCO writes `out.nc.pid….tmp`, closes it,
    /// then renames it `out.nc`): renamed `NAME.nc` in a group's
    /// directory, it is committed then. Nothing else moves.
    pub fn rename(
        &self,
        who: Asker,
        (parent, name): (u64, &OsStr),
        (new_parent, new_name): (u64, &OsStr),
    ) -> Result<(), FsError> {
        let (spool, from) = self.spool().zip(name.to_str()).ok_or(FsError::ReadOnly)?;
        let staged = spool.lookup(parent, from).ok_or(FsError::ReadOnly)?;
        let group = self.creatable(&self.fs(), new_parent, new_name, who.uid)?;
        let to = new_name.to_str().unwrap_or_default();
        spool.rename(staged.ino, new_parent, &group, to)?;
        self.close_staged(staged.ino, who.pid, true)
    }

    /// A `close()` of `ino` through handle `fh`: a staged file written since
    /// its last commit is committed now, and an array's file what was
    /// written through it, and a commit that fails fails the `close()`;
    /// only for a handle opened for writing, by a user who may write. A
    /// read-only mount answers [`FsError::Unsupported`], which the kernel
    /// keeps for the connection: no close waits on the daemon.
    pub fn flush(&self, ino: u64, fh: u64, who: Asker) -> Result<(), FsError> {
        let handle = self.handles.handle(fh);
        let Some(spool) = self.spool() else {
            return Err(FsError::Unsupported);
        };
        if !self.may_write(who.uid) {
            return Ok(());
        }
        // A copy of a writer's handle closed by another process (a child's,
        // at its exec) while every writer lives: the file may not be whole
        // yet, and the writers' own close commits it.
        let writers = self.handles.writers(ino);
        if !writers.is_empty() && writers.iter().all(|&w| another_process(w, who.pid)) {
            return Ok(());
        }
        match (spool.owns(ino), handle) {
            (true, Handle::StagedWrite) => self.close_staged(ino, who.pid, false),
            (false, Handle::Edit) => self.commit_edit(ino, who.pid),
            _ => Ok(()),
        }
    }

    /// The release of handle `fh` of `ino` by `pid`, forgotten by the
    /// table (what it held is returned): a staged file written
    /// since its last close (a shared `mmap` written after it) is
    /// committed at the release of its last handle open for writing, and
    /// an edit's writes at the release of its last open; a failure is
    /// logged with where the bytes are kept (a release has no answer to
    /// fail).
    pub fn release(&self, ino: u64, fh: u64, pid: u32) -> Option<Open> {
        let open = self.handles.release(fh);
        self.committed_at_release(ino, Held::handle(open.map(|o| o.held)), pid);
        open
    }

    fn committed_at_release(&self, ino: u64, handle: Handle, pid: u32) {
        let Some(spool) = self.spool() else { return };
        if spool.owns(ino) {
            let (committed, kept) = spool.release(ino, handle == Handle::StagedWrite);
            match committed {
                Ok(Some(id)) => {
                    tracing::info!(ino, pid, snapshot = %id, "committed a file written after its close, at its release");
                    self.served.look_now(false);
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(ino, pid, error = %e, "the released file was not committed; the branch is as it was")
                }
            }
            if let Some(kept) = kept {
                tracing::warn!(ino, kept = %kept.display(), "a file whose commit failed is kept in the spool");
            }
        } else if handle == Handle::Edit {
            // The last open's writes (a shared mmap's, written back by the
            // kernel after the close) go with a commit; a failed one keeps
            // its bytes, and says where.
            if spool.edit_last_open(ino)
                && let Err(e) = self.commit_edit(ino, pid)
            {
                tracing::warn!(ino, pid, error = %e, "at the last release of a file written into");
            }
            spool.edit_release(ino);
        }
    }

    /// An `fsync` of `ino` through handle `fh`: a staged file's bytes reach
    /// the spool's disk, and it is committed when it is whole netCDF
    /// (classic or netCDF-4); an array's file opened for writing commits what was
    /// written; [`FsError::Unsupported`] on a read-only mount, as
    /// [`Mount::flush`]. A reader's `fsync` of a file being written is
    /// its disk flush alone.
    pub fn fsync(&self, ino: u64, fh: u64, who: Asker) -> Result<(), FsError> {
        let handle = self.handles.handle(fh);
        let spool = self.spool().ok_or(FsError::Unsupported)?;
        let writer = self.may_write(who.uid);
        match (spool.owns(ino), handle) {
            (true, Handle::StagedWrite) if writer => {
                if let Some(id) = spool.sync(ino)? {
                    tracing::info!(ino, pid = who.pid, snapshot = %id, "committed a synced file");
                    self.served.look_now(false);
                }
                Ok(())
            }
            (false, Handle::Edit) if writer => self.commit_edit(ino, who.pid),
            _ => Ok(()),
        }
    }
}

/// A name refused for a new file or group in group `group` (`what`: "not
/// created", "not made"), with its path and the reason.
fn refused(group: &str, name: &OsStr, what: &str, e: NameError) -> FsError {
    let at = node_path(group, &name.to_string_lossy());
    FsError::Invalid(format!("{}: {what}: {e}", naming::escaped(&at)))
}

impl Mount {
    /// `nzfs commit` by `who`: every file held for it (`--commit
    /// explicit`) as one commit, with `message` (empty: one naming the
    /// files and who committed them); then the mount looks at the branch,
    /// so that the groups show as this returns. The snapshot and the
    /// files, or `None` when nothing was held.
    pub fn commit_held(&self, message: &str, who: Asker) -> Result<Option<(String, Vec<String>)>, FsError> {
        let spool = self.writable_spool()?;
        self.owner_only(who.uid)?;
        if !spool.holds() {
            return Err(FsError::Invalid(
                "this mount commits each file at its close; `nzfs commit` is for a mount made with --commit explicit"
                    .into(),
            ));
        }
        let held = spool.held();
        let message = match message.trim() {
            "" => format!(
                "{} committed through nzfs by {}",
                naming::escaped(&held.join(", ")),
                writer(who.pid, who.uid)
            ),
            m => naming::escaped(m),
        };
        let Some(made) = spool.commit_held(&message)? else {
            return Ok(None);
        };
        tracing::info!(pid = who.pid, snapshot = %made.snapshot, files = made.paths.len(), "committed what was held");
        self.served.look_now(false);
        // The edits' bytes leave once the version that shows them is served.
        let now: crate::write::spool::Base = self.fs();
        for (ino, p) in &made.edits {
            spool.edit_done(*ino, p, Some(std::sync::Arc::clone(&now)));
        }
        // The directories held groups were listed in, and those themselves.
        self.served.forget_pages(&made.dirs);
        Ok(Some((made.snapshot, made.paths)))
    }

    /// `nzfs discard` by `who`: everything held for `nzfs commit` dropped,
    /// the branch unchanged; the paths dropped.
    pub fn discard_held(&self, who: Asker) -> Result<Vec<String>, FsError> {
        let spool = self.writable_spool()?;
        self.owner_only(who.uid)?;
        if !spool.holds() {
            return Err(FsError::Invalid(
                "this mount commits each file at its close; `nzfs discard` is for a mount made with --commit explicit"
                    .into(),
            ));
        }
        let dropped = spool.discard_held();
        if !dropped.paths.is_empty() {
            tracing::info!(
                pid = who.pid,
                files = dropped.paths.len(),
                "discarded what was held: {}",
                dropped.paths.join(", ")
            );
        }
        // A discarded edit's file shows the array's bytes again, and a
        // directory its nodes; the mount looks at the branch, which
        // another writer may have moved meanwhile.
        self.served.forget_pages(&dropped.edited);
        self.served.look_now(false);
        Ok(dropped.paths)
    }
}

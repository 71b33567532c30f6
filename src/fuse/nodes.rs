//! A writable mount's directory requests: `mkdir` in a group's directory
//! makes a group, `rmdir` of an empty directory (a group with no nodes
//! below it, or a node whose files were all unlinked) deletes the node,
//! each in one commit; `unlink` of a file the hierarchy
//! shows (what `rm -r` does before it removes the directory) hides it in
//! this mount, so that `rm -r` of an array or a group works: the `rmdir`
//! of each directory, once its files are unlinked and its nodes removed,
//! is the commit.
//!
//! Invariants: only the mount's owner and root change nodes; the root is
//! never removed; a commit that fails changes nothing and answers `EIO`
//! with one log line; the filesystem that shows the change is served when
//! the request is answered (made from the one served where that is the
//! commit's parent), and the kernel is told of it afterwards
//! ([`super::follow::Live::serve_own_commit`]: it holds the directories
//! locked until the answer).

use std::ffi::OsStr;

use super::FuseAdapter;
use crate::fs::{Attr, Inode, Kind, OwnChange};
use crate::write::{Stage, WriteError, node_path};
use crate::zarr::documents::ZARR_JSON;
use crate::zarr::hierarchy::NodeKind;

impl FuseAdapter {
    /// `mkdir name` in directory `parent` by `(uid, pid)`: the new group's
    /// attributes.
    pub(super) fn make_group(&self, (uid, pid): (u32, u32), parent: u64, name: &OsStr) -> Result<Attr, i32> {
        let path = self.makeable(parent, name, uid).map_err(|e| e.errno())?;
        let message = format!(
            "mkdir {} through nzfs by {}",
            crate::naming::escaped(&path),
            FuseAdapter::writer(pid, uid)
        );
        let key = node_path(&path, ZARR_JSON);
        let new_group = crate::zarr::documents::group_document(crate::json::Value::Object(Vec::new()));
        self.commit_node_change(
            &path,
            OwnChange::Made(&path, &new_group),
            &message,
            &mut |stage: &dyn Stage| {
                if stage.get(&key, 1 << 20)?.is_some() {
                    return Err(WriteError::Exists(path.clone()));
                }
                stage.put(&key, new_group.clone())
            },
        )?;
        self.fs().lookup(parent, name).map_err(|_| libc::EIO)
    }

    /// `rmdir name` in directory `parent` by `(uid, pid)`: the node and all
    /// below it leave the branch.
    pub(super) fn remove_node(&self, (uid, pid): (u32, u32), parent: u64, name: &OsStr) -> Result<(), i32> {
        let spool = self.spool().ok_or(libc::EROFS)?;
        if !self.may_write(uid) {
            return Err(libc::EACCES);
        }
        let path = {
            let fs = self.fs();
            let found = fs.lookup(parent, name).map_err(|_| libc::ENOENT)?;
            let node = match (found.kind, fs.inode(found.ino)) {
                (Kind::Directory, Ok(Inode::Node(0))) => return Err(libc::EBUSY),
                (Kind::Directory, Ok(Inode::Node(n))) => &fs.hierarchy().nodes[n],
                _ => return Err(libc::ENOTDIR),
            };
            // Empty: no file being written there, and a group with no nodes
            // below it (its files only show its attributes) or any node
            // whose listed files were all unlinked.
            if !spool.list(found.ino).is_empty() {
                return Err(libc::ENOTEMPTY);
            }
            if !(matches!(node.kind, NodeKind::Group { .. }) && node.children.is_empty()) {
                let mut full = false;
                let listed = self.list(&fs, found.ino, 0, |e| {
                    full = e.name != "." && e.name != "..";
                    full
                });
                if full || listed.is_err() {
                    return Err(libc::ENOTEMPTY);
                }
            }
            node.path.clone()
        };
        // Empty at the tip too, in the session that commits (the mount's
        // view may be older than another writer's commit of a node there).
        self.commit_node_change(
            &path,
            OwnChange::Removed(&path),
            &format!(
                "rm {} through nzfs by {}",
                crate::naming::escaped(&path),
                FuseAdapter::writer(pid, uid)
            ),
            &mut |stage: &dyn Stage| match stage.children(&path, 1)?.first() {
                Some(child) => Err(WriteError::NotEmpty(path.clone(), node_path(&path, child))),
                None => stage.delete_node(&path),
            },
        )?;
        spool.unhide_all();
        Ok(())
    }

    /// `unlink name` in directory `parent` by `uid`, of a file the
    /// hierarchy shows: hidden in this mount (its node goes when its
    /// directory is removed).
    pub(super) fn hide_shown(&self, uid: u32, parent: u64, name: &OsStr) -> Result<(), i32> {
        let spool = self.spool().ok_or(libc::EROFS)?;
        if !self.may_write(uid) {
            return Err(libc::EACCES);
        }
        let found = self.fs().lookup(parent, name).map_err(|_| libc::ENOENT)?;
        match found.kind {
            Kind::Directory => Err(libc::EISDIR),
            Kind::File => {
                spool.hide(found.ino);
                // One line per file would be a million for an array's
                // chunk files under `rm -r`: the rmdir's commit is logged.
                tracing::debug!(
                    file = %name.to_string_lossy(),
                    "unlinked: hidden in this mount; its node leaves the branch when its directory is removed"
                );
                Ok(())
            }
        }
    }

    /// One commit of `change` for node `path`, then the new filesystem
    /// served before the request is answered: made from the one served
    /// with `known`, what the commit changed, where that is its parent;
    /// else read again.
    fn commit_node_change(
        &self,
        path: &str,
        known: OwnChange<'_>,
        message: &str,
        change: &mut dyn FnMut(&dyn Stage) -> Result<(), WriteError>,
    ) -> Result<(), i32> {
        let spool = self.spool().ok_or(libc::EROFS)?;
        match spool.change(message, change) {
            Ok(landed) => {
                tracing::info!(node = %crate::naming::escaped(path), snapshot = %landed.snapshot, "{message}");
                self.live.serve_own_commit(&landed.of(known), true);
                Ok(())
            }
            Err(e) => {
                tracing::warn!(node = %crate::naming::escaped(path), error = %e, "not committed; the branch is as it was");
                Err(e.errno())
            }
        }
    }
}

//! A writable mount's directory requests: `mkdir` in a group's directory
//! makes a group, `rmdir` of an empty directory (a group with no nodes
//! below it, or a node whose files were all unlinked) deletes the node,
//! each in one commit; `unlink` of a file the hierarchy shows (what
//! `rm -r` does before it removes the directory) hides it in this mount,
//! so that `rm -r` of an array or a group works: the `rmdir` of each
//! directory, once its files are unlinked and its nodes removed, is the
//! commit.
//!
//! Invariants: the root is never removed; a directory is empty both in
//! this mount's view and at the branch's tip in the session that commits
//! (another writer may have filled it since); a commit that fails changes
//! nothing; the version that shows the change is served when the request
//! is answered, and the kernel is told of it afterwards (it holds the
//! directories locked until the answer).

use std::ffi::OsStr;

use super::{Asker, Mount, writer};
use crate::fs::{Attr, FsError, Inode, Kind, OwnChange};
use crate::write::{Stage, WriteError, node_path};
use crate::zarr::documents::ZARR_JSON;
use crate::zarr::hierarchy::NodeKind;

impl Mount {
    /// `mkdir name` in directory `parent` by `who`: the new group's
    /// attributes.
    pub fn make_group(&self, who: Asker, parent: u64, name: &OsStr) -> Result<Attr, FsError> {
        let path = self.makeable(&self.fs(), parent, name, who.uid)?;
        let message = format!(
            "mkdir {} through nzfs by {}",
            crate::naming::escaped(&path),
            writer(who.pid, who.uid)
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
        self.fs().lookup(parent, name)
    }

    /// `rmdir name` in directory `parent` by `who`: the node and all below
    /// it leave the branch.
    pub fn remove_node(&self, who: Asker, parent: u64, name: &OsStr) -> Result<(), FsError> {
        let spool = self.writable_spool()?;
        self.owner_only(who.uid)?;
        let path = {
            let fs = self.fs();
            let found = fs.lookup(parent, name).map_err(|_| FsError::NotFound)?;
            let node = match (found.kind, fs.inode(found.ino)) {
                (Kind::Directory, Ok(Inode::Node(0))) => return Err(FsError::Busy),
                (Kind::Directory, Ok(Inode::Node(n))) => &fs.hierarchy().nodes[n],
                _ => return Err(FsError::NotADirectory),
            };
            let not_empty = |holds: &str| FsError::NotEmpty {
                what: format!("{}: {holds}", crate::naming::escaped(&node.path)),
                at_tip: false,
            };
            // Empty: no file being written there, and a group with no nodes
            // below it (its files only show its attributes) or any node
            // whose listed files were all unlinked.
            if !spool.list(found.ino).is_empty() {
                return Err(not_empty("files are being written there"));
            }
            if !(matches!(node.kind, NodeKind::Group { .. }) && node.children.is_empty()) {
                let mut full = false;
                let listed = self.list(&fs, found.ino, 0, |e| {
                    full = e.name != "." && e.name != "..";
                    full
                });
                if full || listed.is_err() {
                    return Err(not_empty("it lists files or nodes"));
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
                writer(who.pid, who.uid)
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
    pub(super) fn hide_shown(&self, uid: u32, parent: u64, name: &OsStr) -> Result<(), FsError> {
        let spool = self.writable_spool()?;
        self.owner_only(uid)?;
        let found = self.fs().lookup(parent, name).map_err(|_| FsError::NotFound)?;
        match found.kind {
            Kind::Directory => Err(FsError::IsADirectory),
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

    /// One commit of `change` for node `path`, then the new version served
    /// before the request is answered: made from the one served with
    /// `known`, what the commit changed, where that is its parent; else
    /// read again.
    fn commit_node_change(
        &self,
        path: &str,
        known: OwnChange<'_>,
        message: &str,
        change: &mut dyn FnMut(&dyn Stage) -> Result<(), WriteError>,
    ) -> Result<(), FsError> {
        let landed = self.writable_spool()?.change(message, change)?;
        tracing::info!(node = %crate::naming::escaped(path), snapshot = %landed.snapshot, "{message}");
        self.served.serve_own_commit(&super::own_commit(&landed, known), true);
        Ok(())
    }
}

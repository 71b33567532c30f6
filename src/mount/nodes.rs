//! A writable mount's directory requests: `mkdir` in a group's directory
//! makes a group, `rmdir` of an empty directory (a group with no nodes
//! below it, or a node whose files were all unlinked) deletes the node,
//! each in one commit; `unlink` of a file the hierarchy shows (what
//! `rm -r` does before it removes the directory) hides it in this mount,
//! so that `rm -r` of an array or a group works: the `rmdir` of each
//! directory, once its files are unlinked and its nodes removed, is the
//! commit.
//!
//! On a mount made with `--commit explicit`, `mkdir` and `rmdir` commit
//! nothing: each is held for `nzfs commit` (`write::spool`'s `dirs.rs`),
//! checked as below when it is made, and again at the tip when the
//! commit is.
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
    /// `mkdir name` in directory `parent` by `who` (with group `gid`, and
    /// permission bits `perm` for a group held): the new group's
    /// attributes.
    pub fn make_group(&self, who: Asker, (gid, perm): (u32, u16), parent: u64, name: &OsStr) -> Result<Attr, FsError> {
        let path = self.makeable(&self.fs(), parent, name, who.uid)?;
        let spool = self.writable_spool()?;
        if spool.holds() {
            let (group, name) = path.rsplit_once('/').unwrap_or(("", &path));
            let st = spool.make_dir(parent, group, name, (who.uid, gid, perm));
            tracing::info!(node = %crate::naming::escaped(&path), "mkdir held for nzfs commit");
            return Ok(held_dir_attr(st));
        }
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
        // A group held for `nzfs commit`: dropped.
        if let Some(held) = name.to_str().and_then(|n| spool.lookup_dir(parent, n)) {
            let path = spool.dir_path(held.ino).unwrap_or_default();
            spool.remove_dir(parent, name.to_str().unwrap_or_default())?;
            tracing::info!(node = %crate::naming::escaped(&path), "a held mkdir dropped by its rmdir");
            return Ok(());
        }
        let path = {
            let fs = self.fs();
            let found = match self.lookup(&fs, parent, name)? {
                super::Entry::Shown(a) => a,
                super::Entry::Staged(_) => return Err(FsError::NotADirectory),
            };
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
            let no_nodes = node
                .children
                .iter()
                .all(|&c| spool.is_removed(&fs.hierarchy().nodes[c].path));
            if !(matches!(node.kind, NodeKind::Group { .. }) && no_nodes) {
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
        if spool.holds() {
            spool.hold_removal(parent, &path);
            tracing::info!(node = %crate::naming::escaped(&path), "rmdir held for nzfs commit");
            return Ok(());
        }
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

/// The attributes of a group held for `nzfs commit`.
pub(super) fn held_dir_attr(st: crate::write::spool::Stat) -> Attr {
    Attr {
        ino: st.ino,
        kind: Kind::Directory,
        size: 0,
        perm: st.perm,
        nlink: 2,
        uid: st.uid,
        gid: st.gid,
        mtime: st.mtime,
        blksize: 4096,
    }
}

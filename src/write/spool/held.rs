//! What a `--commit explicit` mount holds for one commit: every `NAME.nc`
//! (or `NAME.h5`) closed since the last `nzfs commit`, which stays in the
//! spool, shown where it was written, every array's file written into
//! and closed, whose bytes stay shown over the array's, and every
//! `mkdir` and `rmdir` (`dirs.rs`), until [`Spool::commit_held`] makes
//! them all one commit, or [`Spool::discard_held`] (or a new file's `rm`)
//! drops them.
//!
//! Invariants: nothing held leaves the spool but by a commit that landed
//! or a discard; a commit that fails puts every file back as it was and
//! keeps every edit, and the branch stays where it was (one commit, all
//! or nothing); nothing still open for writing is committed.

use super::{Spool, SpoolError, lock};
use crate::write::names::group_of;
use crate::write::{WriteError, node_path};

impl Spool {
    /// Hold new files for [`Spool::commit_held`] instead of committing
    /// each at its close (and at its `fsync`).
    pub fn hold_until_commit(&mut self) {
        self.explicit = true;
    }

    /// Whether new files are held for [`Spool::commit_held`].
    pub fn holds(&self) -> bool {
        self.explicit
    }

    /// What is held, in order: the directory changes (`rmdir group/old`,
    /// `mkdir group/new`, in the order they are committed), then new files
    /// (`group/NAME.nc`: closed, written since their last commit) and files
    /// of arrays written into (`group/t2m/data.bin`, closed), by their
    /// paths in the mount.
    pub fn held(&self) -> Vec<String> {
        let files = lock(&self.files);
        let mut held: Vec<String> = files
            .values()
            .filter(|s| s.dirty && group_of(&s.name).is_some() && s.write_opens == 0)
            .map(|s| node_path(&s.parent, &s.name))
            .collect();
        drop(files);
        held.extend(self.held_edits().into_iter().map(|(_, named)| named));
        held.sort();
        let mut dirs = self.held_dirs();
        dirs.append(&mut held);
        dirs
    }

    /// One commit, with `message`, of everything held: each removal (the
    /// node empty at the tip once the removals before it are made), each
    /// group made (absent at the tip), each new file as
    /// the group its close would have made, each array's written file as
    /// the chunks it touches (checked at the tip against the version its
    /// writer saw, re-encoded with the array's codecs). `None` where
    /// nothing is held. Refused, committing nothing, while a `NAME.nc` or
    /// an array's written file is open for writing (it may not be whole).
    /// The edits committed are returned for [`Spool::edit_done`] with the
    /// version that shows them.
    pub fn commit_held(&self, message: &str) -> Result<Option<HeldCommit>, SpoolError> {
        let taken = {
            let mut files = lock(&self.files);
            let mut open: Vec<String> = files
                .values()
                .filter(|s| group_of(&s.name).is_some() && s.write_opens > 0)
                .map(|s| node_path(&s.parent, &s.name))
                .collect();
            open.extend(self.open_edits());
            if !open.is_empty() {
                open.sort();
                return Err(SpoolError::Commit(WriteError::Conflict(format!(
                    "{} still open for writing: close it, then commit",
                    open.join(", ")
                ))));
            }
            let inos: Vec<u64> = files
                .iter()
                .filter(|(_, s)| s.dirty && group_of(&s.name).is_some())
                .map(|(&ino, _)| ino)
                .collect();
            inos.into_iter()
                .filter_map(|ino| files.remove(&ino).map(|s| (ino, s)))
                .collect::<Vec<_>>()
        };
        let mut edits = Vec::new();
        for (ino, _) in self.held_edits() {
            if let Some(p) = self.edit_pending(ino)? {
                edits.push((ino, p));
            }
        }
        let dirs = self.take_dirs();
        if taken.is_empty() && edits.is_empty() && dirs.is_empty() {
            return Ok(None);
        }
        let mut paths = dirs.named();
        paths.extend(taken.iter().map(|(_, s)| node_path(&s.parent, &s.name)));
        paths.extend(edits.iter().map(|(_, p)| p.named.clone()));
        let result = self.target.change(message, &mut |stage| {
            // What another writer put below a removed node since is kept:
            // the commit is refused.
            for (path, _) in &dirs.removed {
                match stage.children(path, 1)?.first() {
                    Some(child) => return Err(WriteError::NotEmpty(path.clone(), node_path(path, child))),
                    None => stage.delete_node(path)?,
                }
            }
            let group = crate::zarr::documents::group_document(crate::json::Value::Object(Vec::new()));
            for path in dirs.made() {
                let key = node_path(path, crate::zarr::documents::ZARR_JSON);
                if stage.get(&key, 1 << 20)?.is_some() {
                    return Err(WriteError::Exists(path.to_string()));
                }
                stage.put(&key, group.clone())?;
            }
            for (_, s) in &taken {
                let stem = group_of(&s.name).unwrap_or(&s.name);
                crate::write::stage_group(stage, &node_path(&s.parent, stem), &s.file)?;
            }
            // The chunks all edits touch, within one budget.
            let mut most = edits
                .first()
                .map_or(0, |(_, p)| crate::write::edit::max_chunks(p.base.cache_budget()));
            for (_, p) in &edits {
                let array = p
                    .base
                    .array(p.node)
                    .ok_or_else(|| WriteError::Refused(format!("{}: no longer decoded", p.array)))?;
                let touched = crate::write::edit::apply(array, p.base.store(), p, stage, most)?;
                most = most.saturating_sub(touched);
            }
            Ok(())
        });
        self.record(message, result.as_ref().map(|l| l.snapshot.as_str()));
        match result {
            Ok(landed) => {
                for (_, s) in &taken {
                    let _ = std::fs::remove_file(&s.path);
                }
                // What was unlinked went with its node, or shows again.
                self.unhide_all();
                Ok(Some(HeldCommit {
                    snapshot: landed.snapshot,
                    paths,
                    edits,
                    dirs: dirs.parents(),
                }))
            }
            Err(e) => {
                let mut files = lock(&self.files);
                for (ino, s) in taken {
                    files.insert(ino, s);
                }
                drop(files);
                self.put_back_dirs(dirs);
                Err(SpoolError::Commit(e))
            }
        }
    }

    /// Drop everything held (`nzfs discard`): its bytes leave the spool,
    /// the branch does not move. The paths dropped, in order; what is open
    /// for writing is not held, and stays.
    pub fn discard_held(&self) -> Discarded {
        let mut dropped = Vec::new();
        {
            let mut files = lock(&self.files);
            let inos: Vec<u64> = files
                .iter()
                .filter(|(_, s)| s.dirty && group_of(&s.name).is_some() && s.write_opens == 0)
                .map(|(&ino, _)| ino)
                .collect();
            for ino in inos {
                let s = files.remove(&ino).expect("listed");
                let _ = std::fs::remove_file(&s.path);
                dropped.push(node_path(&s.parent, &s.name));
            }
        }
        let mut edited = Vec::new();
        for (ino, named) in self.held_edits() {
            self.drop_edit(ino);
            dropped.push(named);
            edited.push(ino);
        }
        dropped.sort();
        // A held group with a file still open for writing in it stays.
        let dirs = self.take_dirs();
        let (kept, gone) = dirs.split(|path| self.stages_below(path));
        self.put_back_dirs(kept);
        let mut paths = gone.named();
        paths.append(&mut dropped);
        edited.extend(gone.parents());
        self.unhide_all();
        Discarded { paths, edited }
    }
}

/// What [`Spool::discard_held`] dropped.
pub struct Discarded {
    /// The paths, in order.
    pub paths: Vec<String>,
    /// The inodes of the arrays' files whose writes were dropped, and of
    /// the directories where groups made were dropped (what the kernel
    /// caches of them is stale).
    pub edited: Vec<u64>,
}

/// What [`Spool::commit_held`] committed.
pub struct HeldCommit {
    /// The snapshot made.
    pub snapshot: String,
    /// The paths committed, new files first.
    pub paths: Vec<String>,
    /// The edits committed (the file's inode, what was taken of it).
    pub edits: Vec<(u64, super::Pending)>,
    /// The directories where groups were made (what the kernel lists of
    /// them is stale).
    pub dirs: Vec<u64>,
}

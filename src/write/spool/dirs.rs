//! The directory changes a `--commit explicit` mount holds for
//! [`Spool::commit_held`]: each `mkdir` a group made at the commit (shown
//! until then as a directory of the spool's, where new files and further
//! `mkdir`s may go), and each `rmdir` a node removed at the commit (hidden
//! until then, with everything below it).
//!
//! Invariants: a held group has an inode of the spool's (`inos | n`) and a
//! hierarchy path below a group of the branch or another held group; a
//! held group leaves the spool only by a commit that landed, a discard, or
//! its own `rmdir` while nothing is staged in it; a held removal is a node
//! path the mount showed when it was removed, kept in the order of the
//! `rmdir`s (so a directory's nodes go before it), and leaves the spool
//! only by a commit that landed or a discard.

use std::time::SystemTime;

use super::{Spool, SpoolError, Stat, lock};
use crate::store::is_at_or_below;
use crate::write::node_path;

/// A group `mkdir` made that waits for the commit.
pub(super) struct HeldDir {
    parent_ino: u64,
    /// Its hierarchy path.
    path: String,
    name: String,
    uid: u32,
    gid: u32,
    mtime: SystemTime,
    perm: u16,
}

impl HeldDir {
    fn stat(&self, ino: u64) -> Stat {
        Stat {
            ino,
            size: 0,
            uid: self.uid,
            gid: self.gid,
            mtime: self.mtime,
            perm: self.perm,
            dir: true,
        }
    }
}

impl Spool {
    /// Hold `mkdir name` in directory `parent_ino` (the group at hierarchy
    /// path `parent`) by `uid`:`gid` with permission bits `perm`, for the
    /// next [`Spool::commit_held`]: the new directory's attributes.
    pub fn make_dir(&self, parent_ino: u64, parent: &str, name: &str, (uid, gid, perm): (u32, u32, u16)) -> Stat {
        let ino = self.inos | self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = HeldDir {
            parent_ino,
            path: node_path(parent, name),
            name: name.to_string(),
            uid,
            gid,
            mtime: SystemTime::now(),
            perm: perm & 0o7777,
        };
        let stat = dir.stat(ino);
        lock(&self.dirs).insert(ino, dir);
        stat
    }

    /// The held group `name` of directory `parent_ino`.
    pub fn lookup_dir(&self, parent_ino: u64, name: &str) -> Option<Stat> {
        lock(&self.dirs)
            .iter()
            .find(|(_, d)| d.parent_ino == parent_ino && d.name == name)
            .map(|(&ino, d)| d.stat(ino))
    }

    /// The hierarchy path of held group `ino`.
    pub fn dir_path(&self, ino: u64) -> Option<String> {
        lock(&self.dirs).get(&ino).map(|d| d.path.clone())
    }

    /// The directory that holds held group `ino`.
    pub fn dir_parent(&self, ino: u64) -> Option<u64> {
        lock(&self.dirs).get(&ino).map(|d| d.parent_ino)
    }

    /// The held groups of directory `parent_ino`: name and attributes.
    pub(super) fn list_dirs(&self, parent_ino: u64) -> Vec<(String, Stat)> {
        lock(&self.dirs)
            .iter()
            .filter(|(_, d)| d.parent_ino == parent_ino)
            .map(|(&ino, d)| (d.name.clone(), d.stat(ino)))
            .collect()
    }

    /// A held group's attributes.
    pub(super) fn dir_stat(&self, ino: u64) -> Option<Stat> {
        lock(&self.dirs).get(&ino).map(|d| d.stat(ino))
    }

    /// `rmdir` of held group `name` in directory `parent_ino`: dropped,
    /// where nothing is staged in it. `NotFound` where it is no held
    /// group.
    pub fn remove_dir(&self, parent_ino: u64, name: &str) -> Result<(), SpoolError> {
        let ino = self.lookup_dir(parent_ino, name).ok_or(SpoolError::NotFound)?.ino;
        if !self.list(ino).is_empty() {
            return Err(SpoolError::NotEmpty(self.dir_path(ino).unwrap_or_default()));
        }
        lock(&self.dirs).remove(&ino);
        Ok(())
    }

    /// Hold the removal of node `path` (its `rmdir` in directory
    /// `parent_ino`) for the next [`Spool::commit_held`]; hidden from then
    /// on, with what is below it.
    pub fn hold_removal(&self, parent_ino: u64, path: &str) {
        lock(&self.removed).push((path.to_string(), parent_ino));
    }

    /// Whether node `path` is removed by a held `rmdir` (it, or a node
    /// above it).
    pub fn is_removed(&self, path: &str) -> bool {
        lock(&self.removed).iter().any(|(r, _)| is_at_or_below(path, r))
    }

    /// What the held directory changes are, as `nzfs status` lists them
    /// ([`named`]).
    pub(super) fn held_dirs(&self) -> Vec<String> {
        let removed = lock(&self.removed);
        let dirs = lock(&self.dirs);
        named(&removed, &dirs)
    }

    /// The held directory changes, taken for a commit: the removals in
    /// order, and the groups to make, parents first.
    pub(super) fn take_dirs(&self) -> TakenDirs {
        let removed = std::mem::take(&mut *lock(&self.removed));
        let dirs = std::mem::take(&mut *lock(&self.dirs));
        TakenDirs { removed, dirs }
    }

    /// Whether a file is staged in group `path` or below it.
    pub(super) fn stages_below(&self, path: &str) -> bool {
        lock(&self.files).values().any(|s| is_at_or_below(&s.parent, path))
    }

    /// Put back what [`Spool::take_dirs`] took (its commit failed).
    pub(super) fn put_back_dirs(&self, taken: TakenDirs) {
        let mut removed = lock(&self.removed);
        let later = std::mem::replace(&mut *removed, taken.removed);
        removed.extend(later);
        lock(&self.dirs).extend(taken.dirs);
    }
}

/// The held directory changes one commit takes.
pub(super) struct TakenDirs {
    /// The nodes removed, in the order of their `rmdir`s, and the
    /// directories they were removed from.
    pub removed: Vec<(String, u64)>,
    /// The groups made, by inode.
    dirs: std::collections::BTreeMap<u64, HeldDir>,
}

impl TakenDirs {
    pub fn is_empty(&self) -> bool {
        self.removed.is_empty() && self.dirs.is_empty()
    }

    /// The groups made, parents first.
    pub fn made(&self) -> Vec<&str> {
        made(&self.dirs)
    }

    /// The directories the groups were made in and the nodes removed
    /// from, and the groups' own inodes (what the kernel lists of those
    /// is stale once these changes are made or dropped).
    pub fn parents(&self) -> Vec<u64> {
        let mut inos: Vec<u64> = self.dirs.values().map(|d| d.parent_ino).collect();
        inos.extend(self.dirs.keys());
        inos.extend(self.removed.iter().map(|(_, p)| *p));
        inos
    }

    /// Those whose groups' paths `keep` says stay, and the rest with the
    /// removals.
    pub fn split(mut self, keep: impl Fn(&str) -> bool) -> (TakenDirs, TakenDirs) {
        let (kept, gone) = std::mem::take(&mut self.dirs)
            .into_iter()
            .partition(|(_, d)| keep(&d.path));
        let gone = TakenDirs {
            removed: std::mem::take(&mut self.removed),
            dirs: gone,
        };
        (
            TakenDirs {
                removed: Vec::new(),
                dirs: kept,
            },
            gone,
        )
    }

    /// As `nzfs status` listed them.
    pub fn named(&self) -> Vec<String> {
        named(&self.removed, &self.dirs)
    }
}

/// The paths of the groups `dirs` makes, parents first.
fn made(dirs: &std::collections::BTreeMap<u64, HeldDir>) -> Vec<&str> {
    let mut made: Vec<&str> = dirs.values().map(|d| d.path.as_str()).collect();
    made.sort_by_key(|p| (p.matches('/').count(), *p));
    made
}

/// Directory changes as `nzfs status` lists them and `nzfs commit` makes
/// them: `rmdir PATH` in order, then `mkdir PATH`, parents first.
fn named(removed: &[(String, u64)], dirs: &std::collections::BTreeMap<u64, HeldDir>) -> Vec<String> {
    let mut named: Vec<String> = removed.iter().map(|(p, _)| format!("rmdir {p}")).collect();
    named.extend(made(dirs).into_iter().map(|p| format!("mkdir {p}")));
    named
}

//! Writes into an existing array's files (`data.bin`, a chunk file),
//! staged in the spool until their writer closes (or syncs) the file.
//!
//! An edit is keyed by the file's inode number, shared by every open of
//! it. What is written lands in a sparse spool file at the same offsets,
//! and the written stretches are kept as a set of disjoint extents, so the
//! edit holds on disk exactly what was written and in memory one entry per
//! stretch. A read of the file while it is edited shows what was written
//! over what the store holds ([`Spool::edit_patch`]).
//!
//! Invariants: a write never changes the file's size (one past its end is
//! refused); the extents are disjoint, sorted and merged where they touch;
//! their bytes count against the spool's limit with the new files'; an
//! edit leaves the spool with its last open, its bytes removed; the bytes
//! of a commit that failed are kept in the spool under a name of their
//! own (named in the log), and leave the edit.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

use super::{Spool, SpoolError};
use crate::sync::lock;

/// Which file of an array an edit writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// `data.bin`: the whole array, C order.
    Data,
    /// The chunk file of chunk `n` (C order over the grid).
    Chunk(u64),
}

/// The version of the metadata a writer saw when it opened the file: what
/// its commit is checked against and encodes with (the mount core serves
/// one; the spool only keeps it).
pub trait Version: Send + Sync {
    /// Array node `node` as that version decodes it.
    fn array(&self, node: usize) -> Option<&crate::array::Array>;
    /// The store that version reads.
    fn store(&self) -> &dyn crate::store::ReadableStore;
    /// Its decoded-chunk budget, which bounds the chunks one commit takes.
    fn cache_budget(&self) -> u64;
}

/// What the writer saw when it opened the file ([`Version`]).
pub type Base = Arc<dyn Version>;

pub(super) struct Edit {
    node: usize,
    array: String,
    /// The file's path in the mount, for messages.
    named: String,
    shown: Shown,
    size: u64,
    path: PathBuf,
    file: File,
    /// Written stretches: start to end.
    extents: BTreeMap<u64, u64>,
    /// The bytes they cover.
    bytes: u64,
    /// Writes since the edit began (a commit taken meanwhile keeps them).
    writes: u64,
    opens: u32,
    writer: String,
    base: Base,
}

impl Edit {
    /// Add `[start, end)`, merged with the extents it touches: those are
    /// the last ones starting at or before `end` (the extents are disjoint
    /// and sorted, so their ends rise with their starts), found from
    /// there backwards.
    fn add(&mut self, mut start: u64, mut end: u64) {
        let touching: Vec<(u64, u64)> = self
            .extents
            .range(..=end)
            .rev()
            .take_while(|&(_, &e)| e >= start)
            .map(|(&s, &e)| (s, e))
            .collect();
        for (s, e) in touching {
            self.extents.remove(&s);
            self.bytes -= e - s;
            start = start.min(s);
            end = end.max(e);
        }
        self.extents.insert(start, end);
        self.bytes += end - start;
    }

    /// The extents that overlap `[offset, end)`, clipped to it.
    fn overlapping(&self, offset: u64, end: u64) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.extents
            .range(..end)
            .rev()
            .take_while(move |&(_, &t)| t > offset)
            .map(move |(&s, &t)| (s.max(offset), t.min(end)))
    }

    fn clear(&mut self) {
        self.extents.clear();
        self.bytes = 0;
    }
}

/// An edit taken for a commit: its written stretches and where their
/// bytes are.
pub struct Pending {
    /// The array's node number.
    pub node: usize,
    /// The array's hierarchy path.
    pub array: String,
    /// The file's path in the mount (`t2m/data.bin`).
    pub named: String,
    /// Which of its files was written.
    pub shown: Shown,
    /// The written stretches, in order, disjoint.
    pub extents: Vec<(u64, u64)>,
    /// Their bytes, at the same offsets.
    pub file: File,
    /// Who wrote it, for the commit's message.
    pub writer: String,
    /// The version the writer saw.
    pub base: Base,
    writes: u64,
}

impl Spool {
    /// The bytes all edits hold.
    pub(super) fn edits_used(&self) -> u64 {
        self.edits_usage().1
    }

    /// How many files are edited, and the bytes they hold.
    pub(super) fn edits_usage(&self) -> (u64, u64) {
        let edits = lock(&self.edits);
        (edits.len() as u64, edits.values().map(|e| e.bytes).sum())
    }

    /// An open for writing of file `ino` of array `node` (`array`, its
    /// hierarchy path; `named`, the file's path in the mount), which shows
    /// `shown` and is `size` bytes, by `writer` (process `pid`), who sees
    /// `base`.
    pub fn edit_open(
        &self,
        ino: u64,
        (node, array, named): (usize, &str, &str),
        shown: Shown,
        size: u64,
        writer: String,
        base: Base,
    ) -> Result<(), SpoolError> {
        let mut edits = lock(&self.edits);
        if let Some(e) = edits.get_mut(&ino) {
            e.opens += 1;
            e.writer = writer;
            return Ok(());
        }
        let (_, path, file) = self.new_file(&format!("edit-{array}"))?;
        edits.insert(
            ino,
            Edit {
                node,
                array: array.to_string(),
                named: named.to_string(),
                shown,
                size,
                path,
                file,
                extents: BTreeMap::new(),
                bytes: 0,
                writes: 0,
                opens: 1,
                writer,
                base,
            },
        );
        Ok(())
    }

    /// Whether file `ino` is being edited.
    pub fn is_edited(&self, ino: u64) -> bool {
        lock(&self.edits).contains_key(&ino)
    }

    /// Write `data` at `offset` of edited file `ino`; past its end is
    /// refused ([`SpoolError::Size`]).
    pub fn edit_write(&self, ino: u64, offset: u64, data: &[u8]) -> Result<usize, SpoolError> {
        let files_used = Self::used(&lock(&self.files));
        let mut edits = lock(&self.edits);
        let used = files_used + edits.values().map(|e| e.bytes).sum::<u64>();
        let e = edits.get_mut(&ino).ok_or(SpoolError::NotFound)?;
        let end = offset.saturating_add(data.len() as u64);
        if end > e.size {
            return Err(SpoolError::Size {
                size: e.size,
                wanted: end,
            });
        }
        self.fits(used.saturating_add(data.len() as u64))?;
        e.file.write_all_at(data, offset)?;
        e.add(offset, end);
        e.writes += 1;
        Ok(data.len())
    }

    /// `data`, the bytes of edited file `ino` from `offset` as the store
    /// has them, with what was written there laid over them; `None` when
    /// nothing was (no copy is made).
    pub fn edit_overlay(&self, ino: u64, offset: u64, data: &[u8]) -> Result<Option<Vec<u8>>, SpoolError> {
        let edits = lock(&self.edits);
        let end = offset + data.len() as u64;
        let Some(e) = edits.get(&ino).filter(|e| e.overlapping(offset, end).next().is_some()) else {
            return Ok(None);
        };
        let mut out = data.to_vec();
        for (from, to) in e.overlapping(offset, end) {
            let at = (from - offset) as usize;
            e.file.read_exact_at(&mut out[at..at + (to - from) as usize], from)?;
        }
        Ok(Some(out))
    }

    /// The written stretches of edited file `ino`, for a commit; `None`
    /// when nothing was written since the last one.
    pub fn edit_pending(&self, ino: u64) -> Result<Option<Pending>, SpoolError> {
        let edits = lock(&self.edits);
        let Some(e) = edits.get(&ino).filter(|e| !e.extents.is_empty()) else {
            return Ok(None);
        };
        Ok(Some(Pending {
            node: e.node,
            array: e.array.clone(),
            named: e.named.clone(),
            shown: e.shown,
            extents: e.extents.iter().map(|(&s, &t)| (s, t)).collect(),
            file: e.file.try_clone()?,
            writer: e.writer.clone(),
            base: Arc::clone(&e.base),
            writes: e.writes,
        }))
    }

    /// Held while an edit is committed: one at a time per spool.
    pub fn edit_commits(&self) -> std::sync::MutexGuard<'_, ()> {
        lock(&self.edit_commit)
    }

    /// The commit of `p` succeeded (`Some`: the version the writer sees
    /// from now on) or failed (`None`). What it committed leaves the edit,
    /// unless more was written meanwhile (then the next commit carries it
    /// all again). A failed commit's bytes leave it too (a later open of
    /// the file starts afresh) and stay in the spool under a name of their
    /// own, returned for the log.
    pub fn edit_done(&self, ino: u64, p: &Pending, base: Option<Base>) -> Option<PathBuf> {
        let mut edits = lock(&self.edits);
        let e = edits.get_mut(&ino)?;
        match base {
            Some(base) => {
                e.base = base;
                if e.writes == p.writes {
                    e.clear();
                    let _ = e.file.set_len(0);
                    // A held edit, committed and closed, leaves.
                    if e.opens == 0 {
                        let e = edits.remove(&ino).expect("present");
                        let _ = std::fs::remove_file(&e.path);
                    }
                }
                None
            }
            None => {
                let (_, fresh, file) = self.new_file(&format!("edit-{}", e.array)).ok()?;
                let bytes = e.bytes;
                e.clear();
                e.file = file;
                let kept = std::mem::replace(&mut e.path, fresh);
                drop(edits);
                let why = self.failures().first().map_or_else(String::new, |f| f.2.clone());
                self.keep(
                    &kept,
                    bytes,
                    format!(
                        "the writes into {} (at their offsets) were not committed: {why}",
                        p.named
                    ),
                );
                Some(kept)
            }
        }
    }

    /// The spool paths of the edits' bytes.
    pub(super) fn edit_paths(&self) -> Vec<PathBuf> {
        lock(&self.edits).values().map(|e| e.path.clone()).collect()
    }

    /// Whether the one open left of edited file `ino` is being released
    /// (the release to come is its last).
    pub fn edit_last_open(&self, ino: u64) -> bool {
        lock(&self.edits).get(&ino).is_some_and(|e| e.opens <= 1)
    }

    /// The last open of an edited file was released: the edit leaves the
    /// spool with its bytes (what a failed commit kept is elsewhere), but
    /// for one held for `nzfs commit` (`--commit explicit`: written and
    /// not committed), which stays, shown, until it is committed or
    /// discarded.
    pub fn edit_release(&self, ino: u64) {
        let mut edits = lock(&self.edits);
        let Some(e) = edits.get_mut(&ino) else { return };
        e.opens = e.opens.saturating_sub(1);
        let held = self.explicit && !e.extents.is_empty();
        if e.opens == 0 && !held {
            let e = edits.remove(&ino).expect("present");
            let _ = std::fs::remove_file(&e.path);
        }
    }

    /// The held edits (`--commit explicit`: closed, written since their
    /// last commit): each file's inode and path in the mount.
    pub(super) fn held_edits(&self) -> Vec<(u64, String)> {
        lock(&self.edits)
            .iter()
            .filter(|(_, e)| e.opens == 0 && !e.extents.is_empty())
            .map(|(&ino, e)| (ino, e.named.clone()))
            .collect()
    }

    /// The paths of the edited files open for writing with something
    /// written (not whole yet: a commit of held writes waits for them).
    pub(super) fn open_edits(&self) -> Vec<String> {
        lock(&self.edits)
            .values()
            .filter(|e| e.opens > 0 && !e.extents.is_empty())
            .map(|e| e.named.clone())
            .collect()
    }

    /// Drop the held edit of `ino` and its bytes (`nzfs discard`).
    pub(super) fn drop_edit(&self, ino: u64) {
        let mut edits = lock(&self.edits);
        if edits.get(&ino).is_some_and(|e| e.opens == 0) {
            let e = edits.remove(&ino).expect("present");
            let _ = std::fs::remove_file(&e.path);
        }
    }
}

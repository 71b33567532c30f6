//! A filesystem made again from the store's metadata as it is now, for a
//! mount that follows its store ([`NzFs::renewed`]), and how a mount looks
//! at its store again ([`Rereading`]).
//!
//! The new filesystem reads the same store (or, for an Icechunk branch, the
//! branch's new snapshot; counted on the same counters, so `nzfs status`
//! keeps counting), with every setting of the old one. Where a commit of
//! the mount's own (which says what it changed) made the new one, or the
//! store was read again from itself, the decoded-chunk cache is shared:
//! each array's decodes are keyed by its node's generation, so a changed
//! array's are never served under the new (a chunk decoded under the old
//! metadata, its shape or its codecs), and every other array keeps its
//! own; a store read again from itself also shares the stamps its decodes
//! were read under (`array::fresh`), so that each is still checked against
//! its object. Any other change gets a new, empty cache: another writer's
//! snapshot, a zip or reference set replaced. Node numbers, and so
//! inode numbers, are kept for every node still in the store
//! ([`Hierarchy::keep_numbers_of`]). The files of each node the change
//! touched show the time the new filesystem was made (an Icechunk
//! branch's: the new snapshot's), so that the kernel, which compares
//! them, drops the pages it holds of the old files; every other node's
//! keep their times, and the kernel its pages.

use std::time::SystemTime;

use std::sync::OnceLock;

use super::{FileKind, FsError, Inode, NzFs, TooManyNodes};
use crate::array::Dataset;
use crate::cdl::VersionRoot;
use crate::store::ReadableStore;
use crate::zarr::hierarchy::{Hierarchy, NodeLooks};

/// Why a store's metadata could not be read again.
#[derive(Debug, thiserror::Error)]
pub enum RereadError {
    /// The metadata the store holds now does not read.
    #[error(transparent)]
    Metadata(#[from] crate::zarr::hierarchy::OpenError),
    /// The store could not be read.
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    /// The version followed is gone (its message names it).
    #[error("{0}")]
    NoSuchVersion(String),
    /// The store, opened again whole, did not open (the opener's message,
    /// which says what to do).
    #[error("{0}")]
    Reopen(String),
}

/// How a mount looks at its store's metadata again, and reads it again:
/// the store's own documents for a Zarr directory, the branch's tip for an
/// Icechunk branch.
pub trait Rereading: Send + Sync {
    /// One look at what `hierarchy` was read from `store`: equal for two
    /// looks at an unchanged store.
    fn look(&self, store: &dyn ReadableStore, hierarchy: &Hierarchy) -> u64;
    /// The metadata as the store holds it now; `served`: the hierarchy
    /// read from `store`, served now, that the last look (one that found
    /// a change) was taken of, and `since`, the look before it, where
    /// there was one: what changed between them may be all that is read.
    fn reread(&self, store: &dyn ReadableStore, served: &Hierarchy, since: Option<u64>) -> Result<Reread, RereadError>;
    /// Whether a look costs little enough to take the first one before
    /// the mount is live (else it is taken just after, in the background).
    fn cheap(&self, store: &dyn ReadableStore, hierarchy: &Hierarchy) -> bool {
        let _ = (store, hierarchy);
        true
    }
    /// The metadata after `commit`, a commit of the mount's own, made from
    /// the `store` and `hierarchy` served without reading the metadata
    /// again, and the look the new version gives; `None` where it cannot
    /// be (the version served is not the commit's parent, or the store
    /// keeps no versions): the store is then looked at and read again.
    fn after_own_commit(
        &self,
        store: &dyn ReadableStore,
        hierarchy: &Hierarchy,
        commit: &OwnCommit<'_>,
    ) -> Option<(Reread, u64)> {
        let _ = (store, hierarchy, commit);
        None
    }
}

/// A commit the mount made itself, on a branch it serves.
#[derive(Debug, Clone, Copy)]
pub struct OwnCommit<'a> {
    /// The snapshot it made.
    pub snapshot: &'a str,
    /// The snapshot it was made on (nothing came between).
    pub parent: &'a str,
    /// What it changed.
    pub change: OwnChange<'a>,
}

/// What a commit of the mount's own changed: one of these, nothing else.
#[derive(Debug, Clone, Copy)]
pub enum OwnChange<'a> {
    /// The node at this path, and all below it, removed (`rmdir`).
    Removed(&'a str),
    /// Chunks of the array at this path written (an edit of its files).
    Chunks(&'a str),
    /// A node made at this path with this metadata document (`mkdir`).
    Made(&'a str, &'a [u8]),
}

impl OwnCommit<'_> {
    /// The hierarchy of the new snapshot, from `served`, that of its
    /// parent: what a read of it would give. `None`: a removal of no node.
    pub fn hierarchy(&self, served: &Hierarchy) -> Option<Hierarchy> {
        match self.change {
            OwnChange::Removed(path) => served.without(path),
            OwnChange::Chunks(_) => Some(served.as_read()),
            OwnChange::Made(path, document) => served.with_node(path, document),
        }
    }

    /// The paths of the arrays whose chunks it changed ([`Reread::own_commit`]).
    pub fn rewrote(&self) -> Vec<String> {
        match self.change {
            OwnChange::Removed(_) | OwnChange::Made(..) => Vec::new(),
            OwnChange::Chunks(path) => vec![path.to_string()],
        }
    }
}

/// What reading a store's metadata again gave.
pub struct Reread {
    /// The hierarchy now.
    pub hierarchy: Hierarchy,
    /// The store to read from now, where it is another (an Icechunk
    /// branch's new snapshot), with its name for `nzfs status` and its
    /// version's note and time for the headers.
    pub store: Option<(Box<dyn ReadableStore>, String, Vec<VersionRoot>)>,
    /// Where that store is a commit of the mount's own on the version
    /// served: the paths of the nodes whose chunks it changed. Every other
    /// node's chunks are those served, so its files stay the same files
    /// (their inode numbers).
    /// `None`: any node's chunks may differ.
    pub own_commit: Option<Vec<String>>,
}

/// A Zarr directory (local or in object storage), read again from itself.
/// It keeps what its last two looks found of each node (16 bytes a node),
/// so that where only arrays' documents changed between them (an append,
/// an array resized), only those are read again
/// ([`Hierarchy::with_documents_read_again`]); any other change reads the
/// store whole.
#[derive(Default)]
pub struct SameStore {
    /// The last two looks that differ, the newest last.
    looks: std::sync::Mutex<Vec<(u64, NodeLooks)>>,
}

impl Rereading for SameStore {
    fn look(&self, store: &dyn ReadableStore, hierarchy: &Hierarchy) -> u64 {
        let (seen, nodes) = hierarchy.look_at(store);
        let seen = seen.value();
        let mut looks = crate::sync::lock(&self.looks);
        // The newest of two equal looks (it may be of a newer hierarchy).
        if looks.last().is_some_and(|l| l.0 == seen) {
            looks.pop();
        }
        looks.push((seen, nodes));
        if looks.len() > 2 {
            looks.remove(0);
        }
        seen
    }
    fn reread(&self, store: &dyn ReadableStore, served: &Hierarchy, since: Option<u64>) -> Result<Reread, RereadError> {
        let changed = since.and_then(|since| {
            let looks = crate::sync::lock(&self.looks);
            let before = looks.iter().find(|l| l.0 == since)?;
            served.differ(&before.1, &looks.last()?.1)
        });
        let hierarchy = match changed.and_then(|c| served.with_documents_read_again(store, &c)) {
            Some(h) => h,
            None => Hierarchy::open(store)?,
        };
        Ok(Reread {
            hierarchy,
            store: None,
            own_commit: None,
        })
    }
    /// A local store, or consolidated metadata (the root's two documents);
    /// not a `HEAD` per document of object storage, which would make the
    /// mount take twice as long.
    fn cheap(&self, store: &dyn ReadableStore, hierarchy: &Hierarchy) -> bool {
        store.profile().rereads_are_cheap || hierarchy.consolidated
    }
}

/// The generations of a filesystem's named files (module doc).
#[derive(Debug, Default)]
pub(super) struct Generations {
    /// This filesystem's generation: 0 at the mount, one more for each
    /// filesystem made again since.
    this: u32,
    /// The generation of each node's named files (a node past the end: 0).
    of_node: Vec<u32>,
    /// The nodes that differ from the filesystem this one was made from.
    changed: Vec<usize>,
    /// The generations of the filesystem that replaced this one reading
    /// the same store, once one did.
    superseded: OnceLock<Vec<u32>>,
    /// By node: the time of the filesystem its generation is this one's
    /// or an earlier one's, the mtime its files show (empty for the
    /// mount's first: its times are its version's, or the mount's). A node
    /// the change did not touch keeps its files' times, so that the
    /// kernel, which compares them, keeps their pages.
    made: Vec<SystemTime>,
}

impl Generations {
    fn of(&self, n: usize) -> u32 {
        self.of_node.get(n).copied().unwrap_or(0)
    }
}

impl NzFs {
    /// The inode number of `inode` in this filesystem: a named file's
    /// carries its node's generation.
    pub fn ino(&self, inode: Inode) -> u64 {
        match inode {
            Inode::File(_, n) => inode.to_ino() | u64::from(self.generations.of(n)) << super::FILE_GEN_SHIFT,
            _ => inode.to_ino(),
        }
    }

    /// What inode number `ino` stands for in this filesystem: `Stale` for
    /// a named file of another generation, `NotFound` for a number whose
    /// node this filesystem does not have (a writable mount's staged
    /// file's, whose bits read as a node past the last).
    pub fn inode(&self, ino: u64) -> Result<Inode, FsError> {
        match Inode::from_ino(ino) {
            None => Err(FsError::NotFound),
            Some((inode, _)) if inode.node() >= self.hierarchy().nodes.len() => Err(FsError::NotFound),
            Some((Inode::File(_, n), g)) if g != self.generations.of(n) => Err(FsError::Stale),
            Some((inode, _)) => Ok(inode),
        }
    }

    /// The mtime of node `n`'s files (but what follows its objects):
    /// the time of the filesystem that last changed it.
    pub(super) fn made(&self, n: usize) -> SystemTime {
        match self.generations.made.get(n) {
            Some(&t) => t,
            None => self.version(n).and_then(|v| v.time).unwrap_or(self.config.mtime),
        }
    }

    /// Whether `ino` is a file of another generation than this
    /// filesystem's (one a reader opened before a change).
    pub fn is_stale(&self, ino: u64) -> bool {
        matches!(self.inode(ino), Err(FsError::Stale))
    }

    /// The nodes that differ from the filesystem this one was made from
    /// (none for the mount's first).
    pub fn changed(&self) -> &[usize] {
        &self.generations.changed
    }

    /// The nodes whose named files are new in this filesystem (the
    /// filesystem it was made from showed other files under their names).
    pub fn renamed(&self) -> impl Iterator<Item = usize> + '_ {
        let this = self.generations.this;
        (0..self.generations.of_node.len()).filter(move |&n| this > 0 && self.generations.of_node[n] == this)
    }

    /// `newer` replaced this filesystem and reads the same store, whose
    /// objects the change may have rewritten in place: this one refuses
    /// from now on to read the files whose generation moved.
    pub fn superseded_in_place_by(&self, newer: &NzFs) {
        let _ = self.generations.superseded.set(newer.generations.of_node.clone());
    }

    /// Refuse a read of node `n`'s file of kind `kind` when a filesystem
    /// reading the same store replaced this one and changed the file.
    pub(super) fn check_not_superseded(&self, kind: FileKind, n: usize) -> Result<(), FsError> {
        match self.generations.superseded.get() {
            Some(newer) if newer.get(n).copied().unwrap_or(0) != self.generations.of(n) => {
                Err(self.changed_under(self.ino(Inode::File(kind, n))))
            }
            _ => Ok(()),
        }
    }

    /// The error of a read of file `ino` that the store changed under.
    pub(super) fn changed_under(&self, ino: u64) -> FsError {
        let (dir, name) = match Inode::from_ino(ino) {
            Some((Inode::File(kind, n), _)) if n < self.hierarchy().nodes.len() => (
                self.hierarchy().nodes[n].path.as_str(),
                kind.view().name(self, n).unwrap_or_default(),
            ),
            _ => ("", ""),
        };
        let path = [dir, name]
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join("/");
        FsError::ChangedUnder {
            path: format!("/{path}"),
        }
    }

    /// The filesystem of `reread`: its hierarchy from this one's store (or
    /// the store it names), with this one's settings; refused as
    /// [`NzFs::new`] refuses.
    pub fn renewed(&self, reread: Reread) -> Result<NzFs, TooManyNodes> {
        let Reread {
            mut hierarchy,
            store,
            own_commit,
        } = reread;
        hierarchy.keep_numbers_of(self.hierarchy());
        Self::check_limits(&mut hierarchy)?;
        let mut changed = hierarchy.changed_since(self.hierarchy());
        // The arrays whose chunks the mount's own commit changed.
        for path in own_commit.iter().flatten() {
            let at = hierarchy.nodes.iter().position(|n| &n.path == path);
            if let Some(i) = at.filter(|i| !changed.contains(i)) {
                changed.push(i);
            }
        }
        changed.sort_unstable();
        let this = self.generations.this.saturating_add(1);
        let mut of_node: Vec<u32> = (0..hierarchy.nodes.len()).map(|n| self.generations.of(n)).collect();
        // Another snapshot may hold other chunks under the same metadata:
        // every file is new, but where it is the mount's own commit, which
        // says what it changed. Else each changed node's, and those above
        // it.
        if store.is_some() && own_commit.is_none() {
            of_node.fill(this);
        }
        for &c in &changed {
            let mut at = Some(c);
            while let Some(i) = at.filter(|&i| of_node[i] != this) {
                of_node[i] = this;
                at = hierarchy.nodes[i].parent;
            }
        }
        let other_store = store.is_some();
        let mut config = self.config.clone();
        config.mtime = SystemTime::now();
        let handle: std::sync::Arc<dyn ReadableStore> = match store {
            Some((store, shown, versions)) => {
                config.store_name = shown;
                config.versions = versions;
                match &self.status.store_counters {
                    Some(counters) => {
                        std::sync::Arc::new(crate::store::counted::Counted::sharing(store, counters.clone()))
                    }
                    None => std::sync::Arc::from(store),
                }
            }
            None => self.dataset.store_handle(),
        };
        // The mount's own commit changed only what it says, and a store
        // read again from itself is checked object by object: every other
        // array's decodes stay (under their generations; the stamps that
        // say whether each still shows its object go with them, see
        // `Dataset::sharing`), and a preview, which may combine arrays, is
        // made again. Another snapshot or a replaced zip or reference set
        // gets a new cache.
        let cache = if own_commit.is_some() || !other_store {
            let cache = self.dataset.cache_handle();
            let live = |k: &crate::array::CacheKey| {
                k.part != super::previews::PREVIEW_PART && of_node.get(k.node) == Some(&k.generation)
            };
            cache.retain(live);
            cache
        } else {
            std::sync::Arc::new(crate::cache::ChunkCache::new(config.cache_bytes))
        };
        let dataset = Dataset::sharing(
            handle,
            hierarchy,
            (cache, &of_node),
            Some(&self.dataset),
            config.missing_chunks,
        );
        let mut fs = Self::serve(dataset, config);
        fs.status.carry_from(&self.status);
        // A node the change touched shows the new filesystem's time (its
        // version's, as a first filesystem's nodes do: `made` is empty
        // until set here), every other the time it showed.
        let made = of_node
            .iter()
            .enumerate()
            .map(|(n, &g)| if g == this { fs.made(n) } else { self.made(n) })
            .collect();
        fs.generations = Generations {
            this,
            of_node,
            changed,
            superseded: OnceLock::new(),
            made,
        };
        Ok(fs)
    }
}

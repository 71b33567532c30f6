//! Who may read what the mount shows: each file's owner, group and mode
//! from its store objects (issue #19), and for a file that combines
//! several objects the meet of theirs (issue #29).
//!
//! `data.bin`, `data.txt`, `header.cdl` and a group's `.nc` show values and
//! attributes of many objects at once. The kernel (`default_permissions`)
//! checks one owner, group and mode, so such a file gets the *meet* of its
//! sources: a user may open it only when the modes say that user may read
//! every object it shows and search every directory on the way to them.
//!
//! The meet keeps the owner and group of the file's own metadata object
//! (what `ls -l` showed before) and clears the read bit of each class of
//! users (owner, group, others) unless every user of that class passes
//! every source. A user of a class may fall into several classes of a
//! source (a member of the file's group may or may not own the source, or
//! be in its group), and the bit stays only if each of them grants what the
//! source needs. When every source has the file's owner and group, this is
//! the bitwise AND of their modes. Group membership is never looked up, so
//! the answer is conservative: it may deny a user whom a direct read would
//! let in, never the reverse.

use super::{Kind, NzFs};
use crate::store::{Access, ReadableStore, join};
use crate::zarr::hierarchy::NodeKind;

/// The most names a walk of one array's directory visits.
const MAX_WALK: u64 = 1 << 26;

impl NzFs {
    /// Who may read store path `path` (`Err` when the store could not say).
    pub(super) fn store_access(&self, path: &str) -> Result<Option<Access>, ()> {
        self.store().access(path).map_err(|e| {
            tracing::warn!(key = path, error = %e, "cannot read the owner and mode; showing mode 000");
        })
    }

    /// Who may read node `n`'s directory.
    pub(super) fn dir_access(&self, n: usize) -> Result<Option<Access>, ()> {
        *self.info[n]
            .dir_access
            .get_or_init(|| self.store_access(&self.hierarchy().nodes[n].path))
    }

    /// Who may read node `n`'s metadata object: its `zarr.json`, else (an
    /// implicit group, or a node known only from consolidated metadata) its
    /// directory.
    pub(super) fn meta_access(&self, n: usize) -> Result<Option<Access>, ()> {
        *self.info[n].meta_access.get_or_init(|| {
            let node = &self.hierarchy().nodes[n];
            let key = crate::store::join(&node.path, node.metadata_name().unwrap_or("zarr.json"));
            match key.map(|k| self.store_access(k.as_str())) {
                Ok(Ok(Some(a))) => Ok(Some(a)),
                Ok(Err(())) => Err(()),
                _ => self.dir_access(n),
            }
        })
    }

    /// Who may read chunk file `index` of array `node`: its object's, or
    /// for an absent chunk the array's metadata object's.
    pub(super) fn chunk_access(&self, node: usize, index: u64) -> Result<Option<Access>, ()> {
        let (array, _) = self.array(node).map_err(|_| ())?;
        let key = array.chunk_key(index).map_err(|_| ())?;
        match self.store_access(key.as_str())? {
            Some(a) => Ok(Some(a)),
            None => self.meta_access(node),
        }
    }

    /// Owner, group and permission bits of a node of `kind`, from what the
    /// store says of its object and the [`Ownership`] overrides.
    pub(super) fn ownership_of(&self, access: Result<Option<Access>, ()>, kind: Kind) -> (u16, u32, u32) {
        let base = match kind {
            Kind::Directory => 0o555,
            Kind::File => 0o444,
        };
        let o = self.ownership;
        let found = access.unwrap_or(None);
        let mode = match (o.umask, access) {
            (Some(umask), _) => base & !umask,
            (None, Ok(Some(a))) => a.mode & 0o555,
            (None, Ok(None)) => base,
            (None, Err(())) => 0,
        };
        let uid = o.uid.or(found.map(|a| a.uid)).unwrap_or(self.options.uid);
        let gid = o.gid.or(found.map(|a| a.gid)).unwrap_or(self.options.gid);
        (mode as u16, uid, gid)
    }

    /// Who may read node `n`'s `header.cdl`: a group's shows the metadata of
    /// every node below it, and the directories on the way.
    pub(super) fn header_access(&self, n: usize) -> Result<Option<Access>, ()> {
        *self.info[n].header_access.get_or_init(|| {
            self.combined(n, |meet| {
                let h = self.hierarchy();
                let mut pending = vec![n];
                while let Some(d) = pending.pop() {
                    self.node_sources(d, meet)?;
                    if d == n || matches!(h.nodes[d].kind, NodeKind::Group { .. }) {
                        pending.extend(&h.nodes[d].children);
                    }
                }
                Ok(())
            })
        })
    }

    /// Who may read the values node `n` shows: an array's `data.bin` and
    /// `data.txt` (every object in its directory), a group's `.nc` (its own
    /// metadata and every object of its child arrays).
    pub(super) fn values_access(&self, n: usize) -> Result<Option<Access>, ()> {
        *self.info[n].values_access.get_or_init(|| {
            self.combined(n, |meet| {
                let h = self.hierarchy();
                if matches!(h.nodes[n].kind, NodeKind::Array(_)) {
                    return self.array_sources(n, meet);
                }
                self.node_sources(n, meet)?;
                for &c in &h.nodes[n].children {
                    if matches!(h.nodes[c].kind, NodeKind::Array(_)) {
                        self.array_sources(c, meet)?;
                    }
                }
                Ok(())
            })
        })
    }

    /// The meet of what `sources` adds, shown as node `n`'s metadata
    /// object's owner and group; `None` for a store with no owners.
    fn combined(&self, n: usize, sources: impl FnOnce(&mut Meet) -> Result<(), ()>) -> Result<Option<Access>, ()> {
        let Some(base) = self.meta_access(n)? else {
            return Ok(None);
        };
        let mut meet = Meet::new(base.uid, base.gid);
        sources(&mut meet)?;
        Ok(Some(meet.access()))
    }

    /// Node `d`'s directory (search) and metadata (read): its `zarr.json`,
    /// or `.zarray`/`.zgroup` and `.zattrs`.
    fn node_sources(&self, d: usize, meet: &mut Meet) -> Result<(), ()> {
        let node = &self.hierarchy().nodes[d];
        if let Some(a) = self.dir_access(d)? {
            meet.require(&a, Need::Search);
        }
        if let Some(a) = self.meta_access(d)? {
            meet.require(&a, Need::Read);
        }
        if node.metadata_name().is_some_and(|m| m.starts_with(".z"))
            && let Ok(key) = join(&node.path, ".zattrs")
            && let Some(a) = self.store_access(key.as_str())?
        {
            meet.require(&a, Need::Read);
        }
        Ok(())
    }

    /// Array `a`'s directory (search) and everything in it.
    fn array_sources(&self, a: usize, meet: &mut Meet) -> Result<(), ()> {
        let path = &self.hierarchy().nodes[a].path;
        let Some(dir) = self.dir_access(a)? else {
            return Ok(());
        };
        meet.require(&dir, Need::Search);
        // Chunk keys nest at most one directory per dimension, below `c/`.
        let (depth, chunks) = match &self.hierarchy().nodes[a].kind {
            NodeKind::Array(array) => (
                array.metadata.shape.len() + 2,
                array
                    .metadata
                    .grid_shape()
                    .iter()
                    .try_fold(1u64, |n, &g| n.checked_mul(g)),
            ),
            _ => (2, Some(0)),
        };
        let entries = chunks
            .and_then(|c| c.checked_add(1)?.checked_mul(depth as u64 + 1))
            .map_or(MAX_WALK, |e| e.saturating_add(4096).min(MAX_WALK));
        walk(self.store(), path, depth, entries, meet).map_err(|e| {
            tracing::warn!(key = %path, error = %e, "cannot read the owners and modes of what a combined file shows; showing mode 000");
        })
    }
}

/// What a reader of the combined file needs of one source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    /// Read an object (`r`).
    Read,
    /// Pass through a directory (`x`).
    Search,
}

/// The classes of users a mode distinguishes, as bit shifts.
const OWNER: u32 = 6;
const GROUP: u32 = 3;
const OTHER: u32 = 0;

/// The meet of the sources seen so far, for a file shown as `uid:gid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Meet {
    uid: u32,
    gid: u32,
    /// Read bits still granted (a subset of `0o444`).
    mode: u32,
}

impl Meet {
    /// A file shown as owned by `uid:gid`, readable by all until a source
    /// says otherwise.
    pub(crate) fn new(uid: u32, gid: u32) -> Meet {
        Meet { uid, gid, mode: 0o444 }
    }

    /// Narrow the meet by one source that readers need `need` of.
    pub(crate) fn require(&mut self, source: &Access, need: Need) {
        let bit = match need {
            Need::Read => 4,
            Need::Search => 1,
        };
        let grants = |class: u32| source.mode >> class & bit != 0;
        let owns = source.uid == self.uid;
        let same_group = source.gid == self.gid;
        for class in [OWNER, GROUP, OTHER] {
            // The classes of `source` a user of `class` (of the combined
            // file) may fall into.
            let maybe_owner = match class {
                OWNER => owns,
                _ => !owns,
            };
            let maybe_group = match class {
                OWNER => !owns,
                GROUP => true,
                _ => !same_group,
            };
            let maybe_other = match class {
                OWNER => !owns,
                GROUP => !same_group,
                _ => true,
            };
            let ok =
                (!maybe_owner || grants(OWNER)) && (!maybe_group || grants(GROUP)) && (!maybe_other || grants(OTHER));
            if !ok {
                self.mode &= !(4 << class);
            }
        }
    }

    /// Whether no user but root may read the file any more (a walk of the
    /// sources may stop).
    pub(crate) fn is_closed(&self) -> bool {
        self.mode == 0
    }

    pub(crate) fn access(&self) -> Access {
        Access {
            uid: self.uid,
            gid: self.gid,
            mode: self.mode,
        }
    }
}

/// Narrow `meet` by every object under `prefix` (read) and every directory
/// below it (search): the chunks, metadata and anything else an array's
/// directory holds. Stops early once the meet is closed. The walk goes at
/// most `depth` directories down and visits at most `entries` names, so a
/// store of symlink loops cannot keep it going: past either bound it is an
/// error, and the file shows mode `000`.
pub(crate) fn walk(
    store: &dyn ReadableStore,
    prefix: &str,
    depth: usize,
    entries: u64,
    meet: &mut Meet,
) -> std::io::Result<()> {
    let mut pending = vec![(prefix.to_owned(), 0)];
    let mut seen = 0u64;
    while let Some((dir, level)) = pending.pop() {
        let listing = store.list_dir(&dir)?;
        seen += (listing.keys.len() + listing.prefixes.len()) as u64;
        if seen > entries || (level >= depth && !listing.prefixes.is_empty()) {
            return Err(std::io::Error::other(format!(
                "{prefix} holds more than {entries} names or {depth} levels of directories \
                 (symlink loops?): its combined files show mode 000"
            )));
        }
        for key in &listing.keys {
            let path = join(&dir, key)?;
            if let Some(a) = store.access(path.as_str())? {
                meet.require(&a, Need::Read);
            }
        }
        for sub in listing.prefixes {
            let path = join(&dir, &sub)?;
            if let Some(a) = store.access(path.as_str())? {
                meet.require(&a, Need::Search);
            }
            pending.push((path.as_str().to_owned(), level + 1));
        }
        if meet.is_closed() {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(uid: u32, gid: u32, mode: u32) -> Access {
        Access { uid, gid, mode }
    }

    fn meet(sources: &[(Access, Need)]) -> u32 {
        let mut m = Meet::new(10, 20);
        for (s, n) in sources {
            m.require(s, *n);
        }
        m.access().mode
    }

    #[test]
    fn sources_of_the_same_owner_and_group_meet_as_a_bitwise_and() {
        for (x, y) in [(0o644, 0o600), (0o640, 0o604), (0o444, 0o440), (0o755, 0o700)] {
            assert_eq!(
                meet(&[(a(10, 20, x), Need::Read), (a(10, 20, y), Need::Read)]),
                x & y & 0o444,
                "{x:o} {y:o}"
            );
        }
        // A directory's search bit stands for its read bit.
        assert_eq!(meet(&[(a(10, 20, 0o751), Need::Search)]), 0o444);
        assert_eq!(meet(&[(a(10, 20, 0o750), Need::Search)]), 0o440);
        assert_eq!(meet(&[(a(10, 20, 0o700), Need::Search)]), 0o400);
    }

    #[test]
    fn a_source_of_another_owner_counts_its_owner_bits_against_everyone_else() {
        // 0600 owned by uid 0: the file's owner (10) is "other" to it.
        assert_eq!(meet(&[(a(0, 20, 0o600), Need::Read)]), 0);
        // 0644 owned by someone else: everyone may read it.
        assert_eq!(meet(&[(a(0, 99, 0o644), Need::Read)]), 0o444);
        // 0640 in another group: only users in that group; membership is not
        // looked up, so no class of the file passes.
        assert_eq!(meet(&[(a(10, 99, 0o640), Need::Read)]), 0o400);
        // 0604, a perverse mode: its group may not read, others may; the
        // file's others may be in its group, so they are refused too.
        assert_eq!(meet(&[(a(10, 99, 0o604), Need::Read)]), 0o400);
        // 0044: its owner (the file's owner) may not read.
        assert_eq!(meet(&[(a(10, 20, 0o044), Need::Read)]), 0o044);
        // ... and owned by another: the file's owner may read it, but the
        // file's group and others may include the one user it refuses.
        assert_eq!(meet(&[(a(11, 20, 0o044), Need::Read)]), 0o400);
    }

    /// Brute force: for every user of a small world, what the meet grants
    /// is no more than what every source grants.
    #[test]
    fn the_meet_never_grants_a_user_what_a_source_denies() {
        // Users 0..4 (none root), groups 0..3; user u is in groups
        // `memberships[u]`.
        let memberships: [&[u32]; 4] = [&[0], &[0, 1], &[1, 2], &[]];
        let may = |acc: &Access, user: u32, bit: u32| {
            let class = if acc.uid == user {
                OWNER
            } else if memberships[user as usize].contains(&acc.gid) {
                GROUP
            } else {
                OTHER
            };
            acc.mode >> class & bit != 0
        };
        let modes = [
            0o000, 0o004, 0o040, 0o044, 0o400, 0o404, 0o440, 0o444, 0o111, 0o751, 0o705,
        ];
        for uid in 0..4 {
            for gid in 0..3 {
                for su in 0..4 {
                    for sg in 0..3 {
                        for &mode in &modes {
                            for need in [Need::Read, Need::Search] {
                                let src = a(su, sg, mode);
                                let mut m = Meet::new(uid, gid);
                                m.require(&src, need);
                                let bit = if need == Need::Read { 4 } else { 1 };
                                for user in 0..4 {
                                    if may(&m.access(), user, 4) {
                                        assert!(may(&src, user, bit), "{user} via {:?} of {src:?}", m.access());
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

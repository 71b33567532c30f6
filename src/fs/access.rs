//! Who may read what the mount shows: each file's owner, group and mode
//! from its store objects, and for a file that combines several objects
//! the meet of theirs ([`crate::store::Meet`]).
//!
//! `data.bin`, `data.txt`, `header.cdl` and a group's `.nc` show values and
//! attributes of many objects at once. The kernel (`default_permissions`)
//! checks one owner, group and mode, so such a file gets the meet of its
//! sources: a user may open it only when the modes say that user may read
//! every object it shows and search every directory on the way to them,
//! from the node the file lies in down (an OME-TIFF's levels at `priv/0`
//! include `priv`), and a multiscale level's own files include its image
//! group's metadata, which they show. The meets of values are made again
//! when the values' generation changes ([`ByGeneration`]).

use super::{Kind, NzFs};
use crate::array::Watched;
use crate::store::{Access, Meet, Need, ReadableStore, join};
use crate::zarr::documents::{ZARR_JSON, ZATTRS};
use crate::zarr::hierarchy::NodeKind;

/// The most names a walk of one array's directory visits.
const MAX_WALK: u64 = 1 << 26;

/// A meet of the objects a file shows, made for one generation of their
/// values ([`crate::array::Array::last_generation`]) and made again when
/// it changes: an object that changed (a chunk rewritten `0600`) narrows
/// the file's modes at its next `stat`, not never.
#[derive(Default)]
pub(super) struct ByGeneration(std::sync::Mutex<Option<(u64, Shown)>>);

/// Who may read a file: its access, `None` for a store with no owners,
/// `Err` when the store could not say.
type Shown = Result<Option<Access>, ()>;

/// What a node keeps of who may read it, each found on first use: its
/// store directory, its metadata object, and the files that combine
/// several objects (its `header.cdl`; the values: an array's
/// `data.bin`/`data.txt`, a group's `.nc`).
#[derive(Default)]
pub(super) struct NodeAccess {
    dir: std::sync::OnceLock<Shown>,
    meta: std::sync::OnceLock<Shown>,
    header: std::sync::OnceLock<Shown>,
    values: ByGeneration,
}

impl ByGeneration {
    /// The meet for `generation`, made by `make` unless held for it.
    pub(super) fn get(&self, generation: u64, make: impl FnOnce() -> Shown) -> Shown {
        if let Some((g, held)) = *crate::sync::lock(&self.0)
            && g == generation
        {
            return held;
        }
        // Made outside the lock: it stats every object of the arrays.
        let made = make();
        *crate::sync::lock(&self.0) = Some((generation, made));
        made
    }
}

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
            .access
            .dir
            .get_or_init(|| self.store_access(&self.hierarchy().nodes[n].path))
    }

    /// Who may read node `n`'s metadata object: its `zarr.json`, else (an
    /// implicit group, or a node known only from consolidated metadata) its
    /// directory.
    pub(super) fn meta_access(&self, n: usize) -> Result<Option<Access>, ()> {
        *self.info[n].access.meta.get_or_init(|| {
            let node = &self.hierarchy().nodes[n];
            let key = crate::store::join(&node.path, node.metadata_name().unwrap_or(ZARR_JSON));
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
        let o = self.config.ownership;
        let found = access.unwrap_or(None);
        let mode = match (o.umask, access) {
            (Some(umask), _) => base & !umask,
            (None, Ok(Some(a))) => a.mode & 0o555,
            (None, Ok(None)) => base,
            (None, Err(())) => 0,
        };
        let uid = o.uid.or(found.map(|a| a.uid)).unwrap_or(self.config.uid);
        let gid = o.gid.or(found.map(|a| a.gid)).unwrap_or(self.config.gid);
        (mode as u16, uid, gid)
    }

    /// Who may read node `n`'s `header.cdl`: a group's shows the metadata of
    /// every node below it, and the directories on the way.
    pub(super) fn header_access(&self, n: usize) -> Result<Option<Access>, ()> {
        *self.info[n].access.header.get_or_init(|| {
            self.combined(n, |meet| {
                let h = self.hierarchy();
                // A level of a multiscale image shows its image group's
                // axes, scales and units too.
                self.image_sources(n, meet)?;
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

    /// Who may read `index.html`: the metadata of every node (the root's
    /// `header.cdl`), and the values of each time coordinate whose first
    /// and last dates it gives.
    pub(super) fn index_access(&self) -> Result<Option<Access>, ()> {
        let Some(header) = self.header_access(0)? else {
            return Ok(None);
        };
        let mut meet = Meet::new(header.uid, header.gid);
        meet.require(&header, Need::Read);
        let times = self.index.time_coords.get_or_init(|| {
            let nodes = self.hierarchy().nodes.iter().enumerate();
            nodes
                .filter(|(_, node)| match &node.kind {
                    NodeKind::Array(a) => crate::preview::cftime::axis_of(&a.metadata).is_some(),
                    _ => false,
                })
                .map(|(n, _)| n)
                .collect()
        });
        for &n in times {
            if let Some(values) = self.values_access(n)? {
                meet.require(&values, Need::Read);
            }
        }
        Ok(Some(meet.access()))
    }

    /// Who may read the values node `n` shows: an array's `data.bin` and
    /// `data.txt` (every object in its directory), a group's `.nc` (its own
    /// metadata and every object of its child arrays).
    pub(super) fn values_access(&self, n: usize) -> Result<Option<Access>, ()> {
        let h = self.hierarchy();
        let shown: &[usize] = match h.nodes[n].kind {
            NodeKind::Array(_) => std::slice::from_ref(&n),
            _ => &h.nodes[n].children,
        };
        self.info[n].access.values.get(self.shown_generation(shown), || {
            self.combined(n, |meet| {
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

    /// Who may read group `g`'s OME-TIFF: the group's metadata and every
    /// object of the levels it holds.
    pub(super) fn ome_access(&self, g: usize) -> Result<Option<Access>, ()> {
        let Some(ome) = self.ome_tiff(g) else {
            return Err(());
        };
        ome.access.get(self.shown_generation(&ome.levels), || {
            self.combined(g, |meet| {
                self.node_sources(g, meet)?;
                ome.levels.iter().try_for_each(|&l| {
                    self.dirs_between(g, l, meet)?;
                    self.array_sources(l, meet)
                })
            })
        })
    }

    /// The sum of the values generations of the arrays among `nodes`, as
    /// last counted (the `stat` that asks for an access looked at the
    /// store just before): a meet of their objects made for another sum
    /// is made again.
    fn shown_generation(&self, nodes: &[usize]) -> u64 {
        self.sum_generations(nodes, |a| Some(a.last_generation())).unwrap_or(0)
    }

    /// For a level `n` of a multiscale image: the image group's directory
    /// and metadata, and the directories between it and `n`, which the
    /// level's own views show (its axes, scales, units and `omero`).
    pub(super) fn image_sources(&self, n: usize, meet: &mut Meet) -> Result<(), ()> {
        self.image_group_sources(self.image_group(n), n, meet)
    }

    /// The image group that names node `n` as one of its levels.
    pub(super) fn image_group(&self, n: usize) -> Option<usize> {
        self.hierarchy().ngff_image_of(n).map(|(g, _)| g)
    }

    /// [`NzFs::image_sources`] of level `n` of image group `g`, if any.
    pub(super) fn image_group_sources(&self, g: Option<usize>, n: usize, meet: &mut Meet) -> Result<(), ()> {
        match g {
            Some(g) => {
                self.node_sources(g, meet)?;
                self.dirs_between(g, n, meet)
            }
            None => Ok(()),
        }
    }

    /// Search of every directory strictly between node `top` and its
    /// descendant `n` (`priv` of a level `priv/0`): a file that shows `n`
    /// from `top` skips none of them.
    fn dirs_between(&self, top: usize, n: usize, meet: &mut Meet) -> Result<(), ()> {
        let h = self.hierarchy();
        let mut at = h.nodes[n].parent;
        while let Some(p) = at.filter(|&p| p != top) {
            if let Some(a) = self.dir_access(p)? {
                meet.require(&a, Need::Search);
            }
            at = h.nodes[p].parent;
        }
        Ok(())
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
            && let Ok(key) = join(&node.path, ZATTRS)
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
        let mut places = Vec::new();
        let walked = walk(self.store(), path, depth, entries, meet, &mut places);
        if let Some(array) = self.dataset.array(a) {
            array.watch(places);
        }
        walked.map_err(|e| {
            tracing::warn!(key = %path, error = %e, "cannot read the owners and modes of what a combined file shows; showing mode 000");
        })
    }
}

/// Narrow `meet` by every object under `prefix` (read) and every directory
/// below it (search): the chunks, metadata and anything else an array's
/// directory holds. Stops early once the meet is closed. The walk goes at
/// most `depth` directories down and visits at most `entries` names, so a
/// store of symlink loops cannot keep it going: past either bound it is an
/// error, and the file shows mode `000`.
///
/// Where the store stamps directories (a local filesystem), every directory
/// and object walked goes to `watched` with its stamp from before its
/// listing or its access was read: a name added later, or an owner or mode
/// changed later (its change time moves), is found by the array's values
/// generation, which then has the meet made again.
pub(crate) fn walk(
    store: &dyn ReadableStore,
    prefix: &str,
    depth: usize,
    entries: u64,
    meet: &mut Meet,
    watched: &mut Vec<Watched>,
) -> std::io::Result<()> {
    let mut pending = vec![(prefix.to_owned(), 0)];
    let mut seen = 0u64;
    while let Some((dir, level)) = pending.pop() {
        // The directory's stamp before its names are read: a name added
        // after this changes it (the array's values generation watches).
        let stamp = store.dir_stamp(&dir)?;
        let stamped = stamp.is_some();
        if let Ok(key) = crate::store::StoreKey::new(&dir) {
            watched.push(Watched { key, dir: true, stamp });
        }
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
            // Not a regular file (a FIFO): not watched; its access is met.
            if stamped && let Ok(stamp) = store.stat(&path) {
                watched.push(Watched {
                    key: path.clone(),
                    dir: false,
                    stamp,
                });
            }
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

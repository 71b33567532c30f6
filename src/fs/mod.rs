//! The filesystem core: the mounted layout, with no FUSE in sight.
//!
//! Layout (docs/usage.md, "The mounted layout"):
//! - every group and every array is a directory; the root node is the mount
//!   point;
//! - every directory holds `header.cdl`; an array directory also holds
//!   `data.bin` (the whole array, C order, host byte order) and one `.bin`
//!   file per chunk, named by [`names::ChunkNames`] (chunk names are digits,
//!   so they never collide with `data.bin`);
//! - a child node whose name collides with `header.cdl` is listed as
//!   `header.cdl.node` (more `.node` suffixes if that is taken too), and a
//!   warning is logged;
//! - a node nzfs cannot read (broken metadata, unknown codec, …) is still
//!   listed as a directory, but opening or listing it fails with `EIO` and
//!   the log names its path and the reason.
//!
//! Every named file (`header.cdl`, `data.bin`, the `.nc`, …) is a kind in
//! one table (`kinds`): whether a directory has it, its name, size,
//! access, version and reads are the kind's `view::FileView`, and
//! lookup, listing, attributes and reads go through the table. What a
//! view keeps of a node (a rendered header, the `.nc`'s name and layout,
//! an OME-TIFF, a preview's plan, the text views) is a type of the view's
//! own module (`views::HeaderOf`, `views::NetCdfOf`, `tiff::OmeOf`,
//! `previews::PreviewOf`, `text::TextView`), and who may read a node's
//! files `access::NodeAccess`; each node's entry holds one of each.
//!
//! Inode numbers are computed, not stored, so a million-chunk array costs
//! nothing until it is read (`layout.rs`: node `n` is `n + 1`, root = 1, a
//! named file of node `n` is its kind's field `| g << 22 | n`, and chunk
//! `j` of array `n` is `CHUNK | n << 40 | j`). `g`, the generation of node `n`'s
//! files, is 0 at the mount and changes when a mount that follows its
//! store serves new metadata for the node or one below it (`renew.rs`): a
//! changed file is a new file, as one replaced by a rename is, so that a
//! reader holding the old one open reads one version throughout and the
//! kernel never mixes the two versions' pages.
//!
//! A string-valued array also holds `data.txt`, its values one
//! per line (see [`crate::zarr::text`]); a variable-length one (`string`,
//! `bytes`) has no `data.bin` and names its chunk files `.txt`.
//!
//! Sizes come from metadata alone, except for text views: their exact size
//! needs decoding, done on first `stat` and then remembered (`readdir`
//! stays cheap).
//!
//! Ownership and modes follow the store: a chunk file shows its
//! object's owner, group and mode with the write bits cleared, and an absent
//! chunk its array's metadata object's (`zarr.json`); a directory shows its
//! store directory's. A file that combines objects (`data.bin`, `data.txt`,
//! `header.cdl`, the `.nc`) shows its node's metadata object's owner and
//! group, with the meet of its sources' modes (`access`): no
//! user reads through it what a direct read of a source would deny.
//! A store with no owners (object storage) shows the mounting user. An
//! [`Ownership`] override (`-o uid=,gid=,umask=`) replaces what it names.
//! A store object whose owner cannot be read shows mode `000`.

mod access;
mod attrs;
pub mod backing;
mod compose;
mod dir;
pub mod error;
mod kinds;
mod layout;
use layout::{CHUNK_BITS, FILE_GEN_SHIFT};
pub use layout::{Inode, STAGED_INO};
pub mod names;
mod prefetch;
mod previews;
mod read;
pub mod reader;
mod renew;
pub use renew::{OwnChange, OwnCommit, Reread, RereadError, Rereading, SameStore};
mod view;
pub use read::ChunkContent;
mod served;
pub mod status;
mod text;
mod tiff;
mod views;

use std::sync::OnceLock;
use std::time::SystemTime;

pub use error::FsError;
pub use kinds::FileKind;
use names::ChunkNames;

use crate::array::{Array, ArrayCache, Dataset};
pub use crate::array::{CacheKey, MissingChunks, ReadData};
use crate::cdl;
pub use crate::cdl::VersionRoot;
use crate::store::ReadableStore;
use crate::zarr::hierarchy::{Hierarchy, MAX_NODES, NodeKind};

/// The name of the generated header in every directory.
pub const HEADER_NAME: &str = "header.cdl";
/// The name of the whole-array file in every array directory.
pub const DATA_NAME: &str = "data.bin";
/// The name of the whole-array text of a string-valued array.
pub const TEXT_NAME: &str = "data.txt";
/// The name of the whole-array TIFF of a numeric array of 2 or more
/// dimensions.
pub const TIFF_NAME: &str = "data.tif";

/// The longest name a directory entry holds (Linux's `NAME_MAX`).
const NAME_MAX: usize = 255;

/// Settings of the core, already validated: made once from the mount's
/// config (`daemon/`), and carried whole into each filesystem a live mount
/// makes of a changed store. [`Default`] is a plain mount: every view on,
/// 512 MiB of cache, the daemon's user as owner.
#[derive(Debug, Clone)]
pub struct FsConfig {
    /// The decoded-chunk cache's budget, in bytes.
    pub cache_bytes: u64,
    /// What a chunk with no object reads as.
    pub missing_chunks: MissingChunks,
    /// Name used in the root header's `netcdf NAME {` line.
    pub dataset_name: String,
    /// The owner shown where the store says none (the daemon's user).
    pub uid: u32,
    /// The group shown where the store says none (the daemon's group).
    pub gid: u32,
    /// The mtime shown where an object has none of its own.
    pub mtime: SystemTime,
    /// The versions of a versioned store (Icechunk). A version's root is
    /// named like the dataset (its `.nc` file, its header's `netcdf NAME`
    /// line), so that two versions' files compare line by line; the
    /// headers at and below it carry its note, and their files its time as
    /// mtime (so `ls -t snapshots/` lists the newest first).
    pub versions: Vec<VersionRoot>,
    /// Overrides of the owner, group or mode the store gives its nodes
    /// (`-o uid=,gid=,umask=`).
    pub ownership: Ownership,
    /// Whether `preview.png` and `index.html` are shown (`--no-previews`).
    pub previews: bool,
    /// Whether `data.tif` is shown (`--no-tiff`).
    pub tiff: bool,
    /// Whether sequential readers get chunks decoded ahead
    /// (`--no-prefetch`). Takes effect at [`NzFs::start_prefetcher`].
    pub prefetch: bool,
    /// Which classic format the `.nc` files may take (`--nc-format`).
    pub nc_format: crate::netcdf::NcFormat,
    /// The thread pools' sizes, from the CPUs this process may use. Takes
    /// effect at [`NzFs::start_prefetcher`].
    pub sizing: crate::cpus::Sizing,
    /// The store as the status document names it (as /proc/mounts shows it).
    pub store_name: String,
    /// On object storage, how long a check of a cached chunk's object holds
    /// (the mount's `--metadata-ttl`; `None`: never checked, a mount that
    /// does not follow its store).
    pub remote_recheck: Option<std::time::Duration>,
}

impl Default for FsConfig {
    fn default() -> Self {
        FsConfig {
            cache_bytes: 512 << 20,
            missing_chunks: MissingChunks::Fill,
            dataset_name: "dataset".into(),
            uid: rustix::process::getuid().as_raw(),
            gid: rustix::process::getgid().as_raw(),
            mtime: SystemTime::now(),
            versions: Vec::new(),
            ownership: Ownership::default(),
            previews: true,
            tiff: true,
            prefetch: true,
            nc_format: crate::netcdf::NcFormat::Auto,
            sizing: crate::cpus::Sizing::for_machine(),
            store_name: String::new(),
            remote_recheck: Some(crate::array::REMOTE_RECHECK_AFTER),
        }
    }
}

/// Overrides of what the store says about ownership (`-o uid=,gid=,umask=`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ownership {
    /// Every node's owner (`-o uid=`).
    pub uid: Option<u32>,
    /// Every node's group (`-o gid=`).
    pub gid: Option<u32>,
    /// With a umask, every node's mode is `0555` (directories) or `0444`
    /// (files) less the umask, whatever the store says.
    pub umask: Option<u32>,
}

/// Directory or file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A group, an array, or a version's root.
    Directory,
    /// Any file.
    File,
}

/// The attributes the adapter turns into a `stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attr {
    /// The inode number.
    pub ino: u64,
    /// Directory or file.
    pub kind: Kind,
    /// The size in bytes (what reads will give).
    pub size: u64,
    /// The mode's permission bits.
    pub perm: u16,
    /// Links: 2 plus subdirectories for a directory, 1 for a file.
    pub nlink: u32,
    /// The owner.
    pub uid: u32,
    /// The group.
    pub gid: u32,
    /// The modification time: the newest of the objects it shows.
    pub mtime: SystemTime,
    /// The `st_blksize` to report: the read size programs choose from it
    /// (`cat`, stdio, netCDF-C).
    pub blksize: u32,
}

/// `st_blksize` of the virtual `.nc`: netCDF-C reads it in pieces of this
/// size, and each piece is a request to the daemon, so large ones pay.
pub const NC_BLKSIZE: u32 = crate::netcdf::HEADER_SPAN as u32;
/// `st_blksize` of every other file: coreutils and stdio read in buffers
/// of this size (tmpfs's 4 KiB gives them 128 KiB too), which stay in the
/// L2 cache; 1 MiB buffers measured slower for warm re-reads.
pub const FILE_BLKSIZE: u32 = 128 << 10;

/// One directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// The entry's inode number.
    pub ino: u64,
    /// The offset to resume after this entry.
    pub next_offset: u64,
    /// Directory or file.
    pub kind: Kind,
    /// The entry's name.
    pub name: String,
}

/// Per-node facts derived once at mount.
struct NodeInfo {
    /// Name in the parent directory (after collision renaming).
    dir_name: String,
    chunk_names: Option<ChunkNames>,
    /// The sequential reader's prefetch state.
    run: prefetch::Run,
    /// Who may read the node's objects and the files that combine them.
    access: access::NodeAccess,
    /// The version it belongs to: an index into [`FsConfig::versions`].
    version: Option<usize>,
    /// A group's children ordered by `dir_name`, so that `lookup` in a
    /// group of 100,000 arrays is a binary search, not a scan.
    by_name: Vec<u32>,
    /// What each view keeps of the node, each in the view's own type.
    header: views::HeaderOf,
    nc: views::NetCdfOf,
    ome: tiff::OmeOf,
    preview: previews::PreviewOf,
    /// The text views of a string-valued array.
    text: Option<Box<text::TextView>>,
}

/// The read-only filesystem over one store.
pub struct NzFs {
    dataset: Dataset,
    info: Vec<NodeInfo>,
    config: FsConfig,
    prefetch: OnceLock<prefetch::Prefetcher>,
    served: served::Served,
    status: status::Status,
    /// What the root's `index.html` keeps.
    index: previews::IndexOf,
    /// Following the store: the generation of each node's named files
    /// (empty: all 0), and what the next filesystem made says
    /// ([`renew::Generations`]).
    generations: renew::Generations,
}

/// A hierarchy larger than the inode numbering can serve.
#[derive(Debug, thiserror::Error)]
#[error("the hierarchy has {0} nodes; nzfs serves at most {MAX_NODES}")]
pub struct TooManyNodes(pub usize);

impl NzFs {
    /// The filesystem of `hierarchy` read from `store`; refused when the
    /// hierarchy has more nodes than inode numbers can name.
    pub fn new(
        store: Box<dyn ReadableStore>,
        mut hierarchy: Hierarchy,
        config: FsConfig,
    ) -> Result<Self, TooManyNodes> {
        Self::check_limits(&mut hierarchy)?;
        let counted = crate::store::counted::Counted::new(store);
        let counters = counted.counters();
        let dataset = Dataset::new(
            std::sync::Arc::new(counted),
            hierarchy,
            config.cache_bytes,
            config.missing_chunks,
        );
        let mut fs = Self::serve(dataset, config);
        fs.status.store_counters = Some(counters);
        Ok(fs)
    }

    /// The inode numbering's limits: at most [`MAX_NODES`] nodes, and fewer
    /// than 2^[`CHUNK_BITS`] chunks per array (others become unreadable).
    fn check_limits(hierarchy: &mut Hierarchy) -> Result<(), TooManyNodes> {
        if hierarchy.nodes.len() > MAX_NODES {
            return Err(TooManyNodes(hierarchy.nodes.len()));
        }
        for node in &mut hierarchy.nodes {
            if let NodeKind::Array(a) = &node.kind
                && a.metadata.grid_shape().iter().product::<u64>() >= 1 << CHUNK_BITS
            {
                let reason = format!("more than 2^{CHUNK_BITS} chunks");
                tracing::warn!(path = %node.path, %reason, "node is unreadable");
                node.kind = NodeKind::broken(reason);
            }
        }
        Ok(())
    }

    /// The filesystem over an opened dataset.
    fn serve(dataset: Dataset, config: FsConfig) -> Self {
        dataset.check_remote_every(config.remote_recheck);
        let hierarchy = dataset.hierarchy();
        let mut info: Vec<NodeInfo> = hierarchy
            .nodes
            .iter()
            .map(|n| NodeInfo {
                dir_name: n.name.clone(),
                // From the metadata: an array with no decoder
                // lists its files too, whose reads say why they fail.
                chunk_names: match &n.kind {
                    NodeKind::Array(a) => Some(match a.metadata.data_type.element_size() {
                        Some(_) => ChunkNames::new(&a.metadata.grid_shape()),
                        None => ChunkNames::with_suffix(&a.metadata.grid_shape(), ".txt"),
                    }),
                    _ => None,
                },
                text: match &n.kind {
                    NodeKind::Array(a) if a.metadata.data_type.is_text() => Some(Box::new(text::TextView::new(
                        a.metadata.data_type.element_size().is_none(),
                    ))),
                    _ => None,
                },
                run: prefetch::Run::default(),
                access: access::NodeAccess::default(),
                version: config.versions.iter().position(|v| v.holds(&n.path)),
                by_name: Vec::new(),
                header: views::HeaderOf::default(),
                nc: views::NetCdfOf::default(),
                ome: tiff::OmeOf::default(),
                preview: previews::PreviewOf::default(),
            })
            .collect();
        // A directory entry holds at most NAME_MAX (255) bytes: a longer node
        // name (consolidated metadata allows one) is cut, and told apart by
        // its node number.
        for (id, node) in hierarchy.nodes.iter().enumerate() {
            if node.name.len() > NAME_MAX {
                let tag = format!("~{id}");
                let name = format!("{}{tag}", crate::naming::cut(&node.name, NAME_MAX - tag.len()));
                tracing::warn!(path = %node.path, listed_as = %name, "a node name longer than 255 bytes is cut");
                info[id].dir_name = name;
            }
        }
        // Every group has a .nc, and so does a store whose root is one
        // array (of that array alone).
        for (id, node) in hierarchy.nodes.iter().enumerate() {
            let root_array = id == 0 && matches!(node.kind, NodeKind::Array(_));
            if !matches!(node.kind, NodeKind::Group { .. }) && !root_array {
                continue;
            }
            let version = info[id].version.map(|v| &config.versions[v]);
            let base = cdl::title(hierarchy, id, &config.dataset_name, version);
            let nc = format!(
                "{}.nc",
                crate::naming::cut(&crate::netcdf::nc_name(base).replace('/', "_"), NAME_MAX - 3)
            );
            info[id].ome = tiff::OmeOf::named(tiff::ome_name(hierarchy, id, &nc));
            info[id].nc = views::NetCdfOf::named(nc);
        }
        let status = status::Status::of_store(config.store_name.clone());
        let mut fs = NzFs {
            dataset,
            info,
            config,
            prefetch: OnceLock::new(),
            served: served::Served::default(),
            status,
            index: previews::IndexOf::default(),
            generations: renew::Generations::default(),
        };
        fs.list_colliding_nodes_apart();
        fs
    }

    /// Generated names win (the table of file kinds says which a directory
    /// holds): a node named like one is listed with `.node` appended
    /// (again while that is taken too). Then each directory's children are
    /// sorted by their listed names.
    fn list_colliding_nodes_apart(&mut self) {
        let hierarchy = self.dataset.hierarchy();
        let mut renamed = Vec::new();
        for (id, node) in hierarchy.nodes.iter().enumerate() {
            for &c in &node.children {
                if self.generated_in(id, &self.info[c].dir_name) {
                    let mut name = format!("{}.node", self.info[c].dir_name);
                    while node.children.iter().any(|&o| hierarchy.nodes[o].name == name) {
                        name.push_str(".node");
                    }
                    tracing::warn!(path = %hierarchy.nodes[c].path, listed_as = %name, "a node is named like a generated file");
                    renamed.push((c, name));
                }
            }
        }
        for (c, name) in renamed {
            self.info[c].dir_name = name;
        }
        let info = &mut self.info;
        for (id, node) in hierarchy.nodes.iter().enumerate() {
            if node.children.is_empty() {
                continue;
            }
            // Node ids fit u32: there are at most MAX_NODES (checked).
            let mut by_name: Vec<u32> = node.children.iter().map(|&c| c as u32).collect();
            by_name.sort_unstable_by(|&a, &b| info[a as usize].dir_name.cmp(&info[b as usize].dir_name));
            info[id].by_name = by_name;
        }
    }

    /// The groups and arrays shown.
    pub fn hierarchy(&self) -> &Hierarchy {
        self.dataset.hierarchy()
    }

    /// The name node `n` is listed under in its parent's directory.
    pub fn listed_name(&self, n: usize) -> Option<&str> {
        self.info.get(n).map(|i| i.dir_name.as_str())
    }

    /// The dataset the filesystem shows.
    pub fn dataset(&self) -> &Dataset {
        &self.dataset
    }

    /// The store, for readers that need more than the mounted view.
    pub fn store(&self) -> &dyn ReadableStore {
        self.dataset.store()
    }

    /// The settings it was made with.
    pub fn config(&self) -> &FsConfig {
        &self.config
    }

    /// Cache counters (decodes, hits, waits).
    pub fn cache(&self) -> &ArrayCache {
        self.dataset.cache()
    }

    /// The decoded-chunk cache's budget, in bytes (`--cache-size`).
    pub fn cache_budget(&self) -> u64 {
        self.config.cache_bytes
    }

    fn node_dir(&self, n: usize) -> Result<&crate::zarr::hierarchy::Node, FsError> {
        let node = self.hierarchy().nodes.get(n).ok_or(FsError::NotFound)?;
        match &node.kind {
            NodeKind::Broken { reason, .. } => Err(FsError::BrokenNode {
                path: node.path.clone(),
                reason: reason.clone(),
            }),
            _ => Ok(node),
        }
    }

    fn array(&self, n: usize) -> Result<(&Array, &ChunkNames), FsError> {
        let node = self.node_dir(n)?;
        match (self.dataset.array(n), &self.info[n].chunk_names) {
            (Some(a), Some(names)) => Ok((a, names)),
            _ => match self.dataset.cannot_decode(n) {
                Some(reason) => Err(FsError::BrokenNode {
                    path: node.path.clone(),
                    reason,
                }),
                None => Err(FsError::NotFound),
            },
        }
    }

    /// The size of chunk file `index` of array `node` (0 when unknown):
    /// what a passthrough backing of it holds at most.
    pub fn chunk_file_len(&self, node: usize, index: u64) -> u64 {
        self.array_files(node).map_or(0, |(m, _)| m.chunk_bytes_of(index))
    }

    /// The metadata and file names of array `n`, decodable or not.
    fn array_files(&self, n: usize) -> Result<(&crate::zarr::metadata::ArrayMetadata, &ChunkNames), FsError> {
        let node = self.node_dir(n)?;
        match (&node.kind, &self.info[n].chunk_names) {
            (NodeKind::Array(a), Some(names)) => Ok((&a.metadata, names)),
            _ => Err(FsError::NotFound),
        }
    }

    /// Check that `ino` is a file that can be opened for reading.
    pub fn open(&self, ino: u64, write: bool) -> Result<(), FsError> {
        self.kind(ino).and_then(|kind| match (kind, write) {
            (Kind::Directory, _) => Err(FsError::IsADirectory),
            (Kind::File, true) => Err(FsError::ReadOnly),
            (Kind::File, false) => Ok(()),
        })
    }

    /// Read up to `size` bytes of file `ino` at `offset`: waits for
    /// [`NzFs::read_then`], the one read path.
    pub fn read(&self, ino: u64, offset: u64, size: u32) -> Result<ReadData, FsError> {
        crate::cache::wait_for(|then| self.read_then(ino, offset, size, then))
            .unwrap_or_else(|| Err(crate::array::ArrayError::Panicked.into()))
    }

    /// The version node `n` belongs to, in a versioned store.
    fn version(&self, n: usize) -> Option<&VersionRoot> {
        self.info.get(n)?.version.map(|v| &self.config.versions[v])
    }
}

#[cfg(test)]
mod tests;

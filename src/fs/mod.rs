//! The filesystem core: the mounted layout, with no FUSE in sight.
//!
//! Layout (issue #2, "The mounted layout"):
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
//! Inode numbers are computed, not stored, so a million-chunk array costs
//! nothing until it is read: node `n` is `n + 1` (root = 1), its header is
//! `HEADER | n`, its `data.bin` `DATA | n`, and chunk `j` of array `n` is
//! `CHUNK | n << 40 | j`.
//!
//! A string-valued array (issue #14) also holds `data.txt`, its values one
//! per line (see [`crate::zarr::text`]); a variable-length one (`string`,
//! `bytes`) has no `data.bin` and names its chunk files `.txt`.
//!
//! Sizes come from metadata alone, except for text views: their exact size
//! needs decoding, done on first `stat` and then remembered (`readdir`
//! stays cheap). Text inodes are `TEXT | n` for `data.txt`.
//!
//! Ownership and modes follow the store (issue #19): a chunk file shows its
//! object's owner, group and mode with the write bits cleared; `data.bin`,
//! `header.cdl`, the `.nc` file and absent chunks show their node's
//! metadata object's (`zarr.json`); a directory shows its store directory's.
//! A store with no owners (object storage) shows the mounting user. An
//! [`Ownership`] override (`-o uid=,gid=,umask=`) replaces what it names.
//! A store object whose owner cannot be read shows mode `000`.

pub mod error;
pub mod names;
mod prefetch;
mod read;
mod text;

use std::ffi::OsStr;
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

pub use error::FsError;
use names::ChunkNames;

use crate::array::{Array, ArrayCache, Dataset};
pub use crate::array::{CacheKey, MissingChunks, ReadData};
use crate::cache::Chunk;
use crate::cdl;
use crate::store::{Access, ReadableStore};
use crate::zarr::hierarchy::{Hierarchy, NodeKind};

/// The name of the generated header in every directory.
pub const HEADER_NAME: &str = "header.cdl";
/// The name of the whole-array file in every array directory.
pub const DATA_NAME: &str = "data.bin";
/// The name of the whole-array text of a string-valued array.
pub const TEXT_NAME: &str = "data.txt";

const HEADER: u64 = 1 << 62;
const DATA: u64 = 1 << 61;
const NETCDF: u64 = 1 << 60;
const TEXT: u64 = 1 << 59;
const CHUNK: u64 = 1 << 63;
const CHUNK_BITS: u32 = 40;
const MAX_NODES: usize = 1 << 22;

/// Settings of the core, already validated.
#[derive(Debug, Clone)]
pub struct FsOptions {
    pub cache_bytes: u64,
    pub missing_chunks: MissingChunks,
    /// Name used in the root header's `netcdf NAME {` line.
    pub dataset_name: String,
    pub uid: u32,
    pub gid: u32,
    pub mtime: SystemTime,
}

/// Overrides of what the store says about ownership (`-o uid=,gid=,umask=`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ownership {
    pub uid: Option<u32>,
    pub gid: Option<u32>,
    /// With a umask, every node's mode is `0555` (directories) or `0444`
    /// (files) less the umask, whatever the store says.
    pub umask: Option<u32>,
}

/// What an inode number stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inode {
    Node(usize),
    Header(usize),
    /// `data.bin` of array `n`.
    Data(usize),
    /// The virtual netCDF file of group `n`.
    NetCdf(usize),
    /// `data.txt` of string-valued array `n`.
    Text(usize),
    Chunk {
        node: usize,
        index: u64,
    },
}

impl Inode {
    pub fn to_ino(self) -> u64 {
        match self {
            Inode::Node(n) => n as u64 + 1,
            Inode::Header(n) => HEADER | n as u64,
            Inode::Data(n) => DATA | n as u64,
            Inode::NetCdf(n) => NETCDF | n as u64,
            Inode::Text(n) => TEXT | n as u64,
            Inode::Chunk { node, index } => CHUNK | (node as u64) << CHUNK_BITS | index,
        }
    }

    pub fn from_ino(ino: u64) -> Option<Inode> {
        if ino & CHUNK != 0 {
            let rest = ino & !CHUNK;
            Some(Inode::Chunk {
                node: (rest >> CHUNK_BITS) as usize,
                index: rest & ((1 << CHUNK_BITS) - 1),
            })
        } else if ino & HEADER != 0 {
            Some(Inode::Header((ino & !HEADER) as usize))
        } else if ino & DATA != 0 {
            Some(Inode::Data((ino & !DATA) as usize))
        } else if ino & NETCDF != 0 {
            Some(Inode::NetCdf((ino & !NETCDF) as usize))
        } else if ino & TEXT != 0 {
            Some(Inode::Text((ino & !TEXT) as usize))
        } else {
            (ino as usize).checked_sub(1).map(Inode::Node)
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Directory,
    File,
}

/// The attributes the adapter turns into a `stat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attr {
    pub ino: u64,
    pub kind: Kind,
    pub size: u64,
    pub perm: u16,
    pub nlink: u32,
    pub uid: u32,
    pub gid: u32,
}

/// One directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    pub ino: u64,
    /// The offset to resume after this entry.
    pub next_offset: u64,
    pub kind: Kind,
    pub name: String,
}

/// Per-node facts derived once at mount.
struct NodeInfo {
    /// Name in the parent directory (after collision renaming).
    dir_name: String,
    chunk_names: Option<ChunkNames>,
    header: OnceLock<Chunk>,
    /// The group's virtual netCDF file name (`None` for arrays).
    nc_name: Option<String>,
    nc_layout: OnceLock<crate::netcdf::Layout>,
    /// The chunk file whose start was read last (sequential detection).
    last_started: std::sync::atomic::AtomicU64,
    /// Who may read the node's store directory, and its metadata object.
    dir_access: OnceLock<Result<Option<Access>, ()>>,
    meta_access: OnceLock<Result<Option<Access>, ()>>,
    /// The text views of a string-valued array.
    text: Option<text::TextView>,
}

/// The read-only filesystem over one store.
pub struct NzFs {
    dataset: Dataset,
    info: Vec<NodeInfo>,
    options: FsOptions,
    ownership: Ownership,
    prefetch: OnceLock<prefetch::Prefetcher>,
}

impl NzFs {
    pub fn new(store: Box<dyn ReadableStore>, mut hierarchy: Hierarchy, options: FsOptions) -> Result<Self, String> {
        Self::check_limits(&mut hierarchy)?;
        let dataset = Dataset::new(
            std::sync::Arc::from(store),
            hierarchy,
            options.cache_bytes,
            options.missing_chunks,
        );
        Ok(Self::serve(dataset, options))
    }

    /// The inode numbering's limits: at most [`MAX_NODES`] nodes, and fewer
    /// than 2^[`CHUNK_BITS`] chunks per array (others become unreadable).
    fn check_limits(hierarchy: &mut Hierarchy) -> Result<(), String> {
        if hierarchy.nodes.len() > MAX_NODES {
            return Err(format!(
                "the hierarchy has {} nodes; nzfs serves at most {MAX_NODES}",
                hierarchy.nodes.len()
            ));
        }
        for node in &mut hierarchy.nodes {
            if let NodeKind::Array(a) = &node.kind
                && a.metadata.grid_shape().iter().product::<u64>() >= 1 << CHUNK_BITS
            {
                let reason = format!("more than 2^{CHUNK_BITS} chunks");
                tracing::warn!(path = %node.path, %reason, "node is unreadable");
                node.kind = NodeKind::Broken { reason };
            }
        }
        Ok(())
    }

    /// The filesystem over an opened dataset.
    fn serve(dataset: Dataset, options: FsOptions) -> Self {
        let hierarchy = dataset.hierarchy();
        let mut info: Vec<NodeInfo> = hierarchy
            .nodes
            .iter()
            .enumerate()
            .map(|(id, n)| NodeInfo {
                dir_name: n.name.clone(),
                chunk_names: dataset.array(id).map(|a| match a.metadata().data_type.element_size() {
                    Some(_) => ChunkNames::new(a.grid_shape()),
                    None => ChunkNames::with_suffix(a.grid_shape(), ".txt"),
                }),
                text: dataset
                    .array(id)
                    .filter(|a| a.metadata().data_type.is_text())
                    .map(|a| text::TextView::new(a.metadata().data_type.element_size().is_none())),
                header: OnceLock::new(),
                nc_name: None,
                nc_layout: OnceLock::new(),
                last_started: std::sync::atomic::AtomicU64::new(u64::MAX),
                dir_access: OnceLock::new(),
                meta_access: OnceLock::new(),
            })
            .collect();
        // Generated names win; a node that collides is listed with `.node`
        // appended (again while that is taken too).
        for (id, node) in hierarchy.nodes.iter().enumerate() {
            if !matches!(node.kind, NodeKind::Group { .. }) {
                continue;
            }
            let base = if id == 0 {
                options.dataset_name.clone()
            } else {
                node.name.clone()
            };
            let nc = format!("{}.nc", crate::netcdf::nc_name(&base).replace('/', "_"));
            info[id].nc_name = Some(nc.clone());
            for &c in &node.children {
                if info[c].dir_name == HEADER_NAME || info[c].dir_name == nc {
                    let mut name = format!("{}.node", info[c].dir_name);
                    while node.children.iter().any(|&o| hierarchy.nodes[o].name == name) {
                        name.push_str(".node");
                    }
                    tracing::warn!(path = %hierarchy.nodes[c].path, listed_as = %name, "a node is named like a generated file");
                    info[c].dir_name = name;
                }
            }
        }
        NzFs {
            dataset,
            info,
            options,
            ownership: Ownership::default(),
            prefetch: OnceLock::new(),
        }
    }

    /// Override the owner, group or mode the store gives its nodes.
    pub fn with_ownership(mut self, ownership: Ownership) -> Self {
        self.ownership = ownership;
        self
    }

    /// Who may read store path `path` (`Err` when the store could not say).
    fn store_access(&self, path: &str) -> Result<Option<Access>, ()> {
        self.store().access(path).map_err(|e| {
            tracing::warn!(key = path, error = %e, "cannot read the owner and mode; showing mode 000");
        })
    }

    /// Who may read node `n`'s directory.
    fn dir_access(&self, n: usize) -> Result<Option<Access>, ()> {
        *self.info[n]
            .dir_access
            .get_or_init(|| self.store_access(&self.hierarchy().nodes[n].path))
    }

    /// Who may read node `n`'s metadata object: its `zarr.json`, else (an
    /// implicit group, or a node known only from consolidated metadata) its
    /// directory.
    fn meta_access(&self, n: usize) -> Result<Option<Access>, ()> {
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
    fn chunk_access(&self, node: usize, index: u64) -> Result<Option<Access>, ()> {
        let (array, _) = self.array(node).map_err(|_| ())?;
        let key = array.chunk_key(index).map_err(|_| ())?;
        match self.store_access(key.as_str())? {
            Some(a) => Ok(Some(a)),
            None => self.meta_access(node),
        }
    }

    /// Owner, group and permission bits of a node of `kind`, from what the
    /// store says of its object and the [`Ownership`] overrides.
    fn ownership_of(&self, access: Result<Option<Access>, ()>, kind: Kind) -> (u16, u32, u32) {
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

    pub fn hierarchy(&self) -> &Hierarchy {
        self.dataset.hierarchy()
    }

    /// The dataset the filesystem shows.
    pub fn dataset(&self) -> &Dataset {
        &self.dataset
    }

    /// The store, for readers that need more than the mounted view.
    pub fn store(&self) -> &dyn ReadableStore {
        self.dataset.store()
    }

    pub fn options(&self) -> &FsOptions {
        &self.options
    }

    /// Cache counters (decodes, hits, waits).
    pub fn cache(&self) -> &ArrayCache {
        self.dataset.cache()
    }

    /// Why array `n` cannot be shown when the reason is its data type (an
    /// unknown or structured type): such a directory lists only
    /// `header.cdl`, which says so, and anything else in it is `EIO`.
    fn unknown_type(&self, n: usize) -> Option<&str> {
        match &self.hierarchy().nodes.get(n)?.kind {
            NodeKind::Broken { reason } if reason.contains("unsupported data type") => Some(reason),
            _ => None,
        }
    }

    fn node_dir(&self, n: usize) -> Result<&crate::zarr::hierarchy::Node, FsError> {
        let node = self.hierarchy().nodes.get(n).ok_or(FsError::NotFound)?;
        match &node.kind {
            NodeKind::Broken { reason } => Err(FsError::BrokenNode {
                path: node.path.clone(),
                reason: reason.clone(),
            }),
            _ => Ok(node),
        }
    }

    fn array(&self, n: usize) -> Result<(&Array, &ChunkNames), FsError> {
        self.node_dir(n)?;
        match (self.dataset.array(n), &self.info[n].chunk_names) {
            (Some(a), Some(names)) => Ok((a, names)),
            _ => Err(FsError::NotFound),
        }
    }

    /// Whether `ino` exists, and what kind of node it is: what `open` and
    /// `access` need, without asking the store for owners and modes.
    pub fn kind(&self, ino: u64) -> Result<Kind, FsError> {
        let inode = Inode::from_ino(ino).ok_or(FsError::NotFound)?;
        self.kind_and_size(inode).map(|(kind, _)| kind)
    }

    /// The attributes of `ino`.
    pub fn getattr(&self, ino: u64) -> Result<Attr, FsError> {
        let inode = Inode::from_ino(ino).ok_or(FsError::NotFound)?;
        let (kind, size) = self.kind_and_size(inode)?;
        let access = match inode {
            Inode::Node(n) => self.dir_access(n),
            Inode::Header(n) | Inode::Data(n) | Inode::NetCdf(n) | Inode::Text(n) => self.meta_access(n),
            Inode::Chunk { node, index } => self.chunk_access(node, index),
        };
        let (perm, uid, gid) = self.ownership_of(access, kind);
        let nlink = match kind {
            Kind::Directory => 2,
            Kind::File => 1,
        };
        Ok(Attr {
            ino,
            kind,
            size,
            perm,
            nlink,
            uid,
            gid,
        })
    }

    /// The kind and size of `inode`, from metadata alone.
    fn kind_and_size(&self, inode: Inode) -> Result<(Kind, u64), FsError> {
        Ok(match inode {
            Inode::Node(n) => {
                let node = self.hierarchy().nodes.get(n).ok_or(FsError::NotFound)?;
                (Kind::Directory, node.children.len() as u64)
            }
            Inode::Header(n) => (Kind::File, self.header(n)?.len() as u64),
            Inode::Data(n) if self.has_data_bin(n) => (Kind::File, self.data_size(n)?),
            Inode::Data(_) => return Err(FsError::NotFound),
            Inode::NetCdf(n) => (Kind::File, self.nc_layout(n)?.size),
            Inode::Text(n) => (Kind::File, self.text_size(n)?),
            Inode::Chunk { node, index } => {
                let (a, names) = self.array(node)?;
                if index >= names.count() {
                    return Err(FsError::NotFound);
                }
                match self.info[node].text.as_ref().filter(|t| t.variable) {
                    Some(_) => (Kind::File, self.chunk_text_size(node, index)?),
                    None => (Kind::File, a.metadata().chunk_bytes()),
                }
            }
        })
    }

    /// Look `name` up in directory `parent`.
    pub fn lookup(&self, parent: u64, name: &OsStr) -> Result<Attr, FsError> {
        let Some(Inode::Node(p)) = Inode::from_ino(parent) else {
            return Err(FsError::NotADirectory);
        };
        let name = name.to_str().ok_or(FsError::NotFound)?;
        if name == HEADER_NAME && self.unknown_type(p).is_some() {
            return self.getattr(Inode::Header(p).to_ino());
        }
        let node = self.node_dir(p)?;
        if name == HEADER_NAME {
            return self.getattr(Inode::Header(p).to_ino());
        }
        if self.info[p].nc_name.as_deref() == Some(name) {
            return self.getattr(Inode::NetCdf(p).to_ino());
        }
        if let Some(names) = &self.info[p].chunk_names {
            if name == DATA_NAME && self.has_data_bin(p) {
                return self.getattr(Inode::Data(p).to_ino());
            }
            if name == TEXT_NAME && self.info[p].text.is_some() {
                return self.getattr(Inode::Text(p).to_ino());
            }
            let index = names.parse(name).ok_or(FsError::NotFound)?;
            return self.getattr(Inode::Chunk { node: p, index }.to_ino());
        }
        let child = node
            .children
            .iter()
            .copied()
            .find(|&c| self.info[c].dir_name == name)
            .ok_or(FsError::NotFound)?;
        self.getattr(Inode::Node(child).to_ino())
    }

    /// Check that `ino` is a directory that can be listed.
    pub fn opendir(&self, ino: u64) -> Result<(), FsError> {
        match Inode::from_ino(ino) {
            Some(Inode::Node(n)) if self.unknown_type(n).is_some() => Ok(()),
            Some(Inode::Node(n)) => self.node_dir(n).map(|_| ()),
            Some(_) => Err(FsError::NotADirectory),
            None => Err(FsError::NotFound),
        }
    }

    /// Up to `max` entries of directory `ino`, starting at `offset`. Entries
    /// are generated on demand, so listing a huge array costs no memory.
    pub fn readdir(&self, ino: u64, offset: u64, max: usize) -> Result<Vec<DirEntry>, FsError> {
        let Some(Inode::Node(n)) = Inode::from_ino(ino) else {
            return Err(FsError::NotADirectory);
        };
        if self.unknown_type(n).is_some() {
            let node = &self.hierarchy().nodes[n];
            let parent = node.parent.map_or(ino, |p| Inode::Node(p).to_ino());
            let entries = [
                (ino, Kind::Directory, "."),
                (parent, Kind::Directory, ".."),
                (Inode::Header(n).to_ino(), Kind::File, HEADER_NAME),
            ];
            return Ok(entries
                .into_iter()
                .enumerate()
                .skip(offset as usize)
                .take(max)
                .map(|(k, (ino, kind, name))| DirEntry {
                    ino,
                    next_offset: k as u64 + 1,
                    kind,
                    name: name.to_string(),
                })
                .collect());
        }
        let node = self.node_dir(n)?;
        let parent_ino = node.parent.map_or(ino, |p| Inode::Node(p).to_ino());
        // ".", "..", header, then data.bin and/or data.txt (arrays) or
        // <name>.nc (groups), then the chunks or the children.
        let mut files = vec![(Inode::Header(n).to_ino(), HEADER_NAME.to_string())];
        if self.info[n].chunk_names.is_none() {
            files.push((
                Inode::NetCdf(n).to_ino(),
                self.info[n].nc_name.clone().unwrap_or_default(),
            ));
        }
        if self.has_data_bin(n) {
            files.push((Inode::Data(n).to_ino(), DATA_NAME.to_string()));
        }
        if self.info[n].text.is_some() {
            files.push((Inode::Text(n).to_ino(), TEXT_NAME.to_string()));
        }
        let fixed = 2 + files.len() as u64;
        let total = fixed
            + self.info[n]
                .chunk_names
                .as_ref()
                .map_or(node.children.len() as u64, ChunkNames::count);
        let mut out = Vec::new();
        let mut k = offset;
        while k < total && out.len() < max {
            let (ino, kind, name) = match k {
                0 => (ino, Kind::Directory, ".".to_string()),
                1 => (parent_ino, Kind::Directory, "..".to_string()),
                k if k < fixed => {
                    let (ino, name) = files[(k - 2) as usize].clone();
                    (ino, Kind::File, name)
                }
                _ => match &self.info[n].chunk_names {
                    Some(names) => {
                        let index = k - fixed;
                        (Inode::Chunk { node: n, index }.to_ino(), Kind::File, names.name(index))
                    }
                    None => {
                        let c = node.children[(k - fixed) as usize];
                        (Inode::Node(c).to_ino(), Kind::Directory, self.info[c].dir_name.clone())
                    }
                },
            };
            k += 1;
            out.push(DirEntry {
                ino,
                next_offset: k,
                kind,
                name,
            });
        }
        Ok(out)
    }

    /// Check that `ino` is a file that can be opened for reading.
    pub fn open(&self, ino: u64, write: bool) -> Result<(), FsError> {
        self.kind(ino).and_then(|kind| match (kind, write) {
            (Kind::Directory, _) => Err(FsError::IsADirectory),
            (Kind::File, true) => Err(FsError::ReadOnly),
            (Kind::File, false) => Ok(()),
        })
    }

    /// Read up to `size` bytes of file `ino` at `offset`.
    pub fn read(&self, ino: u64, offset: u64, size: u32) -> Result<ReadData, FsError> {
        let buffer = match Inode::from_ino(ino).ok_or(FsError::NotFound)? {
            Inode::Node(_) => return Err(FsError::IsADirectory),
            Inode::Header(n) => self.header(n)?,
            Inode::Data(n) => return self.read_data(n, offset, size),
            Inode::NetCdf(n) => return self.read_netcdf(n, offset, size),
            Inode::Text(n) => self.data_text(n)?,
            Inode::Chunk { node, index } if self.info[node].text.as_ref().is_some_and(|t| t.variable) => {
                self.chunk(node, index)?
            }
            Inode::Chunk { node, index } => return self.read_chunk(node, index, offset, size),
        };
        Ok(ReadData::slice(buffer, offset, size))
    }

    /// The layout of group `n`'s virtual netCDF file.
    fn nc_layout(&self, n: usize) -> Result<&crate::netcdf::Layout, FsError> {
        let node = self.node_dir(n)?;
        if !matches!(node.kind, NodeKind::Group { .. }) {
            return Err(FsError::NotFound);
        }
        Ok(self.info[n]
            .nc_layout
            .get_or_init(|| crate::netcdf::layout(self.hierarchy(), n)))
    }

    /// Read bytes of group `n`'s virtual netCDF file: the header, then each
    /// variable's elements converted to big-endian from `data.bin` reads;
    /// zeros in the alignment gaps.
    fn read_netcdf(&self, n: usize, offset: u64, size: u32) -> Result<ReadData, FsError> {
        let layout = self.nc_layout(n)?;
        let start = offset.min(layout.size);
        let end = start.saturating_add(u64::from(size)).min(layout.size);
        let mut out = vec![0u8; (end - start) as usize];
        let header_len = layout.header.len() as u64;
        if start < header_len {
            let stop = end.min(header_len);
            out[..(stop - start) as usize].copy_from_slice(&layout.header[start as usize..stop as usize]);
        }
        for var in &layout.variables {
            let (lo, hi) = (start.max(var.begin), end.min(var.begin + var.len));
            if lo >= hi {
                continue;
            }
            let item = var.item_out as u64;
            let (e0, e1) = ((lo - var.begin) / item, (hi - var.begin).div_ceil(item));
            let host = self.array(var.node)?.0.read_bytes(
                e0 * var.item_in as u64,
                u32::try_from((e1 - e0) * var.item_in as u64).unwrap_or(u32::MAX),
            )?;
            let file = crate::netcdf::to_file_order(var, host.bytes());
            let skip = (lo - var.begin - e0 * item) as usize;
            let n = (hi - lo) as usize;
            out[(lo - start) as usize..(lo - start) as usize + n].copy_from_slice(&file[skip..skip + n]);
        }
        Ok(ReadData::owned(out))
    }

    /// The rendered `header.cdl` of node `n`.
    fn header(&self, n: usize) -> Result<Chunk, FsError> {
        self.hierarchy().nodes.get(n).ok_or(FsError::NotFound)?;
        Ok(self.info[n]
            .header
            .get_or_init(|| {
                let title = if n == 0 {
                    self.options.dataset_name.clone()
                } else {
                    self.hierarchy().nodes[n].name.clone()
                };
                if let Some(reason) = self.unknown_type(n) {
                    return Arc::new(cdl::render_unreadable(&title, reason).into_bytes());
                }
                Arc::new(cdl::render(self.hierarchy(), n, &title).into_bytes())
            })
            .clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    /// A store with no notion of owners (as object storage will be).
    fn ownerless() -> NzFs {
        let mut m = MemoryStore::default();
        m.insert("zarr.json", r#"{"zarr_format": 3, "node_type": "group"}"#);
        m.insert(
            "a/zarr.json",
            r#"{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]}"#,
        );
        m.insert("a/c/0", vec![1u8, 2]);
        let h = Hierarchy::open(&m).unwrap();
        let options = FsOptions {
            cache_bytes: 1 << 20,
            missing_chunks: MissingChunks::Fill,
            dataset_name: "t".into(),
            uid: 4242,
            gid: 4343,
            mtime: SystemTime::UNIX_EPOCH,
        };
        NzFs::new(Box::new(m), h, options).unwrap()
    }

    fn attrs(fs: &NzFs) -> Vec<(u16, u32, u32)> {
        let a = fs.lookup(1, OsStr::new("a")).unwrap();
        let names = ["0.bin", "1.bin", "data.bin", "header.cdl"];
        std::iter::once(fs.getattr(1).unwrap())
            .chain(std::iter::once(a))
            .chain(names.iter().map(|n| fs.lookup(a.ino, OsStr::new(n)).unwrap()))
            .map(|x| (x.perm, x.uid, x.gid))
            .collect()
    }

    #[test]
    fn a_store_without_owners_shows_the_mounting_user_with_the_umask() {
        let dir = (0o555, 4242, 4343);
        let file = (0o444, 4242, 4343);
        assert_eq!(attrs(&ownerless()), [dir, dir, file, file, file, file]);
        let fs = ownerless().with_ownership(Ownership {
            uid: None,
            gid: Some(7),
            umask: Some(0o027),
        });
        let (dir, file) = ((0o550, 4242, 7), (0o440, 4242, 7));
        assert_eq!(attrs(&fs), [dir, dir, file, file, file, file]);
    }

    /// A store that counts the owner lookups asked of it.
    struct CountingAccess(MemoryStore, std::sync::Arc<std::sync::atomic::AtomicU64>);

    impl ReadableStore for CountingAccess {
        fn get(&self, key: &crate::store::StoreKey, max: u64) -> std::io::Result<Option<Vec<u8>>> {
            self.0.get(key, max)
        }
        fn get_range(
            &self,
            key: &crate::store::StoreKey,
            offset: u64,
            len: u64,
            expect: Option<crate::store::Stamp>,
        ) -> std::io::Result<Option<Vec<u8>>> {
            self.0.get_range(key, offset, len, expect)
        }
        fn stat(&self, key: &crate::store::StoreKey) -> std::io::Result<Option<crate::store::Stamp>> {
            self.0.stat(key)
        }
        fn list_dir(&self, prefix: &str) -> std::io::Result<crate::store::Listing> {
            self.0.list_dir(prefix)
        }
        fn access(&self, _path: &str) -> std::io::Result<Option<Access>> {
            self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(None)
        }
    }

    #[test]
    fn open_and_access_ask_the_store_for_no_owner() {
        let calls = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let plain = ownerless();
        let h = Hierarchy::open(plain.store()).unwrap();
        let mut m = MemoryStore::default();
        for key in ["zarr.json", "a/zarr.json", "a/c/0"] {
            let k = crate::store::StoreKey::new(key).unwrap();
            m.insert(key, plain.store().get(&k, 1 << 20).unwrap().unwrap());
        }
        let fs = NzFs::new(Box::new(CountingAccess(m, calls.clone())), h, plain.options().clone()).unwrap();
        let a = fs.lookup(1, OsStr::new("a")).unwrap();
        let chunk = fs.lookup(a.ino, OsStr::new("0.bin")).unwrap();
        let before = calls.load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(fs.kind(chunk.ino).unwrap(), Kind::File);
        assert!(fs.open(chunk.ino, false).is_ok());
        assert_eq!(fs.open(a.ino, false).unwrap_err().errno(), libc::EISDIR);
        assert_eq!(fs.open(chunk.ino, true).unwrap_err().errno(), libc::EROFS);
        assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), before);
        fs.getattr(chunk.ino).unwrap();
        assert!(
            calls.load(std::sync::atomic::Ordering::Relaxed) > before,
            "getattr asks"
        );
    }
}

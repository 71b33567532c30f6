//! The files rendered from metadata alone, each built once per node and
//! kept: `header.cdl` (and the header-only directory of an array whose data
//! type nzfs does not know) and the layout of a group's virtual `.nc`,
//! these two files' views, and what each keeps of a node ([`HeaderOf`],
//! [`NetCdfOf`]).

use std::sync::{Arc, OnceLock};

use super::view::{FileView, Then};
use super::{FsError, HEADER_NAME, NzFs, ReadData};
use crate::cache::Chunk;
use crate::cdl;
use crate::store::Access;
use crate::zarr::documents::{ZARR_JSON, ZARRAY, ZATTRS};
use crate::zarr::hierarchy::NodeKind;

impl NzFs {
    /// Why array `n` cannot be shown when the reason is its data type (an
    /// unknown type): such a directory lists only
    /// `header.cdl`, which says so, and anything else in it is `EIO`.
    pub(super) fn unknown_type(&self, n: usize) -> Option<&str> {
        match &self.hierarchy().nodes.get(n)?.kind {
            NodeKind::Broken {
                reason,
                unknown_type: true,
            } => Some(reason),
            _ => None,
        }
    }

    /// The metadata document of node `n` as the store holds it (a Zarr v2
    /// array's `.zarray` with its `.zattrs` as `attributes`), for headers
    /// of nodes nzfs cannot model; `None` when it cannot be read.
    pub(super) fn document_of(&self, n: usize) -> Option<crate::json::Value> {
        use crate::json::Value;
        use crate::zarr::metadata::{Document, parse_document};
        let path = &self.hierarchy().nodes.get(n)?.path;
        let read = |name: &str| {
            let key = crate::store::join(path, name).ok()?;
            let bytes = self
                .store()
                .get(&key, crate::zarr::hierarchy::MAX_METADATA_BYTES)
                .ok()??;
            let document = if name == ZATTRS {
                Document::Attributes
            } else {
                Document::Node
            };
            parse_document(&bytes, document).ok().map(|(doc, _)| doc)
        };
        if let Some(doc) = read(ZARR_JSON) {
            return Some(doc);
        }
        let Value::Object(mut members) = read(ZARRAY)? else {
            return None;
        };
        if let Some(attrs) = read(ZATTRS) {
            members.push(("attributes".into(), attrs));
        }
        Some(Value::Object(members))
    }

    /// The layout of group `n`'s virtual netCDF file.
    pub(super) fn nc_layout(&self, n: usize) -> Result<&crate::netcdf::Layout, FsError> {
        let node = self.node_dir(n)?;
        if self.info[n].nc.name.is_none() {
            return Err(FsError::NotFound);
        }
        let root_array = matches!(node.kind, NodeKind::Array(_));
        Ok(self.info[n].nc.layout.get_or_init(|| {
            let h = self.hierarchy();
            let members: &[usize] = if root_array {
                std::slice::from_ref(&n)
            } else {
                &h.nodes[n].children
            };
            for &c in members {
                if let NodeKind::Array(a) = &h.nodes[c].kind
                    && a.metadata.data_type.element_size().is_none()
                {
                    tracing::info!(
                        path = %h.nodes[c].path,
                        data_type = %a.metadata.data_type.name(),
                        "left out of the group's classic .nc (variable-length strings); read its data.txt"
                    );
                }
            }
            let undecodable = |c: usize| self.dataset.cannot_decode(c);
            let title = cdl::title(h, n, &self.config.dataset_name, self.version(n));
            Box::new(crate::netcdf::layout(h, n, title, &undecodable, self.config.nc_format))
        }))
    }

    /// The rendered `header.cdl` of node `n`.
    pub(super) fn header(&self, n: usize) -> Result<Chunk, FsError> {
        self.hierarchy().nodes.get(n).ok_or(FsError::NotFound)?;
        Ok(self.info[n]
            .header
            .0
            .get_or_init(|| {
                let (h, version) = (self.hierarchy(), self.version(n));
                let title = cdl::title(h, n, &self.config.dataset_name, version);
                let text = match (self.unknown_type(n), self.dataset.cannot_decode(n)) {
                    (Some(reason), _) => cdl::render_unreadable(title, reason, self.document_of(n).as_ref()),
                    (None, Some(why)) => cdl::with_comment(
                        cdl::render(h, n, title),
                        &format!("nzfs: {why}; its data files give EIO"),
                    ),
                    (None, None) => cdl::render(h, n, title),
                };
                Arc::new(cdl::with_note(text, version).into_bytes())
            })
            .clone())
    }
}

/// What the header view keeps of a node: its `header.cdl`, rendered on
/// first use.
#[derive(Default)]
pub(super) struct HeaderOf(OnceLock<Chunk>);

/// What the `.nc` view keeps of a node: the file's name (a group's, or a
/// store's whose root is one array; `None` for every other node), and
/// its layout, made on first use.
#[derive(Default)]
pub(super) struct NetCdfOf {
    pub(super) name: Option<String>,
    layout: OnceLock<Box<crate::netcdf::Layout>>,
}

impl NetCdfOf {
    /// The `.nc` named `name`.
    pub(super) fn named(name: String) -> NetCdfOf {
        NetCdfOf {
            name: Some(name),
            layout: OnceLock::new(),
        }
    }
}

/// `header.cdl`, in every directory: the node as `ncdump -h` shows it.
pub(super) struct Header;

impl FileView for Header {
    fn fixed_name(&self) -> Option<&'static str> {
        Some(HEADER_NAME)
    }
    fn name<'a>(&self, fs: &'a NzFs, n: usize) -> Option<&'a str> {
        (n < fs.hierarchy().nodes.len()).then_some(HEADER_NAME)
    }
    fn size(&self, fs: &NzFs, n: usize) -> Result<u64, FsError> {
        Ok(fs.header(n)?.len() as u64)
    }
    fn access(&self, fs: &NzFs, n: usize) -> Result<Option<Access>, ()> {
        fs.header_access(n)
    }
    fn read(&self, fs: &NzFs, n: usize, offset: u64, size: u32, then: Then) {
        then(fs.header(n).map(|h| ReadData::slice(h, offset, size)))
    }
}

/// A group's virtual netCDF file (`<group>.nc`), and that of a store
/// whose root is one array: the header rendered here, each variable's
/// values from its `data.bin` in the file's byte order.
pub(super) struct NetCdf;

impl FileView for NetCdf {
    fn fixed_name(&self) -> Option<&'static str> {
        None
    }
    fn name<'a>(&self, fs: &'a NzFs, n: usize) -> Option<&'a str> {
        fs.info.get(n)?.nc.name.as_deref()
    }
    fn size(&self, fs: &NzFs, n: usize) -> Result<u64, FsError> {
        Ok(fs.nc_layout(n)?.size)
    }
    fn access(&self, fs: &NzFs, n: usize) -> Result<Option<Access>, ()> {
        fs.values_access(n)
    }
    fn read(&self, fs: &NzFs, n: usize, offset: u64, size: u32, then: Then) {
        fs.read_netcdf_then(n, offset, size, then)
    }
    fn follows_store(&self) -> bool {
        true
    }
    fn version(&self, fs: &NzFs, n: usize) -> Option<u64> {
        // A store whose root is one array: its .nc is that array's.
        match fs.dataset.array(n) {
            Some(a) => a.values_generation(),
            None => fs.generations(&fs.hierarchy().nodes.get(n)?.children),
        }
    }
    fn shows_values_of(&self, fs: &NzFs, n: usize, array: usize) -> bool {
        n != array || fs.info[n].nc.name.is_some()
    }
    fn blksize(&self) -> u32 {
        super::NC_BLKSIZE
    }
    fn served(&self, fs: &NzFs, ino: u64, n: usize, offset: u64, end: u64) {
        fs.served_netcdf(ino, n, offset, end)
    }
}

//! The files rendered from metadata alone, each built once per node and
//! kept: `header.cdl` (and the header-only directory of an array whose data
//! type nzfs does not know) and the layout of a group's virtual `.nc`; and
//! which files show a chunk's values ([`NzFs::views_of_chunk`]).

use std::sync::Arc;

use super::{FsError, NzFs};
use crate::cache::Chunk;
use crate::cdl;
use crate::zarr::hierarchy::NodeKind;

impl NzFs {
    /// Every file whose bytes show chunk `chunk` of array `node`: its chunk
    /// file, `data.bin`, `data.txt`, `data.tif`, `preview.png`, and the
    /// `.nc` and `.ome.tif` of each group above it, and `index.html`. Some
    /// may not exist (a 1-D array has no `data.tif`): the kernel knows no
    /// such inode, and dropping its pages is nothing.
    pub fn views_of_chunk(&self, node: usize, chunk: u64) -> Vec<u64> {
        use super::Inode;
        let mut out = vec![
            Inode::Chunk { node, index: chunk }.to_ino(),
            Inode::Data(node).to_ino(),
            Inode::Text(node).to_ino(),
            Inode::Tiff(node).to_ino(),
            Inode::Preview(node).to_ino(),
            Inode::Index.to_ino(),
        ];
        let nodes = &self.hierarchy().nodes;
        let mut up = nodes.get(node).and_then(|n| n.parent);
        while let Some(g) = up {
            out.extend([Inode::NetCdf(g).to_ino(), Inode::OmeTiff(g).to_ino()]);
            up = nodes[g].parent;
        }
        out
    }

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
            let document = if name == ".zattrs" {
                Document::Attributes
            } else {
                Document::Node
            };
            parse_document(&bytes, document).ok().map(|(doc, _)| doc)
        };
        if let Some(doc) = read("zarr.json") {
            return Some(doc);
        }
        let Value::Object(mut members) = read(".zarray")? else {
            return None;
        };
        if let Some(attrs) = read(".zattrs") {
            members.push(("attributes".into(), attrs));
        }
        Some(Value::Object(members))
    }

    /// The layout of group `n`'s virtual netCDF file.
    pub(super) fn nc_layout(&self, n: usize) -> Result<&crate::netcdf::Layout, FsError> {
        let node = self.node_dir(n)?;
        if self.info[n].nc_name.is_none() {
            return Err(FsError::NotFound);
        }
        let root_array = matches!(node.kind, NodeKind::Array(_));
        Ok(self.info[n].nc_layout.get_or_init(|| {
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
            let undecodable = |c: usize| {
                self.dataset
                    .undecodable(c)
                    .map(|r| format!("its values cannot be decoded: {r}"))
            };
            let title = cdl::title(h, n, &self.options.dataset_name, self.version(n));
            Box::new(crate::netcdf::layout(h, n, title, &undecodable, self.nc_format))
        }))
    }

    /// The rendered `header.cdl` of node `n`.
    pub(super) fn header(&self, n: usize) -> Result<Chunk, FsError> {
        self.hierarchy().nodes.get(n).ok_or(FsError::NotFound)?;
        Ok(self.info[n]
            .header
            .get_or_init(|| {
                let (h, version) = (self.hierarchy(), self.version(n));
                let title = cdl::title(h, n, &self.options.dataset_name, version);
                let text = match (self.unknown_type(n), self.dataset.undecodable(n)) {
                    (Some(reason), _) => cdl::render_unreadable(title, reason, self.document_of(n).as_ref()),
                    (None, Some(reason)) => cdl::with_comment(
                        cdl::render(h, n, title),
                        &format!("nzfs: this array's values cannot be decoded: {reason}; its data files give EIO"),
                    ),
                    (None, None) => cdl::render(h, n, title),
                };
                Arc::new(cdl::with_note(text, version).into_bytes())
            })
            .clone())
    }
}

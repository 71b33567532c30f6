//! `data.tif` in the mount (which arrays have one, its layout, and its
//! reads), and `<image>.ome.tif` in each OME-Zarr multiscale image's
//! group: its levels' pixels, in a pyramid, read from their `data.bin`.
//!
//! `data.tif`: The file is [`crate::tiff::Layout`]'s prefix followed by
//! `data.bin`, so every read of its pixels, a read across the end of the
//! prefix included, is a `data.bin` read on the one read path
//! ([`NzFs::read_flat_then`]), handed back by whichever thread decodes, and
//! a strip read decodes only the chunks under it.

use super::view::{FileView, Then};
use super::{FsError, NzFs, ReadData, TIFF_NAME};
use crate::store::Access;
use crate::tiff::{Layout, LevelShape};
use crate::zarr::hierarchy::{Hierarchy, NodeKind, ngff_attribute};

impl NzFs {
    /// The layout of `data.tif` of array `n`, from its metadata alone
    /// (`None` where it has none: text, records, complex and time values,
    /// fewer than two dimensions, an empty one, or `--no-tiff`).
    fn tiff_of(&self, n: usize) -> Option<Layout> {
        if !self.config.tiff || !self.has_data_bin(n) {
            return None;
        }
        let m = self.array_files(n).ok()?.0;
        let sample = crate::tiff::sample_of(&m.data_type)?;
        let rows = m.shape.len().checked_sub(2)?;
        // The rows one read decodes: an inner chunk's where shards are read
        // in part, else a chunk's.
        let band = match self.dataset.array(n) {
            Some(a) => a.read_unit_along(rows),
            None => m.chunk_shape.get(rows).copied().unwrap_or(1),
        };
        Layout::of(&m.shape, sample, band)
    }

    /// Whether array `n` shows a `data.tif`.
    pub(super) fn has_tiff(&self, n: usize) -> bool {
        self.tiff_of(n).is_some()
    }

    /// The layout of `data.tif` of array `n`, or `NotFound`.
    pub(super) fn tiff_layout(&self, n: usize) -> Result<Layout, FsError> {
        self.tiff_of(n).ok_or(FsError::NotFound)
    }

    /// Hand bytes `[offset, offset + size)` of `data.tif` of array `node`
    /// to `then`: the prefix rendered here, the pixels read from
    /// `data.bin`.
    pub(super) fn read_tiff_then(
        &self,
        node: usize,
        offset: u64,
        size: u32,
        then: impl FnOnce(Result<ReadData, FsError>) + Send + 'static,
    ) {
        let layout = match self.tiff_layout(node) {
            Ok(l) => l,
            Err(e) => return then(Err(e)),
        };
        let (start, end) = crate::array::window(offset, size, layout.size);
        // The pixels are data.bin's bytes, each page's padded to a memory
        // page where there are several. A read across the end of the
        // prefix fails when its first pixels do; the pixels start on a
        // page of their own (`tiff::PIXELS_ALIGN`), and so does each
        // plane, so when this read is the kernel's readahead, its retry of
        // the page a reader wants holds no pixels of another plane: one
        // bad chunk hides only its own plane's pages.
        let parts =
            super::compose::tiff_parts(&layout, &[node], start, end, |from, end| layout.pixel_pieces(from, end));
        self.read_parts_then(parts, Box::new(then))
    }
}

/// The OME-TIFF of a multiscale image group: the levels it holds (level
/// 0 first; those whose planes differ from level 0's are left out), its
/// layout, and who may read it.
pub(super) struct OmeTiff {
    pub levels: Vec<usize>,
    pub layout: Layout,
    pub access: super::access::ByGeneration,
}

/// What the OME-TIFF view keeps of a group: the file's name (`None`
/// where the group is no multiscale image), and the file, made on first
/// use (`None` where it cannot be).
#[derive(Default)]
pub(super) struct OmeOf {
    name: Option<String>,
    file: std::sync::OnceLock<Option<Box<OmeTiff>>>,
}

impl OmeOf {
    /// An image's OME-TIFF named `name`, where it has one.
    pub(super) fn named(name: Option<String>) -> OmeOf {
        OmeOf {
            name,
            file: std::sync::OnceLock::new(),
        }
    }
}

/// The OME-TIFF name of group `id` whose `.nc` is `nc`: `<name>.ome.tif`
/// for a group with NGFF `multiscales`, else `None`.
pub(super) fn ome_name(h: &Hierarchy, id: usize, nc: &str) -> Option<String> {
    match &h.nodes[id].kind {
        NodeKind::Group { metadata: Some(g) } if ngff_attribute(&g.attributes, "multiscales").is_some() => {
            Some(format!("{}{OME_SUFFIX}", nc.strip_suffix(".nc").unwrap_or(nc)))
        }
        _ => None,
    }
}

const OME_SUFFIX: &str = ".ome.tif";

impl NzFs {
    /// The OME-TIFF of group `g`, made on first use from metadata alone
    /// (`None` where it has none: no NGFF image, axes or a data type OME
    /// cannot hold, or `--no-tiff`).
    pub(super) fn ome_tiff(&self, g: usize) -> Option<&OmeTiff> {
        if !self.config.tiff {
            return None;
        }
        let name = self.info.get(g)?.ome.name.as_deref()?;
        self.info[g]
            .ome
            .file
            .get_or_init(|| {
                self.make_ome_tiff(g, name.strip_suffix(OME_SUFFIX).unwrap_or(name))
                    .map(Box::new)
            })
            .as_deref()
    }

    fn make_ome_tiff(&self, g: usize, name: &str) -> Option<OmeTiff> {
        let h = self.hierarchy();
        let path = &h.nodes[g].path;
        let image = h.ngff_image(g)?;
        let &first = image.levels.first()?;
        let m0 = self.array_files(first).ok()?.0;
        let sample = crate::tiff::sample_of(&m0.data_type)?;
        let xml = match crate::tiff::ome::xml(&image, name, &m0.shape, &m0.data_type) {
            Ok(xml) => xml,
            Err(reason) => {
                tracing::info!(path = %path, %reason, "no .ome.tif for this image; each level has its data.tif");
                return None;
            }
        };
        let rows = m0.shape.len().checked_sub(2)?;
        let mut levels = Vec::new();
        let mut shapes: Vec<LevelShape> = Vec::new();
        for &l in &image.levels {
            if !self.has_data_bin(l) || levels.contains(&l) || levels.len() == crate::tiff::MAX_LEVELS {
                continue;
            }
            let Ok((m, _)) = self.array_files(l) else { continue };
            let smaller = shapes
                .last()
                .is_none_or(|s| m.shape[rows..].iter().zip(&s.shape[rows..]).all(|(a, b)| a <= b));
            if m.data_type != m0.data_type || m.shape[..rows] != m0.shape[..rows] || !smaller {
                tracing::info!(
                    path = %h.nodes[l].path,
                    "this level is left out of its image's .ome.tif: a SubIFD must have level 0's planes, in the same type; read its data.tif"
                );
                continue;
            }
            // The plane one read decodes: strips of its rows, or tiles of
            // about its size.
            let unit = |d: usize| match self.dataset.array(l) {
                Some(a) => a.read_unit_along(d),
                None => m.chunk_shape.get(d).copied().unwrap_or(1),
            };
            levels.push(l);
            shapes.push(LevelShape {
                shape: &m.shape,
                band: unit(rows),
                cols: Some(unit(rows + 1)),
            });
        }
        if levels.first() != Some(&first) {
            return None;
        }
        let layout = Layout::pyramid(&shapes, sample, Some(&xml))?;
        Some(OmeTiff {
            levels,
            layout,
            access: Default::default(),
        })
    }

    /// The name group `g`'s OME-TIFF is listed as, where it has one.
    pub(super) fn ome_file(&self, g: usize) -> Option<&str> {
        self.ome_tiff(g)?;
        self.info[g].ome.name.as_deref()
    }

    /// The layout of group `g`'s OME-TIFF, or `NotFound`.
    pub(super) fn ome_layout(&self, g: usize) -> Result<&Layout, FsError> {
        self.ome_tiff(g).map(|o| &o.layout).ok_or(FsError::NotFound)
    }

    /// Bytes `[offset, offset + size)` of group `g`'s OME-TIFF: the prefix
    /// rendered here, each level's pixels read from its `data.bin`
    /// (`compose.rs`).
    pub(super) fn read_ome_tiff_then(&self, g: usize, offset: u64, size: u32, then: Then) {
        let Some(ome) = self.ome_tiff(g) else {
            return then(Err(FsError::NotFound));
        };
        let layout = &ome.layout;
        let (start, end) = crate::array::window(offset, size, layout.size);
        let parts = super::compose::tiff_parts(layout, &ome.levels, start, end, |from, end| {
            layout.pixel_pieces(from, end)
        });
        self.read_parts_then(parts, then)
    }
}

/// `data.tif`: a numeric array of two or more dimensions as a TIFF, its
/// pixels `data.bin`'s bytes after a rendered prefix.
pub(super) struct DataTif;

impl FileView for DataTif {
    fn fixed_name(&self) -> Option<&'static str> {
        Some(TIFF_NAME)
    }
    fn name<'a>(&self, fs: &'a NzFs, n: usize) -> Option<&'a str> {
        fs.has_tiff(n).then_some(TIFF_NAME)
    }
    fn size(&self, fs: &NzFs, n: usize) -> Result<u64, FsError> {
        Ok(fs.tiff_layout(n)?.size)
    }
    fn access(&self, fs: &NzFs, n: usize) -> Result<Option<Access>, ()> {
        fs.values_access(n)
    }
    fn read(&self, fs: &NzFs, n: usize, offset: u64, size: u32, then: Then) {
        fs.read_tiff_then(n, offset, size, then)
    }
    fn follows_store(&self) -> bool {
        true
    }
    fn version(&self, fs: &NzFs, n: usize) -> Option<u64> {
        fs.dataset.array(n)?.values_generation()
    }
    fn shows_values_of(&self, _fs: &NzFs, n: usize, array: usize) -> bool {
        n == array
    }
}

/// A multiscale image group's OME-TIFF (`<image>.ome.tif`): its levels'
/// pixels, in a pyramid.
pub(super) struct OmeTiffFile;

impl FileView for OmeTiffFile {
    fn fixed_name(&self) -> Option<&'static str> {
        None
    }
    fn name<'a>(&self, fs: &'a NzFs, n: usize) -> Option<&'a str> {
        fs.ome_file(n)
    }
    fn size(&self, fs: &NzFs, n: usize) -> Result<u64, FsError> {
        Ok(fs.ome_layout(n)?.size)
    }
    fn access(&self, fs: &NzFs, n: usize) -> Result<Option<Access>, ()> {
        fs.ome_access(n)
    }
    fn read(&self, fs: &NzFs, n: usize, offset: u64, size: u32, then: Then) {
        fs.read_ome_tiff_then(n, offset, size, then)
    }
    fn follows_store(&self) -> bool {
        true
    }
    fn version(&self, fs: &NzFs, n: usize) -> Option<u64> {
        fs.generations(&fs.ome_tiff(n)?.levels)
    }
    fn shows_values_of(&self, _fs: &NzFs, n: usize, array: usize) -> bool {
        n != array
    }
}

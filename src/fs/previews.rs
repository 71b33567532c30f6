//! `preview.png` in each array directory and `index.html` at the root
//! (what they show is [`crate::preview`]'s).
//!
//! Invariants: their sizes come from metadata ([`crate::preview::Plan`],
//! and the page, which is metadata only), so `stat` and `ls -l` decode
//! nothing; a preview is rendered on its first read, kept in the
//! decoded-chunk cache under its array's node (so it counts against the
//! cache budget and is let go like a chunk), and counted in `nzfs status`;
//! a preview shows what its array's `data.bin` shows (and the first and
//! last value of the latitude coordinate that orients it), so its owner
//! and mode are the meet of those sources'.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use super::view::{FileView, Then};
use super::{FsError, NzFs, ReadData};
use crate::array::CacheKey;
use crate::cache::Chunk;
use crate::preview::{self, Plan};
use crate::store::Access;
use crate::store::{Meet, Need};
use crate::zarr::hierarchy::NodeKind;

/// What the preview view keeps of an array: what its `preview.png`
/// shows (from metadata, made on first use), and the latitude coordinate
/// that decides its orientation.
#[derive(Default)]
pub(super) struct PreviewOf(std::sync::OnceLock<Option<(Plan, Option<usize>)>>);

/// What the root's `index.html` keeps, each made on first use: the page,
/// its length (from metadata alone), and the time coordinates whose dates
/// it gives.
#[derive(Default)]
pub(super) struct IndexOf {
    page: std::sync::OnceLock<Chunk>,
    len: std::sync::OnceLock<u64>,
    pub(super) time_coords: std::sync::OnceLock<Vec<usize>>,
}

/// The cache key part of a rendered preview (chunk parts are below it).
pub(super) const PREVIEW_PART: u64 = CacheKey::INDEX - 1;

impl NzFs {
    /// Whether array `n` shows `preview.png`.
    pub(super) fn has_preview(&self, n: usize) -> bool {
        self.config.previews && self.dataset.array(n).is_some() && self.plan_of(n).is_some()
    }

    /// Whether the root shows `index.html`.
    pub(super) fn has_index(&self) -> bool {
        self.config.previews
    }

    fn plan_of(&self, n: usize) -> Option<&(Plan, Option<usize>)> {
        self.info
            .get(n)?
            .preview
            .0
            .get_or_init(|| preview::plan(self.hierarchy(), n))
            .as_ref()
    }

    /// The plan of array `n`'s preview, when it has one.
    pub(super) fn preview_plan(&self, n: usize) -> Result<&(Plan, Option<usize>), FsError> {
        if !self.has_preview(n) {
            return Err(FsError::NotFound);
        }
        self.plan_of(n).ok_or(FsError::NotFound)
    }

    /// The meet of what array `n`'s preview shows: its values, its
    /// latitude coordinate's, and for a multiscale level its image group's
    /// metadata.
    pub(super) fn preview_access(&self, n: usize) -> Result<Option<Access>, ()> {
        let Some(own) = self.values_access(n)? else {
            return Ok(None);
        };
        let lat = match self.plan_of(n).and_then(|(_, lat)| *lat) {
            Some(c) => self.values_access(c)?,
            None => None,
        };
        // A level's preview shows its image's `omero` label and window.
        let image = self.image_group(n);
        if lat.is_none() && image.is_none() {
            return Ok(Some(own));
        }
        let mut meet = Meet::new(own.uid, own.gid);
        meet.require(&own, Need::Read);
        if let Some(b) = lat {
            meet.require(&b, Need::Read);
        }
        self.image_group_sources(image, n, &mut meet)?;
        Ok(Some(meet.access()))
    }

    /// Array `n`'s `preview.png`, rendered on first read.
    pub(super) fn preview_png(&self, n: usize) -> Result<Chunk, FsError> {
        let (plan, lat) = self.preview_plan(n)?;
        let array = self.dataset.array(n).ok_or(FsError::NotFound)?;
        let key = CacheKey {
            node: n,
            chunk: 0,
            part: PREVIEW_PART,
            version: 0,
            generation: array.generation(),
        };
        // Rendering stops once the reader that started it is gone.
        let reader = super::reader::current();
        let keep_going = || reader.is_none_or(super::reader::alive);
        let chunk = self.cache().get_or_decode(&key, || {
            let mut plan = plan.clone();
            if let Some(c) = lat.and_then(|c| self.dataset.array(c)) {
                // Latitude increasing along rows: rows go bottom-up.
                let len = c.metadata().shape[0];
                let first = c.read_region(&[0], &[1])?;
                let last = c.read_region(&[len - 1], &[1])?;
                let t = &c.metadata().data_type;
                plan.flip = matches!((t.value_f64(&first, 0), t.value_f64(&last, 0)), (Some(a), Some(b)) if a < b);
            }
            let values = preview::sample(array, &plan, &keep_going)?;
            self.status.previews_rendered.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(path = %array.path(), width = plan.width, height = plan.height, "rendered a preview");
            Ok(preview::render(&plan, &values))
        })?;
        Ok(chunk)
    }

    /// The length of `index.html`, from metadata alone: the page made
    /// without the values of time coordinates, whose dates have a field of
    /// fixed width.
    pub(super) fn index_len(&self) -> Result<u64, FsError> {
        if !self.has_index() {
            return Err(FsError::NotFound);
        }
        if let Some(page) = self.index.page.get() {
            return Ok(page.len() as u64);
        }
        Ok(*self.index.len.get_or_init(|| self.render_index(false).len() as u64))
    }

    /// The page at the root, made on first use from metadata and the first
    /// and last values of time coordinates.
    pub(super) fn index_html(&self) -> Result<Chunk, FsError> {
        if !self.has_index() {
            return Err(FsError::NotFound);
        }
        Ok(self
            .index
            .page
            .get_or_init(|| {
                let page = self.render_index(true);
                debug_assert!(self.index.len.get().is_none_or(|&l| l == page.len() as u64));
                Arc::new(page)
            })
            .clone())
    }

    /// `index.html`'s bytes, with the dates of time coordinates where
    /// `values` (their first and last values are read), else blank.
    fn render_index(&self, values: bool) -> Vec<u8> {
        let h = self.hierarchy();
        let dir = |n: usize| {
            let mut parts = Vec::new();
            let mut at = Some(n);
            while let Some(p) = at.filter(|&p| p != 0) {
                parts.push(self.info[p].dir_name.clone());
                at = h.nodes[p].parent;
            }
            parts.reverse();
            parts.join("/")
        };
        let nc = |n: usize| self.info[n].nc.name.clone();
        let shown_preview = |n: usize| {
            self.has_preview(n)
                .then(|| self.plan_of(n).map(|(p, _)| (p.width, p.height)))
                .flatten()
        };
        let data_bin = |n: usize| matches!(h.nodes[n].kind, NodeKind::Array(_)) && self.has_data_bin(n);
        let tiff = |n: usize| matches!(h.nodes[n].kind, NodeKind::Array(_)) && self.has_tiff(n);
        let ome = |n: usize| self.ome_file(n).map(str::to_string);
        // The first and last values of a 1-D array (a CF time
        // coordinate's dates), unpacked ones only.
        let span = |n: usize| {
            if !values {
                return None;
            }
            let a = self.dataset.array(n)?;
            let m = a.metadata();
            let packed = ["scale_factor", "add_offset"]
                .iter()
                .any(|k| m.attributes.iter().any(|(a, _)| a == k));
            let len = m.shape.first().copied().filter(|&l| l > 0 && !packed)?;
            let first = a.read_region(&[0], &[1]).ok()?;
            let last = a.read_region(&[len - 1], &[1]).ok()?;
            Some((m.data_type.value_f64(&first, 0)?, m.data_type.value_f64(&last, 0)?))
        };
        let shown = preview::Shown {
            dir: &dir,
            nc: &nc,
            preview: &shown_preview,
            data_bin: &data_bin,
            tiff: &tiff,
            ome: &ome,
            span: &span,
        };
        let title = crate::cdl::title(h, 0, &self.config.dataset_name, self.version(0));
        preview::index_html(h, title, &shown).into_bytes()
    }
}

/// `preview.png` of an array: a picture of one plane of its values.
pub(super) struct PreviewPng;

impl FileView for PreviewPng {
    fn fixed_name(&self) -> Option<&'static str> {
        Some(preview::PREVIEW_NAME)
    }
    fn name<'a>(&self, fs: &'a NzFs, n: usize) -> Option<&'a str> {
        fs.has_preview(n).then_some(preview::PREVIEW_NAME)
    }
    fn size(&self, fs: &NzFs, n: usize) -> Result<u64, FsError> {
        Ok(fs.preview_plan(n)?.0.png_len())
    }
    fn access(&self, fs: &NzFs, n: usize) -> Result<Option<Access>, ()> {
        fs.preview_access(n)
    }
    fn read(&self, fs: &NzFs, n: usize, offset: u64, size: u32, then: Then) {
        then(fs.preview_png(n).map(|png| ReadData::slice(png, offset, size)))
    }
    fn shows_values_of(&self, _fs: &NzFs, n: usize, array: usize) -> bool {
        n == array
    }
}

/// `index.html` at the root: a page of every array with its preview.
pub(super) struct IndexHtml;

impl FileView for IndexHtml {
    fn fixed_name(&self) -> Option<&'static str> {
        Some(preview::INDEX_NAME)
    }
    fn name<'a>(&self, fs: &'a NzFs, n: usize) -> Option<&'a str> {
        (n == 0 && fs.has_index()).then_some(preview::INDEX_NAME)
    }
    fn size(&self, fs: &NzFs, _n: usize) -> Result<u64, FsError> {
        fs.index_len()
    }
    fn access(&self, fs: &NzFs, _n: usize) -> Result<Option<Access>, ()> {
        fs.index_access()
    }
    fn read(&self, fs: &NzFs, _n: usize, offset: u64, size: u32, then: Then) {
        then(fs.index_html().map(|page| ReadData::slice(page, offset, size)))
    }
    fn shows_values_of(&self, _fs: &NzFs, n: usize, _array: usize) -> bool {
        n == 0
    }
}

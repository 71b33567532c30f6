//! `data.tif` in the mount: which arrays have one, its layout, and its
//! reads. The file is [`crate::tiff::Layout`]'s prefix followed by
//! `data.bin`, so every read of its pixels, a read across the end of the
//! prefix included, is a `data.bin` read on the one read path
//! ([`NzFs::read_flat_then`]), handed back by whichever thread decodes, and
//! a strip read decodes only the chunks under it.

use super::{FsError, NzFs, ReadData};
use crate::tiff::Layout;

impl NzFs {
    /// The layout of `data.tif` of array `n`, from its metadata alone
    /// (`None` where it has none: text, records, complex and time values,
    /// fewer than two dimensions, an empty one, or `--no-tiff`).
    fn tiff_of(&self, n: usize) -> Option<Layout> {
        if !self.tiff || !self.has_data_bin(n) {
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
        let start = offset.min(layout.size);
        let end = start.saturating_add(u64::from(size)).min(layout.size);
        if start >= layout.prefix {
            // Pixels only: data.bin's own path, which never blocks here.
            return self.read_flat_then(node, start - layout.prefix, (end - start) as u32, then);
        }
        let mut out = vec![0u8; (end.min(layout.prefix) - start) as usize];
        layout.read_prefix(start, &mut out);
        if end <= layout.prefix {
            return then(Ok(ReadData::owned(out)));
        }
        // A read across the end of the prefix: the first pixels follow it.
        self.read_flat_then(node, 0, (end - layout.prefix) as u32, move |r| {
            then(r.map(|pixels| {
                out.extend_from_slice(pixels.bytes());
                ReadData::owned(out)
            }))
        });
    }
}

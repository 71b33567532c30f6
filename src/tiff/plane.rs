//! One level's image plane in a TIFF: in strips of chunk rows, or in tiles
//! of about a chunk's plane, and which bytes of `data.bin` (or padding)
//! each byte of its pages in the file is.
//!
//! Invariants: a page has at most [`MAX_STRIPS`] strips or tiles, so that
//! its tables, rendered whole on a read, stay small, and each side is at
//! most `u32::MAX`, what a TIFF LONG holds.

use super::{ENTRIES, MAX_STRIP_BYTES, MAX_STRIPS, MAX_TILE_SIDE};

/// A side TIFF can state: `ImageWidth`, `ImageLength` and the strip and
/// tile sides are LONG, 32 bits, in BigTIFF too.
fn side_fits(n: u64) -> bool {
    (1..=u64::from(u32::MAX)).contains(&n)
}

/// One resolution level's image plane, in strips or in tiles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plane {
    /// Pixels across.
    pub width: u64,
    /// Pixels down.
    pub height: u64,
    /// Rows in each strip, or in each tile.
    pub rows_per_strip: u64,
    /// Strips, or tiles, in each page.
    pub strips: u64,
    /// The tiles' width, for a tiled plane.
    pub tile_width: Option<u64>,
    /// Bytes of one sample.
    sample: u64,
    /// Bytes of one page's pixels in `data.bin`...
    pub(super) bytes: u64,
    /// ...and in the file (tiles are padded to their full size; strips,
    /// in a file of many pages, to a multiple of the memory page).
    pub(super) stored: u64,
}

impl Plane {
    /// The plane of `height` x `width` samples of `bits`, in strips of at
    /// most `band` rows (and at most [`MAX_STRIP_BYTES`]).
    pub(super) fn of(height: u64, width: u64, bits: u16, band: u64) -> Option<Plane> {
        if !side_fits(height) || !side_fits(width) {
            return None;
        }
        let row = width.checked_mul(u64::from(bits / 8))?;
        // At most MAX_STRIP_BYTES a strip, unless the page would need more
        // than MAX_STRIPS of them: the strip tables are rendered in memory.
        let rows_per_strip = band
            .clamp(1, height)
            .min((MAX_STRIP_BYTES / row).max(1))
            .max(height.div_ceil(MAX_STRIPS));
        let bytes = row.checked_mul(height)?;
        Some(Plane {
            width,
            height,
            rows_per_strip,
            strips: height.div_ceil(rows_per_strip),
            tile_width: None,
            sample: u64::from(bits / 8),
            bytes,
            stored: bytes,
        })
    }

    /// The plane in tiles near `rows` x `cols` (a chunk's plane): each
    /// side a multiple of 16 from 16 to [`MAX_TILE_SIDE`]. `None` past
    /// [`MAX_STRIPS`] tiles.
    pub(super) fn tiled(height: u64, width: u64, bits: u16, rows: u64, cols: u64) -> Option<Plane> {
        if !side_fits(height) || !side_fits(width) {
            return None;
        }
        let side = |n: u64| (n.saturating_add(8) / 16 * 16).clamp(16, MAX_TILE_SIDE);
        let (tile_length, tile_width) = (side(rows), side(cols));
        let tiles = height.div_ceil(tile_length).checked_mul(width.div_ceil(tile_width))?;
        if tiles > MAX_STRIPS {
            return None;
        }
        let sample = u64::from(bits / 8);
        Some(Plane {
            width,
            height,
            rows_per_strip: tile_length,
            strips: tiles,
            tile_width: Some(tile_width),
            sample,
            bytes: width.checked_mul(sample)?.checked_mul(height)?,
            stored: tiles.checked_mul(tile_length * tile_width * sample)?,
        })
    }

    /// The plane with each page's pixels padded to a multiple of `align`
    /// bytes in the file (strips only; tiles are already whole).
    pub(super) fn page_aligned(mut self, align: u64) -> Option<Plane> {
        if self.tile_width.is_none() {
            self.stored = self.bytes.checked_next_multiple_of(align)?;
        }
        Some(self)
    }

    pub(super) fn row(&self) -> u64 {
        self.width * self.sample
    }

    /// Entries of its IFD before any extra one: strips have offsets, rows
    /// per strip and counts; tiles their width, length, offsets and counts.
    pub(super) fn entries(&self) -> u64 {
        ENTRIES + u64::from(self.tile_width.is_some())
    }

    /// Bytes of one tile (a tiled plane) or of each full strip.
    pub(super) fn piece_bytes(&self) -> u64 {
        match self.tile_width {
            Some(w) => w * self.rows_per_strip * self.sample,
            None => self.rows_per_strip * self.row(),
        }
    }

    /// The pieces of the file's bytes `[lo, hi)` of this plane's pages,
    /// which start at `base`: runs of level `level`'s `data.bin`, and the
    /// padding of tiles past the plane's edge.
    pub(super) fn pieces(&self, level: usize, base: u64, lo: u64, hi: u64, out: &mut Vec<Piece>) {
        let Some(tile_width) = self.tile_width else {
            if self.stored == self.bytes {
                return out.push(Piece::Data {
                    level,
                    offset: lo - base,
                    len: hi - lo,
                });
            }
            // Each page's strips, then zeros to the next file page.
            let mut at = lo;
            while at < hi {
                let (page, in_page) = ((at - base) / self.stored, (at - base) % self.stored);
                let piece = match in_page < self.bytes {
                    true => Piece::Data {
                        level,
                        offset: page * self.bytes + in_page,
                        len: (self.bytes - in_page).min(hi - at),
                    },
                    false => Piece::Zero((self.stored - in_page).min(hi - at)),
                };
                at += match piece {
                    Piece::Data { len, .. } | Piece::Zero(len) => len,
                };
                out.push(piece);
            }
            return;
        };
        let (tile_row, tile) = (tile_width * self.sample, self.piece_bytes());
        let across = self.width.div_ceil(tile_width);
        let mut at = lo;
        while at < hi {
            let rel = at - base;
            let (page, in_page) = (rel / self.stored, rel % self.stored);
            let (k, in_tile) = (in_page / tile, in_page % tile);
            let (r, c) = (in_tile / tile_row, in_tile % tile_row);
            let y = k / across * self.rows_per_strip + r;
            let x = k % across * tile_row + c;
            let n = (tile_row - c).min(hi - at);
            let data = match y < self.height && x < self.row() {
                true => n.min(self.row() - x),
                false => 0,
            };
            if data > 0 {
                out.push(Piece::Data {
                    level,
                    offset: page * self.bytes + y * self.row() + x,
                    len: data,
                });
            }
            if n > data {
                match out.last_mut() {
                    Some(Piece::Zero(z)) => *z += n - data,
                    _ => out.push(Piece::Zero(n - data)),
                }
            }
            at += n;
        }
    }
}

/// A piece of a TIFF's pixel bytes: a run of one level's `data.bin`, or
/// zeros (the padding of edge tiles).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Piece {
    /// Bytes of a level's `data.bin`.
    Data {
        /// Which level (0: full resolution).
        level: usize,
        /// Where they start in its `data.bin`.
        offset: u64,
        /// How many.
        len: u64,
    },
    /// This many zero bytes.
    Zero(u64),
}

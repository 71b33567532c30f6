//! The virtual TIFFs: an array's `data.tif`, for ImageJ, Fiji, MATLAB's
//! `imread`, GDAL and every image viewer, and an OME-Zarr image's OME-TIFF
//! pyramid ([`Layout::pyramid`], its OME-XML from [`ome`]), whose lower
//! levels are SubIFDs of each page.
//!
//! The last two dimensions are the image plane (rows, columns); each
//! combination of the leading dimensions is one page (an IFD), in C order.
//! Samples are uncompressed, one per pixel, in the array's own type and in
//! the host's byte order (which the header declares), so the pixel data is
//! `data.bin` itself: the file is a prefix (the header and every page's
//! IFD with its strip tables, padded to [`PIXELS_ALIGN`]) followed by
//! `data.bin`, each page's pixels padded with zeros to a multiple of
//! [`PIXELS_ALIGN`] where there are several pages (the kernel reads whole
//! memory pages: so one corrupt chunk fails the reads of its own plane
//! only). A read past the prefix is a list of `data.bin` runs and zeros
//! ([`Layout::pixel_pieces`]), read through the same cache and read path.
//!
//! Strips, not tiles (ImageJ 1.x opens no tiled TIFF): a strip is a run of
//! rows inside one band of chunk rows ([`Layout::of`] is given that band's
//! height), so a strip read decodes only the chunks under it. Strip tables
//! are LONG (LONG8 in BigTIFF), never SHORT. The exception is a plane of an
//! OME-TIFF larger than [`TILE_ABOVE`] on a side: its tiles are about its
//! chunks' plane, padded at the edges, and a tile's rows are runs of
//! `data.bin` ([`Layout::pixel_pieces`]). In a pyramid each level's pixels
//! follow the previous level's. The file is classic TIFF while every offset
//! fits in 32 bits, else BigTIFF.
//!
//! Invariants: the layout is computed from the metadata alone, with checked
//! arithmetic (an array whose file would not fit in a `u64` has none); the
//! prefix is rendered a page at a time, each page's block having the same
//! size (page 0's holds the description's entry too), so any byte of it is
//! found without rendering the others.

mod ifd;
pub mod ome;
mod plane;

use ifd::Writer;
pub use plane::{Piece, Plane};

/// The pixels start at a multiple of this (the page size), so that no
/// page of the file holds both prefix and pixels: a read whose pixels fail
/// can still answer the prefix pages before them, and a read of the
/// pixels gets the error, never a short read that the kernel would take
/// for the end of the file.
pub const PIXELS_ALIGN: u64 = 4096;

/// Tags, in the ascending order an IFD lists them.
const IMAGE_WIDTH: u16 = 256;
const IMAGE_LENGTH: u16 = 257;
const BITS_PER_SAMPLE: u16 = 258;
const COMPRESSION: u16 = 259;
const PHOTOMETRIC: u16 = 262;
const STRIP_OFFSETS: u16 = 273;
const SAMPLES_PER_PIXEL: u16 = 277;
const ROWS_PER_STRIP: u16 = 278;
const STRIP_BYTE_COUNTS: u16 = 279;
const PLANAR_CONFIGURATION: u16 = 284;
const TILE_WIDTH: u16 = 322;
const TILE_LENGTH: u16 = 323;
const TILE_OFFSETS: u16 = 324;
const TILE_BYTE_COUNTS: u16 = 325;
const SUB_IFDS: u16 = 330;
const SAMPLE_FORMAT: u16 = 339;
const NEW_SUBFILE_TYPE: u16 = 254;
const IMAGE_DESCRIPTION: u16 = 270;
/// Entries in every main IFD of a plain `data.tif` (one more in a tiled
/// plane's).
const ENTRIES: u64 = 11;
/// A plane larger than this on a side is in tiles in an OME-TIFF: ImageJ
/// 1.x, which reads no tiles, cannot hold it anyway, and whole-slide
/// viewers read it a region at a time.
pub const TILE_ABOVE: u64 = 8192;
/// The largest side of a tile (1024 x 1024 float64 samples are 8 MiB).
const MAX_TILE_SIDE: u64 = 1024;

/// Field types.
const ASCII: u16 = 2;
const SHORT: u16 = 3;
const LONG: u16 = 4;
const LONG8: u16 = 16;

/// The most bytes a strip holds when a band of chunk rows is larger (a
/// reader allocates a strip at a time).
pub const MAX_STRIP_BYTES: u64 = 8 << 20;
/// The most strips a page has (its tables, 16 MiB at most in BigTIFF, are
/// rendered whole when a read touches them): a page of more than
/// `MAX_STRIPS` x 8 MiB has larger strips.
pub const MAX_STRIPS: u64 = 1 << 20;
/// The most levels a pyramid holds (a multiscale may name more, or one
/// array many times; each level adds to every page's block).
pub const MAX_LEVELS: usize = 32;

/// How the samples are numbers: TIFF's `SampleFormat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sample {
    /// Unsigned integers.
    Unsigned = 1,
    /// Two's complement integers.
    Signed = 2,
    /// IEEE floats.
    Float = 3,
}

/// The TIFF form of a data type: bits per sample and how they are a
/// number, or `None` for a type no TIFF reader shows as pixels.
pub fn sample_of(dt: &crate::zarr::data_type::DataType) -> Option<(u16, Sample)> {
    use crate::zarr::data_type::DataType as D;
    Some(match dt {
        D::Bool | D::UInt8 => (8, Sample::Unsigned),
        D::UInt16 => (16, Sample::Unsigned),
        D::UInt32 => (32, Sample::Unsigned),
        D::UInt64 => (64, Sample::Unsigned),
        D::Int8 => (8, Sample::Signed),
        D::Int16 => (16, Sample::Signed),
        D::Int32 => (32, Sample::Signed),
        D::Int64 => (64, Sample::Signed),
        D::Float16 => (16, Sample::Float),
        // bfloat16 is shown as float32 in data.bin.
        D::BFloat16 | D::Float32 => (32, Sample::Float),
        D::Float64 => (64, Sample::Float),
        D::Complex64
        | D::Complex128
        | D::Raw(_)
        | D::DateTime64 { .. }
        | D::TimeDelta64 { .. }
        | D::FixedBytes(_)
        | D::FixedUtf32(_)
        | D::String
        | D::Bytes
        | D::Struct(_) => return None,
        D::Narrow(n) => return sample_of(&n.shown()),
    })
}

/// One resolution level as [`Layout::pyramid`] takes it: its array's shape
/// and the rows one read of it decodes; with the columns one read decodes,
/// a plane past [`TILE_ABOVE`] on a side is in tiles of about that size.
pub struct LevelShape<'a> {
    /// The level's array shape.
    pub shape: &'a [u64],
    /// Rows one read of it decodes (a chunk's rows).
    pub band: u64,
    /// Columns one read of it decodes, where that is less than a row.
    pub cols: Option<u64>,
}

/// Where everything in one virtual TIFF is: `data.tif` (one level), or an
/// OME-TIFF pyramid (the full resolution in the main IFDs, one SubIFD per
/// lower level on each page, OME-XML in page 0's `ImageDescription`).
///
/// The prefix is the header, the description, then one block per page:
/// its main IFD and strip tables, its SubIFD offsets, and each lower
/// level's IFD and strip tables. Every block but page 0's (which holds one
/// more entry) has the same size. The pixels follow: each level's
/// `data.bin`, level 0 first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// BigTIFF (64-bit offsets) rather than classic TIFF.
    pub big: bool,
    /// Main IFDs: level 0's planes.
    pub pages: u64,
    /// Bits per sample.
    pub bits: u16,
    /// How a sample is a number.
    pub sample: Sample,
    /// Level 0 (full resolution) first.
    pub levels: Vec<Plane>,
    /// Page 0's `ImageDescription`, its NUL included (empty: none).
    description: Vec<u8>,
    /// Where page 0's block starts (after the padded description).
    first: u64,
    /// Bytes of page 0's block, and of each other page's.
    block0: u64,
    block: u64,
    /// Where each level's pixels start in the file.
    pixels: Vec<u64>,
    /// Bytes before the pixel data: where level 0's `data.bin` starts, a
    /// multiple of [`PIXELS_ALIGN`].
    pub prefix: u64,
    /// The file's size.
    pub size: u64,
}

impl Layout {
    /// The `data.tif` of an array of `shape` and sample form `(bits,
    /// sample)` whose chunks (or inner chunks, where a shard is read in
    /// part) span `band` rows: `None` for fewer than two dimensions, an
    /// empty one, a side past `u32::MAX`, or a file past `i64::MAX`.
    pub fn of(shape: &[u64], sample: (u16, Sample), band: u64) -> Option<Layout> {
        Layout::pyramid(
            &[LevelShape {
                shape,
                band,
                cols: None,
            }],
            sample,
            None,
        )
    }

    /// A TIFF of `levels` (level 0 first) with `description` in page 0:
    /// `None` unless every level has the same leading dimensions (the same
    /// pages), none is empty, each side fits a TIFF LONG, and the file
    /// fits in `i64`.
    pub fn pyramid(levels: &[LevelShape], (bits, sample): (u16, Sample), description: Option<&str>) -> Option<Layout> {
        let (first, _) = levels.split_first()?;
        if levels.len() > MAX_LEVELS {
            return None;
        }
        let [leading @ .., _, _] = first.shape else {
            return None;
        };
        if leading.contains(&0) {
            return None;
        }
        let pages = leading.iter().try_fold(1u64, |a, &d| a.checked_mul(d))?;
        let planes = levels
            .iter()
            .map(|l| match l.shape {
                [lead @ .., height, width] if lead == leading => match l.cols {
                    Some(cols) if *height > TILE_ABOVE || *width > TILE_ABOVE => {
                        Plane::tiled(*height, *width, bits, l.band, cols)
                            .or_else(|| Plane::of(*height, *width, bits, l.band))
                    }
                    _ => Plane::of(*height, *width, bits, l.band),
                },
                _ => None,
            })
            .collect::<Option<Vec<Plane>>>()?;
        // Each page's pixels start on a memory page: the kernel reads
        // whole pages, so one corrupt chunk then fails the reads of its
        // own plane only, never of the planes beside it.
        let planes = match pages {
            1 => planes,
            _ => planes
                .into_iter()
                .map(|p| p.page_aligned(PIXELS_ALIGN))
                .collect::<Option<Vec<Plane>>>()?,
        };
        // Held out of line, which a text of at least 8 bytes always is.
        let description: Vec<u8> = description
            .filter(|d| d.len() >= 8)
            .map(|d| d.bytes().chain(std::iter::once(0)).collect())
            .unwrap_or_default();
        let layout = |big: bool| -> Option<Layout> {
            let first = header_len(big).checked_add((description.len() as u64).next_multiple_of(8))?;
            let block = block_len(big, &planes, false)?;
            let block0 = block_len(big, &planes, !description.is_empty())?;
            let blocks = first
                .checked_add(block0)?
                .checked_add((pages - 1).checked_mul(block)?)?;
            let prefix = blocks.checked_next_multiple_of(PIXELS_ALIGN)?;
            let mut pixels = Vec::with_capacity(planes.len());
            let mut at = prefix;
            for p in &planes {
                pixels.push(at);
                at = at.checked_add(p.stored.checked_mul(pages)?)?;
            }
            Some(Layout {
                big,
                pages,
                bits,
                sample,
                levels: planes.clone(),
                description: description.clone(),
                first,
                block0,
                block,
                pixels,
                prefix,
                size: at,
            })
        };
        // No file is read past i64::MAX (off_t), as data.bin is not.
        match layout(false) {
            Some(classic) if classic.size <= u64::from(u32::MAX) => Some(classic),
            _ => layout(true).filter(|l| l.size <= i64::MAX as u64),
        }
    }

    /// Where page `page`'s block starts, and its size.
    fn page_span(&self, page: u64) -> (u64, u64) {
        match page {
            0 => (self.first, self.block0),
            p => (self.first + self.block0 + (p - 1) * self.block, self.block),
        }
    }

    /// The pixel bytes `[start, end)` of the file (past the prefix), in
    /// order, as pieces of the levels' `data.bin` and padding.
    pub fn pixel_pieces(&self, start: u64, end: u64) -> Vec<Piece> {
        let mut pieces = Vec::new();
        for (level, (&at, plane)) in self.pixels.iter().zip(&self.levels).enumerate() {
            let stop = at + plane.stored * self.pages;
            let (lo, hi) = (start.max(at), end.min(stop));
            if lo < hi {
                plane.pieces(level, at, lo, hi, &mut pieces);
            }
        }
        pieces
    }

    /// Fill `out` with the prefix's bytes from `offset` (within the prefix).
    pub fn read_prefix(&self, offset: u64, out: &mut [u8]) {
        let end = offset.saturating_add(out.len() as u64).min(self.prefix);
        let mut at = offset;
        let mut put = |at: u64, from: u64, bytes: &[u8], stop: u64| {
            let dst = (at - offset) as usize;
            out[dst..dst + (stop - at) as usize].copy_from_slice(&bytes[(at - from) as usize..(stop - from) as usize]);
        };
        if at < self.first {
            let mut head = self.header();
            head.extend_from_slice(&self.description);
            head.resize(self.first as usize, 0);
            let stop = end.min(self.first);
            put(at, 0, &head, stop);
            at = stop;
        }
        let blocks = self.first + self.block0 + (self.pages - 1) * self.block;
        while at < end {
            if at >= blocks {
                // The padding before the pixels.
                out[(at - offset) as usize..(end - offset) as usize].fill(0);
                break;
            }
            let page = match at - self.first {
                x if x < self.block0 => 0,
                x => 1 + (x - self.block0) / self.block,
            };
            let (start, len) = self.page_span(page);
            let stop = end.min(start + len);
            let bytes = self.page_block(page, start, at, stop);
            put(at, at, &bytes, stop);
            at = stop;
        }
    }

    fn header(&self) -> Vec<u8> {
        let mut h = Vec::with_capacity(16);
        h.extend(if cfg!(target_endian = "little") { *b"II" } else { *b"MM" });
        match self.big {
            false => {
                h.extend(42u16.to_ne_bytes());
                h.extend((self.first as u32).to_ne_bytes());
            }
            true => {
                h.extend(43u16.to_ne_bytes());
                h.extend(8u16.to_ne_bytes());
                h.extend(0u16.to_ne_bytes());
                h.extend(self.first.to_ne_bytes());
            }
        }
        h
    }

    /// The bytes `[lo, hi)` of page `page`'s block, which starts at file
    /// offset `at`: only they are rendered (a block's tables can be
    /// hundreds of MiB, and a read only a page of them).
    fn page_block(&self, page: u64, at: u64, lo: u64, hi: u64) -> Vec<u8> {
        let big = self.big;
        let (_, len) = self.page_span(page);
        let mut w = Writer::window(big, at, lo, hi);
        let subs = self.levels.len() as u64 - 1;
        let describe = page == 0 && !self.description.is_empty();
        // Every length here was checked when the layout was made.
        let tables = |plane: &Plane| tables_len(big, plane.strips).unwrap_or_default();
        let main_len = ifd_len(big, main_entries(&self.levels[0], subs, describe)) + tables(&self.levels[0]);
        let subifds_at = at + main_len;
        let mut sub_at = subifds_at + subifd_table_len(big, subs);
        let mut sub_offsets = Vec::new();
        for plane in &self.levels[1..] {
            sub_offsets.push(sub_at);
            sub_at += ifd_len(big, plane.entries() + 1) + tables(plane);
        }
        let next = if page + 1 < self.pages {
            self.page_span(page + 1).0
        } else {
            0
        };
        let extra = Extra {
            // The description follows the header.
            description: describe.then_some((self.description.len() as u64, header_len(big))),
            subifds: (subs > 0).then_some((subs, subifds_at, &sub_offsets[..])),
            reduced: false,
        };
        self.ifd(&mut w, 0, page, at, next, &extra);
        if subs > 1 {
            for &o in &sub_offsets {
                w.offset(o);
            }
        }
        for (level, &o) in sub_offsets.iter().enumerate() {
            let reduced = Extra {
                description: None,
                subifds: None,
                reduced: true,
            };
            self.ifd(&mut w, level + 1, page, o, 0, &reduced);
        }
        debug_assert_eq!(w.pos, at + len);
        debug_assert_eq!(w.out.len() as u64, hi.min(at + len) - lo.max(at));
        w.out
    }

    /// One IFD of level `level` for page `page`, at `at`, and its strip
    /// tables after it.
    fn ifd(&self, w: &mut Writer, level: usize, page: u64, at: u64, next: u64, extra: &Extra) {
        let big = self.big;
        let plane = &self.levels[level];
        let entries = match (extra.reduced, &extra.subifds) {
            (true, _) => plane.entries() + 1,
            (false, subifds) => main_entries(plane, subifds.map_or(0, |s| s.0), extra.description.is_some()),
        };
        let tables_out_of_line = plane.strips > 1;
        let offsets_at = at + ifd_len(big, entries);
        let counts_at = offsets_at + plane.strips * w.offset_size();
        let strip_type = if big { LONG8 } else { LONG };
        w.count(entries);
        if extra.reduced {
            w.entry(NEW_SUBFILE_TYPE, LONG, 1, &[1]); // a reduced-resolution image
        }
        w.entry(IMAGE_WIDTH, LONG, 1, &[plane.width]);
        w.entry(IMAGE_LENGTH, LONG, 1, &[plane.height]);
        w.entry(BITS_PER_SAMPLE, SHORT, 1, &[u64::from(self.bits)]);
        w.entry(COMPRESSION, SHORT, 1, &[1]);
        w.entry(PHOTOMETRIC, SHORT, 1, &[1]); // BlackIsZero
        if let Some((len, where_)) = extra.description {
            w.pointer(IMAGE_DESCRIPTION, ASCII, len, where_);
        }
        let pixels = self.pixels[level] + page * plane.stored;
        let (row, piece) = (plane.row(), plane.piece_bytes());
        let offset = |s: u64| pixels + s * piece;
        let count = |s: u64| match plane.tile_width {
            Some(_) => piece,
            None => (plane.height - s * plane.rows_per_strip).min(plane.rows_per_strip) * row,
        };
        // In the entry itself when there is one strip; else out of line.
        let (offsets, counts) = ([offset(0)], [count(0)]);
        let (offsets_tag, counts_tag) = match plane.tile_width {
            Some(_) => (TILE_OFFSETS, TILE_BYTE_COUNTS),
            None => (STRIP_OFFSETS, STRIP_BYTE_COUNTS),
        };
        let table = |w: &mut Writer, tag: u16, values: &[u64], at: u64| match tables_out_of_line {
            true => w.pointer(tag, strip_type, plane.strips, at),
            false => w.entry(tag, strip_type, plane.strips, values),
        };
        if plane.tile_width.is_none() {
            table(w, offsets_tag, &offsets, offsets_at);
        }
        w.entry(SAMPLES_PER_PIXEL, SHORT, 1, &[1]);
        if plane.tile_width.is_none() {
            w.entry(ROWS_PER_STRIP, LONG, 1, &[plane.rows_per_strip]);
            table(w, counts_tag, &counts, counts_at);
        }
        w.entry(PLANAR_CONFIGURATION, SHORT, 1, &[1]);
        if let Some(tile_width) = plane.tile_width {
            w.entry(TILE_WIDTH, LONG, 1, &[tile_width]);
            w.entry(TILE_LENGTH, LONG, 1, &[plane.rows_per_strip]);
            table(w, offsets_tag, &offsets, offsets_at);
            table(w, counts_tag, &counts, counts_at);
        }
        match extra.subifds {
            Some((1, _, offsets)) => w.entry(SUB_IFDS, strip_type, 1, offsets),
            Some((n, table, _)) => w.pointer(SUB_IFDS, strip_type, n, table),
            None => {}
        }
        w.entry(SAMPLE_FORMAT, SHORT, 1, &[self.sample as u64]);
        w.offset(next);
        if tables_out_of_line {
            w.table(plane.strips, offset);
            w.table(plane.strips, count);
        }
    }
}

/// The entries an IFD holds beyond the base ones.
struct Extra<'a> {
    /// `ImageDescription`: its length and where it is.
    description: Option<(u64, u64)>,
    /// `SubIFDs`: how many, where their table is, and their offsets.
    subifds: Option<(u64, u64, &'a [u64])>,
    /// `NewSubfileType` = reduced resolution (a SubIFD).
    reduced: bool,
}

fn header_len(big: bool) -> u64 {
    if big { 16 } else { 8 }
}

fn ifd_len(big: bool, entries: u64) -> u64 {
    match big {
        false => 2 + 12 * entries + 4,
        true => 8 + 20 * entries + 8,
    }
}

/// Entries of a main IFD of `plane`: its base ones, `SubIFDs` when there
/// are lower levels, and `ImageDescription` on page 0 when there is one.
fn main_entries(plane: &Plane, subs: u64, describe: bool) -> u64 {
    plane.entries() + u64::from(subs > 0) + u64::from(describe)
}

/// A page's two strip tables, unless each is one offset, which its entry
/// holds (an entry's value field holds one LONG in classic TIFF, one LONG8
/// in BigTIFF).
fn tables_len(big: bool, strips: u64) -> Option<u64> {
    match strips {
        1 => Some(0),
        n => n.checked_mul(2 * if big { 8 } else { 4 }),
    }
}

/// A page's table of SubIFD offsets, unless it is one offset.
fn subifd_table_len(big: bool, subs: u64) -> u64 {
    match subs {
        0 | 1 => 0,
        n => n * if big { 8 } else { 4 },
    }
}

/// One page's block (see [`Layout`]), with page 0's description entry when
/// `describe`.
fn block_len(big: bool, planes: &[Plane], describe: bool) -> Option<u64> {
    let subs = planes.len() as u64 - 1;
    let mut len = ifd_len(big, main_entries(&planes[0], subs, describe))
        .checked_add(tables_len(big, planes[0].strips)?)?
        .checked_add(subifd_table_len(big, subs))?;
    for p in &planes[1..] {
        len = len
            .checked_add(ifd_len(big, p.entries() + 1))?
            .checked_add(tables_len(big, p.strips)?)?;
    }
    Some(len)
}

#[cfg(test)]
mod tests;

//! The virtual TIFF of an array (`data.tif`), for ImageJ, Fiji, MATLAB's
//! `imread`, GDAL and every image viewer.
//!
//! The last two dimensions are the image plane (rows, columns); each
//! combination of the leading dimensions is one page (an IFD), in C order.
//! Samples are uncompressed, one per pixel, in the array's own type and in
//! the host's byte order (which the header declares), so the pixel data is
//! `data.bin` itself, byte for byte: the file is a prefix (the header and
//! every page's IFD with its strip tables) followed by `data.bin`. A read
//! past the prefix is a `data.bin` read at the same offset less the
//! prefix, through the same cache and read path.
//!
//! Strips, not tiles (ImageJ 1.x opens no tiled TIFF): a strip is a run of
//! rows inside one band of chunk rows ([`Layout::of`] is given that band's
//! height), so a strip read decodes only the chunks under it. Strip tables
//! are LONG (LONG8 in BigTIFF), never SHORT. The file is classic TIFF
//! while every offset fits in 32 bits, else BigTIFF.
//!
//! Invariants: the layout is computed from the metadata alone, with checked
//! arithmetic (an array whose file would not fit in a `u64` has none); the
//! prefix is rendered a page at a time, each page's block having the same
//! size, so any byte of it is found without rendering the others.

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
const SAMPLE_FORMAT: u16 = 339;
/// Entries in every IFD.
const ENTRIES: u64 = 11;

/// Field types.
const SHORT: u16 = 3;
const LONG: u16 = 4;
const LONG8: u16 = 16;

/// The most bytes a strip holds when a band of chunk rows is larger (a
/// reader allocates a strip at a time).
pub const MAX_STRIP_BYTES: u64 = 8 << 20;

/// How the samples are numbers: TIFF's `SampleFormat`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sample {
    Unsigned = 1,
    Signed = 2,
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
    })
}

/// Where everything in one `data.tif` is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// BigTIFF (64-bit offsets) rather than classic TIFF.
    pub big: bool,
    pub width: u64,
    pub height: u64,
    pub pages: u64,
    pub bits: u16,
    pub sample: Sample,
    pub rows_per_strip: u64,
    /// Strips in each page.
    pub strips: u64,
    /// Bytes of one page's block in the prefix: its IFD and its strip
    /// tables.
    block: u64,
    /// Bytes before the pixel data (header and IFDs): where `data.bin`
    /// starts in the file.
    pub prefix: u64,
    /// The file's size.
    pub size: u64,
}

impl Layout {
    /// The TIFF of an array of `shape` and sample form `(bits, sample)`
    /// whose chunks (or inner chunks, where a shard is read in part) span
    /// `band` rows: `None` for fewer than two dimensions, an empty one, or
    /// a file past `u64`.
    pub fn of(shape: &[u64], (bits, sample): (u16, Sample), band: u64) -> Option<Layout> {
        let [leading @ .., height, width] = shape else {
            return None;
        };
        let (height, width) = (*height, *width);
        if height == 0 || width == 0 || leading.contains(&0) {
            return None;
        }
        let pages = leading.iter().try_fold(1u64, |a, &d| a.checked_mul(d))?;
        let row = width.checked_mul(u64::from(bits / 8))?;
        let plane = row.checked_mul(height)?;
        let data = plane.checked_mul(pages)?;
        let rows_per_strip = band.clamp(1, height).min((MAX_STRIP_BYTES / row).max(1));
        let strips = height.div_ceil(rows_per_strip);
        let layout = |big: bool| -> Option<Layout> {
            let block = block_len(big, strips)?;
            let prefix = header_len(big).checked_add(pages.checked_mul(block)?)?;
            Some(Layout {
                big,
                width,
                height,
                pages,
                bits,
                sample,
                rows_per_strip,
                strips,
                block,
                prefix,
                size: prefix.checked_add(data)?,
            })
        };
        match layout(false) {
            Some(classic) if classic.size <= u64::from(u32::MAX) => Some(classic),
            _ => layout(true),
        }
    }

    /// Bytes of one page's pixels.
    fn plane(&self) -> u64 {
        self.width * self.height * u64::from(self.bits / 8)
    }

    /// Fill `out` with the prefix's bytes from `offset` (within the prefix).
    pub fn read_prefix(&self, offset: u64, out: &mut [u8]) {
        let end = offset.saturating_add(out.len() as u64).min(self.prefix);
        let header = header_len(self.big);
        let mut at = offset;
        if at < header {
            let h = self.header();
            let stop = end.min(header);
            out[..(stop - at) as usize].copy_from_slice(&h[at as usize..stop as usize]);
            at = stop;
        }
        let block = self.block;
        while at < end {
            let page = (at - header) / block;
            let start = header + page * block;
            let bytes = self.page_block(page, start);
            let stop = end.min(start + block);
            let dst = (at - offset) as usize;
            out[dst..dst + (stop - at) as usize]
                .copy_from_slice(&bytes[(at - start) as usize..(stop - start) as usize]);
            at = stop;
        }
    }

    fn header(&self) -> Vec<u8> {
        let mut h = Vec::with_capacity(16);
        h.extend(if cfg!(target_endian = "little") { *b"II" } else { *b"MM" });
        match self.big {
            false => {
                h.extend(42u16.to_ne_bytes());
                h.extend((header_len(false) as u32).to_ne_bytes());
            }
            true => {
                h.extend(43u16.to_ne_bytes());
                h.extend(8u16.to_ne_bytes());
                h.extend(0u16.to_ne_bytes());
                h.extend(header_len(true).to_ne_bytes());
            }
        }
        h
    }

    /// Page `page`'s IFD and strip tables, which start at file offset `at`.
    fn page_block(&self, page: u64, at: u64) -> Vec<u8> {
        let big = self.big;
        let block = self.block;
        let mut w = Writer {
            big,
            out: Vec::with_capacity(block as usize),
        };
        let ifd_len = ifd_len(big);
        let tables_out_of_line = self.strips > 1;
        let offsets_at = at + ifd_len;
        let counts_at = offsets_at + self.strips * w.offset_size();
        let strip_type = if big { LONG8 } else { LONG };
        w.count(ENTRIES);
        w.entry(IMAGE_WIDTH, LONG, 1, &[self.width]);
        w.entry(IMAGE_LENGTH, LONG, 1, &[self.height]);
        w.entry(BITS_PER_SAMPLE, SHORT, 1, &[u64::from(self.bits)]);
        w.entry(COMPRESSION, SHORT, 1, &[1]);
        w.entry(PHOTOMETRIC, SHORT, 1, &[1]); // BlackIsZero
        let pixels = self.prefix + page * self.plane();
        let row = self.width * u64::from(self.bits / 8);
        let strip_offsets: Vec<u64> = (0..self.strips)
            .map(|s| pixels + s * self.rows_per_strip * row)
            .collect();
        let strip_counts: Vec<u64> = (0..self.strips)
            .map(|s| (self.height - s * self.rows_per_strip).min(self.rows_per_strip) * row)
            .collect();
        match tables_out_of_line {
            true => w.pointer(STRIP_OFFSETS, strip_type, self.strips, offsets_at),
            false => w.entry(STRIP_OFFSETS, strip_type, self.strips, &strip_offsets),
        }
        w.entry(SAMPLES_PER_PIXEL, SHORT, 1, &[1]);
        w.entry(ROWS_PER_STRIP, LONG, 1, &[self.rows_per_strip]);
        match tables_out_of_line {
            true => w.pointer(STRIP_BYTE_COUNTS, strip_type, self.strips, counts_at),
            false => w.entry(STRIP_BYTE_COUNTS, strip_type, self.strips, &strip_counts),
        }
        w.entry(PLANAR_CONFIGURATION, SHORT, 1, &[1]);
        w.entry(SAMPLE_FORMAT, SHORT, 1, &[self.sample as u64]);
        let next = if page + 1 < self.pages { at + block } else { 0 };
        w.offset(next);
        if tables_out_of_line {
            for v in strip_offsets.iter().chain(&strip_counts) {
                w.offset(*v);
            }
        }
        debug_assert_eq!(w.out.len() as u64, block);
        w.out
    }
}

fn header_len(big: bool) -> u64 {
    if big { 16 } else { 8 }
}

fn ifd_len(big: bool) -> u64 {
    match big {
        false => 2 + 12 * ENTRIES + 4,
        true => 8 + 20 * ENTRIES + 8,
    }
}

/// One page's block: its IFD, and its two strip tables unless each is one
/// offset, which its entry holds (an entry's value field holds one LONG in
/// classic TIFF, one LONG8 in BigTIFF).
fn block_len(big: bool, strips: u64) -> Option<u64> {
    let tables = match strips {
        1 => 0,
        n => n.checked_mul(2 * if big { 8 } else { 4 })?,
    };
    ifd_len(big).checked_add(tables)
}

/// IFD entries in the host's byte order, classic or BigTIFF.
struct Writer {
    big: bool,
    out: Vec<u8>,
}

impl Writer {
    fn offset_size(&self) -> u64 {
        if self.big { 8 } else { 4 }
    }

    fn count(&mut self, n: u64) {
        match self.big {
            false => self.out.extend((n as u16).to_ne_bytes()),
            true => self.out.extend(n.to_ne_bytes()),
        }
    }

    fn offset(&mut self, v: u64) {
        match self.big {
            false => self.out.extend((v as u32).to_ne_bytes()),
            true => self.out.extend(v.to_ne_bytes()),
        }
    }

    fn head(&mut self, tag: u16, ty: u16, count: u64) {
        self.out.extend(tag.to_ne_bytes());
        self.out.extend(ty.to_ne_bytes());
        self.offset(count);
    }

    /// An entry whose values fit in its value field, left-justified.
    fn entry(&mut self, tag: u16, ty: u16, count: u64, values: &[u64]) {
        self.head(tag, ty, count);
        let field = self.offset_size() as usize;
        let mut value = Vec::with_capacity(field);
        for &v in values {
            match ty {
                SHORT => value.extend((v as u16).to_ne_bytes()),
                LONG => value.extend((v as u32).to_ne_bytes()),
                _ => value.extend(v.to_ne_bytes()),
            }
        }
        value.resize(field, 0);
        self.out.extend(value);
    }

    /// An entry whose values are elsewhere, at `at`.
    fn pointer(&mut self, tag: u16, ty: u16, count: u64, at: u64) {
        self.head(tag, ty, count);
        self.offset(at);
    }
}

#[cfg(test)]
mod tests;

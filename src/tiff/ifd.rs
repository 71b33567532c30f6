//! The bytes of IFD entries, in the host's byte order, classic TIFF or
//! BigTIFF: counts and offsets of 32 or 64 bits, values that fit in an
//! entry held in it, left-justified, longer ones pointed to.
//!
//! Invariant: a [`Writer`] keeps only the bytes of its window of the file,
//! and a strip table ([`Writer::table`]) computes only the values that
//! overlap it: what a read costs is what it returns, however long the
//! tables of a page are.

use super::{LONG, SHORT};

/// IFD entries in the host's byte order, classic or BigTIFF, at file
/// offset `pos`, keeping the bytes of `[lo, hi)` in `out`.
pub(super) struct Writer {
    pub big: bool,
    pub out: Vec<u8>,
    /// The file offset of the next byte written.
    pub pos: u64,
    /// The window kept.
    pub lo: u64,
    pub hi: u64,
}

impl Writer {
    /// A writer at file offset `at` that keeps the bytes of `[lo, hi)`.
    pub fn window(big: bool, at: u64, lo: u64, hi: u64) -> Writer {
        Writer {
            big,
            out: Vec::with_capacity(hi.saturating_sub(lo).min(1 << 20) as usize),
            pos: at,
            lo,
            hi,
        }
    }

    /// Write `bytes` at `pos`: what lies in the window is kept.
    fn put(&mut self, bytes: &[u8]) {
        let (start, end) = (self.pos, self.pos + bytes.len() as u64);
        let (a, b) = (start.max(self.lo), end.min(self.hi));
        if a < b {
            self.out
                .extend_from_slice(&bytes[(a - start) as usize..(b - start) as usize]);
        }
        self.pos = end;
    }

    pub fn offset_size(&self) -> u64 {
        if self.big { 8 } else { 4 }
    }

    pub fn count(&mut self, n: u64) {
        match self.big {
            false => self.put(&(n as u16).to_ne_bytes()),
            true => self.put(&n.to_ne_bytes()),
        }
    }

    pub fn offset(&mut self, v: u64) {
        match self.big {
            false => self.put(&(v as u32).to_ne_bytes()),
            true => self.put(&v.to_ne_bytes()),
        }
    }

    /// A table of `n` offsets (or counts), the `s`-th `value(s)`: only
    /// those that overlap the window are computed.
    pub fn table(&mut self, n: u64, value: impl Fn(u64) -> u64) {
        let size = self.offset_size();
        let start = self.pos;
        let end = start + n * size;
        let first = (self.lo.saturating_sub(start) / size).min(n);
        let last = if self.hi >= end {
            n
        } else {
            (self.hi.saturating_sub(start)).div_ceil(size).min(n)
        }
        .max(first);
        self.pos = start + first * size;
        for s in first..last {
            self.offset(value(s));
        }
        self.pos = end;
    }

    pub fn head(&mut self, tag: u16, ty: u16, count: u64) {
        self.put(&tag.to_ne_bytes());
        self.put(&ty.to_ne_bytes());
        self.offset(count);
    }

    /// An entry whose values fit in its value field, left-justified.
    pub fn entry(&mut self, tag: u16, ty: u16, count: u64, values: &[u64]) {
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
        self.put(&value);
    }

    /// An entry whose values are elsewhere, at `at`.
    pub fn pointer(&mut self, tag: u16, ty: u16, count: u64, at: u64) {
        self.head(tag, ty, count);
        self.offset(at);
    }
}

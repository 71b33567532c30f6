//! The bytes of IFD entries, in the host's byte order, classic TIFF or
//! BigTIFF: counts and offsets of 32 or 64 bits, values that fit in an
//! entry held in it, left-justified, longer ones pointed to.

use super::{LONG, SHORT};

/// IFD entries in the host's byte order, classic or BigTIFF.
pub(super) struct Writer {
    pub big: bool,
    pub out: Vec<u8>,
}

impl Writer {
    pub fn offset_size(&self) -> u64 {
        if self.big { 8 } else { 4 }
    }

    pub fn count(&mut self, n: u64) {
        match self.big {
            false => self.out.extend((n as u16).to_ne_bytes()),
            true => self.out.extend(n.to_ne_bytes()),
        }
    }

    pub fn offset(&mut self, v: u64) {
        match self.big {
            false => self.out.extend((v as u32).to_ne_bytes()),
            true => self.out.extend(v.to_ne_bytes()),
        }
    }

    pub fn head(&mut self, tag: u16, ty: u16, count: u64) {
        self.out.extend(tag.to_ne_bytes());
        self.out.extend(ty.to_ne_bytes());
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
        self.out.extend(value);
    }

    /// An entry whose values are elsewhere, at `at`.
    pub fn pointer(&mut self, tag: u16, ty: u16, count: u64, at: u64) {
        self.head(tag, ty, count);
        self.offset(at);
    }
}

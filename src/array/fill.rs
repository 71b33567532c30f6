//! The fill of an absent chunk, made for the bytes a read asks for
//! (issue #29): the decoded-chunk cache holds an absent chunk of
//! fixed-size elements as an empty buffer, and readers ask [`FillSpec`]
//! for its bytes, so a 2 GiB chunk that is not in the store costs only
//! what is read.

use super::ReadData;
use crate::cache::Chunk;

/// The bytes of an absent chunk: its fill value over and over.
#[derive(Debug, Clone)]
pub(super) struct FillSpec {
    /// One element's fill.
    pub(super) pattern: Vec<u8>,
    pub(super) elements: u64,
    /// The decoded chunk's size.
    pub(super) total: u64,
    /// Whether the cache holds absent chunks as an empty buffer (fixed-size
    /// elements) rather than the fill itself.
    pub(super) fixed: bool,
}

impl FillSpec {
    /// The whole chunk's fill.
    pub(super) fn whole(&self) -> Vec<u8> {
        crate::zarr::data_type::FillValue(self.pattern.clone()).repeat(self.elements as usize)
    }

    /// Bytes `[offset, offset + size)` of a cached chunk, clipped to it; of
    /// the fill when the cache holds the absent-chunk sentinel.
    pub(super) fn slice(&self, chunk: Chunk, offset: u64, size: u32) -> ReadData {
        if !(self.fixed && chunk.is_empty()) {
            return ReadData::slice(chunk, offset, size);
        }
        let start = offset.min(self.total);
        let end = start.saturating_add(u64::from(size)).min(self.total);
        let mut out = vec![0u8; (end - start) as usize];
        Self::fill(&self.pattern, start, &mut out);
        ReadData::owned(out)
    }

    /// Write the fill's bytes from byte `at` of a chunk into `out`.
    pub(super) fn fill(pattern: &[u8], at: u64, out: &mut [u8]) {
        if pattern.iter().all(|&b| b == 0) {
            return out.fill(0);
        }
        let n = pattern.len() as u64;
        for (i, b) in out.iter_mut().enumerate() {
            *b = pattern[((at + i as u64) % n) as usize];
        }
    }
}

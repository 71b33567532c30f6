//! The fill of an absent chunk, made for the bytes a read asks for:
//! the decoded-chunk cache holds an absent chunk of
//! fixed-size elements as an empty buffer ([`is_sentinel`]), and readers
//! make the fill for the bytes they need, so a 2 GiB chunk that is not in
//! the store costs only what is read.

use super::ReadData;
use crate::cache::Chunk;
use crate::zarr::metadata::ArrayMetadata;

/// Whether cached `chunk` of an array of `m` stands for an absent chunk.
pub(super) fn is_sentinel(m: &ArrayMetadata, chunk: &Chunk) -> bool {
    chunk.is_empty() && m.data_type.element_size().is_some()
}

/// Bytes `[offset, offset + size)` of cached chunk `index` of an array of
/// `m`, clipped to it; of the fill when the cache holds the sentinel.
pub(super) fn slice(m: &ArrayMetadata, index: u64, chunk: Chunk, offset: u64, size: u32) -> ReadData {
    if !is_sentinel(m, &chunk) {
        return ReadData::slice(chunk, offset, size);
    }
    let (start, end) = super::window(offset, size, m.chunk_bytes_of(index));
    let mut out = vec![0u8; (end - start) as usize];
    fill(&m.fill_value.0, start, &mut out);
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

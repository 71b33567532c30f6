//! Reading files of the mounted layout: each one is a call into the array
//! layer ([`crate::array::Array`]); what stays here is what only a
//! filesystem needs (sequential-reader detection for prefetch, sharing a
//! shard read's decoding with a worker, and the non-blocking reply path of
//! the FUSE adapter).

use super::{FsError, Inode, NzFs, ReadData};
use crate::cache::Chunk;

impl NzFs {
    /// The size of `data.bin` of array `node`.
    pub(super) fn data_size(&self, node: usize) -> Result<u64, FsError> {
        Ok(self.array(node)?.0.size())
    }

    /// Read bytes `[offset, offset + size)` of `data.bin` of array `node`.
    pub(super) fn read_data(&self, node: usize, offset: u64, size: u32) -> Result<ReadData, FsError> {
        self.note_flat_read(node, offset, u64::from(size));
        Ok(self.array(node)?.0.read_bytes(offset, size)?)
    }

    /// Read bytes `[offset, offset + size)` of chunk file `index` of `node`.
    pub(super) fn read_chunk(&self, node: usize, index: u64, offset: u64, size: u32) -> Result<ReadData, FsError> {
        let (array, names) = self.array(node)?;
        if index >= names.count() {
            return Err(FsError::NotFound);
        }
        self.note_chunk_read(node, array, index, offset);
        let share = |work| self.share_decodes(node, work);
        Ok(array.read_chunk_bytes_sharing(index, offset, size, &share)?)
    }

    /// Tell prefetch of a read of chunk file `index` of `node` at `offset`:
    /// the start of a whole chunk may continue a sequential run.
    fn note_chunk_read(&self, node: usize, array: &crate::array::Array, index: u64, offset: u64) {
        if offset == 0 && !array.reads_partially() {
            self.note_chunk_start(node, index);
        }
    }

    /// The whole decoded chunk `index` of array `node`, through the cache.
    pub fn chunk(&self, node: usize, index: u64) -> Result<Chunk, FsError> {
        Ok(self.array(node)?.0.read_chunk(index)?)
    }

    /// Read like [`NzFs::read`], but hand the result to `then` instead of
    /// returning it, without ever blocking on a decode another thread runs:
    /// a read of a chunk being decoded is answered by the decoding thread.
    pub fn read_then(
        &self,
        ino: u64,
        offset: u64,
        size: u32,
        then: impl FnOnce(Result<ReadData, FsError>) + Send + 'static,
    ) {
        let Some(Inode::Chunk { node, index }) = Inode::from_ino(ino) else {
            return then(self.read(ino, offset, size));
        };
        let (array, _) = match self.array(node) {
            Ok((array, names)) if index < names.count() => (array, names),
            _ => return then(self.read(ino, offset, size)),
        };
        self.note_chunk_read(node, array, index, offset);
        let share = |work| self.share_decodes(node, work);
        array.read_chunk_bytes_then(index, offset, size, &share, move |r| then(r.map_err(FsError::from)));
    }
}

//! Reading files of the mounted layout: each one is a call into the array
//! layer ([`crate::array::Array`]); the composite files (`.nc`, TIFFs) are
//! put together from pieces of it in `compose.rs`. What stays here is what
//! only a filesystem needs (sequential-reader detection for prefetch, sharing a
//! shard read's decoding with a worker). There is one read path,
//! [`NzFs::read_then`], which hands its result to a callback so that the
//! FUSE adapter's threads never wait on a decode another thread runs;
//! [`NzFs::read`] waits for it.

use super::view::{FileView, Then};
use super::{DATA_NAME, FsError, Inode, NzFs, ReadData};
use crate::store::Access;

/// A chunk file's content, for a backing file ([`NzFs::chunk_content`]).
pub enum ChunkContent {
    /// The decoded chunk.
    Decoded(Chunk),
    /// An absent chunk: `len` bytes of its fill, all zero or not.
    Fill {
        /// The chunk file's size.
        len: u64,
        /// Whether every byte of the fill is zero.
        zero: bool,
    },
}
use crate::cache::Chunk;

impl NzFs {
    /// The size of `data.bin` of array `node`.
    pub(super) fn data_size(&self, node: usize) -> Result<u64, FsError> {
        let bytes = self.array_files(node)?.0.flat_bytes();
        match u64::try_from(bytes).ok().filter(|&b| b <= i64::MAX as u64) {
            Some(b) => Ok(b),
            None => Err(FsError::TooLarge {
                path: self.hierarchy().nodes[node].path.clone(),
                what: "data.bin",
                bytes,
            }),
        }
    }

    /// Tell prefetch of a read of chunk file `index` of `node` at `offset`:
    /// the start of a whole chunk may continue a sequential run. A read of
    /// the start is also where a reader begins the file, as an open would
    /// (which the kernel answers itself without passthrough): the chunk's
    /// cached decode, perhaps made ahead of it by prefetch, is checked
    /// against its store object now ([`NzFs::recheck_open`]'s check; a stat
    /// of a local object, nothing for a remote one).
    fn note_chunk_read(&self, node: usize, array: &crate::array::Array, index: u64, offset: u64) {
        if offset == 0 && !array.reads_partially() {
            array.recheck(index, true);
            self.note_chunk_start(node, index);
        }
    }

    /// What file `ino` shows of an array's values as the chunks hold
    /// them: the array's node, the chunk (`None`: all of it, `data.bin`),
    /// the file's size and its path in the mount; `None` for every other
    /// file.
    pub fn array_values_file(&self, ino: u64) -> Option<(usize, Option<u64>, u64, String)> {
        let (node, chunk, name) = match self.inode(ino).ok()? {
            Inode::Chunk { node, index } => (node, Some(index), self.info[node].chunk_names.as_ref()?.name(index)),
            Inode::File(kind, n) if kind.view().is_array_values() => (n, None, DATA_NAME.to_string()),
            _ => return None,
        };
        let size = self.getattr(ino).ok()?.size;
        let path = match self.hierarchy().nodes[node].path.as_str() {
            "" => name,
            parent => format!("{parent}/{name}"),
        };
        Some((node, chunk, size, path))
    }

    /// Whether `ino` takes writes on a writable mount: a node's directory
    /// (new files and groups in it, its files unlinked, itself removed)
    /// and an array's values (its `data.bin` and chunk files). Every other
    /// file is shown without the write bit.
    pub fn takes_writes(&self, ino: u64) -> bool {
        match self.inode(ino) {
            Ok(Inode::Node(_) | Inode::Chunk { .. }) => true,
            Ok(Inode::File(kind, _)) => kind.view().is_array_values(),
            _ => false,
        }
    }

    /// The array of node `n`, when it is one the mount decodes.
    pub fn decoded_array(&self, n: usize) -> Option<&crate::array::Array> {
        self.array(n).ok().map(|(a, _)| a)
    }

    /// The whole decoded chunk `index` of array `node`, through the cache.
    pub fn chunk(&self, node: usize, index: u64) -> Result<Chunk, FsError> {
        Ok(self.array(node)?.0.read_chunk(index)?)
    }

    /// At an open of `ino`: check the cached decode of the chunk it shows
    /// against the store object now, and drop it when the object changed
    /// (a stale page must not outlive it). Files other than chunk files
    /// are checked as they are read ([`crate::array::RECHECK_AFTER`]).
    pub fn recheck_open(&self, ino: u64) -> crate::array::Check {
        match self.inode(ino).ok() {
            Some(Inode::Chunk { node, index }) => match self.array(node) {
                Ok((array, names)) if index < names.count() => array.recheck(index, true),
                _ => crate::array::Check::Unknown,
            },
            _ => crate::array::Check::Untracked,
        }
    }

    /// Like [`NzFs::chunk`], but an absent chunk (which the cache holds at
    /// no cost) comes back as what its fill is, not as its bytes.
    pub fn chunk_content(&self, node: usize, index: u64) -> Result<ChunkContent, FsError> {
        let array = self.array(node)?.0;
        let m = array.metadata();
        Ok(match array.chunk_or_fill(index)? {
            Some(chunk) => ChunkContent::Decoded(chunk),
            None => ChunkContent::Fill {
                len: m.chunk_bytes_of(index),
                zero: m.fill_value.0.iter().all(|&b| b == 0),
            },
        })
    }

    /// [`NzFs::read_then`] of the kernel's request: where the reply lands
    /// in the page cache (`page_cached`: the file was not opened
    /// `O_DIRECT`), what it holds is noted as served before `then` replies
    /// ([`NzFs::note_served`], drop-behind), so that a reader that has its
    /// bytes sees the release done; the reply still holds the buffer, and
    /// a reply that fails after this costs a later decode, never a wrong
    /// byte. The adapter only replies.
    pub fn read_for_kernel(
        self: &std::sync::Arc<Self>,
        ino: u64,
        offset: u64,
        size: u32,
        page_cached: bool,
        then: impl FnOnce(Result<ReadData, FsError>) + Send + 'static,
    ) {
        let fs = std::sync::Arc::clone(self);
        self.read_then(ino, offset, size, move |result| {
            if let (Ok(data), true) = (&result, page_cached) {
                fs.note_served(ino, offset, data.bytes().len());
            }
            then(result)
        })
    }

    /// Hand bytes `[offset, offset + size)` of file `ino` to `then`: the
    /// one read path of the mount ([`NzFs::read`] waits for it). A read of
    /// a chunk file or of `data.bin` never blocks on a decode another
    /// thread runs: a read of a chunk being decoded is answered by the
    /// decoding thread, so the FUSE thread is free for the next request.
    /// Other files are read on this thread.
    pub fn read_then(
        &self,
        ino: u64,
        offset: u64,
        size: u32,
        then: impl FnOnce(Result<ReadData, FsError>) + Send + 'static,
    ) {
        let inode = match self.inode(ino) {
            Ok(inode) => inode,
            // A file of a version of the metadata no longer served (held
            // open across more changes than the mount keeps).
            Err(FsError::Stale) => return then(Err(self.changed_under(ino))),
            Err(e) => return then(Err(e)),
        };
        match inode {
            Inode::Chunk { node, index } => {
                let array = match self.array(node) {
                    Ok((array, names)) if index < names.count() => array,
                    Ok(_) => return then(Err(FsError::NotFound)),
                    Err(e) => return then(Err(e)),
                };
                self.note_chunk_read(node, array, index, offset);
                let share = |work| self.share_decodes(node, work);
                array.read_chunk_bytes_then(index, offset, size, &share, move |r| then(r.map_err(FsError::from)));
            }
            Inode::File(kind, n) => match self.check_not_superseded(kind, n) {
                Ok(()) => kind.view().read(self, n, offset, size, Box::new(then)),
                Err(e) => then(Err(e)),
            },
            Inode::Node(_) => then(Err(FsError::IsADirectory)),
        }
    }

    /// Hand bytes `[offset, offset + size)` of array `node`'s `data.bin` to
    /// `then`, telling prefetch of the read: `data.bin`'s reads, and the
    /// pixels of `data.tif`, which are the same bytes.
    pub(super) fn read_flat_then(
        &self,
        node: usize,
        offset: u64,
        size: u32,
        then: impl FnOnce(Result<ReadData, FsError>) + Send + 'static,
    ) {
        self.note_flat_read(node, offset, u64::from(size));
        match self.array(node) {
            Ok((array, _)) => array.read_bytes_then(offset, size, move |r| then(r.map_err(FsError::from))),
            Err(e) => then(Err(e)),
        }
    }
}

/// `data.bin`: the whole array in C order, host byte order, read through
/// the decoded-chunk cache without blocking a FUSE thread on a decode
/// another thread runs.
pub(super) struct DataBin;

impl FileView for DataBin {
    fn fixed_name(&self) -> Option<&'static str> {
        Some(DATA_NAME)
    }
    fn name<'a>(&self, fs: &'a NzFs, n: usize) -> Option<&'a str> {
        fs.has_data_bin(n).then_some(DATA_NAME)
    }
    fn size(&self, fs: &NzFs, n: usize) -> Result<u64, FsError> {
        fs.data_size(n)
    }
    fn access(&self, fs: &NzFs, n: usize) -> Result<Option<Access>, ()> {
        fs.values_access(n)
    }
    fn read(&self, fs: &NzFs, n: usize, offset: u64, size: u32, then: Then) {
        fs.read_flat_then(n, offset, size, then)
    }
    fn follows_store(&self) -> bool {
        true
    }
    fn version(&self, fs: &NzFs, n: usize) -> Option<u64> {
        fs.dataset.array(n)?.values_generation()
    }
    fn shows_values_of(&self, _fs: &NzFs, n: usize, array: usize) -> bool {
        n == array
    }
    fn served(&self, fs: &NzFs, ino: u64, n: usize, offset: u64, end: u64) {
        fs.served_data_bin(ino, n, offset, end)
    }
    fn is_array_values(&self) -> bool {
        true
    }
}

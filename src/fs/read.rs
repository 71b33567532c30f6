//! Reading chunk files: the store key, the cache, the codec chain.
//!
//! A chunk file of an unsharded array (or of a sharded one whose chain
//! holds more than the sharding codec) is decoded whole, once, and every
//! read is a slice of the cached buffer.
//!
//! A shard file whose chain is just `sharding_indexed` is decoded
//! partially: its index is read (one range request) and cached, and a read
//! decodes only the inner chunks its byte range touches, each fetched with
//! its own range request and cached on its own. Reading a whole shard
//! therefore decodes each inner chunk once.
//!
//! `data.bin` reads walk the array in C order, run by run: a run is a piece
//! of one row that lies in one decoded unit (a chunk, or an inner chunk of a
//! shard when shards are decoded partially), copied from that unit's cached
//! buffer. Edge chunks are trimmed to the array bounds.
//!
//! Invariants: no store request is larger than the chunk's decoded size
//! times two plus 1 MiB; an absent chunk or shard is the fill value (or
//! `EIO` under `--missing-chunks error`); an empty inner chunk is always
//! the fill value; every error names the store key.

use std::sync::Arc;

use super::{CacheKey, FsError, MissingChunks, NzFs, ReadData};
use crate::cache::Chunk;
use crate::codec::CodecError;
use crate::codec::sharding::{InnerLocation, ShardingCodec};
use crate::store::{Stamp, StoreKey, join};
use crate::zarr::hierarchy::ArrayNode;

/// The most a stored object may exceed its decoded size by.
fn max_encoded(decoded: u64) -> u64 {
    decoded.saturating_mul(2).saturating_add(1 << 20)
}

fn store_error(key: &StoreKey, e: std::io::Error) -> FsError {
    FsError::Store {
        key: key.to_string(),
        source: Arc::new(e),
    }
}

fn decode_error(key: &StoreKey, source: CodecError) -> FsError {
    FsError::Decode {
        key: key.to_string(),
        source,
    }
}

impl NzFs {
    /// The store key of chunk `index` of array `node`.
    pub(super) fn chunk_key(&self, node: usize, array: &ArrayNode, index: u64) -> Result<StoreKey, FsError> {
        let names = self.info[node].chunk_names.as_ref().ok_or(FsError::NotFound)?;
        let suffix = array.metadata.chunk_key_encoding.key(&names.unravel(index));
        join(&self.hierarchy.nodes[node].path, &suffix).map_err(|e| FsError::Store {
            key: suffix.clone(),
            source: Arc::new(e),
        })
    }

    /// An absent chunk means the fill value only while the array itself is
    /// still in the store: if its metadata is gone (its `zarr.json`, or for a
    /// consolidated hierarchy the root's), the store was moved or deleted
    /// under the mount, and reads fail instead of inventing data.
    fn check_array_still_there(&self, node: usize, key: &StoreKey) -> Result<(), FsError> {
        let path = if self.hierarchy.consolidated {
            ""
        } else {
            self.hierarchy.nodes[node].path.as_str()
        };
        let meta_key = join(path, "zarr.json").map_err(|e| store_error(key, e))?;
        match self.store.stat(&meta_key) {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(store_error(
                key,
                std::io::Error::other(format!(
                    "chunk absent and {meta_key} is gone: the store changed or vanished"
                )),
            )),
            Err(e) => Err(store_error(&meta_key, e)),
        }
    }

    /// The size of `data.bin` of array `node`.
    pub(super) fn data_size(&self, node: usize) -> Result<u64, FsError> {
        let (array, _) = self.array(node)?;
        let m = &array.metadata;
        // Fits: every chunk fits 2 GiB and the chunk count fits u64, but the
        // product may not; saturate (such a file cannot be read whole anyway).
        Ok(m.shape
            .iter()
            .fold(m.data_type.size() as u64, |acc, &s| acc.saturating_mul(s)))
    }

    /// Read bytes `[offset, offset + size)` of `data.bin` of array `node`.
    pub(super) fn read_data(&self, node: usize, offset: u64, size: u32) -> Result<ReadData, FsError> {
        let total = self.data_size(node)?;
        let (array, _) = self.array(node)?;
        let m = &array.metadata;
        let item = m.data_type.size() as u64;
        let start = offset.min(total);
        let end = start.saturating_add(u64::from(size)).min(total);
        let nd = m.shape.len();
        if nd == 0 && start < end {
            // The one chunk is the one element: no copy.
            return Ok(ReadData::slice(self.chunk(node, 0)?, offset, size));
        }
        let mut out = vec![0u8; (end - start) as usize];
        if out.is_empty() {
            return Ok(ReadData::owned(out));
        }
        // The decoded unit: the chunk, or the inner chunk of a partially decoded shard.
        let sharding = array.chain.partial_sharding();
        let unit_shape: &[u64] = sharding.map_or(&m.chunk_shape, |s| &s.inner_shape);
        let row = m.shape[nd - 1];
        // Position of the first element, in C order.
        let mut elem = start / item;
        let mut pos = vec![0u64; nd];
        let mut rest = elem;
        for d in (0..nd).rev() {
            pos[d] = rest % m.shape[d];
            rest /= m.shape[d];
        }
        let mut current: Option<((u64, u64), Chunk)> = None;
        let mut b = start;
        while b < end {
            // The chunk holding `pos`, the unit inside it, and the offset there.
            let mut chunk_index = 0u64;
            let mut unit_index = 0u64;
            let mut within = 0u64;
            for d in 0..nd {
                let in_chunk = pos[d] % m.chunk_shape[d];
                chunk_index = chunk_index * m.shape[d].div_ceil(m.chunk_shape[d]) + pos[d] / m.chunk_shape[d];
                unit_index = unit_index * (m.chunk_shape[d] / unit_shape[d]) + in_chunk / unit_shape[d];
                within = within * unit_shape[d] + in_chunk % unit_shape[d];
            }
            // The run ends at the row's end or the unit's edge along the last dimension.
            let unit_row = unit_shape[nd - 1];
            let run_elems = (row - pos[nd - 1]).min(unit_row - pos[nd - 1] % unit_row);
            let run_end = ((elem + run_elems) * item).min(end);
            let key = (chunk_index, unit_index);
            let buffer = match &current {
                Some((k, buf)) if *k == key => buf.clone(),
                _ => {
                    let buf = match sharding {
                        None => self.chunk(node, chunk_index)?,
                        Some(sc) => self.shard_unit(node, array, sc, chunk_index, unit_index)?,
                    };
                    current = Some((key, buf.clone()));
                    buf
                }
            };
            let src = (within * item + b % item) as usize;
            let n = (run_end - b) as usize;
            out[(b - start) as usize..(b - start) as usize + n].copy_from_slice(&buffer[src..src + n]);
            b = run_end;
            // Advance to the element after the run (carrying into outer dimensions).
            elem += run_elems;
            pos[nd - 1] += run_elems;
            let mut d = nd - 1;
            while d > 0 && pos[d] >= m.shape[d] {
                pos[d] = 0;
                pos[d - 1] += 1;
                d -= 1;
            }
        }
        Ok(ReadData::owned(out))
    }

    /// Inner chunk `inner` of shard `index`, through the index cache. On
    /// failure the cached index is dropped: it may be stale (the shard was
    /// replaced), so the next read reads it afresh.
    fn shard_unit(
        &self,
        node: usize,
        array: &ArrayNode,
        sharding: &ShardingCodec,
        index: u64,
        inner: u64,
    ) -> Result<Chunk, FsError> {
        let key = self.chunk_key(node, array, index)?;
        let shard_index = self.shard_index(node, index, sharding, &key)?;
        self.inner_chunk(node, index, inner, sharding, &key, &shard_index)
            .inspect_err(|_| {
                self.cache.invalidate(&CacheKey::index(node, index));
            })
    }

    /// Read bytes `[offset, offset + size)` of chunk file `index` of `node`.
    pub(super) fn read_chunk(&self, node: usize, index: u64, offset: u64, size: u32) -> Result<ReadData, FsError> {
        let (array, names) = self.array(node)?;
        if index >= names.count() {
            return Err(FsError::NotFound);
        }
        if let Some(sharding) = array.chain.partial_sharding() {
            return self.read_shard(node, array, sharding, index, offset, size);
        }
        if offset == 0 {
            self.note_chunk_start(node, index, array.metadata.chunk_bytes(), names.count());
        }
        Ok(ReadData::slice(self.chunk(node, index)?, offset, size))
    }

    /// The whole decoded chunk `index` of array `node`, through the cache.
    pub fn chunk(&self, node: usize, index: u64) -> Result<Chunk, FsError> {
        let (array, _) = self.array(node)?;
        self.cache
            .get_or_decode(&CacheKey::whole(node, index), || self.load_chunk(node, array, index))
    }

    /// Fetch and decode chunk `index` of `node` (no cache).
    fn load_chunk(&self, node: usize, array: &ArrayNode, index: u64) -> Result<Vec<u8>, FsError> {
        let key = self.chunk_key(node, array, index)?;
        let meta = &array.metadata;
        match self.store.get(&key, max_encoded(meta.chunk_bytes())) {
            Err(e) => Err(store_error(&key, e)),
            Ok(None) => {
                self.check_array_still_there(node, &key)?;
                match self.options.missing_chunks {
                    MissingChunks::Fill => Ok(meta.fill_value.repeat(meta.chunk_elements() as usize)),
                    MissingChunks::Error => Err(FsError::MissingChunk { key: key.to_string() }),
                }
            }
            Ok(Some(encoded)) => array.chain.decode(encoded).map_err(|e| decode_error(&key, e)),
        }
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
        let Some(super::Inode::Chunk { node, index }) = super::Inode::from_ino(ino) else {
            return then(self.read(ino, offset, size));
        };
        let whole = match self.array(node) {
            Ok((array, names)) if index < names.count() && array.chain.partial_sharding().is_none() => {
                (array, names.count())
            }
            _ => return then(self.read(ino, offset, size)),
        };
        let (array, count) = whole;
        if offset == 0 {
            self.note_chunk_start(node, index, array.metadata.chunk_bytes(), count);
        }
        self.cache.get_or_decode_then(
            &CacheKey::whole(node, index),
            || self.load_chunk(node, array, index),
            Box::new(move |r| then(r.map(|buffer| ReadData::slice(buffer, offset, size)))),
        );
    }

    fn read_shard(
        &self,
        node: usize,
        array: &ArrayNode,
        sharding: &ShardingCodec,
        index: u64,
        offset: u64,
        size: u32,
    ) -> Result<ReadData, FsError> {
        let total = array.metadata.chunk_bytes();
        let start = offset.min(total);
        let end = start.saturating_add(u64::from(size)).min(total);
        let inner: Vec<(u64, Chunk)> = sharding
            .inner_chunks_in(start, end)
            .into_iter()
            .map(|i| Ok((i, self.shard_unit(node, array, sharding, index, i)?)))
            .collect::<Result<_, FsError>>()?;
        let mut out = vec![0u8; (end - start) as usize];
        sharding.copy_range(start, &mut out, |i| {
            inner
                .iter()
                .find(|(k, _)| *k == i)
                .map(|(_, c)| c.as_slice())
                .expect("every touched inner chunk was read")
        });
        Ok(ReadData::owned(out))
    }

    /// A shard's decoded index, cached: the shard object's [`Stamp`] (length,
    /// version; 16 bytes), then the native `(offset, nbytes)` pairs. Empty
    /// when the shard is absent.
    fn shard_index(&self, node: usize, index: u64, sharding: &ShardingCodec, key: &StoreKey) -> Result<Chunk, FsError> {
        let cache_key = CacheKey::index(node, index);
        self.cache.get_or_decode(&cache_key, || {
            let Some(stamp) = self.store.stat(key).map_err(|e| store_error(key, e))? else {
                self.check_array_still_there(node, key)?;
                return match self.options.missing_chunks {
                    MissingChunks::Fill => Ok(Vec::new()),
                    MissingChunks::Error => Err(FsError::MissingChunk { key: key.to_string() }),
                };
            };
            let (at, n) = sharding.index_range(stamp.len).map_err(|e| decode_error(key, e))?;
            let encoded = self
                .store
                .get_range(key, at, n, Some(stamp))
                .map_err(|e| store_error(key, e))?
                .ok_or_else(|| store_error(key, std::io::Error::other("the shard vanished while being read")))?;
            let decoded = sharding.decode_index(encoded).map_err(|e| decode_error(key, e))?;
            let mut out = Vec::with_capacity(16 + decoded.len());
            out.extend(stamp.len.to_ne_bytes());
            out.extend(stamp.version.to_ne_bytes());
            out.extend(decoded);
            Ok(out)
        })
    }

    fn inner_chunk(
        &self,
        node: usize,
        index: u64,
        inner: u64,
        sharding: &ShardingCodec,
        key: &StoreKey,
        shard_index: &[u8],
    ) -> Result<Chunk, FsError> {
        if shard_index.is_empty() {
            let cache_key = CacheKey {
                node,
                chunk: index,
                part: inner,
                version: 0,
            };
            return self.cache.get_or_decode(&cache_key, || {
                sharding.decode_inner(None).map_err(|e| decode_error(key, e))
            });
        }
        let word = |at: usize| u64::from_ne_bytes(shard_index[at..at + 8].try_into().expect("8 bytes"));
        let stamp = Stamp {
            len: word(0),
            version: word(8),
        };
        let cache_key = CacheKey {
            node,
            chunk: index,
            part: inner,
            version: stamp.version,
        };
        self.cache.get_or_decode(&cache_key, || {
            let location = sharding
                .locate(&shard_index[16..], inner, Some(stamp.len))
                .map_err(|e| decode_error(key, e))?;
            let encoded = match location {
                InnerLocation::Empty => None,
                InnerLocation::At { nbytes, .. } if nbytes > max_encoded(sharding.inner_bytes() as u64) => {
                    return Err(decode_error(
                        key,
                        CodecError::TooLarge {
                            codec: "sharding_indexed",
                            limit: sharding.inner_bytes(),
                        },
                    ));
                }
                InnerLocation::At { offset, nbytes } => Some(
                    self.store
                        .get_range(key, offset, nbytes, Some(stamp))
                        .map_err(|e| store_error(key, e))?
                        .ok_or_else(|| {
                            store_error(key, std::io::Error::other("the shard vanished while being read"))
                        })?,
                ),
            };
            sharding.decode_inner(encoded).map_err(|e| decode_error(key, e))
        })
    }
}

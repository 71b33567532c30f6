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
    fn chunk_key(&self, node: usize, array: &ArrayNode, index: u64) -> Result<StoreKey, FsError> {
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

    /// Read bytes `[offset, offset + size)` of chunk file `index` of `node`.
    pub(super) fn read_chunk(&self, node: usize, index: u64, offset: u64, size: u32) -> Result<ReadData, FsError> {
        let (array, names) = self.array(node)?;
        if index >= names.count() {
            return Err(FsError::NotFound);
        }
        if let Some(sharding) = array.chain.partial_sharding() {
            return self.read_shard(node, array, sharding, index, offset, size);
        }
        let buffer = self.chunk(node, index)?;
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(buffer.len());
        let end = start.saturating_add(size as usize).min(buffer.len());
        Ok(ReadData { buffer, start, end })
    }

    /// The whole decoded chunk `index` of array `node`, through the cache.
    pub fn chunk(&self, node: usize, index: u64) -> Result<Chunk, FsError> {
        let (array, _) = self.array(node)?;
        let key = CacheKey::whole(node, index);
        self.cache.get_or_decode(&key, || {
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
        })
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
        let key = self.chunk_key(node, array, index)?;
        let shard_index = self.shard_index(node, index, sharding, &key)?;
        let inner: Result<Vec<(u64, Chunk)>, FsError> = sharding
            .inner_chunks_in(start, end)
            .into_iter()
            .map(|i| Ok((i, self.inner_chunk(node, index, i, sharding, &key, &shard_index)?)))
            .collect();
        // The index may be stale (the shard was replaced): read it afresh next time.
        let inner = inner.inspect_err(|_| self.cache.invalidate(&CacheKey::index(node, index)))?;
        let mut out = vec![0u8; (end - start) as usize];
        sharding.copy_range(start, &mut out, |i| {
            inner
                .iter()
                .find(|(k, _)| *k == i)
                .map(|(_, c)| c.as_slice())
                .expect("every touched inner chunk was read")
        });
        let len = out.len();
        Ok(ReadData {
            buffer: Arc::new(out),
            start: 0,
            end: len,
        })
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

//! Reading values: the store key, the cache, the codec chain.
//!
//! A chunk of an unsharded array (or of a sharded one whose chain holds more
//! than the sharding codec) is decoded whole, once, and every read is a
//! slice of the cached buffer.
//!
//! A shard whose chain is just `sharding_indexed` is decoded partially: its
//! index is read (one range request) and cached, and a read decodes only the
//! inner chunks its byte range touches, fetched together with one
//! [`ReadableStore::get_ranges`](crate::store::ReadableStore::get_ranges)
//! call and cached one by one. Reading a whole shard therefore decodes each
//! inner chunk once.
//!
//! Flat reads (`data.bin`, regions, sampled points) walk the array in C
//! order out of those decoded units: see `flat.rs`.
//!
//! Invariants: no store request is larger than the chunk's decoded size
//! times two plus 1 MiB; an absent chunk or shard is the fill value (or
//! an error under [`MissingChunks::Error`]); an empty inner chunk is always
//! the fill value; every error names the store key.

use super::fill;
use super::{Array, ArrayError, CacheKey, MissingChunks, ReadData};
use std::sync::{Arc, Mutex};

use crate::cache::{Chunk, wait_for};
use crate::codec::CodecError;
use crate::codec::sharding::{InnerLocation, ShardingCodec};
use crate::store::{RangeRequest, Stamp, StoreError, StoreKey, join};
use crate::zarr::documents::{ZARR_JSON, ZARRAY, ZMETADATA};

/// The most a stored object may exceed its decoded size by.
fn max_encoded(decoded: u64) -> u64 {
    decoded.saturating_mul(2).saturating_add(1 << 20)
}

/// The result a blocking read waited for ([`wait_for`]); a callback
/// dropped uncalled is a decode that panicked.
fn waited<T>(result: Option<Result<T, ArrayError>>) -> Result<T, ArrayError> {
    result.unwrap_or_else(|| Err(ArrayError::from(crate::cache::DecodePanicked)))
}

fn vanished(key: &StoreKey) -> ArrayError {
    ArrayError::store(key, StoreError::Changed("the shard vanished while being read".into()))
}

impl Array {
    /// The whole decoded chunk `index`, through the cache. An absent chunk
    /// gives a fresh buffer of its fill (see `Array::cached_chunk`).
    pub fn read_chunk(&self, index: u64) -> Result<Chunk, ArrayError> {
        let chunk = self.cached_chunk(index)?;
        let m = self.metadata();
        Ok(match fill::is_sentinel(m, &chunk) {
            true => Arc::new(m.fill_value.repeat(m.chunk_elements_of(index) as usize)),
            false => chunk,
        })
    }

    /// Decode chunk `index` into the cache (what prefetch asks for).
    pub fn prefetch_chunk(&self, index: u64) -> Result<(), ArrayError> {
        self.cached_chunk(index).map(drop)
    }

    /// Chunk `index` as the cache holds it, `None` when it is absent and
    /// reads as its fill.
    pub fn chunk_or_fill(&self, index: u64) -> Result<Option<Chunk>, ArrayError> {
        let chunk = self.cached_chunk(index)?;
        Ok((!fill::is_sentinel(self.metadata(), &chunk)).then_some(chunk))
    }

    /// Chunk `index` through the cache. An absent chunk of fixed-size
    /// elements is cached as an empty buffer (a chunk of 2^31 elements
    /// that is not in the store must not cost 2 GiB): readers check
    /// [`fill::is_sentinel`] and make the fill for the bytes they need.
    pub(super) fn cached_chunk(&self, index: u64) -> Result<Chunk, ArrayError> {
        self.check_chunk_index(index)?;
        self.recheck(index, false);
        self.shared
            .cache
            .get_or_decode(&self.whole_key(index), || self.load_chunk(index))
    }

    /// Check chunk `index`'s cached decode against its store object (at
    /// once with `now`, else when the last check is older than
    /// [`super::RECHECK_AFTER`]) and drop it when the object changed.
    pub fn recheck(&self, index: u64, now: bool) -> super::Check {
        let s = &self.shared;
        let key = || self.chunk_key(index).ok();
        s.fresh
            .recheck(s.store.as_ref(), key, self.whole_key(index), &s.cache, now)
    }

    /// Bytes `[offset, offset + size)` of decoded chunk `index`: a slice of
    /// the cached chunk, or of the inner chunks of a shard that it touches.
    /// Waits for [`Array::read_chunk_bytes_then`].
    pub fn read_chunk_bytes(&self, index: u64, offset: u64, size: u32) -> Result<ReadData, ArrayError> {
        waited(wait_for(|then| {
            self.read_chunk_bytes_then(index, offset, size, &|_| {}, then)
        }))
    }

    /// Hand bytes `[offset, offset + size)` of decoded chunk `index` to
    /// `then`: the one way chunk bytes are read. A whole chunk never blocks
    /// on a decode another thread runs: a read of a chunk being decoded is
    /// answered by the decoding thread. A read of part of a shard that
    /// needs two or more inner chunks decoded hands `share` the second half
    /// of them (last first), with the bytes the read fetched for them,
    /// before this thread starts on the first, for another thread to decode
    /// with [`Array::decode_shared`]. The two meet in the middle: the
    /// cache's decode-once rule keeps either from decoding what the other
    /// has, and each chunk's bytes go to whichever decodes it, so none is
    /// read twice.
    pub fn read_chunk_bytes_then(
        &self,
        index: u64,
        offset: u64,
        size: u32,
        share: &dyn Fn(SharedDecodes),
        then: impl FnOnce(Result<ReadData, ArrayError>) + Send + 'static,
    ) {
        if let Err(e) = self.check_chunk_index(index) {
            return then(Err(e));
        }
        match self.partial_sharding() {
            Some(sharding) => then(self.read_shard(sharding, index, offset, size, share)),
            None => self.chunk_slice_then(index, offset, size, then),
        }
    }

    /// `size` bytes at `offset` of whole chunk `index` (checked), handed to
    /// `then` by whichever thread decodes the chunk: this one, or the one
    /// already decoding it, so this never blocks on another's decode.
    fn chunk_slice_then(
        &self,
        index: u64,
        offset: u64,
        size: u32,
        then: impl FnOnce(Result<ReadData, ArrayError>) + Send + 'static,
    ) {
        // The metadata for the callback: a reference count, not a copy.
        let node = self.node.clone();
        self.recheck(index, false);
        self.shared.cache.get_or_decode_then(
            &self.whole_key(index),
            || self.load_chunk(index),
            Box::new(move |r| then(r.map(|buffer| fill::slice(&node.metadata, index, buffer, offset, size)))),
        );
    }

    /// Read bytes `[offset, offset + size)` of the flat C-order array.
    /// Waits for [`Array::read_bytes_then`].
    pub fn read_bytes(&self, offset: u64, size: u32) -> Result<ReadData, ArrayError> {
        waited(wait_for(|then| self.read_bytes_then(offset, size, then)))
    }

    /// Hand bytes `[offset, offset + size)` of the flat C-order array to
    /// `then`: the one way flat bytes are read. A read that is one run of
    /// one chunk's buffer ([`Array::runs`]) is a slice of its cached buffer
    /// (no copy); a read across chunks is gathered from them (`gather.rs`).
    /// Neither blocks on a decode another thread runs (the decoding thread
    /// answers it), as [`Array::read_chunk_bytes_then`] does for chunk
    /// files: a flat reader's requests then leave the FUSE threads free
    /// while the prefetch workers decode.
    pub fn read_bytes_then(
        &self,
        offset: u64,
        size: u32,
        then: impl FnOnce(Result<ReadData, ArrayError>) + Send + 'static,
    ) {
        // The kernel may now hold pages of them: a remote store's objects
        // are looked at for the views' generation from here on.
        self.shared.fresh.shown(self.checked_as());
        let (start, end) = self.flat_range(offset, size);
        let mut runs = self.runs(start, end);
        match (runs.next(), runs.next()) {
            // One run of a chunk decoded whole (a chunk a run names lies in
            // the array: no check).
            (Some(run), None) if run.unit == 0 && !self.reads_partially() => {
                self.chunk_slice_then(run.chunk, run.within, run.len as u32, then)
            }
            // The walk goes on from the two runs met: it is made once.
            (first, second) => self.gather_then(start, end, first.into_iter().chain(second).chain(runs), then),
        }
    }

    fn check_chunk_index(&self, index: u64) -> Result<(), ArrayError> {
        if index < self.chunk_count {
            Ok(())
        } else {
            Err(ArrayError::OutOfBounds {
                what: format!("chunk {index} of {}", self.chunk_count),
            })
        }
    }

    /// The generation of this array's values: it goes up when an object
    /// read for one of its decodes changed in the store (`None`: the store
    /// is not tracked). Its views put it in their mtime.
    pub fn values_generation(&self) -> Option<u64> {
        let s = &self.shared;
        s.fresh.generation(
            self.checked_as(),
            s.store.as_ref(),
            |i| self.chunk_key(i).ok(),
            &s.cache,
        )
    }

    /// Watch the array's directories and objects `places` (each with its
    /// stamp from the walk) for names added or replaced and for owners,
    /// modes or bytes changed: the values generation counts one up when
    /// one changes.
    pub fn watch(&self, places: Vec<super::fresh::Watched>) {
        self.shared.fresh.watch(self.checked_as(), places);
    }

    /// [`Array::values_generation`] as last counted (no look at the store):
    /// what caches derived from values compare with.
    pub fn last_generation(&self) -> u64 {
        self.shared.fresh.last_generation(self.checked_as())
    }

    /// The version of chunk `index`'s object as the store holds it now (0:
    /// absent; `None`: the store is not tracked), for its chunk file's
    /// mtime; a changed object drops its decode.
    pub fn object_version(&self, index: u64) -> Option<u64> {
        let s = &self.shared;
        if !s.fresh.on() {
            // A remote object: checked once its interval is past (one
            // `HEAD`), which drops a changed one's decode and, through
            // the change callback, the kernel's pages of its files.
            if s.fresh.stamps() {
                self.recheck(index, false);
            }
            return None;
        }
        let key = self.chunk_key(index).ok()?;
        s.fresh
            .current(self.checked_as(), index, s.store.as_ref(), &key, &s.cache)
    }

    /// An absent chunk means the fill value only while the array itself is
    /// still in the store: if its metadata is gone (its `zarr.json`, or for a
    /// consolidated hierarchy the root's), the store was moved or deleted
    /// under the reader, and reads fail instead of inventing data.
    fn check_still_there(&self, key: &StoreKey) -> Result<(), ArrayError> {
        let v2 = self.node.metadata.zarr_format == 2;
        let (path, name) = match (self.shared.consolidated, v2) {
            (true, false) => ("", ZARR_JSON),
            (true, true) => ("", ZMETADATA),
            (false, false) => (self.path.as_str(), ZARR_JSON),
            (false, true) => (self.path.as_str(), ZARRAY),
        };
        let meta_key = join(path, name).map_err(|e| ArrayError::store(key, e))?;
        match self.shared.store.stat(&meta_key) {
            Ok(Some(_)) => Ok(()),
            Ok(None) => Err(ArrayError::store(
                key,
                StoreError::Changed(format!(
                    "chunk absent and {meta_key} is gone: the store changed or vanished"
                )),
            )),
            Err(e) => Err(ArrayError::store(&meta_key, e)),
        }
    }

    /// What an absent chunk or shard reads as: `fill` under
    /// [`MissingChunks::Fill`], else an error.
    fn absent(&self, key: &StoreKey, fill: impl FnOnce() -> Vec<u8>) -> Result<Vec<u8>, ArrayError> {
        self.check_still_there(key)?;
        match self.shared.missing_chunks {
            MissingChunks::Fill => Ok(fill()),
            MissingChunks::Error => Err(ArrayError::MissingChunk { key: key.to_string() }),
        }
    }

    /// Fetch and decode chunk `index` (no cache).
    pub(super) fn load_chunk(&self, index: u64) -> Result<Vec<u8>, ArrayError> {
        let key = self.chunk_key(index)?;
        let s = &self.shared;
        let m = self.metadata();
        let chain = self.chain_of(index)?;
        let cap = match m.data_type.element_size() {
            Some(_) => max_encoded(m.chunk_bytes_of(index)),
            None => crate::codec::chain::VARLEN_LIMIT as u64,
        };
        // Where cached decodes are checked against their objects, the read
        // gives the object's stamp too (one open and one fstat, locally).
        let read = |buf: &mut Vec<u8>| match s.fresh.stamps() {
            false => s.store.get_into(&key, cap, buf),
            true => {
                let got = s.store.get_stamped(&key, cap, buf);
                let stamp = got.as_ref().ok().map(|&(_, stamp)| stamp);
                s.fresh.read_for_decode(stamp, self.whole_key(index), &s.cache);
                got.map(|(found, _)| found)
            }
        };
        let fetch_and_decode = |buf: &mut Vec<u8>| match read(buf) {
            Err(e) => Some(Err(ArrayError::store(&key, e))),
            Ok(false) => None,
            Ok(true) => Some(chain.decode_from(buf).map_err(|e| ArrayError::decode(&key, e))),
        };
        // A compressed chunk is read into a pooled buffer and decoded from
        // there; otherwise the stored bytes become the decoded chunk, so they
        // get a buffer of their own (a pooled one's spare capacity would
        // stay in the cache unaccounted).
        let decoded = if chain.decodes_borrowed() {
            super::input::with_buffer(fetch_and_decode)
        } else {
            fetch_and_decode(&mut Vec::new())
        };
        match decoded {
            None if m.data_type.element_size().is_some() => self.absent(&key, Vec::new),
            None => self.absent(&key, || m.fill_value.repeat(m.chunk_elements_of(index) as usize)),
            Some(Ok(decoded)) if let Some(n) = m.narrow => Ok(n.widen(&decoded)),
            Some(decoded) => decoded,
        }
    }

    /// Bytes of decoded shard `index` (a chain that is just sharding): the
    /// inner chunks the range touches, fetched in one batch.
    fn read_shard(
        &self,
        sharding: &ShardingCodec,
        index: u64,
        offset: u64,
        size: u32,
        share: &dyn Fn(SharedDecodes),
    ) -> Result<ReadData, ArrayError> {
        let (start, end) = super::window(offset, size, self.metadata().chunk_bytes());
        let touched = sharding.inner_chunks_in(start, end);
        let key = self.chunk_key(index)?;
        let shard_index = self.shard_index(sharding, index, &key)?;
        let fetched = self.fetch_inner(sharding, index, &key, &shard_index, &touched, share);
        let mut inner: Vec<(u64, Chunk)> = Vec::with_capacity(touched.len());
        for (i, encoded) in touched.into_iter().zip(fetched.iter()) {
            inner.push((i, self.inner_chunk(index, i, sharding, &key, &shard_index, encoded)?));
        }
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

    /// The encoded bytes of those of `inner` chunks of shard `index` that
    /// are neither cached nor empty, in one
    /// [`get_ranges`](crate::store::ReadableStore::get_ranges) call (`None`
    /// for the others: they are read as usual); the second half of those
    /// goes to `share` (see [`Array::read_chunk_bytes_sharing`]).
    fn fetch_inner(
        &self,
        sharding: &ShardingCodec,
        index: u64,
        key: &StoreKey,
        shard_index: &[u8],
        inner: &[u64],
        share: &dyn Fn(SharedDecodes),
    ) -> Fetched {
        let empty = || inner.iter().map(|_| Mutex::new(None)).collect();
        let Some((stamp, table)) = split_index(shard_index).filter(|_| inner.len() > 1) else {
            return empty();
        };
        let mut wanted = Vec::new();
        let mut requests = Vec::new();
        for (slot, &i) in inner.iter().enumerate() {
            if self
                .shared
                .cache
                .is_present(&inner_key((self.id, self.generation), index, i, stamp.version))
            {
                continue;
            }
            if let Ok(InnerLocation::At { offset, nbytes }) = sharding.locate(table, i, Some(stamp.len))
                && nbytes <= max_encoded(sharding.inner_bytes() as u64)
            {
                wanted.push(slot);
                requests.push(RangeRequest {
                    key: key.clone(),
                    offset,
                    len: nbytes,
                    expect: Some(stamp),
                });
            }
        }
        let mut out: Vec<Option<Vec<u8>>> = vec![None; inner.len()];
        // A failed range is read again (and reported) by its own request.
        for (&slot, got) in wanted.iter().zip(self.shared.store.get_ranges(&requests)) {
            out[slot] = got.ok().flatten();
        }
        let fetched: Fetched = out.into_iter().map(Mutex::new).collect();
        if wanted.len() >= 2 {
            share(SharedDecodes {
                shard: index,
                inner: wanted[wanted.len().div_ceil(2)..]
                    .iter()
                    .rev()
                    .map(|&slot| (inner[slot], slot))
                    .collect(),
                fetched: fetched.clone(),
            });
        }
        fetched
    }

    /// Decode the inner chunks another thread's read handed over
    /// ([`Array::read_chunk_bytes_then`]) into the cache, each unless it
    /// is there or being decoded already. Errors are left for the reader to
    /// meet (and report) when it asks for the chunk itself.
    pub fn decode_shared(&self, work: &SharedDecodes) {
        let Some(sharding) = self.partial_sharding() else {
            return;
        };
        let Some(shard_index) = self.shared.cache.peek(&self.index_key(work.shard)) else {
            return;
        };
        let Ok(key) = self.chunk_key(work.shard) else { return };
        let version = split_index(&shard_index).map_or(0, |(stamp, _)| stamp.version);
        for &(inner, slot) in &work.inner {
            if !self
                .shared
                .cache
                .is_present(&inner_key((self.id, self.generation), work.shard, inner, version))
            {
                let _ = self.inner_chunk(work.shard, inner, sharding, &key, &shard_index, &work.fetched[slot]);
            }
        }
    }

    /// Inner chunk `inner` of shard `index`, through the index cache.
    pub(super) fn shard_unit(&self, sharding: &ShardingCodec, index: u64, inner: u64) -> Result<Chunk, ArrayError> {
        let key = self.chunk_key(index)?;
        let shard_index = self.shard_index(sharding, index, &key)?;
        self.inner_chunk(index, inner, sharding, &key, &shard_index, &Mutex::new(None))
    }

    /// Whether shard `index` is in the store (through the cached index).
    pub(super) fn shard_present(&self, sharding: &ShardingCodec, index: u64) -> Result<bool, ArrayError> {
        let key = self.chunk_key(index)?;
        Ok(split_index(&self.shard_index(sharding, index, &key)?).is_some())
    }

    /// A shard's decoded index, cached: the shard object's [`Stamp`] (length,
    /// version; 16 bytes), then the native `(offset, nbytes)` pairs. Empty
    /// when the shard is absent.
    fn shard_index(&self, sharding: &ShardingCodec, index: u64, key: &StoreKey) -> Result<Chunk, ArrayError> {
        let store = self.shared.store.as_ref();
        self.shared.cache.get_or_decode(&self.index_key(index), || {
            let stat = store.stat(key).map_err(|e| ArrayError::store(key, e))?;
            self.shared.fresh.note(self.checked_as(), index, stat);
            let Some(stamp) = stat else {
                return self.absent(key, Vec::new);
            };
            let (at, n) = sharding
                .index_range(stamp.len)
                .map_err(|e| ArrayError::decode(key, e))?;
            let encoded = store
                .get_range(key, at, n, Some(stamp))
                .map_err(|e| ArrayError::store(key, e))?
                .ok_or_else(|| vanished(key))?;
            let decoded = sharding.decode_index(encoded).map_err(|e| ArrayError::decode(key, e))?;
            let mut out = Vec::with_capacity(16 + decoded.len());
            out.extend(stamp.len.to_ne_bytes());
            out.extend(stamp.version.to_ne_bytes());
            out.extend(decoded);
            Ok(out)
        })
    }

    /// Inner chunk `inner` of shard `index`, decoded from `fetched` when
    /// that still holds its bytes (taken by the decode, so a chunk shared
    /// with another thread is read once). On failure the cached shard index is dropped:
    /// it may be stale (the shard was replaced), so the next read reads it
    /// afresh.
    fn inner_chunk(
        &self,
        index: u64,
        inner: u64,
        sharding: &ShardingCodec,
        key: &StoreKey,
        shard_index: &[u8],
        fetched: &Mutex<Option<Vec<u8>>>,
    ) -> Result<Chunk, ArrayError> {
        let cache = &self.shared.cache;
        let decoded = match split_index(shard_index) {
            None => cache.get_or_decode(&inner_key((self.id, self.generation), index, inner, 0), || {
                sharding.decode_inner(None).map_err(|e| ArrayError::decode(key, e))
            }),
            Some((stamp, table)) => cache.get_or_decode(
                &inner_key((self.id, self.generation), index, inner, stamp.version),
                || {
                    let location = sharding
                        .locate(table, inner, Some(stamp.len))
                        .map_err(|e| ArrayError::decode(key, e))?;
                    let encoded = match location {
                        InnerLocation::Empty => None,
                        InnerLocation::At { nbytes, .. } if nbytes > max_encoded(sharding.inner_bytes() as u64) => {
                            return Err(ArrayError::decode(
                                key,
                                CodecError::TooLarge {
                                    codec: "sharding_indexed",
                                    limit: sharding.inner_bytes(),
                                },
                            ));
                        }
                        InnerLocation::At { offset, nbytes } => {
                            let taken = crate::sync::lock(fetched).take();
                            match taken {
                                Some(bytes) => Some(bytes),
                                None => Some(
                                    self.shared
                                        .store
                                        .get_range(key, offset, nbytes, Some(stamp))
                                        .map_err(|e| ArrayError::store(key, e))?
                                        .ok_or_else(|| vanished(key))?,
                                ),
                            }
                        }
                    };
                    sharding.decode_inner(encoded).map_err(|e| ArrayError::decode(key, e))
                },
            ),
        };
        decoded.inspect_err(|_| cache.invalidate(&self.index_key(index)))
    }
}

/// The encoded bytes a shard read fetched, one slot per touched inner
/// chunk (empty when not fetched). A slot is taken by the decode of its
/// chunk, and the cache runs one decode per chunk, so whichever thread
/// decodes a shared chunk uses the bytes and the other reads nothing.
type Fetched = Arc<[Mutex<Option<Vec<u8>>>]>;

/// Inner chunks of one shard that a read hands to another thread to decode
/// ([`Array::read_chunk_bytes_then`]), with the bytes it fetched.
pub struct SharedDecodes {
    shard: u64,
    /// Each chunk and its slot in `fetched`, in the order to decode them.
    inner: Vec<(u64, usize)>,
    fetched: Fetched,
}

/// The cache key of inner chunk `inner` of shard `chunk` of node `node`
/// (of `generation`), decoded from the shard object of `version` (0 for an
/// absent shard).
fn inner_key((node, generation): (usize, u32), chunk: u64, inner: u64, version: u64) -> CacheKey {
    CacheKey {
        node,
        chunk,
        part: inner,
        version,
        generation,
    }
}

/// A cached shard index as its stamp and its `(offset, nbytes)` table;
/// `None` for an absent shard.
fn split_index(shard_index: &[u8]) -> Option<(Stamp, &[u8])> {
    if shard_index.is_empty() {
        return None;
    }
    let word = |at: usize| u64::from_ne_bytes(shard_index[at..at + 8].try_into().expect("8 bytes"));
    Some((
        Stamp {
            len: word(0),
            version: word(8),
        },
        &shard_index[16..],
    ))
}

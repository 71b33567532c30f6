//! The array layer: the only way to read values.
//!
//! ```text
//! Array::read_chunk(index)         decoded chunk, through the cache
//! Array::read_chunk_bytes(i, o, n)  bytes of one chunk file (partial shard decode)
//! Array::read_bytes(offset, n)     bytes of the flat C-order array (data.bin)
//! Array::read_region(start, shape) any hyperslab, C order
//!    -> cache (decode once) -> chunk key -> store -> codec chain
//! ```
//!
//! A [`Dataset`] is a discovered hierarchy whose arrays are opened: it
//! builds each array's codec chain once (an array whose chain cannot be
//! built becomes a broken node, with the reason) and shares one store and
//! one cache among them. The views (`fs/`, `netcdf`, `cdl/`, `nz/`) read
//! values only through [`Array`]; none of them touches a codec or a store
//! key.
//!
//! Invariants: a cache entry is keyed by the array's id in its dataset, the
//! chunk, and the part of it ([`CacheKey`]); every error names the store
//! key; this module imports nothing from the views.

mod dataset;
mod error;
#[cfg(test)]
mod faults;
mod fill;
mod flat;
mod fresh;
mod gather;
mod input;
mod read;
mod runs;
mod text;

pub use fresh::{Check, OnChange, RECHECK_AFTER, REMOTE_RECHECK_AFTER, Watched};
pub use gather::{MAX_GATHER_BYTES, MAX_GATHER_CHUNKS};
pub use text::{LineCache, MAX_TEXT_ELEMENTS, TextIndex};

use std::sync::Arc;

pub use dataset::Dataset;
pub use error::ArrayError;
pub use read::SharedDecodes;
pub use runs::{Run, Runs};

use crate::cache::{Chunk, ChunkCache};
use crate::codec::CodecChain;
use crate::store::{ReadableStore, StoreKey, join};
use crate::zarr::hierarchy::{ArrayNode, MAX_METADATA_BYTES};
use crate::zarr::metadata::{ArrayMetadata, NodeMetadata};

/// What absent chunks mean.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MissingChunks {
    /// The fill value, as the spec says.
    Fill,
    /// `EIO`, for users who must tell lost data from fill.
    Error,
}

/// What the cache holds: a whole decoded chunk (`part` = [`CacheKey::WHOLE`]),
/// one decoded inner chunk of a shard, or a shard's decoded index
/// ([`CacheKey::INDEX`]). An inner chunk's key carries the version of the
/// shard object it came from, so that inner chunks of a replaced shard are
/// never combined with those of the new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CacheKey {
    /// The array's node in the hierarchy.
    pub node: usize,
    /// The chunk's linear index in the array's chunk grid (C order).
    pub chunk: u64,
    /// Which part of the chunk: an inner chunk's linear index in its shard,
    /// [`CacheKey::WHOLE`] or [`CacheKey::INDEX`].
    pub part: u64,
    /// The version of the shard object an inner chunk came from (0 for whole
    /// chunks and indexes).
    pub version: u64,
    /// The generation of the array's node ([`Dataset::sharing`]): a
    /// version served after a commit of the mount's own shares the cache
    /// with the one before it, and a changed array's decodes are under its
    /// new generation. 0 where a dataset has a cache of its own.
    pub generation: u32,
}

impl CacheKey {
    /// [`CacheKey::part`] of a whole decoded chunk.
    pub const WHOLE: u64 = u64::MAX;
    /// [`CacheKey::part`] of a shard's decoded index.
    pub const INDEX: u64 = u64::MAX - 1;

    /// This key under `generation`.
    pub fn of_generation(self, generation: u32) -> Self {
        CacheKey { generation, ..self }
    }

    /// The key of chunk `chunk` of node `node`, decoded whole.
    pub fn whole(node: usize, chunk: u64) -> Self {
        CacheKey {
            node,
            chunk,
            part: Self::WHOLE,
            version: 0,
            generation: 0,
        }
    }

    /// The key of the index of shard `chunk` of node `node`.
    pub fn index(node: usize, chunk: u64) -> Self {
        CacheKey {
            node,
            chunk,
            part: Self::INDEX,
            version: 0,
            generation: 0,
        }
    }
}

/// The decoded-chunk cache of a dataset.
pub type ArrayCache = ChunkCache<CacheKey, ArrayError>;

/// The bytes a read returns: a slice of a shared buffer, never a copy.
#[derive(Debug, Clone)]
pub struct ReadData {
    buffer: Chunk,
    start: usize,
    end: usize,
}

impl ReadData {
    /// Bytes `[offset, offset + size)` of a shared buffer, clipped to it.
    pub(crate) fn slice(buffer: Chunk, offset: u64, size: u32) -> ReadData {
        let start = usize::try_from(offset).unwrap_or(usize::MAX).min(buffer.len());
        let end = start.saturating_add(size as usize).min(buffer.len());
        ReadData { buffer, start, end }
    }

    /// All of a buffer assembled for one read.
    pub(crate) fn owned(bytes: Vec<u8>) -> ReadData {
        let end = bytes.len();
        ReadData {
            buffer: Arc::new(bytes),
            start: 0,
            end,
        }
    }

    /// The bytes read.
    pub fn bytes(&self) -> &[u8] {
        &self.buffer[self.start..self.end]
    }
}

/// The bytes `[start, end)` a read of `size` at `offset` covers in a file
/// of `total` bytes: clamped to it (empty at or past its end).
pub fn window(offset: u64, size: u32, total: u64) -> (u64, u64) {
    let start = offset.min(total);
    (start, start.saturating_add(u64::from(size)).min(total))
}

/// What the arrays of one dataset share.
struct Shared {
    store: Arc<dyn ReadableStore>,
    cache: Arc<ArrayCache>,
    missing_chunks: MissingChunks,
    /// Whether the hierarchy came from consolidated metadata (then an
    /// array's presence is vouched for by the root `zarr.json`).
    consolidated: bool,
    /// The stamps of the chunk objects behind cached decodes: shared by
    /// the datasets of one store that share one cache.
    fresh: Arc<fresh::Freshness>,
}

/// An opened array: its metadata, its codec chain and its chunk grid.
pub struct Array {
    /// The array's number in its dataset (its cache namespace, with
    /// `generation`).
    id: usize,
    /// Its node's generation ([`CacheKey::generation`]).
    generation: u32,
    path: String,
    node: Arc<ArrayNode>,
    /// The chain of the chunk shape (of the largest chunk when the grid is
    /// rectilinear).
    chain: Arc<CodecChain>,
    /// A rectilinear grid's chains by chunk shape, built as chunks are read
    /// (at most [`SHAPE_CHAINS`] kept).
    shape_chains: Option<std::sync::Mutex<ShapeChains>>,
    grid_shape: Vec<u64>,
    chunk_count: u64,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Array {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Array")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl Array {
    /// Open the array at hierarchy path `path` (`""` for a root array) of
    /// `store` on its own, with a cache of `cache_bytes`.
    pub fn open(store: Arc<dyn ReadableStore>, path: &str, cache_bytes: u64) -> Result<Array, ArrayError> {
        let key = join(path, crate::zarr::documents::ZARR_JSON).map_err(|e| ArrayError::Unreadable {
            path: path.into(),
            reason: e.to_string(),
        })?;
        let unreadable = |reason: String| ArrayError::Unreadable {
            path: path.into(),
            reason,
        };
        let bytes = store
            .get(&key, MAX_METADATA_BYTES)
            .map_err(|e| ArrayError::store(&key, e))?
            .ok_or_else(|| unreadable("no zarr.json".into()))?;
        let NodeMetadata::Array(metadata) = NodeMetadata::parse(&bytes).map_err(|e| unreadable(e.to_string()))? else {
            return Err(unreadable("a group, not an array".into()));
        };
        let shared = Arc::new(Shared {
            fresh: Arc::new(fresh::Freshness::for_store(store.as_ref())),
            store,
            cache: Arc::new(ChunkCache::new(cache_bytes)),
            missing_chunks: MissingChunks::Fill,
            consolidated: false,
        });
        Array::new((0, 0), path, Arc::new(ArrayNode { metadata: *metadata }), shared)
            .map_err(|e| unreadable(e.to_string()))
    }

    /// The array, or why its values cannot be decoded.
    fn new(
        (id, generation): (usize, u32),
        path: &str,
        node: Arc<ArrayNode>,
        shared: Arc<Shared>,
    ) -> Result<Array, Undecodable> {
        let m = &node.metadata;
        if let Some(reason) = &m.unsupported {
            return Err(Undecodable::Unsupported(reason.clone()));
        }
        let chain = chain_of_shape(m, &m.chunk_shape)?;
        let grid_shape = m.grid_shape();
        let chunk_count = grid_shape.iter().product();
        let shape_chains = (!m.is_regular()).then(Default::default);
        Ok(Array {
            id,
            generation,
            path: path.to_string(),
            node,
            chain: Arc::new(chain),
            shape_chains,
            grid_shape,
            chunk_count,
            shared,
        })
    }

    /// This array in another dataset (`shared`: its store and cache), as
    /// `node` there: its codec chain is this one's, not built again.
    fn again(&self, node: Arc<ArrayNode>, shared: Arc<Shared>) -> Array {
        Array {
            id: self.id,
            generation: self.generation,
            path: self.path.clone(),
            node,
            chain: Arc::clone(&self.chain),
            shape_chains: self.shape_chains.as_ref().map(|_| Default::default()),
            grid_shape: self.grid_shape.clone(),
            chunk_count: self.chunk_count,
            shared,
        }
    }

    /// The extent along dimension `d` of what one read decodes: an inner
    /// chunk of a shard read in part, else a chunk (the longest edge of a
    /// rectilinear axis).
    pub fn read_unit_along(&self, d: usize) -> u64 {
        match self.partial_sharding() {
            Some(s) => s.inner_extent(d),
            None => self.node.metadata.chunk_shape.get(d).copied().unwrap_or(1),
        }
    }

    /// The sharding codec when shards are decoded partially (never for a
    /// narrow type, bfloat16 included, whose chunks are widened whole, nor
    /// for a rectilinear grid, whose shards differ in shape).
    fn partial_sharding(&self) -> Option<&crate::codec::sharding::ShardingCodec> {
        self.chain
            .partial_sharding()
            .filter(|_| self.node.metadata.narrow.is_none() && self.shape_chains.is_none())
    }

    /// The codec chain of chunk `index`: the array's, or for a rectilinear
    /// grid the one of the chunk's shape (an error when the codecs do not
    /// fit that shape, say a shard edge the inner chunks do not divide).
    /// The codec chain of its chunks (of the largest chunk, when the grid
    /// is not regular).
    pub fn chain(&self) -> &CodecChain {
        &self.chain
    }

    fn chain_of(&self, index: u64) -> Result<Arc<CodecChain>, ArrayError> {
        let Some(chains) = &self.shape_chains else {
            return Ok(self.chain.clone());
        };
        let m = self.metadata();
        let shape = m.chunk_shape_at(&self.unravel(index));
        if shape == m.chunk_shape {
            return Ok(self.chain.clone());
        }
        let mut kept = crate::sync::lock(chains);
        if let Some((_, c)) = kept.iter().find(|(s, _)| *s == shape) {
            return Ok(c.clone());
        }
        let chain = chain_of_shape(m, &shape)
            .map(Arc::new)
            .map_err(|e| ArrayError::Unreadable {
                path: self.path.clone(),
                reason: format!("chunk {index} of shape {shape:?}: {e}"),
            })?;
        if kept.len() >= SHAPE_CHAINS {
            kept.remove(0);
        }
        kept.push((shape, chain.clone()));
        Ok(chain)
    }

    /// The array's metadata, as parsed.
    pub fn metadata(&self) -> &ArrayMetadata {
        &self.node.metadata
    }

    /// The hierarchy path (`""` for a root array).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The number of chunks along each dimension.
    pub fn grid_shape(&self) -> &[u64] {
        &self.grid_shape
    }

    /// The number of chunks (1 for a 0-d array, 0 with a zero-length dimension).
    pub fn chunk_count(&self) -> u64 {
        self.chunk_count
    }

    /// The grid index of the `linear`-th chunk in C order.
    pub fn unravel(&self, linear: u64) -> Vec<u64> {
        crate::zarr::chunk_key::unravel(&self.grid_shape, linear)
    }

    /// The store key of chunk `index` (linear, C order).
    pub fn chunk_key(&self, index: u64) -> Result<StoreKey, ArrayError> {
        let suffix = self.metadata().chunk_key_encoding.key(&self.unravel(index));
        join(&self.path, &suffix).map_err(|e| ArrayError::Store {
            key: suffix.clone(),
            source: Arc::new(e),
        })
    }

    /// The size in bytes of the flat C-order array (`data.bin`). Saturates:
    /// every chunk fits 2 GiB and the chunk count fits `u64`, but their
    /// product may not (such an array cannot be read whole anyway).
    pub fn size(&self) -> u64 {
        u64::try_from(self.metadata().flat_bytes()).unwrap_or(u64::MAX)
    }

    /// Tell the store that chunk `index`'s object will be read soon
    /// ([`ReadableStore::will_need`]).
    pub fn will_need(&self, index: u64) {
        if let Ok(key) = self.chunk_key(index) {
            self.shared.store.will_need(&key);
        }
    }

    /// Its node's generation ([`CacheKey::generation`]).
    pub fn generation(&self) -> u32 {
        self.generation
    }

    /// The cache key of chunk `index` decoded whole.
    /// The array as the freshness checks know it: its node and its node's
    /// generation.
    fn checked_as(&self) -> fresh::Of {
        (self.id, self.generation)
    }

    fn whole_key(&self, index: u64) -> CacheKey {
        CacheKey::whole(self.id, index).of_generation(self.generation)
    }

    /// The cache key of shard `index`'s decoded index.
    fn index_key(&self, index: u64) -> CacheKey {
        CacheKey::index(self.id, index).of_generation(self.generation)
    }

    /// Whether chunk `index`'s whole decoded form is in the cache.
    pub fn is_cached(&self, index: u64) -> bool {
        self.shared.cache.is_present(&self.whole_key(index))
    }

    /// Let chunk `index`'s whole decoded form leave the cache early (the
    /// kernel page cache holds it: `fs::served`).
    pub fn release_chunk(&self, index: u64) {
        self.shared.cache.release(&self.whole_key(index));
    }

    /// Whether a chunk file read decodes only the inner chunks it touches
    /// (a chain that is just `sharding_indexed`), rather than whole chunks.
    pub fn reads_partially(&self) -> bool {
        self.partial_sharding().is_some()
    }

    /// The chunks that flat bytes `[start, end)` of `data.bin` lie in, in
    /// the order a reader meets them, at most `limit` of them. The walk
    /// steps one chunk-row piece at a time, skips the rows of a chunk band
    /// that repeat a row already walked whole (so a range of many
    /// `(1, ny, nx)` chunks costs a few steps per chunk, not `ny`), and
    /// gives up after a bounded number of steps (a prefetch hint needs no
    /// more).
    pub fn chunks_touched(&self, start: u64, end: u64, limit: usize) -> Vec<u64> {
        let mut out: Vec<u64> = Vec::new();
        let mut runs = self.runs(start, end);
        for _ in 0..1 << 16 {
            if out.len() >= limit {
                break;
            }
            if runs.skip_repeated_rows() {
                continue;
            }
            let Some(run) = runs.next() else { break };
            if !out.contains(&run.chunk) {
                out.push(run.chunk);
            }
        }
        out
    }
}

/// Move C-order position `pos` in an array of `shape` on by `run` elements
/// that all lie in its last row: along the last dimension, carrying into
/// the outer ones at the row's end.
fn advance(pos: &mut [u64], shape: &[u64], run: u64) {
    let last = pos.len() - 1;
    pos[last] += run;
    if pos[last] >= shape[last] {
        pos[last] = 0;
        crate::odometer::next(&mut pos[..last], &shape[..last]);
    }
}

/// A rectilinear grid's codec chains, by chunk shape.
type ShapeChains = Vec<(Vec<u64>, Arc<CodecChain>)>;

/// How many chunk shapes of a rectilinear grid keep their codec chain.
const SHAPE_CHAINS: usize = 64;

/// The codec chain of `m`'s chunks of `shape`. A narrow type (bfloat16
/// included) is decoded as its stored form, widened after decoding.
/// Why an array's values cannot be decoded, though its metadata was read
/// (its directory and `header.cdl` are still shown).
#[derive(Debug, thiserror::Error)]
pub enum Undecodable {
    /// The metadata names what nzfs does not support (said at its parse).
    #[error("{0}")]
    Unsupported(String),
    /// Its codec chain cannot be built.
    #[error(transparent)]
    Chain(#[from] crate::zarr::metadata::MetadataError),
}

fn chain_of_shape(m: &ArrayMetadata, shape: &[u64]) -> Result<CodecChain, crate::zarr::metadata::MetadataError> {
    match m.narrow {
        Some(n) => {
            let fill = n
                .narrow_fill(&m.fill_value)
                .ok_or(crate::zarr::metadata::MetadataError::Missing("fill_value"))?;
            CodecChain::new(&m.codecs, shape, n.chain_type(), &fill)
        }
        None => CodecChain::new(&m.codecs, shape, m.data_type.clone(), &m.fill_value),
    }
}

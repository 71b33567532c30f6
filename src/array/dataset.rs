//! A [`Dataset`]: a discovered hierarchy with its arrays opened, sharing
//! one store, one decoded-chunk cache and one set of freshness checks, and
//! how a dataset made again from the same store takes over what did not
//! change (each unchanged array as it is, the cache and the checks).
//!
//! Invariant: an array taken over keeps its node's number and generation,
//! the key of its decodes in the shared cache.

use std::sync::Arc;

use super::{Array, ArrayCache, MissingChunks, OnChange, Shared, fresh};
use crate::cache::ChunkCache;
use crate::store::{ReadableStore, join};
use crate::zarr::hierarchy::{Hierarchy, NodeKind, OpenError};

/// A discovered hierarchy with its arrays opened, sharing one store and one
/// decoded-chunk cache.
pub struct Dataset {
    hierarchy: Hierarchy,
    /// Boxed: most nodes of a large hierarchy are groups, and an `Array`
    /// inline would cost every node its size.
    arrays: Vec<Option<Box<Array>>>,
    /// Array nodes whose codec chain could not be built, and why.
    undecodable: std::collections::HashMap<usize, String>,
    shared: Arc<Shared>,
}

impl Dataset {
    /// Open every array of `hierarchy`. An array whose codec chain nzfs
    /// cannot build (a codec it does not know, a configuration it refuses,
    /// codecs in an invalid order) stays an array of the hierarchy, whose
    /// metadata the views still show (its directory, `header.cdl`), but
    /// has no [`Array`]: [`Dataset::undecodable`] says why, and the log;
    /// only its value files are `EIO`.
    pub fn new(
        store: Arc<dyn ReadableStore>,
        hierarchy: Hierarchy,
        cache_bytes: u64,
        missing_chunks: MissingChunks,
    ) -> Dataset {
        let cache = Arc::new(ChunkCache::new(cache_bytes));
        Dataset::sharing(store, hierarchy, (cache, &[]), None, missing_chunks)
    }

    /// [`Dataset::new`] with `cache`, shared with another dataset, each
    /// array's decodes under its node's generation (`generations`, by node
    /// number; 0 past its end): a version served after a commit of the
    /// mount's own keeps the decodes of every array it did not change, and
    /// so does one read again from the same store into the same cache,
    /// whose freshness checks (the stamps its decodes were read under) it
    /// shares with `previous`. An array of `previous` (the dataset this one replaces) whose node
    /// keeps its number and its generation is taken as it is, its codec
    /// chain not built again: a generation moves with any change of the
    /// node's metadata, which is what the cache's keys rely on too.
    pub fn sharing(
        store: Arc<dyn ReadableStore>,
        mut hierarchy: Hierarchy,
        (cache, generations): (Arc<ArrayCache>, &[u32]),
        previous: Option<&Dataset>,
        missing_chunks: MissingChunks,
    ) -> Dataset {
        // The same store read again into the same cache: its cached
        // decodes' stamps go on being checked where they were taken.
        let fresh = match previous {
            Some(p) if Arc::ptr_eq(&p.shared.store, &store) && Arc::ptr_eq(&p.shared.cache, &cache) => {
                p.shared.fresh.clone()
            }
            _ => Arc::new(fresh::Freshness::for_store(store.as_ref())),
        };
        let shared = Arc::new(Shared {
            fresh,
            store,
            cache,
            missing_chunks,
            consolidated: hierarchy.consolidated,
        });
        let mut arrays = Vec::with_capacity(hierarchy.nodes.len());
        let mut undecodable = std::collections::HashMap::new();
        for (id, node) in hierarchy.nodes.iter_mut().enumerate() {
            let NodeKind::Array(a) = &node.kind else {
                arrays.push(None);
                continue;
            };
            let generation = generations.get(id).copied().unwrap_or(0);
            let kept = previous
                .and_then(|p| p.array(id))
                .filter(|old| old.generation == generation);
            if let Some(old) = kept {
                arrays.push(Some(Box::new(old.again(a.clone(), shared.clone()))));
                continue;
            }
            match Array::new((id, generation), &node.path, a.clone(), shared.clone()) {
                Ok(array) => arrays.push(Some(Box::new(array))),
                Err(reason) => {
                    let meta = node.metadata_name().unwrap_or(crate::zarr::documents::ZARR_JSON);
                    let key = join(&node.path, meta).map_or_else(|_| node.path.clone(), |k| k.to_string());
                    tracing::warn!(%key, %reason, "the array's values cannot be decoded; its header is shown");
                    undecodable.insert(id, reason.to_string());
                    arrays.push(None);
                }
            }
        }
        Dataset {
            hierarchy,
            arrays,
            undecodable,
            shared,
        }
    }

    /// Whether the store's objects are checked for changes (a local store):
    /// then the views that show values follow their objects (mtime).
    pub fn tracks_changes(&self) -> bool {
        self.shared.fresh.on()
    }

    /// Tell `f` `(array, chunk)` whenever a chunk object is found changed
    /// since a decode read it, before anything decoded from it now is
    /// served (a tracked store only; set once).
    pub fn on_change(&self, f: OnChange) {
        self.shared.fresh.on_change(f);
    }

    /// On a store whose objects may be rewritten in place where a look is
    /// a request (object storage), check a cached chunk against its
    /// object's version when it is used `every` after its last check
    /// (`None`: never, a mount that does not follow its store). The
    /// default is [`fresh::REMOTE_RECHECK_AFTER`]; a local store is
    /// checked on its own terms.
    pub fn check_remote_every(&self, every: Option<std::time::Duration>) {
        self.shared.fresh.check_remote_every(every);
    }

    /// Whether cached decodes are checked against their objects at all
    /// (a local store, or object storage followed by the mount): whoever
    /// drops the kernel's pages of changed files watches [`Dataset::on_change`].
    pub fn checks_objects(&self) -> bool {
        self.shared.fresh.stamps()
    }

    /// Why array node `id` has metadata but no decoder (an unknown codec).
    pub fn undecodable(&self, id: usize) -> Option<&str> {
        self.undecodable.get(&id).map(String::as_str)
    }

    /// [`Dataset::undecodable`] as the views say it: "its values cannot be
    /// decoded: REASON".
    pub fn cannot_decode(&self, id: usize) -> Option<String> {
        self.undecodable(id)
            .map(|r| format!("its values cannot be decoded: {r}"))
    }

    /// Discover the hierarchy of `store` and open its arrays.
    pub fn open(store: Arc<dyn ReadableStore>, cache_bytes: u64) -> Result<Dataset, OpenError> {
        let hierarchy = Hierarchy::open(store.as_ref())?;
        Ok(Dataset::new(store, hierarchy, cache_bytes, MissingChunks::Fill))
    }

    /// The groups and arrays of the dataset.
    pub fn hierarchy(&self) -> &Hierarchy {
        &self.hierarchy
    }

    /// The opened array of node `id`, when it is a readable array.
    pub fn array(&self, id: usize) -> Option<&Array> {
        self.arrays.get(id).and_then(|a| a.as_deref())
    }

    /// The store, for checks that compare it with the hierarchy.
    pub fn store(&self) -> &dyn ReadableStore {
        self.shared.store.as_ref()
    }

    /// The store, shared: what a dataset made again from the store's
    /// metadata reads.
    pub fn store_handle(&self) -> Arc<dyn ReadableStore> {
        Arc::clone(&self.shared.store)
    }

    /// The decoded-chunk cache (its counters, for tests and benchmarks).
    pub fn cache(&self) -> &ArrayCache {
        &self.shared.cache
    }

    /// The decoded-chunk cache, to share ([`Dataset::sharing`]).
    pub fn cache_handle(&self) -> Arc<ArrayCache> {
        Arc::clone(&self.shared.cache)
    }
}

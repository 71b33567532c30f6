//! One snapshot of a repository as a [`ReadableStore`]: its Zarr keys
//! (`zarr.json`, `a/c/0/1`) answered from the snapshot and its manifests,
//! which the crate caches.
//!
//! Invariants: a snapshot never changes, so a key's stamp is its length
//! (version 0); every request runs on the repository's runtime with its
//! deadline and is registered in [`crate::store::inflight`]; a key the
//! snapshot does not hold is `Ok(None)`.

use std::sync::Arc;

use futures::TryStreamExt;
use icechunk::format::ByteRange;

use super::{Repo, explain, line, not_found};
use crate::store::{Listing, RangeRequest, ReadableStore, Stamp, StoreError, StoreKey, StoreResult, inflight};

/// One snapshot of a repository, as a store.
pub struct VersionStore {
    pub(super) repo: Arc<Repo>,
    pub(super) store: icechunk::Store,
    /// `repository@snapshot`, for messages.
    pub(super) name: String,
    /// The snapshot's id.
    pub(super) snapshot: String,
}

impl VersionStore {
    /// One request of the crate's store, with the deadline; `None` when the
    /// key is not in the snapshot.
    async fn ask_async<T>(
        &self,
        key: &str,
        f: impl Future<Output = Result<T, icechunk::store::StoreError>>,
    ) -> StoreResult<Option<T>> {
        let deadline = self.repo.deadline;
        match tokio::time::timeout(deadline, f).await {
            Err(_) => Err(StoreError::TimedOut(format!(
                "{}/{key}: no answer in {deadline:?}",
                self.name
            ))),
            Ok(Ok(v)) => Ok(Some(v)),
            Ok(Err(e)) if not_found(&e) => Ok(None),
            Ok(Err(e)) => Err(StoreError::Corrupt(format!(
                "{}/{key}: {}",
                self.name,
                explain(line(e))
            ))),
        }
    }

    fn ask<T>(
        &self,
        key: &str,
        f: impl Future<Output = Result<T, icechunk::store::StoreError>>,
    ) -> StoreResult<Option<T>> {
        let _reading = inflight::begin(&format!("{}/{key}", self.name));
        self.repo.runtime.block_on(self.ask_async(key, f))
    }

    /// The length of `key`, `None` when the snapshot has no such key. The
    /// crate gives a chunk it does not hold the length 0, so a length of 0
    /// is asked about once more.
    async fn size(&self, key: &str) -> StoreResult<Option<u64>> {
        match self.ask_async(key, self.store.getsize(key)).await? {
            Some(0) if self.ask_async(key, self.store.exists(key)).await? != Some(true) => Ok(None),
            other => Ok(other),
        }
    }

    /// The bytes `span` asks for of `key`, after one look at its length
    /// in the manifest: `None` when the snapshot has no such key.
    async fn range(&self, key: &StoreKey, span: Span, expect: Option<Stamp>) -> StoreResult<Option<Vec<u8>>> {
        let k = key.as_str();
        if let Span::Part { len, .. } = span
            && len > crate::store::MAX_RANGE
        {
            return Err(crate::store::too_large(len, crate::store::MAX_RANGE));
        }
        // The length first, for parts too: the crate slices an inline value
        // or a metadata document without checking the range (a range past
        // its end would panic there), and a whole value above `max_len` is
        // refused before it is fetched.
        let Some(size) = self.size(k).await? else {
            return Ok(None);
        };
        crate::store::check_stamp(key, Stamp { len: size, version: 0 }, expect)?;
        let (offset, len) = match span {
            Span::Whole { max_len } if size > max_len => {
                let e = crate::store::too_large(size, max_len);
                return Err(e.context(format!("{}/{k}", self.name)));
            }
            Span::Whole { .. } => (0, size),
            Span::Part { offset, len } => (offset, len),
        };
        let Some(end) = offset.checked_add(len).filter(|&e| e <= size) else {
            return Err(crate::store::short_value(key, offset, len, size));
        };
        let bytes = self
            .ask_async(k, self.store.get(k, &ByteRange::Bounded(offset..end)))
            .await?;
        match bytes {
            Some(b) if b.len() as u64 != len => Err(crate::store::short_value(key, offset, len, b.len() as u64)),
            other => Ok(other.map(Vec::from)),
        }
    }
}

/// What [`VersionStore::range`] reads: the whole value (refused above
/// `max_len`), or `len` bytes from `offset`.
#[derive(Debug, Clone, Copy)]
enum Span {
    Whole { max_len: u64 },
    Part { offset: u64, len: u64 },
}

impl ReadableStore for VersionStore {
    fn get(&self, key: &StoreKey, max_len: u64) -> StoreResult<Option<Vec<u8>>> {
        let _reading = inflight::begin(&format!("{}/{key}", self.name));
        self.repo
            .runtime
            .block_on(self.range(key, Span::Whole { max_len }, None))
    }

    fn get_range(&self, key: &StoreKey, offset: u64, len: u64, expect: Option<Stamp>) -> StoreResult<Option<Vec<u8>>> {
        let _reading = inflight::begin(&format!("{}/{key}", self.name));
        self.repo
            .runtime
            .block_on(self.range(key, Span::Part { offset, len }, expect))
    }

    fn stat(&self, key: &StoreKey) -> StoreResult<Option<Stamp>> {
        // A snapshot never changes: its length is the only version there is.
        let k = key.as_str();
        let _reading = inflight::begin(&format!("{}/{k}", self.name));
        let size = self.repo.runtime.block_on(self.size(k))?;
        Ok(size.map(|len| Stamp { len, version: 0 }))
    }

    fn get_ranges(&self, requests: &[RangeRequest]) -> Vec<StoreResult<Option<Vec<u8>>>> {
        // Concurrently on the runtime: once the crate has a manifest cached,
        // each is one read of a chunk object.
        let _reading: Vec<_> = requests
            .iter()
            .map(|r| inflight::begin(&format!("{}/{}", self.name, r.key)))
            .collect();
        let reads = requests.iter().map(|r| {
            let span = Span::Part {
                offset: r.offset,
                len: r.len,
            };
            self.range(&r.key, span, r.expect)
        });
        self.repo.runtime.block_on(futures::future::join_all(reads))
    }

    fn snapshot(&self) -> Option<String> {
        Some(self.snapshot.clone())
    }

    /// A snapshot never changes: it is followed whole (a branch's tip).
    fn profile(&self) -> crate::store::Profile {
        crate::store::Profile {
            concurrency: 8,
            ..crate::store::Profile::default()
        }
    }
}

impl crate::store::Listable for VersionStore {
    fn list_dir(&self, prefix: &str) -> StoreResult<Listing> {
        let items = self.ask(prefix, async {
            let stream = self.store.list_dir_items(prefix).await?;
            stream.try_collect::<Vec<_>>().await
        })?;
        let mut listing = Listing::default();
        for item in items.unwrap_or_default() {
            match item {
                icechunk::store::ListDirItem::Key(k) => listing.keys.push(k),
                icechunk::store::ListDirItem::Prefix(p) => listing.prefixes.push(p),
            }
        }
        listing.keys.sort();
        listing.prefixes.sort();
        Ok(listing)
    }
}

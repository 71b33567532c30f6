//! A filesystem made again from the store's metadata as it is now, for a
//! mount that follows its store ([`NzFs::renewed`]), and how a mount looks
//! at its store again ([`Rereading`]).
//!
//! The new filesystem reads the same store (or, for an Icechunk branch, the
//! branch's new snapshot; counted on the same counters, so `nzfs status`
//! keeps counting), with every setting of the old one, and a
//! new decoded-chunk cache: a chunk decoded under the old metadata (its
//! shape, its codecs) is never served under the new. Node numbers, and so
//! inode numbers, are kept for every node still in the store
//! ([`Hierarchy::keep_numbers_of`]). Its files' times are the time it was
//! made, so that the kernel, which compares them, drops the pages it holds
//! of the old files.

use std::time::SystemTime;

use super::{NzFs, TooManyNodes};
use crate::array::Dataset;
use crate::cdl::VersionRoot;
use crate::store::ReadableStore;
use crate::zarr::hierarchy::Hierarchy;

/// How a mount looks at its store's metadata again, and reads it again:
/// the store's own documents for a Zarr directory, the branch's tip for an
/// Icechunk branch.
pub trait Rereading: Send + Sync {
    /// One look at what `hierarchy` was read from `store`: equal for two
    /// looks at an unchanged store.
    fn look(&self, store: &dyn ReadableStore, hierarchy: &Hierarchy) -> u64;
    /// The metadata as the store holds it now.
    fn reread(&self, store: &dyn ReadableStore) -> Result<Reread, String>;
    /// Whether a look costs little enough to take the first one before
    /// the mount is live (else it is taken just after, in the background).
    fn cheap(&self, store: &dyn ReadableStore, hierarchy: &Hierarchy) -> bool {
        let _ = (store, hierarchy);
        true
    }
}

/// What reading a store's metadata again gave.
pub struct Reread {
    /// The hierarchy now.
    pub hierarchy: Hierarchy,
    /// The store to read from now, where it is another (an Icechunk
    /// branch's new snapshot), with its name for `nzfs status` and its
    /// version's note and time for the headers.
    pub store: Option<(Box<dyn ReadableStore>, String, Vec<VersionRoot>)>,
}

/// A Zarr directory (local or in object storage), read again from itself.
pub struct SameStore;

impl Rereading for SameStore {
    fn look(&self, store: &dyn ReadableStore, hierarchy: &Hierarchy) -> u64 {
        hierarchy.fingerprint(store).value()
    }
    fn reread(&self, store: &dyn ReadableStore) -> Result<Reread, String> {
        Ok(Reread {
            hierarchy: Hierarchy::open(store).map_err(|e| e.to_string())?,
            store: None,
        })
    }
    /// A local store, or consolidated metadata (the root's two documents);
    /// not a `HEAD` per document of object storage, which would make the
    /// mount take twice as long.
    fn cheap(&self, store: &dyn ReadableStore, hierarchy: &Hierarchy) -> bool {
        store.rereads_are_cheap() || hierarchy.consolidated
    }
}

impl NzFs {
    /// The filesystem of `reread`: its hierarchy from this one's store (or
    /// the store it names), with this one's settings; refused as
    /// [`NzFs::new`] refuses.
    pub fn renewed(&self, reread: Reread) -> Result<NzFs, TooManyNodes> {
        let Reread { mut hierarchy, store } = reread;
        hierarchy.keep_numbers_of(self.hierarchy());
        Self::check_limits(&mut hierarchy)?;
        let mut options = self.options.clone();
        options.mtime = SystemTime::now();
        let mut name = self.status.store.clone();
        let handle: std::sync::Arc<dyn ReadableStore> = match store {
            Some((store, shown, versions)) => {
                name = shown;
                options.versions = versions;
                match &self.status.store_counters {
                    Some(counters) => {
                        std::sync::Arc::new(crate::store::counted::Counted::sharing(store, counters.clone()))
                    }
                    None => std::sync::Arc::from(store),
                }
            }
            None => self.dataset.store_handle(),
        };
        let dataset = Dataset::new(handle, hierarchy, options.cache_bytes, options.missing_chunks);
        let mut fs = Self::serve(dataset, options)
            .with_ownership(self.ownership)
            .with_previews(self.previews)
            .with_tiff(self.tiff)
            .with_nc_format(self.nc_format)
            .with_prefetch(self.prefetching)
            .with_sizing(self.sizing.clone())
            .with_store_name(name);
        fs.status.carry_from(&self.status);
        Ok(fs)
    }
}

//! A filesystem made again from the store's metadata as it is now, for a
//! mount that follows its store ([`NzFs::renewed`]).
//!
//! The new filesystem reads the same store (the same counted store, so
//! `nzfs status` keeps counting), with every setting of the old one, and a
//! new decoded-chunk cache: a chunk decoded under the old metadata (its
//! shape, its codecs) is never served under the new. Node numbers, and so
//! inode numbers, are kept for every node still in the store
//! ([`Hierarchy::keep_numbers_of`]). Its files' times are the time it was
//! made, so that the kernel, which compares them, drops the pages it holds
//! of the old files.

use std::time::SystemTime;

use super::{NzFs, TooManyNodes};
use crate::array::Dataset;
use crate::zarr::hierarchy::Hierarchy;

impl NzFs {
    /// The filesystem of `hierarchy`, read again from this one's store,
    /// with this one's settings; refused as [`NzFs::new`] refuses.
    pub fn renewed(&self, mut hierarchy: Hierarchy) -> Result<NzFs, TooManyNodes> {
        hierarchy.keep_numbers_of(self.hierarchy());
        Self::check_limits(&mut hierarchy)?;
        let dataset = Dataset::new(
            self.dataset.store_handle(),
            hierarchy,
            self.options.cache_bytes,
            self.options.missing_chunks,
        );
        let mut options = self.options.clone();
        options.mtime = SystemTime::now();
        let mut fs = Self::serve(dataset, options)
            .with_ownership(self.ownership)
            .with_previews(self.previews)
            .with_tiff(self.tiff)
            .with_nc_format(self.nc_format)
            .with_prefetch(self.prefetching)
            .with_sizing(self.sizing.clone())
            .with_store_name(self.status.store.clone());
        fs.status.carry_from(&self.status);
        Ok(fs)
    }
}

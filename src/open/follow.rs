//! How a mount follows what it was opened from, when that is not a Zarr
//! directory read again from itself: a zip or reference set by a look at
//! one file (the zip or JSON set itself, a Parquet set's `.zmetadata`: one
//! `stat`, or one `HEAD` in object storage), opened again whole when it was
//! replaced. An Icechunk branch follows its tip
//! (`icechunk.rs`).
//!
//! Invariant: a look is cheap and bounded (one request at most); a file
//! read again is served as another store, so readers holding files of the
//! old one keep its bytes or are told EIO, never a mixture.

use std::path::Path;

use super::{LOCAL_METADATA_TTL, Opened, Source, open};
use crate::store::ReadableStore;
use crate::zarr::hierarchy::Hierarchy;

impl Opened {
    /// A Zarr directory followed every `every` by default.
    pub(super) fn followed(self, every: std::time::Duration) -> Opened {
        Opened {
            follows: Some((every, std::sync::Arc::new(crate::fs::SameStore::default()))),
            ..self
        }
    }

    /// A zip or reference set in object storage mounted as `source`,
    /// followed by a `HEAD` of object `name` in directory `parent`
    /// (a URL: the zip or JSON set itself, or a Parquet set's `.zmetadata`)
    /// every [`super::REMOTE_METADATA_TTL`] by default. Where that directory
    /// cannot be opened for the looks, it is read once.
    #[cfg(feature = "remote")]
    pub(super) fn followed_remote_file(self, source: &Source, parent: &str, name: &str) -> Opened {
        let home = super::reference_options(&source.access)
            .ok()
            .and_then(|(_, o)| crate::store::object::RemoteStore::open(&format!("{parent}/"), &o).ok());
        let (Some(home), Ok(name)) = (home, crate::store::StoreKey::new(name)) else {
            return self;
        };
        let file = RemoteFile {
            source: source.clone(),
            home,
            name,
        };
        Opened {
            follows: Some((super::REMOTE_METADATA_TTL, std::sync::Arc::new(file))),
            ..self
        }
    }

    /// A local zip or reference set opened as `source`, followed by a
    /// stat of `watched`: the file itself, or a Parquet
    /// set's `.zmetadata` (which its writer rewrites with the set).
    pub(super) fn followed_file(self, watched: &Path, source: &Source) -> Opened {
        let file = SameFile {
            path: watched.to_path_buf(),
            source: source.clone(),
        };
        Opened {
            follows: Some((LOCAL_METADATA_TTL, std::sync::Arc::new(file))),
            ..self
        }
    }
}

/// `source` opened again whole after a look found it `replaced` (what the
/// log says): the new store and its hierarchy.
fn reopen(source: &Source, replaced: &str) -> Result<crate::fs::Reread, crate::fs::RereadError> {
    let opened = open(source).map_err(|e| crate::fs::RereadError::Reopen(e.message().to_string()))?;
    tracing::info!(store = %opened.shown, "{replaced}: read again");
    Ok(crate::fs::Reread {
        hierarchy: opened.hierarchy,
        store: Some((opened.store, opened.shown, opened.versions)),
        own_commit: None,
    })
}

/// A zip or reference set in object storage, looked at again by one
/// `HEAD` of its object (a Parquet set's `.zmetadata`) (its ETag and length), and opened again whole when
/// it was replaced, as [`SameFile`] is.
#[cfg(feature = "remote")]
struct RemoteFile {
    /// What was mounted.
    source: Source,
    /// The object's directory, and its name there.
    home: crate::store::object::RemoteStore,
    name: crate::store::StoreKey,
}

#[cfg(feature = "remote")]
impl crate::fs::Rereading for RemoteFile {
    fn look(&self, _store: &dyn ReadableStore, _hierarchy: &Hierarchy) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::hash::DefaultHasher::new();
        // A failure is a look of its own: the reading again fails too and
        // says why.
        match self.home.stat(&self.name) {
            Ok(stamp) => stamp.map(|s| (s.len, s.version)).hash(&mut h),
            Err(e) => e.kind().hash(&mut h),
        }
        h.finish()
    }
    fn reread(
        &self,
        _store: &dyn ReadableStore,
        _served: &Hierarchy,
        _since: Option<u64>,
    ) -> Result<crate::fs::Reread, crate::fs::RereadError> {
        reopen(&self.source, "the object was replaced")
    }
    fn cheap(&self, _store: &dyn ReadableStore, _hierarchy: &Hierarchy) -> bool {
        false
    }
}

/// A local zip or reference set, looked at again by one `stat` of its
/// file (a Parquet set's `.zmetadata`), and opened again whole when the
/// file was replaced or rewritten
/// (its identity, length or times changed): the new file is served as
/// another store, so a reader holding a file of the old one open reads
/// the old references, or is told EIO where a zip's bytes changed under it.
struct SameFile {
    /// The file looked at.
    path: std::path::PathBuf,
    /// What was mounted, opened again when `path` changed.
    source: Source,
}

impl crate::fs::Rereading for SameFile {
    fn look(&self, _store: &dyn ReadableStore, _hierarchy: &Hierarchy) -> u64 {
        use std::hash::{Hash, Hasher};
        use std::os::unix::fs::MetadataExt;
        let mut h = std::hash::DefaultHasher::new();
        // A failure is a look of its own: the reading again fails too and
        // says why.
        std::fs::metadata(&self.path)
            .map(|m| {
                (
                    m.dev(),
                    m.ino(),
                    m.len(),
                    m.mtime(),
                    m.mtime_nsec(),
                    m.ctime(),
                    m.ctime_nsec(),
                )
            })
            .map_err(|e| e.kind())
            .hash(&mut h);
        h.finish()
    }
    fn reread(
        &self,
        _store: &dyn ReadableStore,
        _served: &Hierarchy,
        _since: Option<u64>,
    ) -> Result<crate::fs::Reread, crate::fs::RereadError> {
        reopen(&self.source, "the file was replaced or rewritten")
    }
}

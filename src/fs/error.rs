//! Filesystem errors and their one errno mapping.
//!
//! [`FsError::errno`] is an exhaustive match with no catch-all arm: a new
//! variant forces a decision about its errno. Expected misses (`ENOENT` on
//! lookup) are logged at debug, everything else at warn, with the store key.

use std::sync::Arc;

use crate::cache::DecodePanicked;
use crate::codec::CodecError;

#[derive(Debug, Clone, thiserror::Error)]
pub enum FsError {
    #[error("no such entry")]
    NotFound,
    #[error("not a directory")]
    NotADirectory,
    #[error("is a directory")]
    IsADirectory,
    #[error("read-only filesystem")]
    ReadOnly,
    #[error("node {path:?} is unreadable: {reason}")]
    BrokenNode { path: String, reason: String },
    #[error("store key {key}: {source}")]
    Store { key: String, source: Arc<std::io::Error> },
    #[error("store key {key}: {source}")]
    Decode { key: String, source: CodecError },
    #[error("store key {key}: chunk is absent and --missing-chunks is error")]
    MissingChunk { key: String },
    #[error("a chunk decode panicked (bug); see the log")]
    Panicked,
}

impl From<DecodePanicked> for FsError {
    fn from(_: DecodePanicked) -> Self {
        FsError::Panicked
    }
}

impl FsError {
    pub fn errno(&self) -> i32 {
        match self {
            FsError::NotFound => libc::ENOENT,
            FsError::NotADirectory => libc::ENOTDIR,
            FsError::IsADirectory => libc::EISDIR,
            FsError::ReadOnly => libc::EROFS,
            // The daemon itself may not read the object: say so, as the
            // store's own filesystem would.
            FsError::Store { source, .. } if source.kind() == std::io::ErrorKind::PermissionDenied => libc::EACCES,
            FsError::Store { source, .. } if source.kind() == std::io::ErrorKind::TimedOut => libc::ETIMEDOUT,
            FsError::BrokenNode { .. }
            | FsError::Store { .. }
            | FsError::Decode { .. }
            | FsError::MissingChunk { .. }
            | FsError::Panicked => libc::EIO,
        }
    }

    /// Errors that are part of normal operation and not worth a warning.
    pub fn is_expected(&self) -> bool {
        match self {
            FsError::NotFound | FsError::NotADirectory | FsError::IsADirectory | FsError::ReadOnly => true,
            FsError::BrokenNode { .. }
            | FsError::Store { .. }
            | FsError::Decode { .. }
            | FsError::MissingChunk { .. }
            | FsError::Panicked => false,
        }
    }
}

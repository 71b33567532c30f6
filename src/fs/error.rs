//! Filesystem errors and their one errno mapping.
//!
//! [`FsError::errno`] is an exhaustive match with no catch-all arm: a new
//! variant forces a decision about its errno. Errors of the array layer
//! carry their own ([`ArrayError::errno`]). Expected misses (`ENOENT` on
//! lookup) are logged at debug, everything else at warn, with the store key.

use crate::array::ArrayError;

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
    /// A file larger than a `stat` can say (2^63 - 1 bytes).
    #[error("{path}: {what} would be {bytes} bytes, more than a file can hold (2^63 - 1)")]
    TooLarge {
        path: String,
        what: &'static str,
        bytes: u128,
    },
    #[error(transparent)]
    Array(#[from] ArrayError),
}

impl FsError {
    pub fn errno(&self) -> i32 {
        match self {
            FsError::NotFound => libc::ENOENT,
            FsError::NotADirectory => libc::ENOTDIR,
            FsError::IsADirectory => libc::EISDIR,
            FsError::ReadOnly => libc::EROFS,
            FsError::BrokenNode { .. } | FsError::TooLarge { .. } => libc::EIO,
            FsError::Array(e) => e.errno(),
        }
    }

    /// A short name of the kind of failure, for counts (`nzfs status`).
    pub fn kind(&self) -> &'static str {
        match self {
            FsError::NotFound => "not_found",
            FsError::NotADirectory => "not_a_directory",
            FsError::IsADirectory => "is_a_directory",
            FsError::ReadOnly => "read_only",
            FsError::BrokenNode { .. } => "unreadable_node",
            FsError::TooLarge { .. } => "too_large",
            FsError::Array(e) => e.kind(),
        }
    }

    /// Errors that are part of normal operation and not worth a warning.
    pub fn is_expected(&self) -> bool {
        match self {
            FsError::NotFound | FsError::NotADirectory | FsError::IsADirectory | FsError::ReadOnly => true,
            FsError::BrokenNode { .. } | FsError::TooLarge { .. } | FsError::Array(_) => false,
        }
    }
}

//! Filesystem errors and their one errno mapping.
//!
//! [`FsError::errno`] is an exhaustive match with no catch-all arm: a new
//! variant forces a decision about its errno. Errors of the array layer
//! carry their own ([`ArrayError::errno`]). Expected misses (`ENOENT` on
//! lookup) are logged at debug, everything else at warn, with the store key.

use crate::array::ArrayError;

/// Why a filesystem request failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum FsError {
    /// No entry of that name or inode.
    #[error("no such entry")]
    NotFound,
    /// A directory operation on a file.
    #[error("not a directory")]
    NotADirectory,
    /// A file operation on a directory.
    #[error("is a directory")]
    IsADirectory,
    /// A write of any kind.
    #[error("read-only filesystem")]
    ReadOnly,
    /// A group or array whose metadata cannot be read.
    #[error("node {path:?} is unreadable: {reason}")]
    BrokenNode {
        /// The node's path.
        path: String,
        /// Why, as the log says it.
        reason: String,
    },
    /// A file larger than a `stat` can say (2^63 - 1 bytes).
    #[error("{path}: {what} would be {bytes} bytes, more than a file can hold (2^63 - 1)")]
    TooLarge {
        /// The node's path.
        path: String,
        /// Which file.
        what: &'static str,
        /// The size it would have.
        bytes: u128,
    },
    /// A named file of a version of the metadata the mount no longer
    /// serves, asked for by number (a name looked up before the change):
    /// the kernel looks the name up again.
    #[error("a file of metadata no longer served")]
    Stale,
    /// A file held open across a change of the store that rewrote its
    /// objects in place: what it showed cannot be read any more.
    #[error("{path}: the store changed since the file was opened; open it again to read the new version")]
    ChangedUnder {
        /// The file's path in the mount.
        path: String,
    },
    /// Reading an array's values failed.
    #[error(transparent)]
    Array(#[from] ArrayError),
}

impl FsError {
    /// The errno the kernel gets for it: decided here, for every variant.
    pub fn errno(&self) -> i32 {
        match self {
            FsError::NotFound => libc::ENOENT,
            FsError::NotADirectory => libc::ENOTDIR,
            FsError::IsADirectory => libc::EISDIR,
            FsError::ReadOnly => libc::EROFS,
            FsError::BrokenNode { .. } | FsError::TooLarge { .. } | FsError::ChangedUnder { .. } => libc::EIO,
            FsError::Stale => libc::ESTALE,
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
            FsError::Stale => "stale",
            FsError::ChangedUnder { .. } => "changed_under_open_file",
            FsError::Array(e) => e.kind(),
        }
    }

    /// Errors that are part of normal operation and not worth a warning.
    pub fn is_expected(&self) -> bool {
        match self {
            FsError::NotFound | FsError::NotADirectory | FsError::IsADirectory | FsError::ReadOnly | FsError::Stale => {
                true
            }
            FsError::BrokenNode { .. }
            | FsError::TooLarge { .. }
            | FsError::ChangedUnder { .. }
            | FsError::Array(_) => false,
        }
    }
}

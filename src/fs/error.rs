//! Filesystem errors and their one errno mapping.
//!
//! [`FsError::errno`] is an exhaustive match with no catch-all arm: a new
//! variant forces a decision about its errno. Errors of the array layer
//! carry their own ([`ArrayError::errno`]), and so do the store's
//! ([`StoreError::errno`]). What a writable mount refuses or fails to do
//! is here too (from `Exists` on): the mount core
//! (`mount/`) turns its write errors into these, so a write's
//! errno is decided here like a read's. Expected refusals (`ENOENT` on
//! lookup, a name taken, a read-only file) are logged at debug and not
//! counted; everything else is counted, and logged with the request.

use std::sync::Arc;

use crate::array::ArrayError;
use crate::store::StoreError;

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
    /// A name taken: by a node, a file it shows or a file being written.
    #[error("{0}: the name is taken")]
    Exists(String),
    /// A directory that holds something; `at_tip`: not in this mount's
    /// view, but at the branch's tip (another writer's commit since).
    #[error("{what}")]
    NotEmpty {
        /// What it holds, in words.
        what: String,
        /// Found at the branch's tip, in the session that commits.
        at_tip: bool,
    },
    /// Only the mount's owner and root write; an array's directory takes
    /// no new file.
    #[error("{0}")]
    Denied(&'static str),
    /// The mount's root, which is never removed.
    #[error("the mount's root is never removed")]
    Busy,
    /// A name no node or commit takes (why, with the path).
    #[error("{0}")]
    Invalid(String),
    /// A file the mount shows that cannot take writes (why: a codec it
    /// does not encode, …).
    #[error("{0}")]
    NotWritable(String),
    /// A write past the end of a file that keeps its size.
    #[error("{0}")]
    TooBig(String),
    /// A change of the size of a file that keeps its size.
    #[error("{0}")]
    SizeFixed(String),
    /// The spool's limit would be passed.
    #[error("{0}")]
    NoSpace(String),
    /// The spool's disk failed.
    #[error("the spool: {0}")]
    Disk(Arc<std::io::Error>),
    /// A commit that was not made: the branch is as it was.
    #[error("{0}")]
    NotCommitted(String),
    /// The store refused or failed a write's read or commit.
    #[error("{0}")]
    Store(Arc<StoreError>),
    /// A request a read-only mount does not take (`flush`, `fsync`): the
    /// kernel stops sending it.
    #[error("not taken by a read-only mount")]
    Unsupported,
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
            FsError::Exists(_) => libc::EEXIST,
            FsError::NotEmpty { .. } => libc::ENOTEMPTY,
            FsError::Denied(_) => libc::EACCES,
            FsError::Busy => libc::EBUSY,
            FsError::Invalid(_) => libc::EINVAL,
            FsError::NotWritable(_) => libc::EROFS,
            FsError::TooBig(_) => libc::EFBIG,
            FsError::SizeFixed(_) => libc::EPERM,
            FsError::NoSpace(_) => libc::ENOSPC,
            FsError::Disk(e) => e.raw_os_error().unwrap_or(libc::EIO),
            FsError::NotCommitted(_) => libc::EIO,
            FsError::Store(e) => e.errno(),
            FsError::Unsupported => libc::ENOSYS,
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
            FsError::Exists(_) => "exists",
            FsError::NotEmpty { .. } => "not_empty",
            FsError::Denied(_) => "denied",
            FsError::Busy => "busy",
            FsError::Invalid(_) => "invalid_name",
            FsError::NotWritable(_) => "not_writable",
            FsError::TooBig(_) => "too_big",
            FsError::SizeFixed(_) => "size_fixed",
            FsError::NoSpace(_) => "no_space",
            FsError::Disk(_) => "spool_disk",
            FsError::NotCommitted(_) => "not_committed",
            FsError::Store(e) => e.kind(),
            FsError::Unsupported => "unsupported",
        }
    }

    /// Errors that are part of normal operation and not worth a warning.
    pub fn is_expected(&self) -> bool {
        match self {
            FsError::NotFound
            | FsError::NotADirectory
            | FsError::IsADirectory
            | FsError::ReadOnly
            | FsError::Stale
            | FsError::Exists(_)
            | FsError::Denied(_)
            | FsError::Busy
            | FsError::Unsupported => true,
            FsError::NotEmpty { at_tip, .. } => !at_tip,
            FsError::BrokenNode { .. }
            | FsError::TooLarge { .. }
            | FsError::ChangedUnder { .. }
            | FsError::Array(_)
            | FsError::Invalid(_)
            | FsError::NotWritable(_)
            | FsError::TooBig(_)
            | FsError::SizeFixed(_)
            | FsError::NoSpace(_)
            | FsError::Disk(_)
            | FsError::NotCommitted(_)
            | FsError::Store(_) => false,
        }
    }
}

//! Why a value could not be read. Every variant names the store key; the
//! errno of each is decided once, in [`ArrayError::errno`] (store errors by
//! [`crate::store::StoreError::errno`]).

use std::sync::Arc;

use crate::cache::DecodePanicked;
use crate::codec::CodecError;

/// Why a value of an array could not be read.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ArrayError {
    /// The store could not give an object.
    #[error("store key {key}: {source}")]
    Store {
        /// The object's key.
        key: String,
        /// The store's error (shared: one failed read answers every waiter).
        source: Arc<crate::store::StoreError>,
    },
    /// An object's bytes did not decode.
    #[error("store key {key}: {source}")]
    Decode {
        /// The object's key.
        key: String,
        /// What the codec refused.
        source: CodecError,
    },
    /// A chunk has no object, and absent chunks were asked to be errors.
    #[error("store key {key}: chunk is absent and --missing-chunks is error")]
    MissingChunk {
        /// The chunk's key.
        key: String,
    },
    /// A decoder panicked (a bug); the panic is in the log.
    #[error("a chunk decode panicked (bug); see the log")]
    Panicked,
    /// The array's metadata is understood but cannot be read as data (a
    /// codec configuration refused, a type with no bytes).
    #[error("array {path:?}: {reason}")]
    Unreadable {
        /// The array's path in the hierarchy.
        path: String,
        /// Why, as the log says it.
        reason: String,
    },
    /// A request outside the array's shape or a file's size.
    #[error("{what} is outside the array")]
    OutOfBounds {
        /// What was asked for.
        what: String,
    },
    /// Work given up because whoever asked for it is gone.
    #[error("{what}: stopped, its reader left")]
    Stopped {
        /// What was being read.
        what: String,
    },
}

impl From<DecodePanicked> for ArrayError {
    fn from(_: DecodePanicked) -> Self {
        ArrayError::Panicked
    }
}

impl ArrayError {
    pub(crate) fn store(key: &crate::store::StoreKey, e: crate::store::StoreError) -> ArrayError {
        ArrayError::Store {
            key: key.to_string(),
            source: Arc::new(e),
        }
    }

    pub(crate) fn decode(key: &crate::store::StoreKey, source: CodecError) -> ArrayError {
        ArrayError::Decode {
            key: key.to_string(),
            source,
        }
    }

    /// A short name of the kind of failure, for counts (`nzfs status`).
    pub fn kind(&self) -> &'static str {
        match self {
            ArrayError::Store { .. } => "store",
            ArrayError::Decode { .. } => "decode",
            ArrayError::MissingChunk { .. } => "missing_chunk",
            ArrayError::Panicked => "decode_panic",
            ArrayError::Unreadable { .. } => "unreadable_array",
            ArrayError::OutOfBounds { .. } => "out_of_bounds",
            ArrayError::Stopped { .. } => "stopped",
        }
    }

    /// The errno a reader gets for it: decided here, for every variant.
    pub fn errno(&self) -> i32 {
        match self {
            ArrayError::Store { source, .. } => source.errno(),
            ArrayError::OutOfBounds { .. } => libc::EINVAL,
            ArrayError::Stopped { .. } => libc::EINTR,
            ArrayError::Decode { .. }
            | ArrayError::MissingChunk { .. }
            | ArrayError::Panicked
            | ArrayError::Unreadable { .. } => libc::EIO,
        }
    }
}

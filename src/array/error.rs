//! Why a value could not be read. Every variant names the store key; the
//! errno of each is decided once, in [`ArrayError::errno`] (store errors by
//! [`crate::store::errno`]).

use std::sync::Arc;

use crate::cache::DecodePanicked;
use crate::codec::CodecError;

#[derive(Debug, Clone, thiserror::Error)]
pub enum ArrayError {
    #[error("store key {key}: {source}")]
    Store { key: String, source: Arc<std::io::Error> },
    #[error("store key {key}: {source}")]
    Decode { key: String, source: CodecError },
    #[error("store key {key}: chunk is absent and --missing-chunks is error")]
    MissingChunk { key: String },
    #[error("a chunk decode panicked (bug); see the log")]
    Panicked,
    #[error("array {path:?}: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("{what} is outside the array")]
    OutOfBounds { what: String },
    /// Work given up because whoever asked for it is gone.
    #[error("{what}: stopped, its reader left")]
    Stopped { what: String },
}

impl From<DecodePanicked> for ArrayError {
    fn from(_: DecodePanicked) -> Self {
        ArrayError::Panicked
    }
}

impl ArrayError {
    pub(crate) fn store(key: &crate::store::StoreKey, e: std::io::Error) -> ArrayError {
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

    pub fn errno(&self) -> i32 {
        match self {
            ArrayError::Store { source, .. } => crate::store::errno(source),
            ArrayError::OutOfBounds { .. } => libc::EINVAL,
            ArrayError::Stopped { .. } => libc::EINTR,
            ArrayError::Decode { .. }
            | ArrayError::MissingChunk { .. }
            | ArrayError::Panicked
            | ArrayError::Unreadable { .. } => libc::EIO,
        }
    }
}

//! The Zarr v3 model: metadata documents, data types and fill values, chunk
//! key encodings, and hierarchy discovery. Nothing here knows about FUSE.

pub mod chunk_key;
pub mod data_type;
pub mod dimensions;
pub mod extension;
pub mod hierarchy;
pub mod json;
pub mod metadata;
pub mod numpy;
pub mod text;
pub mod v2;

//! The Zarr model: metadata documents (v3 `zarr.json`, and Zarr v2 and
//! NCZarr documents read into the same types by [`v2`]), data types and
//! fill values (records in [`data_type::record`]; numpy type strings and
//! record lists in [`numpy`]), chunk grids, chunk key encodings, the text
//! form of string values, and hierarchy discovery. Nothing here knows
//! about FUSE.

pub mod chunk_key;
pub mod data_type;
pub mod dimensions;
pub mod documents;
pub mod extension;
pub mod grid;
pub mod hierarchy;
pub mod metadata;
pub mod numpy;
pub mod text;
pub mod v2;

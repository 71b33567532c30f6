//! The names of the metadata documents a Zarr store holds (defined once,
//! in [`crate::store::documents`], the lowest layer that reads them), and
//! the group document nzfs writes.
//!
//! Invariants: every key nzfs reads or writes for a node's metadata is
//! built from these constants (a node's path joined with one of them); a
//! document [`group_document`] writes is one the metadata parser reads
//! back as a Zarr v3 group with those attributes (`tests/write.rs`).

use crate::json::Value;

pub use crate::store::documents::{ROOT_DOCUMENTS, ZARR_JSON, ZARRAY, ZATTRS, ZGROUP, ZMETADATA};

/// The `zarr.json` of a Zarr v3 group with `attributes` (a JSON object).
pub fn group_document(attributes: Value) -> Vec<u8> {
    Value::Object(vec![
        ("zarr_format".into(), Value::Int(3)),
        ("node_type".into(), Value::Str("group".into())),
        ("attributes".into(), attributes),
    ])
    .to_string()
    .into_bytes()
}

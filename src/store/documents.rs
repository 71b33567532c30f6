//! The names of the metadata documents a Zarr store holds, defined once
//! for every layer: the store's (a zip's root, what the disk cache treats
//! as metadata, an Icechunk commit's keys) and the Zarr model's above it,
//! which re-exports them.
//!
//! Invariant: no other module spells these names as string literals
//! outside its tests.

/// A Zarr v3 node's metadata document.
pub const ZARR_JSON: &str = "zarr.json";
/// A Zarr v2 array's metadata document.
pub const ZARRAY: &str = ".zarray";
/// A Zarr v2 group's metadata document.
pub const ZGROUP: &str = ".zgroup";
/// A Zarr v2 node's attributes.
pub const ZATTRS: &str = ".zattrs";
/// Zarr v2's consolidated metadata, at the root.
pub const ZMETADATA: &str = ".zmetadata";
/// The documents one of which a store's root holds.
pub const ROOT_DOCUMENTS: [&str; 4] = [ZARR_JSON, ZGROUP, ZARRAY, ZMETADATA];

//! nzfs: a read-only FUSE filesystem over Zarr v3 / NZ-1.0 stores (an
//! Icechunk branch may be mounted writable: [`mod@write`]).
//!
//! The read path, one module per arrow:
//!
//! ```text
//! fuse adapter read(ino, off, size)                         fuse.rs
//!   -> filesystem core: ino -> node (chunk file, data.bin, .nc)  fs/
//!   -> Array: read_chunk_bytes / read_bytes / read_region     array/
//!   -> cache: get (array, chunk, part), or decode it once     cache.rs
//!        -> chunk key encoding: index -> store key           zarr/chunk_key.rs
//!        -> store: key -> Option<bytes> (None = fill)        store/
//!        -> codec chain: bytes -> decoded chunk              codec/
//!   -> slice or copy out of the cached buffer
//! ```
//!
//! Module rules (checked by `scripts/module_deps.py` in CI): no import
//! circle; `zarr`, `codec`, `store` and `array` never import a view (`fs`,
//! `fuse`, `cdl`, `netcdf`, `nz`, `daemon`, `cli`). The views read values
//! only through [`array::Array`].

pub mod admin;
pub mod array;
pub mod cache;
pub mod cdl;
pub mod cli;
pub mod codec;
pub mod cpus;
#[cfg(feature = "csi")]
pub mod csi;
pub mod daemon;
pub mod fs;
pub mod fuse;
pub mod json;
pub mod memory;
pub mod mount;
pub mod mounts;
pub mod naming;
pub mod netcdf;
pub mod nz;
pub mod odometer;
pub mod open;
pub mod owned;
pub mod preview;
pub mod store;
pub mod sync;
pub mod tiff;
pub mod write;
pub mod zarr;

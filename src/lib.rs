//! nzfs: a read-only FUSE filesystem over Zarr v3 / NZ-1.0 stores.
//!
//! The read path, one module per arrow:
//!
//! ```text
//! fuse adapter read(ino, off, size)                      fuse.rs
//!   -> filesystem core: ino -> Inode::Chunk {node, index} fs/
//!   -> cache: get (node, index), or decode it exactly once cache.rs
//!        -> chunk key encoding: index -> store key        zarr/chunk_key.rs
//!        -> store: key -> Option<bytes> (None = fill)     store.rs
//!        -> codec chain: bytes -> decoded chunk           codec/
//!   -> reply with a slice of the cached buffer (no copy)
//! ```
//!
//! `zarr`, `codec` and `store` never import from `fs` or `fuse`.

pub mod cache;
pub mod cdl;
pub mod cli;
pub mod codec;
pub mod daemon;
pub mod fs;
pub mod fuse;
pub mod netcdf;
pub mod nz;
pub mod store;
pub mod zarr;

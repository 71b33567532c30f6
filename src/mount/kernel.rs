//! What the mount core tells the kernel: to drop what it caches of a file
//! or of a name, once what they showed changed. The FUSE adapter gives the
//! session's notifier ([`Kernel`] is implemented for it there); the core
//! only asks.
//!
//! Invariant: nothing is told before the session exists (the slot is
//! empty until then, and nothing is cached before it).

use std::ffi::OsStr;
use std::sync::{Arc, OnceLock};

/// The kernel's caches of the mount.
pub trait Kernel: Send + Sync {
    /// Drop the pages of inode `ino` from `offset`, `len` bytes (0: to
    /// the end), and its attributes. `NotFound`: the kernel holds no such
    /// inode.
    fn drop_inode(&self, ino: u64, offset: i64, len: i64) -> std::io::Result<()>;
    /// Drop name `name` of directory inode `parent`.
    fn drop_entry(&self, parent: u64, name: &OsStr) -> std::io::Result<()>;
}

/// Where the kernel goes once the session exists.
pub type KernelSlot = Arc<OnceLock<Arc<dyn Kernel>>>;

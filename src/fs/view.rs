//! What a kind of named file is to the filesystem core: the
//! [`FileView`] each line of the table of file kinds (`kinds.rs`)
//! implements, beside the code that renders the file.

use super::{FILE_BLKSIZE, FsError, NzFs, ReadData};
use crate::store::Access;

/// Where a read's result goes (the FUSE adapter's reply).
pub(super) type Then = Box<dyn FnOnce(Result<ReadData, FsError>) + Send + 'static>;

/// One kind of named file: whether a directory has it, and its name, size,
/// access, version and bytes there.
pub(super) trait FileView: Sync {
    /// Its name where every directory that has it names it alike
    /// (`data.bin`), `None` where the name is the node's (`<group>.nc`):
    /// a lookup of another name skips the kind without asking [`FileView::name`].
    fn fixed_name(&self) -> Option<&'static str>;

    /// Its name in node `n`'s directory, or `None` when `n` has no such
    /// file.
    fn name<'a>(&self, fs: &'a NzFs, n: usize) -> Option<&'a str>;

    /// Its size in bytes: from metadata alone, unless
    /// [`FileView::attr_is_cheap`] says otherwise.
    fn size(&self, fs: &NzFs, n: usize) -> Result<u64, FsError>;

    /// Who may read it (`None`: the store has no owners; `Err`: it could
    /// not say).
    fn access(&self, fs: &NzFs, n: usize) -> Result<Option<Access>, ()>;

    /// Hand bytes `[offset, offset + size)` to `then`.
    fn read(&self, fs: &NzFs, n: usize, offset: u64, size: u32, then: Then);

    /// Whether its bytes follow the store's objects as they change: its
    /// attributes time out soon, and its mtime carries [`FileView::version`].
    fn follows_store(&self) -> bool {
        false
    }

    /// The version of the objects it shows, which its mtime carries
    /// (looked at only where [`FileView::follows_store`]).
    fn version(&self, fs: &NzFs, n: usize) -> Option<u64> {
        let _ = (fs, n);
        None
    }

    /// Whether node `n`'s file shows values of array `array` (`n` itself,
    /// or one below it): its pages are dropped when a chunk of `array`
    /// changed.
    fn shows_values_of(&self, fs: &NzFs, n: usize, array: usize) -> bool {
        let _ = (fs, n, array);
        false
    }

    /// Whether it is the array's values laid out as stored chunks can take
    /// back (`data.bin`): a writable mount takes writes into it.
    fn is_array_values(&self) -> bool {
        false
    }

    /// Whether its size comes without decoding (a listing hands the
    /// kernel only such attributes, so that `ls` decodes nothing).
    fn attr_is_cheap(&self) -> bool {
        true
    }

    /// The `st_blksize` it reports: the read size programs choose.
    fn blksize(&self) -> u32 {
        FILE_BLKSIZE
    }

    /// Told that bytes `[offset, end)` of file `ino` (node `n`'s) were
    /// served through the kernel's page cache (drop-behind).
    fn served(&self, fs: &NzFs, ino: u64, n: usize, offset: u64, end: u64) {
        let _ = (fs, ino, n, offset, end);
    }
}

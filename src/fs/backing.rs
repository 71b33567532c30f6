//! Backing files for FUSE passthrough: what the kernel reads instead of
//! asking the daemon.
//!
//! A chunk file of an array whose chunks are decoded whole (not a shard read
//! piece by piece) is decoded once into a sealed memfd. The adapter
//! registers that memfd with the kernel, and every read of the open file is
//! then served from the memfd's pages, like a file on tmpfs, with no round
//! trip to the daemon.
//!
//! Invariants:
//! - a backing file holds exactly the bytes a read through the daemon gives,
//!   and is sealed (no write, grow or shrink) before the kernel sees it;
//! - the pool keeps one backing per inode, which every open of that inode
//!   shares (the kernel requires it while any of them is open);
//! - a backing with an open handle is never dropped; the others are dropped
//!   least recently used first while the pool and the decoded-chunk cache
//!   together hold more than the cache budget, or more than [`MAX_ENTRIES`];
//!   and no backing is made that would take the open ones and the cache
//!   past the budget, unless none is open (that open is served by the
//!   daemon instead), so readers holding files open cannot take memory
//!   past the budget plus one chunk;
//! - creating a backing (the decode) runs outside the pool's lock.

use crate::sync::lock;
use std::fs::File;
use std::io::Write;
use std::os::fd::FromRawFd;
use std::sync::{Arc, Mutex};

use lru::LruCache;

use super::{Inode, NzFs};

/// Backing files kept at most (each is a kernel file and inode).
pub const MAX_ENTRIES: usize = 16384;

struct Entry<T> {
    backing: Arc<T>,
    bytes: u64,
    /// Open handles (a pinned entry is never dropped).
    open: u32,
}

struct PoolState<T> {
    lru: LruCache<u64, Entry<T>>,
    bytes: u64,
    /// Bytes of the entries with an open handle (which cannot be dropped).
    pinned: u64,
}

/// One backing per inode, within a byte budget shared with the decoded-chunk
/// cache. `T` is the adapter's handle on a registered backing file.
pub struct BackingPool<T> {
    state: Mutex<PoolState<T>>,
    budget: u64,
}

impl<T> PoolState<T> {
    /// The pooled backing of `ino`, with one more open handle.
    fn pin(&mut self, ino: u64) -> Option<Arc<T>> {
        let e = self.lru.get_mut(&ino)?;
        if e.open == 0 {
            self.pinned += e.bytes;
        }
        e.open += 1;
        Some(e.backing.clone())
    }
}

impl<T> BackingPool<T> {
    /// An empty pool that holds at most `budget` bytes.
    pub fn new(budget: u64) -> Self {
        BackingPool {
            state: Mutex::new(PoolState {
                lru: LruCache::unbounded(),
                bytes: 0,
                pinned: 0,
            }),
            budget,
        }
    }

    /// The backing of `ino` for a new open handle: the pooled one, or one
    /// made by `create` (which returns it and its size). `others` is what the
    /// decoded-chunk cache holds now; it counts against the same budget.
    /// `None` when a new backing of `expected` bytes would take the backings
    /// held open past the budget (they cannot be dropped; one is always
    /// allowed): that file is then read through the daemon, and memory
    /// stays within the budget (plus one chunk) however many readers hold
    /// files open.
    pub fn open<E>(
        &self,
        ino: u64,
        others: u64,
        expected: u64,
        create: impl FnOnce() -> Result<(T, u64), E>,
    ) -> Result<Option<Arc<T>>, E> {
        {
            let mut st = lock(&self.state);
            if let Some(found) = st.pin(ino) {
                return Ok(Some(found));
            }
            // One open backing is always allowed, as the decoded cache
            // always keeps its newest chunk.
            if st.pinned > 0 && st.pinned.saturating_add(expected).saturating_add(others) > self.budget {
                return Ok(None);
            }
        }
        let (backing, bytes) = create()?;
        let mut st = lock(&self.state);
        // Another open may have made one meanwhile: every handle must share it.
        if let Some(found) = st.pin(ino) {
            return Ok(Some(found));
        }
        let backing = Arc::new(backing);
        let entry = Entry {
            backing: backing.clone(),
            bytes,
            open: 1,
        };
        st.lru.put(ino, entry);
        st.bytes += bytes;
        st.pinned += bytes;
        self.evict(&mut st, others);
        Ok(Some(backing))
    }

    /// A handle of `ino` was closed.
    pub fn release(&self, ino: u64, others: u64) {
        let mut st = lock(&self.state);
        // The last handle's release unpins it.
        let unpinned = st.lru.peek_mut(&ino).filter(|e| e.open > 0).and_then(|e| {
            e.open -= 1;
            (e.open == 0).then_some(e.bytes)
        });
        if let Some(bytes) = unpinned {
            st.pinned -= bytes;
        }
        self.evict(&mut st, others);
    }

    /// Drop `ino`'s backing unless a handle has it open (its chunk object
    /// changed: the next open makes a new one).
    pub fn forget_unopened(&self, ino: u64) {
        let mut st = lock(&self.state);
        if st.lru.peek(&ino).is_some_and(|e| e.open == 0)
            && let Some(e) = st.lru.pop(&ino)
        {
            st.bytes -= e.bytes;
        }
    }

    /// Whether `ino` has a pooled backing (open or not).
    pub fn contains(&self, ino: u64) -> bool {
        lock(&self.state).lru.contains(&ino)
    }

    /// Bytes of backing files held, and how many.
    pub fn usage(&self) -> (u64, usize) {
        let st = lock(&self.state);
        (st.bytes, st.lru.len())
    }

    /// Drop unopened backings, least recently used first, until the budget
    /// and the entry cap are kept (or only open ones are left).
    fn evict(&self, st: &mut PoolState<T>, others: u64) {
        let (mut bytes, mut len) = (st.bytes, st.lru.len());
        let mut victims = Vec::new();
        for (&ino, e) in st.lru.iter().rev() {
            if bytes + others <= self.budget && len <= MAX_ENTRIES {
                break;
            }
            if e.open == 0 {
                victims.push(ino);
                bytes -= e.bytes;
                len -= 1;
            }
        }
        for ino in victims {
            if let Some(e) = st.lru.pop(&ino) {
                st.bytes -= e.bytes;
            }
        }
    }
}

/// A sealed memfd holding `bytes`, then zeros up to `len` bytes (sparse:
/// they cost no memory): readable, never writable, growable or shrinkable
/// again.
pub fn sealed_memfd(bytes: &[u8], len: u64) -> std::io::Result<File> {
    let flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    // The system call, not glibc's wrapper (glibc 2.27+): the wheel's
    // binary links against glibc 2.17; the kernel has had the
    // call since 3.17.
    // SAFETY: a valid NUL-terminated name and flags; the result is checked.
    let fd = unsafe { libc::syscall(libc::SYS_memfd_create, c"nzfs-chunk".as_ptr(), flags) } as libc::c_int;
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` was just created and is owned by nobody else.
    let mut file = unsafe { File::from_raw_fd(fd) };
    file.write_all(bytes)?;
    if len > bytes.len() as u64 {
        file.set_len(len)?;
    }
    let seals = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL;
    // SAFETY: fcntl on an fd we own.
    if unsafe { libc::fcntl(fd, libc::F_ADD_SEALS, seals) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(file)
}

impl NzFs {
    /// The chunk (node, index) that file `ino` shows, when it can be served
    /// from a backing file: a chunk file of an array with fixed-size
    /// elements whose chunks are decoded whole. Its content is
    /// [`NzFs::chunk`], which stays in the decoded cache, so that `data.bin`,
    /// the `.nc` and a re-opened backing need neither the store nor a decode;
    /// the pool gives way to the cache when both do not fit.
    pub fn passthrough_chunk(&self, ino: u64) -> Option<(usize, u64)> {
        let Some((Inode::Chunk { node, index }, _)) = Inode::from_ino(ino) else {
            return None;
        };
        let (array, names) = self.array(node).ok()?;
        let eligible =
            index < names.count() && !array.reads_partially() && array.metadata().data_type.element_size().is_some();
        eligible.then_some((node, index))
    }

    /// Note an open of chunk file `index` of `node` served by passthrough
    /// (its reads never reach the daemon, so the sequential-reader detection
    /// starts here).
    pub fn note_open(&self, node: usize, index: u64) {
        self.note_chunk_start(node, index);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Seek};

    #[test]
    fn memfd_holds_the_bytes_and_is_sealed() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let mut f = sealed_memfd(&data, 0).unwrap();
        let mut back = Vec::new();
        f.rewind().unwrap();
        f.read_to_end(&mut back).unwrap();
        assert!(back == data, "the memfd holds other bytes");
        assert!(f.write_all(b"x").is_err(), "a sealed memfd must refuse writes");
        assert!(f.set_len(10).is_err(), "a sealed memfd must refuse truncation");
    }

    #[test]
    fn pool_shares_pins_and_evicts_only_closed_entries() {
        let pool: BackingPool<u32> = BackingPool::new(100);
        let made = std::cell::Cell::new(0);
        let mk = |v: u32| {
            made.set(made.get() + 1);
            Ok::<_, ()>((v, 40))
        };
        let a = pool.open(1, 0, 40, || mk(1)).unwrap().unwrap();
        let a2 = pool.open(1, 0, 40, || mk(99)).unwrap().unwrap();
        assert!(Arc::ptr_eq(&a, &a2), "a second open shares the first backing");
        assert_eq!(made.get(), 1);
        pool.open(2, 0, 40, || mk(2)).unwrap().unwrap();
        // 1 and 2 are open and cannot go: a third would take the pool past
        // its budget, so none is made (that open reads through the daemon).
        assert!(pool.open(3, 0, 40, || mk(3)).unwrap().is_none());
        assert_eq!(made.get(), 2);
        assert_eq!(pool.usage(), (80, 2));
        // Closing 2 leaves room: 3 is made, and 2 (closed, least recently
        // used) goes.
        pool.release(2, 0);
        pool.open(3, 0, 40, || mk(3)).unwrap().unwrap();
        assert!(!pool.contains(2));
        assert!(pool.contains(1) && pool.contains(3));
        // 1 has two handles: one release keeps it pinned.
        pool.release(1, 0);
        pool.release(3, 0);
        assert_eq!(pool.usage(), (80, 2));
        // The decoded cache's bytes count against the same budget.
        pool.release(1, 50);
        assert!(!pool.contains(1), "1 was least recently used and closed");
        assert!(pool.contains(3));
        // A new backing while one is open and the cache holds most of the
        // budget: refused.
        let _three = pool.open(3, 0, 40, || mk(3)).unwrap().unwrap();
        assert!(pool.open(5, 70, 40, || mk(5)).unwrap().is_none());
        // An error from create leaves nothing behind.
        assert!(pool.open(4, 0, 40, || Err::<(u32, u64), ()>(())).is_err());
        assert!(!pool.contains(4));
    }
}

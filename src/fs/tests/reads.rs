//! The reads of the filesystem core: prefetch runs and windows around
//! drop-behind, advice off the readers' path, reads answered while another
//! thread decodes, and failing objects met by prefetch.

use std::ffi::OsStr;

use super::*;
use crate::store::{Stamp, StoreKey};

/// Chunks the prefetch workers were given, once they have finished them.
fn prefetched(fs: &NzFs) -> u64 {
    let counters = &fs.prefetch.get().unwrap().counters;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let load = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
    while load(&counters.done) < load(&counters.queued) {
        assert!(std::time::Instant::now() < deadline, "the workers did not finish");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    load(&counters.queued)
}

/// Prefetch skips a chunk that a reader has just read whole and let go to
/// the kernel page cache (`served`): a run that reaches it queues the
/// chunks after it, not it.
#[test]
fn prefetch_skips_a_chunk_just_let_go() {
    let dir = tempfile::tempdir().unwrap();
    let (fs, node) = sixteen_chunks(dir.path());
    let ino = |index| Inode::Chunk { node, index }.to_ino();
    let cached = |index| fs.array(node).unwrap().0.is_cached(index);

    // Chunk 5 read whole through the page cache: let go.
    assert_eq!(fs.read(ino(5), 0, 1024).unwrap().bytes(), [5; 1024]);
    fs.note_served(ino(5), 0, 1024);
    assert!(!cached(5));
    // Chunk 3 started near 5: a run, whose window covers 4 to 15.
    fs.read(ino(3), 0, 1024).unwrap();
    fs.read(ino(4), 0, 1024).unwrap();
    assert_eq!(prefetched(&fs), 11, "chunks 4 and 6 to 15");
    assert!((6..16).all(cached), "the window after it was prefetched");
    assert!(!cached(5), "the chunk let go was not decoded again");
}

/// Two readers sharing an array's chunk files (one the even, one the odd)
/// start them a little out of order: still one run, prefetched. A reader
/// that jumps far is not one.
#[test]
fn readers_sharing_the_files_keep_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let (fs, node) = sixteen_chunks(dir.path());
    let ino = |index| Inode::Chunk { node, index }.to_ino();
    for i in [9, 2] {
        fs.read(ino(i), 0, 1024).unwrap();
    }
    assert_eq!(prefetched(&fs), 0, "a jump of 7 is no run");
    for i in [4, 3] {
        fs.read(ino(i), 0, 1024).unwrap();
    }
    // 4 after 2, then 3 after 4: a run from 4 on (9 is cached).
    assert_eq!(prefetched(&fs), 10, "chunks 5 to 15 but 9");
}

/// A read of the first chunk file, or of `data.bin` from offset 0, starts
/// a run at once (a reader from the start is taken to go on); a read that
/// starts elsewhere does not.
#[test]
fn a_read_from_the_start_starts_a_run() {
    for first in ["a chunk file", "data.bin"] {
        let dir = tempfile::tempdir().unwrap();
        let (fs, node) = sixteen_chunks(dir.path());
        let cached = |index| fs.array(node).unwrap().0.is_cached(index);
        let ino = |index| Inode::Chunk { node, index }.to_ino();
        let data_bin = fs.lookup(node as u64 + 1, OsStr::new("data.bin")).unwrap().ino;
        // Elsewhere: nothing queued.
        match first {
            "data.bin" => assert_eq!(fs.read(data_bin, 7 * 1024, 1024).unwrap().bytes(), [7; 1024]),
            _ => assert_eq!(fs.read(ino(7), 0, 1024).unwrap().bytes(), [7; 1024]),
        }
        assert_eq!(prefetched(&fs), 0, "{first}: after a read of chunk 7");
        // From the start: the window (START_BYTES covers all 15 others).
        match first {
            "data.bin" => assert_eq!(fs.read(data_bin, 0, 1024).unwrap().bytes(), [0; 1024]),
            _ => assert_eq!(fs.read(ino(0), 0, 1024).unwrap().bytes(), [0; 1024]),
        }
        assert_eq!(prefetched(&fs), 14, "{first}: chunks 1 to 15 but 7");
        assert!((1..16).all(cached), "{first}");
    }
}

/// `data.bin` through `read_then` (the FUSE adapter's read): a read in one
/// chunk is answered through the cache's callback, a read across chunks
/// as `read` answers it; both carry the chunks' bytes, and a read from the
/// start still starts a prefetch run.
#[test]
fn data_bin_reads_through_the_callback_path() {
    let dir = tempfile::tempdir().unwrap();
    let (fs, node) = sixteen_chunks(dir.path());
    let data_bin = fs.lookup(node as u64 + 1, OsStr::new("data.bin")).unwrap().ino;
    let read_then = |offset, size| {
        let (tx, rx) = std::sync::mpsc::channel();
        fs.read_then(data_bin, offset, size, move |r| {
            tx.send(r.map(|d| d.bytes().to_vec())).unwrap()
        });
        rx.recv_timeout(std::time::Duration::from_secs(10)).unwrap().unwrap()
    };
    assert_eq!(read_then(0, 1024), [0; 1024]);
    assert_eq!(read_then(3 * 1024 + 1000, 48), [[3; 24], [4; 24]].concat());
    assert_eq!(read_then(15 * 1024 + 1000, 4096), [15; 24]);
    assert_eq!(read_then(16 * 1024, 10), [0u8; 0]);
    assert_eq!(prefetched(&fs), 15, "the run from offset 0: chunks 1 to 15");
}

/// A local store whose advice ([`ReadableStore::will_need`]) takes 300 ms
/// an object, as opens of cold objects can, and is counted.
struct SlowAdvice(
    crate::store::FilesystemStore,
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
);

impl ReadableStore for SlowAdvice {
    fn get(&self, key: &StoreKey, max_len: u64) -> crate::store::StoreResult<Option<Vec<u8>>> {
        self.0.get(key, max_len)
    }
    fn get_range(
        &self,
        key: &StoreKey,
        o: u64,
        n: u64,
        e: Option<Stamp>,
    ) -> crate::store::StoreResult<Option<Vec<u8>>> {
        self.0.get_range(key, o, n, e)
    }
    fn stat(&self, key: &StoreKey) -> crate::store::StoreResult<Option<Stamp>> {
        self.0.stat(key)
    }
    fn profile(&self) -> crate::store::Profile {
        crate::store::Profile {
            rereads_are_cheap: true,
            ..Default::default()
        }
    }
    fn will_need(&self, _key: &StoreKey) {
        std::thread::sleep(std::time::Duration::from_millis(300));
        self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl crate::store::Listable for SlowAdvice {
    fn list_dir(&self, prefix: &str) -> crate::store::StoreResult<crate::store::Listing> {
        self.0.list_dir(prefix)
    }
}

/// The disk is told of a run's window by the advising threads, not in the
/// reader's request: a read that queues 15 chunks answers long before 15
/// slow advices (4.5 s) would let it, and all 15 are given meanwhile.
#[test]
fn advice_is_given_off_the_readers_path() {
    let dir = tempfile::tempdir().unwrap();
    let advised = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = advised.clone();
    let (fs, node) = sixteen_chunks_through(dir.path(), |store| Box::new(SlowAdvice(store, counter)));
    let t = std::time::Instant::now();
    let chunk0 = Inode::Chunk { node, index: 0 }.to_ino();
    assert_eq!(fs.read(chunk0, 0, 1024).unwrap().bytes(), [0; 1024]);
    assert!(
        t.elapsed() < std::time::Duration::from_secs(2),
        "the read waited {:?}",
        t.elapsed()
    );
    assert_eq!(prefetched(&fs), 15, "chunks 1 to 15 queued");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while advised.load(std::sync::atomic::Ordering::Relaxed) < 15 {
        assert!(std::time::Instant::now() < deadline, "the advice was not all given");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Two readers of one `data.bin`, far apart and taking turns (as MPI ranks
/// or `xargs -P` readers of disjoint ranges do), each keep a run of their
/// own: the window ahead of each is decoded, where one run per array was
/// reset by every turn and prefetched for neither.
#[test]
fn readers_of_one_data_bin_each_get_their_window() {
    const MIB: u64 = 1 << 20;
    let dir = tempfile::tempdir().unwrap();
    let (fs, node) = chunks_through(dir.path(), 48, MIB as usize, 64 * MIB, |store| Box::new(store));
    let data_bin = fs.lookup(node as u64 + 1, OsStr::new("data.bin")).unwrap().ino;
    let cached = |index| fs.array(node).unwrap().0.is_cached(index);
    let step = 64 << 10;
    for k in 0..4 {
        assert_eq!(fs.read(data_bin, k * step, step as u32).unwrap().bytes()[0], 0);
        assert_eq!(
            fs.read(data_bin, 32 * MIB + k * step, step as u32).unwrap().bytes()[0],
            32
        );
    }
    prefetched(&fs);
    assert!([1, 2].into_iter().all(cached), "the first reader's window");
    assert!([33, 34].into_iter().all(cached), "the second reader's window");
}

/// A store that holds back its reads of one object until told: each
/// read of it says so on `entered`, then waits for `open`.
struct Gated {
    inner: Box<dyn ReadableStore>,
    key: &'static str,
    entered: std::sync::Mutex<std::sync::mpsc::Sender<()>>,
    open: std::sync::Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
}

impl Gated {
    fn wait(&self, key: &StoreKey) {
        if key.as_str() != self.key {
            return;
        }
        let _ = crate::sync::lock(&self.entered).send(());
        let (open, cv) = &*self.open;
        let mut o = crate::sync::lock(open);
        while !*o {
            o = crate::sync::wait(cv, o);
        }
    }
}

impl ReadableStore for Gated {
    fn get(&self, key: &StoreKey, max: u64) -> crate::store::StoreResult<Option<Vec<u8>>> {
        self.wait(key);
        self.inner.get(key, max)
    }
    fn get_range(
        &self,
        key: &StoreKey,
        offset: u64,
        len: u64,
        expect: Option<Stamp>,
    ) -> crate::store::StoreResult<Option<Vec<u8>>> {
        self.wait(key);
        self.inner.get_range(key, offset, len, expect)
    }
    fn stat(&self, key: &StoreKey) -> crate::store::StoreResult<Option<Stamp>> {
        self.inner.stat(key)
    }
    fn wrapped(&self) -> Option<&dyn ReadableStore> {
        Some(self.inner.as_ref())
    }
}

impl crate::store::Listable for Gated {
    fn list_dir(&self, prefix: &str) -> crate::store::StoreResult<crate::store::Listing> {
        self.inner.list_dir(prefix)
    }
}

/// Over 4 chunks of 1 KiB, whose chunk 1 is being decoded by another
/// reader (held in the store): `read_then` of `file`'s bytes `[offset,
/// offset + 1024)` returns at once, and is answered once chunk 1 is read,
/// with the bytes `expected` makes of the array's (`data.bin`'s 512 to
/// 1536).
fn answered_while_a_decode_is_pending(file: impl Fn(&NzFs, usize) -> (u64, u64)) {
    let dir = tempfile::tempdir().unwrap();
    let open = std::sync::Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
    let (entered_tx, entered) = std::sync::mpsc::channel();
    let gate = open.clone();
    let (fs, node) = chunks_through(dir.path(), 4, 1024, 1 << 20, move |s| {
        Box::new(Gated {
            inner: Box::new(s),
            key: "a/c/1",
            entered: std::sync::Mutex::new(entered_tx),
            open: gate,
        })
    });
    let release = || {
        *crate::sync::lock(&open.0) = true;
        open.1.notify_all();
    };
    // Another reader decodes chunk 1, held in the store.
    let chunk = Inode::Chunk { node, index: 1 }.to_ino();
    let other = std::thread::spawn({
        let fs = fs.clone();
        move || fs.read(chunk, 0, 1024).map(|d| d.bytes().to_vec())
    });
    entered.recv_timeout(std::time::Duration::from_secs(10)).unwrap();
    let (ino, offset) = file(&fs, node);
    let (answer_tx, answer) = std::sync::mpsc::channel();
    let (returned_tx, returned) = std::sync::mpsc::channel();
    let reader = std::thread::spawn({
        let fs = fs.clone();
        move || {
            fs.read_then(ino, offset, 1024, move |r| {
                let _ = answer_tx.send(r.map(|d| d.bytes().to_vec()));
            });
            let _ = returned_tx.send(());
        }
    });
    let came_back = returned.recv_timeout(std::time::Duration::from_secs(5)).is_ok();
    let early = answer.try_recv().is_ok();
    release();
    assert!(came_back, "the read waited for the decode another thread runs");
    assert!(!early, "answered before chunk 1 was read");
    let bytes = answer
        .recv_timeout(std::time::Duration::from_secs(10))
        .unwrap()
        .unwrap();
    assert_eq!(bytes, [vec![0u8; 512], vec![1u8; 512]].concat());
    assert_eq!(other.join().unwrap().unwrap(), [1u8; 1024]);
    reader.join().unwrap();
}

/// A read of `data.bin` across two chunks, one of which another thread
/// is decoding, leaves its FUSE thread free: the decoding thread answers it.
#[test]
fn a_data_bin_read_across_chunks_is_answered_while_a_decode_is_pending() {
    answered_while_a_decode_is_pending(|fs, node| {
        let a = fs.lookup(1, OsStr::new(&fs.info[node].dir_name)).unwrap();
        (fs.lookup(a.ino, OsStr::new(DATA_NAME)).unwrap().ino, 512)
    });
}

/// The same of the group's `.nc` (a uint8 variable: its bytes are
/// `data.bin`'s, after the header).
#[test]
fn a_netcdf_read_is_answered_while_a_decode_is_pending() {
    answered_while_a_decode_is_pending(|fs, node| {
        let name = fs.info[0].nc.name.clone().unwrap();
        let begin = fs
            .nc_layout(0)
            .unwrap()
            .variables
            .iter()
            .find(|v| v.node == node)
            .unwrap()
            .begin;
        (fs.lookup(1, OsStr::new(&name)).unwrap().ino, begin + 512)
    });
}

/// A prefetch worker that meets a failing object leaves nothing behind:
/// the reader who then reads that chunk gets its error (not a hang, not a
/// cached failure), the chunks around it are prefetched as before, and
/// once the object heals the same read gives its bytes.
#[test]
fn a_failing_object_met_by_prefetch_fails_only_its_own_reads() {
    let dir = tempfile::tempdir().unwrap();
    let faulty = std::sync::Arc::new(std::sync::OnceLock::new());
    let keep = faulty.clone();
    let (fs, node) = sixteen_chunks_through(dir.path(), move |s| {
        let store = crate::store::FaultyStore::over(Box::new(s));
        store.fail("a/c/7", crate::store::Fault::Io);
        let _ = keep.set(store.clone());
        Box::new(store)
    });
    let ino = |index| Inode::Chunk { node, index }.to_ino();
    let cached = |index| fs.array(node).unwrap().0.is_cached(index);
    // A run from chunk 3: the workers take 5 to 15, and 7 fails.
    fs.read(ino(3), 0, 1024).unwrap();
    fs.read(ino(4), 0, 1024).unwrap();
    prefetched(&fs);
    assert!((8..16).all(cached), "the chunks after the failing one were prefetched");
    assert!(!cached(7), "no failure is cached");
    let e = fs.read(ino(7), 0, 1024).unwrap_err();
    assert_eq!(e.errno(), libc::EIO, "{e}");
    assert!(e.to_string().contains("a/c/7"), "{e}");
    faulty.get().unwrap().heal("a/c/7");
    assert_eq!(fs.read(ino(7), 0, 1024).unwrap().bytes(), [7; 1024]);
}

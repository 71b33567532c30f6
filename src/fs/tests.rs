//! Unit tests of the filesystem core: ownership and modes, which store
//! calls `open`/`access` make, and prefetch around drop-behind.

use std::ffi::OsStr;

use super::*;
use crate::store::{MemoryStore, Stamp, StoreKey};

/// A store with no notion of owners (as object storage will be).
fn ownerless() -> NzFs {
    ownerless_with(|_| {})
}

/// [`ownerless`], its settings changed by `change`.
fn ownerless_with(change: impl FnOnce(&mut FsConfig)) -> NzFs {
    let mut m = MemoryStore::default();
    m.insert("zarr.json", r#"{"zarr_format": 3, "node_type": "group"}"#);
    m.insert(
        "a/zarr.json",
        r#"{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]}"#,
    );
    m.insert("a/c/0", vec![1u8, 2]);
    let h = Hierarchy::open(&m).unwrap();
    let mut config = FsConfig {
        cache_bytes: 1 << 20,
        missing_chunks: MissingChunks::Fill,
        dataset_name: "t".into(),
        uid: 4242,
        gid: 4343,
        mtime: SystemTime::UNIX_EPOCH,
        ..Default::default()
    };
    change(&mut config);
    NzFs::new(Box::new(m), h, config).unwrap()
}

fn attrs(fs: &NzFs) -> Vec<(u16, u32, u32)> {
    let a = fs.lookup(1, OsStr::new("a")).unwrap();
    let names = ["0.bin", "1.bin", "data.bin", "header.cdl"];
    std::iter::once(fs.getattr(1).unwrap())
        .chain(std::iter::once(a))
        .chain(names.iter().map(|n| fs.lookup(a.ino, OsStr::new(n)).unwrap()))
        .map(|x| (x.perm, x.uid, x.gid))
        .collect()
}

#[test]
fn a_store_without_owners_shows_the_mounting_user_with_the_umask() {
    let dir = (0o555, 4242, 4343);
    let file = (0o444, 4242, 4343);
    assert_eq!(attrs(&ownerless()), [dir, dir, file, file, file, file]);
    let fs = ownerless_with(|c| {
        c.ownership = Ownership {
            uid: None,
            gid: Some(7),
            umask: Some(0o027),
        }
    });
    let (dir, file) = ((0o550, 4242, 7), (0o440, 4242, 7));
    assert_eq!(attrs(&fs), [dir, dir, file, file, file, file]);
}

/// A store that counts the owner lookups asked of it.
struct CountingAccess(MemoryStore, std::sync::Arc<std::sync::atomic::AtomicU64>);

impl ReadableStore for CountingAccess {
    fn get(&self, key: &crate::store::StoreKey, max: u64) -> crate::store::StoreResult<Option<Vec<u8>>> {
        self.0.get(key, max)
    }
    fn get_range(
        &self,
        key: &crate::store::StoreKey,
        offset: u64,
        len: u64,
        expect: Option<crate::store::Stamp>,
    ) -> crate::store::StoreResult<Option<Vec<u8>>> {
        self.0.get_range(key, offset, len, expect)
    }
    fn stat(&self, key: &crate::store::StoreKey) -> crate::store::StoreResult<Option<crate::store::Stamp>> {
        self.0.stat(key)
    }
    fn list_dir(&self, prefix: &str) -> crate::store::StoreResult<crate::store::Listing> {
        self.0.list_dir(prefix)
    }
    fn access(&self, _path: &str) -> crate::store::StoreResult<Option<Access>> {
        self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(None)
    }
}

#[test]
fn open_and_access_ask_the_store_for_no_owner() {
    let calls = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let plain = ownerless();
    let h = Hierarchy::open(plain.store()).unwrap();
    let mut m = MemoryStore::default();
    for key in ["zarr.json", "a/zarr.json", "a/c/0"] {
        let k = crate::store::StoreKey::new(key).unwrap();
        m.insert(key, plain.store().get(&k, 1 << 20).unwrap().unwrap());
    }
    let fs = NzFs::new(Box::new(CountingAccess(m, calls.clone())), h, plain.config().clone()).unwrap();
    let a = fs.lookup(1, OsStr::new("a")).unwrap();
    let chunk = fs.lookup(a.ino, OsStr::new("0.bin")).unwrap();
    let before = calls.load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(fs.kind(chunk.ino).unwrap(), Kind::File);
    assert!(fs.open(chunk.ino, false).is_ok());
    assert_eq!(fs.open(a.ino, false).unwrap_err().errno(), libc::EISDIR);
    assert_eq!(fs.open(chunk.ino, true).unwrap_err().errno(), libc::EROFS);
    assert_eq!(calls.load(std::sync::atomic::Ordering::Relaxed), before);
    fs.getattr(chunk.ino).unwrap();
    assert!(
        calls.load(std::sync::atomic::Ordering::Relaxed) > before,
        "getattr asks"
    );
}

/// A filesystem with its prefetch workers over array `a` of 16 chunks of
/// 1 KiB (chunk `i` holds bytes `i`), and `a`'s node.
fn sixteen_chunks(root: &std::path::Path) -> (std::sync::Arc<NzFs>, usize) {
    sixteen_chunks_through(root, |store| Box::new(store))
}

/// [`sixteen_chunks`], its store wrapped by `wrap`.
fn sixteen_chunks_through(
    root: &std::path::Path,
    wrap: impl FnOnce(crate::store::FilesystemStore) -> Box<dyn ReadableStore>,
) -> (std::sync::Arc<NzFs>, usize) {
    chunks_through(root, 16, 1024, ownerless().config().cache_bytes, wrap)
}

/// A filesystem with its prefetch workers and a cache of `cache_bytes`
/// over array `a` of `count` chunks of `len` bytes (chunk `i` holds bytes
/// `i`), its store wrapped by `wrap`; and `a`'s node.
fn chunks_through(
    root: &std::path::Path,
    count: u8,
    len: usize,
    cache_bytes: u64,
    wrap: impl FnOnce(crate::store::FilesystemStore) -> Box<dyn ReadableStore>,
) -> (std::sync::Arc<NzFs>, usize) {
    std::fs::write(root.join("zarr.json"), r#"{"zarr_format": 3, "node_type": "group"}"#).unwrap();
    std::fs::create_dir_all(root.join("a/c")).unwrap();
    let shape = usize::from(count) * len;
    std::fs::write(
        root.join("a/zarr.json"),
        format!(
            r#"{{"zarr_format": 3, "node_type": "array", "shape": [{shape}], "data_type": "uint8",
            "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [{len}]}}}},
            "chunk_key_encoding": {{"name": "default"}}, "fill_value": 0, "codecs": [{{"name": "bytes"}}]}}"#
        ),
    )
    .unwrap();
    for i in 0..count {
        std::fs::write(root.join(format!("a/c/{i}")), vec![i; len]).unwrap();
    }
    let store = wrap(crate::store::FilesystemStore::new(root));
    let h = Hierarchy::open(store.as_ref()).unwrap();
    let mut options = ownerless().config().clone();
    options.cache_bytes = cache_bytes;
    let fs = std::sync::Arc::new(NzFs::new(store, h, options).unwrap());
    fs.start_prefetcher();
    let node = (fs.lookup(1, OsStr::new("a")).unwrap().ino - 1) as usize;
    (fs, node)
}

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
    fn list_dir(&self, prefix: &str) -> crate::store::StoreResult<crate::store::Listing> {
        self.0.list_dir(prefix)
    }
    fn rereads_are_cheap(&self) -> bool {
        true
    }
    fn will_need(&self, _key: &StoreKey) {
        std::thread::sleep(std::time::Duration::from_millis(300));
        self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
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

/// The status document fits the ioctl that carries it, however long the
/// store's name and the recent errors' messages are.
#[test]
fn the_status_document_fits_its_ioctl_with_long_messages() {
    let fs = ownerless_with(|c| c.store_name = format!("s3://bucket/{}", "é".repeat(20_000)));
    for i in 0..3 * status::RECENT {
        fs.note_error(&FsError::BrokenNode {
            path: format!("g{i}/{}", "ü".repeat(50_000)),
            reason: "x".repeat(100_000),
        });
    }
    // The adapter's own members take a few hundred bytes more.
    let doc = fs.status_document(vec![("adapter", crate::json::Value::Str("a".repeat(500)))], true);
    assert!(doc.len() <= status::STATUS_BYTES, "{} bytes", doc.len());
    let parsed = crate::json::parse(doc.as_bytes()).unwrap();
    let recent = parsed
        .get("errors")
        .and_then(|e| e.get("recent"))
        .and_then(|r| r.as_array())
        .unwrap();
    assert_eq!(recent.len(), status::RECENT);
    let message = recent[0].get("message").and_then(|m| m.as_str()).unwrap();
    assert!(
        message.ends_with('…') && message.len() <= status::MESSAGE_BYTES,
        "{}",
        message.len()
    );
    // Messages of control characters, six bytes each once escaped, are
    // left out rather than make the document too long.
    for _ in 0..status::RECENT {
        fs.note_error(&FsError::TooLarge {
            path: "\u{1}".repeat(5000),
            what: "data.bin",
            bytes: 0,
        });
    }
    let doc = fs.status_document(Vec::new(), true);
    assert!(doc.len() <= status::STATUS_BYTES, "{} bytes", doc.len());
    assert!(doc.contains("left out: too long once escaped"), "{doc}");
    // Others than root and the owner get no message, only times and kinds.
    let doc = fs.status_document(Vec::new(), false);
    assert!(!doc.contains('\u{1}') && !doc.contains("\\u0001"), "{doc}");
    assert!(doc.contains(status::WITHHELD), "{doc}");
}

/// A local store that counts the `stat`s and the reads asked of it.
struct CountingCalls(
    crate::store::FilesystemStore,
    std::sync::Arc<[std::sync::atomic::AtomicUsize; 2]>,
);

impl CountingCalls {
    fn read(&self) {
        self.1[1].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl ReadableStore for CountingCalls {
    fn get(&self, key: &StoreKey, max_len: u64) -> crate::store::StoreResult<Option<Vec<u8>>> {
        self.read();
        self.0.get(key, max_len)
    }
    fn get_into(&self, key: &StoreKey, max_len: u64, buf: &mut Vec<u8>) -> crate::store::StoreResult<bool> {
        self.read();
        self.0.get_into(key, max_len, buf)
    }
    fn get_stamped(
        &self,
        key: &StoreKey,
        max_len: u64,
        buf: &mut Vec<u8>,
    ) -> crate::store::StoreResult<(bool, Option<Stamp>)> {
        self.read();
        self.0.get_stamped(key, max_len, buf)
    }
    fn get_range(
        &self,
        key: &StoreKey,
        o: u64,
        n: u64,
        e: Option<Stamp>,
    ) -> crate::store::StoreResult<Option<Vec<u8>>> {
        self.read();
        self.0.get_range(key, o, n, e)
    }
    fn stat(&self, key: &StoreKey) -> crate::store::StoreResult<Option<Stamp>> {
        self.1[0].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.0.stat(key)
    }
    fn list_dir(&self, prefix: &str) -> crate::store::StoreResult<crate::store::Listing> {
        self.0.list_dir(prefix)
    }
    fn rereads_are_cheap(&self) -> bool {
        true
    }
}

/// A cold chunk of a local store is read with one call, which resolves
/// and `fstat`s its object once and stamps the decode with that `fstat`
/// (old code: a `stat` first, so two resolves and two `fstat`s). A change
/// of the object is still seen: the stamp is the object's.
#[test]
fn a_cold_local_chunk_is_resolved_once() {
    use std::sync::atomic::Ordering::Relaxed;
    let dir = tempfile::tempdir().unwrap();
    let calls = std::sync::Arc::new([
        std::sync::atomic::AtomicUsize::new(0),
        std::sync::atomic::AtomicUsize::new(0),
    ]);
    let counter = calls.clone();
    let (fs, node) = sixteen_chunks_through(dir.path(), |store| Box::new(CountingCalls(store, counter)));
    let before = (calls[0].load(Relaxed), calls[1].load(Relaxed));
    assert_eq!(&fs.chunk(node, 3).unwrap()[..], &[3u8; 1024][..]);
    let after = (calls[0].load(Relaxed), calls[1].load(Relaxed));
    assert_eq!(
        (after.0 - before.0, after.1 - before.1),
        (0, 1),
        "(stats, reads) of one cold chunk"
    );
    // The decode was stamped: a rewrite of the object is seen at the next
    // open of its file, and the chunk decoded again.
    std::fs::write(dir.path().join("a/c/3"), [9u8; 1024]).unwrap();
    let ino = Inode::Chunk { node, index: 3 }.to_ino();
    assert_eq!(fs.recheck_open(ino), crate::array::Check::Changed);
    assert_eq!(&fs.chunk(node, 3).unwrap()[..], &[9u8; 1024][..]);
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
    fn list_dir(&self, prefix: &str) -> crate::store::StoreResult<crate::store::Listing> {
        self.inner.list_dir(prefix)
    }
    fn access(&self, path: &str) -> crate::store::StoreResult<Option<Access>> {
        self.inner.access(path)
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
        let name = fs.info[0].nc_name.clone().unwrap();
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

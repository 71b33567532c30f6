//! Partial decoding of shards, proven by counting the work (store bytes and
//! decodes), not by timing; and shards with a broken index.

mod common;

use std::ffi::OsStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use nzfs::fs::{FsConfig, MissingChunks, NzFs};
use nzfs::store::{FilesystemStore, Listing, ReadableStore, Stamp, StoreKey};
use nzfs::zarr::hierarchy::Hierarchy;

/// Counts the chunk bytes nzfs asks the store for (metadata reads aside).
#[derive(Default)]
struct Counters {
    bytes: AtomicU64,
    requests: AtomicU64,
}

struct CountingStore {
    inner: FilesystemStore,
    counters: Arc<Counters>,
}

impl CountingStore {
    fn count(&self, v: &Option<Vec<u8>>) {
        if let Some(v) = v {
            self.counters.bytes.fetch_add(v.len() as u64, Ordering::Relaxed);
            self.counters.requests.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl ReadableStore for CountingStore {
    fn get(&self, key: &StoreKey, max_len: u64) -> nzfs::store::StoreResult<Option<Vec<u8>>> {
        let v = self.inner.get(key, max_len)?;
        self.count(&v);
        Ok(v)
    }
    fn get_range(
        &self,
        key: &StoreKey,
        offset: u64,
        len: u64,
        expect: Option<Stamp>,
    ) -> nzfs::store::StoreResult<Option<Vec<u8>>> {
        let v = self.inner.get_range(key, offset, len, expect)?;
        self.count(&v);
        Ok(v)
    }
    fn stat(&self, key: &StoreKey) -> nzfs::store::StoreResult<Option<Stamp>> {
        self.inner.stat(key)
    }
}

impl nzfs::store::Listable for CountingStore {
    fn list_dir(&self, prefix: &str) -> nzfs::store::StoreResult<Listing> {
        self.inner.list_dir(prefix)
    }
}

fn open(store: &str) -> (NzFs, Arc<Counters>) {
    let path = common::data_dir().join(store);
    let fs_store = FilesystemStore::new(&path);
    let h = Hierarchy::open(&fs_store).unwrap();
    let counters = Arc::new(Counters::default());
    let store = CountingStore {
        inner: fs_store,
        counters: counters.clone(),
    };
    let options = FsConfig {
        cache_bytes: 64 << 20,
        missing_chunks: MissingChunks::Fill,
        dataset_name: "t".into(),
        uid: 0,
        gid: 0,
        mtime: SystemTime::UNIX_EPOCH,
        ..Default::default()
    };
    (NzFs::new(Box::new(store), h, options).unwrap(), counters)
}

/// The `(offset, nbytes)` entries of a shard's index (little-endian, at the
/// end, followed by a crc32c), parsed here independently of nzfs.
fn index_entries(shard: &[u8], n: usize) -> Vec<(u64, u64)> {
    let index = &shard[shard.len() - (16 * n + 4)..shard.len() - 4];
    index
        .chunks(16)
        .map(|e| {
            (
                u64::from_le_bytes(e[..8].try_into().unwrap()),
                u64::from_le_bytes(e[8..].try_into().unwrap()),
            )
        })
        .collect()
}

/// What zarr-python reads of `sharding.zarr/rows` (tests/data/expected).
fn rows_expected() -> common::Expected {
    common::manifest()
        .into_iter()
        .find(|e| e.store == "sharding.zarr" && e.path == "rows")
        .unwrap()
}

/// File `ino` of `size` bytes, read start to end in pieces of 128 KiB + 7
/// (so that pieces start inside inner chunks).
fn read_in_pieces(fs: &NzFs, ino: u64, size: u64) -> Vec<u8> {
    let mut whole = Vec::new();
    while (whole.len() as u64) < size {
        let part = fs.read(ino, whole.len() as u64, 128 * 1024 + 7).unwrap();
        assert!(!part.bytes().is_empty(), "a read at {} returned nothing", whole.len());
        whole.extend_from_slice(part.bytes());
    }
    whole
}

#[test]
fn a_4kib_read_decodes_one_inner_chunk_and_reads_only_its_bytes_and_the_index() {
    let (fs, counters) = open("sharding.zarr");
    let dir = fs.lookup(1, OsStr::new("rows")).unwrap().ino;
    let file = fs.lookup(dir, OsStr::new("0.0.bin")).unwrap();
    assert_eq!(file.size, 256 * 256 * 4);
    let stored = std::fs::read(common::data_dir().join("sharding.zarr/rows/c/0/0")).unwrap();
    let entries = index_entries(&stored, 16);
    let before = counters.bytes.load(Ordering::Relaxed);

    // Inner chunk 1 holds shard bytes 16 KiB .. 32 KiB (16 whole rows).
    let data = fs.read(file.ino, 16384 + 1024, 4096).unwrap();
    let e = rows_expected();
    assert_eq!(data.bytes(), &e.bytes[16384 + 1024..16384 + 1024 + 4096]);
    let decodes = fs.cache().stats.decodes.load(Ordering::Relaxed);
    assert_eq!(decodes, 2, "one index decode and one inner chunk decode");
    let read = counters.bytes.load(Ordering::Relaxed) - before;
    assert_eq!(
        read,
        (16 * 16 + 4) + entries[1].1,
        "only the index and inner chunk 1 are read"
    );
    assert!(read < stored.len() as u64 / 8);

    // Reading the whole shard decodes each inner chunk once, the index never again.
    assert_eq!(read_in_pieces(&fs, file.ino, file.size), e.bytes);
    assert_eq!(fs.cache().stats.decodes.load(Ordering::Relaxed), 1 + 16);
    let total = counters.bytes.load(Ordering::Relaxed) - before;
    assert_eq!(total, (16 * 16 + 4) + entries.iter().map(|e| e.1).sum::<u64>());
    assert!(total <= stored.len() as u64);
}

#[test]
fn a_broken_index_fails_that_shard_only() {
    let (fs, _) = open("bad_sharding.zarr");
    for (array, reason) in [("bad_checksum", "checksum mismatch"), ("past_end", "past the end")] {
        let dir = fs.lookup(1, OsStr::new(array)).unwrap().ino;
        let bad = fs.lookup(dir, OsStr::new("1.bin")).unwrap().ino;
        let err = fs.read(bad, 0, 4096).unwrap_err();
        assert_eq!(err.errno(), libc::EIO);
        assert!(
            err.to_string().contains(&format!("{array}/c/1")) && err.to_string().contains(reason),
            "{err}"
        );
        let good = fs.lookup(dir, OsStr::new("0.bin")).unwrap().ino;
        let want: Vec<u8> = (0..8i32).flat_map(|v| v.to_ne_bytes()).collect();
        assert_eq!(fs.read(good, 0, 4096).unwrap().bytes(), want);
    }
}

/// With the prefetch workers running, a read that needs several inner
/// chunks hands half of them to a worker (`NzFs::share_decodes`): the bytes
/// still equal zarr-python's, and each inner chunk is decoded exactly once
/// by whichever thread got to it first.
#[test]
fn a_shard_read_shares_its_decoding_and_decodes_each_inner_chunk_once() {
    let (fs, counters) = open("sharding.zarr");
    let fs = Arc::new(fs);
    fs.start_prefetcher();
    let dir = fs.lookup(1, OsStr::new("rows")).unwrap().ino;
    let file = fs.lookup(dir, OsStr::new("0.0.bin")).unwrap();
    let e = rows_expected();
    for round in 0..2 {
        let whole = read_in_pieces(&fs, file.ino, file.size);
        assert!(whole == e.bytes, "round {round}: the bytes differ from zarr-python's");
    }
    // One index and 16 inner chunks, however the work was shared; and each
    // read from the store once (the worker decodes the bytes the reader
    // fetched).
    assert_eq!(fs.cache().stats.decodes.load(Ordering::Relaxed), 1 + 16);
    let stored = std::fs::read(common::data_dir().join("sharding.zarr/rows/c/0/0")).unwrap();
    let inner_bytes: u64 = index_entries(&stored, 16).iter().map(|e| e.1).sum();
    assert_eq!(counters.bytes.load(Ordering::Relaxed), (16 * 16 + 4) + inner_bytes);
    let status = fs.status();
    let queued = status.prefetch.as_ref().unwrap().queued;
    assert!(queued >= 1, "no decoding was shared: {status:?}");

    // Every small sharded array, read a quarter of a shard at a time, last
    // first (a quarter of a 4x6 shard is a row, which crosses two 2x3 inner
    // chunks), equals zarr-python's.
    for e in common::manifest()
        .into_iter()
        .filter(|e| e.store == "sharding.zarr" && e.path != "rows")
    {
        let dir = fs.lookup(1, OsStr::new(&e.path)).unwrap().ino;
        for k in 0..e.chunk_count() {
            let file = fs.lookup(dir, OsStr::new(&e.chunk_name(k))).unwrap();
            let row = (file.size / 4).max(1);
            let mut bytes = vec![0u8; file.size as usize];
            for r in (0..file.size.div_ceil(row)).rev() {
                let part = fs.read(file.ino, r * row, row as u32).unwrap();
                bytes[(r * row) as usize..][..part.bytes().len()].copy_from_slice(part.bytes());
            }
            e.check_chunk(k, &bytes)
                .unwrap_or_else(|m| panic!("{} chunk {k}: {m}", e.path));
        }
    }
}

//! The zip store (zarr-python's `ZipStore` files): members listed and read
//! whole and by ranges, plain and ZIP64, deflated members inflated once for
//! reads in order, and hostile names and zips refused without a panic.

mod common;

use std::io;

use common::zip::{zip, zip_with};
use nzfs::store::zip::ZipStore;
use nzfs::store::{Listable, MemoryStore, ReadableStore, StoreKey};

fn open(bytes: Vec<u8>) -> nzfs::store::StoreResult<ZipStore> {
    let mut m = MemoryStore::default();
    m.insert("s.zip", bytes);
    ZipStore::open(Box::new(m), StoreKey::new("s.zip").unwrap())
}

#[test]
fn members_list_and_read_plain_and_zip64() {
    let members: &[(&str, &[u8])] = &[
        ("zarr.json", b"{}"),
        ("a/zarr.json", b"{\"x\":1}"),
        ("a/c/0", b"0123456789"),
    ];
    for zip64 in [false, true] {
        let z = open(zip(members, zip64)).unwrap();
        assert_eq!(z.len(), 3);
        let key = |k: &str| StoreKey::new(k).unwrap();
        assert_eq!(z.get(&key("a/c/0"), 100).unwrap().unwrap(), b"0123456789");
        assert_eq!(z.get_range(&key("a/c/0"), 3, 4, None).unwrap().unwrap(), b"3456");
        assert!(z.get_range(&key("a/c/0"), 8, 4, None).is_err());
        assert!(z.get(&key("a/c/0"), 5).is_err(), "max_len");
        assert_eq!(z.get(&key("nope"), 100).unwrap(), None);
        let root = z.list_dir("").unwrap();
        assert_eq!(
            (root.keys, root.prefixes),
            (vec!["zarr.json".to_string()], vec!["a".to_string()])
        );
        let a = z.list_dir("a").unwrap();
        assert_eq!(
            (a.keys, a.prefixes),
            (vec!["zarr.json".to_string()], vec!["c".to_string()])
        );
    }
}

/// A deflated member read by ranges in order (a shard: its index, then
/// chunk by chunk) is inflated once, as far as each range needs: its
/// compressed bytes are fetched once, not once per range; a range
/// before the last starts again; each range equals the data's.
#[test]
fn deflated_members_read_by_ranges_inflate_once() {
    let data: Vec<u8> = (0..(4u32 << 20)).map(|i| (i % 251) as u8 ^ (i >> 12) as u8).collect();
    let bytes = zip_with(&[("a/c/0", &data)], false, true);
    let compressed = bytes.len() as u64;
    let mut mem = MemoryStore::default();
    mem.insert("s.zip", bytes);
    let counted = nzfs::store::counted::Counted::new(Box::new(mem));
    let counters = counted.counters();
    let z = ZipStore::open(Box::new(counted), StoreKey::new("s.zip").unwrap()).unwrap();
    let key = StoreKey::new("a/c/0").unwrap();
    let fetched = || counters.bytes.load(std::sync::atomic::Ordering::Relaxed);
    let before = fetched();
    let step = 64 << 10;
    for at in (0..data.len()).step_by(step) {
        let got = z.get_range(&key, at as u64, step as u64, None).unwrap().unwrap();
        assert_eq!(got, data[at..at + step], "at {at}");
    }
    assert!(
        fetched() - before <= compressed + 4096,
        "{} bytes fetched for a {compressed}-byte zip",
        fetched() - before
    );
    // Backwards: from the start again, still right.
    assert_eq!(z.get_range(&key, 10, 5, None).unwrap().unwrap(), data[10..15]);
    assert_eq!(z.get(&key, 8 << 20).unwrap().unwrap(), data);
}

/// Members whose names no store key may have are left out, each with
/// a log line naming it; the rest of the zip reads.
#[test]
fn hostile_member_names_are_left_out_with_a_log_line() {
    #[derive(Clone, Default)]
    struct Lines(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl io::Write for Lines {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let lines = Lines::default();
    let writer = lines.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let members: &[(&str, &[u8])] = &[
        ("zarr.json", b"{}"),
        ("../evil", b"x"),
        ("/abs", b"x"),
        ("a//b", b"x"),
        ("a/c/0", b"ok"),
    ];
    let z = tracing::subscriber::with_default(subscriber, || open(zip(members, false)).unwrap());
    assert_eq!(z.len(), 2);
    assert_eq!(z.get(&StoreKey::new("a/c/0").unwrap(), 9).unwrap().unwrap(), b"ok");
    let log = String::from_utf8(lines.0.lock().unwrap().clone()).unwrap();
    for name in ["../evil", "/abs", "a//b"] {
        assert_eq!(
            log.lines().filter(|l| l.contains(&format!("{name:?}"))).count(),
            1,
            "{name}: {log}"
        );
    }
}

#[test]
fn hostile_zips_are_errors_not_panics() {
    let good = zip(&[("zarr.json", b"{}"), ("a/c/0", b"0123456789")], true);
    // Every truncation, and every single-byte change of the tail.
    for n in 0..good.len() {
        let _ = open(good[..n].to_vec());
    }
    for i in good.len().saturating_sub(120)..good.len() {
        let mut bad = good.clone();
        bad[i] ^= 0xFF;
        if let Ok(z) = open(bad) {
            let _ = z.get(&StoreKey::new("a/c/0").unwrap(), 1 << 20);
        }
    }
    // A central directory that claims 4 GiB.
    let mut huge = zip(&[("zarr.json", b"{}")], false);
    let n = huge.len();
    huge[n - 10..n - 6].copy_from_slice(&(u32::MAX - 1).to_le_bytes());
    let err = open(huge).err().expect("refused");
    assert!(err.to_string().contains("does not fit"), "{err}");
    assert!(open(b"not a zip at all".to_vec()).is_err());
}

/// A store that records the range calls it is asked: `get_range` one by
/// one, and `get_ranges` with how many ranges each.
struct Recording {
    inner: MemoryStore,
    singles: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    batches: std::sync::Arc<std::sync::Mutex<Vec<usize>>>,
}

impl ReadableStore for Recording {
    fn get(&self, key: &StoreKey, max: u64) -> nzfs::store::StoreResult<Option<Vec<u8>>> {
        self.inner.get(key, max)
    }
    fn get_range(
        &self,
        key: &StoreKey,
        offset: u64,
        len: u64,
        expect: Option<nzfs::store::Stamp>,
    ) -> nzfs::store::StoreResult<Option<Vec<u8>>> {
        self.singles.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.inner.get_range(key, offset, len, expect)
    }
    fn get_ranges(&self, requests: &[nzfs::store::RangeRequest]) -> Vec<nzfs::store::StoreResult<Option<Vec<u8>>>> {
        self.batches.lock().unwrap().push(requests.len());
        requests
            .iter()
            .map(|r| self.inner.get_range(&r.key, r.offset, r.len, r.expect))
            .collect()
    }
    fn stat(&self, key: &StoreKey) -> nzfs::store::StoreResult<Option<nzfs::store::Stamp>> {
        self.inner.stat(key)
    }
}

impl nzfs::store::Listable for Recording {
    fn list_dir(&self, prefix: &str) -> nzfs::store::StoreResult<nzfs::store::Listing> {
        self.inner.list_dir(prefix)
    }
}

/// Ranges of stored members asked together (a partial shard read) reach
/// the zip's own store together, as one call of ranges of the zip file,
/// so that object storage fetches them at once (each went as its own
/// request, one after another); a deflated member's and a refused range
/// are answered in their places as `get_range` answers them.
#[test]
fn ranges_of_stored_members_reach_the_store_in_one_call() {
    let shard: Vec<u8> = (0..4096u32).map(|i| (i % 253) as u8).collect();
    let other: &[u8] = b"0123456789";
    let bytes = zip(&[("a/c/0", &shard), ("a/c/1", other)], false);
    let mut inner = MemoryStore::default();
    inner.insert("s.zip", bytes);
    let (singles, batches) = (std::sync::Arc::default(), std::sync::Arc::default());
    let store = Recording {
        inner,
        singles: std::sync::Arc::clone(&singles),
        batches: std::sync::Arc::clone(&batches),
    };
    let z = ZipStore::open(Box::new(store), StoreKey::new("s.zip").unwrap()).unwrap();
    let key = |k: &str| StoreKey::new(k).unwrap();
    let range = |k: &str, offset, len| nzfs::store::RangeRequest {
        key: key(k),
        offset,
        len,
        expect: None,
    };
    // The local headers, read once each.
    z.get_range(&key("a/c/0"), 0, 1, None).unwrap();
    z.get_range(&key("a/c/1"), 0, 1, None).unwrap();
    let before = singles.load(std::sync::atomic::Ordering::Relaxed);
    let requests = [
        range("a/c/0", 4000, 96),
        range("a/c/0", 0, 16),
        range("a/c/1", 2, 3),
        range("a/c/1", 8, 4),
        range("nope", 0, 1),
        range("a/c/0", 1024, 512),
    ];
    let got = z.get_ranges(&requests);
    assert_eq!(got[0].as_ref().unwrap().as_deref(), Some(&shard[4000..]));
    assert_eq!(got[1].as_ref().unwrap().as_deref(), Some(&shard[..16]));
    assert_eq!(got[2].as_ref().unwrap().as_deref(), Some(&b"234"[..]));
    assert!(got[3].is_err(), "past the member's end");
    assert_eq!(got[4].as_ref().unwrap(), &None);
    assert_eq!(got[5].as_ref().unwrap().as_deref(), Some(&shard[1024..1536]));
    assert_eq!(*batches.lock().unwrap(), [4], "one call of the four stored ranges");
    assert_eq!(
        singles.load(std::sync::atomic::Ordering::Relaxed),
        before,
        "no range one by one"
    );
}

//! A store wrapper that counts what the store is asked for: requests,
//! bytes returned and failures, for `nzfs status`. (Requests in progress
//! are already registered by every store in [`super::inflight`].)
//!
//! Invariant: it forwards every method of [`ReadableStore`], the provided
//! ones too, so a store's own batching (`get_ranges`), paging (`list_page`),
//! concurrency and access answers are kept; counting never changes a result.

use crate::store::StoreResult;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use super::{ListPage, Listing, RangeRequest, ReadableStore, Stamp, StoreKey};

/// What a [`Counted`] store has been asked (relaxed counters: a snapshot
/// may be a few requests apart between fields).
#[derive(Debug, Default)]
pub struct StoreCounters {
    /// Reads of values and ranges (each range of a batch counts once).
    pub requests: AtomicU64,
    /// Bytes those reads returned.
    pub bytes: AtomicU64,
    /// Reads, stats and listings that failed.
    pub failures: AtomicU64,
    /// Stats and listings.
    pub lookups: AtomicU64,
}

/// A store that counts what is asked of the store it wraps.
pub struct Counted {
    inner: Box<dyn ReadableStore>,
    counters: Arc<StoreCounters>,
}

impl Counted {
    /// Count what is asked of `inner`.
    pub fn new(inner: Box<dyn ReadableStore>) -> Self {
        Counted {
            inner,
            counters: Arc::default(),
        }
    }

    /// Count what is asked of `inner` on `counters` (a store that
    /// replaces another under the same mount: an Icechunk branch's new
    /// snapshot).
    pub fn sharing(inner: Box<dyn ReadableStore>, counters: Arc<StoreCounters>) -> Self {
        Counted { inner, counters }
    }

    /// The counters, shared.
    pub fn counters(&self) -> Arc<StoreCounters> {
        self.counters.clone()
    }

    fn reads(&self, n: u64) {
        self.counters.requests.fetch_add(n, Ordering::Relaxed);
    }

    fn value(&self, got: &StoreResult<Option<Vec<u8>>>) {
        self.tally(got.as_ref().ok().map(|v| v.as_ref().map_or(0, Vec::len)));
    }

    /// Count a value of `bytes` bytes (0 when absent), or a failure (`None`).
    fn tally(&self, bytes: Option<usize>) {
        match bytes {
            Some(n) => self.counters.bytes.fetch_add(n as u64, Ordering::Relaxed),
            None => self.counters.failures.fetch_add(1, Ordering::Relaxed),
        };
    }

    fn lookup<T>(&self, f: impl FnOnce() -> StoreResult<T>) -> StoreResult<T> {
        self.counters.lookups.fetch_add(1, Ordering::Relaxed);
        let out = f();
        if out.is_err() {
            self.counters.failures.fetch_add(1, Ordering::Relaxed);
        }
        out
    }
}

impl ReadableStore for Counted {
    fn get(&self, key: &StoreKey, max_len: u64) -> StoreResult<Option<Vec<u8>>> {
        self.reads(1);
        let got = self.inner.get(key, max_len);
        self.value(&got);
        got
    }

    fn get_into(&self, key: &StoreKey, max_len: u64, buf: &mut Vec<u8>) -> StoreResult<bool> {
        self.reads(1);
        let got = self.inner.get_into(key, max_len, buf);
        self.tally(got.as_ref().ok().map(|&found| if found { buf.len() } else { 0 }));
        got
    }

    fn get_stamped(&self, key: &StoreKey, max_len: u64, buf: &mut Vec<u8>) -> StoreResult<(bool, Option<Stamp>)> {
        self.reads(1);
        let got = self.inner.get_stamped(key, max_len, buf);
        self.tally(got.as_ref().ok().map(|&(found, _)| if found { buf.len() } else { 0 }));
        got
    }

    fn get_range(&self, key: &StoreKey, offset: u64, len: u64, expect: Option<Stamp>) -> StoreResult<Option<Vec<u8>>> {
        self.reads(1);
        let got = self.inner.get_range(key, offset, len, expect);
        self.value(&got);
        got
    }

    fn stat(&self, key: &StoreKey) -> StoreResult<Option<Stamp>> {
        self.lookup(|| self.inner.stat(key))
    }

    fn get_ranges(&self, requests: &[RangeRequest]) -> Vec<StoreResult<Option<Vec<u8>>>> {
        self.reads(requests.len() as u64);
        let got = self.inner.get_ranges(requests);
        got.iter().for_each(|g| self.value(g));
        got
    }

    fn wrapped(&self) -> Option<&dyn ReadableStore> {
        Some(self.inner.as_ref())
    }
}

impl crate::store::Listable for Counted {
    fn list_dir(&self, prefix: &str) -> StoreResult<Listing> {
        self.lookup(|| self.inner.list_dir(prefix))
    }

    fn list_page(&self, prefix: &str, start_after: Option<&str>, limit: usize) -> StoreResult<ListPage> {
        self.lookup(|| self.inner.list_page(prefix, start_after, limit))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Listable;
    use crate::store::MemoryStore;

    #[test]
    fn counts_requests_bytes_and_failures_without_changing_results() {
        let mut m = MemoryStore::default();
        m.insert("a/b", vec![7; 100]);
        let s = Counted::new(Box::new(m));
        let c = s.counters();
        let key = StoreKey::new("a/b").unwrap();
        assert_eq!(s.get(&key, 1000).unwrap().unwrap(), vec![7; 100]);
        assert!(s.get(&key, 10).is_err(), "too long for max_len");
        assert_eq!(s.get_range(&key, 10, 5, None).unwrap().unwrap(), vec![7; 5]);
        assert!(s.get(&StoreKey::new("none").unwrap(), 10).unwrap().is_none());
        let r = |offset| RangeRequest {
            key: key.clone(),
            offset,
            len: 20,
            expect: None,
        };
        let got = s.get_ranges(&[r(0), r(90)]);
        assert_eq!(got[0].as_ref().unwrap().as_ref().unwrap().len(), 20);
        assert!(got[1].is_err(), "past the end");
        assert_eq!(s.list_dir("a").unwrap().keys, ["b"]);
        // get_into counts as get does (through the trait's default here).
        let mut buf = vec![1, 2, 3];
        assert!(s.get_into(&key, 1000, &mut buf).unwrap());
        assert_eq!(buf, vec![7; 100]);
        assert!(!s.get_into(&StoreKey::new("none").unwrap(), 10, &mut buf).unwrap());
        assert!(buf.is_empty());
        assert!(s.get_into(&key, 10, &mut buf).is_err());
        assert_eq!(c.requests.load(Ordering::Relaxed), 9);
        assert_eq!(c.bytes.load(Ordering::Relaxed), 100 + 5 + 20 + 100);
        assert_eq!(c.failures.load(Ordering::Relaxed), 3);
        assert_eq!(c.lookups.load(Ordering::Relaxed), 1);
    }
}

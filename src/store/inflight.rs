//! The store reads in progress, process-wide, so that a daemon whose store
//! stopped answering (a dead NFS server, a stopped FUSE daemon underneath)
//! can say which reads it abandons when it exits.
//!
//! Invariant: the registry's lock is held only to insert or remove an entry,
//! never across I/O, so a blocked read cannot block any other read.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

static NEXT: AtomicU64 = AtomicU64::new(0);
static READS: Mutex<BTreeMap<u64, (String, Instant)>> = Mutex::new(BTreeMap::new());

fn lock() -> std::sync::MutexGuard<'static, BTreeMap<u64, (String, Instant)>> {
    // Every critical section is one map operation: a poisoned lock still
    // holds consistent data.
    crate::sync::lock(&READS)
}

/// A registered read; dropping it ends the registration.
#[must_use]
pub struct Guard(u64);

/// Register a read of `key` until the returned guard is dropped.
pub fn begin(key: &str) -> Guard {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    lock().insert(id, (key.to_string(), Instant::now()));
    Guard(id)
}

impl Drop for Guard {
    fn drop(&mut self) {
        lock().remove(&self.0);
    }
}

/// How many reads are in progress now.
pub fn count() -> usize {
    lock().len()
}

/// The reads in progress for longer than `min_age`, oldest first: each key
/// and how long it has waited.
pub fn older_than(min_age: Duration) -> Vec<(String, Duration)> {
    let mut out: Vec<(String, Duration)> = lock()
        .values()
        .map(|(key, t)| (key.clone(), t.elapsed()))
        .filter(|(_, age)| *age >= min_age)
        .collect();
    out.sort_by_key(|r| std::cmp::Reverse(r.1));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_registered_until_their_guard_drops() {
        let g = begin("inflight-test/key");
        let listed = |k: &str| older_than(Duration::ZERO).iter().any(|(key, _)| key == k);
        assert!(listed("inflight-test/key"));
        drop(g);
        assert!(!listed("inflight-test/key"));
    }
}

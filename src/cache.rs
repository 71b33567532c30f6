//! A byte-budgeted LRU cache of decoded chunks that decodes each chunk once,
//! however many readers ask for it at the same moment.
//!
//! Invariants:
//! - the bytes held stay within the budget, except that the most recently
//!   inserted chunk is always kept, even when it alone is larger; each
//!   entry counts its chunk's bytes plus [`ENTRY_OVERHEAD`], so that
//!   millions of empty chunks (absent ones, read one by one) are bounded by
//!   the budget too, and the status's "used" is what the entries take;
//! - at most one decode of a given key is joinable at a time: later callers
//!   wait for its result (success or error) instead of decoding again;
//! - [`ChunkCache::invalidate`] also detaches a decode in flight: the
//!   callers already waiting get its result, a later caller starts a new
//!   decode, and the detached result is never cached, so nothing that began
//!   before an invalidation is handed to a caller that came after it;
//! - errors are shared with the callers waiting at that moment but never
//!   cached, so a chunk that is repaired in the store reads correctly later;
//! - a panicking decode is turned into an error, so waiters never hang;
//! - a caller ([`ChunkCache::get_or_decode_then`]) is called back exactly
//!   once, by whichever thread finishes the decode; that is the one way in,
//!   and [`ChunkCache::get_or_decode`] only waits for its callback
//!   ([`wait_for`]).

use crate::sync::lock;
use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use lru::LruCache;

/// A decoded chunk, shared without copying.
pub type Chunk = Arc<Vec<u8>>;

/// What one entry costs besides its chunk's bytes: its key, the `Arc` and
/// `Vec` headers, and the LRU's node and hash slot (about 300 bytes were
/// measured per empty entry of a mount's cache; this states a bound).
pub const ENTRY_OVERHEAD: u64 = 320;

/// The bytes an entry holding `chunk` counts against the budget.
fn charge(chunk: &Chunk) -> u64 {
    chunk.len() as u64 + ENTRY_OVERHEAD
}

/// Raised in place of a result when a decode panicked.
#[derive(Debug, Clone, Copy)]
pub struct DecodePanicked;

/// A callback that receives a chunk (or the error) when it is ready.
pub type Waiter<E> = Box<dyn FnOnce(Result<Chunk, E>) + Send>;

struct Slot<E> {
    /// Callbacks of the readers waiting, run by the decoding thread.
    waiters: Mutex<Vec<Waiter<E>>>,
}

/// What a lookup found: the chunk (the callback has been called), a decode
/// in flight (the callback is queued on it), or a slot for the caller to
/// decode into (the callback is its first waiter).
enum Lookup<E> {
    Done,
    Waiting,
    Decode(Arc<Slot<E>>),
}

/// Run `start` with a callback, and wait until it is called (on this
/// thread or another): a blocking call made of a callback one. `None` when
/// the callback was dropped uncalled.
pub fn wait_for<T: Send + 'static>(start: impl FnOnce(Box<dyn FnOnce(T) + Send>)) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    start(Box::new(move |value| {
        let _ = tx.send(value);
    }));
    rx.recv().ok()
}

struct State<K: Hash + Eq, E> {
    lru: LruCache<K, Chunk>,
    bytes: u64,
    inflight: HashMap<K, Arc<Slot<E>>>,
}

impl<K: Hash + Eq, E> State<K, E> {
    /// Drop `key`'s chunk, counting its bytes out; whether it was held.
    fn pop(&mut self, key: &K) -> bool {
        let old = self.lru.pop(key);
        if let Some(old) = &old {
            self.bytes -= charge(old);
        }
        old.is_some()
    }
}

/// Counters, for tests and benchmarks.
#[derive(Debug, Default)]
pub struct CacheStats {
    /// Lookups answered from the cache.
    pub hits: AtomicU64,
    /// Values decoded (lookups that missed and decoded).
    pub decodes: AtomicU64,
    /// Lookups that waited for another thread's decode of the same key.
    pub waits: AtomicU64,
    /// Chunks let go early by [`ChunkCache::release`].
    pub released: AtomicU64,
}

/// An LRU cache of decoded values within a byte budget; concurrent lookups
/// of one key share one decode.
pub struct ChunkCache<K: Hash + Eq, E> {
    state: Mutex<State<K, E>>,
    budget: AtomicU64,
    /// Its counters.
    pub stats: CacheStats,
}

impl<K: Hash + Eq + Clone, E: Clone + Send + From<DecodePanicked> + 'static> ChunkCache<K, E> {
    /// An empty cache that holds at most `budget` bytes.
    pub fn new(budget: u64) -> Self {
        ChunkCache {
            state: Mutex::new(State {
                lru: LruCache::unbounded(),
                bytes: 0,
                inflight: HashMap::new(),
            }),
            budget: AtomicU64::new(budget),
            stats: CacheStats::default(),
        }
    }

    /// Bytes currently held.
    pub fn bytes(&self) -> u64 {
        lock(&self.state).bytes
    }

    /// Whether `key` is cached or being decoded right now.
    pub fn is_present(&self, key: &K) -> bool {
        let st = lock(&self.state);
        st.lru.contains(key) || st.inflight.contains_key(key)
    }

    /// The cached chunk for `key`, if any, without counting a lookup or
    /// refreshing its place in the LRU.
    pub fn peek(&self, key: &K) -> Option<Chunk> {
        lock(&self.state).lru.peek(key).cloned()
    }

    /// Forget `key`: a later request decodes it again, even while a decode
    /// of it that began earlier is still running (that one is detached: its
    /// waiters get its result, and the cache does not keep it).
    pub fn invalidate(&self, key: &K) {
        let mut st = lock(&self.state);
        st.inflight.remove(key);
        st.pop(key);
    }

    /// Forget everything held, and hold at most `budget` bytes from now
    /// on (a mount that read its store's metadata again serves a new
    /// cache; this one's memory goes at once, and what readers that still
    /// hold a file of the old metadata open decode stays within `budget`).
    pub fn clear(&self, budget: u64) {
        let mut st = lock(&self.state);
        st.lru.clear();
        st.bytes = 0;
        st.inflight.clear();
        self.budget.store(budget, Ordering::Relaxed);
    }

    /// Forget what `keep` refuses, held or being decoded (a decode under
    /// way is not published): a cache shared with a version of the
    /// metadata that changed some of what it decodes.
    pub fn retain(&self, keep: impl Fn(&K) -> bool) {
        let mut st = lock(&self.state);
        let gone: Vec<K> = st.lru.iter().map(|(k, _)| k).filter(|k| !keep(k)).cloned().collect();
        for k in &gone {
            st.pop(k);
        }
        st.inflight.retain(|k, _| keep(k));
    }

    /// Drop `key` from the cache; whether it was held.
    fn remove(&self, key: &K) -> bool {
        lock(&self.state).pop(key)
    }

    /// Let `key` go before its turn, because another cache (the kernel's)
    /// holds the same bytes: like [`ChunkCache::invalidate`], but counted.
    pub fn release(&self, key: &K) {
        if self.remove(key) {
            self.stats.released.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The chunk for `key`, decoding it with `decode` if no one has yet;
    /// waits (blocking) when another thread is decoding it.
    pub fn get_or_decode(&self, key: &K, decode: impl FnOnce() -> Result<Vec<u8>, E>) -> Result<Chunk, E> {
        wait_for(|then| self.get_or_decode_then(key, decode, then)).unwrap_or_else(|| Err(E::from(DecodePanicked)))
    }

    /// Hand the chunk for `key` to `then`, decoding it with `decode` if no
    /// one has yet; never blocks on another thread's decode: `then`
    /// receives the result on whichever thread finishes the decode (this
    /// one, if it decodes or the chunk is cached). The FUSE adapter's
    /// threads are so never parked behind a decode another thread runs.
    pub fn get_or_decode_then(&self, key: &K, decode: impl FnOnce() -> Result<Vec<u8>, E>, then: Waiter<E>) {
        if let Lookup::Decode(slot) = self.lookup(key, then) {
            self.decode_into(key, &slot, decode);
        }
    }

    /// Find `key`: cached (then `then` has been called), being decoded (then
    /// `then` was queued on the slot), or ours to decode.
    fn lookup(&self, key: &K, then: Waiter<E>) -> Lookup<E> {
        let mut st = lock(&self.state);
        if let Some(chunk) = st.lru.get(key) {
            self.stats.hits.fetch_add(1, Ordering::Relaxed);
            let chunk = chunk.clone();
            drop(st);
            then(Ok(chunk));
            return Lookup::Done;
        }
        if let Some(slot) = st.inflight.get(key) {
            // Queued under the state lock: the decoder cannot have finished
            // (it leaves `inflight` under this lock before calling waiters).
            self.stats.waits.fetch_add(1, Ordering::Relaxed);
            lock(&slot.waiters).push(then);
            return Lookup::Waiting;
        }
        let slot = Arc::new(Slot {
            waiters: Mutex::new(vec![then]),
        });
        st.inflight.insert(key.clone(), slot.clone());
        Lookup::Decode(slot)
    }

    /// Run `decode` for the slot we own, publish the result, call the
    /// waiters.
    fn decode_into(&self, key: &K, slot: &Arc<Slot<E>>, decode: impl FnOnce() -> Result<Vec<u8>, E>) {
        self.stats.decodes.fetch_add(1, Ordering::Relaxed);
        let result = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(decode)) {
            Ok(r) => r.map(Arc::new),
            Err(_) => Err(E::from(DecodePanicked)),
        };
        {
            let mut st = lock(&self.state);
            // A slot that `invalidate` detached is no longer ours to remove
            // or to publish: a later decode may own the key now.
            let ours = st.inflight.get(key).is_some_and(|s| Arc::ptr_eq(s, slot));
            if ours {
                st.inflight.remove(key);
                if let Ok(chunk) = &result {
                    self.insert(&mut st, key.clone(), chunk.clone());
                }
            }
        }
        let waiters = std::mem::take(&mut *lock(&slot.waiters));
        for then in waiters {
            then(result.clone());
        }
    }

    fn insert(&self, st: &mut State<K, E>, key: K, chunk: Chunk) {
        st.bytes += charge(&chunk);
        if let Some(old) = st.lru.put(key, chunk) {
            st.bytes -= charge(&old);
        }
        while st.bytes > self.budget.load(Ordering::Relaxed) && st.lru.len() > 1 {
            if let Some((_, evicted)) = st.lru.pop_lru() {
                st.bytes -= charge(&evicted);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;
    use std::time::Duration;

    #[derive(Debug, Clone, PartialEq)]
    enum E {
        Failed,
        Panicked,
    }
    impl From<DecodePanicked> for E {
        fn from(_: DecodePanicked) -> Self {
            E::Panicked
        }
    }

    #[test]
    fn concurrent_readers_decode_once() {
        let cache: Arc<ChunkCache<u32, E>> = Arc::new(ChunkCache::new(1 << 20));
        let barrier = Arc::new(Barrier::new(8));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (cache, barrier) = (cache.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    cache
                        .get_or_decode(&7, || {
                            std::thread::sleep(Duration::from_millis(100));
                            Ok(vec![1; 1000])
                        })
                        .unwrap()
                })
            })
            .collect();
        for t in threads {
            assert_eq!(t.join().unwrap().len(), 1000);
        }
        assert_eq!(cache.stats.decodes.load(Ordering::Relaxed), 1);
    }

    /// What `retain` refuses goes, its bytes counted out, and a decode of
    /// a refused key under way is not published; the rest stays cached.
    #[test]
    fn retain_forgets_what_it_refuses_and_a_decode_under_way_of_it() {
        let cache: ChunkCache<u32, E> = ChunkCache::new(1 << 20);
        for k in 0..4 {
            cache.get_or_decode(&k, || Ok(vec![0; 1000])).unwrap();
        }
        let held = cache.bytes();
        let slot = match cache.lookup(&9, Box::new(|_| {})) {
            Lookup::Decode(slot) => slot,
            _ => panic!("9 is not cached"),
        };
        cache.retain(|&k| k % 2 == 0);
        assert_eq!(cache.bytes(), held / 2);
        assert!(cache.is_present(&0) && cache.is_present(&2));
        assert!(!cache.is_present(&1) && !cache.is_present(&3));
        cache.decode_into(&9, &slot, || Ok(vec![1; 10]));
        assert!(!cache.is_present(&9), "a decode begun before is not published");
        let decodes = cache.stats.decodes.load(Ordering::Relaxed);
        cache.get_or_decode(&0, || Ok(vec![7])).unwrap();
        assert_eq!(
            cache.stats.decodes.load(Ordering::Relaxed),
            decodes,
            "a kept key is a hit"
        );
    }

    #[test]
    fn budget_is_kept_and_errors_are_not_cached() {
        let cache: ChunkCache<u32, E> = ChunkCache::new(2500 + 2 * ENTRY_OVERHEAD);
        for k in 0..5 {
            cache.get_or_decode(&k, || Ok(vec![0; 1000])).unwrap();
        }
        assert_eq!(cache.bytes(), 2000 + 2 * ENTRY_OVERHEAD);
        // The oldest were evicted; the newest is still there.
        cache.get_or_decode(&4, || panic!("must be cached")).unwrap();
        assert_eq!(cache.get_or_decode(&0, || Err(E::Failed)), Err(E::Failed));
        assert_eq!(cache.get_or_decode(&0, || Ok(vec![9])).unwrap()[0], 9);
        // An oversized chunk is still served and kept alone.
        assert_eq!(cache.get_or_decode(&9, || Ok(vec![0; 5000])).unwrap().len(), 5000);
        assert_eq!(cache.bytes(), 5000 + ENTRY_OVERHEAD);
    }

    /// Empty chunks (absent ones, cached one by one) count too: half a
    /// million of them in a 4 MiB cache keep at most 4 MiB of entries, and
    /// the oldest go (they were counted as 0 bytes and all kept: two million
    /// in a mount held 626 MiB with a 16 MiB budget).
    #[test]
    fn empty_chunks_count_against_the_budget() {
        let budget = 4u64 << 20;
        let cache: ChunkCache<u64, E> = ChunkCache::new(budget);
        for k in 0..1u64 << 19 {
            cache.get_or_decode(&k, || Ok(Vec::new())).unwrap();
        }
        assert!(cache.bytes() > 0 && cache.bytes() <= budget, "{} bytes", cache.bytes());
        assert!(!cache.is_present(&0), "the first empty chunk is still held");
        assert!(cache.is_present(&((1 << 19) - 1)));
    }

    #[test]
    fn callbacks_run_once_on_the_decoding_thread() {
        let cache: Arc<ChunkCache<u32, E>> = Arc::new(ChunkCache::new(1 << 20));
        let (tx, rx) = std::sync::mpsc::channel();
        let started = Arc::new(Barrier::new(2));
        let decoder = {
            let (cache, started) = (cache.clone(), started.clone());
            std::thread::spawn(move || {
                cache.get_or_decode(&5, || {
                    started.wait();
                    std::thread::sleep(Duration::from_millis(100));
                    Ok(vec![3; 10])
                })
            })
        };
        started.wait();
        // The decode is running: these return at once and are called back later.
        for _ in 0..3 {
            let tx = tx.clone();
            cache.get_or_decode_then(
                &5,
                || panic!("must not decode twice"),
                Box::new(move |r| tx.send(r).unwrap()),
            );
        }
        assert!(rx.try_recv().is_err(), "called back before the decode finished");
        decoder.join().unwrap().unwrap();
        for _ in 0..3 {
            assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap().unwrap()[0], 3);
        }
        // Cached: called back immediately, on this thread.
        let tx2 = tx.clone();
        cache.get_or_decode_then(&5, || panic!("cached"), Box::new(move |r| tx2.send(r).unwrap()));
        assert!(rx.try_recv().is_ok());
        assert_eq!(cache.stats.decodes.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn a_panicking_decode_is_an_error() {
        let cache: ChunkCache<u32, E> = ChunkCache::new(100);
        let r = cache.get_or_decode(&1, || -> Result<Vec<u8>, E> { panic!("boom") });
        assert_eq!(r, Err(E::Panicked));
        assert!(cache.get_or_decode(&1, || Ok(vec![1])).is_ok());
    }

    /// A decode that began before an invalidation (a prefetch that read a
    /// chunk just before it was replaced) is not joined by a caller that
    /// comes after it: that caller decodes again and gets the new bytes,
    /// and the old result is not cached.
    #[test]
    fn an_invalidation_detaches_the_decode_in_flight() {
        let cache: Arc<ChunkCache<u32, E>> = Arc::new(ChunkCache::new(1 << 20));
        let (started, release) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
        let old = {
            let (cache, started, release) = (cache.clone(), started.clone(), release.clone());
            std::thread::spawn(move || {
                cache.get_or_decode(&9, || {
                    started.wait();
                    release.wait();
                    Ok(vec![1])
                })
            })
        };
        started.wait();
        let (tx, rx) = std::sync::mpsc::channel();
        let early = tx.clone();
        cache.get_or_decode_then(&9, || panic!("joins"), Box::new(move |r| early.send(r).unwrap()));
        cache.invalidate(&9);
        let (tx2, rx2) = std::sync::mpsc::channel();
        cache.get_or_decode_then(&9, || Ok(vec![2]), Box::new(move |r| tx2.send(r).unwrap()));
        let late = rx2.recv_timeout(Duration::from_secs(1));
        release.wait();
        assert_eq!(late.expect("the later caller joined the old decode").unwrap()[0], 2);
        assert_eq!(old.join().unwrap().unwrap()[0], 1);
        // The caller that joined before the invalidation got that decode.
        assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap().unwrap()[0], 1);
        assert_eq!(cache.get_or_decode(&9, || panic!("cached")).unwrap()[0], 2);
        assert_eq!(cache.bytes(), 1 + ENTRY_OVERHEAD);
    }
}

//! Unit tests of the freshness checks and the views' generations.

use super::*;
use crate::store::MemoryStore;

fn key(i: u64) -> Option<StoreKey> {
    StoreKey::new(format!("c/{i}")).ok()
}

/// A look at the generation of an array with 100,000 noted objects
/// stats at most GENERATION_BATCH of them (it stat'ed all, so that a
/// `stat` of its data.bin took 0.77 s at 262,144), and a change among
/// them shows within a round of looks.
#[test]
fn a_look_at_the_generation_costs_the_same_however_many_were_read() {
    let cache = ArrayCache::new(1 << 20);
    let mut store = MemoryStore::default();
    let f = Freshness::new(true);
    let n = 100_000u64;
    for i in 0..n {
        f.note((3, 0), i, None);
    }
    let looked = std::sync::atomic::AtomicUsize::new(0);
    let counting = |i: u64| {
        looked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        key(i)
    };
    assert_eq!(f.generation((3, 0), &store, counting, &cache), Some(0));
    assert_eq!(looked.load(std::sync::atomic::Ordering::Relaxed), GENERATION_BATCH);
    store.insert("c/77777", vec![1u8; 4]);
    let rounds = (n as usize).div_ceil(GENERATION_BATCH);
    let seen = (0..rounds).position(|_| f.generation((3, 0), &store, key, &cache) == Some(1));
    assert!(seen.is_some(), "the new object never showed");
}

/// A noted object that changes counts the generation up once; past
/// [`MAX_NOTED`] objects, every look counts it up (never stale).
/// Over a remote store, the views' generation looks at nothing until a
/// combined file showed the array, then at most
/// REMOTE_GENERATION_BATCH objects a look, once per interval, in turn:
/// a changed object among 100 shows within 4 looks.
#[test]
fn a_remote_generation_looks_once_shown_in_batches_once_per_interval() {
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
    let cache = ArrayCache::new(1 << 20);
    let mut store = MemoryStore::default();
    let f = Freshness::with_remote(false, true);
    let every = Duration::from_millis(200);
    f.check_remote_every(Some(every));
    for i in 0..100u64 {
        store.insert(&format!("c/{i}"), vec![1u8]);
        f.note((5, 0), i, store.stat(&key(i).unwrap()).unwrap());
    }
    let looked = AtomicUsize::new(0);
    let counting = |i: u64| {
        looked.fetch_add(1, Relaxed);
        key(i)
    };
    assert_eq!(f.generation((5, 0), &store, counting, &cache), Some(0));
    assert_eq!(looked.load(Relaxed), 0, "nothing shown, nothing asked");
    f.shown((5, 0));
    assert_eq!(f.generation((5, 0), &store, counting, &cache), Some(0));
    assert_eq!(
        looked.load(Relaxed),
        0,
        "shown just now: the first look is an interval away"
    );
    std::thread::sleep(every + Duration::from_millis(10));
    assert_eq!(f.generation((5, 0), &store, counting, &cache), Some(0));
    assert_eq!(looked.load(Relaxed), REMOTE_GENERATION_BATCH);
    assert_eq!(f.generation((5, 0), &store, counting, &cache), Some(0));
    assert_eq!(looked.load(Relaxed), REMOTE_GENERATION_BATCH, "within the interval");
    store.insert("c/0", vec![2u8; 2]);
    let mut looks = 0;
    while f.generation((5, 0), &store, counting, &cache) == Some(0) {
        looks += 1;
        assert!(looks <= 4, "the change never showed");
        std::thread::sleep(every + Duration::from_millis(10));
    }
    assert_eq!(f.last_generation((5, 0)), 1);
}

#[test]
fn generations_follow_changed_objects_and_overflow_counts_always() {
    let cache = ArrayCache::new(1 << 20);
    let mut store = MemoryStore::default();
    store.insert("c/0", vec![1u8; 4]);
    let f = Freshness::new(true);
    f.note((7, 0), 0, store.stat(&key(0).unwrap()).unwrap());
    assert_eq!(f.generation((7, 0), &store, key, &cache), Some(0));
    assert_eq!(f.generation((7, 0), &store, key, &cache), Some(0));
    store.insert("c/0", vec![1u8; 5]);
    assert_eq!(f.generation((7, 0), &store, key, &cache), Some(1));
    assert_eq!(f.generation((7, 0), &store, key, &cache), Some(1));
    assert_eq!(Freshness::new(false).generation((7, 0), &store, key, &cache), None);

    let big = Freshness::new(true);
    for chunk in 0..=MAX_NOTED as u64 {
        big.note((1, 0), chunk, None);
    }
    let empty = MemoryStore::default();
    let first = big.generation((1, 0), &empty, |_| None, &cache);
    let second = big.generation((1, 0), &empty, |_| None, &cache);
    assert!(second > first, "{first:?} then {second:?}");
}

/// An object the walk saw and no decode read counts the generation up
/// when it changes (on a local filesystem a `chmod` moves its change
/// time; here its length changes), once.
#[test]
fn a_watched_object_no_decode_read_counts_when_it_changes() {
    let cache = ArrayCache::new(1 << 20);
    let mut store = MemoryStore::default();
    store.insert("c/5", vec![1u8; 4]);
    let f = Freshness::new(true);
    let k = key(5).unwrap();
    let stamp = store.stat(&k).unwrap();
    f.watch(
        (2, 0),
        vec![Watched {
            key: k,
            dir: false,
            stamp,
        }],
    );
    assert_eq!(f.generation((2, 0), &store, key, &cache), Some(0));
    store.insert("c/5", vec![2u8; 5]);
    assert_eq!(f.generation((2, 0), &store, key, &cache), Some(1));
    assert_eq!(f.generation((2, 0), &store, key, &cache), Some(1));
}

/// Over a remote store, a look at a noted object that fails (the network)
/// counts no change: the views keep their generation, and a look once the
/// store answers again finds the object as it was.
#[test]
fn a_failed_remote_look_counts_no_change() {
    let cache = ArrayCache::new(1 << 20);
    let mut memory = MemoryStore::default();
    memory.insert("c/0", vec![1u8]);
    let stamp = memory.stat(&key(0).unwrap()).unwrap();
    let store = crate::store::FaultyStore::over(Box::new(memory));
    let f = Freshness::with_remote(false, true);
    let every = Duration::from_millis(20);
    f.check_remote_every(Some(every));
    f.note((5, 0), 0, stamp);
    f.shown((5, 0));
    store.fail("c/0", crate::store::Fault::TimedOut);
    std::thread::sleep(every + Duration::from_millis(5));
    assert_eq!(f.generation((5, 0), &store, key, &cache), Some(0));
    store.heal("c/0");
    std::thread::sleep(every + Duration::from_millis(5));
    assert_eq!(f.generation((5, 0), &store, key, &cache), Some(0));
}

/// A decode cached under a node's later generation (a store read again
/// whose array changed shares its cache, its decodes under the new
/// generation) is dropped when its object is found changed, by a look at
/// the views' generation as by a check of the chunk. The key dropped was
/// the generation-0 one, so the changed object's old decode was served
/// until its next check.
#[test]
fn a_changed_object_drops_the_decode_of_its_nodes_generation() {
    let cache = ArrayCache::new(1 << 20);
    let mut store = MemoryStore::default();
    store.insert("c/0", vec![1u8; 4]);
    let f = Freshness::new(true);
    let ck = CacheKey::whole(4, 0).of_generation(1);
    let stamp = store.stat(&key(0).unwrap()).unwrap();
    f.read_for_decode(Some(stamp), ck, &cache);
    cache.get_or_decode(&ck, || Ok(vec![1u8; 4])).unwrap();
    assert_eq!(f.generation((4, 1), &store, key, &cache), Some(0));
    store.insert("c/0", vec![2u8; 8]);
    assert_eq!(f.generation((4, 1), &store, key, &cache), Some(1));
    assert!(!cache.is_present(&ck), "the changed object's decode was kept");
    // A check within its interval finds nothing known to be fresh.
    assert_ne!(f.recheck(&store, || key(0), ck, &cache, false), Check::Fresh);
}

/// Two datasets of one store share their checks: the older generation of
/// a node (a dataset no longer serving the array as it is) notes nothing
/// and reads the count; the newer starts its own notes one higher, so
/// that a view's mtime never comes back.
#[test]
fn a_nodes_new_generation_is_noted_afresh_and_an_old_one_not_at_all() {
    let cache = ArrayCache::new(1 << 20);
    let mut store = MemoryStore::default();
    store.insert("c/0", vec![1u8; 4]);
    let f = Freshness::new(true);
    let stamp = store.stat(&key(0).unwrap()).unwrap();
    f.note((2, 0), 0, stamp);
    store.insert("c/0", vec![2u8; 8]);
    assert_eq!(f.generation((2, 0), &store, key, &cache), Some(1));
    f.note((2, 3), 0, store.stat(&key(0).unwrap()).unwrap());
    assert_eq!(f.last_generation((2, 3)), 2);
    assert!(!f.note((2, 0), 0, None), "an older generation noted a change");
    assert_eq!(f.generation((2, 0), &store, key, &cache), Some(2));
    store.insert("c/0", vec![3u8; 16]);
    assert_eq!(f.generation((2, 3), &store, key, &cache), Some(3));
}

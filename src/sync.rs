//! Thread helpers shared by the daemon: locks that survive a poisoned
//! mutex, and work spread over a few scoped threads.
//!
//! Invariants:
//! - [`lock`] (and [`read`], [`fn@write`], [`wait`], [`wait_timeout`],
//!   [`into_inner`], the only other ways nzfs takes a lock's value) never
//!   panics: a mutex poisoned by a panicking holder is still used (every value nzfs keeps under a mutex stays consistent
//!   between statements, so a panic cannot leave it half-updated);
//! - [`on_threads`] returns only once every thread it started has ended,
//!   its thread-local destructors run (the end of a `std::thread::scope`
//!   alone waits for the closures, not the threads, which LeakSanitizer
//!   reports as a leak);
//! - a thread that cannot be started leaves its share to the others, so
//!   the work is done even with no thread to spare;
//! - a panic in a worker reaches the caller, as it would without threads.

use std::sync::{Condvar, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

/// Lock `m`, taking it over if a holder panicked.
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// [`lock`] of a reader-writer lock, shared.
pub fn read<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|e| e.into_inner())
}

/// [`lock`] of a reader-writer lock, exclusive.
pub fn write<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|e| e.into_inner())
}

/// Wait on `cv`, giving `guard`'s lock up meanwhile; [`lock`]'s rule on waking.
pub fn wait<'a, T>(cv: &Condvar, guard: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    cv.wait(guard).unwrap_or_else(|e| e.into_inner())
}

/// [`wait`] for at most `timeout`.
pub fn wait_timeout<'a, T>(cv: &Condvar, guard: MutexGuard<'a, T>, timeout: Duration) -> MutexGuard<'a, T> {
    cv.wait_timeout(guard, timeout).unwrap_or_else(|e| e.into_inner()).0
}

/// The value of a mutex no one else holds any more; [`lock`]'s rule.
pub fn into_inner<T>(m: Mutex<T>) -> T {
    m.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// Run `work` on `workers` threads at once: this one and `workers - 1`
/// helpers named `name`. Each call of `work` takes tasks from a queue it
/// shares with the others, until none is left.
pub fn on_threads(workers: usize, name: &str, work: impl Fn() + Sync) {
    std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..workers)
            .map_while(|_| {
                std::thread::Builder::new()
                    .name(name.to_owned())
                    .spawn_scoped(scope, &work)
                    .ok()
            })
            .collect();
        work();
        for helper in helpers {
            if let Err(panic) = helper.join() {
                std::panic::resume_unwind(panic);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_work_runs_on_as_many_threads_and_they_have_ended() {
        thread_local! {
            static ENDED: Ended = const { Ended };
        }
        static DROPS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        struct Ended;
        impl Drop for Ended {
            fn drop(&mut self) {
                DROPS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
        let threads = Mutex::new(std::collections::HashSet::new());
        on_threads(4, "test", || {
            ENDED.with(|_| ());
            lock(&threads).insert(std::thread::current().id());
        });
        assert_eq!(lock(&threads).len(), 4);
        // The three helpers' thread-locals were destroyed before the return.
        assert_eq!(DROPS.load(std::sync::atomic::Ordering::SeqCst), 3);
    }

    #[test]
    fn a_poisoned_lock_is_still_taken() {
        let m = Mutex::new(1);
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _g = m.lock().unwrap();
            panic!("holder panics");
        }));
        assert!(m.is_poisoned());
        *lock(&m) += 1;
        assert_eq!(*lock(&m), 2);
    }
}

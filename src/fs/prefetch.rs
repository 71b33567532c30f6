//! Prefetch along a sequential reader.
//!
//! When a reader starts chunk file `k` of an array right after starting
//! `k - 1`, the next [`WINDOW`] chunks (grid C order) are decoded by
//! [`WORKERS`] background threads, so that one sequential reader keeps every
//! core decoding while it copies chunk `k` out of the cache. A chunk is
//! decoded at most once whoever asks first (the cache's decode-once rule),
//! so prefetching never duplicates work. The window only opens when it and
//! the chunk being read fit a third of the cache budget, so prefetching never
//! evicts what is being read. Any other access pattern resets the detection.

use std::sync::atomic::Ordering;
use std::sync::mpsc::{SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, Weak};

/// Chunks decoded ahead of a sequential reader.
const WINDOW: u64 = 4;
/// Prefetch threads (one per core of the 2-core machines nzfs targets).
const WORKERS: usize = 2;

use super::NzFs;

pub(super) struct Prefetcher {
    requests: SyncSender<(usize, u64)>,
}

impl NzFs {
    /// Start the prefetch thread. It holds a weak reference and ends when
    /// the filesystem is dropped.
    pub fn start_prefetcher(self: &Arc<Self>) {
        let (tx, rx) = sync_channel::<(usize, u64)>(2 * WINDOW as usize);
        let rx = Arc::new(Mutex::new(rx));
        let mut started = 0;
        for i in 0..WORKERS {
            let (weak, rx): (Weak<NzFs>, _) = (Arc::downgrade(self), rx.clone());
            let spawned = std::thread::Builder::new()
                .name(format!("nzfs-prefetch-{i}"))
                .spawn(move || {
                    loop {
                        let next = rx.lock().unwrap_or_else(|p| p.into_inner()).recv();
                        let Ok((node, index)) = next else { return };
                        let Some(fs) = weak.upgrade() else { return };
                        // Never wait on a decode someone else runs: skip it.
                        if fs.array(node).is_ok_and(|(a, _)| !a.is_cached(index)) {
                            // Errors surface when (if) a reader asks for the chunk.
                            let _ = fs.chunk(node, index);
                        }
                    }
                });
            started += usize::from(spawned.is_ok());
        }
        if started > 0 {
            let _ = self.prefetch.set(Prefetcher { requests: tx });
        }
    }

    /// Note that a reader started chunk `index` of `node`; prefetch the next
    /// one when that makes a sequential run.
    pub(super) fn note_chunk_start(&self, node: usize, index: u64, chunk_bytes: u64, count: u64) {
        let Some(p) = self.prefetch.get() else { return };
        let previous = self.info[node].last_started.swap(index, Ordering::Relaxed);
        let sequential = previous.checked_add(1) == Some(index);
        let fits = chunk_bytes.saturating_mul(3 * (WINDOW + 1)) <= self.options.cache_bytes;
        if sequential && fits {
            for next in (index + 1..count).take(WINDOW as usize) {
                if self.array(node).is_ok_and(|(a, _)| a.is_cached(next)) {
                    continue;
                }
                match p.requests.try_send((node, next)) {
                    Ok(()) | Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {}
                }
            }
        }
    }
}

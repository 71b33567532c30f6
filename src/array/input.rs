//! Reusable buffers for stored chunks on their way into a decoder.
//!
//! A whole-chunk read fetches the stored (compressed) bytes, decodes them
//! into a fresh buffer that the cache keeps, and frees the input. Freed
//! inputs of varying sizes left holes between the cached chunks that the
//! next, slightly larger, input did not fit, so the heap grew by about one
//! input per chunk until eviction began. Inputs now come from this pool.
//!
//! Invariants: at most [`KEEP`] buffers are kept, none with more than
//! [`KEEP_MAX_BYTES`] of capacity; a buffer is taken by one reader at a time
//! and handed out empty.

use std::sync::Mutex;

/// How many buffers the pool keeps: about as many decodes as run at once
/// (FUSE threads and prefetch workers, on a few cores).
const KEEP: usize = 4;

/// Buffers larger than this are freed after use instead of kept.
const KEEP_MAX_BYTES: usize = 32 << 20;

static POOL: Mutex<Vec<Vec<u8>>> = Mutex::new(Vec::new());

/// Run `f` with an empty buffer from the pool, and return the buffer.
pub(super) fn with_buffer<T>(f: impl FnOnce(&mut Vec<u8>) -> T) -> T {
    let mut buf = POOL
        .lock()
        .map(|mut pool| pool.pop())
        .ok()
        .flatten()
        .unwrap_or_default();
    let out = f(&mut buf);
    if buf.capacity() <= KEEP_MAX_BYTES {
        buf.clear();
        if let Ok(mut pool) = POOL.lock()
            && pool.len() < KEEP
        {
            pool.push(buf);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_empty_and_big_ones_are_not_kept() {
        with_buffer(|b| {
            assert!(b.is_empty());
            b.extend_from_slice(&[7; 1000]);
        });
        // Other tests may use the pool meanwhile: whichever buffer comes
        // back is empty.
        with_buffer(|b| {
            assert!(b.is_empty());
            b.reserve(KEEP_MAX_BYTES + 1);
        });
        let big_kept = POOL.lock().unwrap().iter().any(|b| b.capacity() > KEEP_MAX_BYTES);
        assert!(!big_kept);
        assert!(POOL.lock().unwrap().len() <= KEEP);
    }
}

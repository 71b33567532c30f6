//! Flat bytes across chunks, gathered without waiting: a read of
//! `data.bin` (or a composite file's piece of it) that spans several
//! chunks asks the cache for each of them with a callback, and the last one
//! to arrive copies the runs ([`Array::runs`]) into the reply and hands it
//! on. A chunk that another thread (a prefetch worker, another reader) is
//! decoding is never waited for: its decoding thread finishes the read. A
//! chunk nobody is decoding is decoded on the asking thread, as a chunk
//! file's read is.
//!
//! Invariants: a gathered read holds at most [`MAX_GATHER_CHUNKS`] decoded
//! chunks of at most [`MAX_GATHER_BYTES`] in all (the cache may let them go
//! meanwhile: this is the most one read holds beyond the cache's budget);
//! larger reads, and shards decoded in part, are copied unit by unit on
//! the asking thread (`flat.rs`), which holds one unit at a time. The
//! callback is called exactly once: with the bytes, or with the first
//! error to arrive.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::{Array, ArrayError, ReadData, Run, fill};
use crate::cache::Chunk;
use crate::sync::lock;
use crate::zarr::hierarchy::ArrayNode;

/// The most chunks one gathered read waits for.
pub const MAX_GATHER_CHUNKS: usize = 64;

/// The most decoded bytes one gathered read holds.
pub const MAX_GATHER_BYTES: u64 = 32 << 20;

/// The most runs one gathered read copies (a read of 1 MiB in rows of a few
/// elements each is copied on the asking thread instead).
const MAX_GATHER_RUNS: usize = 1 << 14;

type Then = Box<dyn FnOnce(Result<ReadData, ArrayError>) + Send>;

/// A gathered read's runs, each with its chunk's slot, and the chunks.
type Plan = (Vec<(Run, usize)>, Vec<u64>);

/// One read being gathered.
struct Gather {
    node: Arc<ArrayNode>,
    len: usize,
    /// The runs, each with its chunk's slot.
    runs: Vec<(Run, usize)>,
    start: u64,
    buffers: Mutex<Vec<Option<Chunk>>>,
    left: AtomicUsize,
    then: Mutex<Option<Then>>,
}

impl Array {
    /// The runs of flat bytes `[start, end)` with their chunks' slots, and
    /// the chunks, in the order the runs meet them; `None` past the bounds,
    /// or where shards are decoded in part.
    fn gather_plan(&self, walk: impl Iterator<Item = Run>) -> Option<Plan> {
        if self.reads_partially() {
            return None;
        }
        let m = self.metadata();
        let (mut runs, mut chunks, mut bytes) = (Vec::new(), Vec::new(), 0u64);
        for run in walk {
            if runs.len() == MAX_GATHER_RUNS {
                return None;
            }
            let slot = match chunks.iter().position(|&c| c == run.chunk) {
                Some(slot) => slot,
                None => {
                    bytes += m.chunk_bytes_of(run.chunk);
                    if chunks.len() == MAX_GATHER_CHUNKS || bytes > MAX_GATHER_BYTES {
                        return None;
                    }
                    chunks.push(run.chunk);
                    chunks.len() - 1
                }
            };
            runs.push((run, slot));
        }
        Some((runs, chunks))
    }

    /// Hand flat bytes `[start, end)` (within the array), whose runs `walk`
    /// gives (the rest of [`Array::runs`] as the caller met it), to `then`,
    /// gathered from their chunks without waiting on another thread's
    /// decode where the bounds allow, else copied here.
    pub(super) fn gather_then(
        &self,
        start: u64,
        end: u64,
        walk: impl Iterator<Item = Run>,
        then: impl FnOnce(Result<ReadData, ArrayError>) + Send + 'static,
    ) {
        let plan = self.gather_plan(walk).filter(|(_, chunks)| !chunks.is_empty());
        let Some((runs, chunks)) = plan else {
            return then(self.flat_copy(start, end));
        };
        let gather = Arc::new(Gather {
            node: self.node.clone(),
            len: (end - start) as usize,
            runs,
            start,
            buffers: Mutex::new(vec![None; chunks.len()]),
            left: AtomicUsize::new(chunks.len()),
            then: Mutex::new(Some(Box::new(then))),
        });
        for (slot, &index) in chunks.iter().enumerate() {
            if lock(&gather.then).is_none() {
                // Failed already: the rest is not worth a decode.
                return;
            }
            self.recheck(index, false);
            let g = Arc::clone(&gather);
            self.shared.cache.get_or_decode_then(
                &self.whole_key(index),
                || self.load_chunk(index),
                Box::new(move |r| g.arrived(slot, r)),
            );
        }
    }
}

impl Gather {
    /// Chunk `slot` arrived (or failed): the last one copies and replies.
    fn arrived(&self, slot: usize, result: Result<Chunk, ArrayError>) {
        match result {
            Err(e) => {
                let then = lock(&self.then).take();
                if let Some(then) = then {
                    then(Err(e));
                }
            }
            Ok(buffer) => {
                lock(&self.buffers)[slot] = Some(buffer);
                if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
                    let then = lock(&self.then).take();
                    if let Some(then) = then {
                        then(Ok(self.copy()));
                    }
                }
            }
        }
    }

    /// The reply, every chunk here.
    fn copy(&self) -> ReadData {
        let m = &self.node.metadata;
        let buffers = lock(&self.buffers);
        let mut out = vec![0u8; self.len];
        for (run, slot) in &self.runs {
            let Some(buffer) = &buffers[*slot] else { continue };
            let (src, n) = (run.within as usize, run.len as usize);
            let to = &mut out[(run.at - self.start) as usize..][..n];
            match fill::is_sentinel(m, buffer) {
                true => fill::fill(&m.fill_value.0, run.within, to),
                false => to.copy_from_slice(&buffer[src..src + n]),
            }
        }
        ReadData::owned(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    /// 100 uint8 chunks of 1 byte (chunk `i` holds `i`).
    fn hundred() -> Array {
        let mut m = MemoryStore::default();
        m.insert(
            "a/zarr.json",
            r#"{"zarr_format": 3, "node_type": "array", "shape": [100], "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]}"#,
        );
        for i in 0..100u8 {
            m.insert(&format!("a/c/{i}"), vec![i]);
        }
        Array::open(Arc::new(m), "a", 1 << 20).unwrap()
    }

    /// A read over at most [`MAX_GATHER_CHUNKS`] chunks is gathered; one
    /// over more is copied here instead (the plan says no), with the same
    /// bytes either way.
    #[test]
    fn past_its_bounds_a_read_is_copied_not_gathered() {
        let a = hundred();
        let plan = |end| a.gather_plan(a.runs(0, end)).map(|(_, chunks)| chunks.len());
        assert_eq!(plan(MAX_GATHER_CHUNKS as u64), Some(MAX_GATHER_CHUNKS));
        assert_eq!(plan(MAX_GATHER_CHUNKS as u64 + 1), None);
        let all: Vec<u8> = (0..100).collect();
        assert_eq!(a.read_bytes(0, 100).unwrap().bytes(), all);
        assert_eq!(a.read_bytes(3, 60).unwrap().bytes(), &all[3..63]);
    }
}

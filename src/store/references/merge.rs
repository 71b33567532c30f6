//! Merged reads of a reference set's targets in object storage: small
//! references that lie next to each other in one target are read in one
//! request, and the pieces the reader did not ask for yet are kept for it
//! (bounded by [`PIECES_BYTES`]); readers of a span being fetched wait for
//! that request rather than ask again.

use crate::store::StoreResult;
use std::collections::HashMap;

use lru::LruCache;

use super::{Ref, ReferenceStore, lock};
use crate::store::StoreKey;

/// The bytes of merged reads kept for the keys that were read along.
pub const PIECES_BYTES: usize = 32 << 20;
/// A merged read covers at most this many bytes...
pub(super) const MERGE_BYTES: u64 = 8 << 20;
/// ...of references each shorter than this...
pub(super) const MERGE_PIECE: u64 = 2 << 20;
/// ...with at most this gap between two of them.
pub(super) const MERGE_GAP: u64 = 16 << 10;

/// The spans of each target that references name, sorted, so that a read
/// can take its neighbours along.
pub(crate) type Spans = HashMap<u32, Vec<(u64, u64)>>;

/// Spans of the references in `refs`.
pub(crate) fn spans_of<'a>(refs: impl Iterator<Item = &'a Ref>) -> Spans {
    let mut out: Spans = HashMap::new();
    for r in refs {
        if let Ref::Range {
            target,
            span: Some(span),
        } = r
        {
            out.entry(*target).or_default().push(*span);
        }
    }
    for v in out.values_mut() {
        v.sort_unstable();
        v.dedup();
    }
    out
}

pub(super) type Span = (u32, u64, u64);

/// Leftovers of merged reads, `(target, offset, len)` to its bytes, and
/// the spans a merged read is fetching now (whose readers wait for it
/// rather than ask again).
pub(super) struct Pieces {
    pub(super) lru: LruCache<Span, Vec<u8>>,
    pub(super) bytes: usize,
    pub(super) fetching: std::collections::HashSet<Span>,
}

/// How long a reader waits for another's merged read before it asks for
/// its own span itself.
pub(super) const WAIT_FOR_MERGED: std::time::Duration = std::time::Duration::from_secs(120);

impl ReferenceStore {
    /// `len` bytes at `offset` of `target`, merged with its neighbours'
    /// when the target is in object storage: the next spans of the same
    /// target within [`MERGE_GAP`] come along in the same request, and
    /// their readers (prefetch asks for them at the same time) wait for it.
    pub(super) fn read_span(
        &self,
        key: &StoreKey,
        target: u32,
        offset: u64,
        len: u64,
        spans: &Spans,
    ) -> StoreResult<Vec<u8>> {
        let (store, tkey) = self.at(key, target)?;
        let own = (target, offset, len);
        let merging = !store.profile().rereads_are_cheap && len < MERGE_PIECE;
        let mut along = Vec::new();
        if merging {
            let deadline = std::time::Instant::now() + WAIT_FOR_MERGED;
            let mut p = lock(&self.pieces);
            loop {
                if let Some(bytes) = p.lru.pop(&own) {
                    p.bytes -= bytes.len();
                    return Ok(bytes);
                }
                let now = std::time::Instant::now();
                if !p.fetching.contains(&own) || now >= deadline {
                    break;
                }
                p = crate::sync::wait_timeout(&self.fetched, p, deadline - now);
            }
            let neighbours = spans.get(&target).map(Vec::as_slice).unwrap_or_default();
            if let Ok(at) = neighbours.binary_search(&(offset, len)) {
                let mut end = offset + len;
                for &(o, n) in &neighbours[at + 1..] {
                    let next = (target, o, n);
                    if o < end
                        || o > end + MERGE_GAP
                        || n >= MERGE_PIECE
                        || o + n - offset > MERGE_BYTES
                        || p.fetching.contains(&next)
                        || p.lru.contains(&next)
                    {
                        break;
                    }
                    along.push(next);
                    end = o + n;
                }
            }
            p.fetching.insert(own);
            p.fetching.extend(along.iter().copied());
        }
        let end = along.last().map_or(offset + len, |&(_, o, n)| o + n);
        let got = store.get_range(&tkey, offset, end - offset, None);
        if merging {
            let mut p = lock(&self.pieces);
            p.fetching.remove(&own);
            for s in &along {
                p.fetching.remove(s);
            }
            if let Ok(Some(block)) = &got {
                for &(t, o, n) in &along {
                    let piece = block[(o - offset) as usize..(o - offset + n) as usize].to_vec();
                    p.bytes += piece.len();
                    if let Some(old) = p.lru.put((t, o, n), piece) {
                        p.bytes -= old.len();
                    }
                }
                while p.bytes > PIECES_BYTES {
                    match p.lru.pop_lru() {
                        Some((_, b)) => p.bytes -= b.len(),
                        None => break,
                    }
                }
            }
            drop(p);
            self.fetched.notify_all();
        }
        let mut block = got
            .map_err(|e| self.failed(key, target, e))?
            .ok_or_else(|| self.missing(key, target))?;
        block.truncate(len as usize);
        Ok(block)
    }
}

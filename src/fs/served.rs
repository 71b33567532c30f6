//! Drop-behind: a decoded chunk that the kernel page cache already holds
//! whole leaves the daemon's cache.
//!
//! A chunk file is opened with `FOPEN_KEEP_CACHE`, so every byte the daemon
//! replies lands in the kernel page cache, which serves re-reads without
//! asking the daemon. Once a chunk file has been read whole through the
//! page cache, the daemon's decoded copy is a second copy of the same
//! bytes: it is released ([`NzFs::note_served`]), and its memory goes to the
//! next decode instead of fresh pages that the kernel would have to zero
//! first (a quarter to a third of the daemon's CPU on a cold read, by
//! profile). What stays cached is what only the daemon can serve: chunks
//! read in part, prefetched chunks not yet read, shards' inner chunks, and
//! chunks decoded for `data.bin` or a `.nc`.
//!
//! Only for stores where reading an object again is cheap (a local
//! filesystem: [`Profile::rereads_are_cheap`](crate::store::Profile::rereads_are_cheap)): from object storage
//! a second decode would be a second request, so there the budget decides.
//!
//! `data.bin`, and a variable's data in a group's `.nc`, are tracked too
//! where a chunk is one contiguous stretch of the flat order (the common
//! `(1, ny, nx)` chunking).
//!
//! Invariants: only arrays of fixed-size elements decoded whole are tracked
//! (a shard read in part or a text view never is; nor is a `.nc` variable
//! whose file bytes are not its `data.bin` bytes one for one); a read with `O_DIRECT`
//! does not count (it bypasses the page cache); the tracker holds at most
//! [`TRACKED`] partly read chunks and forgets them all when full, which can
//! only keep a chunk cached longer; releasing a chunk only ever costs a
//! later decode, never a wrong byte.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::Mutex;

use super::{Inode, NzFs};
#[cfg(doc)]
use crate::store::ReadableStore;

/// The most chunks one `data.bin` read is counted for.
const MAX_PIECES: usize = 8;
/// Released chunks remembered, to keep prefetch off them.
const RECENT: usize = 256;
/// Partly read chunks tracked at most.
pub(super) const TRACKED: usize = 4096;

/// A chunk of an array: (array node, chunk index).
type NodeChunk = (usize, u64);
/// A chunk as seen through one file: (file inode, the chunk). A group's
/// `.nc` shows chunks of several arrays, so the file alone does not say
/// which.
type FileChunk = (u64, NodeChunk);

/// The byte ranges served of each partly served chunk, keyed by file and
/// chunk, relative to the chunk's start in that file: sorted, disjoint and
/// not touching.
#[derive(Default)]
pub(super) struct Served {
    ranges: Mutex<HashMap<FileChunk, Vec<(u64, u64)>>>,
    /// The last [`RECENT`] chunks released, as (node, chunk index): a
    /// prefetch job that the reader overtook must not decode them again.
    recent: Mutex<(VecDeque<NodeChunk>, HashSet<NodeChunk>)>,
}

impl Served {
    /// Record that bytes `[start, end)` of a chunk file of `len` bytes were
    /// served; true when the file has now been served whole (the record is
    /// then dropped).
    pub(super) fn add(&self, key: FileChunk, start: u64, end: u64, len: u64) -> bool {
        let end = end.min(len);
        if start >= end {
            return false;
        }
        let mut map = crate::sync::lock(&self.ranges);
        if start == 0 && end == len {
            // Read whole at once: nothing to remember.
            map.remove(&key);
            return true;
        }
        if map.len() >= TRACKED && !map.contains_key(&key) {
            map.clear();
        }
        let ranges = map.entry(key).or_default();
        merge(ranges, start, end);
        let whole = ranges.as_slice() == [(0, len)];
        if whole {
            map.remove(&key);
        }
        whole
    }

    /// Remember that `chunk` was released.
    fn note_released(&self, chunk: NodeChunk) {
        let mut guard = crate::sync::lock(&self.recent);
        let (order, set) = &mut *guard;
        if set.insert(chunk) {
            order.push_back(chunk);
            if order.len() > RECENT {
                order.pop_front().map(|old| set.remove(&old));
            }
        }
    }

    /// Whether chunk `index` of array node `node` is among the last
    /// [`RECENT`] released: a reader has read it whole and the kernel page
    /// cache holds it, so prefetching it is wasted work.
    pub(super) fn released_recently(&self, node: usize, index: u64) -> bool {
        self.recent
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .1
            .contains(&(node, index))
    }

    #[cfg(test)]
    pub(super) fn tracked(&self) -> usize {
        self.ranges.lock().unwrap().len()
    }
}

/// Add `[start, end)` to sorted, disjoint, non-touching `ranges`.
fn merge(ranges: &mut Vec<(u64, u64)>, mut start: u64, mut end: u64) {
    // The ranges that overlap or touch [start, end) are a contiguous run.
    let first = ranges.partition_point(|&(_, e)| e < start);
    let mut last = first;
    while last < ranges.len() && ranges[last].0 <= end {
        start = start.min(ranges[last].0);
        end = end.max(ranges[last].1);
        last += 1;
    }
    ranges.splice(first..last, [(start, end)]);
}

impl NzFs {
    /// Tell drop-behind that the `len` bytes at `offset` of file `ino` were
    /// replied to a read that goes through the kernel page cache: a chunk
    /// now served whole through one file leaves the decoded cache.
    pub fn note_served(&self, ino: u64, offset: u64, len: usize) {
        if !self.store().profile().rereads_are_cheap {
            return;
        }
        let end = offset.saturating_add(len as u64);
        match self.inode(ino).ok() {
            Some(Inode::Chunk { node, index }) => {
                if let Some(array) = self.droppable(node) {
                    let size = array.metadata().chunk_bytes_of(index);
                    self.served_piece(array, (ino, (node, index)), offset, end, size);
                }
            }
            Some(Inode::File(kind, n)) => kind.view().served(self, ino, n, offset, end),
            _ => {}
        }
    }

    /// [`NzFs::note_served`] of `data.bin` of array `node`.
    pub(super) fn served_data_bin(&self, ino: u64, node: usize, offset: u64, end: u64) {
        if let Some(array) = self.droppable(node) {
            self.served_flat(array, ino, node, offset, end);
        }
    }

    /// [`NzFs::note_served`] of group `group`'s `.nc`: each variable's
    /// range, where a file byte is a `data.bin` byte.
    pub(super) fn served_netcdf(&self, ino: u64, group: usize, offset: u64, end: u64) {
        let Ok(layout) = self.nc_layout(group) else { return };
        for var in &layout.variables {
            let (lo, hi) = (offset.max(var.begin), end.min(var.begin + var.len));
            // Only where a file byte is a data.bin byte (no widening
            // or recoding: byte order aside, the same offsets).
            if lo >= hi || var.item_in != var.item_out {
                continue;
            }
            if let Some(array) = self.droppable(var.node) {
                self.served_flat(array, ino, var.node, lo - var.begin, hi - var.begin);
            }
        }
    }

    /// Array node `node`, when its chunks may be let go after a whole read:
    /// fixed-size elements, decoded whole.
    fn droppable(&self, node: usize) -> Option<&crate::array::Array> {
        let (array, _) = self.array(node).ok()?;
        (!array.reads_partially() && self.info[node].text.is_none()).then_some(array)
    }

    /// Record flat bytes `[start, end)` of `array` (node `node`) served
    /// through file `file`, where each chunk is one contiguous stretch of
    /// the flat order ([`crate::array::Array::chunks_are_stretches`]):
    /// then each run of the range is a piece of one chunk's stretch, at
    /// its offset in the chunk's buffer (a read of the kernel's readahead
    /// may cross from one chunk into the next). A read over more than
    /// [`MAX_PIECES`] pieces counts for nothing past them: those chunks
    /// stay cached.
    fn served_flat(&self, array: &crate::array::Array, file: u64, node: usize, start: u64, end: u64) {
        if !array.chunks_are_stretches() {
            return;
        }
        for run in array.runs(start, end).take(MAX_PIECES) {
            let stretch = array.chunk_bytes_in_array(run.chunk);
            self.served_piece(
                array,
                (file, (node, run.chunk)),
                run.within,
                run.within + run.len,
                stretch,
            );
        }
    }

    /// Record bytes `[start, end)` of a chunk's `len` in one file; release
    /// the chunk when that makes it whole.
    fn served_piece(&self, array: &crate::array::Array, key: FileChunk, start: u64, end: u64, len: u64) {
        if self.served.add(key, start, end, len) {
            let chunk = key.1;
            array.release_chunk(chunk.1);
            self.served.note_released(chunk);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_in_any_order_and_a_whole_file_is_reported_once() {
        let s = Served::default();
        // Out of order, overlapping and touching, as async readahead sends.
        assert!(!s.add((1, (0, 7)), 100, 200, 400));
        assert!(!s.add((1, (0, 7)), 300, 400, 400));
        assert!(!s.add((1, (0, 7)), 150, 250, 400));
        assert_eq!(s.tracked(), 1);
        assert!(!s.add((1, (0, 7)), 250, 299, 400), "a gap of one byte is left");
        assert!(!s.add((1, (0, 7)), 0, 100, 400));
        assert!(s.add((1, (0, 7)), 299, 300, 400));
        assert_eq!(s.tracked(), 0, "a whole file is forgotten");
        // A read past the end is clipped; an empty one counts nothing.
        assert!(!s.add((1, (0, 8)), 400, 500, 400));
        assert!(s.add((1, (0, 8)), 0, 4096, 400));
        assert!(!s.add((2, (0, 0)), 0, 0, 0));
    }

    #[test]
    fn merge_keeps_ranges_sorted_and_disjoint() {
        let mut r = vec![(0, 10), (20, 30), (40, 50)];
        merge(&mut r, 25, 45);
        assert_eq!(r, [(0, 10), (20, 50)]);
        merge(&mut r, 10, 20);
        assert_eq!(r, [(0, 50)]);
        merge(&mut r, 60, 70);
        merge(&mut r, 55, 56);
        assert_eq!(r, [(0, 50), (55, 56), (60, 70)]);
    }

    #[test]
    fn the_tracker_and_the_released_list_are_bounded() {
        let s = Served::default();
        for i in 0..(TRACKED as u64 + 10) {
            s.add((0, (0, i)), 0, 1, 10);
        }
        assert!(s.tracked() <= TRACKED);
        for i in 0..(RECENT as u64 + 10) {
            s.note_released((3, i));
            s.note_released((3, i));
        }
        assert!(!s.released_recently(3, 0), "the oldest is forgotten");
        assert!(s.released_recently(3, RECENT as u64 + 9));
        let recent = s.recent.lock().unwrap();
        assert_eq!((recent.0.len(), recent.1.len()), (RECENT, RECENT));
    }
}

//! The one walk of a flat byte range: which bytes of which decoded units
//! the bytes `[start, end)` of `data.bin` (the array's C-order bytes) are.
//!
//! A [`Run`] is a stretch of the flat array that lies in one decoded unit
//! (a whole chunk, or an inner chunk of a shard when shards are decoded
//! partially) and is contiguous in the unit's decoded buffer too: a piece
//! of a row, or whole rows where the unit spans the array's dimensions
//! after them (a chunk of `(1, ny, nx)` in an array of `(nt, ny, nx)` is
//! one run). [`Runs`] yields them in flat order, with the chunk, the unit
//! inside it and the byte offset in the unit's decoded buffer (edge chunks
//! are decoded whole, overhang included, so the offset counts in the
//! chunk's full shape). The copy of
//! `data.bin`, hyperslab and point reads (`flat.rs`) and the prefetch
//! planner ([`Array::chunks_touched`]) all walk through it.
//!
//! Invariants: the runs of a range are disjoint, in order, and cover it
//! exactly (clamped to the array's size); each lies in one unit and is
//! maximal (the next run does not go on where it ends in the same
//! buffer); a step costs O(dimensions) and allocates nothing beyond the
//! walk's three vectors of one entry per dimension. The property tests below check every byte
//! against a brute-force model, for regular, rectilinear and partially
//! decoded sharded grids.

use super::Array;

/// A stretch of the flat array contiguous in one decoded unit's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// The flat byte (of `data.bin`) the run starts at.
    pub at: u64,
    /// Its length in bytes (never 0).
    pub len: u64,
    /// The chunk, C order over the chunk grid.
    pub chunk: u64,
    /// The unit inside the chunk: the inner chunk (C order over the
    /// shard's inner grid) when shards are decoded partially, else 0.
    pub unit: u64,
    /// The byte of the unit's decoded buffer the run starts at.
    pub within: u64,
}

/// The runs of a flat byte range, in order ([`Array::runs`]).
pub struct Runs<'a> {
    array: &'a Array,
    /// The inner chunk shape when shards are decoded partially.
    inner: Option<&'a [u64]>,
    item: u64,
    /// The C-order position of element `elem`.
    pos: Vec<u64>,
    elem: u64,
    /// The first element of the range.
    first: u64,
    at: u64,
    end: u64,
    /// Scratch of [`Runs::place`], by dimension: elements left to the
    /// unit's edge, and whether the unit spans the dimension from 0.
    left: Vec<u64>,
    spans: Vec<bool>,
    /// The place the walk stands at, when the last run's look ahead found it.
    ahead: Option<Place>,
}

impl Array {
    /// The runs of flat bytes `[start, end)`, clamped to the array's size.
    pub fn runs(&self, start: u64, end: u64) -> Runs<'_> {
        let m = self.metadata();
        let item = m.data_type.size() as u64;
        let end = end.min(self.size());
        let at = start.min(end);
        let elem = at.checked_div(item).unwrap_or(0);
        let pos = match m.shape.is_empty() || at == end {
            true => vec![0; m.shape.len()],
            false => crate::zarr::chunk_key::unravel(&m.shape, elem),
        };
        Runs {
            array: self,
            inner: self.partial_sharding().map(|s| s.inner_shape.as_slice()),
            item,
            pos,
            elem,
            first: elem,
            at,
            end,
            left: vec![0; m.shape.len()],
            spans: vec![false; m.shape.len()],
            ahead: None,
        }
    }
}

impl Runs<'_> {
    /// Skip the rows that repeat, chunk for chunk, the row walked before:
    /// when the walk stands at a row's start, the row before lies whole in
    /// the range, and the rows after it up to the edge of its band of
    /// chunks along the next-to-last dimension touch the same chunks. Only
    /// the chunks a range touches are worth that (the units and offsets of
    /// the skipped rows are not yielded). Whether rows were skipped.
    pub fn skip_repeated_rows(&mut self) -> bool {
        let m = self.array.metadata();
        let nd = m.shape.len();
        if nd < 2 || self.at >= self.end || self.pos[nd - 1] != 0 {
            return false;
        }
        let row = m.shape[nd - 1];
        if self.elem < self.first + row {
            return false;
        }
        let (band_index, into) = m.axes[nd - 2].locate(self.pos[nd - 2]);
        if into == 0 {
            return false;
        }
        let band = m.axes[nd - 2].edge(band_index);
        let end_elem = self.end.div_ceil(self.item);
        let skip = (band - into)
            .min(m.shape[nd - 2] - self.pos[nd - 2])
            .min((end_elem - self.elem) / row);
        if skip == 0 {
            return false;
        }
        self.ahead = None;
        self.elem += skip * row;
        self.at = (self.elem * self.item).min(self.end);
        // Whole rows: a step along the dimensions before the last.
        super::advance(&mut self.pos[..nd - 1], &m.shape[..nd - 1], skip);
        true
    }
}

/// Where a walk stands: the chunk, the unit in it, the element's offset
/// in the unit, and how many elements from there on are contiguous both
/// in the flat array and in the unit's buffer (a maximal block).
#[derive(Debug, Clone, Copy)]
struct Place {
    chunk: u64,
    unit: u64,
    within: u64,
    elems: u64,
    /// The dimension the block steps along (the dimensions after it are
    /// whole), and how many steps.
    level: usize,
    rows: u64,
}

impl Runs<'_> {
    /// The place of the walk's position. The block is the rest of the row
    /// in the unit; while it starts a row and the unit spans that
    /// dimension exactly (no overhang, so its rows follow one another in
    /// the buffer as in the array), it grows to the rows up to the unit's
    /// edge along the dimension before, and so on outwards.
    fn place(&mut self) -> Place {
        let m = self.array.metadata();
        let nd = m.shape.len();
        let (mut chunk, mut unit, mut within) = (0u64, 0u64, 0u64);
        for (d, (axis, &p)) in m.axes.iter().zip(&self.pos).enumerate() {
            let (c, in_chunk) = axis.locate(p);
            let edge = axis.edge(c);
            let side = self.inner.map_or(edge, |s| s[d]);
            chunk = chunk * self.array.grid_shape[d] + c;
            unit = unit * (edge / side) + in_chunk / side;
            within = within * side + in_chunk % side;
            self.left[d] = side - in_chunk % side;
            self.spans[d] = in_chunk % side == 0 && p == 0 && side == m.shape[d];
        }
        let mut level = nd - 1;
        let mut rows = (m.shape[level] - self.pos[level]).min(self.left[level]);
        let mut block = 1;
        while level > 0 && self.spans[level] {
            block *= m.shape[level];
            level -= 1;
            rows = (m.shape[level] - self.pos[level]).min(self.left[level]);
        }
        Place {
            chunk,
            unit,
            within,
            elems: rows * block,
            level,
            rows,
        }
    }

    /// Step over `place`'s block, as far as `end`; the bytes stepped.
    fn step(&mut self, place: &Place) -> u64 {
        let m = self.array.metadata();
        let run_end = ((self.elem + place.elems) * self.item).min(self.end);
        let bytes = run_end - self.at;
        self.at = run_end;
        self.elem += place.elems;
        // The block is whole rows of the dimensions after `level`: a step
        // along `level`, carried outwards.
        super::advance(&mut self.pos[..=place.level], &m.shape[..=place.level], place.rows);
        bytes
    }
}

impl Iterator for Runs<'_> {
    type Item = Run;

    fn next(&mut self) -> Option<Run> {
        if self.at >= self.end || self.item == 0 {
            return None;
        }
        if self.pos.is_empty() {
            let run = Run {
                at: self.at,
                len: self.end - self.at,
                chunk: 0,
                unit: 0,
                within: self.at,
            };
            self.at = self.end;
            return Some(run);
        }
        let place = self.ahead.take().unwrap_or_else(|| self.place());
        let (at, within) = (self.at, place.within * self.item + self.at % self.item);
        let mut run = Run {
            at,
            len: self.step(&place),
            chunk: place.chunk,
            unit: place.unit,
            within,
        };
        // Blocks that go on where this one ends, in the same buffer, join
        // it (a row's rest, then whole rows); the first that does not is
        // the next run's.
        while self.at < self.end {
            let next = self.place();
            if (next.chunk, next.unit, next.within * self.item) != (run.chunk, run.unit, run.within + run.len) {
                self.ahead = Some(next);
                break;
            }
            run.len += self.step(&next);
        }
        Some(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;
    use proptest::prelude::*;
    use std::sync::Arc;

    /// An array's geometry: its shape, each dimension's chunk edges (in
    /// order; regular when all but the last are equal and the last is no
    /// longer), the item size, and the inner chunk shape of a shard read in
    /// part.
    #[derive(Debug, Clone)]
    struct Geometry {
        shape: Vec<u64>,
        edges: Vec<Vec<u64>>,
        item: u64,
        inner: Option<Vec<u64>>,
    }

    impl Geometry {
        fn regular(&self) -> bool {
            self.edges.iter().all(|e| e.iter().all(|&x| x == e[0]))
        }

        /// The array, from metadata in a memory store (no chunk is read).
        fn open(&self) -> Array {
            let data_type = match self.item {
                1 => "uint8",
                2 => "int16",
                4 => "float32",
                _ => "float64",
            };
            // Debug of a Vec<u64> (or of a Vec of them) is its JSON.
            let grid = match self.regular() {
                true => format!(
                    r#"{{"name": "regular", "configuration": {{"chunk_shape": {:?}}}}}"#,
                    self.edges.iter().map(|e| e[0]).collect::<Vec<_>>()
                ),
                false => format!(
                    r#"{{"name": "rectilinear", "configuration": {{"kind": "inline", "chunk_shapes": {:?}}}}}"#,
                    self.edges
                ),
            };
            let bytes = r#"{"name": "bytes", "configuration": {"endian": "little"}}"#;
            let codecs = match &self.inner {
                None => format!("[{bytes}]"),
                Some(inner) => format!(
                    r#"[{{"name": "sharding_indexed", "configuration": {{"chunk_shape": {inner:?}, "codecs": [{bytes}], "index_codecs": [{bytes}, {{"name": "crc32c"}}]}}}}]"#
                ),
            };
            let meta = format!(
                r#"{{"zarr_format": 3, "node_type": "array", "shape": {:?}, "data_type": "{data_type}", "chunk_grid": {grid}, "chunk_key_encoding": {{"name": "default"}}, "fill_value": 0, "codecs": {codecs}}}"#,
                self.shape
            );
            let mut store = MemoryStore::default();
            store.insert("a/zarr.json", meta.into_bytes());
            Array::open(Arc::new(store), "a", 1 << 20).unwrap()
        }

        /// Brute force, one byte at a time: the run fields byte `b` must
        /// have (chunk, unit, byte in the unit).
        fn locate(&self, b: u64) -> (u64, u64, u64) {
            let nd = self.shape.len();
            if nd == 0 {
                return (0, 0, b);
            }
            let pos = crate::zarr::chunk_key::unravel(&self.shape, b / self.item);
            let (mut chunk, mut unit, mut within) = (0, 0, 0);
            for d in 0..nd {
                // The chunk along d: the edges' running sums.
                let (mut c, mut first) = (0, 0);
                while first + self.edges[d][c] <= pos[d] {
                    first += self.edges[d][c];
                    c += 1;
                }
                let edge = self.edges[d][c];
                let grid = self.shape[d].div_ceil(self.edges[d][0]);
                let grid = if self.regular() {
                    grid
                } else {
                    self.edges[d].len() as u64
                };
                let into = pos[d] - first;
                let side = self.inner.as_ref().map_or(edge, |s| s[d]);
                chunk = chunk * grid + c as u64;
                unit = unit * (edge / side) + into / side;
                within = within * side + into % side;
            }
            (chunk, unit, within * self.item + b % self.item)
        }
    }

    /// Up to 4 dimensions of up to 9 elements, chunked regularly or by
    /// edges of 1 to 4 that sum to the shape; a regular grid may be
    /// sharded, its inner chunks dividing its shards.
    fn geometry() -> impl Strategy<Value = Geometry> {
        let dims = prop::collection::vec((0u64..=9, 1u64..=4, any::<bool>(), any::<u64>()), 0..=4);
        (
            dims,
            prop::sample::select(vec![1u64, 2, 4, 8]),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(|(dims, item, rectilinear, sharded)| {
                // A rectilinear grid's edges sum to its shape: no empty dimension.
                let rectilinear = rectilinear && !dims.is_empty();
                let shape: Vec<u64> = dims
                    .iter()
                    .map(|d| if rectilinear { d.0.max(1) } else { d.0 })
                    .collect();
                let mut edges = Vec::new();
                for (&n, &(_, edge, _, seed)) in shape.iter().zip(&dims) {
                    let mut e = Vec::new();
                    let (mut left, mut s) = (n.max(1), seed);
                    while left > 0 {
                        let x = if rectilinear { 1 + s % 4 } else { edge }.min(if rectilinear { left } else { edge });
                        s /= 4;
                        e.push(x);
                        left = left.saturating_sub(x);
                    }
                    edges.push(e);
                }
                let mut g = Geometry {
                    shape,
                    edges,
                    item,
                    inner: None,
                };
                if sharded && g.regular() && !dims.is_empty() {
                    // An inner side dividing each shard side: 1, or the whole side.
                    let inner = dims
                        .iter()
                        .zip(&g.edges)
                        .map(|(d, e)| if d.2 { e[0] } else { 1 })
                        .collect();
                    g.inner = Some(inner);
                }
                g
            })
    }

    /// The byte range `[start, end)` of an array of `size` bytes that two
    /// random numbers pick.
    fn range_in(size: u64, a: u64, b: u64) -> (u64, u64) {
        let (x, y) = (a % (size + 1), b % (size + 1));
        (x.min(y), x.max(y))
    }

    proptest! {
        // Failing cases found once are kept beside this file
        // (`runs.regressions`) and tried first on every run.
        #![proptest_config(ProptestConfig {
            cases: 400,
            failure_persistence: Some(Box::new(proptest::test_runner::FileFailurePersistence::WithSource("regressions"))),
            ..ProptestConfig::default()
        })]

        /// The runs of any range cover it byte for byte in order, every
        /// byte's chunk, unit and offset are the brute-force model's, and
        /// no run goes on where the one before ended in the same buffer.
        #[test]
        fn runs_cover_a_range_as_the_brute_force_model_does(g in geometry(), a in any::<u64>(), b in any::<u64>()) {
            let array = g.open();
            let size = array.size();
            let (start, end) = range_in(size, a, b);
            let mut at = start;
            let mut last: Option<Run> = None;
            for run in array.runs(start, end) {
                prop_assert_eq!(run.at, at);
                prop_assert!(run.len > 0);
                if let Some(l) = last {
                    prop_assert!((l.chunk, l.unit, l.within + l.len) != (run.chunk, run.unit, run.within), "{:?} then {:?}", l, run);
                }
                last = Some(run);
                for k in 0..run.len {
                    let want = g.locate(run.at + k);
                    prop_assert_eq!((run.chunk, run.unit, run.within + k), want, "byte {}", run.at + k);
                }
                at += run.len;
            }
            prop_assert_eq!(at, end);
        }

        /// Skipping repeated rows leaves the chunks a range touches as
        /// they are: the same set as the brute-force model's.
        #[test]
        fn skipping_repeated_rows_keeps_the_chunks_touched(g in geometry(), a in any::<u64>(), b in any::<u64>()) {
            let array = g.open();
            let size = array.size();
            let (start, end) = range_in(size, a, b);
            let mut want: Vec<u64> = Vec::new();
            for byte in start..end {
                let c = g.locate(byte).0;
                if !want.contains(&c) {
                    want.push(c);
                }
            }
            prop_assert_eq!(array.chunks_touched(start, end, usize::MAX), want);
        }
    }

    /// A range past the end is clamped, and an empty one has no run.
    #[test]
    fn ranges_are_clamped_to_the_array() {
        let g = Geometry {
            shape: vec![3, 5],
            edges: vec![vec![2, 2], vec![4, 4]],
            item: 2,
            inner: None,
        };
        let array = g.open();
        // Byte 26 is element 13, at (2, 3): chunk (1, 0), its element
        // (0, 3); the row ends in chunk (1, 1), at its element (0, 0).
        let runs: Vec<Run> = array.runs(26, 1000).collect();
        let run = |at, chunk, within| Run {
            at,
            len: 2,
            chunk,
            unit: 0,
            within,
        };
        assert_eq!(runs, [run(26, 2, 6), run(28, 3, 0)]);
        assert_eq!(array.runs(30, 40).count(), 0);
        assert_eq!(array.runs(7, 7).count(), 0);
    }
}

//! The text view of string-valued arrays: `data.txt` (the whole array in C
//! order, one escaped line per element) and the `.txt` chunk files.
//!
//! A variable-length array's decoded chunk already is its text (the codec
//! writes it, see [`crate::codec::vlen`]); a fixed-length one (`S n`,
//! `U n`) is rendered from its elements.
//!
//! `data.txt` is never held whole (four 2M-value arrays built
//! 808 MB of text). Its size comes from one pass over the chunks, which
//! keeps only a [`TextIndex`]: where each block of [`BLOCK`] elements starts
//! (8 bytes per block). A read renders the lines of the blocks it touches,
//! from chunks read through the decoded-chunk cache, so what it costs is
//! bounded by the cache and the read. An array of more than
//! [`MAX_TEXT_ELEMENTS`] elements has no `data.txt` (its index would pass
//! 2 MiB).

use std::sync::{Arc, Mutex};

use super::{Array, ArrayError};
use crate::cache::Chunk;
use crate::zarr::data_type::DataType;
use crate::zarr::text::{fixed_lines, push_fixed};

/// Elements per block of a [`TextIndex`].
pub const BLOCK: u64 = 1024;
/// The most elements a `data.txt` shows.
pub const MAX_TEXT_ELEMENTS: u64 = 1 << 28;
/// Variable-length chunks whose line starts a reader keeps (a row of
/// chunks along the last dimension, for C-order reads of 2-d arrays).
const LINE_CHUNKS: usize = 8;
/// Bytes of fixed-length elements rendered per batch.
const BATCH_BYTES: u64 = 1 << 20;

/// Where each block of `BLOCK` elements starts in `data.txt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TextIndex {
    /// `starts[k]` is the offset of element `k * BLOCK`'s line; the last
    /// entry is the text's size.
    starts: Vec<u64>,
    elements: u64,
}

impl TextIndex {
    /// The size of `data.txt`.
    pub fn size(&self) -> u64 {
        self.starts.last().copied().unwrap_or(0)
    }
}

/// A variable-length chunk's number, text and line starts.
type Lines = (u64, Chunk, Arc<Vec<u32>>);

/// The line starts of the last few variable-length chunks a reader used.
#[derive(Default)]
pub struct LineCache {
    entries: Mutex<Vec<Lines>>,
}

impl LineCache {
    /// Forget every chunk's lines (its objects changed).
    pub fn clear(&self) {
        crate::sync::lock(&self.entries).clear();
    }
}

impl Array {
    /// Chunk `index` as text: one line per element of the whole chunk (a
    /// variable-length chunk's cached decode itself, not a copy).
    pub fn chunk_text(&self, index: u64) -> Result<Chunk, ArrayError> {
        let chunk = self.read_chunk(index)?;
        let dt = &self.metadata().data_type;
        Ok(match dt.element_size() {
            None => chunk,
            Some(size) => Chunk::new(fixed_lines(&chunk, size, matches!(dt, DataType::FixedUtf32(_)))),
        })
    }

    /// One pass over every chunk: the size of `data.txt` and where its
    /// blocks start.
    pub fn text_index(&self) -> Result<TextIndex, ArrayError> {
        let m = self.metadata();
        let elements = m.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
        let Some(elements) = elements.filter(|&e| e <= MAX_TEXT_ELEMENTS) else {
            return Err(ArrayError::OutOfBounds {
                what: format!("a text view of more than {MAX_TEXT_ELEMENTS} elements (data.txt)"),
            });
        };
        let mut blocks = vec![0u64; elements.div_ceil(BLOCK) as usize];
        let utf32 = matches!(m.data_type, DataType::FixedUtf32(_));
        let mut line = Vec::new();
        for index in 0..self.chunk_count() {
            let mut add = |flat: u64, len: u64| blocks[(flat / BLOCK) as usize] += len;
            match m.data_type.element_size() {
                Some(size) => {
                    let chunk = self.chunk_or_fill(index)?;
                    // An absent chunk: every line is the fill's.
                    let fill_len = chunk.is_none().then(|| {
                        line.clear();
                        push_fixed(&mut line, utf32, &m.fill_value.0);
                        line.len() as u64
                    });
                    self.for_each_element(index, |within, flat| {
                        let len = fill_len.unwrap_or_else(|| {
                            let c = chunk.as_ref().expect("present");
                            let at = within as usize * size;
                            line.clear();
                            push_fixed(&mut line, utf32, &c[at..at + size]);
                            line.len() as u64
                        });
                        add(flat, len);
                        Ok(())
                    })?;
                }
                None => {
                    let text = self.read_chunk(index)?;
                    let starts = line_starts(&text);
                    let lines = starts.len() - 1;
                    self.for_each_element(index, |within, flat| {
                        let w = within as usize;
                        if w >= lines {
                            return Err(self.short_chunk(index));
                        }
                        add(flat, u64::from(starts[w + 1] - starts[w]));
                        Ok(())
                    })?;
                }
            }
        }
        let mut starts = Vec::with_capacity(blocks.len() + 1);
        let mut at = 0u64;
        starts.push(0);
        for b in blocks {
            at = at.saturating_add(b);
            starts.push(at);
        }
        Ok(TextIndex { starts, elements })
    }

    /// Bytes `[offset, offset + size)` of `data.txt`, rendered from the
    /// blocks they touch.
    pub fn text_range(
        &self,
        index: &TextIndex,
        offset: u64,
        size: u32,
        lines: &LineCache,
    ) -> Result<Vec<u8>, ArrayError> {
        let (offset, end) = super::window(offset, size, index.size());
        if offset >= end {
            return Ok(Vec::new());
        }
        // The block holding `offset`: the last that starts at or before it.
        let k = index.starts.partition_point(|&s| s <= offset).saturating_sub(1);
        let (mut elem, mut at) = (k as u64 * BLOCK, index.starts[k]);
        let mut out = Vec::with_capacity((end - offset) as usize);
        let mut rendered = Vec::new();
        while at < end && elem < index.elements {
            let n = self.render_lines(elem, index.elements, lines, &mut rendered)?;
            let len = rendered.len() as u64;
            let from = offset.max(at) - at;
            let to = end.min(at + len) - at;
            if from < to {
                out.extend_from_slice(&rendered[from as usize..to as usize]);
            }
            at += len;
            elem += n;
        }
        Ok(out)
    }

    /// Render the lines of some elements from flat element `first` into
    /// `out` (emptied first); how many.
    fn render_lines(&self, first: u64, elements: u64, lines: &LineCache, out: &mut Vec<u8>) -> Result<u64, ArrayError> {
        out.clear();
        let m = self.metadata();
        match m.data_type.element_size() {
            Some(size) => {
                let n = (BATCH_BYTES / size as u64).clamp(1, BLOCK).min(elements - first);
                let bytes = self.read_bytes(first * size as u64, (n * size as u64) as u32)?;
                *out = fixed_lines(bytes.bytes(), size, matches!(m.data_type, DataType::FixedUtf32(_)));
                Ok(n)
            }
            None => {
                let n = BLOCK.min(elements - first);
                let mut pos = crate::zarr::chunk_key::unravel(&m.shape, first);
                let nd = m.shape.len();
                for _ in 0..n {
                    let (mut chunk, mut within) = (0u64, 0u64);
                    for ((&p, axis), &g) in pos.iter().zip(&m.axes).zip(&self.grid_shape) {
                        let (c, into) = axis.locate(p);
                        chunk = chunk * g + c;
                        within = within * axis.edge(c) + into;
                    }
                    let (text, starts) = self.chunk_lines(chunk, lines)?;
                    let w = within as usize;
                    if w + 1 >= starts.len() {
                        return Err(self.short_chunk(chunk));
                    }
                    out.extend_from_slice(&text[starts[w] as usize..starts[w + 1] as usize]);
                    if nd > 0 {
                        super::advance(&mut pos, &m.shape, 1);
                    }
                }
                Ok(n)
            }
        }
    }

    /// A variable-length chunk's text and line starts, from `lines` when a
    /// recent read left them there.
    fn chunk_lines(&self, chunk: u64, lines: &LineCache) -> Result<(Chunk, Arc<Vec<u32>>), ArrayError> {
        let mut entries = crate::sync::lock(&lines.entries);
        if let Some((_, text, starts)) = entries.iter().find(|(c, _, _)| *c == chunk) {
            return Ok((text.clone(), starts.clone()));
        }
        drop(entries);
        let text = self.read_chunk(chunk)?;
        let starts = Arc::new(line_starts(&text));
        entries = crate::sync::lock(&lines.entries);
        if entries.len() >= LINE_CHUNKS {
            entries.remove(0);
        }
        entries.push((chunk, text.clone(), starts.clone()));
        Ok((text, starts))
    }

    fn short_chunk(&self, chunk: u64) -> ArrayError {
        ArrayError::Unreadable {
            path: self.path.clone(),
            reason: format!("chunk {chunk} has fewer lines than elements"),
        }
    }

    /// Call `f(within, flat)` for every element of chunk `index` inside the
    /// array: its place in the chunk and in the array, both C order.
    fn for_each_element(
        &self,
        index: u64,
        mut f: impl FnMut(u64, u64) -> Result<(), ArrayError>,
    ) -> Result<(), ArrayError> {
        let m = self.metadata();
        let nd = m.shape.len();
        if nd == 0 {
            return f(0, 0);
        }
        let grid = crate::zarr::chunk_key::unravel(&self.grid_shape, index);
        let origin: Vec<u64> = (0..nd).map(|d| m.axes[d].start(grid[d])).collect();
        let shape = m.chunk_shape_at(&grid);
        // The part of the chunk inside the array, walked row by row.
        let extent: Vec<u64> = (0..nd).map(|d| shape[d].min(m.shape[d] - origin[d])).collect();
        let mut local = vec![0u64; nd];
        loop {
            let (mut within, mut flat) = (0u64, 0u64);
            for d in 0..nd {
                within = within * shape[d] + local[d];
                flat = flat * m.shape[d] + origin[d] + local[d];
            }
            for i in 0..extent[nd - 1] {
                f(within + i, flat + i)?;
            }
            // The next row of the chunk's inside part.
            if !crate::odometer::next(&mut local[..nd - 1], &extent[..nd - 1]) {
                return Ok(());
            }
        }
    }
}

/// Where each line of `text` starts, and its end (so `len - 1` lines).
fn line_starts(text: &[u8]) -> Vec<u32> {
    let mut starts = vec![0u32];
    starts.extend(
        text.iter()
            .enumerate()
            .filter(|(_, b)| **b == b'\n')
            .map(|(i, _)| (i + 1) as u32),
    );
    starts
}

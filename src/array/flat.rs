//! Reads by position: flat byte ranges of `data.bin`, hyperslabs, and
//! sampled points, all walked in C order, run by run: a run is a piece of
//! one row that lies in one decoded unit (a chunk, or an inner chunk of a
//! shard when shards are decoded partially), copied from that unit's
//! cached buffer. Edge chunks are trimmed to the array bounds.
//!
//! Invariants: every byte comes from a cached unit (or the fill value of a
//! missing one), so a read holds at most its output plus one unit beyond
//! the cache; a point read allocates only its output, whatever the
//! distance between the points.

use super::fill;
use super::{Array, ArrayError, ReadData};
use crate::cache::Chunk;

/// The decoded unit last copied from: (chunk, unit inside it) and its buffer.
type Held = Option<((u64, u64), Chunk)>;

/// The most element values one [`Array::read_points`] call returns.
pub const MAX_POINTS: usize = 1 << 24;

impl Array {
    /// The flat bytes `[start, end)` a read of `size` at `offset` covers,
    /// clamped to the array's size.
    pub(super) fn flat_range(&self, offset: u64, size: u32) -> (u64, u64) {
        let total = self.size();
        let start = offset.min(total);
        (start, start.saturating_add(u64::from(size)).min(total))
    }

    /// Flat bytes `[start, end)` copied out of the chunks they span.
    pub(super) fn flat_copy(&self, start: u64, end: u64) -> Result<ReadData, ArrayError> {
        let mut out = vec![0u8; (end - start) as usize];
        self.copy_flat(start, &mut out)?;
        Ok(ReadData::owned(out))
    }

    /// When flat bytes `[start, end)` (non-empty) are one contiguous piece
    /// of one whole-decoded chunk: the chunk, the offset there, and the
    /// length of the chunk's whole stretch of `data.bin`. That is
    /// so when the chunk spans 1 along the leading dimensions, anything
    /// along one dimension `j`, and the whole array after `j`: then a chunk
    /// is a contiguous stretch of `data.bin` (its padding, if it overhangs
    /// the array's edge along `j`, comes after the stretch). A 0-d array's
    /// one chunk is its one element.
    pub fn within_one_chunk(&self, start: u64, end: u64) -> Option<(u64, u64, u64)> {
        let m = self.metadata();
        let nd = m.shape.len();
        if start >= end {
            return None;
        }
        if nd == 0 {
            return Some((0, start, m.data_type.size() as u64));
        }
        if self.partial_sharding().is_some() || !m.is_regular() {
            return None;
        }
        let j = (0..nd).find(|&d| m.chunk_shape[d] != 1).unwrap_or(nd - 1);
        if (j + 1..nd).any(|d| m.chunk_shape[d] != m.shape[d]) {
            return None;
        }
        let item = m.data_type.size() as u64;
        let inner: u64 = m.shape[j + 1..].iter().product();
        let pos = crate::zarr::chunk_key::unravel(&m.shape, start / item);
        let index = (0..nd).fold(0u64, |acc, d| acc * self.grid_shape[d] + pos[d] / m.chunk_shape[d]);
        // The chunk's first element along `j` and its flat element offset.
        let first_j = pos[j] - pos[j] % m.chunk_shape[j];
        let origin = (start / item) - (pos[j] - first_j) * inner - (start / item) % inner;
        let rows = m.chunk_shape[j].min(m.shape[j] - first_j);
        let stretch_end = (origin + rows * inner) * item;
        (end <= stretch_end).then_some((index, start - origin * item, stretch_end - origin * item))
    }

    /// The decoded values of the hyperslab at `start` of `shape`, in C order
    /// (the array's native byte order, as `data.bin` holds them).
    pub fn read_region(&self, start: &[u64], shape: &[u64]) -> Result<Vec<u8>, ArrayError> {
        let m = self.metadata();
        let nd = m.shape.len();
        let fits = start.len() == nd
            && shape.len() == nd
            && (0..nd).all(|d| start[d].checked_add(shape[d]).is_some_and(|e| e <= m.shape[d]));
        if !fits {
            return Err(ArrayError::OutOfBounds {
                what: format!("region at {start:?} of shape {shape:?} (array shape {:?})", m.shape),
            });
        }
        let item = m.data_type.size() as u64;
        let elements = shape.iter().try_fold(1u64, |a, &s| a.checked_mul(s));
        let bytes = elements.and_then(|e| e.checked_mul(item)).filter(|&b| b <= 1 << 31);
        let Some(bytes) = bytes else {
            return Err(ArrayError::OutOfBounds {
                what: format!("a region of shape {shape:?} (more than 2 GiB)"),
            });
        };
        let mut out = vec![0u8; bytes as usize];
        if nd == 0 {
            out.copy_from_slice(&self.read_chunk(0)?[..item as usize]);
            return Ok(out);
        }
        let row = (shape[nd - 1] * item) as usize;
        if row == 0 {
            return Ok(out);
        }
        // One contiguous run of the flat array per row of the region.
        let mut pos = start.to_vec();
        for dst in out.chunks_mut(row) {
            let flat = (0..nd).fold(0u64, |acc, d| acc * m.shape[d] + pos[d]);
            self.copy_flat(flat * item, dst)?;
            // Next row: carry through the outer dimensions of the region.
            let mut d = nd - 1;
            while d > 0 {
                d -= 1;
                pos[d] += 1;
                if pos[d] < start[d] + shape[d] {
                    break;
                }
                pos[d] = start[d];
            }
        }
        Ok(out)
    }

    /// Fill `out` with the flat array's bytes from byte `start` on.
    fn copy_flat(&self, start: u64, out: &mut [u8]) -> Result<(), ArrayError> {
        self.copy_flat_held(start, out, &mut None)
    }

    /// [`Array::copy_flat`], starting from (and leaving in `current`) the
    /// decoded unit last copied from, so that reads of nearby points
    /// look each unit up once.
    fn copy_flat_held(&self, start: u64, out: &mut [u8], current: &mut Held) -> Result<(), ArrayError> {
        if out.is_empty() {
            return Ok(());
        }
        let m = self.metadata();
        let item = m.data_type.size() as u64;
        let end = start + out.len() as u64;
        let nd = m.shape.len();
        // The decoded unit: the chunk, or the inner chunk of a partially decoded shard.
        let sharding = self.partial_sharding();
        let row = m.shape[nd - 1];
        // Position of the first element, in C order.
        let mut elem = start / item;
        let mut pos = crate::zarr::chunk_key::unravel(&m.shape, elem);
        let mut b = start;
        while b < end {
            // The chunk holding `pos`, the unit inside it, and the offset there.
            let mut chunk_index = 0u64;
            let mut unit_index = 0u64;
            let mut within = 0u64;
            // The unit's edge and `pos`'s offset in it, along the last dimension.
            let (mut unit_row, mut in_row) = (1, 0);
            for (d, (axis, &p)) in m.axes.iter().zip(&pos).enumerate() {
                let (c, in_chunk) = axis.locate(p);
                let edge = axis.edge(c);
                let unit = sharding.map_or(edge, |s| s.inner_shape[d]);
                chunk_index = chunk_index * self.grid_shape[d] + c;
                unit_index = unit_index * (edge / unit) + in_chunk / unit;
                within = within * unit + in_chunk % unit;
                (unit_row, in_row) = (unit, in_chunk % unit);
            }
            // The run ends at the row's end or the unit's edge along the last dimension.
            let run_elems = (row - pos[nd - 1]).min(unit_row - in_row);
            let run_end = ((elem + run_elems) * item).min(end);
            let key = (chunk_index, unit_index);
            let buffer = match &*current {
                Some((k, buf)) if *k == key => buf.clone(),
                _ => {
                    let buf = match sharding {
                        None => self.cached_chunk(chunk_index)?,
                        Some(sc) => self.shard_unit(sc, chunk_index, unit_index)?,
                    };
                    *current = Some((key, buf.clone()));
                    buf
                }
            };
            let src = (within * item + b % item) as usize;
            let n = (run_end - b) as usize;
            let to = &mut out[(b - start) as usize..(b - start) as usize + n];
            match fill::is_sentinel(m, &buffer) {
                true => fill::fill(&m.fill_value.0, src as u64, to),
                false => to.copy_from_slice(&buffer[src..src + n]),
            }
            b = run_end;
            // Advance to the element after the run (carrying into outer dimensions).
            elem += run_elems;
            super::advance(&mut pos, &m.shape, run_elems);
        }
        Ok(())
    }

    /// The values at flat element indices `points` (C order), one after
    /// another in the array's native byte order, and for each whether the
    /// chunk (or inner chunk) holding it is in the store (`false`: absent,
    /// read as the fill value): only the units holding them are decoded,
    /// and nothing between them is copied.
    pub fn read_points(&self, points: &[u64]) -> Result<(Vec<u8>, Vec<bool>), ArrayError> {
        let m = self.metadata();
        let item = m.data_type.size();
        let elements = self.size() / item as u64;
        if points.len() > MAX_POINTS || points.iter().any(|&p| p >= elements) {
            return Err(ArrayError::OutOfBounds {
                what: format!("{} points, of an array of {elements} elements", points.len()),
            });
        }
        let mut out = vec![0u8; points.len() * item];
        let mut present = Vec::with_capacity(points.len());
        let mut held: Held = None;
        // A shard read in part: whether its object is there, by shard.
        let sharding = self.partial_sharding();
        let mut shard: Option<(u64, bool)> = None;
        for (&p, to) in points.iter().zip(out.chunks_mut(item)) {
            self.copy_flat_held(p * item as u64, to, &mut held)?;
            let Some(((chunk, _), unit)) = &held else {
                present.push(false);
                continue;
            };
            present.push(match (sharding, shard) {
                (None, _) => !fill::is_sentinel(m, unit),
                (Some(_), Some((c, here))) if c == *chunk => here,
                (Some(sc), _) => {
                    let here = self.shard_present(sc, *chunk)?;
                    shard = Some((*chunk, here));
                    here
                }
            });
        }
        Ok((out, present))
    }
}

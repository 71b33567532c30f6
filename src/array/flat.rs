//! Reads by position: flat byte ranges of `data.bin`, hyperslabs, and
//! sampled points, all walked in C order by [`Array::runs`]: a run is a
//! piece of one row that lies in one decoded unit (a chunk, or an inner
//! chunk of a shard when shards are decoded partially), copied from that
//! unit's cached buffer. Edge chunks are trimmed to the array bounds.
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
        super::window(offset, size, self.size())
    }

    /// Flat bytes `[start, end)` copied out of the chunks they span.
    pub(super) fn flat_copy(&self, start: u64, end: u64) -> Result<ReadData, ArrayError> {
        let mut out = vec![0u8; (end - start) as usize];
        self.copy_flat(start, &mut out)?;
        Ok(ReadData::owned(out))
    }

    /// Whether each chunk's part of `data.bin` is one contiguous stretch of
    /// it, in the order of the chunk's decoded buffer: so when chunks span
    /// 1 along the leading dimensions, anything along one dimension `j`,
    /// and the whole array after `j` (the padding of a chunk that overhangs
    /// the array's edge along `j` comes after its stretch). A 0-d array's
    /// one chunk is. Shards decoded in part and rectilinear grids are not
    /// counted.
    pub fn chunks_are_stretches(&self) -> bool {
        let m = self.metadata();
        let nd = m.shape.len();
        if nd == 0 {
            return true;
        }
        if self.partial_sharding().is_some() || !m.is_regular() {
            return false;
        }
        let j = (0..nd).find(|&d| m.chunk_shape[d] != 1).unwrap_or(nd - 1);
        (j + 1..nd).all(|d| m.chunk_shape[d] == m.shape[d])
    }

    /// The bytes of chunk `index` that lie in the array: its decoded bytes
    /// less its overhang past the array's edges.
    pub fn chunk_bytes_in_array(&self, index: u64) -> u64 {
        let m = self.metadata();
        let grid = self.unravel(index);
        let item = m.data_type.size() as u64;
        m.axes
            .iter()
            .zip(&grid)
            .zip(&m.shape)
            .fold(item, |acc, ((axis, &c), &n)| {
                acc * axis.edge(c).min(n.saturating_sub(axis.start(c)))
            })
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
        let end: Vec<u64> = start.iter().zip(shape).map(|(s, n)| s + n).collect();
        for dst in out.chunks_mut(row) {
            let flat = (0..nd).fold(0u64, |acc, d| acc * m.shape[d] + pos[d]);
            self.copy_flat(flat * item, dst)?;
            // Next row: carry through the outer dimensions of the region.
            crate::odometer::next_from(&mut pos[..nd - 1], &start[..nd - 1], &end[..nd - 1]);
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
        let m = self.metadata();
        let end = start + out.len() as u64;
        debug_assert!(end <= self.size(), "a flat copy within the array");
        let sharding = self.partial_sharding();
        for run in self.runs(start, end) {
            let key = (run.chunk, run.unit);
            let buffer = match &*current {
                Some((k, buf)) if *k == key => buf.clone(),
                _ => {
                    let buf = match sharding {
                        None => self.cached_chunk(run.chunk)?,
                        Some(sc) => self.shard_unit(sc, run.chunk, run.unit)?,
                    };
                    *current = Some((key, buf.clone()));
                    buf
                }
            };
            let (src, n) = (run.within as usize, run.len as usize);
            let to = &mut out[(run.at - start) as usize..][..n];
            match fill::is_sentinel(m, &buffer) {
                true => fill::fill(&m.fill_value.0, run.within, to),
                false => to.copy_from_slice(&buffer[src..src + n]),
            }
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

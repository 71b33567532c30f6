//! The text view of string-valued arrays: `data.txt` (the whole array in C
//! order, one escaped line per element) and the `.txt` chunk files.
//!
//! A variable-length array's decoded chunk already is its text (the codec
//! writes it, see [`crate::codec::vlen`]); a fixed-length one (`S n`,
//! `U n`) is rendered from its elements. The whole-array text is assembled
//! from the chunks' lines and refused past [`MAX_TEXT`] bytes.

use super::{Array, ArrayError};
use crate::cache::Chunk;
use crate::zarr::data_type::DataType;
use crate::zarr::text::fixed_lines;

/// The largest `data.txt` nzfs assembles (256 MiB).
pub const MAX_TEXT: usize = 256 << 20;

impl Array {
    /// Chunk `index` as text: one line per element of the whole chunk (a
    /// variable-length chunk's cached decode itself, not a copy).
    pub fn chunk_text(&self, index: u64) -> Result<Chunk, ArrayError> {
        let chunk = self.read_chunk(index)?;
        let dt = self.metadata().data_type;
        Ok(match dt.element_size() {
            None => chunk,
            Some(size) => Chunk::new(fixed_lines(&chunk, size, matches!(dt, DataType::FixedUtf32(_)))),
        })
    }

    /// The whole array as text, in C order, edge chunks trimmed.
    pub fn text(&self) -> Result<Vec<u8>, ArrayError> {
        let m = self.metadata();
        let too_large = || ArrayError::OutOfBounds {
            what: format!("a text view over {MAX_TEXT} bytes (data.txt)"),
        };
        // Every chunk's lines, as ranges into its text.
        let mut texts = Vec::with_capacity(self.chunk_count() as usize);
        let mut total = 0usize;
        for index in 0..self.chunk_count() {
            let text = self.chunk_text(index)?;
            total = total.saturating_add(text.len());
            if total > MAX_TEXT {
                return Err(too_large());
            }
            let mut starts = vec![0usize];
            starts.extend(
                text.iter()
                    .enumerate()
                    .filter(|(_, b)| **b == b'\n')
                    .map(|(i, _)| i + 1),
            );
            texts.push((text, starts));
        }
        let elements: u64 = m.shape.iter().product();
        let nd = m.shape.len();
        let mut out = Vec::with_capacity(total);
        let mut pos = vec![0u64; nd];
        for _ in 0..elements {
            let (mut chunk, mut within) = (0u64, 0u64);
            for ((&p, &c), &g) in pos.iter().zip(&m.chunk_shape).zip(self.grid_shape()) {
                chunk = chunk * g + p / c;
                within = within * c + p % c;
            }
            let (text, starts) = &texts[chunk as usize];
            let w = within as usize;
            let corrupt = || ArrayError::Unreadable {
                path: self.path.clone(),
                reason: format!("chunk {chunk} has fewer lines than elements"),
            };
            let (&a, &b) = starts.get(w).zip(starts.get(w + 1)).ok_or_else(corrupt)?;
            out.extend_from_slice(&text[a..b]);
            for d in (0..nd).rev() {
                pos[d] += 1;
                if pos[d] < m.shape[d] || d == 0 {
                    break;
                }
                pos[d] = 0;
            }
        }
        Ok(out)
    }
}

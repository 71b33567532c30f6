//! The text files of string-valued arrays (`data.txt`, and the `.txt`
//! chunk files of variable-length ones). Their sizes need decoding: each is
//! computed on first `stat` and remembered; `data.txt` itself is assembled
//! once (bounded by [`crate::array::MAX_TEXT`]) and kept while mounted.

use std::collections::HashMap;
use std::sync::Mutex;

use super::{FsError, NzFs};
use crate::cache::Chunk;

/// The text views of one array.
pub(super) struct TextView {
    /// Variable-length (`string`, `bytes`): no `data.bin`, `.txt` chunks.
    pub variable: bool,
    whole: Mutex<Option<Chunk>>,
    chunk_sizes: Mutex<HashMap<u64, u64>>,
}

impl TextView {
    pub fn new(variable: bool) -> Self {
        TextView {
            variable,
            whole: Mutex::new(None),
            chunk_sizes: Mutex::new(HashMap::new()),
        }
    }
}

impl NzFs {
    fn text_view(&self, n: usize) -> Result<&TextView, FsError> {
        self.info.get(n).and_then(|i| i.text.as_ref()).ok_or(FsError::NotFound)
    }

    /// Whether array `n` has a `data.bin` (every array but variable-length ones).
    pub(super) fn has_data_bin(&self, n: usize) -> bool {
        self.info[n].chunk_names.is_some() && !self.info[n].text.as_ref().is_some_and(|t| t.variable)
    }

    /// `data.txt` of array `n`, assembled on first use. A failure is not
    /// remembered: the next read tries again.
    pub(super) fn data_text(&self, n: usize) -> Result<Chunk, FsError> {
        let view = self.text_view(n)?;
        let mut whole = view.whole.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(text) = &*whole {
            return Ok(text.clone());
        }
        let text = self.array(n)?.0.text().inspect_err(|e| {
            tracing::warn!(path = %self.hierarchy().nodes[n].path, error = %e, "data.txt cannot be built");
        })?;
        let text = Chunk::new(text);
        *whole = Some(text.clone());
        Ok(text)
    }

    pub(super) fn text_size(&self, n: usize) -> Result<u64, FsError> {
        Ok(self.data_text(n)?.len() as u64)
    }

    /// The size of `.txt` chunk file `index` of array `n` (decodes it once).
    pub(super) fn chunk_text_size(&self, n: usize, index: u64) -> Result<u64, FsError> {
        let view = self.text_view(n)?;
        if let Some(&size) = view.chunk_sizes.lock().unwrap_or_else(|e| e.into_inner()).get(&index) {
            return Ok(size);
        }
        let size = self.chunk(n, index)?.len() as u64;
        view.chunk_sizes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(index, size);
        Ok(size)
    }
}

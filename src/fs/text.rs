//! The text files of string-valued arrays (`data.txt`, and the `.txt`
//! chunk files of variable-length ones). Their sizes need decoding: each is
//! computed on first `stat` and remembered. `data.txt` is never held whole:
//! its [`TextIndex`] (8 bytes per 1024 elements) is kept, and each read
//! renders the lines it needs from chunks read through the cache.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::view::{FileView, Then};
use super::{FsError, NzFs, ReadData, TEXT_NAME};
use crate::array::{LineCache, TextIndex};
use crate::store::Access;

/// The text views of one array.
pub(super) struct TextView {
    /// Variable-length (`string`, `bytes`): no `data.bin`, `.txt` chunks.
    pub variable: bool,
    index: Mutex<Option<Arc<TextIndex>>>,
    lines: LineCache,
    chunk_sizes: Mutex<HashMap<u64, u64>>,
    /// The array's values generation the above were made at.
    generation: Mutex<u64>,
}

impl TextView {
    pub fn new(variable: bool) -> Self {
        TextView {
            variable,
            index: Mutex::new(None),
            lines: LineCache::default(),
            chunk_sizes: Mutex::new(HashMap::new()),
            generation: Mutex::new(0),
        }
    }

    /// Forget what was made from values of an older `generation`.
    fn sync(&self, generation: u64) {
        let mut g = crate::sync::lock(&self.generation);
        if *g != generation {
            *g = generation;
            *crate::sync::lock(&self.index) = None;
            crate::sync::lock(&self.chunk_sizes).clear();
            self.lines.clear();
        }
    }
}

impl NzFs {
    fn text_view(&self, n: usize) -> Result<&TextView, FsError> {
        self.info
            .get(n)
            .and_then(|i| i.text.as_deref())
            .ok_or(FsError::NotFound)
    }

    /// Whether array `n` has a `data.bin` (every array but variable-length ones).
    pub(super) fn has_data_bin(&self, n: usize) -> bool {
        self.info[n].chunk_names.is_some() && !self.info[n].text.as_ref().is_some_and(|t| t.variable)
    }

    /// The index of `data.txt` of array `n`, made on first use. A failure
    /// is not remembered: the next `stat` or read tries again.
    fn text_index(&self, n: usize) -> Result<Arc<TextIndex>, FsError> {
        let view = self.text_view(n)?;
        view.sync(self.array(n)?.0.last_generation());
        if let Some(index) = &*crate::sync::lock(&view.index) {
            return Ok(index.clone());
        }
        // Made outside the lock: a slow first pass does not stop other reads.
        let index = self.array(n)?.0.text_index().inspect_err(|e| {
            tracing::warn!(path = %self.hierarchy().nodes[n].path, error = %e, "data.txt cannot be shown");
        })?;
        let index = Arc::new(index);
        *crate::sync::lock(&view.index) = Some(index.clone());
        Ok(index)
    }

    pub(super) fn text_size(&self, n: usize) -> Result<u64, FsError> {
        Ok(self.text_index(n)?.size())
    }

    /// Bytes `[offset, offset + size)` of `data.txt` of array `n`.
    pub(super) fn read_text(&self, n: usize, offset: u64, size: u32) -> Result<ReadData, FsError> {
        let index = self.text_index(n)?;
        let view = self.text_view(n)?;
        let bytes = self.array(n)?.0.text_range(&index, offset, size, &view.lines)?;
        Ok(ReadData::owned(bytes))
    }

    /// The size of `.txt` chunk file `index` of array `n` (decodes it once).
    pub(super) fn chunk_text_size(&self, n: usize, index: u64) -> Result<u64, FsError> {
        let view = self.text_view(n)?;
        view.sync(self.array(n)?.0.last_generation());
        if let Some(&size) = crate::sync::lock(&view.chunk_sizes).get(&index) {
            return Ok(size);
        }
        let size = self.chunk(n, index)?.len() as u64;
        crate::sync::lock(&view.chunk_sizes).insert(index, size);
        Ok(size)
    }
}

/// `data.txt` of a string-valued array: its values one per line. Its size
/// is its text's, so a `stat` decodes.
pub(super) struct DataTxt;

impl FileView for DataTxt {
    fn fixed_name(&self) -> Option<&'static str> {
        Some(TEXT_NAME)
    }
    fn name<'a>(&self, fs: &'a NzFs, n: usize) -> Option<&'a str> {
        fs.info.get(n)?.text.is_some().then_some(TEXT_NAME)
    }
    fn size(&self, fs: &NzFs, n: usize) -> Result<u64, FsError> {
        fs.text_size(n)
    }
    fn access(&self, fs: &NzFs, n: usize) -> Result<Option<Access>, ()> {
        fs.values_access(n)
    }
    fn read(&self, fs: &NzFs, n: usize, offset: u64, size: u32, then: Then) {
        then(fs.read_text(n, offset, size))
    }
    fn follows_store(&self) -> bool {
        true
    }
    fn version(&self, fs: &NzFs, n: usize) -> Option<u64> {
        fs.dataset.array(n)?.values_generation()
    }
    fn shows_values_of(&self, _fs: &NzFs, n: usize, array: usize) -> bool {
        n == array
    }
    fn attr_is_cheap(&self) -> bool {
        false
    }
}

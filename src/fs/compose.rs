//! The composite files: a group's `.nc`, an array's `data.tif` and an
//! image's `.ome.tif` are each bytes rendered from metadata followed by
//! pieces of arrays' `data.bin`. Each view cuts a read into [`Part`]s (the
//! `.nc` here, the TIFFs from `tiff::Piece`), and one reader serves them
//! all: rendered bytes and zeros are copied at once, each array piece is
//! asked of the array layer with a callback
//! ([`crate::array::Array::read_bytes_then`]), and the last piece to arrive
//! hands the reply on. No piece waits on a decode another thread runs, so
//! a FUSE thread is free while the prefetch workers decode.
//!
//! Invariants: the parts of a read cover it exactly, in order; the reply
//! is handed on once, with every part's bytes or with the first error. A
//! `.nc` variable's chunk that does not decode reads as its fill instead,
//! with a log line (netCDF readers read past the header at open, and one
//! bad chunk must not stop them); `data.bin` and the chunk files stay EIO.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use super::view::Then;
use super::{FsError, NzFs, ReadData};
use crate::array::ArrayError;
use crate::sync::lock;
use crate::tiff::Piece;

/// A piece of a composite file's read.
pub(super) enum Part {
    /// Bytes rendered from metadata (a header, a TIFF's directories).
    Bytes(Vec<u8>),
    /// Zeros: alignment gaps, the padding of edge tiles.
    Zero(u64),
    /// Bytes `[offset, offset + len)` of array `node`'s `data.bin`, in the
    /// file as `form` says.
    Values {
        node: usize,
        offset: u64,
        len: u64,
        form: Form,
    },
}

/// How a piece of `data.bin` stands in its file.
pub(super) enum Form {
    /// As `data.bin` holds it.
    AsIs,
    /// A `.nc` variable's elements in the file's byte order and types: of
    /// the converted bytes, `n` from `skip` on.
    NetCdf {
        var: crate::netcdf::Variable,
        skip: usize,
        n: usize,
    },
}

impl Part {
    /// Its length in the file.
    fn len(&self) -> usize {
        match self {
            Part::Bytes(b) => b.len(),
            Part::Zero(n) => *n as usize,
            Part::Values {
                form: Form::NetCdf { n, .. },
                ..
            } => *n,
            Part::Values { len, .. } => *len as usize,
        }
    }
}

/// One composite read being put together.
struct Join {
    out: Mutex<Vec<u8>>,
    /// Pieces still to arrive, and one for the issuing of them.
    left: AtomicUsize,
    then: Mutex<Option<Then>>,
}

impl Join {
    fn fail(&self, e: FsError) {
        let then = lock(&self.then).take();
        if let Some(then) = then {
            then(Err(e));
        }
    }

    fn done_one(&self) {
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            let then = lock(&self.then).take();
            if let Some(then) = then {
                let out = std::mem::take(&mut *lock(&self.out));
                then(Ok(ReadData::owned(out)));
            }
        }
    }

    fn failed(&self) -> bool {
        lock(&self.then).is_none()
    }
}

impl NzFs {
    /// Serve a composite file's read cut into `parts`. A read that is one
    /// piece of one `data.bin` as it is goes straight to the array layer,
    /// which may answer it with a slice of the cache (no copy).
    pub(super) fn read_parts_then(&self, mut parts: Vec<Part>, then: Then) {
        if let [Part::Values { form: Form::AsIs, .. }] = parts.as_slice()
            && let Some(Part::Values { node, offset, len, .. }) = parts.pop()
        {
            // A piece is at most one read's size, which fits a u32.
            return self.read_flat_then(node, offset, len as u32, then);
        }
        let total = parts.iter().map(Part::len).sum();
        let pieces = parts.iter().filter(|p| matches!(p, Part::Values { .. })).count();
        let join = Arc::new(Join {
            out: Mutex::new(vec![0; total]),
            left: AtomicUsize::new(pieces + 1),
            then: Mutex::new(Some(then)),
        });
        let mut at = 0;
        for part in parts {
            let len = part.len();
            match part {
                Part::Bytes(b) => lock(&join.out)[at..at + len].copy_from_slice(&b),
                Part::Zero(_) => {}
                Part::Values {
                    node,
                    offset,
                    len,
                    form,
                } => {
                    if join.failed() {
                        return;
                    }
                    self.read_piece(&join, at, node, offset, len, form);
                }
            }
            at += len;
        }
        join.done_one();
    }

    /// Ask for one piece of `data.bin`; it lands at `at` in the reply.
    fn read_piece(&self, join: &Arc<Join>, at: usize, node: usize, offset: u64, len: u64, form: Form) {
        self.note_flat_read(node, offset, len);
        let array = match self.array(node) {
            Ok((array, _)) => array,
            Err(e) => return join.fail(e),
        };
        let path = array.path().to_owned();
        // The fill a .nc variable's undecodable chunk reads as (nothing to
        // copy for a TIFF's pieces).
        let fill = matches!(form, Form::NetCdf { .. }).then(|| array.metadata().fill_value.clone());
        let join = Arc::clone(join);
        // A piece is at most one read's size, which fits a u32.
        array.read_bytes_then(offset, len as u32, move |r| {
            let host = match (r, &form) {
                (Ok(data), _) => data,
                (Err(e @ ArrayError::Decode { .. }), Form::NetCdf { var, .. }) if let Some(fill) = &fill => {
                    tracing::warn!(
                        %path,
                        error = %e,
                        "a chunk of this .nc variable does not decode: the .nc shows its fill there"
                    );
                    ReadData::owned(fill.repeat(len as usize / var.item_in.max(1)))
                }
                (Err(e), _) => return join.fail(e.into()),
            };
            let bytes = host.bytes();
            if bytes.len() as u64 != len {
                let reason = format!("data.bin gave {} bytes where {len} were asked for", bytes.len());
                return join.fail(FsError::BrokenNode { path, reason });
            }
            {
                let mut out = lock(&join.out);
                match &form {
                    Form::AsIs => out[at..at + bytes.len()].copy_from_slice(bytes),
                    Form::NetCdf { var, skip, n } => {
                        // Whole elements that only change byte order go
                        // straight into the reply; the rest through a
                        // converted copy.
                        let dst = &mut out[at..at + n];
                        if *skip != 0 || !crate::netcdf::copy_in_file_order(var, bytes, dst) {
                            dst.copy_from_slice(&crate::netcdf::to_file_order(var, bytes)[*skip..*skip + *n]);
                        }
                    }
                }
            }
            join.done_one();
        });
    }

    /// Group `n`'s virtual netCDF file, bytes `[offset, offset + size)`:
    /// the header, then each variable's elements converted from `data.bin`
    /// reads; zeros in the alignment gaps.
    pub(super) fn read_netcdf_then(&self, n: usize, offset: u64, size: u32, then: Then) {
        let layout = match self.nc_layout(n) {
            Ok(layout) => layout,
            Err(e) => return then(Err(e)),
        };
        let (start, end) = crate::array::window(offset, size, layout.size);
        let mut parts = Vec::new();
        let mut at = start;
        let header_len = layout.header.len() as u64;
        if start < header_len {
            let stop = end.min(header_len);
            parts.push(Part::Bytes(layout.header[start as usize..stop as usize].to_vec()));
            at = stop;
        }
        for var in &layout.variables {
            let (lo, hi) = (start.max(var.begin), end.min(var.begin + var.len));
            if lo >= hi {
                continue;
            }
            if lo > at {
                parts.push(Part::Zero(lo - at));
            }
            let item = var.item_out as u64;
            let (e0, e1) = ((lo - var.begin) / item, (hi - var.begin).div_ceil(item));
            parts.push(Part::Values {
                node: var.node,
                offset: e0 * var.item_in as u64,
                len: (e1 - e0) * var.item_in as u64,
                form: Form::NetCdf {
                    var: var.clone(),
                    skip: (lo - var.begin - e0 * item) as usize,
                    n: (hi - lo) as usize,
                },
            });
            at = hi;
        }
        if end > at {
            parts.push(Part::Zero(end - at));
        }
        self.read_parts_then(parts, then)
    }
}

/// The parts of a TIFF's bytes `[start, end)`: its rendered prefix up
/// to `prefix`, then the pixel pieces `pixels` gives, each of level
/// `levels[level]`'s `data.bin`.
pub(super) fn tiff_parts(
    layout: &crate::tiff::Layout,
    levels: &[usize],
    start: u64,
    end: u64,
    pixels: impl FnOnce(u64, u64) -> Vec<Piece>,
) -> Vec<Part> {
    let mut parts = Vec::new();
    if start < layout.prefix {
        let mut out = vec![0u8; (end.min(layout.prefix) - start) as usize];
        layout.read_prefix(start, &mut out);
        parts.push(Part::Bytes(out));
    }
    let from = start.max(layout.prefix);
    if from < end {
        for piece in pixels(from, end) {
            parts.push(match piece {
                Piece::Zero(len) => Part::Zero(len),
                Piece::Data { level, offset, len } => Part::Values {
                    node: levels[level],
                    offset,
                    len,
                    form: Form::AsIs,
                },
            });
        }
    }
    parts
}

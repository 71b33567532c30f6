//! Bytes written into an existing array's `data.bin` or chunk file, as the
//! chunks they change: each touched chunk is decoded as the writer saw it,
//! the written bytes laid over it, and encoded again through the array's
//! own codec chain ([`crate::codec::CodecChain::encode`]).
//!
//! An array takes writes when [`writable`] says so: a Zarr v3 array on a
//! regular grid, of fixed-size elements nzfs decodes as they are stored,
//! whose chain encodes; every chunk it encodes then has the full chunk
//! shape (edge chunks too, as the core spec stores them).
//!
//! Invariants: a chunk is changed only when the branch's tip holds the
//! same object (or the same absence) for it as the version the writer saw,
//! and so does the array's `zarr.json`; else the commit is a conflict and
//! nothing is set. One decoded chunk is held at a time; the plan holds one
//! entry per contiguous stretch of a chunk's buffer that was written. One
//! commit changes at most [`max_chunks`] chunks (each costs the commit
//! about [`TOUCHED_CHUNK_COST`] until it is written: its entry in the
//! plan and in Icechunk's change set and manifest), a quarter of the
//! cache budget's worth; a write that touches more is refused whole,
//! before a chunk is read, and its bytes are kept in the spool.

use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;

use super::spool::{Pending, Shown};
use super::{Stage, WriteError, node_path};
use crate::array::Array;
use crate::codec::EncodeError;
use crate::store::{ReadableStore, StoreKey};
use crate::zarr::documents::ZARR_JSON;

/// Why an array's chunks are not written through the mount.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotWritable {
    /// nzfs does not decode the array.
    #[error("the array is not decoded: {0}")]
    NotDecoded(String),
    /// A Zarr v2 array (its metadata would have to be written as v2).
    #[error("only Zarr v3 arrays are written")]
    NotV3,
    /// A chunk grid other than `regular`.
    #[error("its chunk grid is not regular")]
    NotRegular,
    /// A data type nzfs widens when it decodes, a record, or one of
    /// variable length.
    #[error("its data type {0} is not written")]
    DataType(String),
    /// A codec nzfs does not encode.
    #[error(transparent)]
    Codec(#[from] EncodeError),
}

/// Whether writes into `array`'s chunks are taken; why not, if not.
pub fn writable(array: &Array) -> Result<(), NotWritable> {
    let m = array.metadata();
    if let Some(why) = &m.unsupported {
        return Err(NotWritable::NotDecoded(why.clone()));
    }
    if m.zarr_format != 3 {
        return Err(NotWritable::NotV3);
    }
    if !m.is_regular() {
        return Err(NotWritable::NotRegular);
    }
    if m.narrow.is_some() || m.data_type.size() == 0 {
        return Err(NotWritable::DataType(m.data_type.name()));
    }
    Ok(array.chain().encodable()?)
}

/// Slack above a chunk's decoded size an encoded object may have.
const ENCODED_SLACK: u64 = 1 << 20;

/// What one changed chunk costs a commit's memory, besides its bytes,
/// until the commit is written (a bound: about 800 bytes were measured,
/// for 16-byte chunks, in a debug build).
pub const TOUCHED_CHUNK_COST: u64 = 1024;

/// The most chunks one commit of writes changes under a cache budget of
/// `budget` bytes: a quarter of it at [`TOUCHED_CHUNK_COST`] each, and
/// never fewer than 1,024.
pub fn max_chunks(budget: u64) -> usize {
    usize::try_from(budget / 4 / TOUCHED_CHUNK_COST)
        .unwrap_or(usize::MAX)
        .max(1024)
}

/// Set in `stage` the chunks of `array` that `p` changes, checked against
/// `seen`, the store the writer saw; how many chunks. More than
/// `max_chunks` is refused before any is read.
pub fn apply(
    array: &Array,
    seen: &dyn ReadableStore,
    p: &Pending,
    stage: &dyn Stage,
    max_chunks: usize,
) -> Result<usize, WriteError> {
    let m = array.metadata();
    writable(array).map_err(|why| WriteError::Refused(format!("{}: not written: {why}", p.array)))?;
    let max = m
        .chunk_bytes()
        .saturating_add(m.chunk_bytes() / 8)
        .saturating_add(ENCODED_SLACK);
    let same = |key: &str| -> Result<bool, WriteError> {
        let tip = stage.get(key, max)?;
        let mine = seen.get(&StoreKey::new(key)?, max)?;
        Ok(tip == mine)
    };
    let conflict = |what: &str| {
        WriteError::Conflict(format!(
            "{what} changed on the branch since the version this file showed; nothing was committed (read the file again and write once more)"
        ))
    };
    let meta = node_path(&p.array, ZARR_JSON);
    if !same(&meta)? {
        return Err(conflict(&format!("{}'s metadata", p.array)));
    }
    // Chunk -> (offset in its decoded buffer, offset in the file, length).
    let mut plan: BTreeMap<u64, Vec<(u64, u64, u64)>> = BTreeMap::new();
    let too_many = || {
        WriteError::Refused(format!(
            "{}: these writes change more than {max_chunks} chunks of {}, and one commit changes at most {max_chunks} under this --cache-size (about 1 KiB each while it commits); write fewer at a time, with an fsync() between, or mount with a larger --cache-size",
            p.named, p.array
        ))
    };
    for &(start, end) in &p.extents {
        match p.shown {
            Shown::Chunk(index) => plan.entry(index).or_default().push((start, start, end - start)),
            Shown::Data => {
                for run in array.runs(start, end) {
                    plan.entry(run.chunk).or_default().push((run.within, run.at, run.len));
                    if plan.len() > max_chunks {
                        return Err(too_many());
                    }
                }
            }
        }
    }
    for (&chunk, pieces) in &plan {
        let key = array.chunk_key(chunk).map_err(|e| WriteError::Refused(e.to_string()))?;
        if !same(key.as_str())? {
            return Err(conflict(key.as_str()));
        }
        let decoded = array
            .read_chunk(chunk)
            .map_err(|e| WriteError::Refused(format!("{}: {e}", key.as_str())))?;
        let mut buf = decoded.to_vec();
        drop(decoded);
        for &(within, at, len) in pieces {
            let slot = usize::try_from(within)
                .ok()
                .and_then(|w| buf.get_mut(w..w.checked_add(len as usize)?))
                .ok_or_else(|| WriteError::Refused(format!("{}: a write outside the chunk", key.as_str())))?;
            p.file
                .read_exact_at(slot, at)
                .map_err(|e| WriteError::Store(crate::store::StoreError::Io(e)))?;
        }
        let encoded = array
            .chain()
            .encode(buf)
            .map_err(|why| WriteError::Refused(format!("{}: {why}", key.as_str())))?;
        stage.put(key.as_str(), encoded)?;
    }
    Ok(plan.len())
}

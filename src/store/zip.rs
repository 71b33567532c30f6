//! A Zarr store inside one zip file: what zarr-python's
//! `ZipStore` writes, and a zipped store directory.
//!
//! The zip is one object of another store (a local file's directory, or a
//! bucket), read by ranges: the end-of-central-directory record (and its
//! ZIP64 form) from the file's tail, then the central directory, once, at
//! open. A member's data is found from its local header (one more range,
//! remembered) and read as stored or inflated (deflate), bounded by the
//! size the directory gives. Keys are the members' names; when the zip
//! holds one top-level directory with the store in it (`zip -r x.zip
//! x.zarr`), keys are read below it.
//!
//! A deflated member read by ranges (a shard's index, then its chunks) is
//! inflated as far as each range needs, going on from where the last range
//! stopped, so reading it in order inflates it once; its compressed bytes
//! (at most [`MAX_DEFLATED_RANGED`]) are held meanwhile, one member per zip.
//!
//! Invariants: nothing is allocated from a size the zip claims before it is
//! checked against the object's length and a limit; a member is never read
//! past its own data; every member takes the zip object's owner and mode,
//! and its stamp (a rewritten zip is a changed store).

use crate::store::{StoreError, StoreResult};
use std::collections::BTreeMap;
use std::io::{self, Read};
use std::sync::{Arc, Mutex, OnceLock};

use super::{Access, Listing, RangeRequest, ReadableStore, Stamp, StoreKey, check_stamp};
use crate::store::documents::ROOT_DOCUMENTS;

/// The longest central directory read (members' names and sizes).
const MAX_DIRECTORY: u64 = 256 << 20;
/// The most a deflated member read by ranges may hold compressed: its
/// compressed bytes are kept while it is read (see `Inflating`).
pub const MAX_DEFLATED_RANGED: u64 = 64 << 20;
/// The end record, its comment at most 64 KiB, and the ZIP64 locator.
const TAIL: u64 = 22 + 65535 + 20;
/// The most an inflated range reserves before its bytes arrive.
const INFLATE_RESERVE: u64 = 1 << 20;

/// One member of the zip.
#[derive(Debug)]
struct Member {
    method: u16,
    compressed: u64,
    size: u64,
    local_header: u64,
    /// Where its data starts, from its local header (read once).
    data: OnceLock<u64>,
}

/// A deflated member being read by ranges: its compressed bytes and an
/// inflater standing at `at`, so that the next range at or after `at`
/// goes on from there (a shard read index first, then chunk by chunk,
/// inflates once, not once per range). One per zip; a range before `at`,
/// or of another member, starts again from the member's start.
struct Inflating {
    name: String,
    at: u64,
    inflater: flate2::read::DeflateDecoder<io::Cursor<Arc<[u8]>>>,
}

/// A store read from the zip at `key` of `inner`.
pub struct ZipStore {
    inner: Box<dyn ReadableStore>,
    key: StoreKey,
    stamp: Stamp,
    /// Member names below `root`, without it.
    members: BTreeMap<String, Member>,
    /// The deflated member read by ranges last.
    inflating: Mutex<Option<Inflating>>,
}

fn bad(key: &StoreKey, what: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("{key}: not a zip nzfs can read: {what}"))
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl ZipStore {
    /// Open the zip at `key` of `inner`: read its central directory.
    pub fn open(inner: Box<dyn ReadableStore>, key: StoreKey) -> StoreResult<ZipStore> {
        let stamp = inner
            .stat(&key)?
            .ok_or_else(|| StoreError::NotFound(format!("{key}: no such file")))?;
        let read = |offset: u64, len: u64| -> StoreResult<Vec<u8>> {
            inner
                .get_range(&key, offset, len, Some(stamp))?
                .ok_or_else(|| StoreError::NotFound(format!("{key} vanished")))
        };
        let tail_len = stamp.len.min(TAIL);
        let tail = read(stamp.len - tail_len, tail_len)?;
        let end = (0..tail.len().saturating_sub(21))
            .rev()
            .find(|&i| u32_at(&tail, i) == 0x0605_4b50)
            .ok_or_else(|| bad(&key, "no end of central directory record"))?;
        let mut count = u64::from(u16_at(&tail, end + 10));
        let mut dir_len = u64::from(u32_at(&tail, end + 12));
        let mut dir_at = u64::from(u32_at(&tail, end + 16));
        if count == 0xFFFF || dir_len == 0xFFFF_FFFF || dir_at == 0xFFFF_FFFF {
            // ZIP64: the locator sits just before the end record.
            if end < 20 || u32_at(&tail, end - 20) != 0x0706_4b50 {
                return Err(bad(&key, "a ZIP64 end record without its locator"));
            }
            let record_at = u64_at(&tail, end - 20 + 8);
            if record_at.checked_add(56).is_none_or(|e| e > stamp.len) {
                return Err(bad(&key, "the ZIP64 end record is past the end of the file"));
            }
            let record = read(record_at, 56)?;
            if u32_at(&record, 0) != 0x0606_4b50 {
                return Err(bad(&key, "no ZIP64 end of central directory record"));
            }
            count = u64_at(&record, 32);
            dir_len = u64_at(&record, 40);
            dir_at = u64_at(&record, 48);
        }
        if dir_len > MAX_DIRECTORY || dir_at.checked_add(dir_len).is_none_or(|e| e > stamp.len) {
            return Err(bad(
                &key,
                format!("a central directory of {dir_len} bytes at {dir_at} does not fit the file"),
            ));
        }
        let dir = read(dir_at, dir_len)?;
        let mut members = BTreeMap::new();
        let mut at = 0usize;
        for _ in 0..count {
            if at + 46 > dir.len() || u32_at(&dir, at) != 0x0201_4b50 {
                return Err(bad(&key, "a truncated central directory"));
            }
            let flags = u16_at(&dir, at + 8);
            let method = u16_at(&dir, at + 10);
            let mut compressed = u64::from(u32_at(&dir, at + 20));
            let mut size = u64::from(u32_at(&dir, at + 24));
            let (name_len, extra_len, comment_len) = (
                usize::from(u16_at(&dir, at + 28)),
                usize::from(u16_at(&dir, at + 30)),
                usize::from(u16_at(&dir, at + 32)),
            );
            let mut local_header = u64::from(u32_at(&dir, at + 42));
            let name_at = at + 46;
            let next = name_at + name_len + extra_len + comment_len;
            if next > dir.len() {
                return Err(bad(&key, "a truncated central directory"));
            }
            let name = String::from_utf8_lossy(&dir[name_at..name_at + name_len]).into_owned();
            // ZIP64 sizes and offset, for the fields that say 0xFFFFFFFF.
            let mut extra = &dir[name_at + name_len..name_at + name_len + extra_len];
            while extra.len() >= 4 {
                let (id, len) = (u16_at(extra, 0), usize::from(u16_at(extra, 2)));
                let body = &extra[4..(4 + len).min(extra.len())];
                if id == 1 {
                    let mut fields = body
                        .chunks_exact(8)
                        .map(|c| u64::from_le_bytes(c.try_into().expect("8")));
                    for field in [&mut size, &mut compressed, &mut local_header] {
                        if *field == 0xFFFF_FFFF {
                            *field = fields.next().ok_or_else(|| bad(&key, "a short ZIP64 extra field"))?;
                        }
                    }
                }
                extra = &extra[(4 + len).min(extra.len())..];
            }
            at = next;
            if name.ends_with('/') {
                continue; // a directory entry
            }
            if flags & 1 != 0 {
                tracing::warn!(zip = %key, member = ?name, "an encrypted member: left out");
                continue;
            }
            if let Err(e) = StoreKey::new(name.clone()) {
                // `..`, `/abs`, `a//b`, NUL: no key of a store may be one.
                tracing::warn!(zip = %key, member = ?name, "a member whose name is no store key, left out: {e}");
                continue;
            }
            members.insert(
                name,
                Member {
                    method,
                    compressed,
                    size,
                    local_header,
                    data: OnceLock::new(),
                },
            );
        }
        Ok(ZipStore {
            inner,
            key,
            stamp,
            members: Self::below_root(members),
            inflating: Mutex::new(None),
        })
    }

    /// The members below the store's root: the zip's top level, or its one
    /// top-level directory when the metadata is only there.
    fn below_root(members: BTreeMap<String, Member>) -> BTreeMap<String, Member> {
        if ROOT_DOCUMENTS.iter().any(|r| members.contains_key(*r)) {
            return members;
        }
        let mut tops = members.keys().filter_map(|k| k.split_once('/').map(|(t, _)| t));
        let Some(top) = tops.next().map(str::to_string) else {
            return members;
        };
        let one_top = members.keys().all(|k| k.starts_with(&format!("{top}/")));
        if !one_top
            || !ROOT_DOCUMENTS
                .iter()
                .any(|r| members.contains_key(&format!("{top}/{r}")))
        {
            return members;
        }
        members
            .into_iter()
            .filter_map(|(k, m)| Some((k.strip_prefix(&format!("{top}/"))?.to_string(), m)))
            .collect()
    }

    /// How many members the zip holds.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Where member `m`'s data starts (its local header, read once).
    fn data_at(&self, name: &str, m: &Member) -> StoreResult<u64> {
        if let Some(&at) = m.data.get() {
            return Ok(at);
        }
        let header = self
            .inner
            .get_range(&self.key, m.local_header, 30, Some(self.stamp))?
            .ok_or_else(|| StoreError::NotFound(format!("{} vanished", self.key)))?;
        if header.len() < 30 || u32_at(&header, 0) != 0x0403_4b50 {
            return Err(bad(&self.key, format!("no local header for {name}")));
        }
        let at = m
            .local_header
            .checked_add(30 + u64::from(u16_at(&header, 26)) + u64::from(u16_at(&header, 28)));
        let Some(at) = at.filter(|a| a.checked_add(m.compressed).is_some_and(|e| e <= self.stamp.len)) else {
            return Err(bad(&self.key, format!("{name}'s data is past the end of the file")));
        };
        Ok(*m.data.get_or_init(|| at))
    }

    /// The whole value of member `name`, at most `max_len` bytes.
    fn value(&self, name: &str, m: &Member, max_len: u64) -> StoreResult<Vec<u8>> {
        if m.size > max_len {
            return Err(super::too_large(m.size, max_len));
        }
        let at = self.data_at(name, m)?;
        let stored = self
            .inner
            .get_range(&self.key, at, m.compressed, Some(self.stamp))?
            .ok_or_else(|| StoreError::NotFound(format!("{} vanished", self.key)))?;
        match m.method {
            0 if m.compressed == m.size => Ok(stored),
            8 => {
                // Reserved from what is stored, not from the size claimed.
                let mut out = Vec::with_capacity(m.size.min(m.compressed.saturating_mul(4)).min(1 << 26) as usize);
                flate2::read::DeflateDecoder::new(stored.as_slice())
                    .take(m.size + 1)
                    .read_to_end(&mut out)
                    .map_err(|e| bad(&self.key, format!("{name}: {e}")))?;
                if out.len() as u64 != m.size {
                    return Err(bad(
                        &self.key,
                        format!("{name} inflates to {} bytes, not {}", out.len(), m.size),
                    ));
                }
                Ok(out)
            }
            0 => Err(bad(&self.key, format!("{name} is stored with two sizes"))),
            other => Err(StoreError::Corrupt(format!(
                "{}/{name}: zip compression method {other} is not supported (nzfs reads stored and deflated members)",
                self.key
            ))),
        }
    }

    /// Bytes `offset..end` of deflated member `name`, inflated only as far
    /// as `end`, from where the last range of it stopped when it can.
    fn inflated_range(&self, name: &str, m: &Member, offset: u64, end: u64) -> StoreResult<Vec<u8>> {
        if m.compressed > MAX_DEFLATED_RANGED {
            return Err(StoreError::Corrupt(format!(
                "{}/{name}: a deflated member of {} MiB compressed is read by ranges here; nzfs reads \
                 deflated members of at most {} MiB so (re-zip the store with stored members: zip -0)",
                self.key,
                m.compressed >> 20,
                MAX_DEFLATED_RANGED >> 20
            )));
        }
        if m.method != 8 {
            // Not stored, not deflated: value() says why.
            return self
                .value(name, m, m.size)
                .map(|v| v[offset as usize..end as usize].to_vec());
        }
        let mut slot = crate::sync::lock(&self.inflating);
        let reuse = slot.as_ref().is_some_and(|i| i.name == name && i.at <= offset);
        if !reuse {
            let at = self.data_at(name, m)?;
            let stored = self
                .inner
                .get_range(&self.key, at, m.compressed, Some(self.stamp))?
                .ok_or_else(|| StoreError::NotFound(format!("{} vanished", self.key)))?;
            *slot = Some(Inflating {
                name: name.to_string(),
                at: 0,
                inflater: flate2::read::DeflateDecoder::new(io::Cursor::new(Arc::from(stored))),
            });
        }
        let Some(state) = slot.as_mut() else {
            return Err(StoreError::Corrupt("no inflater".into()));
        };
        let failed = |e: io::Error| bad(&self.key, format!("{name}: {e}"));
        let skip = offset - state.at;
        let skipped = io::copy(&mut (&mut state.inflater).take(skip), &mut io::sink()).map_err(failed)?;
        // Grown as bytes inflate: the member's size is the zip's word.
        let mut out = Vec::with_capacity((end - offset).min(INFLATE_RESERVE) as usize);
        (&mut state.inflater)
            .take(end - offset)
            .read_to_end(&mut out)
            .map_err(failed)?;
        if skipped != skip || out.len() as u64 != end - offset {
            *slot = None;
            return Err(bad(
                &self.key,
                format!("{name} inflates to fewer than {} bytes", m.size),
            ));
        }
        state.at = end;
        Ok(out)
    }

    /// A member's stamp: its size, and the zip's version with its place.
    fn member_stamp(&self, m: &Member) -> Stamp {
        Stamp {
            len: m.size,
            version: self.stamp.version ^ m.local_header.rotate_left(17),
        }
    }
}

impl ReadableStore for ZipStore {
    fn get(&self, key: &StoreKey, max_len: u64) -> StoreResult<Option<Vec<u8>>> {
        match self.members.get(key.as_str()) {
            Some(m) => self.value(key.as_str(), m, max_len).map(Some),
            None => Ok(None),
        }
    }

    fn get_range(&self, key: &StoreKey, offset: u64, len: u64, expect: Option<Stamp>) -> StoreResult<Option<Vec<u8>>> {
        let Some(m) = self.members.get(key.as_str()) else {
            return Ok(None);
        };
        check_stamp(key, self.member_stamp(m), expect)?;
        let end = offset.checked_add(len).filter(|&e| e <= m.size);
        let Some(end) = end else {
            return Err(super::short_value(key, offset, len, m.size));
        };
        if m.method == 0 && m.compressed == m.size {
            let at = self.data_at(key.as_str(), m)?;
            return self.inner.get_range(&self.key, at + offset, len, Some(self.stamp));
        }
        self.inflated_range(key.as_str(), m, offset, end).map(Some)
    }

    /// Ranges of stored members go to the zip's store together, as ranges
    /// of the zip file (so object storage fetches them concurrently: a
    /// partial shard read in a zip made one request after another); the
    /// others, deflated or refused, are answered one by one as
    /// [`ZipStore::get_range`] answers them.
    fn get_ranges(&self, requests: &[RangeRequest]) -> Vec<StoreResult<Option<Vec<u8>>>> {
        let mut results: Vec<Option<StoreResult<Option<Vec<u8>>>>> = Vec::with_capacity(requests.len());
        let (mut inner, mut slots) = (Vec::new(), Vec::new());
        for (i, r) in requests.iter().enumerate() {
            let stored = self.members.get(r.key.as_str()).filter(|m| {
                m.method == 0
                    && m.compressed == m.size
                    && check_stamp(&r.key, self.member_stamp(m), r.expect).is_ok()
                    && r.offset.checked_add(r.len).is_some_and(|e| e <= m.size)
            });
            let at = stored.map(|m| self.data_at(r.key.as_str(), m));
            match at {
                Some(Ok(at)) => {
                    inner.push(RangeRequest {
                        key: self.key.clone(),
                        offset: at + r.offset,
                        len: r.len,
                        expect: Some(self.stamp),
                    });
                    slots.push(i);
                    results.push(None);
                }
                Some(Err(e)) => results.push(Some(Err(e))),
                None => results.push(Some(self.get_range(&r.key, r.offset, r.len, r.expect))),
            }
        }
        for (slot, result) in slots.into_iter().zip(self.inner.get_ranges(&inner)) {
            results[slot] = Some(result);
        }
        results
            .into_iter()
            .map(|r| {
                r.unwrap_or_else(|| {
                    Err(StoreError::Corrupt(format!(
                        "{}: its store answered fewer ranges than asked",
                        self.key
                    )))
                })
            })
            .collect()
    }

    fn stat(&self, key: &StoreKey) -> StoreResult<Option<Stamp>> {
        Ok(self.members.get(key.as_str()).map(|m| self.member_stamp(m)))
    }

    /// The zip file's store's, but a zip is followed whole, never member
    /// by member.
    fn profile(&self) -> super::Profile {
        super::Profile {
            rewritten_in_place: false,
            ..self.inner.profile()
        }
    }

    /// Every member shows the zip file's owner and mode; a directory of it
    /// adds the search bit to each read bit, as a directory anyone may
    /// read the zip through (a 0644 zip made directories 0444 and every
    /// combined file 000 under `allow_other`).
    fn access(&self, path: &str) -> StoreResult<Option<Access>> {
        let zip = self.inner.access(self.key.as_str())?;
        Ok(zip.map(|a| {
            if self.members.contains_key(path) {
                a
            } else {
                a.searchable()
            }
        }))
    }
}

impl crate::store::Listable for ZipStore {
    fn list_dir(&self, prefix: &str) -> StoreResult<Listing> {
        Ok(super::sorted_listing(&self.members, prefix))
    }
}

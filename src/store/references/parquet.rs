//! kerchunk's Parquet reference sets (`kerchunk.df.refs_to_dataframe`,
//! fsspec's `LazyReferenceMapper`): a directory holding `.zmetadata`
//! (`{"metadata": {key: JSON, ...}, "record_size": N}`) and, per array,
//! `VAR/refs.R.parq` files of `record_size` rows each, with columns `path`,
//! `offset`, `size` and `raw`. A chunk's row is its index in the C-order
//! flattening of the chunk grid (from `VAR/.zarray`); `raw` is inline data,
//! a null `path` (and `raw`) an absent chunk, and `offset == size == 0`
//! the whole target.
//!
//! Invariants: records are read lazily, when a key in them is first read,
//! and kept in an LRU of at most [`RECORDS_BYTES`] (estimated); a record
//! file is read bounded by [`MAX_RECORD_FILE`], and a corrupt one is an
//! error on the keys it holds (the Parquet reader runs under
//! `catch_unwind`, so even a panic in it stays an error); a missing record
//! file means its chunks are absent, as fsspec reads it. One record file
//! is read and decoded at a time, and before its pages are decompressed
//! the sizes their headers declare are summed (`pages.rs`) and bounded by
//! [`MAX_RECORD_PAGES`]: at most [`MAX_RECORD_FILE`] + [`MAX_RECORD_PAGES`]
//! + [`MAX_RECORD_DECODED`] (256 MiB) are held while one is decoded.

use crate::store::{StoreError, StoreResult};
use std::collections::{BTreeMap, HashMap};
use std::io;
use std::sync::{Arc, Mutex};

use lru::LruCache;

use super::{Ref, Spans, Targets, lock, spans_of};
use crate::json::{self, Value};
use crate::store::documents::{ZARRAY, ZMETADATA};
use crate::store::{ReadableStore, StoreKey};

/// Decoded records kept, estimated in bytes.
pub const RECORDS_BYTES: usize = 64 << 20;
/// The largest `refs.R.parq` file read.
pub const MAX_RECORD_FILE: u64 = 96 << 20;
/// The largest `.zmetadata` read.
const MAX_ZMETADATA: u64 = 64 << 20;

/// One record file's references, by row; or why it cannot be read.
struct Record {
    rows: Result<Vec<Option<Ref>>, Arc<str>>,
    spans: Arc<Spans>,
    bytes: usize,
}

type Records = LruCache<(String, u64), Arc<Record>>;

/// A Parquet reference set (`refs.parq/`): `.zmetadata`, and one record
/// file per array per run of `record_size` chunks, read on demand.
pub struct ParquetRefs {
    /// The set's directory in the home store (`refs.parq`).
    dir: String,
    record_size: u64,
    /// Each metadata key's JSON text, and `.zmetadata` as consolidated
    /// Zarr v2 metadata (without `record_size`).
    meta: BTreeMap<String, Arc<[u8]>>,
    /// The chunk counts of each array (by its path).
    grids: HashMap<String, Vec<u64>>,
    /// Records read, by `(array, record number)`, and their bytes.
    records: Mutex<(Records, usize)>,
    /// Held while a record file is read and decoded: one at a time, so
    /// that what decoding holds for a moment is bounded once, not once
    /// per FUSE thread.
    decoding: Mutex<()>,
}

fn bad(what: &str, reason: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(format!("reference set {what}: {reason}"))
}

impl ParquetRefs {
    /// Read the set's `.zmetadata`; its version is the set's stamp.
    pub fn open(home: &dyn ReadableStore, dir: &StoreKey) -> StoreResult<(ParquetRefs, u64)> {
        let name = dir.as_str();
        let key = crate::store::join(name, ZMETADATA)?;
        let (stamp, raw) = super::read_whole(home, &key, MAX_ZMETADATA)?;
        let doc = json::parse(&raw).map_err(|e| bad(name, e))?;
        let record_size = doc
            .get("record_size")
            .and_then(Value::as_u64)
            .filter(|&n| n > 0)
            .ok_or_else(|| bad(name, "record_size is not a positive integer"))?;
        let Some(Value::Object(entries)) = doc.get("metadata") else {
            return Err(bad(name, "no `metadata` object in .zmetadata"));
        };
        let mut meta = BTreeMap::new();
        let mut consolidated = Vec::new();
        let mut grids = HashMap::new();
        for (k, v) in entries {
            StoreKey::new(k.clone()).map_err(|e| bad(name, e))?;
            // Values are JSON objects; a writer may have put their text.
            let value = match v {
                Value::Str(s) => json::parse(s.as_bytes()).map_err(|e| bad(name, format!("{k}: {e}")))?,
                other => other.clone(),
            };
            if let Some(array) = k.strip_suffix(ZARRAY).map(|a| a.trim_end_matches('/')) {
                grids.insert(
                    array.to_string(),
                    chunk_counts(&value).map_err(|e| bad(name, format!("{k}: {e}")))?,
                );
            }
            meta.insert(k.clone(), Arc::from(value.to_string().into_bytes()));
            consolidated.push((k.clone(), value));
        }
        let zmetadata = Value::Object(vec![
            ("metadata".into(), Value::Object(consolidated)),
            ("zarr_consolidated_format".into(), Value::UInt(1)),
        ]);
        meta.insert(ZMETADATA.into(), Arc::from(zmetadata.to_string().into_bytes()));
        Ok((
            ParquetRefs {
                dir: name.to_string(),
                record_size,
                meta,
                grids,
                records: Mutex::new((LruCache::unbounded(), 0)),
                decoding: Mutex::new(()),
            },
            stamp.version,
        ))
    }

    /// The metadata keys (the only keys a listing shows).
    pub(crate) fn metadata(&self) -> &BTreeMap<String, Arc<[u8]>> {
        &self.meta
    }

    /// The reference of `key`: metadata, or a chunk's row of its record.
    pub(crate) fn lookup(&self, key: &StoreKey, targets: &Targets) -> StoreResult<Option<(Ref, Arc<Spans>)>> {
        if let Some(m) = self.meta.get(key.as_str()) {
            return Ok(Some((Ref::Inline(Arc::clone(m)), Arc::default())));
        }
        let Some((array, chunk)) = key.as_str().rsplit_once('/') else {
            return Ok(None);
        };
        let Some(counts) = self.grids.get(array) else {
            return Ok(None);
        };
        let Some(number) = chunk_number(chunk, counts) else {
            return Ok(None);
        };
        let (record, row) = (number / self.record_size, (number % self.record_size) as usize);
        let rec = self.record(array, record, targets)?;
        match &rec.rows {
            Err(why) => Err(StoreError::Corrupt(format!("{key}: {why}"))),
            Ok(rows) => Ok(rows.get(row).cloned().flatten().map(|r| (r, Arc::clone(&rec.spans)))),
        }
    }

    fn record(&self, array: &str, record: u64, targets: &Targets) -> StoreResult<Arc<Record>> {
        let id = (array.to_string(), record);
        if let Some(r) = lock(&self.records).0.get(&id) {
            return Ok(Arc::clone(r));
        }
        let _one = lock(&self.decoding);
        if let Some(r) = lock(&self.records).0.get(&id) {
            return Ok(Arc::clone(r));
        }
        let file = crate::store::join(&self.dir, &format!("{array}/refs.{record}.parq"))?;
        let rows = match targets.home().get(&file, MAX_RECORD_FILE) {
            Ok(None) => Ok(Vec::new()),
            Ok(Some(bytes)) => read_rows(bytes, self.record_size)
                .map(|rows| {
                    rows.into_iter()
                        .map(|r| r.map(|s| super::resolve(targets, s)))
                        .collect()
                })
                .map_err(|e| Arc::from(format!("{file}: {e}"))),
            // A record that cannot be read now may be read later.
            Err(e) => return Err(e.context(file)),
        };
        let (spans, bytes) = match &rows {
            Ok(rows) => {
                let bytes = rows
                    .iter()
                    .map(|r| {
                        32 + match r {
                            Some(Ref::Inline(d)) => d.len(),
                            _ => 0,
                        }
                    })
                    .sum();
                (Arc::new(spans_of(rows.iter().flatten())), bytes)
            }
            Err(_) => (Arc::default(), 64),
        };
        let rec = Arc::new(Record { rows, spans, bytes });
        let mut cache = lock(&self.records);
        cache.1 += rec.bytes;
        if let Some(old) = cache.0.put(id, Arc::clone(&rec)) {
            cache.1 -= old.bytes;
        }
        while cache.1 > RECORDS_BYTES && cache.0.len() > 1 {
            if let Some((_, old)) = cache.0.pop_lru() {
                cache.1 -= old.bytes;
            }
        }
        Ok(rec)
    }
}

/// Why a Parquet set's array or one of its record files cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The array's metadata lacks a member.
    #[error("no `{0}`")]
    No(&'static str),
    /// `shape` or `chunks` is not a list of integers.
    #[error("`{0}` holds a non-integer")]
    NotIntegers(&'static str),
    /// `shape` and `chunks` have different lengths.
    #[error("`shape` and `chunks` do not match")]
    GridMismatch,
    /// The parquet crate panicked on the file (caught).
    #[error("the Parquet reader failed on this file")]
    ReaderPanicked,
    /// The parquet crate refused the file.
    #[error(transparent)]
    Parquet(#[from] parquet::errors::ParquetError),
    /// The file's metadata places a column chunk before its start.
    #[error("a column chunk with a negative offset or size")]
    NegativeColumn,
    /// The file claims more rows than a record holds.
    #[error("{rows} rows, more than the record size {record_size}")]
    TooManyRows {
        /// The rows claimed.
        rows: i64,
        /// The set's `record_size`.
        record_size: u64,
    },
    /// The file's pages hold more rows than a record holds.
    #[error("more rows than the record size {0}")]
    MoreRows(u64),
    /// The record's rows decode to more than one record may hold.
    #[error("its rows decode to more than {} MiB (the most one record may hold)", MAX_RECORD_DECODED >> 20)]
    TooLarge,
    /// The page headers cannot be walked.
    #[error(transparent)]
    Pages(#[from] super::pages::PageError),
    /// The pages declare more than one record may decompress to.
    #[error("its pages declare {declared} bytes decompressed, more than the {} MiB one record may hold", MAX_RECORD_PAGES >> 20)]
    PagesTooLarge {
        /// What the page headers declare, summed.
        declared: u64,
    },
    /// An `offset` or `size` below zero.
    #[error("{column} {value}")]
    Negative {
        /// The column.
        column: String,
        /// The value in it.
        value: i64,
    },
    /// A column of a type the reference spec does not give it.
    #[error("{column} is a {field}")]
    Field {
        /// The column.
        column: String,
        /// Its Parquet type.
        field: String,
    },
}

/// The chunks along each axis of a `.zarray` (`[1]` for a scalar).
fn chunk_counts(zarray: &Value) -> Result<Vec<u64>, RecordError> {
    let ints = |k: &'static str| -> Result<Vec<u64>, RecordError> {
        zarray
            .get(k)
            .and_then(Value::as_array)
            .ok_or(RecordError::No(k))?
            .iter()
            .map(|v| v.as_u64().ok_or(RecordError::NotIntegers(k)))
            .collect()
    };
    let (shape, chunks) = (ints("shape")?, ints("chunks")?);
    if shape.len() != chunks.len() || chunks.contains(&0) {
        return Err(RecordError::GridMismatch);
    }
    let counts: Vec<u64> = shape.iter().zip(&chunks).map(|(s, c)| s.div_ceil(*c)).collect();
    Ok(if counts.is_empty() { vec![1] } else { counts })
}

/// The C-order number of chunk `name` (`i.j.k`) in a grid of `counts`.
fn chunk_number(name: &str, counts: &[u64]) -> Option<u64> {
    let parts: Vec<&str> = name.split('.').collect();
    if parts.len() != counts.len() {
        return None;
    }
    let mut n: u64 = 0;
    for (p, &c) in parts.iter().zip(counts) {
        let i: u64 = p.parse().ok()?;
        if i >= c || (p.len() > 1 && p.starts_with('0')) {
            return None;
        }
        n = n.checked_mul(c)?.checked_add(i)?;
    }
    Some(n)
}

/// The rows of one record file, at most `record_size`.
fn read_rows(bytes: Vec<u8>, record_size: u64) -> Result<Vec<Option<super::document::Spec>>, RecordError> {
    std::panic::catch_unwind(move || rows_of(bytes, record_size)).unwrap_or(Err(RecordError::ReaderPanicked))
}

/// A record file for the Parquet reader, whose streams fail a read at the
/// file's end instead of answering it with nothing. parquet 60.1 skips a
/// page header's unknown fields by copying their declared length to a
/// sink, which takes nothing-at-the-end as done: a 2.8 KB record declaring
/// a long list of such fields spun for 0.6 s (13 s under the fuzzer), and
/// a list may declare 2^31. With an error at the end it stops at once.
struct Strict(bytes::Bytes);

impl parquet::file::reader::Length for Strict {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

impl parquet::file::reader::ChunkReader for Strict {
    type T = StrictRead;

    fn get_read(&self, start: u64) -> parquet::errors::Result<StrictRead> {
        self.0.get_read(start).map(StrictRead)
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<bytes::Bytes> {
        self.0.get_bytes(start, length)
    }
}

/// A stream of a [`Strict`] record file.
struct StrictRead(bytes::buf::Reader<bytes::Bytes>);

impl io::Read for StrictRead {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.0.read(buf)? {
            0 if !buf.is_empty() => {
                Err(StoreError::Corrupt("a read past the end of the record file".to_string()).into())
            }
            n => Ok(n),
        }
    }
}

/// The most rows made room for before they are read.
const ROWS_RESERVED: usize = 4096;

/// The most bytes one record's rows may decode to (paths and inline data).
pub const MAX_RECORD_DECODED: usize = 64 << 20;

/// The most bytes the pages of one record file may declare that they
/// decompress to (its rows' bytes, plus their levels and headers).
pub const MAX_RECORD_PAGES: u64 = (MAX_RECORD_DECODED as u64) * 3 / 2;

/// The bytes a decoded field holds.
fn field_bytes(f: &parquet::record::Field) -> usize {
    use parquet::record::Field;
    match f {
        Field::Str(s) => s.len(),
        Field::Bytes(b) => b.data().len(),
        _ => 8,
    }
}

fn rows_of(bytes: Vec<u8>, record_size: u64) -> Result<Vec<Option<super::document::Spec>>, RecordError> {
    use super::document::Spec;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    let file = bytes::Bytes::from(bytes);
    let reader = SerializedFileReader::new(Strict(file.clone()))?;
    // The reader asserts (panics) on a column chunk with a negative offset
    // or size: such a file is refused here first.
    for group in reader.metadata().row_groups() {
        for c in group.columns() {
            let start = c.dictionary_page_offset().unwrap_or_else(|| c.data_page_offset());
            if start < 0 || c.compressed_size() < 0 {
                return Err(RecordError::NegativeColumn);
            }
        }
    }
    // The reader allocates what each page header declares before it
    // decompresses the page: the declarations are summed first.
    let columns = reader.metadata().row_groups().iter().flat_map(|g| g.columns());
    let declared = super::pages::declared_bytes(&file, columns.map(|c| c.byte_range()))?;
    if declared > MAX_RECORD_PAGES {
        return Err(RecordError::PagesTooLarge { declared });
    }
    let n = reader.metadata().file_metadata().num_rows();
    if n < 0 || n as u64 > record_size {
        return Err(RecordError::TooManyRows { rows: n, record_size });
    }
    // The row count is the file's word: room is made as rows come.
    let mut out = Vec::with_capacity((n as usize).min(ROWS_RESERVED));
    let mut decoded = 0usize;
    for row in reader.get_row_iter(None)? {
        let row = row?;
        if out.len() as u64 >= record_size {
            return Err(RecordError::MoreRows(record_size));
        }
        decoded = decoded.saturating_add(row.get_column_iter().map(|(_, f)| field_bytes(f)).sum());
        if decoded > MAX_RECORD_DECODED {
            return Err(RecordError::TooLarge);
        }
        let (mut path, mut offset, mut size, mut raw) = (None, 0u64, 0u64, None);
        for (name, field) in row.get_column_iter() {
            let negative = |value: i64| RecordError::Negative {
                column: name.clone(),
                value,
            };
            let wrong = |column: &str, f: &Field| RecordError::Field {
                column: column.to_string(),
                field: format!("{f:?}"),
            };
            let int = |f: &Field| match f {
                Field::Long(v) => u64::try_from(*v).map_err(|_| negative(*v)),
                Field::Int(v) => u64::try_from(*v).map_err(|_| negative(i64::from(*v))),
                Field::ULong(v) => Ok(*v),
                Field::UInt(v) => Ok(u64::from(*v)),
                Field::Null => Ok(0),
                other => Err(wrong(name, other)),
            };
            match (name.as_str(), field) {
                (_, Field::Null) => {}
                ("path", Field::Str(s)) => path = Some(s.clone()),
                ("path", Field::Bytes(b)) => path = Some(String::from_utf8_lossy(b.data()).into_owned()),
                ("offset", f) => offset = int(f)?,
                ("size", f) => size = int(f)?,
                ("raw", Field::Bytes(b)) => raw = Some(b.data().to_vec()),
                ("raw", Field::Str(s)) => raw = Some(s.as_bytes().to_vec()),
                (other, f) if ["path", "raw"].contains(&other) => return Err(wrong(other, f)),
                _ => {}
            }
        }
        out.push(match (raw, path) {
            (Some(data), _) => Some(Spec::Inline(data)),
            (None, None) => None,
            (None, Some(url)) if offset == 0 && size == 0 => Some(Spec::Url { url, span: None }),
            (None, Some(url)) => Some(Spec::Url {
                url,
                span: Some((offset, size)),
            }),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// CI's fuzzer's record file whose page header declares a long list of
    /// skipped fields past its end: an error at once, not a spin there
    /// (parquet's own reader takes the end of a skipped field for done).
    /// The page-header walk refuses it before the reader sees it; the
    /// reader alone stops at the end too.
    #[test]
    fn a_header_skipping_past_the_end_is_an_error_at_the_end() {
        let file = include_bytes!("../../../tests/fuzz/seeds/references/skip-past-end.parq");
        let e = read_rows(file.to_vec(), 4).unwrap_err().to_string();
        assert!(e.contains("page header"), "{e}");
        let reader =
            parquet::file::serialized_reader::SerializedFileReader::new(Strict(bytes::Bytes::from_static(file)));
        let e = match reader {
            Err(e) => e.to_string(),
            Ok(r) => {
                use parquet::file::reader::FileReader;
                match r.get_row_iter(None) {
                    Err(e) => e.to_string(),
                    Ok(mut rows) => rows.find_map(Result::err).expect("an error").to_string(),
                }
            }
        };
        assert!(e.contains("past the end of the record file"), "{e}");
    }

    #[test]
    fn chunk_numbers_are_c_order_and_bounded() {
        assert_eq!(chunk_number("1.2", &[3, 4]), Some(6));
        assert_eq!(chunk_number("0", &[1]), Some(0));
        assert_eq!(chunk_number("2.3", &[3, 4]), Some(11));
        for bad in ["3.0", "0.4", "1", "1.2.3", "01.2", "a.1", "-1.0"] {
            assert_eq!(chunk_number(bad, &[3, 4]), None, "{bad}");
        }
        let z = json::parse(br#"{"shape": [10, 7], "chunks": [4, 7]}"#).unwrap();
        assert_eq!(chunk_counts(&z).unwrap(), [3, 1]);
        let z = json::parse(br#"{"shape": [], "chunks": []}"#).unwrap();
        assert_eq!(chunk_counts(&z).unwrap(), [1]);
        let z = json::parse(br#"{"shape": [10], "chunks": [0]}"#).unwrap();
        assert!(chunk_counts(&z).is_err());
    }

    /// A record file whose footer claims 2^40 rows, under a record size
    /// as large: an error, with no allocation sized by the claim (which
    /// aborted the daemon).
    #[test]
    fn a_record_claiming_2_to_the_40_rows_returns() {
        use parquet::file::metadata::{FileMetaData, ParquetMetaData, ParquetMetaDataWriter};
        use parquet::file::reader::{FileReader, SerializedFileReader};
        let file = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/data/kerchunk/refs.parq/t/refs.0.parq"
        ))
        .unwrap();
        let reader = SerializedFileReader::new(bytes::Bytes::from(file.clone())).unwrap();
        let meta = reader.metadata();
        let f = meta.file_metadata();
        let claimed = 1i64 << 40;
        let lying = ParquetMetaData::new(
            FileMetaData::new(
                f.version(),
                claimed,
                f.created_by().map(str::to_string),
                f.key_value_metadata().cloned(),
                f.schema_descr_ptr(),
                f.column_orders().cloned(),
            ),
            meta.row_groups()
                .iter()
                .map(|g| g.clone().into_builder().set_num_rows(claimed).build().unwrap())
                .collect(),
        );
        let footer = u32::from_le_bytes(file[file.len() - 8..file.len() - 4].try_into().unwrap()) as usize;
        let mut out = file[..file.len() - 8 - footer].to_vec();
        ParquetMetaDataWriter::new(&mut out, &lying).finish().unwrap();
        let check = SerializedFileReader::new(bytes::Bytes::from(out.clone())).unwrap();
        assert_eq!(check.metadata().file_metadata().num_rows(), claimed);
        // The rows there are, or an error: either way, it returns.
        if let Ok(rows) = read_rows(out, 1 << 40) {
            assert!(rows.len() < 1 << 20);
        }
    }

    /// Garbage where a record file should be is an error, never a panic.
    #[test]
    fn corrupt_record_files_are_errors() {
        for bytes in [
            b"PAR1garbagePAR1".to_vec(),
            b"not parquet at all".to_vec(),
            Vec::new(),
            [
                b"PAR1".to_vec(),
                vec![0xff; 64],
                40u32.to_le_bytes().to_vec(),
                b"PAR1".to_vec(),
            ]
            .concat(),
        ] {
            assert!(read_rows(bytes, 10).is_err());
        }
    }
}

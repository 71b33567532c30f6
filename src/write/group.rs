//! A netCDF file (classic, or netCDF-4 read as its classic model:
//! [`crate::netcdf::nc4`]) as a Zarr v3 group: each variable one array, its
//! chunks encoded with `bytes` (little-endian) and `zstd`, and the
//! attributes as JSON.
//!
//! The rules, which docs/writing.md states for users:
//! - a variable is one array named as it is, with the file's dimension
//!   names as `dimension_names` and the record dimension as long as the
//!   file's number of records;
//! - its type is the Zarr type of the same width and kind (`byte` is
//!   `int8`, `short` `int16`, `int` `int32`, `float` `float32`, `double`
//!   `float64`, and CDF-5's `ubyte` to `uint64` their unsigned kin); a
//!   `char` variable's last dimension is its strings' length, and it is
//!   an array of `null_terminated_bytes` of that length over the others;
//! - a netCDF-4 variable keeps the file's chunk shape (each extent at most
//!   the variable's) where that holds at most [`CHUNK_BYTES`] and at least
//!   [`MIN_KEPT_CHUNK_BYTES`] (or the whole variable); otherwise, and for
//!   a classic file's,
//! - its chunks hold at most [`CHUNK_BYTES`]: the whole variable when it
//!   fits, or else its leading dimensions halved (rounding up) in turn,
//!   from the first, until a chunk fits;
//! - its `fill_value` is its `_FillValue` attribute, or netCDF's default
//!   fill for its type (what a reader of the file would take as missing);
//! - attributes keep their names and values: text as a JSON string, one
//!   number as a number, several as an array (NZ-1.0's mapping; a `float`
//!   attribute's value is written with the fewest digits that give the
//!   same `float` back), but for a floating-point `_FillValue`, written as
//!   xarray writes it (base64), which is the only form xarray reads.
//!
//! Invariants: objects are handed out one at a time, in order, the group's
//! `zarr.json` first; chunks are encoded a batch at a time, one per CPU
//! and at most [`ENCODE_BATCH`], so memory holds that many chunks (each at
//! most [`CHUNK_BYTES`] and its encoding) whatever the file's size;
//! nothing is handed out for a file that is refused, since every variable
//! is checked first.

use crate::json::Value;
use crate::netcdf::classic::{Attr, Classic, ClassicError, Form, NcType, Var};
use crate::netcdf::nc4::Values;
use crate::netcdf::vocabulary::attribute_json;
use crate::zarr::documents::ZARR_JSON;

/// The most bytes one chunk holds, decoded.
pub const CHUNK_BYTES: u64 = 4 << 20;

/// The zstd level of every chunk (zarr-python's default).
const ZSTD_LEVEL: i32 = 3;

/// The most chunks encoded at once (each holds a chunk and its encoding).
pub const ENCODE_BATCH: usize = 8;

/// The chunk shape of a variable of `shape` and `size`-byte values.
pub fn chunk_shape(shape: &[u64], size: u64) -> Vec<u64> {
    let mut chunk: Vec<u64> = shape.iter().map(|&n| n.max(1)).collect();
    let bytes = |c: &[u64]| c.iter().fold(size, |b, &n| b.saturating_mul(n));
    let mut axis = 0;
    while bytes(&chunk) > CHUNK_BYTES && axis < chunk.len() {
        if chunk[axis] > 1 {
            chunk[axis] = chunk[axis].div_ceil(2);
        } else {
            axis += 1;
        }
    }
    chunk
}

/// The least bytes a chunk the file chose is kept with (smaller ones make
/// too many objects), unless it holds the whole variable.
pub const MIN_KEPT_CHUNK_BYTES: u64 = 64 << 10;

/// The file's chunk shape `kept` of a variable of `shape` and `size`-byte
/// values, each extent at most the variable's (and at least 1), where it
/// is kept: its bytes at most [`CHUNK_BYTES`], and at least
/// [`MIN_KEPT_CHUNK_BYTES`] unless it holds the whole variable.
fn kept_chunk(kept: &[u64], shape: &[u64], size: u64) -> Option<Vec<u64>> {
    let bytes = |c: &[u64]| c.iter().fold(size, |b, &n| b.saturating_mul(n));
    if kept.len() != shape.len() || kept.contains(&0) {
        return None;
    }
    let clipped: Vec<u64> = kept.iter().zip(shape).map(|(&k, &n)| k.min(n.max(1))).collect();
    let whole = clipped.iter().zip(shape).all(|(&k, &n)| k >= n);
    let b = bytes(&clipped);
    (b <= CHUNK_BYTES && (b >= MIN_KEPT_CHUNK_BYTES || whole)).then_some(clipped)
}

/// An attribute's value as JSON.
fn attribute(a: &Attr) -> Value {
    attribute_json(a.nc_type, &a.raw)
}

fn attributes(attrs: &[Attr]) -> Value {
    Value::Object(attrs.iter().map(|a| (a.name.clone(), attribute(a))).collect())
}

/// A variable's attributes. A floating-point `_FillValue` is written as
/// xarray writes it to Zarr (the base64 of its value as a little-endian
/// double), which xarray alone reads (it refuses a number there) and
/// nzfs and `nzfs check` read as that number.
fn variable_attributes(attrs: &[Attr]) -> Value {
    use base64::Engine;
    let member = |a: &Attr| {
        let value = match (a.name.as_str(), a.nc_type, a.raw.as_slice()) {
            ("_FillValue", NcType::Float, &[b0, b1, b2, b3]) => Some(f64::from(f32::from_be_bytes([b0, b1, b2, b3]))),
            ("_FillValue", NcType::Double, raw) if raw.len() == 8 => {
                Some(f64::from_be_bytes(raw.try_into().expect("8 bytes")))
            }
            _ => None,
        };
        let shown = match value {
            Some(x) => Value::Str(base64::engine::general_purpose::STANDARD.encode(x.to_le_bytes())),
            None => attribute(a),
        };
        (a.name.clone(), shown)
    };
    Value::Object(attrs.iter().map(member).collect())
}

/// The fill value of `v`: its `_FillValue` when that is one value of its
/// type, or netCDF's default; big-endian.
fn fill_of(v: &Var) -> Vec<u8> {
    v.attrs
        .iter()
        .find(|a| a.name == "_FillValue" && a.nc_type == v.nc_type && a.count == 1)
        .map_or_else(|| v.nc_type.default_fill(), |a| a.raw.clone())
}

/// What [`convert`] wrote.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Written {
    /// Arrays.
    pub arrays: usize,
    /// Chunks.
    pub chunks: u64,
    /// Bytes handed out (encoded).
    pub bytes: u64,
    /// The arrays' names, as made.
    pub names: Vec<String>,
}

/// Why a file cannot become a group.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    /// The file is not one nzfs takes.
    #[error(transparent)]
    Classic(#[from] ClassicError),
    /// A name Zarr does not allow for a node.
    #[error("a variable's name: {0}")]
    Name(#[from] super::names::NameError),
    /// Two variables, or two attributes of one, of the same name
    /// (netCDF-C refuses such a file too).
    #[error("{0} (netCDF-C refuses such a file too)")]
    Duplicate(String),
    /// Encoding a chunk failed.
    #[error("encoding a chunk of {0}: {1}")]
    Encode(String, crate::codec::EncodeError),
    /// Where the objects go refused one.
    #[error(transparent)]
    Put(crate::store::StoreError),
}

/// A `char` variable's strings' length: its last dimension's (as CF and
/// xarray read text), or 1 for a scalar; `None` for other types. It
/// becomes an array of `null_terminated_bytes` of that length over the
/// other dimensions, the bytes as they are.
fn text_length(c: &Classic, v: &Var) -> Option<u64> {
    (v.nc_type == NcType::Char).then(|| c.shape(v).last().copied().unwrap_or(1))
}

/// Check that every variable of `c` can be written, before anything is.
fn check(c: &Classic) -> Result<(), ConvertError> {
    if let Some(dup) = super::names::duplicate(c.vars.iter().map(|v| v.name.as_str())) {
        return Err(ConvertError::Duplicate(format!(
            "two variables named \"{}\"",
            crate::naming::escaped(dup)
        )));
    }
    if let Some(dup) = super::names::duplicate(c.attrs.iter().map(|a| a.name.as_str())) {
        return Err(ConvertError::Duplicate(format!(
            "two global attributes named \"{}\"",
            crate::naming::escaped(dup)
        )));
    }
    for v in &c.vars {
        super::names::node_name(&v.name).map_err(ConvertError::Name)?;
        if let Some(dup) = super::names::duplicate(v.attrs.iter().map(|a| a.name.as_str())) {
            return Err(ConvertError::Duplicate(format!(
                "variable \"{}\" has two attributes named \"{}\"",
                crate::naming::escaped(&v.name),
                crate::naming::escaped(dup)
            )));
        }
        let text = |why: &str| -> Result<(), ConvertError> {
            Err(ClassicError::Unsupported(format!("char variable {:?}: {why}", v.name)).into())
        };
        match text_length(c, v) {
            Some(0) => text("its last dimension, the strings' length, is 0")?,
            Some(_) if v.record && v.dims.len() == 1 => {
                text("its only dimension is the record dimension (a string's length would grow by record)")?
            }
            Some(n) if n > MAX_TEXT_LENGTH => text(&format!("strings of {n} bytes (at most {MAX_TEXT_LENGTH})"))?,
            _ => {}
        }
    }
    Ok(())
}

/// The longest strings a `char` variable's last dimension may give.
const MAX_TEXT_LENGTH: u64 = 1 << 20;

/// The group `path` (`""`: the root) holding the file `c` was read from
/// (classic or netCDF-4), its values read from `values`:
/// every object, key and bytes, handed to `put` in turn.
pub fn convert(
    c: &Classic,
    values: &dyn Values,
    path: &str,
    put: &mut dyn FnMut(String, Vec<u8>) -> Result<(), crate::store::StoreError>,
) -> Result<Written, ConvertError> {
    check(c)?;
    let key = |rest: &str| super::node_path(path, rest);
    let group = crate::zarr::documents::group_document(attributes(&c.attrs));
    put(key(ZARR_JSON), group).map_err(ConvertError::Put)?;
    let mut written = Written::default();
    for v in &c.vars {
        let prefix = key(&v.name);
        written.bytes += array(c, values, v, &prefix, put, &mut written)?;
        written.arrays += 1;
        written.names.push(v.name.clone());
    }
    Ok(written)
}

/// Every group of the file `opened` (its root as the group `path`, each
/// group below it as the group of its path below `path`), parents
/// first: what [`convert`] makes of each. The names it returns are those
/// of the root group's children (its arrays and groups), as a replace
/// checks them; each group's names are checked against its arrays'
/// first.
pub fn convert_all(
    opened: &crate::netcdf::nc4::Opened,
    path: &str,
    put: &mut dyn FnMut(String, Vec<u8>) -> Result<(), crate::store::StoreError>,
) -> Result<Written, ConvertError> {
    for (i, (at, c)) in opened.groups.iter().enumerate() {
        check(c)?;
        let subgroups = opened
            .groups
            .iter()
            .filter(|(p, _)| is_child(p, at))
            .map(|(p, _)| leaf(p));
        let names: Vec<&str> = c.vars.iter().map(|v| v.name.as_str()).chain(subgroups).collect();
        if let Some(dup) = super::names::duplicate(names.iter().copied()) {
            return Err(ConvertError::Duplicate(format!(
                "a group and a variable, or two groups, named \"{}\"",
                crate::naming::escaped(dup)
            )));
        }
        if i > 0 {
            super::names::node_name(leaf(at)).map_err(ConvertError::Name)?;
        }
    }
    let mut written = Written::default();
    for (i, (at, c)) in opened.groups.iter().enumerate() {
        let group = match at.is_empty() {
            true => path.to_string(),
            false => super::node_path(path, at),
        };
        let w = convert(c, &*opened.values(i), &group, put)?;
        written.arrays += w.arrays;
        written.chunks += w.chunks;
        written.bytes += w.bytes;
        if at.is_empty() {
            written.names.extend(w.names);
        } else if !at.contains('/') {
            written.names.push(at.clone());
        }
    }
    Ok(written)
}

/// Whether group path `p` is a child of group path `of` (`""`: the root).
fn is_child(p: &str, of: &str) -> bool {
    match of.is_empty() {
        true => !p.is_empty() && !p.contains('/'),
        false => p
            .strip_prefix(of)
            .and_then(|r| r.strip_prefix('/'))
            .is_some_and(|r| !r.contains('/')),
    }
}

/// The last name of a group path.
fn leaf(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// One variable: its `zarr.json`, then its chunks. Returns the bytes
/// handed out.
fn array(
    c: &Classic,
    values: &dyn Values,
    v: &Var,
    prefix: &str,
    put: &mut dyn FnMut(String, Vec<u8>) -> Result<(), crate::store::StoreError>,
    written: &mut Written,
) -> Result<u64, ConvertError> {
    let ints = |xs: &[u64]| Value::Array(xs.iter().map(|&n| Value::UInt(n)).collect());
    let conf =
        |members: Vec<(&str, Value)>| Value::Object(members.into_iter().map(|(k, v)| (k.to_string(), v)).collect());
    let codec = |name: &str, c: Value| conf(vec![("name", Value::Str(name.into())), ("configuration", c)]);
    let text = text_length(c, v);
    // A char variable's last dimension is its elements' length.
    let mut shape = c.shape(v);
    let size = match text {
        Some(n) => {
            shape.pop();
            n
        }
        None => v.item_size(),
    };
    let chunk = match (&v.chunks, text) {
        (Some(kept), None) => kept_chunk(kept, &shape, size).unwrap_or_else(|| chunk_shape(&shape, size)),
        _ => chunk_shape(&shape, size),
    };
    let strings = v.form == Form::Strings;
    let fill = match (text, v.compound()) {
        _ if strings => Vec::new(),
        (Some(n), _) => vec![0; n as usize],
        (None, Some(r)) => vec![0; r.size() as usize],
        (None, None) => fill_of(v),
    };
    let data_type = match text {
        Some(n) => conf(vec![
            ("name", Value::Str("null_terminated_bytes".into())),
            ("configuration", conf(vec![("length_bytes", Value::UInt(n))])),
        ]),
        None => match v.compound() {
            _ if strings => Value::Str("string".into()),
            Some(r) => r.data_type(),
            None => Value::Str(v.nc_type.zarr().unwrap_or_default().into()),
        },
    };
    let bytes_codec = match text {
        _ if strings => codec("vlen-utf8", conf(vec![])),
        Some(_) => conf(vec![("name", Value::Str("bytes".into()))]),
        None => codec("bytes", conf(vec![("endian", Value::Str("little".into()))])),
    };
    let dims = &v.dims[..v.dims.len() - usize::from(text.is_some() && !v.dims.is_empty())];
    let meta = conf(vec![
        ("zarr_format", Value::Int(3)),
        ("node_type", Value::Str("array".into())),
        ("shape", ints(&shape)),
        ("data_type", data_type),
        (
            "chunk_grid",
            conf(vec![
                ("name", Value::Str("regular".into())),
                ("configuration", conf(vec![("chunk_shape", ints(&chunk))])),
            ]),
        ),
        (
            "chunk_key_encoding",
            conf(vec![
                ("name", Value::Str("default".into())),
                ("configuration", conf(vec![("separator", Value::Str("/".into()))])),
            ]),
        ),
        (
            "fill_value",
            match (text, v.compound()) {
                (Some(_), _) => Value::Str(String::new()),
                _ if strings => Value::Str(String::new()),
                (None, Some(r)) => r.zero_fill(),
                (None, None) => v.nc_type.decode(&fill, true),
            },
        ),
        (
            "codecs",
            Value::Array(vec![
                bytes_codec,
                codec(
                    "zstd",
                    conf(vec![
                        ("level", Value::Int(ZSTD_LEVEL.into())),
                        ("checksum", Value::Bool(false)),
                    ]),
                ),
            ]),
        ),
        ("attributes", variable_attributes(&v.attrs)),
        (
            "dimension_names",
            Value::Array(dims.iter().map(|&d| Value::Str(c.dims[d].name.clone())).collect()),
        ),
    ]);
    let doc = meta.to_string().into_bytes();
    // The chunks are encoded through the chain a reader builds from this
    // document.
    let encoding = |e: &dyn std::fmt::Display| {
        ConvertError::Encode(
            prefix.into(),
            crate::codec::EncodeError::Failed {
                codec: "codecs",
                reason: e.to_string(),
            },
        )
    };
    let chain = match crate::zarr::metadata::NodeMetadata::parse(&doc).map_err(|e| encoding(&e))? {
        crate::zarr::metadata::NodeMetadata::Array(m) => {
            crate::codec::CodecChain::new(&m.codecs, &m.chunk_shape, m.data_type.clone(), &m.fill_value)
                .map_err(|e| encoding(&e))?
        }
        _ => return Err(encoding(&"not an array's metadata")),
    };
    let mut bytes = doc.len() as u64;
    put(format!("{prefix}/{ZARR_JSON}"), doc).map_err(ConvertError::Put)?;
    if shape.contains(&0) {
        return Ok(bytes);
    }
    let grid: Vec<u64> = shape.iter().zip(&chunk).map(|(&n, &c)| n.div_ceil(c)).collect();
    // netCDF's big-endian values in this machine's order, as a decoded
    // chunk holds them (text as it is, records read in this order).
    let swap = text.is_none() && v.form == Form::Atomic && cfg!(target_endian = "little");
    let fill_native: Vec<u8> = match swap {
        true => fill.iter().rev().copied().collect(),
        false => fill.clone(),
    };
    let keys = crate::zarr::chunk_key::ChunkKeyEncoding::Default { separator: '/' };
    // A batch of chunks at a time, one per CPU (at most ENCODE_BATCH),
    // each read and encoded on a thread of its own (a netCDF-4 file's
    // read is its decompression), and handed out in order.
    let batch = crate::cpus::available().count.clamp(1, ENCODE_BATCH) as u64;
    let total: u64 = grid.iter().product();
    for first in (0..total).step_by(batch as usize) {
        let mut regions = Vec::with_capacity(batch as usize);
        for linear in first..total.min(first + batch) {
            let index = crate::zarr::chunk_key::unravel(&grid, linear);
            let start: Vec<u64> = index.iter().zip(&chunk).map(|(&i, &c)| i * c).collect();
            let count: Vec<u64> = start
                .iter()
                .zip(&chunk)
                .zip(&shape)
                .map(|((&s, &c), &n)| c.min(n - s))
                .collect();
            regions.push((format!("{prefix}/{}", keys.key(&index)), start, count));
        }
        let encoded: Vec<Result<(String, Vec<u8>), ConvertError>> = std::thread::scope(|scope| {
            let jobs: Vec<_> = regions
                .into_iter()
                .map(|(key, start, count)| {
                    let (chunk, fill_native, chain) = (&chunk, &fill_native, &chain);
                    let job = move || {
                        let read = match text {
                            // The strings whole: their last dimension from 0.
                            Some(n) if !v.dims.is_empty() => {
                                values.read(c, v, &[&start[..], &[0]].concat(), &[&count[..], &[n]].concat())
                            }
                            _ => values.read(c, v, &start, &count),
                        }?;
                        let whole = match strings {
                            true => whole_text_chunk(&read, &count, chunk),
                            false => whole_chunk(read, &count, chunk, size as usize, fill_native, swap),
                        };
                        chain.encode(whole).map_err(|e| ConvertError::Encode(prefix.into(), e))
                    };
                    (key, scope.spawn(job))
                })
                .collect();
            jobs.into_iter()
                .map(|(key, job)| {
                    job.join()
                        .unwrap_or_else(|_| {
                            Err(ConvertError::Encode(
                                prefix.into(),
                                crate::codec::EncodeError::Failed {
                                    codec: "codecs",
                                    reason: "the encoder panicked".into(),
                                },
                            ))
                        })
                        .map(|e| (key, e))
                })
                .collect()
        });
        for item in encoded {
            let (key, encoded) = item?;
            bytes += encoded.len() as u64;
            put(key, encoded).map_err(ConvertError::Put)?;
            written.chunks += 1;
        }
    }
    Ok(bytes)
}

/// A region's big-endian `values` (of shape `count`) as a whole chunk of
/// shape `chunk`, each element reversed where `swap` (into this machine's
/// order), the rest of it the fill value (`fill`, in the chunk's order).
fn whole_chunk(mut values: Vec<u8>, count: &[u64], chunk: &[u64], size: usize, fill: &[u8], swap: bool) -> Vec<u8> {
    let place = |out: &mut [u8], from: &[u8]| match swap {
        true => {
            for (o, i) in out.chunks_exact_mut(size).zip(from.chunks_exact(size)) {
                for (k, b) in o.iter_mut().enumerate() {
                    *b = i[size - 1 - k];
                }
            }
        }
        false => out.copy_from_slice(from),
    };
    if count == chunk {
        // A whole chunk is swapped where it was read: no second buffer.
        if swap {
            values.chunks_exact_mut(size).for_each(<[u8]>::reverse);
        }
        return values;
    }
    let elements: u64 = chunk.iter().product();
    let mut out = fill.repeat(elements as usize);
    let rank = chunk.len();
    let row = count[rank - 1] as usize * size;
    let rows = values.len() / row.max(1);
    // Each row of the region (its last axis) at its place in the chunk.
    let mut at = vec![0u64; rank];
    for r in 0..rows {
        let mut offset = 0u64;
        for a in 0..rank {
            offset = offset * chunk[a] + at[a];
        }
        let o = offset as usize * size;
        place(&mut out[o..o + row], &values[r * row..(r + 1) * row]);
        crate::odometer::next(&mut at[..rank - 1], &count[..rank - 1]);
    }
    out
}

/// A region's strings (`lines`, one text line each, of shape `count`) as
/// a whole chunk of shape `chunk`, the rest of it empty strings.
fn whole_text_chunk(lines: &[u8], count: &[u64], chunk: &[u64]) -> Vec<u8> {
    if count == chunk {
        return lines.to_vec();
    }
    let mut region = lines.split_inclusive(|&b| b == b'\n');
    let mut out = Vec::with_capacity(lines.len() + chunk.iter().product::<u64>() as usize);
    let mut at = vec![0u64; chunk.len()];
    loop {
        match at.iter().zip(count).all(|(i, n)| i < n) {
            true => out.extend_from_slice(region.next().unwrap_or(b"\n")),
            false => out.push(b'\n'),
        }
        if !crate::odometer::next(&mut at, chunk) {
            return out;
        }
    }
}

#[cfg(test)]
mod tests;

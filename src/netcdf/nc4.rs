//! A netCDF-4 file (HDF5 with netCDF-4's conventions, the classic model
//! included) read as the group writer reads a classic one: each of its
//! groups' dimensions, variables and attributes as a [`Classic`] model,
//! and each variable's values, a region at a time, big-endian as a
//! classic file holds them ([`Values`]).
//!
//! The HDF5 underneath is read by the `netcdf-reader` crate, opened with
//! bounds on everything it allocates: its chunk cache, the
//! largest chunk it decodes and the largest region one read gives.
//!
//! What is taken: every group (nested groups as nested groups, parents
//! first), each with its dimensions (an unlimited one at its current
//! length, any number of them; a dimension of a group above, as
//! netCDF-4 lets a variable use, counted as the group's own), its
//! variables of netCDF's atomic numeric types (`byte` … `uint64`,
//! `float`, `double`), each read through its own chunks and filters
//! (deflate, shuffle, fletcher32) and written again with the project's
//! codecs; `char`, enum (as its base type, with CF's `flag_values` and
//! `flag_meanings`), compound ([`super::record`]) and `string` variables,
//! each read whole (at most [`MAX_READ_BYTES`]; strings at most
//! [`MAX_STRING_BYTES`] in all); and the attributes of the atomic types
//! and of text (one string). What is refused, with the reason, before
//! anything is written: opaque and variable-length types, a compound
//! with a field of no fixed-size Zarr type, and attributes of several
//! strings or of user-defined types; a file whose groups are not a tree.
//!
//! Invariants: every count the file gives is checked by the reader before
//! it allocates; a read never holds more than [`MAX_READ_BYTES`]; the
//! values a file declares are at most [`MAX_EXPANSION`] times its size
//! (and a MiB), so the work its conversion does is bounded by its size;
//! groups are nested at most [`MAX_DEPTH`] deep and [`MAX_GROUPS`] in all.

use std::fs::File;

use netcdf_reader::{FileStorage, NcAttrValue, NcFile, NcOpenOptions, NcSliceInfo, NcSliceInfoElem};

use super::classic::{Attr, Classic, ClassicError, Dim, Form, Format, Var};
use super::record;
use super::vocabulary::NcType;

/// The signature an HDF5 file starts with (netCDF-C writes its superblock
/// at offset 0).
pub const HDF5_MAGIC: &[u8; 8] = b"\x89HDF\r\n\x1a\n";

/// The most bytes one read of a variable's region gives: the group
/// writer reads a chunk at a time, each at most 4 MiB decoded.
pub const MAX_READ_BYTES: usize = 8 << 20;

/// The largest chunk of the file decoded (netCDF-C's default chunks are
/// at most 4 MiB; a file's own may be larger).
const MAX_CHUNK_BYTES: usize = 64 << 20;

/// The reader's cache of decoded chunks.
const CHUNK_CACHE_BYTES: usize = 32 << 20;

/// Where a variable's values are read from (by several threads at once).
pub trait Values: Sync {
    /// The values of `v` (a variable of `c`) in the region
    /// `start .. start + count`, row-major, big-endian (a compound's
    /// records packed, each field in this machine's order).
    fn read(&self, c: &Classic, v: &Var, start: &[u64], count: &[u64]) -> Result<Vec<u8>, ClassicError>;
}

/// The groups of a netCDF-4 file nested at most this deep.
pub const MAX_DEPTH: usize = 32;

/// And at most this many in all.
pub const MAX_GROUPS: usize = 1024;

/// The values of one group of a netCDF-4 file (its path in the file).
struct GroupValues {
    file: std::sync::Arc<NcFile>,
    path: String,
}

/// A netCDF file's groups, as the group writer takes them: the root
/// first, each parent before its children.
pub struct Opened {
    /// Each group's path below the file's root (`""`: the root; `a/b`),
    /// and its model.
    pub groups: Vec<(String, Classic)>,
    source: Source,
}

enum Source {
    Classic(File),
    Nc4(std::sync::Arc<NcFile>),
}

impl Opened {
    /// Where the values of group `i` are read from.
    pub fn values(&self, i: usize) -> Box<dyn Values + '_> {
        match &self.source {
            Source::Classic(f) => Box::new(ClassicRef(f)),
            Source::Nc4(file) => Box::new(GroupValues {
                file: std::sync::Arc::clone(file),
                path: self.groups.get(i).map(|g| g.0.clone()).unwrap_or_default(),
            }),
        }
    }
}

struct ClassicRef<'a>(&'a File);

impl Values for ClassicRef<'_> {
    fn read(&self, c: &Classic, v: &Var, start: &[u64], count: &[u64]) -> Result<Vec<u8>, ClassicError> {
        c.read(self.0, v, start, count)
    }
}

/// The options every netCDF-4 file is opened with.
fn options() -> NcOpenOptions {
    NcOpenOptions {
        chunk_cache_bytes: CHUNK_CACHE_BYTES,
        max_chunk_bytes: MAX_CHUNK_BYTES,
        max_read_bytes: MAX_READ_BYTES,
        ..NcOpenOptions::default()
    }
}

/// Whether `file` starts as an HDF5 file does.
pub fn is_hdf5(file: &File) -> std::io::Result<bool> {
    let mut magic = [0u8; 8];
    match std::os::unix::fs::FileExt::read_exact_at(file, &mut magic, 0) {
        Ok(()) => Ok(&magic == HDF5_MAGIC),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(false),
        Err(e) => Err(e),
    }
}

/// A netCDF file closed on a writable mount, classic or netCDF-4: its
/// groups' models, and where their values are read from.
pub fn open(file: &File) -> Result<Opened, ClassicError> {
    if !is_hdf5(file)? {
        let c = Classic::parse(file)?;
        return Ok(Opened {
            groups: vec![(String::new(), c)],
            source: Source::Classic(file.try_clone()?),
        });
    }
    let h5 = hdf5_reader::Hdf5File::from_storage_with_options(
        std::sync::Arc::new(FileStorage::from_file(file.try_clone()?).map_err(corrupt)?),
        hdf5_reader::OpenOptions {
            chunk_cache_bytes: 0,
            ..hdf5_reader::OpenOptions::default()
        },
    )
    .map_err(corrupt)?;
    a_tree(&h5)?;
    let storage = FileStorage::from_file(file.try_clone()?).map_err(corrupt)?;
    let nc = NcFile::from_storage_with_options(std::sync::Arc::new(storage), options()).map_err(corrupt)?;
    let mut groups = Vec::new();
    let mut pending = vec![(String::new(), nc.root_group().map_err(corrupt)?, 0usize)];
    while let Some((path, g, depth)) = pending.pop() {
        if depth > MAX_DEPTH || groups.len() >= MAX_GROUPS {
            return Err(unsupported(format!(
                "groups nested deeper than {MAX_DEPTH} or more than {MAX_GROUPS} of them"
            )));
        }
        groups.push((path.clone(), model(g)?));
        // In reverse, so that they come out in file order.
        for sub in g.groups.iter().rev() {
            let p = match path.is_empty() {
                true => sub.name.clone(),
                false => format!("{path}/{}", sub.name),
            };
            pending.push((p, sub, depth + 1));
        }
    }
    bounded(&groups, file.metadata()?.len())?;
    keep_chunks(&h5, &mut groups);
    Ok(Opened {
        groups,
        source: Source::Nc4(std::sync::Arc::new(nc)),
    })
}

/// Refuse a file whose groups are not a tree: a link (hard or soft) to a
/// group already seen, as a cycle back to a parent or to the root is,
/// would have the group reader go round for ever. Walked without
/// recursion, at most [`MAX_DEPTH`] deep and [`MAX_GROUPS`] groups, each
/// group's links read once.
fn a_tree(h5: &hdf5_reader::Hdf5File) -> Result<(), ClassicError> {
    let root = h5.root_group().map_err(corrupt)?;
    let mut seen = std::collections::HashSet::from([root.address()]);
    let mut pending = vec![(root, 0usize)];
    while let Some((g, depth)) = pending.pop() {
        for sub in g.groups().map_err(corrupt)? {
            if !seen.insert(sub.address()) {
                return Err(ClassicError::Corrupt(format!(
                    "netCDF-4 (HDF5): group {:?} links to a group already linked (a cycle, or one group under two \
                     names), which netCDF-4 never writes",
                    sub.name()
                )));
            }
            if depth + 1 > MAX_DEPTH || seen.len() > MAX_GROUPS {
                return Err(unsupported(format!(
                    "groups nested deeper than {MAX_DEPTH} or more than {MAX_GROUPS} of them"
                )));
            }
            pending.push((sub, depth + 1));
        }
    }
    Ok(())
}

/// A read of variable `name` that failed: past one of the bounds the
/// reader is opened with (the file is then too large for this
/// conversion, not corrupt), or corrupt.
fn read_failed(name: &str, e: netcdf_reader::Error) -> ClassicError {
    use hdf5_reader::error::Error as H;
    let mut inner = match &e {
        netcdf_reader::Error::Hdf5(h) => Some(h),
        _ => None,
    };
    while let Some(H::Context { source, .. }) = inner {
        inner = Some(source);
    }
    match inner {
        Some(H::ResourceLimit(why)) => {
            ClassicError::Unsupported(format!("variable {name:?}: {why}; not taken from a netCDF-4 file"))
        }
        _ => corrupt(format!("variable {name:?}: {e}")),
    }
}

fn corrupt(e: impl std::fmt::Display) -> ClassicError {
    ClassicError::Corrupt(format!("netCDF-4 (HDF5): {e}"))
}

fn unsupported(what: String) -> ClassicError {
    ClassicError::Unsupported(format!("{what}; not taken from a netCDF-4 file yet"))
}

/// Each chunked variable's chunk shape, as the file stores it, read from
/// its dataset's layout (no data is read). Where that cannot be read the
/// writer's own rule chunks the variable.
fn keep_chunks(h5: &hdf5_reader::Hdf5File, groups: &mut [(String, Classic)]) {
    for (path, c) in groups.iter_mut() {
        for v in &mut c.vars {
            let name = match path.is_empty() {
                true => format!("/{}", v.name),
                false => format!("/{path}/{}", v.name),
            };
            v.chunks = h5
                .dataset(&name)
                .ok()
                .and_then(|d| d.chunks())
                .map(|dims| dims.into_iter().map(u64::from).collect::<Vec<u64>>())
                .filter(|dims| dims.len() == v.dims.len());
        }
    }
}

/// One group of a netCDF-4 file as the classic model.
fn model(root: &netcdf_reader::NcGroup) -> Result<Classic, ClassicError> {
    let mut dims: Vec<Dim> = root
        .dimensions
        .iter()
        .map(|d| Dim {
            name: d.name.clone(),
            len: d.size,
        })
        .collect();
    if root.variables.len() as u64 > super::classic::MAX_VARIABLES {
        return Err(unsupported(format!(
            "{} variables (at most {})",
            root.variables.len(),
            super::classic::MAX_VARIABLES
        )));
    }
    let mut vars = Vec::with_capacity(root.variables.len());
    for v in &root.variables {
        let what = || format!("variable {:?}", v.name);
        let mut attrs = attributes(&v.attributes, &what())?;
        let (nc_type, form) = match &v.dtype {
            netcdf_reader::NcType::Enum { base, members } => {
                let base =
                    record::numeric(base).ok_or_else(|| unsupported(format!("{} of an enum of {base:?}", what())))?;
                attrs.extend(enum_attributes(base, members));
                (base, Form::Atomic)
            }
            netcdf_reader::NcType::Compound { .. } => {
                let r = record::Record::of(&v.dtype).map_err(|why| unsupported(format!("{}: {why}", what())))?;
                (NcType::UByte, Form::Compound(r))
            }
            netcdf_reader::NcType::String => (NcType::UByte, Form::Strings),
            t => (
                atomic(t).ok_or_else(|| unsupported(format!("{} of type {t:?}", what())))?,
                Form::Atomic,
            ),
        };
        // A dimension of a group above is counted as this group's own.
        let mut ids = Vec::with_capacity(v.dimensions.len());
        for d in &v.dimensions {
            let at = dims.iter().position(|g| g.name == d.name && g.len == d.size);
            ids.push(at.unwrap_or_else(|| {
                dims.push(Dim {
                    name: d.name.clone(),
                    len: d.size,
                });
                dims.len() - 1
            }));
        }
        vars.push(Var {
            name: v.name.clone(),
            dims: ids,
            attrs,
            nc_type,
            begin: 0,
            record: false,
            chunks: None,
            form,
        });
    }
    Ok(Classic::model(
        Format::Netcdf4,
        dims,
        attributes(&root.attributes, "the file")?,
        vars,
    ))
}

/// The most decoded bytes a netCDF-4 file's values may hold per byte of
/// the file: deflate's greatest ratio (1032:1), so that a small file
/// declaring vast variables of unwritten chunks (which would read as fill
/// values, and be written as such) is refused before anything is read.
pub const MAX_EXPANSION: u64 = 1032;

/// Refuse `groups`, read from a file of `len` bytes, where their
/// variables hold more than [`MAX_EXPANSION`] times that (and a MiB).
fn bounded(groups: &[(String, Classic)], len: u64) -> Result<(), ClassicError> {
    let most = len.saturating_mul(MAX_EXPANSION).saturating_add(1 << 20);
    let mut total = 0u64;
    for (_, c) in groups {
        for v in &c.vars {
            let bytes = c
                .shape(v)
                .iter()
                .try_fold(v.item_size(), |n, &d| n.checked_mul(d))
                .and_then(|n| total.checked_add(n));
            total = match bytes {
                Some(t) if t <= most => t,
                _ => {
                    return Err(ClassicError::Unsupported(format!(
                        "the variables declare more than {most} bytes of values, {MAX_EXPANSION} times the file's \
                         {len} bytes and a MiB (deflate's most): a netCDF-4 file whose chunks are mostly unwritten \
                         is not taken"
                    )));
                }
            };
        }
    }
    Ok(())
}

/// The classic type of a netCDF-4 atomic type (but `string`).
fn atomic(t: &netcdf_reader::NcType) -> Option<NcType> {
    match t {
        netcdf_reader::NcType::Char => Some(NcType::Char),
        t => record::numeric(t),
    }
}

/// An enum's names and values as CF writes a flag variable's:
/// `flag_values` (of its base type) and `flag_meanings` (the names, blank
/// separated, a blank inside one written `_`).
fn enum_attributes(base: NcType, members: &[netcdf_reader::NcEnumMember]) -> [Attr; 2] {
    let mut raw = Vec::with_capacity(members.len() * base.size() as usize);
    for m in members {
        let v = m.value.as_i128().unwrap_or_default();
        let be = v.to_be_bytes();
        raw.extend_from_slice(&be[be.len() - base.size() as usize..]);
    }
    let meanings: Vec<String> = members
        .iter()
        .map(|m| m.name.split_whitespace().collect::<Vec<_>>().join("_"))
        .collect();
    let meanings = meanings.join(" ");
    [
        Attr {
            name: "flag_values".into(),
            nc_type: base,
            count: members.len() as u64,
            raw,
        },
        Attr {
            name: "flag_meanings".into(),
            nc_type: NcType::Char,
            count: meanings.len() as u64,
            raw: meanings.into_bytes(),
        },
    ]
}

/// Attributes as the classic model holds them: big-endian values.
fn attributes(attrs: &[netcdf_reader::NcAttribute], of: &str) -> Result<Vec<Attr>, ClassicError> {
    fn be<T: Copy, const N: usize>(xs: &[T], f: fn(T) -> [u8; N]) -> Vec<u8> {
        xs.iter().flat_map(|&x| f(x)).collect()
    }
    attrs
        .iter()
        .map(|a| {
            let (nc_type, count, raw) = match &a.value {
                NcAttrValue::Bytes(x) => (NcType::Byte, x.len(), be(x, i8::to_be_bytes)),
                NcAttrValue::Chars(s) => (NcType::Char, s.len(), s.as_bytes().to_vec()),
                NcAttrValue::Strings(x) if x.len() == 1 => (NcType::Char, x[0].len(), x[0].as_bytes().to_vec()),
                NcAttrValue::Shorts(x) => (NcType::Short, x.len(), be(x, i16::to_be_bytes)),
                NcAttrValue::Ints(x) => (NcType::Int, x.len(), be(x, i32::to_be_bytes)),
                NcAttrValue::Floats(x) => (NcType::Float, x.len(), be(x, f32::to_be_bytes)),
                NcAttrValue::Doubles(x) => (NcType::Double, x.len(), be(x, f64::to_be_bytes)),
                NcAttrValue::UBytes(x) => (NcType::UByte, x.len(), x.clone()),
                NcAttrValue::UShorts(x) => (NcType::UShort, x.len(), be(x, u16::to_be_bytes)),
                NcAttrValue::UInts(x) => (NcType::UInt, x.len(), be(x, u32::to_be_bytes)),
                NcAttrValue::Int64s(x) => (NcType::Int64, x.len(), be(x, i64::to_be_bytes)),
                NcAttrValue::UInt64s(x) => (NcType::UInt64, x.len(), be(x, u64::to_be_bytes)),
                NcAttrValue::Strings(x) => {
                    return Err(unsupported(format!(
                        "{of}: attribute {:?} of {} strings",
                        a.name,
                        x.len()
                    )));
                }
                NcAttrValue::UserDefined { dtype, .. } => {
                    return Err(unsupported(format!("{of}: attribute {:?} of type {dtype:?}", a.name)));
                }
            };
            Ok(Attr {
                name: a.name.clone(),
                nc_type,
                count: count as u64,
                raw,
            })
        })
        .collect()
}

impl Values for GroupValues {
    fn read(&self, c: &Classic, v: &Var, start: &[u64], count: &[u64]) -> Result<Vec<u8>, ClassicError> {
        let name = match self.path.is_empty() {
            true => v.name.clone(),
            false => format!("{}/{}", self.path, v.name),
        };
        let failed = |e: netcdf_reader::Error| read_failed(&name, e);
        let short = || corrupt(format!("variable {name:?}: short"));
        if v.form == Form::Strings {
            return strings(&self.file, &name, c, v, start, count);
        }
        if let Some(r) = v.compound() {
            // Records, read whole (at most MAX_READ_BYTES) in this
            // machine's order, each packed from the region.
            let raw = self.file.read_variable_native_bytes(&name).map_err(failed)?;
            let stored = region(&raw, r.stored as usize, &c.shape(v), start, count).ok_or_else(short)?;
            let mut out = Vec::with_capacity(stored.len() / r.stored.max(1) as usize * r.size() as usize);
            stored
                .chunks_exact(r.stored as usize)
                .for_each(|one| r.pack(one, &mut out));
            return Ok(out);
        }
        if v.nc_type == NcType::Char || is_enum(&self.file, &name) {
            // Text is an HDF5 string of one byte an element, an enum its
            // base type's values: read whole (at most MAX_READ_BYTES),
            // the region taken from it, big-endian.
            let raw = self.file.read_variable_native_bytes(&name).map_err(failed)?;
            let size = v.nc_type.size() as usize;
            let mut out = region(&raw, size, &c.shape(v), start, count).ok_or_else(short)?;
            if cfg!(target_endian = "little") {
                out.chunks_exact_mut(size).for_each(<[u8]>::reverse);
            }
            return Ok(out);
        }
        let selection = NcSliceInfo {
            selections: start
                .iter()
                .zip(count)
                .map(|(&s, &n)| NcSliceInfoElem::Slice {
                    start: s,
                    end: s + n,
                    step: 1,
                })
                .collect(),
        };
        macro_rules! read {
            ($t:ty) => {{
                let values = self
                    .file
                    .read_variable_slice::<$t>(&name, &selection)
                    .map_err(failed)?;
                values.iter().flat_map(|x| x.to_be_bytes()).collect()
            }};
        }
        Ok(match v.nc_type {
            NcType::Byte => read!(i8),
            NcType::Short => read!(i16),
            NcType::Int => read!(i32),
            NcType::Float => read!(f32),
            NcType::Double => read!(f64),
            NcType::UByte => read!(u8),
            NcType::UShort => read!(u16),
            NcType::UInt => read!(u32),
            NcType::Int64 => read!(i64),
            NcType::UInt64 => read!(u64),
            NcType::Char => unreachable!("read whole above"),
        })
    }
}

/// The most bytes a `string` variable's values may hold in all, counted
/// from the lengths its references give before one is read (many
/// references to one long string would otherwise multiply it).
pub const MAX_STRING_BYTES: u64 = MAX_READ_BYTES as u64;

/// The strings of the `string` variable `name` in the region `start ..
/// start + count`, as text lines ([`crate::zarr::text`]): read whole,
/// after the lengths of all of them are summed from their references
/// (each a 4-byte length and a heap id) and found within
/// [`MAX_STRING_BYTES`].
fn strings(
    file: &NcFile,
    name: &str,
    c: &Classic,
    v: &Var,
    start: &[u64],
    count: &[u64],
) -> Result<Vec<u8>, ClassicError> {
    let failed = |e: netcdf_reader::Error| read_failed(name, e);
    let refs = file.read_variable_raw_bytes(name).map_err(failed)?;
    let shape = c.shape(v);
    let elements: u64 = shape.iter().product();
    if refs.len() as u64 != elements.saturating_mul(16) {
        return Err(corrupt(format!(
            "variable {name:?}: {} bytes of string references for {elements} strings",
            refs.len()
        )));
    }
    let total: u64 = refs
        .chunks_exact(16)
        .map(|r| u64::from(u32::from_le_bytes([r[0], r[1], r[2], r[3]])))
        .sum();
    if total > MAX_STRING_BYTES {
        return Err(ClassicError::Unsupported(format!(
            "variable {name:?}: strings of {total} bytes in all (at most {MAX_STRING_BYTES})"
        )));
    }
    let all = file.read_variable_as_strings(name).map_err(failed)?;
    if all.len() as u64 != elements {
        return Err(corrupt(format!(
            "variable {name:?}: {} strings, not {elements}",
            all.len()
        )));
    }
    let mut out = Vec::new();
    let rank = shape.len();
    if rank == 0 {
        crate::zarr::text::push_line(&mut out, all[0].as_bytes());
        return Ok(out);
    }
    let mut at = vec![0u64; rank];
    if count.iter().product::<u64>() == 0 {
        return Ok(out);
    }
    loop {
        let mut offset = 0u64;
        for a in 0..rank {
            offset = offset * shape[a] + start[a] + at[a];
        }
        crate::zarr::text::push_line(&mut out, all[offset as usize].as_bytes());
        if !crate::odometer::next(&mut at, count) {
            return Ok(out);
        }
    }
}

/// Whether the variable `name` of `file` is of an enum type.
fn is_enum(file: &NcFile, name: &str) -> bool {
    file.variable(name)
        .is_ok_and(|v| matches!(v.dtype, netcdf_reader::NcType::Enum { .. }))
}

/// The region `start .. start + count` of the elements `raw` (`size`
/// bytes each) of an array of `shape`, row-major; `None` where `raw` is
/// short.
fn region(raw: &[u8], size: usize, shape: &[u64], start: &[u64], count: &[u64]) -> Option<Vec<u8>> {
    let total: u64 = count.iter().product();
    let mut out = Vec::with_capacity(usize::try_from(total).ok()?.checked_mul(size)?);
    if total == 0 {
        return Some(out);
    }
    let rank = shape.len();
    if rank == 0 {
        out.extend_from_slice(raw.get(..size)?);
        return Some(out);
    }
    let row = count[rank - 1] as usize * size;
    let mut at = vec![0u64; rank - 1];
    loop {
        let mut offset = 0u64;
        for a in 0..rank - 1 {
            offset = offset * shape[a] + start[a] + at[a];
        }
        let first = (offset * shape[rank - 1] + start[rank - 1]) as usize * size;
        out.extend_from_slice(raw.get(first..first + row)?);
        if !crate::odometer::next(&mut at, &count[..rank - 1]) {
            return Some(out);
        }
    }
}

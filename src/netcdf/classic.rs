//! netCDF classic files (CDF-1, CDF-2 and CDF-5) as their writer left them:
//! the header read into dimensions, attributes and variables, and any
//! region of a variable read back in the file's own (big-endian) order.
//!
//! The format is netCDF-C's "classic format specification" (the grammar of
//! `magic numrecs dim_list gatt_list var_list`): CDF-1 has 32-bit offsets,
//! CDF-2 64-bit offsets, and CDF-5 64-bit counts, sizes and offsets and the
//! unsigned and 64-bit integer types.
//!
//! Invariants: every count and length in the header is checked against the
//! bytes left in the file before anything is allocated for it, so a hostile
//! or truncated file is an error, never an allocation sized by its content;
//! every variable's data lies inside the file, or the file is refused.

use std::fs::File;
use std::io::{BufReader, Read};
use std::os::unix::fs::FileExt;

pub use super::vocabulary::NcType;

/// Why a file is not a netCDF classic file nzfs can take.
#[derive(Debug, thiserror::Error)]
pub enum ClassicError {
    /// Not `CDF\x01`, `CDF\x02` or `CDF\x05`: another format (HDF5, which
    /// is netCDF-4, or no netCDF at all).
    #[error("not a netCDF classic file (CDF-1, CDF-2 or CDF-5) nor netCDF-4 (HDF5): it starts with {0}")]
    NotClassic(String),
    /// A header (classic) or an object graph (netCDF-4) that breaks its
    /// format or points past the file.
    #[error("a corrupt netCDF file: {0}")]
    Corrupt(String),
    /// A type this conversion does not take.
    #[error("{0}")]
    Unsupported(String),
    /// Reading the file failed.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// Which of the three classic formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// CDF-1: 32-bit offsets.
    Classic,
    /// CDF-2: 64-bit offsets.
    Offset64,
    /// CDF-5: 64-bit data (counts, sizes, offsets) and the CDF-5 types.
    Data64,
    /// A netCDF-4 file read as its classic model ([`super::nc4`]): no
    /// header of this grammar, and no offsets.
    Netcdf4,
}

/// The type of `code` in a header of `format`.
fn nc_type(code: u32, format: Format) -> Result<NcType, ClassicError> {
    let t = NcType::of(code).ok_or_else(|| ClassicError::Corrupt(format!("unknown type code {code}")))?;
    if t.cdf5_only() && format != Format::Data64 {
        return Err(ClassicError::Corrupt(format!("type code {code} outside CDF-5")));
    }
    Ok(t)
}

/// A dimension: its name and length (the record dimension's is the file's
/// number of records).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dim {
    /// Its name.
    pub name: String,
    /// Its length.
    pub len: u64,
}

/// An attribute: its type and its values as the file holds them
/// (big-endian), `count` of them.
#[derive(Debug, Clone, PartialEq)]
pub struct Attr {
    /// Its name.
    pub name: String,
    /// Its type.
    pub nc_type: NcType,
    /// How many values.
    pub count: u64,
    /// The values' bytes, big-endian, unpadded.
    pub raw: Vec<u8>,
}

/// A variable.
#[derive(Debug, Clone, PartialEq)]
pub struct Var {
    /// Its name.
    pub name: String,
    /// Its dimensions, as indices into [`Classic::dims`].
    pub dims: Vec<usize>,
    /// Its attributes, in file order.
    pub attrs: Vec<Attr>,
    /// Its type.
    pub nc_type: NcType,
    /// Where its data starts (its first record's, for a record variable).
    pub begin: u64,
    /// Whether its first dimension is the record dimension.
    pub record: bool,
    /// The chunk shape the file stores it in (a netCDF-4 file's chunked
    /// variable; `None` for a classic file's, which are contiguous).
    pub chunks: Option<Vec<u64>>,
    /// What its values are beyond [`nc_type`](Var::nc_type): a netCDF-4
    /// compound's records or `string`s (`nc_type` is then `ubyte` and
    /// unused), or [`Form::Atomic`] for every other variable.
    pub form: Form,
}

/// What a variable's values are.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Form {
    /// Of its [`Var::nc_type`].
    #[default]
    Atomic,
    /// A netCDF-4 compound type's records, packed.
    Compound(super::record::Record),
    /// netCDF-4 `string`s, of any length each.
    Strings,
}

impl Var {
    /// The bytes of one of its values (a compound's packed record; a
    /// string's reference in the file, 16 bytes, for bounds).
    pub fn item_size(&self) -> u64 {
        match &self.form {
            Form::Atomic => self.nc_type.size(),
            Form::Compound(r) => r.size(),
            Form::Strings => 16,
        }
    }

    /// Its compound type, if it is of one.
    pub fn compound(&self) -> Option<&super::record::Record> {
        match &self.form {
            Form::Compound(r) => Some(r),
            _ => None,
        }
    }
}

/// A parsed netCDF classic file.
#[derive(Debug, Clone, PartialEq)]
pub struct Classic {
    /// Which classic format.
    pub format: Format,
    /// Its dimensions, the record dimension's length set to the number of
    /// records.
    pub dims: Vec<Dim>,
    /// Which dimension is the record dimension.
    pub unlimited: Option<usize>,
    /// The global attributes.
    pub attrs: Vec<Attr>,
    /// The variables, in file order.
    pub vars: Vec<Var>,
    /// Bytes from one record to the next.
    recsize: u64,
}

const NC_DIMENSION: u32 = 0x0A;
const NC_VARIABLE: u32 = 0x0B;
const NC_ATTRIBUTE: u32 = 0x0C;
const STREAMING: u32 = 0xFFFF_FFFF;
/// The most variables one file may hold: each becomes an array, a node
/// the commit holds until it lands (about 6 KiB each, measured) and the
/// mount serves after. netCDF-C's `NC_MAX_VARS`, 8192, is the bound its
/// classic format long had; past it a file's commit would hold what the
/// cache budget does not count.
pub const MAX_VARIABLES: u64 = 8192;

/// The header's reader: each count is checked against the bytes left.
struct Header<R> {
    input: R,
    format: Format,
    at: u64,
    len: u64,
}

impl<R: Read> Header<R> {
    fn bytes(&mut self, n: u64, what: &str) -> Result<Vec<u8>, ClassicError> {
        if n > self.len.saturating_sub(self.at) {
            return Err(ClassicError::Corrupt(format!(
                "{what} of {n} bytes at offset {} runs past the file's {} bytes",
                self.at, self.len
            )));
        }
        let mut buf = vec![0; n as usize];
        self.input.read_exact(&mut buf)?;
        self.at += n;
        Ok(buf)
    }

    fn u32(&mut self, what: &str) -> Result<u32, ClassicError> {
        let b = self.bytes(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self, what: &str) -> Result<u64, ClassicError> {
        let b = self.bytes(8, what)?;
        Ok(u64::from_be_bytes(b.try_into().expect("8 bytes")))
    }

    /// A count: 32 bits, or 64 in CDF-5.
    fn count(&mut self, what: &str) -> Result<u64, ClassicError> {
        match self.format {
            Format::Data64 => self.u64(what),
            _ => Ok(u64::from(self.u32(what)?)),
        }
    }

    /// `n` bytes and the padding to a multiple of 4.
    fn padded(&mut self, n: u64, what: &str) -> Result<Vec<u8>, ClassicError> {
        let b = self.bytes(n, what)?;
        self.bytes((4 - n % 4) % 4, what)?;
        Ok(b)
    }

    fn name(&mut self) -> Result<String, ClassicError> {
        let n = self.count("a name's length")?;
        let b = self.padded(n, "a name")?;
        String::from_utf8(b).map_err(|_| ClassicError::Corrupt("a name that is not UTF-8".into()))
    }

    /// A list's tag and length; `None` for an absent list.
    fn list(&mut self, tag: u32, what: &str) -> Result<u64, ClassicError> {
        let t = self.u32(what)?;
        let n = self.count(what)?;
        if t == 0 && n == 0 {
            return Ok(0);
        }
        if t != tag {
            return Err(ClassicError::Corrupt(format!("{what}: tag {t:#x}, not {tag:#x}")));
        }
        // Each entry takes at least 8 bytes.
        if n > self.len.saturating_sub(self.at) / 8 {
            return Err(ClassicError::Corrupt(format!(
                "{what} of {n} entries in a file of {} bytes",
                self.len
            )));
        }
        Ok(n)
    }

    fn attrs(&mut self, what: &str) -> Result<Vec<Attr>, ClassicError> {
        let n = self.list(NC_ATTRIBUTE, what)?;
        let mut attrs = Vec::new();
        for _ in 0..n {
            let name = self.name()?;
            let nc_type = nc_type(self.u32("an attribute's type")?, self.format)?;
            let count = self.count("an attribute's length")?;
            let bytes = count
                .checked_mul(nc_type.size())
                .ok_or_else(|| ClassicError::Corrupt(format!("attribute {name}: {count} values")))?;
            let raw = self.padded(bytes, "an attribute's values")?;
            attrs.push(Attr {
                name,
                nc_type,
                count,
                raw,
            });
        }
        Ok(attrs)
    }
}

impl Classic {
    /// Read the header of `file`.
    pub fn parse(file: &File) -> Result<Classic, ClassicError> {
        let len = file.metadata()?.len();
        // From the start, wherever an earlier read of the handle left it.
        std::io::Seek::seek(&mut &*file, std::io::SeekFrom::Start(0))?;
        let mut h = Header {
            input: BufReader::with_capacity(64 * 1024, file),
            format: Format::Classic,
            at: 0,
            len,
        };
        let magic = h.bytes(4.min(len), "the magic number")?;
        h.format = match magic.as_slice() {
            b"CDF\x01" => Format::Classic,
            b"CDF\x02" => Format::Offset64,
            b"CDF\x05" => Format::Data64,
            other => {
                let shown = if other.starts_with(b"\x89HDF") {
                    "HDF5's signature (a netCDF-4 file, which netcdf::nc4 reads)".to_string()
                } else {
                    format!("{other:02x?}")
                };
                return Err(ClassicError::NotClassic(shown));
            }
        };
        let numrecs = match h.format {
            Format::Data64 => h.u64("the number of records")?,
            _ => u64::from(h.u32("the number of records")?),
        };
        let streaming = numrecs == u64::from(STREAMING) && h.format != Format::Data64;
        let ndims = h.list(NC_DIMENSION, "the dimensions")?;
        let mut dims = Vec::new();
        let mut unlimited = None;
        for i in 0..ndims as usize {
            let name = h.name()?;
            let len = h.count("a dimension's length")?;
            if len == 0 {
                if unlimited.is_some() {
                    return Err(ClassicError::Corrupt("two record dimensions".into()));
                }
                unlimited = Some(i);
            }
            dims.push(Dim { name, len });
        }
        let attrs = h.attrs("the global attributes")?;
        let nvars = h.list(NC_VARIABLE, "the variables")?;
        // Each becomes a node, held by the commit and served by the mount:
        // bounded before one is read.
        if nvars > MAX_VARIABLES {
            return Err(ClassicError::Unsupported(format!(
                "{nvars} variables; a file becomes at most {MAX_VARIABLES} arrays (split it into several files)"
            )));
        }
        let mut vars = Vec::new();
        for _ in 0..nvars {
            let name = h.name()?;
            let ndims = h.count("a variable's rank")?;
            if ndims > 1024 {
                return Err(ClassicError::Corrupt(format!("variable {name} of rank {ndims}")));
            }
            let mut ids = Vec::new();
            for _ in 0..ndims {
                let id = h.count("a dimension id")?;
                match usize::try_from(id).ok().filter(|&i| i < dims.len()) {
                    Some(i) => ids.push(i),
                    None => return Err(ClassicError::Corrupt(format!("variable {name}: dimension id {id}"))),
                }
            }
            let vattrs = h.attrs("a variable's attributes")?;
            let nc_type = nc_type(h.u32("a variable's type")?, h.format)?;
            let _vsize = h.count("a variable's size")?;
            let begin = match h.format {
                Format::Classic => u64::from(h.u32("a variable's offset")?),
                _ => h.u64("a variable's offset")?,
            };
            let record = ids.first().is_some_and(|&d| Some(d) == unlimited);
            if ids.iter().skip(1).any(|&d| Some(d) == unlimited) {
                return Err(ClassicError::Corrupt(format!(
                    "variable {name}: the record dimension is not its first"
                )));
            }
            vars.push(Var {
                name,
                dims: ids,
                attrs: vattrs,
                nc_type,
                begin,
                record,
                chunks: None,
                form: Form::Atomic,
            });
        }
        let mut c = Classic {
            format: h.format,
            dims,
            unlimited,
            attrs,
            vars,
            recsize: 0,
        };
        let slabs: Vec<u64> = c
            .vars
            .iter()
            .filter(|v| v.record)
            .map(|v| c.slab(v))
            .collect::<Result<_, _>>()?;
        c.recsize = match slabs.as_slice() {
            [one] => *one,
            many => many
                .iter()
                .try_fold(0u64, |sum, s| sum.checked_add(s.div_ceil(4) * 4))
                .ok_or_else(|| ClassicError::Corrupt("records larger than 2^64 bytes".into()))?,
        };
        // The record count: as written, or (a file still being streamed)
        // as many whole records as the file holds.
        let first = c.vars.iter().filter(|v| v.record).map(|v| v.begin).min();
        let records = match (streaming, first) {
            (true, Some(first)) if c.recsize > 0 => len.saturating_sub(first) / c.recsize,
            (true, _) => 0,
            (false, _) => numrecs,
        };
        if let Some(u) = c.unlimited {
            c.dims[u].len = records;
        }
        for v in &c.vars {
            c.check_inside(v, len)?;
        }
        c.check_disjoint()?;
        Ok(c)
    }

    /// Refuse variables that share bytes, as netCDF-C does: the fixed
    /// variables are disjoint and lie before the records, and each record
    /// variable's slab lies within one record's layout, apart from the
    /// others'. (Shared bytes would make a small file many times its size
    /// in chunks.)
    fn check_disjoint(&self) -> Result<(), ClassicError> {
        let spans = |record: bool| -> Result<Vec<(u64, u64, &str)>, ClassicError> {
            let mut spans = Vec::new();
            for v in self.vars.iter().filter(|v| v.record == record) {
                let slab = self.slab(v)?;
                if slab > 0 {
                    let end = v.begin.checked_add(slab).ok_or_else(|| {
                        ClassicError::Corrupt(format!("variable {}: its data runs past 2^64 bytes", v.name))
                    })?;
                    spans.push((v.begin, end, v.name.as_str()));
                }
            }
            spans.sort();
            Ok(spans)
        };
        let overlap = |a: &str, b: &str| {
            ClassicError::Corrupt(format!(
                "variables {a} and {b} share bytes of the file (netCDF-C refuses such a file too)"
            ))
        };
        let fixed = spans(false)?;
        for w in fixed.windows(2) {
            if w[1].0 < w[0].1 {
                return Err(overlap(w[0].2, w[1].2));
            }
        }
        let records = spans(true)?;
        if let (Some(last), Some(first)) = (fixed.last(), records.first())
            && last.1 > first.0
        {
            return Err(overlap(last.2, first.2));
        }
        for w in records.windows(2) {
            if w[1].0 < w[0].1 {
                return Err(overlap(w[0].2, w[1].2));
            }
        }
        if let (Some(first), Some(last)) = (records.first(), records.last())
            && last.1 - first.0 > self.recsize
        {
            return Err(ClassicError::Corrupt(format!(
                "record variable {} lies past one record's {} bytes (netCDF-C refuses such a file too)",
                last.2, self.recsize
            )));
        }
        Ok(())
    }

    /// Bytes of one record of `v` (of all of `v` when it has no record
    /// dimension), unpadded.
    fn slab(&self, v: &Var) -> Result<u64, ClassicError> {
        let skip = usize::from(v.record);
        v.dims[skip..]
            .iter()
            .try_fold(v.nc_type.size(), |n, &d| n.checked_mul(self.dims[d].len))
            .ok_or_else(|| ClassicError::Corrupt(format!("variable {} past 2^64 bytes", v.name)))
    }

    /// Refuse a variable whose data would run past the file.
    fn check_inside(&self, v: &Var, len: u64) -> Result<(), ClassicError> {
        let slab = self.slab(v)?;
        let end = if v.record {
            let records = self.dims[v.dims[0]].len;
            if records == 0 || slab == 0 {
                return Ok(());
            }
            (records - 1)
                .checked_mul(self.recsize)
                .and_then(|o| o.checked_add(v.begin))
                .and_then(|o| o.checked_add(slab))
        } else {
            v.begin.checked_add(slab)
        };
        match end {
            Some(end) if end <= len || slab == 0 => Ok(()),
            _ => Err(ClassicError::Corrupt(format!(
                "variable {}: its data runs past the file's {len} bytes",
                v.name
            ))),
        }
    }

    /// The shape of `v`.
    pub fn shape(&self, v: &Var) -> Vec<u64> {
        v.dims.iter().map(|&d| self.dims[d].len).collect()
    }

    /// A model of a file read otherwise (netCDF-4): no record dimension.
    pub fn model(format: Format, dims: Vec<Dim>, attrs: Vec<Attr>, vars: Vec<Var>) -> Classic {
        Classic {
            format,
            dims,
            unlimited: None,
            attrs,
            vars,
            recsize: 0,
        }
    }

    /// The values of `v` in the region `start .. start + count` (inside its
    /// shape), row-major, big-endian as the file holds them.
    pub fn read(&self, file: &File, v: &Var, start: &[u64], count: &[u64]) -> Result<Vec<u8>, ClassicError> {
        let shape = self.shape(v);
        let size = v.nc_type.size();
        let total = count.iter().product::<u64>() * size;
        let mut out = vec![0u8; total as usize];
        if total == 0 {
            return Ok(out);
        }
        let rank = shape.len();
        // One read covers the axes from `run_axis` on: the axes after it are
        // whole in the region. A record variable's records are apart, so
        // its first axis is never in a run (nor is any, for a variable
        // that is records of one value: `run_axis == rank`).
        // Records lie one after the other when this variable is all a
        // record holds (the only record variable): then the record axis
        // joins a run like any other, and one-byte records are read in
        // whole runs rather than a value per read.
        let contiguous = v.record && self.slab(v)? == self.recsize;
        let lo = usize::from(v.record && !contiguous);
        let mut run_axis = rank;
        if rank > lo {
            run_axis = rank - 1;
            while run_axis > lo && start[run_axis] == 0 && count[run_axis] == shape[run_axis] {
                run_axis -= 1;
            }
        }
        let run: u64 = count[run_axis.min(rank)..].iter().product::<u64>() * size;
        // Strides in elements within one record (or the whole variable).
        let first = usize::from(v.record);
        let mut strides = vec![0u64; rank];
        let mut s = 1u64;
        for a in (first..rank).rev() {
            strides[a] = s;
            s *= shape[a];
        }
        let mut index: Vec<u64> = start.to_vec();
        let end: Vec<u64> = start.iter().zip(count).map(|(s, n)| s + n).collect();
        let mut written = 0usize;
        loop {
            let mut offset = v.begin;
            for a in first..rank {
                offset += index[a] * strides[a] * size;
            }
            if v.record {
                offset += index[0] * self.recsize;
            }
            file.read_exact_at(&mut out[written..written + run as usize], offset)?;
            written += run as usize;
            // The next outer index, over the axes before the run.
            if !crate::odometer::next_from(&mut index[..run_axis], &start[..run_axis], &end[..run_axis]) {
                return Ok(out);
            }
        }
    }
}

#[cfg(test)]
mod tests;

//! netCDF classic both ways: a virtual classic file per group,
//! synthesized on the fly (here), and a classic file read back
//! ([`classic`]), through one vocabulary of types and attributes
//! ([`vocabulary`]); a netCDF-4 file is read back as the classic model
//! of each of its groups ([`nc4`]).
//!
//! Format: netCDF-C's "file format specifications" (CDF-1/2), and CDF-5
//! (64-bit data) as PnetCDF defines it. The header is computed from the
//! metadata alone, so `stat` knows the size; each variable's data is one
//! contiguous region at `begin`, aligned to 4 KiB (the first at 1 MiB,
//! [`HEADER_SPAN`]), in big-endian C order;
//! nothing is ever written to disk.
//!
//! Format choice: CDF-2 (64-bit offset; read by every netCDF reader,
//! GDAL, netCDF-Java and scipy included) when every variable maps to a
//! classic type, unsigned types becoming their signed twin with
//! `_Unsigned = "true"`, no variable reaches 4 GiB, and no attribute is a
//! JSON integer (NZ makes those int64, which CDF-2 lacks); otherwise CDF-5, which netCDF-C >= 4.4, NCO, CDO and xarray read and
//! which has int64/uint64 and the unsigned types natively. (A CDF-2
//! rendering with int64 widened to double is not offered: it would change
//! values silently above 2^53.)
//!
//! Type mapping (also in docs/formats.md): bool -> ubyte (CDF-5) / byte 0-1;
//! float16 -> float (exact); complex64/128 -> float/double with a trailing
//! dimension `_nz_complex` of length 2 (real, imaginary); r* arrays, arrays
//! with a zero-length dimension (the classic format would read length 0 as
//! the record dimension) and unreadable arrays are left out and named in the
//! global attribute `_nz_omitted`.
//!
//! Attributes follow NZ's default mapping: JSON integer -> int64 (int if the
//! format is CDF-2, which is chosen only when they fit), float -> double,
//! string -> char, homogeneous number arrays -> lists; anything else
//! (booleans, objects, nulls, string lists, mixed lists) is written as its
//! JSON text in a char attribute. `_FillValue`, `missing_value`,
//! `valid_min`, `valid_max`, `valid_range`, `flag_values` and `flag_masks`
//! take the variable's type where they are integers that fit it (the NUG
//! and CF rule: a packed variable's are packed values, a flag variable's
//! flags of its type), so that they never make a file CDF-5
//! ([`crate::zarr::metadata::TYPED_BY_VARIABLE`]).

pub mod classic;
pub mod nc4;
mod order;
pub mod record;
pub mod vocabulary;

pub use order::{copy_in_file_order, to_file_order};
pub use vocabulary::{AttrValue, NcType};

use crate::json::Value;
use crate::naming;
use crate::zarr::data_type::DataType;
use crate::zarr::dimensions::GroupDimensions;
use crate::zarr::hierarchy::{Hierarchy, NodeKind};
use crate::zarr::metadata::TYPED_BY_VARIABLE;

/// Where each variable's data starts is aligned to this.
pub const ALIGN: u64 = 4096;
/// The first variable starts at a multiple of this (1 MiB, the `.nc`'s
/// `st_blksize`): netCDF-C reads a whole `st_blksize` at open, and with no
/// data in it, `ncdump -h` decodes no chunk.
pub const HEADER_SPAN: u64 = 1 << 20;

/// One variable of the file: which array, how its elements are stored.
#[derive(Debug, Clone, PartialEq)]
pub struct Variable {
    /// The array's node.
    pub node: usize,
    /// Where its data starts in the file (its `begin` in the header).
    pub begin: u64,
    /// Bytes of data (unpadded).
    pub len: u64,
    /// Bytes per element in `data.bin` and in the file.
    pub item_in: usize,
    /// Bytes per element in the file.
    pub item_out: usize,
    /// The unit byte order applies to (a complex component, or the element).
    pub swap_unit: usize,
    /// Half floats are written as floats (netCDF has no half).
    pub widen_f16: bool,
    /// `U n` elements (UTF-32, host order) written as UTF-8, NUL-padded
    /// to `item_out` bytes.
    pub utf32_to_utf8: bool,
}

/// A synthesized file: its header bytes and where the data lies.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    /// The header's bytes.
    pub header: Vec<u8>,
    /// The variables, in file order.
    pub variables: Vec<Variable>,
    /// The file's size.
    pub size: u64,
    /// Whether the file is CDF-5 (64-bit data types and sizes), else CDF-2.
    pub cdf5: bool,
}

struct Writer {
    out: Vec<u8>,
    cdf5: bool,
}

impl Writer {
    fn u32(&mut self, v: u32) {
        self.out.extend(v.to_be_bytes());
    }
    fn nc_type(&mut self, t: NcType) {
        self.u32(t.code());
    }
    fn u64(&mut self, v: u64) {
        self.out.extend(v.to_be_bytes());
    }
    /// NON_NEG: 4 bytes, or 8 in CDF-5.
    fn count(&mut self, v: u64) {
        if self.cdf5 { self.u64(v) } else { self.u32(v as u32) }
    }
    fn pad(&mut self) {
        while !self.out.len().is_multiple_of(4) {
            self.out.push(0);
        }
    }
    fn name(&mut self, s: &str) {
        self.count(s.len() as u64);
        self.out.extend(s.as_bytes());
        self.pad();
    }
    fn absent(&mut self) {
        self.u32(0);
        self.count(0);
    }
}

/// The netCDF name of a Zarr name: NUL and `/` are replaced by `_`; an
/// empty name becomes `_`.
pub fn nc_name(s: &str) -> String {
    let clean: String = s
        .chars()
        .map(|c| if c == '/' || c.is_control() { '_' } else { c })
        .collect();
    if clean.is_empty() { "_".into() } else { clean }
}

/// The length of the trailing character dimension of a fixed-length string
/// variable (`S n`: n bytes; `U n`: up to 4 UTF-8 bytes per character).
fn strlen(dt: &DataType) -> Option<u64> {
    match dt {
        DataType::FixedBytes(n) => Some(*n as u64),
        DataType::FixedUtf32(n) => Some(4 * *n as u64),
        _ => None,
    }
}

fn needs_cdf5_type(dt: &DataType) -> bool {
    matches!(
        dt,
        DataType::Int64 | DataType::UInt64 | DataType::DateTime64 { .. } | DataType::TimeDelta64 { .. }
    )
}

fn write_attrs(w: &mut Writer, attrs: &[(String, AttrValue)]) {
    if attrs.is_empty() {
        return w.absent();
    }
    w.u32(0x0C);
    w.count(attrs.len() as u64);
    for (name, v) in attrs {
        w.name(name);
        match v {
            AttrValue::Text(s) => {
                w.nc_type(NcType::Char);
                w.count(s.len() as u64);
                w.out.extend(s.as_bytes());
            }
            AttrValue::Ints(items) if w.cdf5 => {
                w.nc_type(NcType::Int64);
                w.count(items.len() as u64);
                items.iter().for_each(|i| w.out.extend(i.to_be_bytes()));
            }
            AttrValue::Ints(items) if items.iter().all(|&i| i32::try_from(i).is_ok()) => {
                w.nc_type(NcType::Int);
                w.count(items.len() as u64);
                items.iter().for_each(|&i| w.out.extend((i as i32).to_be_bytes()));
            }
            // CDF-2 has no 64-bit integers: such a list becomes doubles.
            AttrValue::Ints(items) => {
                w.nc_type(NcType::Double);
                w.count(items.len() as u64);
                items.iter().for_each(|&i| w.out.extend((i as f64).to_be_bytes()));
            }
            AttrValue::Doubles(items) => {
                w.nc_type(NcType::Double);
                w.count(items.len() as u64);
                items.iter().for_each(|d| w.out.extend(d.to_be_bytes()));
            }
            AttrValue::Typed(t, bytes) => {
                w.nc_type(*t);
                w.count(bytes.len() as u64 / t.size());
                w.out.extend(bytes);
            }
        }
        w.pad();
    }
}

/// An attribute in the netCDF type the store recorded for it (NCZarr's
/// `_NCZARR_ATTR.types`), if that type is classic and every value fits.
fn typed_attr(v: &Value, dt: &DataType, cdf5: bool) -> Option<AttrValue> {
    if !cdf5 && needs_cdf5_type(dt) {
        return None;
    }
    let (t, _) = NcType::of_zarr(dt, cdf5)?;
    Some(AttrValue::Typed(t, t.encode_all(v)?))
}

/// Attributes under NZ's default mapping, or in their recorded types, with
/// their netCDF names ([`crate::naming::attribute_names`]; `_nz_renamed_attributes`
/// says which changed). `var` is a variable's netCDF type, which its
/// `_FillValue` takes, and the other attributes tied to it where they fit.
fn attrs_of(
    attrs: &[(String, Value)],
    types: &[(String, DataType)],
    cdf5: bool,
    var: Option<NcType>,
    group: bool,
) -> Vec<(String, AttrValue)> {
    // Keywords keep their own spelling in the file (naming::in_file).
    let keys: Vec<String> = naming::attribute_names(attrs.iter().map(|(k, _)| k.as_str()), group)
        .into_iter()
        .zip(attrs)
        .map(|(shown, (k, _))| naming::in_file(k, &shown, true))
        .collect();
    let mut out: Vec<(String, AttrValue)> = attrs
        .iter()
        .zip(&keys)
        .map(|((k, v), shown)| {
            let tied = var.filter(|_| TYPED_BY_VARIABLE.contains(&k.as_str()));
            if let Some(t) = tied.filter(|_| k == "_FillValue") {
                return match t.encode(v) {
                    Some(bytes) => ("_FillValue".into(), AttrValue::Typed(t, bytes)),
                    None => ("_nz_FillValue".into(), AttrValue::Text(v.to_string())),
                };
            }
            // The others tied to the variable's type: integers that fit it.
            let in_var_type = tied
                .filter(|_| crate::zarr::metadata::integers(v))
                .and_then(|t| Some(AttrValue::Typed(t, t.encode_all(v)?)));
            let typed = in_var_type.or_else(|| {
                types
                    .iter()
                    .find(|(n, _)| n == k)
                    .and_then(|(_, t)| typed_attr(v, t, cdf5))
            });
            (shown.clone(), typed.unwrap_or_else(|| AttrValue::of_json(v)))
        })
        .collect();
    let pairs = attrs
        .iter()
        .map(|(k, _)| k.as_str())
        .zip(keys.iter().map(String::as_str));
    if let Some(text) = naming::renamed_lines(pairs) {
        out.push(("_nz_renamed_attributes".into(), AttrValue::Text(text)));
    }
    out
}

/// Whether variable `m` takes 4 GiB or more, which only CDF-5 describes.
fn over_4_gib(m: &crate::zarr::metadata::ArrayMetadata) -> bool {
    m.flat_bytes() > u128::from(u32::MAX) - 4
}

/// The largest `.nc` nzfs lays out: every size and offset below it is
/// computed without overflow (a `[2^62]` float64 wrapped to 0).
const MAX_FILE: u64 = 1 << 60;

/// An upper bound of the bytes variable `m` takes in a `.nc` (every
/// element at most twice its Zarr size, plus alignment), `None` when that
/// overflows.
fn var_bound(m: &crate::zarr::metadata::ArrayMetadata) -> Option<u64> {
    let elements = m.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d))?;
    elements
        .checked_mul(2 * m.data_type.size().max(8) as u64)?
        .checked_add(2 * ALIGN)
}

/// Which classic format a `.nc` may take.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum NcFormat {
    /// CDF-2, or CDF-5 when a variable or attribute needs 64-bit integers
    /// (or a variable 4 GiB).
    #[default]
    Auto,
    /// CDF-2 always (GDAL 3.6 and other readers without CDF-5): variables
    /// of 64-bit integers (and times) or of 4 GiB are left out, saying
    /// why, and integer attributes past 32 bits become doubles.
    Cdf2,
}

/// Lay out the file of group `id` (its own arrays, not subgroups'), or of
/// the root array `id` alone (its variable named `title`). Arrays
/// `undecodable` names (no decoder: an unknown codec) are left out with
/// its reason.
pub fn layout(
    h: &Hierarchy,
    id: usize,
    title: &str,
    undecodable: &dyn Fn(usize) -> Option<String>,
    format: NcFormat,
) -> Layout {
    let node = &h.nodes[id];
    // A group's file holds its arrays; a store whose root is one array has
    // a file of that array alone, named (as in header.cdl) by `title`.
    let root_array = matches!(node.kind, NodeKind::Array(_));
    let members: &[usize] = if root_array {
        std::slice::from_ref(&id)
    } else {
        &node.children
    };
    let mut arrays = Vec::new();
    let mut omitted = Vec::new();
    let mut reasons = Vec::new();
    // The file's size so far, bounded so that no offset can overflow.
    let mut total = 0u64;
    for &c in members {
        let name = &h.nodes[c].name;
        let reason = match &h.nodes[c].kind {
            NodeKind::Array(a) if matches!(a.metadata.data_type, DataType::Struct(_)) => {
                "records (a compound type), which classic netCDF cannot hold: read data.bin, described by header.cdl"
            }
            NodeKind::Array(a) if NcType::of_zarr(&a.metadata.data_type, true).is_none() => {
                "a type classic netCDF cannot hold"
            }
            NodeKind::Array(a) if format == NcFormat::Cdf2 && needs_cdf5_type(&a.metadata.data_type) => {
                "64-bit integers (int64, uint64 or times), which CDF-2 cannot hold (--nc-format cdf2)"
            }
            NodeKind::Array(a) if format == NcFormat::Cdf2 && over_4_gib(&a.metadata) => {
                "4 GiB or more, which CDF-2 cannot describe (--nc-format cdf2)"
            }
            // A zero-length dimension can only be the record dimension in
            // the classic format; such arrays are left out (and named).
            NodeKind::Array(a) if a.metadata.shape.contains(&0) => "a zero-length dimension",
            NodeKind::Array(_) if undecodable(c).is_some() => {
                omitted.push(name.clone());
                reasons.push(format!("{name}: {}", undecodable(c).unwrap_or_default()));
                continue;
            }
            NodeKind::Array(a) => match var_bound(&a.metadata).and_then(|n| total.checked_add(n)) {
                Some(t) if t <= MAX_FILE => {
                    total = t;
                    arrays.push((c, a.clone()));
                    continue;
                }
                _ => "larger than a netCDF file nzfs serves (2^60 bytes)",
            },
            NodeKind::Broken { .. } => "unreadable",
            NodeKind::Group { .. } => continue,
        };
        omitted.push(name.clone());
        reasons.push(format!("{name}: {reason}"));
    }
    // NZ maps JSON integers to int64, which only CDF-5 holds (unless the
    // store records a classic type for the attribute, or the attribute
    // takes its variable's type, `var`, and fits it in CDF-2).
    let ints_fit = |attrs: &[(String, Value)], types: &[(String, DataType)], var: Option<&DataType>| {
        attrs.iter().all(|(k, v)| {
            types.iter().any(|(n, t)| n == k && !needs_cdf5_type(t))
                || var
                    .filter(|_| TYPED_BY_VARIABLE.contains(&k.as_str()) && crate::zarr::metadata::integers(v))
                    .and_then(|dt| NcType::of_zarr(dt, false))
                    .is_some_and(|(t, _)| t.encode_all(v).is_some())
                || match v {
                    Value::Int(_) => false,
                    Value::Array(items) => !items.iter().all(|i| matches!(i, Value::Int(_))) || items.is_empty(),
                    _ => true,
                }
        })
    };
    let (group_attributes, group_types) = match &node.kind {
        NodeKind::Group { metadata: Some(g) } => (g.attributes.clone(), g.attribute_types.clone()),
        _ => (Vec::new(), Vec::new()),
    };
    let cdf5 = format == NcFormat::Auto
        && (arrays.iter().any(|(_, a)| needs_cdf5_type(&a.metadata.data_type))
            || !ints_fit(&group_attributes, &group_types, None)
            || arrays.iter().any(|(_, a)| {
                let m = &a.metadata;
                !ints_fit(&m.attributes, &m.attribute_types, Some(&m.data_type))
            })
            || arrays.iter().any(|(_, a)| over_4_gib(&a.metadata)));

    // The group's dimensions (the same names as in header.cdl), plus the
    // trailing real/imaginary dimension of complex variables.
    let mut group_dims = GroupDimensions::of(arrays.iter().map(|(_, a)| &a.metadata));
    // Variables share a namespace with the group's subgroups (as in the CDL).
    let dim_names: Vec<&str> = group_dims.0.iter().map(|d| d.name.as_str()).collect();
    let shown = match root_array {
        true => vec![naming::netcdf(title)],
        false => h.shown_children(id, &dim_names),
    };
    // In the file, names keep what netCDF-C accepts (naming::in_file).
    for d in &mut group_dims.0 {
        if let Some(label) = &d.label {
            d.name = naming::in_file(label, &d.name, false);
        }
    }
    let mut dims: Vec<(String, u64)> = group_dims.0.iter().map(|d| (d.name.clone(), d.len)).collect();
    // By node id (a search per member made a group of 100,000 arrays take
    // seconds to lay out).
    let at: std::collections::HashMap<usize, usize> = members.iter().enumerate().map(|(k, &c)| (c, k)).collect();
    let shown_of = |c: usize| {
        let original = if root_array { title } else { h.nodes[c].name.as_str() };
        naming::in_file(original, &shown[at[&c]], false)
    };
    let mut var_dims: Vec<Vec<usize>> = Vec::new();
    for (c, a) in &arrays {
        let mut ids = group_dims.of_array(&a.metadata);
        if matches!(a.metadata.data_type, DataType::Complex64 | DataType::Complex128) {
            let idx = dims.iter().position(|(n, _)| n == "_nz_complex").unwrap_or_else(|| {
                dims.push(("_nz_complex".into(), 2));
                dims.len() - 1
            });
            ids.push(idx);
        }
        if let Some(len) = strlen(&a.metadata.data_type) {
            // CF character arrays: a trailing `<name>_strlen` dimension.
            let name = naming::with_suffix(&shown_of(*c), "_strlen");
            let idx = dims
                .iter()
                .position(|(n, l)| *n == name && *l == len)
                .unwrap_or_else(|| {
                    dims.push((name, len));
                    dims.len() - 1
                });
            ids.push(idx);
        }
        var_dims.push(ids);
    }

    let mut header_attrs = attrs_of(&group_attributes, &group_types, cdf5, None, true);
    if let Some(text) = naming::renamed_lines(group_dims.renamed()) {
        header_attrs.push(("_nz_renamed_dimensions".into(), AttrValue::Text(text)));
    }
    if !omitted.is_empty() {
        header_attrs.push(("_nz_omitted".into(), AttrValue::Text(omitted.join(" "))));
        header_attrs.push(("_nz_omitted_reasons".into(), AttrValue::Text(reasons.join("; "))));
    }

    // The header does not depend on `begin` values' magnitudes (fixed-width
    // fields), so write it once with zeros to learn its size, then again.
    let render = |begins: &[u64]| -> Vec<u8> {
        let mut w = Writer {
            out: b"CDF".to_vec(),
            cdf5,
        };
        w.out.push(if cdf5 { 5 } else { 2 });
        w.count(0); // numrecs
        if dims.is_empty() {
            w.absent();
        } else {
            w.u32(0x0A);
            w.count(dims.len() as u64);
            for (name, len) in &dims {
                w.name(name);
                w.count(*len);
            }
        }
        write_attrs(&mut w, &header_attrs);
        if arrays.is_empty() {
            w.absent();
        } else {
            w.u32(0x0B);
            w.count(arrays.len() as u64);
            for (k, (c, a)) in arrays.iter().enumerate() {
                let m = &a.metadata;
                let (t, unsigned) = NcType::of_zarr(&m.data_type, cdf5).expect("filtered");
                let var = shown_of(*c);
                w.name(&var);
                w.count(var_dims[k].len() as u64);
                for &d in &var_dims[k] {
                    w.count(d as u64);
                }
                let mut attrs = attrs_of(&m.attributes, &m.attribute_types, cdf5, Some(t), false);
                // A root array has no name of its own: its title stands in.
                if !root_array && var != h.nodes[*c].name {
                    attrs.push(("_nz_name".into(), AttrValue::Text(h.nodes[*c].name.clone())));
                }
                if unsigned {
                    attrs.push(("_Unsigned".into(), AttrValue::Text("true".into())));
                }
                if strlen(&m.data_type).is_some() {
                    attrs.push(("_Encoding".into(), AttrValue::Text("utf-8".into())));
                }
                write_attrs(&mut w, &attrs);
                w.nc_type(t);
                let n: u64 = m.shape.iter().product::<u64>()
                    * if matches!(m.data_type, DataType::Complex64 | DataType::Complex128) {
                        2
                    } else {
                        strlen(&m.data_type).unwrap_or(1)
                    };
                let vsize = (n * t.size() as usize as u64).next_multiple_of(4);
                w.count(if cdf5 { vsize } else { vsize.min(u64::from(u32::MAX)) });
                w.u64(begins.get(k).copied().unwrap_or(0));
            }
        }
        w.out
    };
    let header_len = render(&[]).len() as u64;
    let mut begins = Vec::new();
    let mut variables = Vec::new();
    let mut at = header_len.next_multiple_of(HEADER_SPAN);
    for (c, a) in &arrays {
        let m = &a.metadata;
        let (t, _) = NcType::of_zarr(&m.data_type, cdf5).expect("filtered");
        let elems: u64 = m.shape.iter().product();
        let (item_in, item_out, swap_unit) = match &m.data_type {
            DataType::Complex64 | DataType::Complex128 => (m.data_type.size(), m.data_type.size(), t.size() as usize),
            DataType::Float16 => (2, 4, 4),
            dt @ (DataType::FixedBytes(_) | DataType::FixedUtf32(_)) => {
                (dt.size(), strlen(dt).unwrap_or(1) as usize, 1)
            }
            dt => (dt.size(), t.size() as usize, t.size() as usize),
        };
        let len = elems * item_out as u64;
        begins.push(at);
        variables.push(Variable {
            node: *c,
            begin: at,
            len,
            item_in,
            item_out,
            swap_unit,
            widen_f16: m.data_type == DataType::Float16,
            utf32_to_utf8: matches!(m.data_type, DataType::FixedUtf32(_)),
        });
        at = (at + len.next_multiple_of(4)).next_multiple_of(ALIGN);
    }
    let header = render(&begins);
    debug_assert_eq!(header.len() as u64, header_len);
    let size = variables
        .last()
        .map_or(header.len() as u64, |v| v.begin + v.len.next_multiple_of(4));
    Layout {
        header,
        variables,
        size,
        cdf5,
    }
}

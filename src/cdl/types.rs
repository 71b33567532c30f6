//! CDL type names and the `types:` section: the user-defined netCDF-4 types
//! a header declares for Zarr types netCDF has no atomic type for.
//!
//! - `bool` -> `ubyte enum nz_bool`; `complex64`/`complex128` -> compounds
//!   of two floats; `r<N>` -> `opaque(N/8) nz_rN`;
//! - a record (`struct`) -> `compound nz_struct_XXXXXXXX`, named by a hash
//!   of its layout so that arrays of one record type share one declaration.
//!   Its members are the fields, in order, at their own sizes (the records
//!   in the `.bin` files are packed): `S n` is `char f(n)`, `U n` is
//!   `uint f(n)` (UTF-32 code units), `float16`/`bfloat16` are `ushort`
//!   bits, times are `int64`, and a numpy subarray is the member's
//!   dimensions. Member names are netCDF names, unique in their record;
//!   the reading guide gives each field's store name, type and offset.
//!
//! Invariant: a type is declared after every type it uses (declarations
//! are ordered by nesting depth, then name), which ncgen requires.

use std::fmt::Write;

use super::is_bool_attribute;
use crate::naming;
use crate::netcdf::NcType;
use crate::zarr::data_type::DataType;
use crate::zarr::data_type::record::Record;
use crate::zarr::hierarchy::{Hierarchy, NodeKind};

/// The user-defined types the subtree needs, as CDL declarations.
pub(super) fn used_types(h: &Hierarchy, id: usize) -> Vec<String> {
    let mut found: Vec<DataType> = Vec::new();
    let mut bool_attr = false;
    let mut stack = vec![id];
    while let Some(n) = stack.pop() {
        stack.extend(&h.nodes[n].children);
        let attrs = match &h.nodes[n].kind {
            NodeKind::Array(a) => {
                collect(&a.metadata.data_type, &mut found);
                a.metadata.attributes.as_slice()
            }
            NodeKind::Group { metadata: Some(g) } => g.attributes.as_slice(),
            _ => &[],
        };
        bool_attr |= attrs.iter().any(|(_, v)| is_bool_attribute(v));
    }
    if bool_attr && !found.contains(&DataType::Bool) {
        found.push(DataType::Bool);
    }
    found.sort_by_cached_key(|d| (depth(d), type_name(d)));
    found.iter().filter_map(type_decl).collect()
}

/// `dt` and the user-defined types inside it, each once.
fn collect(dt: &DataType, found: &mut Vec<DataType>) {
    if let DataType::Struct(r) = dt {
        for f in &r.fields {
            collect(&f.data_type, found);
        }
    }
    if type_decl(dt).is_some() && !found.contains(dt) {
        found.push(dt.clone());
    }
}

/// How deeply records nest inside `dt` (0 for any other type).
fn depth(dt: &DataType) -> usize {
    match dt {
        DataType::Struct(r) => 1 + r.fields.iter().map(|f| depth(&f.data_type)).max().unwrap_or(0),
        _ => 0,
    }
}

fn type_decl(dt: &DataType) -> Option<String> {
    match dt {
        DataType::Bool => Some("ubyte enum nz_bool {false = 0, true = 1} ;".into()),
        DataType::Complex64 => {
            Some("compound nz_complex64 {\n    float r ;\n    float i ;\n  }; // nz_complex64".into())
        }
        DataType::Complex128 => {
            Some("compound nz_complex128 {\n    double r ;\n    double i ;\n  }; // nz_complex128".into())
        }
        DataType::Raw(n) => Some(format!("opaque({n}) nz_r{} ;", n * 8)),
        DataType::Struct(r) => Some(compound(r)),
        _ => None,
    }
}

/// A record's `compound` declaration.
fn compound(r: &Record) -> String {
    let name = record_name(r);
    let mut out = format!("compound {name} {{\n");
    let names = naming::unique(r.fields.iter().map(|f| f.name.as_str()));
    for (f, shown) in r.fields.iter().zip(&names) {
        let (t, mut dims) = match &f.data_type {
            DataType::FixedBytes(n) => ("char".to_string(), vec![*n]),
            DataType::FixedUtf32(n) => ("uint".to_string(), vec![*n]),
            DataType::Float16 | DataType::BFloat16 => ("ushort".to_string(), vec![]),
            other => (type_name(other), vec![]),
        };
        // The subarray's dimensions come first (numpy: `("s", "S3", (2,))`
        // is 2 strings of 3 bytes).
        dims.splice(0..0, f.shape.iter().copied());
        let _ = write!(out, "    {t} {}", naming::cdl(shown));
        if !dims.is_empty() {
            let listed: Vec<String> = dims.iter().map(usize::to_string).collect();
            let _ = write!(out, "({})", listed.join(", "));
        }
        out.push_str(" ;\n");
    }
    let _ = write!(out, "  }}; // {name}");
    out
}

/// `nz_struct_` and 8 hex digits of FNV-1a over the record's layout.
fn record_name(r: &Record) -> String {
    let hash = r
        .describe()
        .bytes()
        .fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    format!("nz_struct_{hash:08x}")
}

/// The CDL type name of a data type: a classic type's is the netCDF
/// vocabulary's (as CDF-5 types it), the others' a user-defined type's
/// or `string`.
pub fn type_name(dt: &DataType) -> String {
    match dt {
        DataType::Bool => "nz_bool".into(),
        DataType::FixedBytes(_) | DataType::FixedUtf32(_) | DataType::String | DataType::Bytes => "string".into(),
        DataType::Complex64 => "nz_complex64".into(),
        DataType::Complex128 => "nz_complex128".into(),
        DataType::Raw(n) => format!("nz_r{}", n * 8),
        DataType::Struct(r) => record_name(r),
        DataType::Narrow(n) => type_name(&n.shown()),
        atomic => NcType::of_zarr(atomic, true).map_or_else(|| "string".into(), |(t, _)| t.name().into()),
    }
}

//! Pure rendering: hierarchy -> CDL text (`ncdump -h` style) that
//! `ncgen -k nc4` accepts.
//!
//! Mappings where netCDF has no atomic type (documented in README.md):
//! - `bool` -> `ubyte enum nz_bool {false = 0, true = 1}`;
//! - `complex64`/`complex128` -> `compound nz_complex64 {float r; float i;}`
//!   (and the `double` twin);
//! - `r<N>` -> `opaque(N/8) nz_rN`;
//! - `float16` -> `float`, with a comment saying the files hold 2-byte halves.
//!
//! Attributes follow NZ's default mapping: JSON integer -> `int64`, float ->
//! `double`, string -> text, homogeneous array -> a list (strings become a
//! `string` list). Booleans become the text `"true"`/`"false"`; objects,
//! nulls and mixed arrays become their JSON text. `_FillValue` takes the
//! variable's type, from a JSON number or xarray's base64 float64 form.
//!
//! Dimensions are scoped to their group; an unnamed dimension of length L is
//! `_Anonymous_Dim_L` (netCDF-C's NCZarr spelling); a label reused in one
//! group with another length is written `label_L`.

use std::fmt::Write;

use base64::Engine;

use crate::zarr::data_type::DataType;
use crate::zarr::hierarchy::{Hierarchy, NodeKind};
use crate::zarr::json::Value;
use crate::zarr::metadata::ArrayMetadata;

/// Render the header of node `id`: the whole subtree for a group, one
/// variable for an array. `title` names the dataset.
pub fn render(h: &Hierarchy, id: usize, title: &str) -> String {
    let mut out = format!("netcdf {} {{\n", name(title));
    let types = used_types(h, id);
    if !types.is_empty() {
        out.push_str("types:\n");
        for t in types {
            let _ = writeln!(out, "  {t} ;");
        }
    }
    match &h.nodes[id].kind {
        NodeKind::Array(a) => {
            let dims = Dims::of(std::iter::once(&a.metadata));
            dims.write(&mut out, "");
            out.push_str("variables:\n");
            // A root array has no name of its own: it takes the dataset's.
            let var = if id == 0 { title } else { h.nodes[id].name.as_str() };
            write_variable(&mut out, "", var, &a.metadata, &dims);
        }
        _ => write_group_body(&mut out, h, id, ""),
    }
    out.push_str("}\n");
    out
}

/// The user-defined types the subtree needs, as CDL declarations.
fn used_types(h: &Hierarchy, id: usize) -> Vec<String> {
    let mut found: Vec<DataType> = Vec::new();
    let mut stack = vec![id];
    while let Some(n) = stack.pop() {
        stack.extend(&h.nodes[n].children);
        if let NodeKind::Array(a) = &h.nodes[n].kind {
            let dt = a.metadata.data_type;
            if type_decl(dt).is_some() && !found.contains(&dt) {
                found.push(dt);
            }
        }
    }
    found.sort_by_key(|d| d.name());
    found.into_iter().filter_map(type_decl).collect()
}

fn type_decl(dt: DataType) -> Option<String> {
    match dt {
        DataType::Bool => Some("ubyte enum nz_bool {false = 0, true = 1}".into()),
        DataType::Complex64 => Some("compound nz_complex64 {\n    float r ;\n    float i ;\n  }".into()),
        DataType::Complex128 => Some("compound nz_complex128 {\n    double r ;\n    double i ;\n  }".into()),
        DataType::Raw(n) => Some(format!("opaque({n}) nz_r{}", n * 8)),
        _ => None,
    }
}

/// The CDL type name of a data type.
pub fn type_name(dt: DataType) -> String {
    match dt {
        DataType::Bool => "nz_bool".into(),
        DataType::Int8 => "byte".into(),
        DataType::Int16 => "short".into(),
        DataType::Int32 => "int".into(),
        DataType::Int64 => "int64".into(),
        DataType::UInt8 => "ubyte".into(),
        DataType::UInt16 => "ushort".into(),
        DataType::UInt32 => "uint".into(),
        DataType::UInt64 => "uint64".into(),
        DataType::Float16 | DataType::Float32 => "float".into(),
        DataType::Float64 => "double".into(),
        DataType::Complex64 => "nz_complex64".into(),
        DataType::Complex128 => "nz_complex128".into(),
        DataType::Raw(n) => format!("nz_r{}", n * 8),
    }
}

/// Words ncgen reads as keywords whatever the escaping; a name spelled like
/// one is written with a trailing `_` (`int64` -> `int64_`), since ncgen
/// cannot read it in any form.
const RESERVED: &[&str] = &[
    "char",
    "byte",
    "short",
    "int",
    "long",
    "float",
    "real",
    "double",
    "ubyte",
    "ushort",
    "uint",
    "int64",
    "uint64",
    "string",
    "enum",
    "opaque",
    "compound",
    "unlimited",
    "UNLIMITED",
    "integer",
    "ulong",
    "netcdf",
    "NaN",
    "NaNf",
    "nan",
    "nanf",
    "Infinity",
    "Infinityf",
    "infinity",
    "infinityf",
    "inf",
    "inff",
];

/// A CDL name, with the characters ncgen reserves escaped. Names ncgen
/// cannot read in any spelling (type keywords, a leading `-+.@`) get a `_`.
pub fn name(s: &str) -> String {
    if RESERVED.contains(&s) {
        return format!("{s}_");
    }
    let mut out = String::with_capacity(s.len());
    for (i, c) in s.chars().enumerate() {
        if i == 0 && "-+.@".contains(c) {
            out.push('_'); // ncgen cannot read these first, escaped or not
        }
        let escape =
            (i == 0 && c.is_ascii_digit()) || c.is_ascii_whitespace() || "!\"#$%&()*,:;<=>?[]^`{}|~\\'/".contains(c);
        if c.is_control() {
            let _ = write!(out, "\\{:03o}", c as u32 & 0xff);
            continue;
        }
        if escape {
            out.push('\\');
        }
        out.push(c);
    }
    if out.is_empty() { "_unnamed".into() } else { out }
}

/// The dimensions of one group: `(cdl name, label or None, length)`.
struct Dims(Vec<(String, Option<String>, u64)>);

impl Dims {
    fn of<'a>(arrays: impl Iterator<Item = &'a ArrayMetadata>) -> Dims {
        let mut dims = Dims(Vec::new());
        for a in arrays {
            for (label, &len) in a.dimension_names.iter().zip(&a.shape) {
                if dims.find(label.as_deref(), len).is_none() {
                    let base = label.clone().unwrap_or_else(|| format!("_Anonymous_Dim_{len}"));
                    let taken = dims.0.iter().any(|(n, _, _)| *n == base);
                    let cdl = if taken { format!("{base}_{len}") } else { base };
                    dims.0.push((cdl, label.clone(), len));
                }
            }
        }
        dims
    }

    fn find(&self, label: Option<&str>, len: u64) -> Option<&str> {
        self.0
            .iter()
            .find(|(_, l, n)| l.as_deref() == label && *n == len)
            .map(|(c, _, _)| c.as_str())
    }

    fn write(&self, out: &mut String, indent: &str) {
        if self.0.is_empty() {
            return;
        }
        let _ = writeln!(out, "{indent}dimensions:");
        for (cdl, _, len) in &self.0 {
            let _ = writeln!(out, "{indent}\t{} = {len} ;", name(cdl));
        }
    }
}

fn write_group_body(out: &mut String, h: &Hierarchy, id: usize, indent: &str) {
    let node = &h.nodes[id];
    let arrays: Vec<(&str, &ArrayMetadata)> = node
        .children
        .iter()
        .filter_map(|&c| match &h.nodes[c].kind {
            NodeKind::Array(a) => Some((h.nodes[c].name.as_str(), &a.metadata)),
            _ => None,
        })
        .collect();
    let dims = Dims::of(arrays.iter().map(|(_, a)| *a));
    dims.write(out, indent);
    let broken: Vec<(&str, &str)> = node
        .children
        .iter()
        .filter_map(|&c| match &h.nodes[c].kind {
            NodeKind::Broken { reason } => Some((h.nodes[c].name.as_str(), reason.as_str())),
            _ => None,
        })
        .collect();
    if !arrays.is_empty() || !broken.is_empty() {
        let _ = writeln!(out, "{indent}variables:");
    }
    for (n, a) in &arrays {
        write_variable(out, indent, n, a, &dims);
    }
    for (n, reason) in broken {
        let _ = writeln!(
            out,
            "{indent}\t// nzfs: node {n:?} is unreadable: {}",
            reason.replace('\n', " ")
        );
    }
    let attrs = match &node.kind {
        NodeKind::Group { metadata: Some(g) } => g.attributes.as_slice(),
        _ => &[],
    };
    if !attrs.is_empty() {
        let which = if node.parent.is_none() { "global" } else { "group" };
        let _ = writeln!(out, "\n{indent}// {which} attributes:");
        for (k, v) in attrs {
            write_attribute(out, indent, "", k, v, None);
        }
    }
    for &c in &node.children {
        if let NodeKind::Group { .. } = h.nodes[c].kind {
            let child = &h.nodes[c].name;
            let _ = writeln!(out, "\n{indent}group: {} {{", name(child));
            write_group_body(out, h, c, &format!("{indent}  "));
            let _ = writeln!(out, "{indent}  }} // group {}", name(child));
        }
    }
}

fn write_variable(out: &mut String, indent: &str, var: &str, a: &ArrayMetadata, dims: &Dims) {
    let var_cdl = name(var);
    let _ = write!(out, "{indent}\t{} {var_cdl}", type_name(a.data_type));
    if !a.shape.is_empty() {
        let names: Vec<String> = a
            .dimension_names
            .iter()
            .zip(&a.shape)
            .map(|(l, &n)| name(dims.find(l.as_deref(), n).expect("every dimension was collected")))
            .collect();
        let _ = write!(out, "({})", names.join(", "));
    }
    out.push_str(" ;\n");
    if a.data_type == DataType::Float16 {
        let _ = writeln!(
            out,
            "{indent}\t\t// nzfs: {var} is float16; its chunk files hold 2-byte halves"
        );
    }
    for (k, v) in &a.attributes {
        write_attribute(out, indent, &var_cdl, k, v, Some(a.data_type));
    }
}

fn write_attribute(out: &mut String, indent: &str, var: &str, key: &str, v: &Value, dt: Option<DataType>) {
    if key == "_FillValue"
        && let Some(text) = dt.and_then(|dt| fill_value_text(v, dt))
    {
        let _ = writeln!(out, "{indent}\t\t{var}:_FillValue = {text} ;");
        return;
    }
    let (prefix, text) = attribute_text(v);
    let _ = writeln!(out, "{indent}\t\t{prefix}{var}:{} = {text} ;", name(key));
}

/// `(type prefix, value text)` of an attribute under NZ's default mapping.
fn attribute_text(v: &Value) -> (&'static str, String) {
    match v {
        Value::Str(s) => ("", quote(s)),
        Value::Int(i) => ("", format!("{i}LL")),
        Value::UInt(u) => ("", format!("{u}ULL")),
        Value::Float(f) => ("", double(*f)),
        Value::Bool(b) => ("", quote(&b.to_string())),
        Value::Array(items) if !items.is_empty() => {
            if items.iter().all(|i| matches!(i, Value::Str(_))) {
                let parts: Vec<String> = items.iter().map(|i| quote(i.as_str().unwrap_or(""))).collect();
                ("string ", parts.join(", "))
            } else if items.iter().all(|i| matches!(i, Value::Int(_))) {
                (
                    "",
                    items.iter().map(|i| format!("{i}LL")).collect::<Vec<_>>().join(", "),
                )
            } else if items
                .iter()
                .all(|i| matches!(i, Value::Int(_) | Value::UInt(_)) && i.as_u64().is_some())
            {
                (
                    "",
                    items.iter().map(|i| format!("{i}ULL")).collect::<Vec<_>>().join(", "),
                )
            } else if items.iter().all(|i| i.as_f64().is_some()) {
                (
                    "",
                    items
                        .iter()
                        .map(|i| double(i.as_f64().unwrap_or(0.0)))
                        .collect::<Vec<_>>()
                        .join(", "),
                )
            } else {
                ("", quote(&v.to_string()))
            }
        }
        other => ("", quote(&other.to_string())),
    }
}

/// `_FillValue` in the variable's own type, or `None` if it cannot be.
fn fill_value_text(v: &Value, dt: DataType) -> Option<String> {
    let x = match v {
        Value::Str(s) => match s.as_str() {
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            b64 => {
                let bytes = base64::engine::general_purpose::STANDARD.decode(b64).ok()?;
                f64::from_le_bytes(bytes.try_into().ok()?)
            }
        },
        other => other.as_f64()?,
    };
    let int = |suffix: &str, lo: f64, hi: f64| {
        (x.fract() == 0.0 && x >= lo && x <= hi).then(|| format!("{}{suffix}", x as i128))
    };
    match dt {
        DataType::Int8 => int("b", -128.0, 127.0),
        DataType::Int16 => int("s", -32768.0, 32767.0),
        DataType::Int32 => int("", -2147483648.0, 2147483647.0),
        DataType::Int64 => int("LL", -9.223372036854776e18, 9.223372036854775e18),
        DataType::UInt8 => int("UB", 0.0, 255.0),
        DataType::UInt16 => int("US", 0.0, 65535.0),
        DataType::UInt32 => int("U", 0.0, 4294967295.0),
        DataType::UInt64 => int("ULL", 0.0, 1.844_674_407_370_955e19),
        DataType::Float16 | DataType::Float32 => Some(float(x as f32)),
        DataType::Float64 => Some(double(x)),
        DataType::Bool | DataType::Complex64 | DataType::Complex128 | DataType::Raw(_) => None,
    }
}

/// A double as ncdump writes it (`1.`, `0.5`, `1e+300`, `NaN`, `-Infinity`).
pub fn double(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    let s = format!("{x:?}");
    match s.strip_suffix(".0") {
        Some(int) => format!("{int}."),
        None => s,
    }
}

/// A float as ncdump writes it (`-9999.f`, `NaNf`).
pub fn float(x: f32) -> String {
    if x.is_nan() {
        return "NaNf".into();
    }
    if x.is_infinite() {
        return if x > 0.0 {
            "Infinityf".into()
        } else {
            "-Infinityf".into()
        };
    }
    let s = format!("{x:?}");
    match s.strip_suffix(".0") {
        Some(int) => format!("{int}.f"),
        None => format!("{s}f"),
    }
}

/// A CDL string literal.
pub fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\{:03o}", c as u32 & 0xff);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_names() {
        assert_eq!(double(1.0), "1.");
        assert_eq!(double(0.5), "0.5");
        assert_eq!(double(1e300), "1e300");
        assert_eq!(float(-9999.0), "-9999.f");
        assert_eq!(float(f32::NAN), "NaNf");
        assert_eq!(name("2m temp"), "\\2m\\ temp");
        assert_eq!(name("t2m"), "t2m");
        assert_eq!(name("int64"), "int64_");
        assert_eq!(quote("a\"b\n"), "\"a\\\"b\\n\"");
    }

    #[test]
    fn fill_value_in_the_variable_type() {
        let b64 = Value::Str("AAAAAICHw8A=".into());
        assert_eq!(fill_value_text(&b64, DataType::Float32).unwrap(), "-9999.f");
        assert_eq!(fill_value_text(&Value::Int(-1), DataType::Int16).unwrap(), "-1s");
        assert_eq!(fill_value_text(&Value::Int(300), DataType::UInt8), None);
        assert_eq!(
            fill_value_text(&Value::Float(f64::NAN), DataType::Float64).unwrap(),
            "NaN"
        );
    }
}

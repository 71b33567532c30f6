//! Pure rendering: hierarchy -> CDL text in the form `ncdump -hs` prints,
//! which `ncgen -k nc4` accepts.
//!
//! The header of a group describes its subtree (subgroups as nested
//! `group: NAME { … } // group NAME` blocks); the header of an array
//! describes a dataset holding that one variable. Layout, indentation,
//! blank lines and value spelling follow ncdump (see [`mod@format`]).
//!
//! Mappings where netCDF has no atomic type (documented in docs/formats.md):
//! - `bool` -> `ubyte enum nz_bool {false = 0, true = 1}`;
//! - `complex64`/`complex128` -> `compound nz_complex64 {float r; float i;}`
//!   (and the `double` twin);
//! - `r<N>` -> `opaque(N/8) nz_rN`;
//! - `float16` -> `float` (netCDF has no half type); the nzfs comment says
//!   the chunk files hold 2-byte halves.
//!
//! Attributes follow NZ's default mapping: JSON integer -> `int64`, float ->
//! `double`, string -> text, homogeneous array -> a list (strings -> a
//! `string` list, numbers mixing integers and floats -> `double`). Booleans
//! -> `nz_bool` (`true`/`false`); objects, nulls, empty and mixed arrays ->
//! their compact JSON text. `_FillValue` takes the variable's own type, from
//! a JSON number, `"NaN"`-style strings, or xarray's base64 float64.
//!
//! Dimensions are scoped to their group (NZ); an unnamed dimension of length
//! L is `_Anonymous_Dim_L` (netCDF-C's NCZarr spelling); a label reused in
//! one group with another length is written `label_L`; a zero-length one is
//! `UNLIMITED ; // (0 currently)`, the only way netCDF-4 holds length 0.
//!
//! Storage, as `ncdump -s` shows it: `_Storage` (`chunked`, or `contiguous`
//! for a scalar), `_ChunkSizes` (the Zarr chunk shape, clipped to fixed
//! dimension lengths as netCDF requires) and `_Endianness = "little"` (the
//! byte order of the `.bin` files on this host) for multi-byte atomic types.
//! Each variable also gets `// nzfs:` comment lines saying how to read its
//! `.bin` files.

pub mod format;
mod guide;
mod types;

use std::fmt::Write;

use crate::json::Value;
use crate::naming;
use crate::zarr::data_type::DataType;
use crate::zarr::dimensions::GroupDimensions;
use crate::zarr::hierarchy::{Hierarchy, NodeKind};
use crate::zarr::metadata::{ArrayMetadata, TYPED_BY_VARIABLE};
use format::{double, float, name, quote};
pub use types::type_name;
use types::used_types;

/// Render the header of node `id`. `title` names the dataset (the root
/// array's variable takes it too, having no name of its own).
pub fn render(h: &Hierarchy, id: usize, title: &str) -> String {
    let mut out = format!("netcdf {} {{\n", name(title));
    let types = used_types(h, id);
    if !types.is_empty() {
        out.push_str("types:\n");
        for t in types {
            let _ = writeln!(out, "  {t}");
        }
    }
    match &h.nodes[id].kind {
        NodeKind::Array(a) => {
            let dims = GroupDimensions::of(std::iter::once(&a.metadata));
            write_dims(&dims, &[], &mut out, "");
            out.push_str("variables:\n");
            let var = if id == 0 { title } else { h.nodes[id].name.as_str() };
            write_variable(&mut out, "", var, &naming::netcdf(var), &a.metadata, &dims);
        }
        _ => write_group_body(&mut out, h, id, "", id),
    }
    out.push_str("}\n");
    out
}

/// One version of a versioned store (an Icechunk snapshot), shown at
/// `path` (`""`: the whole tree is that version).
#[derive(Debug, Clone, PartialEq)]
pub struct VersionRoot {
    /// The node path at which the version is shown.
    pub path: String,
    /// The comment its headers carry (snapshot, commit time, message).
    pub note: String,
    /// The mtime of its files (the commit time), when known.
    pub time: Option<std::time::SystemTime>,
}

impl VersionRoot {
    /// Whether the node at `path` belongs to this version (is at or below
    /// its root).
    pub fn holds(&self, path: &str) -> bool {
        let root = self.path.as_str();
        root.is_empty() || path == root || path.strip_prefix(root).is_some_and(|rest| rest.starts_with('/'))
    }

    /// The version the node at `path` belongs to.
    pub fn of<'a>(roots: &'a [VersionRoot], path: &str) -> Option<&'a VersionRoot> {
        roots.iter().find(|r| r.holds(path))
    }
}

/// The name node `id` goes by in its header and `.nc` file: the dataset's
/// for the root and for the root of its `version` (so that two versions'
/// files compare line by line), else the node's own.
pub fn title<'a>(h: &'a Hierarchy, id: usize, dataset: &'a str, version: Option<&VersionRoot>) -> &'a str {
    let node = &h.nodes[id];
    if id == 0 || version.is_some_and(|v| v.path == node.path) {
        dataset
    } else {
        &node.name
    }
}

/// `text` with its `version`'s note as a `// note` line after its
/// `netcdf NAME {` line (ncgen and ncdump read `//` comments as such).
pub fn with_note(text: String, version: Option<&VersionRoot>) -> String {
    let Some(v) = version else {
        return text;
    };
    match text.split_once('\n') {
        Some((first, rest)) => format!("{first}\n// {}\n{rest}", naming::comment(&v.note)),
        None => text,
    }
}

/// `text` with `comment` (escaped to stay on its line) as a `//` line after
/// its `netcdf NAME {` line.
pub fn with_comment(text: String, comment: &str) -> String {
    match text.split_once('\n') {
        Some((first, rest)) => format!("{first}\n// {}\n{rest}", naming::comment(comment)),
        None => text,
    }
}

/// The header of an array nzfs cannot show (its data type): a dataset with
/// no variables and a comment naming the reason.
pub fn render_unreadable(title: &str, reason: &str, document: Option<&Value>) -> String {
    let mut out = format!(
        "netcdf {} {{\n// nzfs: this array cannot be shown: {}\n",
        name(title),
        naming::comment(reason)
    );
    // What the metadata says, as comments: no CDL type can
    // stand for a data type nzfs does not know.
    if let Some(doc) = document {
        let member = |k: &str| doc.get(k).map(|v| naming::comment(&v.to_string()));
        for (label, key) in [
            ("data type", "data_type"),
            ("data type", "dtype"),
            ("shape", "shape"),
            ("dimension names", "dimension_names"),
            ("chunk grid", "chunk_grid"),
            ("chunks", "chunks"),
            ("fill value", "fill_value"),
            ("codecs", "codecs"),
            ("compressor", "compressor"),
            ("filters", "filters"),
        ] {
            if let Some(v) = member(key).filter(|v| v != "null") {
                let _ = writeln!(out, "// nzfs: {label} {}", cut(&v, 400));
            }
        }
        if let Some(Value::Object(attrs)) = doc.get("attributes") {
            for (k, v) in attrs.iter().take(256) {
                let _ = writeln!(
                    out,
                    "// nzfs: attribute {} = {}",
                    naming::comment(k),
                    cut(&naming::comment(&v.to_string()), 400)
                );
            }
            if attrs.len() > 256 {
                let _ = writeln!(out, "// nzfs: ... and {} more attributes", attrs.len() - 256);
            }
        }
    }
    out.push_str("// nzfs: only this header is here; nothing else in this directory can be read\n}\n");
    out
}

/// `text` cut to at most `max` bytes at a character boundary, marked.
fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    format!("{} ...", naming::cut(text, max))
}

/// Write a group's `dimensions:` section, leaving out those `inherited`
/// from an enclosing group (netCDF resolves a name upward).
fn write_dims(dims: &GroupDimensions, inherited: &[(String, u64)], out: &mut String, indent: &str) {
    let own: Vec<_> = dims
        .0
        .iter()
        .filter(|d| {
            !inherited
                .iter()
                .any(|(n, l)| d.label.as_deref() == Some(n) && d.len == *l)
        })
        .collect();
    if own.is_empty() {
        return;
    }
    let _ = writeln!(out, "{indent}dimensions:");
    for d in own {
        match d.len {
            0 => {
                let _ = writeln!(out, "{indent}\t{} = UNLIMITED ; // (0 currently)", naming::cdl(&d.name));
            }
            len => {
                let _ = writeln!(out, "{indent}\t{} = {len} ;", naming::cdl(&d.name));
            }
        }
    }
}

/// Write group `id`'s body; `root` is the group the document describes.
fn write_group_body(out: &mut String, h: &Hierarchy, id: usize, indent: &str, root: usize) {
    let node = &h.nodes[id];
    let document_root = id == root;
    // Variables and groups share one namespace, and a group may not be
    // named like a dimension of its parent.
    let declared = match &node.kind {
        NodeKind::Group { metadata: Some(g) } => g.dimensions.as_slice(),
        _ => &[][..],
    };
    let dims = GroupDimensions::of_declared(
        declared,
        node.children.iter().filter_map(|&c| match &h.nodes[c].kind {
            NodeKind::Array(a) => Some(&a.metadata),
            _ => None,
        }),
    );
    let dim_names: Vec<&str> = dims.0.iter().map(|d| d.name.as_str()).collect();
    let shown = h.shown_children(id, &dim_names);
    // By node id (a search per child made a group of 100,000 arrays take
    // seconds to describe).
    let at: std::collections::HashMap<usize, usize> = node.children.iter().enumerate().map(|(k, &c)| (c, k)).collect();
    let shown_of = |c: usize| shown[at[&c]].as_str();
    let arrays: Vec<(&str, &ArrayMetadata)> = node
        .children
        .iter()
        .filter_map(|&c| match &h.nodes[c].kind {
            NodeKind::Array(a) => Some((h.nodes[c].name.as_str(), &a.metadata)),
            _ => None,
        })
        .collect();
    let array_ids: Vec<usize> = node
        .children
        .iter()
        .copied()
        .filter(|&c| matches!(h.nodes[c].kind, NodeKind::Array(_)))
        .collect();
    let group = match &node.kind {
        NodeKind::Group { metadata: Some(g) } => Some(g),
        _ => None,
    };
    // Dimensions declared by enclosing groups (within this document).
    let mut inherited = Vec::new();
    let mut up = if document_root { None } else { node.parent };
    while let Some(p) = up {
        if let NodeKind::Group { metadata: Some(g) } = &h.nodes[p].kind {
            inherited.extend(g.dimensions.iter().filter(|d| !declared.contains(d)).cloned());
        }
        up = if p == root { None } else { h.nodes[p].parent };
    }
    write_dims(&dims, &inherited, out, indent);
    let broken: Vec<(&str, &str)> = node
        .children
        .iter()
        .filter_map(|&c| match &h.nodes[c].kind {
            NodeKind::Broken { reason, .. } => Some((h.nodes[c].name.as_str(), reason.as_str())),
            _ => None,
        })
        .collect();
    if !arrays.is_empty() || !broken.is_empty() {
        let _ = writeln!(out, "{indent}variables:");
    }
    for ((n, a), &c) in arrays.iter().zip(&array_ids) {
        write_variable(out, indent, n, shown_of(c), a, &dims);
    }
    for (n, reason) in broken {
        let _ = writeln!(
            out,
            "{indent}\t// nzfs: node {} is unreadable: {}",
            naming::comment(&quote(n)),
            naming::comment(reason)
        );
    }
    for (n, a) in arrays.iter().filter(|(_, a)| a.data_type.element_size().is_none()) {
        let _ = writeln!(
            out,
            "{indent}\t// nzfs: {} ({}) is left out of the group's classic .nc file, which holds no strings; read data.txt",
            naming::comment(n),
            naming::comment(&a.data_type.name())
        );
    }
    let attrs = match &node.kind {
        NodeKind::Group { metadata: Some(g) } => g.attributes.as_slice(),
        _ => &[],
    };
    // What nzfs renamed, kept as attributes of the group.
    let mut extra: Vec<(&str, String)> = Vec::new();
    let own_name = if document_root { None } else { Some(node.name.as_str()) };
    if let Some(n) = own_name.filter(|n| naming::netcdf(n) != *n) {
        extra.push(("_nz_name", n.to_string()));
    }
    let keys = naming::attribute_names(attrs.iter().map(|(k, _)| k.as_str()), true);
    if let Some(text) = naming::renamed_lines(
        attrs
            .iter()
            .map(|(k, _)| k.as_str())
            .zip(keys.iter().map(String::as_str)),
    ) {
        extra.push(("_nz_renamed_attributes", text));
    }
    if let Some(text) = naming::renamed_lines(dims.renamed()) {
        extra.push(("_nz_renamed_dimensions", text));
    }
    // ncdump heads a subgroup's attributes even when it has none.
    if !attrs.is_empty() || !extra.is_empty() || !document_root {
        let which = if document_root { "global" } else { "group" };
        let _ = writeln!(out, "\n{indent}// {which} attributes:");
        for ((k, v), shown) in attrs.iter().zip(&keys) {
            let typed = typed_attribute(group.map_or(&[][..], |g| &g.attribute_types), k);
            write_attribute(out, indent, "", k, shown, v, None, typed);
        }
        for (k, text) in &extra {
            let _ = writeln!(out, "{indent}\t\t:{k} = {} ;", quote(text));
        }
    }
    for &c in &node.children {
        if let NodeKind::Group { .. } = h.nodes[c].kind {
            let child = naming::cdl(shown_of(c));
            let _ = writeln!(out, "\n{indent}group: {child} {{");
            write_group_body(out, h, c, &format!("{indent}  "), root);
            let _ = writeln!(out, "{indent}  }} // group {child}");
        }
    }
}

/// Variable `var` (its store name), shown as netCDF name `shown`.
fn write_variable(out: &mut String, indent: &str, var: &str, shown: &str, a: &ArrayMetadata, dims: &GroupDimensions) {
    let var_cdl = naming::cdl(shown);
    let _ = write!(out, "{indent}\t{} {var_cdl}", type_name(&a.data_type));
    let dim_names: Vec<&str> = dims.of_array(a).into_iter().map(|d| dims.0[d].name.as_str()).collect();
    if !dim_names.is_empty() {
        let listed: Vec<String> = dim_names.iter().map(|d| naming::cdl(d)).collect();
        let _ = write!(out, "({})", listed.join(", "));
    }
    out.push_str(" ;\n");
    let keys = naming::attribute_names(a.attributes.iter().map(|(k, _)| k.as_str()), false);
    for ((k, v), key) in a.attributes.iter().zip(&keys) {
        write_attribute(
            out,
            indent,
            &var_cdl,
            k,
            key,
            v,
            Some(a.data_type.clone()),
            typed_attribute(&a.attribute_types, k),
        );
    }
    let at = format!("{indent}\t\t{var_cdl}:");
    if var != shown {
        let _ = writeln!(out, "{at}_nz_name = {} ;", quote(var));
    }
    let renamed = naming::renamed_lines(
        a.attributes
            .iter()
            .map(|(k, _)| k.as_str())
            .zip(keys.iter().map(String::as_str)),
    );
    if let Some(text) = renamed {
        let _ = writeln!(out, "{at}_nz_renamed_attributes = {} ;", quote(&text));
    }
    // A string variable's non-empty fill is its _FillValue.
    if let (DataType::String, Value::Str(fill)) = (&a.data_type, &a.fill_value_json)
        && !fill.is_empty()
        && !a.attributes.iter().any(|(k, _)| k == "_FillValue")
    {
        let _ = writeln!(out, "{indent}\t\tstring {var_cdl}:_FillValue = {} ;", quote(fill));
    }
    if a.shape.is_empty() {
        let _ = writeln!(out, "{at}_Storage = \"contiguous\" ;");
    } else if a.unsupported.is_none() {
        let sizes: Vec<String> = a
            .chunk_shape
            .iter()
            .zip(&a.shape)
            .map(|(&c, &s)| if s == 0 { c } else { c.min(s) }.to_string())
            .collect();
        let _ = writeln!(out, "{at}_Storage = \"chunked\" ;");
        let _ = writeln!(out, "{at}_ChunkSizes = {} ;", sizes.join(", "));
    }
    // ncdump -s gives _Endianness for multi-byte atomic (numeric) types.
    if a.data_type.is_number() && a.data_type.size() > 1 {
        let _ = writeln!(
            out,
            "{at}_Endianness = \"{}\" ;",
            if cfg!(target_endian = "little") {
                "little"
            } else {
                "big"
            }
        );
    }
    guide::write_reading_guide(out, indent, a, &dim_names);
}

pub(super) fn is_bool_attribute(v: &Value) -> bool {
    match v {
        Value::Bool(_) => true,
        Value::Array(items) => !items.is_empty() && items.iter().all(|i| matches!(i, Value::Bool(_))),
        _ => false,
    }
}

/// The netCDF type the store records for attribute `key`, if any.
fn typed_attribute(types: &[(String, DataType)], key: &str) -> Option<DataType> {
    types.iter().find(|(k, _)| k == key).map(|(_, t)| t.clone())
}

/// An attribute's numbers in a recorded type (`1b, 2b`), if they all fit.
fn typed_text(v: &Value, t: &DataType) -> Option<String> {
    let items = match v {
        Value::Array(items) if !items.is_empty() => items.as_slice(),
        Value::Array(_) => return None,
        one => std::slice::from_ref(one),
    };
    let texts = items
        .iter()
        .map(|i| fill_value_text(i, t))
        .collect::<Option<Vec<_>>>()?;
    Some(texts.join(", "))
}

/// Attribute `key` (its store name) of `var`, shown as netCDF name `shown`.
#[allow(clippy::too_many_arguments)]
fn write_attribute(
    out: &mut String,
    indent: &str,
    var: &str,
    key: &str,
    shown: &str,
    v: &Value,
    dt: Option<DataType>,
    typed: Option<DataType>,
) {
    let at = format!("{indent}\t\t");
    let key_cdl = naming::cdl(shown);
    if let Some(text) = typed.filter(|_| key != "_FillValue").and_then(|t| typed_text(v, &t)) {
        let _ = writeln!(out, "{at}{var}:{key_cdl} = {text} ;");
        return;
    }
    // Tied to the variable's type (NUG, CF) where its values fit it.
    if key != "_FillValue"
        && TYPED_BY_VARIABLE.contains(&key)
        && crate::zarr::metadata::integers(v)
        && let Some(text) = dt
            .as_ref()
            .filter(|dt| dt.element_size().is_some())
            .and_then(|dt| typed_text(v, dt))
    {
        let _ = writeln!(out, "{at}{var}:{key_cdl} = {text} ;");
        return;
    }
    if key == "_FillValue"
        && let Some(DataType::String) = dt
        && let Value::Str(fill) = v
    {
        let _ = writeln!(out, "{at}string {var}:_FillValue = {} ;", quote(fill));
        return;
    }
    if key == "_FillValue"
        && let Some(dt) = dt
    {
        match fill_value_text(v, &dt) {
            Some(text) => {
                let _ = writeln!(out, "{at}{var}:_FillValue = {text} ;");
            }
            None => {
                let _ = writeln!(
                    out,
                    "{at}// nzfs: _FillValue {v} cannot be written as {}; it is not declared here",
                    type_name(&dt)
                );
            }
        }
        return;
    }
    let (prefix, text) = attribute_text(v);
    let _ = writeln!(out, "{at}{prefix}{var}:{key_cdl} = {text} ;");
}

/// `(type prefix, value text)` of an attribute under NZ's default mapping.
fn attribute_text(v: &Value) -> (&'static str, String) {
    let list = |items: &[Value], f: &dyn Fn(&Value) -> String| items.iter().map(f).collect::<Vec<_>>().join(", ");
    match v {
        Value::Str(s) => ("", quote(s)),
        Value::Int(i) => ("", format!("{i}LL")),
        Value::UInt(u) => ("", format!("{u}ULL")),
        Value::Float(f) => ("", double(*f)),
        Value::Bool(b) => ("nz_bool ", b.to_string()),
        Value::Array(items) if !items.is_empty() => {
            if items.iter().all(|i| matches!(i, Value::Str(_))) {
                ("string ", list(items, &|i| quote(i.as_str().unwrap_or_default())))
            } else if items.iter().all(|i| matches!(i, Value::Int(_))) {
                ("", list(items, &|i| format!("{i}LL")))
            } else if items.iter().all(|i| matches!(i, Value::Int(0..) | Value::UInt(_))) {
                ("", list(items, &|i| format!("{i}ULL")))
            } else if items.iter().all(|i| i.as_f64().is_some()) {
                ("", list(items, &|i| double(i.as_f64().unwrap_or_default())))
            } else if is_bool_attribute(v) {
                ("nz_bool ", list(items, &|i| i.to_string()))
            } else {
                ("", quote(&v.to_string()))
            }
        }
        other => ("", quote(&other.to_string())),
    }
}

/// `_FillValue` in the variable's own type, or `None` if it cannot be.
fn fill_value_text(v: &Value, dt: &DataType) -> Option<String> {
    let n = crate::zarr::data_type::fill_value_number(v).ok()?;
    match dt {
        DataType::Float16 | DataType::BFloat16 | DataType::Float32 => Some(float(n.as_f64() as f32)),
        DataType::Float64 => Some(double(n.as_f64())),
        _ => {
            let suffix = match dt {
                DataType::Int8 => "b",
                DataType::Int16 => "s",
                DataType::Int64 | DataType::DateTime64 { .. } | DataType::TimeDelta64 { .. } => "LL",
                DataType::UInt8 => "UB",
                DataType::UInt16 => "US",
                DataType::UInt32 => "U",
                DataType::UInt64 => "ULL",
                _ => "",
            };
            let (lo, hi) = dt.int_range().filter(|_| *dt != DataType::Bool)?;
            n.integral()
                .filter(|i| (lo..=hi).contains(i))
                .map(|i| format!("{i}{suffix}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_value_in_the_variable_type() {
        let b64 = Value::Str("AAAAAICHw8A=".into());
        assert_eq!(fill_value_text(&b64, &DataType::Float32).unwrap(), "-9999.f");
        assert_eq!(fill_value_text(&b64, &DataType::Float64).unwrap(), "-9999.");
        assert_eq!(fill_value_text(&Value::Int(-1), &DataType::Int16).unwrap(), "-1s");
        assert_eq!(fill_value_text(&Value::Int(255), &DataType::UInt8).unwrap(), "255UB");
        assert_eq!(fill_value_text(&Value::Int(300), &DataType::UInt8), None);
        assert_eq!(
            fill_value_text(&Value::UInt(u64::MAX), &DataType::UInt64).unwrap(),
            "18446744073709551615ULL"
        );
        assert_eq!(
            fill_value_text(&Value::Float(f64::NAN), &DataType::Float64).unwrap(),
            "NaN"
        );
        assert_eq!(
            fill_value_text(&Value::Str("NaN".into()), &DataType::Float32).unwrap(),
            "NaNf"
        );
        assert_eq!(
            fill_value_text(&Value::Float(-127.0), &DataType::Int8).unwrap(),
            "-127b"
        );
        assert_eq!(fill_value_text(&Value::Int(1), &DataType::Bool), None);
    }

    #[test]
    fn attribute_mapping() {
        let parse = |s: &str| crate::json::parse(s.as_bytes()).unwrap();
        assert_eq!(attribute_text(&parse("3")), ("", "3LL".into()));
        assert_eq!(attribute_text(&parse("2.5")), ("", "2.5".into()));
        assert_eq!(attribute_text(&parse("[1, 2]")), ("", "1LL, 2LL".into()));
        assert_eq!(attribute_text(&parse("[1, 2.5]")), ("", "1., 2.5".into()));
        assert_eq!(
            attribute_text(&parse(r#"["a", "b"]"#)),
            ("string ", r#""a", "b""#.into())
        );
        assert_eq!(attribute_text(&parse("true")), ("nz_bool ", "true".into()));
        assert_eq!(
            attribute_text(&parse("[true, false]")),
            ("nz_bool ", "true, false".into())
        );
        assert_eq!(attribute_text(&parse(r#"[1, "a"]"#)), ("", r#""[1,\"a\"]""#.into()));
        assert_eq!(attribute_text(&parse("null")), ("", r#""null""#.into()));
        assert_eq!(attribute_text(&parse("[]")), ("", r#""[]""#.into()));
        assert_eq!(attribute_text(&parse("[NaN, Infinity]")), ("", "NaN, Infinity".into()));
    }
}

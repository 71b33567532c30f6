//! NZ-1.0 conformance (shared/specs/nz/README.md, "Normative Summary").
//!
//! [`check`] turns a mounted view of a store into [`Finding`]s: a broken
//! MUST is an error, a broken SHOULD a warning. Where the convention's
//! `schema.json` disagrees with its README, the README wins (the
//! declaration is the `conventions` attribute; `zarr_conventions` is not
//! required).
//!
//! Decisions, documented in README.md:
//! - a 0-d array without `dimension_names` is taken as `[]` (xarray writes
//!   scalars that way);
//! - an array that qualifies structurally as a dimension coordinate (1-D,
//!   its dimension named like itself) but whose values are not strictly
//!   monotonic is a warning: it is then simply not a dimension coordinate;
//! - `conventions` anywhere but the root group, or `_FillValue` on a group,
//!   is an error (rule 6, reserved names).

use std::collections::BTreeMap;
use std::fmt::Write;

use base64::Engine;

use crate::fs::NzFs;
use crate::store::join;
use crate::zarr::data_type::DataType;
use crate::zarr::hierarchy::{MAX_METADATA_BYTES, NodeKind};
use crate::zarr::json::{self, Value};
use crate::zarr::metadata::ArrayMetadata;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Warning,
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// One finding: where, which rule, what was expected and what was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub severity: Severity,
    /// Hierarchy path with a leading `/` (`/` for the root).
    pub path: String,
    /// A short rule name, e.g. `shared-dimension`.
    pub rule: &'static str,
    /// Where the convention states it, e.g. `NZ §Dimension`.
    pub section: &'static str,
    pub expected: String,
    pub found: String,
}

struct Checker<'a> {
    fs: &'a NzFs,
    findings: Vec<Finding>,
    /// Arrays that qualify as dimension coordinates (values not refuted).
    coordinates: Vec<String>,
}

/// What `nzfs check` reports.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub findings: Vec<Finding>,
    /// Paths of the dimension coordinate arrays: structurally qualified and,
    /// when values were read, strictly monotonic.
    pub dimension_coordinates: Vec<String>,
}

impl Report {
    pub fn errors(&self) -> usize {
        self.findings.iter().filter(|f| f.severity == Severity::Error).count()
    }

    pub fn warnings(&self) -> usize {
        self.findings.len() - self.errors()
    }
}

fn display_path(p: &str) -> String {
    format!("/{p}")
}

impl Checker<'_> {
    #[allow(clippy::too_many_arguments)]
    fn add(
        &mut self,
        severity: Severity,
        path: &str,
        rule: &'static str,
        section: &'static str,
        expected: impl Into<String>,
        found: impl Into<String>,
    ) {
        self.findings.push(Finding {
            severity,
            path: display_path(path),
            rule,
            section,
            expected: expected.into(),
            found: found.into(),
        });
    }
}

/// How far `check` goes beyond the parsed metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scope {
    /// Read dimension coordinate values to confirm they are monotonic.
    pub read_values: bool,
    /// Read every `zarr.json` and list the store to compare them with
    /// consolidated metadata.
    pub read_store: bool,
}

impl Scope {
    /// Everything (`nzfs check`).
    pub const FULL: Scope = Scope {
        read_values: true,
        read_store: true,
    };
    /// The parsed metadata only: what a mount can afford.
    pub const METADATA: Scope = Scope {
        read_values: false,
        read_store: false,
    };
}

/// Check the store behind `fs`. Dimension coordinate arrays are read (when
/// the scope says so) to confirm they are strictly monotonic; `progress` is
/// told `(done, total)` as they are.
pub fn check(fs: &NzFs, scope: Scope, progress: &mut dyn FnMut(usize, usize)) -> Report {
    let read_values = scope.read_values;
    let mut c = Checker {
        fs,
        findings: Vec::new(),
        coordinates: Vec::new(),
    };
    let h = fs.hierarchy();
    check_declaration(&mut c);
    let mut coordinates = Vec::new();
    for (id, node) in h.nodes.iter().enumerate() {
        match &node.kind {
            NodeKind::Broken { reason } => c.add(
                Severity::Error,
                &node.path,
                "zarr-v3-valid",
                "NZ §Normative Summary 1",
                "a valid Zarr v3 node",
                reason.clone(),
            ),
            NodeKind::Array(a) => {
                check_array(&mut c, &node.path, &a.metadata);
                let m = &a.metadata;
                if m.shape.len() == 1 && m.dimension_names[0].as_deref() == Some(node.name.as_str()) {
                    coordinates.push(id);
                }
            }
            NodeKind::Group { metadata } => {
                if let Some(g) = metadata {
                    check_attributes(&mut c, &node.path, &g.attributes, id == 0, false);
                }
                check_shared_dimensions(&mut c, id);
            }
        }
        if id > 0 {
            check_name(&mut c, &node.path, &node.name, "node");
        }
    }
    check_case_collisions(&mut c);
    if scope.read_store {
        check_consolidated(&mut c);
    }
    let total = coordinates.len();
    for (done, id) in coordinates.into_iter().enumerate() {
        if read_values {
            progress(done, total);
            if !check_monotonic(&mut c, id) {
                continue;
            }
        }
        c.coordinates.push(display_path(&h.nodes[id].path));
    }
    if read_values {
        progress(total, total);
    }
    c.findings
        .sort_by(|a, b| b.severity.cmp(&a.severity).then(a.path.cmp(&b.path)));
    Report {
        findings: c.findings,
        dimension_coordinates: c.coordinates,
    }
}

fn check_declaration(c: &mut Checker) {
    let h = c.fs.hierarchy();
    let attrs = match &h.nodes[0].kind {
        NodeKind::Group { metadata: Some(g) } => g.attributes.as_slice(),
        NodeKind::Array(a) => a.metadata.attributes.as_slice(),
        _ => &[],
    };
    let declared = attrs
        .iter()
        .filter(|(k, _)| k == "conventions" || k == "Conventions")
        .any(|(_, v)| {
            v.as_str()
                .is_some_and(|s| s.split_whitespace().any(|t| t.eq_ignore_ascii_case("NZ-1.0")))
        });
    if !declared {
        let found = attrs
            .iter()
            .find(|(k, _)| k == "conventions" || k == "Conventions")
            .map_or("no conventions attribute".to_string(), |(k, v)| format!("{k} = {v}"));
        c.add(
            Severity::Error,
            "",
            "convention-declaration",
            "NZ §Convention Declaration",
            "root attribute `conventions` (or `Conventions`) containing the token NZ-1.0",
            found,
        );
    }
}

fn check_array(c: &mut Checker, path: &str, m: &ArrayMetadata) {
    if !m.has_dimension_names && !m.shape.is_empty() {
        c.add(
            Severity::Error,
            path,
            "dimension-names",
            "NZ §Array",
            format!("`dimension_names` with {} names", m.shape.len()),
            "no dimension_names",
        );
    } else if m.has_dimension_names && m.dimension_names.iter().any(Option::is_none) {
        let shown: Vec<String> = m
            .dimension_names
            .iter()
            .map(|n| n.as_ref().map_or("null/\"\"".into(), |s| format!("{s:?}")))
            .collect();
        c.add(
            Severity::Error,
            path,
            "dimension-names",
            "NZ §Array",
            "no null or empty entries in dimension_names",
            format!("[{}]", shown.join(", ")),
        );
    }
    check_attributes(c, path, &m.attributes, false, true);
    if let Some((_, fv)) = m.attributes.iter().rev().find(|(k, _)| k == "_FillValue")
        && let Err(why) = fill_value_fits(fv, m.data_type)
    {
        c.add(
            Severity::Error,
            path,
            "fill-value-type",
            "NZ §The _FillValue Attribute",
            format!("a _FillValue of the array's data type {}", m.data_type.name()),
            format!("{fv} ({why})"),
        );
    }
}

/// A `_FillValue` attribute read as a number.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FillNumber {
    Int(i128),
    Float(f64),
}

impl FillNumber {
    /// The value as an integer, when it is one.
    pub fn integral(self) -> Option<i128> {
        match self {
            FillNumber::Int(i) => Some(i),
            FillNumber::Float(x) if x.fract() == 0.0 && x.abs() < 1.9e19 => Some(x as i128),
            FillNumber::Float(_) => None,
        }
    }

    pub fn as_f64(self) -> f64 {
        match self {
            FillNumber::Int(i) => i as f64,
            FillNumber::Float(x) => x,
        }
    }
}

/// Read a `_FillValue` attribute in any form writers use: a JSON number,
/// `"NaN"`, `"Infinity"`, `"-Infinity"`, or xarray's base64 of a
/// little-endian float64 (`"AAAAAICHw8A="` is -9999). The CDL header, the
/// virtual netCDF file and `nzfs check` all read it here.
pub fn fill_value_number(v: &Value) -> Result<FillNumber, String> {
    match v {
        Value::Int(i) => Ok(FillNumber::Int((*i).into())),
        Value::UInt(u) => Ok(FillNumber::Int((*u).into())),
        Value::Float(x) => Ok(FillNumber::Float(*x)),
        Value::Str(s) => match s.as_str() {
            "NaN" => Ok(FillNumber::Float(f64::NAN)),
            "Infinity" => Ok(FillNumber::Float(f64::INFINITY)),
            "-Infinity" => Ok(FillNumber::Float(f64::NEG_INFINITY)),
            b64 => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(b64)
                    .map_err(|_| "a string that is neither a number nor base64 float64".to_string())?;
                let b: [u8; 8] = bytes
                    .try_into()
                    .map_err(|_| "base64 of other than 8 bytes".to_string())?;
                Ok(FillNumber::Float(f64::from_le_bytes(b)))
            }
        },
        other => Err(format!("a JSON {}", other.kind())),
    }
}

/// Whether a `_FillValue` attribute can be a value of `dt`.
pub fn fill_value_fits(v: &Value, dt: DataType) -> Result<(), String> {
    if matches!(v, Value::Bool(_)) && dt == DataType::Bool {
        return Ok(());
    }
    let n = fill_value_number(v)?;
    match (dt, dt.int_range()) {
        (DataType::Float16 | DataType::Float32 | DataType::Float64, _) => Ok(()),
        (_, Some((lo, hi))) => match n.integral() {
            Some(i) if (lo..=hi).contains(&i) => Ok(()),
            _ => Err(format!("{} is outside {lo}..={hi} or not an integer", n.as_f64())),
        },
        (_, None) => Err(format!("no scalar value of {} to compare with", dt.name())),
    }
}

fn check_attributes(c: &mut Checker, path: &str, attrs: &[(String, Value)], is_root: bool, is_array: bool) {
    for (k, v) in attrs {
        check_name(c, path, k, "attribute");
        if let Value::Array(items) = v {
            let kinds: Vec<&str> = items
                .iter()
                .map(|i| match i {
                    Value::Int(_) | Value::UInt(_) | Value::Float(_) => "number",
                    other => other.kind(),
                })
                .collect();
            if kinds.windows(2).any(|w| w[0] != w[1]) {
                c.add(
                    Severity::Error,
                    path,
                    "homogeneous-attribute",
                    "NZ §Attribute Value Types",
                    format!("attribute `{k}`: an array of one JSON type"),
                    format!("{v} (mixes {})", dedup(&kinds).join(" and ")),
                );
            }
        }
        if (k == "conventions" || k == "Conventions") && (!is_root || !matches!(v, Value::Str(_))) {
            c.add(
                Severity::Error,
                path,
                "reserved-attribute",
                "NZ §Properties",
                "`conventions` only on the root group, as a string",
                format!("{k} = {v} on {}", if is_root { "the root" } else { "a non-root node" }),
            );
        }
        if k == "_FillValue" && !is_array {
            c.add(
                Severity::Error,
                path,
                "reserved-attribute",
                "NZ §Properties",
                "`_FillValue` only on arrays",
                "_FillValue on a group",
            );
        }
    }
}

fn dedup<'a>(kinds: &[&'a str]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for k in kinds {
        if !out.contains(k) {
            out.push(k);
        }
    }
    out
}

fn check_name(c: &mut Checker, path: &str, name: &str, what: &str) {
    let starts_with_letter = name.chars().next().is_some_and(|ch| ch.is_ascii_alphabetic());
    let plain = name.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_');
    // Reserved netCDF-style names such as _FillValue are defined, not user names.
    if name.starts_with('_') && what == "attribute" {
        return;
    }
    if !starts_with_letter || !plain {
        c.add(
            Severity::Warning,
            path,
            "naming",
            "NZ §Naming Rules",
            format!("{what} name starting with a letter, of letters, digits and underscores"),
            format!("{name:?}"),
        );
    }
}

fn check_case_collisions(c: &mut Checker) {
    let h = c.fs.hierarchy();
    let mut found = Vec::new();
    for node in &h.nodes {
        let mut seen: BTreeMap<String, &str> = BTreeMap::new();
        for &ch in &node.children {
            let name = h.nodes[ch].name.as_str();
            if let Some(other) = seen.insert(name.to_lowercase(), name) {
                found.push((node.path.clone(), other.to_string(), name.to_string()));
            }
        }
    }
    for (path, a, b) in found {
        c.add(
            Severity::Warning,
            &path,
            "naming",
            "NZ §Naming Rules",
            "no names that differ only by case",
            format!("{a:?} and {b:?}"),
        );
    }
}

fn check_shared_dimensions(c: &mut Checker, group: usize) {
    let h = c.fs.hierarchy();
    let mut lengths: BTreeMap<&str, (u64, &str)> = BTreeMap::new();
    let mut found = Vec::new();
    for &ch in &h.nodes[group].children {
        let NodeKind::Array(a) = &h.nodes[ch].kind else {
            continue;
        };
        for (label, &len) in a.metadata.dimension_names.iter().zip(&a.metadata.shape) {
            let Some(label) = label.as_deref() else { continue };
            match lengths.get(label) {
                Some(&(first_len, first)) if first_len != len => {
                    found.push((
                        label.to_string(),
                        first.to_string(),
                        first_len,
                        h.nodes[ch].name.clone(),
                        len,
                    ));
                }
                Some(_) => {}
                None => {
                    lengths.insert(label, (len, h.nodes[ch].name.as_str()));
                }
            }
        }
    }
    let path = h.nodes[group].path.clone();
    for (label, a, la, b, lb) in found {
        c.add(
            Severity::Error,
            &path,
            "shared-dimension",
            "NZ §Dimension",
            format!("dimension `{label}` of one length in the group"),
            format!("`{label}` is {la} in array {a:?} and {lb} in array {b:?}"),
        );
    }
}

fn check_consolidated(c: &mut Checker) {
    let h = c.fs.hierarchy();
    let Some(entries) = (match &h.nodes[0].kind {
        NodeKind::Group { metadata: Some(g) } => g.consolidated.clone(),
        _ => None,
    }) else {
        return;
    };
    let store = c.fs.store();
    for (path, doc) in &entries {
        let Ok(key) = join(path, "zarr.json") else { continue };
        let on_disk = store
            .get(&key, MAX_METADATA_BYTES)
            .ok()
            .flatten()
            .and_then(|b| json::parse(&b).ok());
        match on_disk {
            None => c.add(
                Severity::Error,
                path,
                "consolidated-metadata",
                "NZ §Consolidated Metadata",
                format!("{key} as the consolidated metadata describes it"),
                "no readable zarr.json there",
            ),
            Some(actual) if !same_document(&actual, doc) => c.add(
                Severity::Error,
                path,
                "consolidated-metadata",
                "NZ §Consolidated Metadata",
                format!("{key} equal to its consolidated entry"),
                "the two documents differ",
            ),
            Some(_) => {}
        }
    }
    // Nodes in the store that the consolidated view leaves out.
    let mut missing = Vec::new();
    list_unconsolidated(c, "", &entries, 0, &mut missing);
    for path in missing {
        c.add(
            Severity::Error,
            &path,
            "consolidated-metadata",
            "NZ §Consolidated Metadata",
            "every node listed in the root's consolidated metadata",
            "a node the consolidated metadata omits",
        );
    }
}

fn list_unconsolidated(c: &Checker, prefix: &str, entries: &[(String, Value)], depth: usize, out: &mut Vec<String>) {
    if depth > 32 {
        return;
    }
    let Ok(listing) = c.fs.store().list_dir(prefix) else {
        return;
    };
    for name in listing.prefixes {
        if name.starts_with("__") {
            continue;
        }
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        let Ok(key) = join(&path, "zarr.json") else { continue };
        let Ok(Some(bytes)) = c.fs.store().get(&key, MAX_METADATA_BYTES) else {
            list_unconsolidated(c, &path, entries, depth + 1, out);
            continue;
        };
        if !entries.iter().any(|(p, _)| *p == path) {
            out.push(path.clone());
        }
        if json::parse(&bytes).ok().and_then(|d| d.get("node_type").cloned()) == Some(Value::Str("group".into())) {
            list_unconsolidated(c, &path, entries, depth + 1, out);
        }
    }
}

/// Documents are equal as JSON values, member order aside, and ignoring
/// `consolidated_metadata` (zarr-python writes an empty or null one into
/// group entries, and none on disk).
fn same_document(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keep = |(k, _): &&(String, Value)| k != "consolidated_metadata";
            let x: Vec<_> = x.iter().filter(keep).collect();
            let y: Vec<_> = y.iter().filter(keep).collect();
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.iter().any(|(k2, v2)| k == k2 && same_document(v, v2)))
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_document(p, q)),
        (Value::Float(x), Value::Float(y)) => x == y || (x.is_nan() && y.is_nan()),
        (x, y) => x == y,
    }
}

/// Element `i` of a decoded 1-D chunk as f64, for the monotonic check.
fn element(chunk: &[u8], i: usize, dt: DataType) -> Option<f64> {
    let at = |n: usize| chunk.get(i * n..(i + 1) * n);
    Some(match dt {
        DataType::Int8 => f64::from(at(1)?[0] as i8),
        DataType::UInt8 => f64::from(at(1)?[0]),
        DataType::Int16 => f64::from(i16::from_ne_bytes(at(2)?.try_into().ok()?)),
        DataType::UInt16 => f64::from(u16::from_ne_bytes(at(2)?.try_into().ok()?)),
        DataType::Float16 => half::f16::from_ne_bytes(at(2)?.try_into().ok()?).to_f64(),
        DataType::Int32 => f64::from(i32::from_ne_bytes(at(4)?.try_into().ok()?)),
        DataType::UInt32 => f64::from(u32::from_ne_bytes(at(4)?.try_into().ok()?)),
        DataType::Float32 => f64::from(f32::from_ne_bytes(at(4)?.try_into().ok()?)),
        DataType::Int64 => i64::from_ne_bytes(at(8)?.try_into().ok()?) as f64,
        DataType::UInt64 => u64::from_ne_bytes(at(8)?.try_into().ok()?) as f64,
        DataType::Float64 => f64::from_ne_bytes(at(8)?.try_into().ok()?),
        DataType::Bool | DataType::Complex64 | DataType::Complex128 | DataType::Raw(_) => return None,
    })
}

/// Whether coordinate array `id` holds strictly monotonic values.
fn check_monotonic(c: &mut Checker, id: usize) -> bool {
    let node = &c.fs.hierarchy().nodes[id];
    let NodeKind::Array(a) = &node.kind else { return false };
    let m = &a.metadata;
    let (len, chunk_len) = (m.shape[0], m.chunk_shape[0]);
    let mut values = Vec::new();
    for index in 0..m.grid_shape()[0] {
        let chunk = match c.fs.chunk(id, index) {
            Ok(chunk) => chunk,
            Err(e) => {
                let path = node.path.clone();
                c.add(
                    Severity::Error,
                    &path,
                    "zarr-v3-valid",
                    "NZ §Normative Summary 1",
                    "a readable chunk",
                    e.to_string(),
                );
                return false;
            }
        };
        let n = chunk_len.min(len - index * chunk_len) as usize;
        for i in 0..n {
            let Some(v) = element(&chunk, i, m.data_type) else {
                return false;
            };
            values.push(v);
        }
    }
    let increasing = values.windows(2).all(|w| w[0] < w[1]);
    let decreasing = values.windows(2).all(|w| w[0] > w[1]);
    if !(increasing || decreasing) {
        // The first step that is flat or goes the other way than the first.
        let rising = values.len() > 1 && values[1] > values[0];
        let at = values
            .windows(2)
            .position(|w| !(if rising { w[1] > w[0] } else { w[1] < w[0] }));
        let mut found = String::from("values are not strictly monotonic");
        if let Some(i) = at {
            let _ = write!(found, " (index {i} to {}: {} then {})", i + 1, values[i], values[i + 1]);
        }
        let path = node.path.clone();
        c.add(
            Severity::Warning,
            &path,
            "dimension-coordinate",
            "NZ §Dimension Coordinate Array",
            "strictly monotonic values (it is named like its only dimension)",
            found,
        );
        return false;
    }
    true
}

/// The report as text: one line per finding, then the coordinates.
pub fn to_text(report: &Report) -> String {
    let mut out = String::new();
    for f in &report.findings {
        let _ = writeln!(
            out,
            "{:<7} {}: {} [{}]: expected {}; found {}",
            f.severity.as_str(),
            f.path,
            f.rule,
            f.section,
            f.expected,
            f.found
        );
    }
    if !report.dimension_coordinates.is_empty() {
        let _ = writeln!(
            out,
            "dimension coordinates: {}",
            report.dimension_coordinates.join(", ")
        );
    }
    out
}

/// The findings as a JSON document (shape documented in README.md).
pub fn to_json(store: &str, report: &Report) -> String {
    let s = |x: &str| Value::Str(x.to_string());
    let errors = report.errors();
    let items = report
        .findings
        .iter()
        .map(|f| {
            Value::Object(vec![
                ("severity".into(), s(f.severity.as_str())),
                ("path".into(), s(&f.path)),
                ("rule".into(), s(f.rule)),
                ("section".into(), s(f.section)),
                ("expected".into(), s(&f.expected)),
                ("found".into(), s(&f.found)),
            ])
        })
        .collect();
    Value::Object(vec![
        ("store".into(), s(store)),
        ("convention".into(), s("NZ-1.0")),
        ("conforms".into(), Value::Bool(errors == 0)),
        ("errors".into(), Value::Int(errors as i64)),
        ("warnings".into(), Value::Int(report.warnings() as i64)),
        ("findings".into(), Value::Array(items)),
        (
            "dimension_coordinates".into(),
            Value::Array(report.dimension_coordinates.iter().map(|p| s(p)).collect()),
        ),
    ])
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_values_that_fit_and_that_do_not() {
        assert!(fill_value_fits(&Value::Str("AAAAAICHw8A=".into()), DataType::Float32).is_ok());
        assert!(fill_value_fits(&Value::Int(255), DataType::UInt8).is_ok());
        assert!(fill_value_fits(&Value::Int(300), DataType::UInt8).is_err());
        assert!(fill_value_fits(&Value::Str("missing".into()), DataType::Int32).is_err());
        assert!(fill_value_fits(&Value::Str("NaN".into()), DataType::Int32).is_err());
        assert!(fill_value_fits(&Value::Float(1.5), DataType::Int16).is_err());
        assert!(fill_value_fits(&Value::Float(f64::NAN), DataType::Float64).is_ok());
        assert!(fill_value_fits(&Value::Bool(true), DataType::Bool).is_ok());
    }

    #[test]
    fn documents_compare_as_values() {
        let a = json::parse(br#"{"a": 1, "b": [NaN, 2], "consolidated_metadata": null}"#).unwrap();
        let b = json::parse(br#"{"b": [NaN, 2], "a": 1}"#).unwrap();
        assert!(same_document(&a, &b));
        let c = json::parse(br#"{"b": [NaN, 3], "a": 1}"#).unwrap();
        assert!(!same_document(&a, &c));
    }
}

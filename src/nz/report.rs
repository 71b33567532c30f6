//! `nzfs check` output: text for people, JSON for programs.

use std::fmt::Write;

use super::Report;
use crate::json::Value;

/// The report as text: one line per finding, then the coordinates.
pub fn to_text(report: &Report) -> String {
    let mut out = String::new();
    // A store that does not declare NZ-1.0 breaks none of its rules: its
    // findings are notes of what declaring it would need.
    let declared = report.declared();
    for f in &report.findings {
        let _ = writeln!(
            out,
            "{:<7} {}: {} [{}]: expected {}; found {}",
            if declared || super::counts_undeclared(f) {
                f.severity.as_str()
            } else {
                "note"
            },
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

/// The findings as a JSON document (shape documented in docs/usage.md).
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
        ("zarr_format".into(), Value::Int(report.zarr_format.into())),
        // A store that does not declare NZ-1.0 is plain Zarr: its findings
        // say what declaring it would need, not that it is broken.
        ("declared".into(), Value::Bool(report.declared())),
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

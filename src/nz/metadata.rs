//! NZ-1.0 rules on the parsed metadata alone: the `conventions`
//! declaration, array metadata (`_FillValue`, dimension names), attribute
//! and node names, case collisions, and shared dimensions.

use std::collections::BTreeMap;

use super::{Checker, Severity};
use crate::json::Value;
use crate::zarr::data_type::fill_value_fits;
use crate::zarr::hierarchy::NodeKind;
use crate::zarr::metadata::ArrayMetadata;

pub(super) fn check_declaration(c: &mut Checker) {
    let h = c.dataset.hierarchy();
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

pub(super) fn check_array(c: &mut Checker, path: &str, m: &ArrayMetadata) {
    if !m.has_dimension_names && !m.shape.is_empty() {
        c.add(
            Severity::Error,
            path,
            "dimension-names",
            "NZ §Array",
            if m.zarr_format == 2 {
                format!("`_ARRAY_DIMENSIONS` (Zarr v2) with {} names", m.shape.len())
            } else {
                format!("`dimension_names` with {} names", m.shape.len())
            },
            "no dimension names",
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
        && let Err(why) = fill_value_fits(fv, &m.data_type)
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

pub(super) fn check_attributes(c: &mut Checker, path: &str, attrs: &[(String, Value)], is_root: bool, is_array: bool) {
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

pub(super) fn check_name(c: &mut Checker, path: &str, name: &str, what: &str) {
    let starts_with_letter = name.chars().next().is_some_and(|ch| ch.is_ascii_alphabetic());
    let plain = name.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_');
    // Reserved netCDF-style names such as _FillValue are defined, not user names.
    if name.starts_with('_') && what == "attribute" {
        return;
    }
    // What header.cdl and the .nc show instead, when the name changes
    // there (crate::naming).
    let shown = crate::naming::netcdf(name);
    let found = match shown == name {
        true => format!("{name:?}"),
        false => format!("{name:?} (header.cdl and the .nc show it as {shown:?})"),
    };
    if !starts_with_letter || !plain {
        c.add(
            Severity::Warning,
            path,
            "naming",
            "NZ §Naming Rules",
            format!("{what} name starting with a letter, of letters, digits and underscores"),
            found,
        );
    } else if shown != name {
        c.add(
            Severity::Warning,
            path,
            "naming",
            "NZ §Naming Rules",
            format!("{what} name that CDL does not read as a keyword (data, group, int, NaN, ...)"),
            found,
        );
    }
}

pub(super) fn check_case_collisions(c: &mut Checker) {
    let h = c.dataset.hierarchy();
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

/// A dimension has one length across a group's arrays; the levels of an
/// OME-NGFF multiscale image are left out (that they differ in size is
/// the point of a pyramid).
pub(super) fn check_shared_dimensions(c: &mut Checker, group: usize) {
    let h = c.dataset.hierarchy();
    let mut lengths: BTreeMap<&str, (u64, &str)> = BTreeMap::new();
    let mut found = Vec::new();
    for &ch in &h.nodes[group].children {
        let NodeKind::Array(a) = &h.nodes[ch].kind else {
            continue;
        };
        if h.ngff_image_of(ch).is_some() {
            continue;
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::zarr::data_type::DataType;

    #[test]
    fn fill_values_that_fit_and_that_do_not() {
        assert!(fill_value_fits(&Value::Str("AAAAAICHw8A=".into()), &DataType::Float32).is_ok());
        assert!(fill_value_fits(&Value::Int(255), &DataType::UInt8).is_ok());
        assert!(fill_value_fits(&Value::Int(300), &DataType::UInt8).is_err());
        assert!(fill_value_fits(&Value::Str("missing".into()), &DataType::Int32).is_err());
        assert!(fill_value_fits(&Value::Str("NaN".into()), &DataType::Int32).is_err());
        assert!(fill_value_fits(&Value::Float(1.5), &DataType::Int16).is_err());
        assert!(fill_value_fits(&Value::Float(f64::NAN), &DataType::Float64).is_ok());
        assert!(fill_value_fits(&Value::Bool(true), &DataType::Bool).is_ok());
    }
}

//! NZ-1.0 rule on consolidated metadata: it must agree with the
//! `zarr.json` documents and the listing of the store.

use super::{Checker, Severity};
use crate::json::{self, Value};
use crate::store::join;
use crate::zarr::documents::ZARR_JSON;
use crate::zarr::hierarchy::{MAX_METADATA_BYTES, NodeKind};
use crate::zarr::metadata::{Document, parse_document};

pub(super) fn check_consolidated(c: &mut Checker) {
    let h = c.dataset.hierarchy();
    let Some(entries) = (match &h.nodes[0].kind {
        NodeKind::Group { metadata: Some(g) } => g.consolidated.clone(),
        _ => None,
    }) else {
        return;
    };
    let store = c.dataset.store();
    for (path, doc) in &entries {
        let Ok(key) = join(path, ZARR_JSON) else { continue };
        let on_disk = store
            .get(&key, MAX_METADATA_BYTES)
            .ok()
            .flatten()
            .and_then(|b| parse_document(&b, Document::Node).ok())
            .map(|(doc, _)| doc);
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
    let Ok(listing) = c.dataset.store().list_dir(prefix) else {
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
        let Ok(key) = join(&path, ZARR_JSON) else { continue };
        let Ok(Some(bytes)) = c.dataset.store().get(&key, MAX_METADATA_BYTES) else {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::json;

    #[test]
    fn documents_compare_as_values() {
        let a = json::parse(br#"{"a": 1, "b": [NaN, 2], "consolidated_metadata": null}"#).unwrap();
        let b = json::parse(br#"{"b": [NaN, 2], "a": 1}"#).unwrap();
        assert!(same_document(&a, &b));
        let c = json::parse(br#"{"b": [NaN, 3], "a": 1}"#).unwrap();
        assert!(!same_document(&a, &c));
    }
}

//! Consolidated metadata: the tree built from one document that lists
//! every node (zarr-python's inline `consolidated_metadata` in Zarr v3, a
//! Zarr v2 `.zmetadata`), without listing the store.
//!
//! Invariant: linear in the number of entries (nodes are found by
//! `(parent, name)` and attributes by path, each in a map built once);
//! invalid, repeated or array-nested paths are skipped with a warning.

use std::collections::HashMap;

use super::walk::v2_kind;
use super::{Hierarchy, NodeKind, is_valid_node_name, node_kind};
use crate::json::Value;
use crate::zarr::documents::{ZARRAY, ZATTRS, ZGROUP};
use crate::zarr::metadata::{MetadataError, NodeMetadata};

impl Hierarchy {
    /// Build the tree from zarr-python's inline consolidated `(path,
    /// document)` entries.
    pub(super) fn add_consolidated(&mut self, entries: &[(String, Value)]) {
        let kinds = entries
            .iter()
            .map(|(path, doc)| (path.clone(), node_kind(NodeMetadata::from_json(doc))))
            .collect();
        self.add_consolidated_kinds(kinds);
    }

    /// Place consolidated `(path, node kind)` entries in the tree, parents
    /// first; invalid, repeated or array-nested paths are skipped.
    fn add_consolidated_kinds(&mut self, mut entries: Vec<(String, NodeKind)>) {
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        // Every node by (parent, name), so that a million entries take
        // linear time, not a scan of the siblings each.
        let mut known: HashMap<(usize, String), usize> = self
            .nodes
            .iter()
            .enumerate()
            .filter_map(|(id, n)| Some(((n.parent?, n.name.clone()), id)))
            .collect();
        for (path, kind) in entries {
            let segments: Vec<&str> = path.split('/').collect();
            if !segments.iter().all(|s| is_valid_node_name(s)) {
                tracing::warn!(key = %path, "ignoring a consolidated metadata entry with an invalid path");
                continue;
            }
            let mut parent = 0;
            let mut ok = true;
            for seg in &segments[..segments.len() - 1] {
                parent = match known.get(&(parent, seg.to_string())) {
                    Some(&c) if matches!(self.nodes[c].kind, NodeKind::Group { .. }) => c,
                    Some(_) => {
                        ok = false;
                        break;
                    }
                    None => {
                        let c = self.push(Some(parent), seg, NodeKind::Group { metadata: None });
                        known.insert((parent, seg.to_string()), c);
                        c
                    }
                };
            }
            let name = segments[segments.len() - 1];
            if !ok || known.contains_key(&(parent, name.to_string())) {
                tracing::warn!(key = %path, "ignoring a consolidated metadata entry inside an array or repeated");
                continue;
            }
            if let NodeKind::Broken { reason, .. } = &kind {
                tracing::warn!(key = %path, %reason, "consolidated entry is unreadable");
            }
            let id = self.push(Some(parent), name, kind);
            known.insert((parent, name.to_string()), id);
        }
    }

    /// Build the tree from a Zarr v2 `.zmetadata` document.
    pub(super) fn add_consolidated_v2(&mut self, doc: &Value) -> Result<(), MetadataError> {
        let meta = match doc.get("metadata") {
            Some(m @ Value::Object(_)) => m,
            _ => {
                return Err(MetadataError::Invalid {
                    member: "metadata",
                    reason: "missing or not an object".into(),
                });
            }
        };
        self.consolidated = true;
        // Every `.zattrs` by its node's path, found once (the last of a
        // repeated key wins, as `Value::get` has it): a lookup per node
        // scanning the document made large stores mount in quadratic time.
        let mut all_attrs: HashMap<&str, &Value> = HashMap::new();
        for (k, v) in meta.as_object().unwrap_or_default() {
            if let Some(path) = k.strip_suffix(ZATTRS) {
                all_attrs.insert(path, v);
            }
        }
        let attrs = |path: &str| all_attrs.get(path).copied();
        let root = match (meta.get(ZGROUP), meta.get(ZARRAY)) {
            (_, Some(a)) => v2_kind(true, a, attrs(""), ZARRAY),
            (Some(g), None) => v2_kind(false, g, attrs(""), ZGROUP),
            (None, None) => NodeKind::Group { metadata: None },
        };
        let is_group = matches!(root, NodeKind::Group { .. });
        self.push(None, "", root);
        if !is_group {
            return Ok(());
        }
        let mut entries = Vec::new();
        for (k, v) in meta.as_object().unwrap_or_default() {
            let (path, name) = match (k.strip_suffix("/.zarray"), k.strip_suffix("/.zgroup")) {
                (Some(p), _) => (p, ZARRAY),
                (None, Some(p)) => (p, ZGROUP),
                _ => continue,
            };
            let kind = v2_kind(name == ZARRAY, v, attrs(&format!("{path}/")), name);
            entries.push((path.to_string(), kind));
        }
        self.add_consolidated_kinds(entries);
        Ok(())
    }
}

//! Discovering a hierarchy: which groups and arrays a store holds.
//!
//! With zarr-python's inline `consolidated_metadata` in the root `zarr.json`
//! the tree comes from it alone; otherwise the store is listed, recursively
//! (core spec, "Discover children of a group"). Prefixes with descendants
//! but no `zarr.json` are implicit groups.
//!
//! Invariants: node 0 is the root; every other node's name is a valid Zarr
//! node name (not empty, no `/`, not only periods, no `__` prefix, not
//! `zarr.json`); children are sorted by name; a node whose metadata cannot
//! be used is kept as [`NodeKind::Broken`] with the reason, so one bad node
//! never hides the rest.

use std::sync::Arc;

use super::json::Value;
use super::metadata::{ArrayMetadata, GroupMetadata, MetadataError, NodeMetadata};
use crate::store::{ReadableStore, StoreKey, join};

/// Deepest group nesting walked when listing a store.
const MAX_DEPTH: usize = 64;
/// Largest `zarr.json` read (64 MiB; consolidated metadata can be large).
pub const MAX_METADATA_BYTES: u64 = 64 << 20;

/// An array node: its parsed metadata. (Whether its codec chain can be
/// built is decided above this module, by `array::Dataset`, which marks the
/// node [`NodeKind::Broken`] when it cannot.)
#[derive(Debug)]
pub struct ArrayNode {
    pub metadata: ArrayMetadata,
}

#[derive(Debug, Clone)]
pub enum NodeKind {
    /// `metadata` is `None` for an implicit group.
    Group {
        metadata: Option<GroupMetadata>,
    },
    Array(Arc<ArrayNode>),
    /// A node nzfs cannot read, and why.
    Broken {
        reason: String,
    },
}

#[derive(Debug, Clone)]
pub struct Node {
    /// The hierarchy path without the leading `/` (`""` for the root).
    pub path: String,
    pub name: String,
    pub parent: Option<usize>,
    pub children: Vec<usize>,
    pub kind: NodeKind,
}

#[derive(Debug)]
pub struct Hierarchy {
    pub nodes: Vec<Node>,
    /// Whether the tree came from the root's consolidated metadata.
    pub consolidated: bool,
}

/// Why a store cannot be opened at all.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot read the store: {0}")]
    Io(#[from] std::io::Error),
    #[error("not a Zarr v3 store: no zarr.json at its root or below")]
    NotZarr,
    #[error("this is a Zarr v2 store (.zgroup/.zarray); nzfs reads Zarr v3")]
    ZarrV2,
    #[error("the root zarr.json is unusable: {0}")]
    BadRoot(MetadataError),
}

/// Whether `name` may name a node (core spec, "Node names").
pub fn is_valid_node_name(name: &str) -> bool {
    !name.is_empty()
        && !name.contains('/')
        && !name.contains('\0')
        && !name.chars().all(|c| c == '.')
        && !name.starts_with("__")
        && name != "zarr.json"
}

/// Interpret a metadata document (already parsed or not) as a node kind.
fn node_kind(parsed: Result<NodeMetadata, MetadataError>) -> NodeKind {
    match parsed {
        Ok(NodeMetadata::Group(g)) => NodeKind::Group { metadata: Some(g) },
        Ok(NodeMetadata::Array(a)) => NodeKind::Array(Arc::new(ArrayNode { metadata: *a })),
        Err(e) => NodeKind::Broken { reason: e.to_string() },
    }
}

impl Hierarchy {
    /// Discover the hierarchy of `store`.
    pub fn open(store: &dyn ReadableStore) -> Result<Hierarchy, OpenError> {
        let root_key = StoreKey::new("zarr.json").expect("valid key");
        let mut h = Hierarchy {
            nodes: Vec::new(),
            consolidated: false,
        };
        match store.get(&root_key, MAX_METADATA_BYTES)? {
            Some(bytes) => {
                let meta = NodeMetadata::parse(&bytes).map_err(|e| match e {
                    MetadataError::WrongFormat(_) => OpenError::ZarrV2,
                    e => OpenError::BadRoot(e),
                })?;
                let consolidated = match &meta {
                    NodeMetadata::Group(g) => g.consolidated.clone(),
                    NodeMetadata::Array(_) => None,
                };
                let is_group = matches!(meta, NodeMetadata::Group(_));
                h.push(None, "", node_kind(Ok(meta)));
                match consolidated {
                    Some(entries) => {
                        h.consolidated = true;
                        h.add_consolidated(&entries);
                    }
                    None if is_group => {
                        h.walk(store, 0, 0)?;
                    }
                    None => {}
                }
            }
            None => {
                let top = store.list_dir("")?;
                if top.keys.iter().any(|k| k == ".zgroup" || k == ".zarray") {
                    return Err(OpenError::ZarrV2);
                }
                h.push(None, "", NodeKind::Group { metadata: None });
                h.walk(store, 0, 0)?;
                if h.nodes.len() == 1 {
                    return Err(OpenError::NotZarr);
                }
            }
        }
        h.sort_children();
        Ok(h)
    }

    fn sort_children(&mut self) {
        for i in 0..self.nodes.len() {
            let mut children = std::mem::take(&mut self.nodes[i].children);
            children.sort_by(|&a, &b| self.nodes[a].name.cmp(&self.nodes[b].name));
            self.nodes[i].children = children;
        }
    }

    fn push(&mut self, parent: Option<usize>, name: &str, kind: NodeKind) -> usize {
        let path = match parent {
            None => String::new(),
            Some(p) if self.nodes[p].path.is_empty() => name.to_string(),
            Some(p) => format!("{}/{name}", self.nodes[p].path),
        };
        let id = self.nodes.len();
        self.nodes.push(Node {
            path,
            name: name.to_string(),
            parent,
            children: Vec::new(),
            kind,
        });
        if let Some(p) = parent {
            self.nodes[p].children.push(id);
        }
        id
    }

    /// List the children of group `id`; returns whether any node was found.
    fn walk(&mut self, store: &dyn ReadableStore, id: usize, depth: usize) -> Result<bool, OpenError> {
        if depth >= MAX_DEPTH {
            tracing::warn!(path = %self.nodes[id].path, "groups nested deeper than {MAX_DEPTH}; not listing further");
            return Ok(false);
        }
        let prefix = self.nodes[id].path.clone();
        let listing = match store.list_dir(&prefix) {
            Ok(l) => l,
            Err(e) if depth == 0 => return Err(e.into()),
            Err(e) => {
                tracing::warn!(prefix = %prefix, error = %e, "cannot list a group; its children are skipped");
                return Ok(false);
            }
        };
        let mut found = false;
        for name in listing.prefixes {
            if !is_valid_node_name(&name) {
                continue; // `__` prefixes and the like are never nodes
            }
            let Ok(key) = join(&prefix, &format!("{name}/zarr.json")) else {
                continue;
            };
            match store.get(&key, MAX_METADATA_BYTES) {
                Ok(Some(bytes)) => {
                    let kind = node_kind(NodeMetadata::parse(&bytes));
                    if let NodeKind::Broken { reason } = &kind {
                        tracing::warn!(key = %key, %reason, "node is unreadable");
                    }
                    let is_group = matches!(kind, NodeKind::Group { .. });
                    let child = self.push(Some(id), &name, kind);
                    if is_group {
                        self.walk(store, child, depth + 1)?;
                    }
                    found = true;
                }
                Ok(None) => {
                    // Perhaps an implicit group: keep it only if it holds nodes.
                    let child = self.push(Some(id), &name, NodeKind::Group { metadata: None });
                    if self.walk(store, child, depth + 1)? {
                        found = true;
                    } else {
                        self.pop_leaf(id, child);
                    }
                }
                Err(e) => {
                    tracing::warn!(key = %key, error = %e, "cannot read metadata; node is unreadable");
                    self.push(Some(id), &name, NodeKind::Broken { reason: e.to_string() });
                    found = true;
                }
            }
        }
        Ok(found)
    }

    /// Remove the most recently added subtree rooted at `child` of `parent`.
    fn pop_leaf(&mut self, parent: usize, child: usize) {
        self.nodes.truncate(child);
        self.nodes[parent].children.retain(|&c| c != child);
    }

    /// Build the tree from consolidated `(path, document)` entries.
    fn add_consolidated(&mut self, entries: &[(String, Value)]) {
        let mut sorted: Vec<&(String, Value)> = entries.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(&b.0));
        for (path, doc) in sorted {
            let segments: Vec<&str> = path.split('/').collect();
            if !segments.iter().all(|s| is_valid_node_name(s)) {
                tracing::warn!(key = %path, "ignoring a consolidated metadata entry with an invalid path");
                continue;
            }
            let mut parent = 0;
            let mut ok = true;
            for seg in &segments[..segments.len() - 1] {
                parent = match self.child(parent, seg) {
                    Some(c) if matches!(self.nodes[c].kind, NodeKind::Group { .. }) => c,
                    Some(_) => {
                        ok = false;
                        break;
                    }
                    None => self.push(Some(parent), seg, NodeKind::Group { metadata: None }),
                };
            }
            let name = segments[segments.len() - 1];
            if !ok || self.child(parent, name).is_some() {
                tracing::warn!(key = %path, "ignoring a consolidated metadata entry inside an array or repeated");
                continue;
            }
            let kind = node_kind(NodeMetadata::from_json(doc));
            if let NodeKind::Broken { reason } = &kind {
                tracing::warn!(key = %format!("{path}/zarr.json"), %reason, "node is unreadable (consolidated metadata)");
            }
            self.push(Some(parent), name, kind);
        }
    }

    /// The child of `id` called `name`.
    pub fn child(&self, id: usize, name: &str) -> Option<usize> {
        self.nodes[id]
            .children
            .iter()
            .copied()
            .find(|&c| self.nodes[c].name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    const ARRAY: &str = r#"{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]}"#;
    const GROUP: &str = r#"{"zarr_format": 3, "node_type": "group"}"#;

    fn names(h: &Hierarchy) -> Vec<String> {
        h.nodes.iter().map(|n| n.path.clone()).collect()
    }

    #[test]
    fn walks_explicit_implicit_and_broken_nodes() {
        let mut s = MemoryStore::default();
        s.insert("zarr.json", GROUP);
        s.insert("a/zarr.json", ARRAY);
        s.insert("a/c/0", vec![1, 2]);
        s.insert("imp/deep/x/zarr.json", ARRAY);
        s.insert("empty/notes.txt", "no nodes here");
        s.insert("__hidden/zarr.json", GROUP);
        s.insert("bad/zarr.json", "{not json");
        let h = Hierarchy::open(&s).unwrap();
        let mut paths = names(&h);
        paths.sort();
        assert_eq!(paths, ["", "a", "bad", "imp", "imp/deep", "imp/deep/x"]);
        let bad = h.child(0, "bad").unwrap();
        assert!(matches!(h.nodes[bad].kind, NodeKind::Broken { .. }));
    }

    #[test]
    fn consolidated_metadata_is_used_without_listing() {
        let root = format!(
            r#"{{"zarr_format": 3, "node_type": "group", "consolidated_metadata": {{"kind": "inline",
            "must_understand": false, "metadata": {{"g/arr": {ARRAY}, "g": {GROUP}, "../evil": {GROUP}, "__x": {GROUP}}}}}}}"#
        );
        let mut s = MemoryStore::default();
        s.insert("zarr.json", root);
        s.insert("unlisted/zarr.json", GROUP); // not in the consolidated view
        let h = Hierarchy::open(&s).unwrap();
        assert_eq!(names(&h), ["", "g", "g/arr"]);
    }

    #[test]
    fn open_errors() {
        assert!(matches!(
            Hierarchy::open(&MemoryStore::default()),
            Err(OpenError::NotZarr)
        ));
        let mut v2 = MemoryStore::default();
        v2.insert(".zgroup", "{}");
        assert!(matches!(Hierarchy::open(&v2), Err(OpenError::ZarrV2)));
        let mut broken = MemoryStore::default();
        broken.insert("zarr.json", "[]");
        assert!(matches!(Hierarchy::open(&broken), Err(OpenError::BadRoot(_))));
    }
}

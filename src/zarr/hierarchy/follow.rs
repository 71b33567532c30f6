//! Following a store's metadata while it is mounted: what a look at the
//! store costs, and how a hierarchy read again keeps the node numbers of
//! the one it replaces.
//!
//! [`Hierarchy::fingerprint`] is one look: the stamp of every metadata
//! document the hierarchy was read from (a node's `zarr.json`, or
//! `.zarray`/`.zgroup` and `.zattrs`, and `.zmetadata`), one `stat` (a
//! `HEAD` on object storage) each, and the names in each group's
//! directory, one listing each (a new array or group adds one); for a
//! hierarchy read from consolidated metadata, only the root's documents.
//! Never a look at a chunk. [`Hierarchy::look_at`] keeps what a look
//! found of each node, [`Hierarchy::differ`] names the nodes two looks
//! found different, and [`Hierarchy::with_documents_read_again`] reads
//! only their documents where only arrays' changed (an append), giving
//! what a read of the whole store would. [`Hierarchy::changed_since`] names the nodes
//! that differ once the metadata is read again. [`Hierarchy::keep_numbers_of`] gives a hierarchy read
//! again the node numbers of the one it replaces: a node at the same path
//! keeps its number (so its inodes name the same files), a new node takes
//! a number past the old ones, and a node no longer in the store leaves an
//! unlisted placeholder that reads as `EIO`. [`Hierarchy::without`] and
//! [`Hierarchy::with_node`] are the hierarchies a removal or a `mkdir` of
//! the mount's own leaves, without a read.
//!
//! Invariants: a parent comes before its children in the renumbered
//! hierarchy too; a fingerprint depends only on what the store holds, so
//! two looks at an unchanged store compare equal.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{Hierarchy, Node, NodeKind};
use crate::store::{ReadableStore, join};
use crate::zarr::documents::{ZARR_JSON, ZARRAY, ZATTRS, ZGROUP, ZMETADATA};

/// What one look at a hierarchy's metadata found: a hash of its
/// documents' stamps and its groups' names. Equal for two looks at an
/// unchanged store.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Fingerprint(u64);

impl Fingerprint {
    /// The hash.
    pub fn value(self) -> u64 {
        self.0
    }
}

/// The documents a node was read from, besides the consolidated one.
fn documents(node: &Node) -> Vec<&'static str> {
    match node.metadata_name() {
        Some(ZARRAY) => vec![ZARRAY, ZATTRS],
        Some(ZGROUP) => vec![ZGROUP, ZATTRS],
        Some(name) => vec![name],
        // Implicit or broken: whatever it may have become.
        None => vec![ZARR_JSON, ZARRAY, ZGROUP, ZATTRS],
    }
}

/// The hash of node `node` (number `id`)'s documents' stamps and, for a
/// group where `listed`, of its directory's names.
fn node_hash(store: &dyn ReadableStore, id: usize, node: &Node, listed: bool) -> u64 {
    let mut h = DefaultHasher::new();
    let mut docs = documents(node);
    if id == 0 {
        docs.push(ZMETADATA);
    }
    for doc in docs {
        match join(&node.path, doc).map(|k| store.stat(&k)) {
            Ok(Ok(stamp)) => stamp.map(|s| (s.len, s.version)).hash(&mut h),
            Ok(Err(e)) | Err(e) => format!("{:?}", e.kind()).hash(&mut h),
        }
    }
    if listed && !matches!(node.kind, NodeKind::Array(_)) {
        match store.list_dir(&node.path) {
            Ok(mut l) => {
                l.keys.sort();
                l.prefixes.sort();
                (l.keys, l.prefixes).hash(&mut h);
            }
            Err(e) => format!("{:?}", e.kind()).hash(&mut h),
        }
    }
    h.finish()
}

/// What one look found of each node: the hash of each node's documents
/// (and listing), in the order of the hierarchy looked at, and the hash of
/// that order's paths, which tells whether two looks were taken of the
/// same nodes. 8 bytes a node looked at.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeLooks {
    paths: u64,
    hashes: Vec<u64>,
}

impl Hierarchy {
    /// One look at the store's metadata as this hierarchy was read from it
    /// (see the module doc). A document or listing that cannot be read
    /// counts as its error's kind, so that a store that fails the same way
    /// twice compares equal.
    pub fn fingerprint(&self, store: &dyn ReadableStore) -> Fingerprint {
        self.look_at(store).0
    }

    /// [`Hierarchy::fingerprint`], and what it found of each node, for
    /// [`Hierarchy::differ`].
    pub fn look_at(&self, store: &dyn ReadableStore) -> (Fingerprint, NodeLooks) {
        let nodes = self.looked_at();
        let hashes: Vec<std::sync::Mutex<u64>> = nodes.iter().map(|_| Default::default()).collect();
        let next = AtomicUsize::new(0);
        let work = || {
            loop {
                let id = next.fetch_add(1, Ordering::Relaxed);
                let Some(node) = nodes.get(id) else { break };
                let mut h = DefaultHasher::new();
                (&node.path, node_hash(store, id, node, !self.consolidated)).hash(&mut h);
                *crate::sync::lock(&hashes[id]) = h.finish();
            }
        };
        // As many at once as the store serves well (a round trip each on
        // object storage).
        crate::sync::on_threads(store.profile().concurrency.min(nodes.len()).max(1), "nzfs-follow", work);
        let hashes: Vec<u64> = hashes.into_iter().map(crate::sync::into_inner).collect();
        let mut h = DefaultHasher::new();
        hashes.hash(&mut h);
        let looks = NodeLooks {
            paths: self.paths_hash(),
            hashes,
        };
        (Fingerprint(h.finish()), looks)
    }

    /// The nodes a look looks at. Read from consolidated metadata, the
    /// hierarchy is the root's documents': a node added without
    /// consolidating again is not shown, so only they are looked at (two
    /// requests).
    fn looked_at(&self) -> &[Node] {
        match self.consolidated {
            true => &self.nodes[..self.nodes.len().min(1)],
            false => &self.nodes[..],
        }
    }

    fn paths_hash(&self) -> u64 {
        let mut h = DefaultHasher::new();
        for n in self.looked_at() {
            n.path.hash(&mut h);
        }
        h.finish()
    }

    /// The nodes of this hierarchy whose documents (or, for a group, whose
    /// listing) differ between looks `before` and `now`; `None` unless
    /// both were taken of this hierarchy's nodes.
    pub fn differ(&self, before: &NodeLooks, now: &NodeLooks) -> Option<Vec<usize>> {
        let paths = self.paths_hash();
        let n = self.looked_at().len();
        if before.paths != paths || now.paths != paths || before.hashes.len() != n || now.hashes.len() != n {
            return None;
        }
        Some((0..n).filter(|&i| before.hashes[i] != now.hashes[i]).collect())
    }

    /// This hierarchy (as served: see [`Hierarchy::keep_numbers_of`]) as a
    /// read of `store` gives it now, where only the documents of nodes
    /// `changed` (as [`Hierarchy::differ`] names them) may differ since it
    /// was read: their documents read again, every other node as it is
    /// (an array shared, so that it is the same array). `None` where
    /// that would not be what a read gives, and the store is read whole: a
    /// hierarchy of consolidated metadata or past its budget; a changed
    /// node that is the root, a group or unreadable, one below an OME-Zarr
    /// image (whose levels take the image's axis names), or one that is no
    /// longer an array of the same Zarr format (a group now, or gone).
    pub fn with_documents_read_again(&self, store: &dyn ReadableStore, changed: &[usize]) -> Option<Hierarchy> {
        if self.consolidated || self.budget.read > self.budget.limit {
            return None;
        }
        let mut paths = std::collections::HashSet::with_capacity(changed.len());
        for &i in changed {
            let n = self.nodes.get(i)?;
            if n.parent.is_none() || !matches!(n.kind, NodeKind::Array(_)) || self.in_image(i) {
                return None;
            }
            paths.insert(n.path.as_str());
        }
        let mut h = self.as_read();
        let at: Vec<usize> = (0..h.nodes.len())
            .filter(|&i| paths.contains(h.nodes[i].path.as_str()))
            .collect();
        for i in at {
            let NodeKind::Array(old) = &h.nodes[i].kind else {
                return None;
            };
            let format = old.metadata.zarr_format;
            let path = h.nodes[i].path.clone();
            h.budget.read = h.budget.read.saturating_sub(h.nodes[i].kept);
            let (kind, kept) = h.kind_of(&path, super::walk::find(store, &path, super::MAX_METADATA_BYTES))?;
            match &kind {
                NodeKind::Array(a) if a.metadata.zarr_format == format => {}
                NodeKind::Broken { .. } => {}
                _ => return None,
            }
            h.nodes[i].kind = kind;
            h.nodes[i].kept = kept;
        }
        (h.budget.read <= h.budget.limit).then_some(h)
    }

    /// Whether a group above node `n` describes an OME-Zarr image.
    fn in_image(&self, n: usize) -> bool {
        let mut at = self.nodes[n].parent;
        while let Some(p) = at {
            if let NodeKind::Group { metadata: Some(g) } = &self.nodes[p].kind
                && super::ngff_attribute(&g.attributes, "multiscales").is_some()
            {
                return true;
            }
            at = self.nodes[p].parent;
        }
        false
    }

    /// The nodes of this hierarchy (read again, and renumbered by
    /// [`Hierarchy::keep_numbers_of`] `old`) that differ from `old`'s: new,
    /// removed, or with other metadata or other children.
    pub fn changed_since(&self, old: &Hierarchy) -> Vec<usize> {
        // An array shared with the old hierarchy (a version made from it
        // without a read) is the same array; no child name is copied.
        let same_kind = |o: &NodeKind, n: &NodeKind| match (o, n) {
            (NodeKind::Array(a), NodeKind::Array(b)) => Arc::ptr_eq(a, b) || a == b,
            (o, n) => o == n,
        };
        let same_children = |o: &Node, n: &Node| {
            o.children.len() == n.children.len()
                && o.children
                    .iter()
                    .zip(&n.children)
                    .all(|(&a, &b)| old.nodes[a].name == self.nodes[b].name)
        };
        (0..self.nodes.len())
            .filter(|&i| match old.nodes.get(i) {
                None => true,
                Some(o) => !same_kind(&o.kind, &self.nodes[i].kind) || !same_children(o, &self.nodes[i]),
            })
            .collect()
    }

    /// This hierarchy as its store holds it once node `path` and all below
    /// it are removed (a commit of the mount's own, on the version this
    /// was read at): what reading that store would give, made without
    /// reading it. `None` for the root or a path that is no node.
    ///
    /// The placeholders of nodes removed earlier
    /// ([`Hierarchy::keep_numbers_of`]) are left out, as a read leaves
    /// them out; the documents read are counted as they were (what was
    /// read, so an upper bound).
    pub fn without(&self, path: &str) -> Option<Hierarchy> {
        let removed = self.nodes.iter().position(|n| n.path == path && n.parent.is_some())?;
        Some(self.kept(Some(removed)))
    }

    /// This hierarchy as its store holds it once node `path` is made with
    /// metadata document `document` (a `mkdir` of the mount's own, on the
    /// version this was read at), made without reading the store. `None`
    /// where `path` is there already or its parent is no group.
    pub fn with_node(&self, path: &str, document: &[u8]) -> Option<Hierarchy> {
        let (parent, name) = path.rsplit_once('/').unwrap_or(("", path));
        let mut h = self.as_read();
        if !super::is_valid_node_name(name) || h.nodes.iter().any(|n| n.path == path) {
            return None;
        }
        let at = h.nodes.iter().position(|n| n.path == parent)?;
        if !matches!(h.nodes[at].kind, NodeKind::Group { .. }) {
            return None;
        }
        let new = h.nodes.len();
        h.nodes.push(Node {
            path: path.to_string(),
            name: name.to_string(),
            parent: Some(at),
            children: Vec::new(),
            kind: super::node_kind(crate::zarr::metadata::NodeMetadata::parse(document)),
            kept: 0,
        });
        let names: Vec<&str> = h.nodes[at].children.iter().map(|&c| h.nodes[c].name.as_str()).collect();
        let slot = names.partition_point(|&n| n < name);
        h.nodes[at].children.insert(slot, new);
        Some(h)
    }

    /// This hierarchy as a read of its store gives it: without the
    /// placeholders of removed nodes ([`Hierarchy::without`]).
    pub fn as_read(&self) -> Hierarchy {
        self.kept(None)
    }

    /// This hierarchy without its placeholders, and without node
    /// `removed` and all below it.
    fn kept(&self, removed: Option<usize>) -> Hierarchy {
        let placeholder = |i: usize| i != 0 && self.nodes[i].parent.is_none();
        // Whether each node goes: the placeholders, the removed node, and
        // every node below it.
        let mut gone: Vec<bool> = (0..self.nodes.len()).map(placeholder).collect();
        let mut below: Vec<usize> = removed.into_iter().collect();
        while let Some(i) = below.pop() {
            gone[i] = true;
            below.extend(self.nodes[i].children.iter().copied().filter(|&c| !gone[c]));
        }
        let mut number = vec![usize::MAX; self.nodes.len()];
        let mut at = 0;
        for (i, n) in number.iter_mut().enumerate() {
            if !gone[i] {
                *n = at;
                at += 1;
            }
        }
        let nodes = self
            .nodes
            .iter()
            .enumerate()
            .filter(|&(i, _)| !gone[i])
            .map(|(_, n)| Node {
                path: n.path.clone(),
                name: n.name.clone(),
                parent: n.parent.map(|p| number[p]),
                children: n.children.iter().filter(|&&c| !gone[c]).map(|&c| number[c]).collect(),
                kind: n.kind.clone(),
                kept: n.kept,
            })
            .collect();
        Hierarchy {
            nodes,
            consolidated: self.consolidated,
            zarr_format: self.zarr_format,
            budget: super::Budget {
                read: self.budget.read,
                limit: self.budget.limit,
            },
        }
    }

    /// Renumber this hierarchy (read again) so that every node `old` also
    /// has keeps its number; see the module doc.
    pub fn keep_numbers_of(&mut self, old: &Hierarchy) {
        let mut by_path: HashMap<&str, usize> = HashMap::with_capacity(self.nodes.len());
        for (i, n) in self.nodes.iter().enumerate() {
            by_path.insert(n.path.as_str(), i);
        }
        // new number of each node read now, and what fills each number.
        let mut number = vec![usize::MAX; self.nodes.len()];
        let mut order: Vec<Option<usize>> = Vec::with_capacity(old.nodes.len().max(self.nodes.len()));
        for o in &old.nodes {
            let now = by_path.get(o.path.as_str()).copied();
            if let Some(i) = now {
                number[i] = order.len();
            }
            order.push(now);
        }
        // Nodes read now in their order (a parent before its children).
        for (i, n) in number.iter_mut().enumerate() {
            if *n == usize::MAX {
                *n = order.len();
                order.push(Some(i));
            }
        }
        let mut read: Vec<Option<Node>> = std::mem::take(&mut self.nodes).into_iter().map(Some).collect();
        self.nodes = order
            .iter()
            .enumerate()
            .map(|(at, from)| match from.and_then(|i| read[i].take()) {
                Some(mut n) => {
                    n.parent = n.parent.map(|p| number[p]);
                    for c in &mut n.children {
                        *c = number[*c];
                    }
                    n
                }
                None => {
                    let o = &old.nodes[at];
                    Node {
                        path: o.path.clone(),
                        name: o.name.clone(),
                        parent: None,
                        children: Vec::new(),
                        kind: NodeKind::broken("no longer in the store (removed since the mount)"),
                        kept: 0,
                    }
                }
            })
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    const GROUP: &str = r#"{"zarr_format": 3, "node_type": "group"}"#;
    const ARRAY: &str = r#"{"zarr_format": 3, "node_type": "array", "shape": [4], "data_type": "uint8",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]}"#;

    fn paths(h: &Hierarchy) -> Vec<&str> {
        h.nodes.iter().map(|n| n.path.as_str()).collect()
    }

    /// A node at the same path keeps its number, a new one comes after,
    /// a removed one leaves an unlisted placeholder; parents and children
    /// follow the numbers.
    #[test]
    fn a_hierarchy_read_again_keeps_the_numbers_of_the_old() {
        let mut m = MemoryStore::default();
        m.insert("zarr.json", GROUP.to_string());
        for p in ["a/zarr.json", "b/zarr.json", "b/x/zarr.json"] {
            m.insert(
                p,
                if p.contains('x') || p.starts_with('a') {
                    ARRAY
                } else {
                    GROUP
                }
                .to_string(),
            );
        }
        let old = Hierarchy::open(&m).unwrap();
        m.remove("a/zarr.json");
        m.insert("0new/zarr.json", ARRAY.to_string());
        m.insert("b/y/zarr.json", ARRAY.to_string());
        let mut now = Hierarchy::open(&m).unwrap();
        now.keep_numbers_of(&old);
        let before = paths(&old);
        assert_eq!(&paths(&now)[..before.len()], &before[..]);
        let a = before.iter().position(|p| *p == "a").unwrap();
        assert!(matches!(now.nodes[a].kind, NodeKind::Broken { .. }));
        assert!(!now.nodes[0].children.contains(&a), "a removed node is not listed");
        for (i, n) in now.nodes.iter().enumerate() {
            for &c in &n.children {
                assert!(c > i, "a parent before its children");
                assert_eq!(now.nodes[c].parent, Some(i));
                assert!(now.nodes[c].path.starts_with(&n.path));
            }
        }
        let mut listed: Vec<&str> = now.nodes[0]
            .children
            .iter()
            .map(|&c| now.nodes[c].name.as_str())
            .collect();
        listed.sort();
        assert_eq!(listed, ["0new", "b"]);
    }

    /// The shape of `h`: each node's path, kind, parent's path and
    /// children's names.
    fn shape(h: &Hierarchy) -> Vec<(String, NodeKind, Option<String>, Vec<String>)> {
        h.nodes
            .iter()
            .map(|n| {
                (
                    n.path.clone(),
                    n.kind.clone(),
                    n.parent.map(|p| h.nodes[p].path.clone()),
                    n.children.iter().map(|&c| h.nodes[c].name.clone()).collect(),
                )
            })
            .collect()
    }

    /// A hierarchy without a node (and all below it) is the one the store
    /// gives once the node's documents are gone, placeholders of nodes
    /// removed before left out; the root and a path that is no node give
    /// none. One with a node made is the one the store gives with its
    /// document there.
    #[test]
    fn a_hierarchy_without_a_node_is_what_a_read_gives_once_it_is_removed() {
        let mut m = MemoryStore::default();
        m.insert("zarr.json", GROUP.to_string());
        for (p, doc) in [
            ("a", ARRAY),
            ("b", GROUP),
            ("b/x", ARRAY),
            ("b/y", GROUP),
            ("b/y/z", ARRAY),
            ("c", GROUP),
            ("c/w", ARRAY),
        ] {
            m.insert(&format!("{p}/zarr.json"), doc.to_string());
        }
        let first = Hierarchy::open(&m).unwrap();
        m.remove("a/zarr.json");
        let mut served = Hierarchy::open(&m).unwrap();
        served.keep_numbers_of(&first);
        assert!(served.nodes.iter().any(|n| n.path == "a" && n.parent.is_none()));
        for k in ["b/zarr.json", "b/x/zarr.json", "b/y/zarr.json", "b/y/z/zarr.json"] {
            m.remove(k);
        }
        let derived = served.without("b").unwrap();
        assert_eq!(shape(&derived), shape(&Hierarchy::open(&m).unwrap()));
        assert_eq!(paths(&derived), ["", "c", "c/w"]);
        assert!(served.without("").is_none());
        assert!(served.without("nothing").is_none());
        assert!(served.without("a").is_none(), "a placeholder is no node");
        assert_eq!(paths(&served.as_read()), ["", "b", "b/x", "b/y", "b/y/z", "c", "c/w"]);
        // A node made: what the store gives with its document there.
        m.insert("c/new/zarr.json", GROUP.to_string());
        let made = derived.with_node("c/new", GROUP.as_bytes()).unwrap();
        let mut read = shape(&Hierarchy::open(&m).unwrap());
        let mut made = shape(&made);
        read.sort_by(|a, b| a.0.cmp(&b.0));
        made.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(made, read);
        assert!(derived.with_node("c", GROUP.as_bytes()).is_none(), "there already");
        assert!(derived.with_node("c/w/x", GROUP.as_bytes()).is_none(), "below an array");
        assert!(derived.with_node("nothing/x", GROUP.as_bytes()).is_none(), "no parent");
    }

    /// Two looks at an unchanged store compare equal; a document rewritten
    /// or a name added changes the look, and the nodes read again that
    /// differ are the changed ones.
    #[test]
    fn a_look_finds_changed_documents_and_new_names() {
        let mut m = MemoryStore::default();
        m.insert("zarr.json", GROUP.to_string());
        m.insert("a/zarr.json", ARRAY.to_string());
        let h = Hierarchy::open(&m).unwrap();
        let first = h.fingerprint(&m);
        assert_eq!(first, h.fingerprint(&m));
        m.insert("a/zarr.json", ARRAY.replace("[4]", "[16]"));
        let second = h.fingerprint(&m);
        assert_ne!(first, second);
        m.insert("b/zarr.json", ARRAY.to_string());
        assert_ne!(second, h.fingerprint(&m));
        // Chunks are not metadata.
        let third = h.fingerprint(&m);
        m.insert("a/c/0", vec![1u8, 2]);
        assert_eq!(third, h.fingerprint(&m));
        let mut now = Hierarchy::open(&m).unwrap();
        now.keep_numbers_of(&h);
        let changed: Vec<&str> = now
            .changed_since(&h)
            .iter()
            .map(|&i| now.nodes[i].path.as_str())
            .collect();
        assert_eq!(changed, ["", "a", "b"]);
    }

    /// A store of arrays that a look and a read of only what changed
    /// compares with a read of the whole store.
    fn followed() -> MemoryStore {
        let mut m = MemoryStore::default();
        m.insert("zarr.json", GROUP.to_string());
        m.insert("g/zarr.json", GROUP.to_string());
        m.insert("g/a/zarr.json", ARRAY.to_string());
        m.insert("g/b/zarr.json", ARRAY.to_string());
        m.insert("v2/.zarray", V2_ARRAY.to_string());
        m.insert("v2/.zattrs", r#"{"units": "m"}"#.to_string());
        let image = r#"{"zarr_format": 3, "node_type": "group", "attributes": {"ome": {"version": "0.5",
            "multiscales": [{"axes": [{"name": "x", "type": "space"}], "datasets": [{"path": "0",
            "coordinateTransformations": [{"type": "scale", "scale": [1.0]}]}]}]}}}"#;
        m.insert("img/zarr.json", image.to_string());
        m.insert("img/0/zarr.json", ARRAY.to_string());
        m
    }

    const V2_ARRAY: &str = r#"{"zarr_format": 2, "shape": [4], "chunks": [2], "dtype": "<u1",
        "compressor": null, "fill_value": 0, "order": "C", "filters": null}"#;

    /// What reading only the changed documents gives for `change` made to
    /// `followed()`: `None` where the store must be read whole, else the
    /// hierarchy, checked against a read of the whole store (its shape and
    /// its documents' bytes) and found to share every unchanged array.
    fn read_changed(change: impl FnOnce(&mut MemoryStore)) -> Option<Vec<String>> {
        let mut m = followed();
        let served = Hierarchy::open(&m).unwrap();
        let (_, before) = served.look_at(&m);
        change(&mut m);
        let (_, now) = served.look_at(&m);
        let changed = served.differ(&before, &now).expect("two looks of the same nodes");
        let names: Vec<String> = changed.iter().map(|&i| served.nodes[i].path.clone()).collect();
        let got = served.with_documents_read_again(&m, &changed)?;
        let read = Hierarchy::open(&m).unwrap();
        assert_eq!(shape(&got), shape(&read));
        assert_eq!(got.document_bytes(), read.document_bytes());
        assert_eq!(got.zarr_format, read.zarr_format);
        for (old, new) in served.nodes.iter().zip(&got.nodes) {
            if let (NodeKind::Array(o), NodeKind::Array(n)) = (&old.kind, &new.kind)
                && !names.contains(&old.path)
            {
                assert!(Arc::ptr_eq(o, n), "{}: the same array", old.path);
            }
        }
        Some(names)
    }

    /// An array's documents changed (resized, its attributes, written
    /// broken): only they are read again, and the hierarchy is a whole
    /// read's. A group's documents or names, an image's level, an array
    /// become a group or gone: the store is read whole.
    #[test]
    fn only_the_changed_arrays_documents_are_read_again_where_a_read_would_give_the_same() {
        let resized = read_changed(|m| m.insert("g/a/zarr.json", ARRAY.replace("[4]", "[16]")));
        assert_eq!(resized.unwrap(), ["g/a"]);
        let both = read_changed(|m| {
            // (Another length: a memory store gives every object version 0.)
            m.insert("g/a/zarr.json", ARRAY.replace("[4]", "[64]"));
            m.insert("v2/.zattrs", r#"{"units": "km", "long_name": "depth"}"#.to_string());
        });
        assert_eq!(both.unwrap(), ["g/a", "v2"]);
        let broken = read_changed(|m| m.insert("g/b/zarr.json", "{not json".to_string()));
        assert_eq!(broken.unwrap(), ["g/b"]);
        let group = r#"{"zarr_format": 3, "node_type": "group", "attributes": {"title": "t"}}"#;
        assert!(read_changed(|m| m.insert("g/zarr.json", group.to_string())).is_none());
        assert!(read_changed(|m| m.insert("g/c/zarr.json", ARRAY.to_string())).is_none());
        assert!(read_changed(|m| m.insert("img/0/zarr.json", ARRAY.replace("[4]", "[64]"))).is_none());
        assert!(read_changed(|m| m.insert("g/a/zarr.json", GROUP.to_string())).is_none());
        assert!(read_changed(|m| m.remove("g/b/zarr.json")).is_none());
        let v2 = read_changed(|m| {
            m.remove("g/a/zarr.json");
            m.insert("g/a/.zarray", V2_ARRAY.to_string());
        });
        assert!(v2.is_none(), "another Zarr format");
    }

    /// Documents that outgrow the budget are not read alone: a read of
    /// the whole store decides which node goes unread.
    #[test]
    fn a_change_past_the_documents_budget_reads_the_store_whole() {
        let mut m = followed();
        let full = Hierarchy::open(&m).unwrap().document_bytes();
        let served = Hierarchy::open_within(&m, full + 8).unwrap();
        let (_, before) = served.look_at(&m);
        let big = ARRAY.replace(
            "\"fill_value\": 0",
            "\"fill_value\": 0, \"attributes\": {\"history\": \"a long history of it\"}",
        );
        m.insert("g/a/zarr.json", big);
        let (_, now) = served.look_at(&m);
        let changed = served.differ(&before, &now).unwrap();
        assert!(served.with_documents_read_again(&m, &changed).is_none());
        // Two looks of other nodes name none.
        let other = Hierarchy::open(&m).unwrap().without("g/b").unwrap();
        assert!(other.differ(&before, &now).is_none());
    }
}

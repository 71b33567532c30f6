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
mod tests;

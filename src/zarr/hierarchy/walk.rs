//! Discovering a hierarchy by listing the store, where no consolidated
//! metadata says what it holds.
//!
//! Two passes. The first ([`Scan::of`]) reads the whole tree concurrently:
//! every group's listing and every child's metadata documents are tasks of
//! one queue that several workers share, so the groups of a deep tree (a
//! plate's rows, wells and fields) are read at once, not one after the
//! other, and a store of many nodes costs a few round trips per level
//! rather than one per node (object storage) and keeps a disk busy (a cold
//! local store). The second walks the tree in name order, one node at a
//! time, taking what the first read (and reading what it did not): each
//! document is parsed, counted against the budget and added as a walk
//! without concurrency would, so the tree, the budget's verdicts and the
//! log lines do not depend on which request answered first.
//!
//! Memory: the first pass holds at most [`SCAN_BYTES`] of documents (a
//! `zarr.json` parsed, as the hierarchy keeps it), each at most
//! [`PROBE_BYTES`]; past that it stops, and the second reads the
//! rest a batch of at most [`BATCH`] at a time. A document larger than
//! [`PROBE_BYTES`] (up to [`super::MAX_METADATA_BYTES`]) is read again
//! alone when its turn comes.

use crate::sync::lock;
use std::collections::{HashMap, VecDeque};
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use super::{
    ArrayNode, Budget, Hierarchy, MAX_DEPTH, MAX_METADATA_BYTES, MAX_NODES, NodeKind, OpenError, is_valid_node_name,
    node_kind,
};
use crate::json::Value;
use crate::store::{Listing, ReadableStore, StoreKey, is_too_large, join};
use crate::zarr::documents::{ZARR_JSON, ZARRAY, ZATTRS, ZGROUP};
use crate::zarr::metadata::{Document, NodeMetadata, parse_document};
use crate::zarr::v2;

/// Children whose documents one batch reads at once.
const BATCH: usize = 256;
/// The most bytes of one document read in a batch.
const PROBE_BYTES: u64 = 256 << 10;
/// Requests in flight while reading a batch: the store's own concurrency,
/// but at least this many (small reads that a disk serves better queued).
const MIN_WORKERS: usize = 8;
/// And at most this many.
const MAX_WORKERS: usize = 32;
/// The most bytes of documents the first pass holds.
const SCAN_BYTES: u64 = 64 << 20;
/// The most listings and documents the first pass holds.
const SCAN_ENTRIES: usize = 1 << 20;

/// The documents of a Zarr v2 node, as read.
pub(super) struct V2Docs {
    /// `.zarray` or `.zgroup`.
    key: StoreKey,
    array: bool,
    doc: Vec<u8>,
    attrs_key: StoreKey,
    attrs: Option<Vec<u8>>,
}

/// What a child prefix holds.
pub(super) enum Found {
    /// A `zarr.json`, parsed where it was read (by a worker of the first
    /// pass): its length as read, and the document with the bytes kept.
    V3 {
        key: StoreKey,
        len: u64,
        parsed: Result<(Value, usize), crate::json::JsonError>,
    },
    V2(V2Docs),
    /// No metadata: perhaps an implicit group.
    Nothing,
}

impl Found {
    /// The bytes it holds.
    fn bytes(&self) -> u64 {
        match self {
            Found::V3 { len, .. } => *len,
            Found::V2(d) => (d.doc.len() + d.attrs.as_ref().map_or(0, Vec::len)) as u64,
            Found::Nothing => 0,
        }
    }

    /// Whether its prefix may hold nodes of its own: a group, or a prefix
    /// with no metadata (perhaps an implicit group).
    fn may_hold_nodes(&self) -> bool {
        match self {
            Found::V3 { parsed, .. } => parsed
                .as_ref()
                .is_ok_and(|(d, _)| d.get("node_type").and_then(Value::as_str) == Some("group")),
            Found::V2(d) => !d.array,
            Found::Nothing => true,
        }
    }
}

/// What the first pass read: listings of group prefixes, and what child
/// prefixes hold, each taken once by the second.
#[derive(Default)]
pub(super) struct Scan {
    listings: HashMap<String, io::Result<Listing>>,
    found: HashMap<String, io::Result<Found>>,
}

/// The store and what the first pass read of it, for the second.
struct Reader<'a> {
    store: &'a dyn ReadableStore,
    scan: Scan,
    /// Requests in flight in either pass.
    workers: usize,
    /// The most nodes the walk makes ([`MAX_NODES`]; less in tests).
    max_nodes: usize,
}

enum Task {
    List { prefix: String, depth: usize },
    Find { path: String, depth: usize },
}

#[derive(Default)]
struct Queue {
    tasks: VecDeque<Task>,
    running: usize,
    held: u64,
    full: bool,
    scan: Scan,
}

/// Requests in flight while reading `store`: its own concurrency, within
/// [`MIN_WORKERS`]..=[`MAX_WORKERS`].
fn workers_for(store: &dyn ReadableStore) -> usize {
    store.profile().concurrency.clamp(MIN_WORKERS, MAX_WORKERS)
}

impl Scan {
    /// Read the tree below the root concurrently (see the module doc),
    /// holding at most `cap` bytes of documents.
    fn of(store: &dyn ReadableStore, workers: usize, cap: u64) -> Scan {
        let queue = Mutex::new(Queue::default());
        let wake = Condvar::new();
        lock(&queue).tasks.push_back(Task::List {
            prefix: String::new(),
            depth: 0,
        });
        let work = || {
            loop {
                let task = {
                    let mut q = lock(&queue);
                    loop {
                        if let Some(t) = q.tasks.pop_front() {
                            q.running += 1;
                            break Some(t);
                        }
                        if q.running == 0 {
                            break None;
                        }
                        q = crate::sync::wait(&wake, q);
                    }
                };
                let Some(task) = task else {
                    wake.notify_all();
                    return;
                };
                // A task that panics leaves its result to the second
                // pass, and never a worker waiting for it.
                let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(store, task)));
                let mut q = lock(&queue);
                q.running -= 1;
                let more = match outcome {
                    Ok((more, Done::Listed(prefix, listing))) => {
                        q.scan.listings.insert(prefix, listing);
                        more
                    }
                    Ok((more, Done::Found(path, found))) => {
                        q.held += found.as_ref().map_or(0, Found::bytes);
                        q.scan.found.insert(path, found);
                        more
                    }
                    Err(_) => Vec::new(),
                };
                let entries = q.scan.listings.len() + q.scan.found.len();
                q.full |= q.held > cap || entries > SCAN_ENTRIES;
                if q.full {
                    // What is left is read by the second pass.
                    q.tasks.clear();
                } else {
                    q.tasks.extend(more);
                }
                // Wake a worker per new task; all of them once nothing is
                // left to do, so that they end.
                match q.tasks.len() {
                    0 if q.running == 0 => wake.notify_all(),
                    0 => {}
                    1 => wake.notify_one(),
                    _ => wake.notify_all(),
                }
            }
        };
        crate::sync::on_threads(workers, "nzfs-discover", work);
        crate::sync::into_inner(queue).scan
    }
}

enum Done {
    Listed(String, io::Result<Listing>),
    Found(String, io::Result<Found>),
}

/// Run one task of the first pass: its result, and the tasks it makes.
fn run(store: &dyn ReadableStore, task: Task) -> (Vec<Task>, Done) {
    match task {
        Task::List { prefix, depth } => {
            let listing = store.list_dir(&prefix);
            let more = match &listing {
                Ok(l) => l
                    .prefixes
                    .iter()
                    .filter(|name| is_valid_node_name(name))
                    .filter_map(|name| join(&prefix, name).ok())
                    .map(|path| Task::Find {
                        path: path.as_str().to_string(),
                        depth,
                    })
                    .collect(),
                Err(_) => Vec::new(),
            };
            (more, Done::Listed(prefix, listing.map_err(io::Error::from)))
        }
        Task::Find { path, depth } => {
            let found = find(store, &path, PROBE_BYTES);
            let more = match &found {
                Ok(f) if depth + 1 < MAX_DEPTH && f.may_hold_nodes() => vec![Task::List {
                    prefix: path.clone(),
                    depth: depth + 1,
                }],
                _ => Vec::new(),
            };
            (more, Done::Found(path, found))
        }
    }
}

/// Read the Zarr v2 documents at `prefix`, each at most `limit` bytes.
pub(super) fn v2_docs(store: &dyn ReadableStore, prefix: &str, limit: u64) -> io::Result<Option<V2Docs>> {
    for (name, array) in [(ZARRAY, true), (ZGROUP, false)] {
        let key = join(prefix, name)?;
        let Some(doc) = store.get(&key, limit)? else {
            continue;
        };
        let attrs_key = join(prefix, ZATTRS)?;
        let attrs = store.get(&attrs_key, limit)?;
        return Ok(Some(V2Docs {
            key,
            array,
            doc,
            attrs_key,
            attrs,
        }));
    }
    Ok(None)
}

/// A v2 document (`.zarray` when `array`, else `.zgroup`) as a node kind.
pub(super) fn v2_kind(array: bool, doc: &Value, zattrs: Option<&Value>, what: &str) -> NodeKind {
    let parsed = if array {
        v2::parse_array(doc, zattrs).map(|a| NodeKind::Array(Arc::new(ArrayNode { metadata: a })))
    } else {
        v2::parse_group(doc, zattrs).map(|g| NodeKind::Group {
            metadata: Some(Box::new(g)),
        })
    };
    parsed.unwrap_or_else(|e| NodeKind::refused(&e, Some(what)))
}

impl V2Docs {
    /// The node these documents make, and the bytes counted against
    /// `budget`; a broken document (or `.zattrs`) makes a
    /// [`NodeKind::Broken`] node, logged with its key.
    pub(super) fn kind(&self, budget: &mut Budget) -> (NodeKind, u64) {
        let name = if self.array { ZARRAY } else { ZGROUP };
        let attrs = match &self.attrs {
            None => Ok(None),
            Some(b) => parse_document(b, Document::Attributes)
                .map(Some)
                .map_err(|e| (self.attrs_key.clone(), e)),
        };
        let doc = parse_document(&self.doc, Document::Node);
        let kept = doc.as_ref().map_or(0, |d| d.1) + attrs.as_ref().map_or(0, |a| a.as_ref().map_or(0, |a| a.1));
        if let Some(reason) = budget.spend(kept) {
            tracing::warn!(key = %self.key, %reason, "node is unreadable");
            return (NodeKind::broken(reason), kept as u64);
        }
        let kind = match (doc, attrs) {
            (Ok((doc, _)), Ok(attrs)) => v2_kind(self.array, &doc, attrs.as_ref().map(|a| &a.0), name),
            (Err(e), _) => NodeKind::broken(format!("{name}: {e}")),
            (_, Err((ak, e))) => NodeKind::broken(format!("{ak}: {e}")),
        };
        if let NodeKind::Broken { reason, .. } = &kind {
            tracing::warn!(key = %self.key, %reason, "node is unreadable");
        }
        (kind, kept as u64)
    }
}

/// What the child prefix `path` holds, reading each document at most
/// `limit` bytes.
pub(super) fn find(store: &dyn ReadableStore, path: &str, limit: u64) -> io::Result<Found> {
    let key = join(path, ZARR_JSON)?;
    if let Some(bytes) = store.get(&key, limit)? {
        // Parsed before it is counted: what its attributes leave out is
        // not kept, so not counted.
        let parsed = parse_document(&bytes, Document::Node);
        return Ok(Found::V3 {
            key,
            len: bytes.len() as u64,
            parsed,
        });
    }
    Ok(v2_docs(store, path, limit)?.map_or(Found::Nothing, Found::V2))
}

/// [`find`] for each of `paths`, `workers` at a time, in `paths` order.
fn find_all(store: &dyn ReadableStore, paths: &[String], workers: usize) -> Vec<io::Result<Found>> {
    let slots: Vec<Mutex<Option<io::Result<Found>>>> = paths.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let work = || {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(path) = paths.get(i) else { break };
            let found = find(store, path, PROBE_BYTES);
            *crate::sync::lock(&slots[i]) = Some(found);
        }
    };
    crate::sync::on_threads(workers.min(paths.len()), "nzfs-discover", work);
    slots
        .into_iter()
        .map(|slot| crate::sync::into_inner(slot).unwrap_or_else(|| Err(io::Error::other("not read"))))
        .collect()
}

impl Hierarchy {
    /// Discover the nodes below the root group (node 0): both passes.
    pub(super) fn walk_store(&mut self, store: &dyn ReadableStore) -> Result<bool, OpenError> {
        self.walk_within(store, SCAN_BYTES, MAX_NODES)
    }

    /// [`Hierarchy::walk_store`], the first pass holding at most `cap`
    /// bytes of documents, making at most `max_nodes` nodes.
    fn walk_within(&mut self, store: &dyn ReadableStore, cap: u64, max_nodes: usize) -> Result<bool, OpenError> {
        let workers = workers_for(store);
        let mut r = Reader {
            store,
            scan: Scan::of(store, workers, cap),
            workers,
            max_nodes,
        };
        self.walk(&mut r, 0, 0)
    }

    /// List the children of group `id`; returns whether any node was found.
    fn walk(&mut self, r: &mut Reader, id: usize, depth: usize) -> Result<bool, OpenError> {
        let store = r.store;
        if depth >= MAX_DEPTH {
            tracing::warn!(path = %self.nodes[id].path, "groups nested deeper than {MAX_DEPTH}; not listing further");
            return Ok(false);
        }
        let prefix = self.nodes[id].path.clone();
        let listing = r
            .scan
            .listings
            .remove(&prefix)
            .unwrap_or_else(|| store.list_dir(&prefix).map_err(io::Error::from));
        let listing = match listing {
            Ok(l) => l,
            Err(e) if depth == 0 => return Err(e.into()),
            Err(e) => {
                tracing::warn!(prefix = %prefix, error = %e, "cannot list a group; its children are skipped");
                return Ok(false);
            }
        };
        if listing.keys.iter().any(|k| k == ZARR_JSON) && listing.keys.iter().any(|k| k == ZGROUP || k == ZARRAY) {
            tracing::warn!(prefix = %prefix, "both zarr.json and Zarr v2 metadata here; reading it as Zarr v3");
        }
        // `__` prefixes and the like are never nodes: one that holds a
        // node's metadata is hidden with a log line, as a consolidated
        // store's entry is.
        for name in listing.prefixes.iter().filter(|n| !is_valid_node_name(n)) {
            let Ok(path) = join(&prefix, name) else { continue };
            let holds = store
                .list_dir(path.as_str())
                .is_ok_and(|l| l.keys.iter().any(|k| k == ZARR_JSON || k == ZGROUP || k == ZARRAY));
            if holds {
                tracing::warn!(
                    key = %path.as_str(),
                    "not shown: a node whose name the Zarr v3 spec reserves (it begins with `__`)"
                );
            }
        }
        let children: Vec<(String, String)> = listing
            .prefixes
            .into_iter()
            .filter(|name| is_valid_node_name(name))
            .filter_map(|name| Some((join(&prefix, &name).ok()?.as_str().to_string(), name)))
            .collect();
        let mut found_any = false;
        for batch in children.chunks(BATCH) {
            // What the first pass read, and the rest read now.
            let mut found: Vec<Option<io::Result<Found>>> =
                batch.iter().map(|(path, _)| r.scan.found.remove(path)).collect();
            let missing: Vec<String> = batch
                .iter()
                .zip(&found)
                .filter(|(_, f)| f.is_none())
                .map(|((path, _), _)| path.clone())
                .collect();
            let mut read = find_all(store, &missing, r.workers).into_iter();
            for ((path, name), found) in batch.iter().zip(found.iter_mut()) {
                let found = match found.take().or_else(|| read.next()) {
                    Some(Err(e)) if is_too_large(&e) => find(store, path, MAX_METADATA_BYTES),
                    Some(r) => r,
                    None => Err(io::Error::other("not read")),
                };
                found_any |= self.add_child(r, id, depth, path, name, found)?;
            }
        }
        Ok(found_any)
    }

    /// Add the child `name` of group `id` from what its prefix `path`
    /// holds, and walk it if it is a group; returns whether it is a node.
    fn add_child(
        &mut self,
        r: &mut Reader,
        id: usize,
        depth: usize,
        path: &str,
        name: &str,
        found: io::Result<Found>,
    ) -> Result<bool, OpenError> {
        if self.nodes.len() >= r.max_nodes {
            return Err(OpenError::TooManyNodes);
        }
        let (kind, kept) = match self.kind_of(path, found) {
            Some(k) => k,
            None => {
                // Perhaps an implicit group: kept only if it holds nodes.
                let child = self.push(Some(id), name, NodeKind::Group { metadata: None });
                if self.walk(r, child, depth + 1)? {
                    return Ok(true);
                }
                self.pop_leaf(id, child);
                return Ok(false);
            }
        };
        let is_group = matches!(kind, NodeKind::Group { .. });
        let child = self.push(Some(id), name, kind);
        self.nodes[child].kept = kept;
        if is_group {
            self.walk(r, child, depth + 1)?;
        }
        Ok(true)
    }

    /// The node that `found`, what prefix `path` holds, makes, and the
    /// bytes of its documents counted against the budget; `None` where it
    /// holds no documents (perhaps an implicit group). A node that cannot
    /// be read is logged.
    pub(super) fn kind_of(&mut self, path: &str, found: io::Result<Found>) -> Option<(NodeKind, u64)> {
        match found {
            Ok(Found::V3 { key, parsed, .. }) => {
                let (kind, kept) = match parsed {
                    Err(e) => (node_kind(Err(e.into())), 0),
                    Ok((doc, kept)) => match self.budget.spend(kept) {
                        Some(reason) => (NodeKind::broken(reason), kept as u64),
                        None => (node_kind(NodeMetadata::from_json(&doc)), kept as u64),
                    },
                };
                if let NodeKind::Broken { reason, .. } = &kind {
                    tracing::warn!(key = %key, %reason, "node is unreadable");
                }
                Some((kind, kept))
            }
            Ok(Found::V2(docs)) => {
                self.zarr_format = 2;
                Some(docs.kind(&mut self.budget))
            }
            Ok(Found::Nothing) => None,
            Err(e) => {
                tracing::warn!(prefix = %path, error = %e, "cannot read metadata; node is unreadable");
                Some((NodeKind::broken(e.to_string()), 0))
            }
        }
    }

    /// Remove the most recently added subtree rooted at `child` of `parent`.
    fn pop_leaf(&mut self, parent: usize, child: usize) {
        self.nodes.truncate(child);
        self.nodes[parent].children.retain(|&c| c != child);
    }
}

#[cfg(test)]
mod tests;

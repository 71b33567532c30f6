//! OCDBT databases as a store, read-only: tensorstore's `ocdbt` key-value
//! store, in which Orbax saves checkpoints by default. Each database is a
//! directory of another store (local, or a bucket's prefix) holding
//! `manifest.ocdbt` and data files; its keys (a checkpoint's `.zarray`s
//! and chunks) live in a B+tree whose nodes, and whose values too large to
//! sit in a leaf, are ranges of the data files (`format`).
//!
//! At open, the databases are found (the root itself, or the directories
//! below it that hold a manifest, up to [`MAX_DEPTH`] deep: an Orbax
//! `CheckpointManager`'s `STEP/ITEM/`), each one's latest version is read
//! and its tree walked once, and every key is kept with its value (inline)
//! or where its value is (a data file's range): a key of a database at
//! `DIR` is `DIR/KEY`. A read of a key is then one range of one data file.
//!
//! Invariants: the walk reads at most [`MAX_NODES`] nodes of at most
//! `format::MAX_ENCODED` bytes each and [`MAX_NODE_BYTES`] in all (each
//! decompressed to at most `format::MAX_DECODED`), every child one level
//! lower than its parent (so a tree whose nodes name each other ends), and
//! keeps at most [`MAX_KEYS`] keys and [`MAX_INDEX_BYTES`] of keys and
//! inline values (what the store holds beyond the cache budget); a
//! data file is a key of the store below its database's directory (a path
//! with `..` is refused); a value is never read past its range; nothing is
//! written. What fails the walk fails the open, with the database and the
//! reason.

pub mod format;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::{Access, Listing, ReadableStore, Stamp, StoreError, StoreKey, StoreResult, check_stamp};
use format::{DataFile, Entries, Location, Manifest, Value};

/// The most keys held, over every database.
pub const MAX_KEYS: usize = 1 << 20;
/// The most bytes of keys and inline values held, over every database.
pub const MAX_INDEX_BYTES: u64 = 64 << 20;
/// The most B+tree nodes read, over every database.
pub const MAX_NODES: usize = 1 << 16;
/// The most bytes of B+tree nodes read, over every database.
pub const MAX_NODE_BYTES: u64 = 256 << 20;
/// The highest B+tree read.
pub const MAX_HEIGHT: u8 = 32;
/// How deep below the root databases are looked for.
pub const MAX_DEPTH: usize = 3;
/// The most databases one store shows.
pub const MAX_DATABASES: usize = 256;
/// The most directories listed while databases are looked for.
const MAX_LISTED: usize = 1024;
/// A database's manifest.
pub const MANIFEST: &str = "manifest.ocdbt";

/// Where a key's value is.
#[derive(Debug, Clone)]
enum Held {
    Inline(Arc<[u8]>),
    /// `len` bytes at `offset` of data file `file`.
    At {
        file: u32,
        offset: u64,
        len: u64,
    },
}

/// One or more OCDBT databases read as one store.
pub struct OcdbtStore {
    inner: Box<dyn ReadableStore>,
    /// The data files values are in, as keys of `inner`.
    files: Vec<StoreKey>,
    keys: BTreeMap<String, Held>,
    /// The databases' directories (`""`: the root).
    databases: Vec<String>,
    /// Changes when a manifest does.
    version: u64,
}

fn bad(db: &str, why: impl std::fmt::Display) -> StoreError {
    let at = if db.is_empty() { String::new() } else { format!("{db}/") };
    StoreError::Corrupt(format!("OCDBT database {at}{MANIFEST}: {why}"))
}

fn join(dir: &str, name: &str) -> String {
    match dir {
        "" => name.to_string(),
        d => format!("{d}/{name}"),
    }
}

/// The directories of `store` that hold an OCDBT database: the root, or
/// those below it (not below one another), up to [`MAX_DEPTH`] deep.
pub fn databases(store: &dyn ReadableStore) -> StoreResult<Vec<String>> {
    let mut found = Vec::new();
    let mut level = vec![String::new()];
    let mut listed = 0;
    for _ in 0..=MAX_DEPTH {
        let mut next = Vec::new();
        for dir in level {
            if listed >= MAX_LISTED || found.len() >= MAX_DATABASES {
                break;
            }
            listed += 1;
            let l = store.list_dir(&dir)?;
            if l.keys.iter().any(|k| k == MANIFEST) {
                found.push(dir);
                continue;
            }
            next.extend(l.prefixes.iter().map(|p| join(&dir, p)));
        }
        level = next;
    }
    found.sort();
    Ok(found)
}

/// What the walk holds while it goes.
struct Walk<'a> {
    inner: &'a dyn ReadableStore,
    files: Vec<StoreKey>,
    interned: HashMap<String, u32>,
    keys: BTreeMap<String, Held>,
    bytes: u64,
    nodes: usize,
    node_bytes: u64,
}

/// A node to read: where it is (its file's full path from the database's
/// directory), the transitive path its children's tables are relative to,
/// its height and the key prefix the path to it gives.
struct Pending {
    path: String,
    at: Location,
    transitive: String,
    height: u8,
    prefix: Vec<u8>,
}

impl Walk<'_> {
    /// Data file `f` of `files` as named below `transitive`: its path from
    /// the database's directory, and the transitive path of what it holds.
    fn file(files: &[DataFile], f: usize, transitive: &str) -> (String, String) {
        let file = &files[f];
        (
            format!("{transitive}{}", file.path),
            format!("{transitive}{}", &file.path[..file.base_len]),
        )
    }

    fn key_of(&self, db: &str, path: &str) -> StoreResult<StoreKey> {
        StoreKey::new(join(db, path)).map_err(|_| bad(db, format!("a data file path {path:?} outside the database")))
    }

    fn intern(&mut self, db: &str, path: &str) -> StoreResult<u32> {
        if let Some(&id) = self.interned.get(path) {
            return Ok(id);
        }
        let key = self.key_of(db, path)?;
        let id = u32::try_from(self.files.len()).map_err(|_| bad(db, "too many data files"))?;
        self.files.push(key);
        self.interned.insert(path.to_string(), id);
        Ok(id)
    }

    fn read(&self, db: &str, path: &str, at: Location, what: &str) -> StoreResult<Vec<u8>> {
        if at.len > format::MAX_ENCODED {
            return Err(bad(
                db,
                format!("a {what} of {} bytes (at most {})", at.len, format::MAX_ENCODED),
            ));
        }
        let key = self.key_of(db, path)?;
        self.inner
            .get_range(&key, at.offset, at.len, None)
            .map_err(|e| e.context(format!("OCDBT database {}: a {what} in {key}", join(db, MANIFEST))))?
            .ok_or_else(|| bad(db, format!("data file {key} is missing")))
    }

    /// Every key of database `db` whose tree's root is `root`.
    fn database(&mut self, db: &str, files: &[DataFile], root: Location, height: u8) -> StoreResult<()> {
        if height > MAX_HEIGHT {
            return Err(bad(db, format!("a B+tree {height} levels high (at most {MAX_HEIGHT})")));
        }
        let (path, transitive) = Walk::file(files, root.file, "");
        let mut stack = vec![Pending {
            path,
            at: root,
            transitive,
            height,
            prefix: Vec::new(),
        }];
        while let Some(p) = stack.pop() {
            self.nodes += 1;
            self.node_bytes = self.node_bytes.saturating_add(p.at.len);
            if self.nodes > MAX_NODES || self.node_bytes > MAX_NODE_BYTES {
                return Err(bad(
                    db,
                    format!(
                        "more than {MAX_NODES} B+tree nodes, or {} MiB of them",
                        MAX_NODE_BYTES >> 20
                    ),
                ));
            }
            let bytes = self.read(db, &p.path, p.at, "B+tree node")?;
            let node = format::node(&bytes).map_err(|e| bad(db, format!("the B+tree node in {}: {e}", p.path)))?;
            if node.height != p.height {
                return Err(bad(
                    db,
                    format!(
                        "the B+tree node in {} is {} high where {} was named",
                        p.path, node.height, p.height
                    ),
                ));
            }
            match node.entries {
                Entries::Leaf(entries) => {
                    for (relative, value) in entries {
                        self.keep(db, &node.files, &p, relative, value)?;
                    }
                }
                Entries::Interior(children) => {
                    if self.nodes + stack.len() + children.len() > MAX_NODES {
                        return Err(bad(
                            db,
                            format!(
                                "more than {MAX_NODES} B+tree nodes, or {} MiB of them",
                                MAX_NODE_BYTES >> 20
                            ),
                        ));
                    }
                    // Last first, so that keys are met in order.
                    for (relative, common, at) in children.into_iter().rev() {
                        let (path, transitive) = Walk::file(&node.files, at.file, &p.transitive);
                        let mut prefix = p.prefix.clone();
                        prefix.extend_from_slice(&relative[..common]);
                        stack.push(Pending {
                            path,
                            at,
                            transitive,
                            height: p.height - 1,
                            prefix,
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// Keep the leaf entry `relative` (below `p`'s prefix) of database `db`.
    fn keep(&mut self, db: &str, files: &[DataFile], p: &Pending, relative: Vec<u8>, value: Value) -> StoreResult<()> {
        let mut key = p.prefix.clone();
        key.extend_from_slice(&relative);
        let key = String::from_utf8(key).map_err(|_| bad(db, "a key that is not UTF-8"))?;
        let full = join(db, &key);
        if StoreKey::new(full.clone()).is_err() {
            return Err(bad(db, format!("a key {key:?} that names no file")));
        }
        let held = match value {
            Value::Inline(v) => {
                self.bytes += v.len() as u64;
                Held::Inline(v.into())
            }
            Value::At(at) => {
                let (path, _) = Walk::file(files, at.file, &p.transitive);
                Held::At {
                    file: self.intern(db, &path)?,
                    offset: at.offset,
                    len: at.len,
                }
            }
        };
        self.bytes += full.len() as u64;
        if self.keys.len() >= MAX_KEYS || self.bytes > MAX_INDEX_BYTES {
            return Err(bad(
                db,
                format!(
                    "more than {MAX_KEYS} keys or {} MiB of keys and small values",
                    MAX_INDEX_BYTES >> 20
                ),
            ));
        }
        self.keys.insert(full, held);
        Ok(())
    }
}

/// The newest numbered manifest of database `db` (`manifest.` and 16 hex
/// digits), for a `manifest.ocdbt` of the numbered kind.
fn numbered(store: &dyn ReadableStore, db: &str) -> StoreResult<String> {
    let listed = store.list_dir(db)?;
    let newest = listed
        .keys
        .iter()
        .filter(|k| {
            k.strip_prefix("manifest.")
                .is_some_and(|g| g.len() == 16 && g.bytes().all(|b| b.is_ascii_hexdigit()))
        })
        .max();
    newest.map(|k| join(db, k)).ok_or_else(|| {
        bad(
            db,
            "a manifest of the numbered kind, and no manifest.XXXXXXXXXXXXXXXX beside it",
        )
    })
}

/// The manifest at `key`, decoded, and its stamp.
fn read_manifest(store: &dyn ReadableStore, db: &str, key: &str) -> StoreResult<(Manifest, Stamp)> {
    let key = StoreKey::new(key)?;
    let stamp = store
        .stat(&key)?
        .ok_or_else(|| StoreError::NotFound(format!("{key}: no such file")))?;
    if stamp.len > format::MAX_ENCODED {
        return Err(bad(
            db,
            format!("{} bytes (at most {})", stamp.len, format::MAX_ENCODED),
        ));
    }
    let bytes = store
        .get(&key, format::MAX_ENCODED)?
        .ok_or_else(|| StoreError::NotFound(format!("{key}: no such file")))?;
    let manifest = format::manifest(&bytes).map_err(|e| bad(db, e))?;
    Ok((manifest, stamp))
}

impl OcdbtStore {
    /// The databases of `inner` (its root, or the directories
    /// [`databases`] finds), each at its latest version.
    pub fn open(inner: Box<dyn ReadableStore>) -> StoreResult<OcdbtStore> {
        let found = databases(inner.as_ref())?;
        OcdbtStore::open_databases(inner, found)
    }

    /// The databases of `inner` in directories `databases` (as
    /// [`databases`] found them), each at its latest version.
    pub fn open_databases(inner: Box<dyn ReadableStore>, databases: Vec<String>) -> StoreResult<OcdbtStore> {
        if databases.is_empty() {
            return Err(StoreError::NotFound(format!("no {MANIFEST} at the root or below it")));
        }
        let mut walk = Walk {
            inner: inner.as_ref(),
            files: Vec::new(),
            interned: HashMap::new(),
            keys: BTreeMap::new(),
            bytes: 0,
            nodes: 0,
            node_bytes: 0,
        };
        let mut version = 0u64;
        for db in &databases {
            // Each database's data files are its own.
            walk.interned.clear();
            let (mut manifest, mut stamp) = read_manifest(inner.as_ref(), db, &join(db, MANIFEST))?;
            if manifest == Manifest::Numbered {
                let key = numbered(inner.as_ref(), db)?;
                (manifest, stamp) = read_manifest(inner.as_ref(), db, &key)?;
            }
            let Manifest::Single {
                files,
                root,
                generation,
            } = manifest
            else {
                return Err(bad(db, "a numbered manifest that names no versions"));
            };
            version = version.rotate_left(7) ^ stamp.version ^ generation;
            if let Some((at, height)) = root {
                walk.database(db, &files, at, height)?;
            }
        }
        let (files, keys) = (walk.files, walk.keys);
        tracing::debug!(databases = databases.len(), keys = keys.len(), "OCDBT read");
        Ok(OcdbtStore {
            inner,
            files,
            keys,
            databases,
            version,
        })
    }

    /// The databases' directories (`""`: the root).
    pub fn databases(&self) -> &[String] {
        &self.databases
    }

    /// `len` bytes at `offset` of `key`'s value `held` (within it: the
    /// callers check).
    fn read(&self, key: &StoreKey, held: &Held, offset: u64, len: u64) -> StoreResult<Vec<u8>> {
        match held {
            Held::Inline(v) => Ok(v[offset as usize..(offset + len) as usize].to_vec()),
            Held::At { file, offset: at, .. } => {
                let data = &self.files[*file as usize];
                let got = self
                    .inner
                    .get_range(data, at + offset, len, None)
                    .map_err(|e| e.context(format!("{key}: in OCDBT data file {data}")))?;
                got.ok_or_else(|| StoreError::NotFound(format!("{key}: OCDBT data file {data} is missing")))
            }
        }
    }

    fn stamp(&self, held: &Held) -> Stamp {
        let len = match held {
            Held::Inline(v) => v.len() as u64,
            Held::At { len, .. } => *len,
        };
        Stamp {
            len,
            version: self.version,
        }
    }
}

impl ReadableStore for OcdbtStore {
    fn get(&self, key: &StoreKey, max_len: u64) -> StoreResult<Option<Vec<u8>>> {
        let Some(held) = self.keys.get(key.as_str()) else {
            return Ok(None);
        };
        let len = self.stamp(held).len;
        if len > max_len {
            return Err(super::too_large(len, max_len));
        }
        self.read(key, held, 0, len).map(Some)
    }

    fn get_range(&self, key: &StoreKey, offset: u64, len: u64, expect: Option<Stamp>) -> StoreResult<Option<Vec<u8>>> {
        let Some(held) = self.keys.get(key.as_str()) else {
            return Ok(None);
        };
        let stamp = self.stamp(held);
        check_stamp(key, stamp, expect)?;
        if offset.checked_add(len).is_none_or(|end| end > stamp.len) {
            return Err(super::short_value(key, offset, len, stamp.len));
        }
        self.read(key, held, offset, len).map(Some)
    }

    fn stat(&self, key: &StoreKey) -> StoreResult<Option<Stamp>> {
        Ok(self.keys.get(key.as_str()).map(|h| self.stamp(h)))
    }

    /// Read once at open, never rewritten in place: a new version of a
    /// database is a new manifest.
    fn profile(&self) -> super::Profile {
        super::Profile {
            rewritten_in_place: false,
            ..self.inner.profile()
        }
    }

    /// A value out of line shows its data file's owner and mode, one
    /// inline (and a directory) its database's manifest's; a directory
    /// adds the search bit to each read bit.
    fn access(&self, path: &str) -> StoreResult<Option<Access>> {
        let manifest = || {
            let db = self
                .databases
                .iter()
                .filter(|d| super::is_at_or_below(path, d))
                .max_by_key(|d| d.len())
                .or_else(|| self.databases.first())
                .map_or("", String::as_str);
            join(db, MANIFEST)
        };
        match self.keys.get(path) {
            Some(Held::At { file, .. }) => self.inner.access(self.files[*file as usize].as_str()),
            Some(Held::Inline(_)) => self.inner.access(&manifest()),
            None => Ok(self.inner.access(&manifest())?.map(Access::searchable)),
        }
    }
}

impl super::Listable for OcdbtStore {
    fn list_dir(&self, prefix: &str) -> StoreResult<Listing> {
        Ok(super::sorted_listing(&self.keys, prefix))
    }
}

#[cfg(test)]
mod tests;

//! `--all-versions`: every branch, tag and snapshot of a repository as one
//! store, `branches/<name>/…`, `tags/<name>/…` and `snapshots/<id>/…`.
//!
//! The refs and the history are read once, when the view is made; each
//! snapshot's session is opened on first use and shared by every name that
//! points at it. Invariant: a key outside a known version's directory is
//! answered as absent, and the directories above the versions answer a
//! synthesized empty group, as does a version that has no root group.

use crate::store::StoreResult;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use super::{EMPTY_GROUP, RefKind, Repo, Snapshot, VersionStore};
use crate::store::documents::ZARR_JSON;
use crate::store::{Listing, RangeRequest, ReadableStore, Stamp, StoreKey};

/// The three directories at the top of the view.
const KINDS: [&str; 3] = ["branches", "snapshots", "tags"];

/// Every version of a repository (see the module doc).
pub struct AllVersions {
    repo: Arc<Repo>,
    /// `(kind, name)` to the snapshot it shows.
    dirs: BTreeMap<(&'static str, String), Snapshot>,
    /// Opened snapshots, by id.
    open: Mutex<HashMap<String, Arc<VersionStore>>>,
}

/// Where a key lands.
enum Route<'k> {
    /// The root or one of [`KINDS`].
    Top(Option<&'static str>),
    /// `rest` (`""` for the version's root) inside a version.
    Version(&'static str, &'k str, &'k str),
    Nowhere,
}

fn route(path: &str) -> Route<'_> {
    if path.is_empty() {
        return Route::Top(None);
    }
    let (kind, rest) = path.split_once('/').unwrap_or((path, ""));
    let Some(kind) = KINDS.iter().find(|k| **k == kind) else {
        return Route::Nowhere;
    };
    if rest.is_empty() {
        return Route::Top(Some(kind));
    }
    let (name, rest) = rest.split_once('/').unwrap_or((rest, ""));
    Route::Version(kind, name, rest)
}

impl AllVersions {
    /// Read the refs and the history of `repo`.
    pub fn new(repo: Arc<Repo>) -> StoreResult<AllVersions> {
        let refs = [RefKind::Branch, RefKind::Tag].map(|k| repo.refs(k).map(|r| (k.plural(), r)));
        let refs = refs.into_iter().collect::<StoreResult<Vec<_>>>()?;
        let history = repo.history(refs.iter().flat_map(|(_, r)| r.values()))?;
        let mut dirs = BTreeMap::new();
        for (kind, named) in refs {
            for (name, id) in named {
                // A ref whose snapshot cannot be read still gets its
                // directory (and the snapshot its own under snapshots/),
                // which then fails with EIO naming the snapshot.
                let snapshot = history.get(&id).cloned().unwrap_or(Snapshot {
                    id,
                    message: "(this snapshot cannot be read)".into(),
                    at: None,
                });
                dirs.insert(("snapshots", snapshot.id.clone()), snapshot.clone());
                dirs.insert((kind, name), snapshot);
            }
        }
        for (id, s) in history {
            dirs.insert(("snapshots", id), s);
        }
        Ok(AllVersions {
            repo,
            dirs,
            open: Mutex::new(HashMap::new()),
        })
    }

    /// Each version directory's path (`tags/v1`) and the snapshot it shows.
    pub fn versions(&self) -> impl Iterator<Item = (String, &Snapshot)> {
        self.dirs.iter().map(|((kind, name), s)| (format!("{kind}/{name}"), s))
    }

    /// The store of the version `kind/name`, opened on first use.
    fn version(&self, kind: &'static str, name: &str) -> StoreResult<Option<Arc<VersionStore>>> {
        let Some(snapshot) = self.dirs.get(&(kind, name.to_string())) else {
            return Ok(None);
        };
        let mut open = crate::sync::lock(&self.open);
        if let Some(s) = open.get(&snapshot.id) {
            return Ok(Some(Arc::clone(s)));
        }
        // Opening reads the snapshot object once; the lock keeps two
        // threads from opening the same one twice.
        let store = Arc::new(self.repo.version_store(snapshot)?);
        open.insert(snapshot.id.clone(), Arc::clone(&store));
        Ok(Some(store))
    }
}

impl ReadableStore for AllVersions {
    fn get(&self, key: &StoreKey, max_len: u64) -> StoreResult<Option<Vec<u8>>> {
        let (dir, leaf) = key.as_str().rsplit_once('/').unwrap_or(("", key.as_str()));
        match route(dir) {
            Route::Top(_) if leaf == ZARR_JSON => return Ok(Some(EMPTY_GROUP.to_vec())),
            Route::Version(kind, name, "") if leaf == ZARR_JSON => {
                let Some(v) = self.version(kind, name)? else {
                    return Ok(None);
                };
                // A version with no root group (the initial commit) is empty.
                return Ok(Some(
                    v.get(&StoreKey::new(ZARR_JSON)?, max_len)?
                        .unwrap_or_else(|| EMPTY_GROUP.to_vec()),
                ));
            }
            _ => {}
        }
        match route(key.as_str()) {
            Route::Version(kind, name, rest) if !rest.is_empty() => match self.version(kind, name)? {
                Some(v) => v.get(&StoreKey::new(rest)?, max_len),
                None => Ok(None),
            },
            _ => Ok(None),
        }
    }

    fn get_range(&self, key: &StoreKey, offset: u64, len: u64, expect: Option<Stamp>) -> StoreResult<Option<Vec<u8>>> {
        match route(key.as_str()) {
            Route::Version(kind, name, rest) if !rest.is_empty() => match self.version(kind, name)? {
                Some(v) => v.get_range(&StoreKey::new(rest)?, offset, len, expect),
                None => Ok(None),
            },
            _ => Ok(None),
        }
    }

    fn stat(&self, key: &StoreKey) -> StoreResult<Option<Stamp>> {
        match route(key.as_str()) {
            Route::Version(kind, name, rest) if !rest.is_empty() => match self.version(kind, name)? {
                Some(v) => v.stat(&StoreKey::new(rest)?),
                None => Ok(None),
            },
            _ => Ok(None),
        }
    }

    fn get_ranges(&self, requests: &[RangeRequest]) -> Vec<StoreResult<Option<Vec<u8>>>> {
        // A read spans one array, so one version: hand the batch to it.
        let routed: Option<(Arc<VersionStore>, Vec<RangeRequest>)> = (|| {
            let mut store: Option<(&'static str, &str)> = None;
            let mut inner = Vec::with_capacity(requests.len());
            for r in requests {
                let Route::Version(kind, name, rest) = route(r.key.as_str()) else {
                    return None;
                };
                if store.is_some_and(|s| s != (kind, name)) || rest.is_empty() {
                    return None;
                }
                store = Some((kind, name));
                inner.push(RangeRequest {
                    key: StoreKey::new(rest).ok()?,
                    ..r.clone()
                });
            }
            let (kind, name) = store?;
            Some((self.version(kind, name).ok()??, inner))
        })();
        match routed {
            Some((v, inner)) => v.get_ranges(&inner),
            None => requests
                .iter()
                .map(|r| self.get_range(&r.key, r.offset, r.len, r.expect))
                .collect(),
        }
    }

    fn profile(&self) -> crate::store::Profile {
        crate::store::Profile {
            concurrency: 8,
            ..crate::store::Profile::default()
        }
    }
}

impl crate::store::Listable for AllVersions {
    fn list_dir(&self, prefix: &str) -> StoreResult<Listing> {
        let top = |prefixes: Vec<String>| Listing {
            keys: vec![ZARR_JSON.to_string()],
            prefixes,
        };
        match route(prefix) {
            Route::Top(None) => Ok(top(KINDS.iter().map(|k| k.to_string()).collect())),
            Route::Top(Some(kind)) => Ok(top(self
                .dirs
                .keys()
                .filter(|(k, _)| *k == kind)
                .map(|(_, name)| name.clone())
                .collect())),
            Route::Version(kind, name, rest) => match self.version(kind, name)? {
                Some(v) => {
                    let mut listing = v.list_dir(rest)?;
                    if rest.is_empty() && !listing.keys.iter().any(|k| k == ZARR_JSON) {
                        listing.keys.insert(0, ZARR_JSON.to_string());
                    }
                    Ok(listing)
                }
                None => Ok(Listing::default()),
            },
            Route::Nowhere => Ok(Listing::default()),
        }
    }
}

//! Where a reference's target URL is read from: the reference file's own
//! directory (its "home": a local directory or an object-store prefix), or
//! a prefix the user allowed with `--store-option virtual_chunks=PREFIX`
//! (the option Icechunk's virtual chunks use too), through the same store
//! layer as any mount (local files, or S3/GCS/Azure/HTTP with the mount's
//! options and credentials).
//!
//! Invariants: a target outside the home and every allowed prefix is never
//! read (a reference set cannot make the daemon serve `/etc/shadow`, or
//! another bucket the mounting user's credentials reach, to other users of
//! an `allow_other` mount); such a reference is an error on its own key,
//! whose message says which option would allow it. Each distinct URL is
//! resolved once ([`Targets::intern`]) and each allowed prefix opened once;
//! at most [`MAX_TARGETS`] distinct URLs are kept, holding at most
//! [`MAX_TARGET_BYTES`].

use crate::sync::lock;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use crate::store::{Access, FilesystemStore, Need, ReadableStore, StoreKey, Symlinks};

/// The most distinct target URLs one reference set may name.
pub const MAX_TARGETS: usize = 1 << 20;

/// The most memory the distinct targets may hold, their URLs and keys
/// counted with a fixed cost per target: they are kept for the life of
/// the mount.
pub const MAX_TARGET_BYTES: usize = 64 << 20;

/// What one target costs besides its URL's and key's bytes.
const TARGET_OVERHEAD: usize = 160;

/// Why a target cannot be read. (Kept with the target and cloned to each
/// reference that names it, so an underlying I/O error is kept as text.)
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TargetError {
    /// More distinct targets than a mount keeps.
    #[error("more than {MAX_TARGETS} distinct target files")]
    TooMany,
    /// The distinct targets' URLs take more bytes than a mount keeps.
    #[error("the distinct target URLs pass {} MiB (the most a mount keeps)", MAX_TARGET_BYTES >> 20)]
    TooManyBytes,
    /// A target outside the set's directory and every allowed prefix.
    #[error(
        "target {url} is outside the reference file's directory {home} and every allowed prefix; \
         allow it with --store-option virtual_chunks={suggest}"
    )]
    Outside {
        /// The target.
        url: String,
        /// The set's directory.
        home: String,
        /// The prefix that would allow it.
        suggest: String,
    },
    /// A target that is neither a path nor a URL of a scheme nzfs reads.
    #[error("target {url}: not a path or a URL nzfs reads")]
    NotAUrl {
        /// The target.
        url: String,
    },
    /// A target whose path is not a store key.
    #[error("target {url}: {reason}")]
    BadKey {
        /// The target.
        url: String,
        /// Why.
        reason: String,
    },
    /// A local target whose owner and mode cannot be read.
    #[error("target {url}: cannot read its owner and mode: {reason}")]
    Access {
        /// The target.
        url: String,
        /// Why.
        reason: String,
    },
    /// An object-store target with no options to reach it.
    #[error("{prefix}: no object-store options")]
    NoRemoteOptions {
        /// The target's prefix.
        prefix: String,
    },
    /// An object-store target in a build without object storage.
    #[error("{prefix}: this nzfs was built without object storage (feature `remote`)")]
    NoRemoteFeature {
        /// The target's prefix.
        prefix: String,
    },
    /// The object store for a target could not be made.
    #[error("{reason}")]
    Remote {
        /// Why.
        reason: String,
    },
}

/// Where the reference file is: relative targets resolve against it.
#[derive(Debug, Clone)]
pub enum Home {
    /// A local directory (canonical).
    Local(PathBuf),
    /// An object-store prefix, ending in `/` (`s3://bucket/refs/`).
    Remote(String),
}

/// How targets are reached, from the mount's options.
pub struct TargetOptions {
    /// `virtual_chunks=` prefixes: `file:///dir/`, `/dir/` or a URL prefix.
    pub allowed: Vec<String>,
    /// Which symlinks of local targets are followed.
    pub symlinks: Symlinks,
    /// Options and credentials for object-store targets (the mount's own).
    #[cfg(feature = "remote")]
    pub remote: Option<crate::store::object::RemoteOptions>,
}

impl TargetOptions {
    /// Targets in the home only.
    pub fn home_only() -> TargetOptions {
        TargetOptions {
            allowed: Vec::new(),
            symlinks: Symlinks::default(),
            #[cfg(feature = "remote")]
            remote: None,
        }
    }
}

enum Allowed {
    Local(PathBuf),
    Remote(String),
}

/// One target: its URL as messages show it, and where it is read.
pub struct Target {
    /// Its URL, without secrets.
    pub url: String,
    /// The store and key it is read at, or why it cannot be read.
    pub at: Result<(Arc<dyn ReadableStore>, StoreKey), TargetError>,
    /// Who may read it, found on first need ([`Target::sources`]).
    sources: OnceLock<Result<Vec<(Access, Need)>, TargetError>>,
}

impl Target {
    /// What a reader of this target must pass, as sources of a meet: the
    /// file itself (read) and every directory from its store's root down
    /// to it (search). Empty where the store has no modes (object
    /// storage). Asked of the store once per target.
    pub fn sources(&self) -> Result<&[(Access, Need)], TargetError> {
        let found = self.sources.get_or_init(|| {
            let (store, key) = self.at.as_ref().map_err(Clone::clone)?;
            let why = |e: crate::store::StoreError| TargetError::Access {
                url: self.url.clone(),
                reason: e.to_string(),
            };
            let mut out = Vec::new();
            let mut dir = String::new();
            for part in key.as_str().split('/') {
                if let Some(a) = store.access(&dir).map_err(why)? {
                    out.push((a, Need::Search));
                }
                if !dir.is_empty() {
                    dir.push('/');
                }
                dir.push_str(part);
            }
            if let Some(a) = store.access(key.as_str()).map_err(why)? {
                out.push((a, Need::Read));
            }
            Ok(out)
        });
        found.as_ref().map(Vec::as_slice).map_err(Clone::clone)
    }
}

#[derive(Default)]
struct Table {
    ids: HashMap<String, u32>,
    list: Vec<Arc<Target>>,
    /// What `ids` and `list` hold, as [`MAX_TARGET_BYTES`] counts it.
    bytes: usize,
}

/// The distinct targets of a reference set, each resolved once, by id.
pub struct Targets {
    home: Arc<dyn ReadableStore>,
    home_at: Home,
    allowed: Vec<Allowed>,
    options: TargetOptions,
    /// The store of each allowed prefix opened so far.
    stores: Mutex<HashMap<String, Arc<dyn ReadableStore>>>,
    table: RwLock<Table>,
    /// The prefixes of refused targets, for one message at open.
    refused: Mutex<BTreeSet<String>>,
}

/// The directory form of a local prefix (canonical where it exists).
fn local_dir(path: &str) -> PathBuf {
    let p = Path::new(path);
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// `scheme://authority/` of a URL.
fn url_root(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => format!("{scheme}://{}/", rest.split('/').next().unwrap_or_default()),
        None => url.to_string(),
    }
}

impl Targets {
    /// No targets yet; relative ones resolve against `home_at`.
    pub fn new(home: Arc<dyn ReadableStore>, home_at: Home, options: TargetOptions) -> Targets {
        let allowed = options
            .allowed
            .iter()
            .map(|p| {
                let local = p
                    .strip_prefix("file://")
                    .or_else(|| p.starts_with('/').then_some(p.as_str()));
                match local {
                    Some(path) => Allowed::Local(local_dir(path)),
                    None if p.ends_with('/') => Allowed::Remote(p.clone()),
                    None => Allowed::Remote(format!("{p}/")),
                }
            })
            .collect();
        Targets {
            home,
            home_at,
            allowed,
            options,
            stores: Mutex::new(HashMap::new()),
            table: RwLock::new(Table::default()),
            refused: Mutex::new(BTreeSet::new()),
        }
    }

    /// The reference file's own store.
    pub fn home(&self) -> &dyn ReadableStore {
        self.home.as_ref()
    }

    /// Whether every target store read so far rereads cheaply (local).
    pub fn home_is_local(&self) -> bool {
        matches!(self.home_at, Home::Local(_))
    }

    /// Whether some target may be in object storage.
    pub fn may_be_remote(&self) -> bool {
        !self.home_is_local() || self.allowed.iter().any(|a| matches!(a, Allowed::Remote(_)))
    }

    /// The id of target `url` (resolved on first sight).
    pub fn intern(&self, url: &str) -> Result<u32, TargetError> {
        if let Some(&id) = crate::sync::read(&self.table).ids.get(url) {
            return Ok(id);
        }
        let mut table = crate::sync::write(&self.table);
        if let Some(&id) = table.ids.get(url) {
            return Ok(id);
        }
        if table.list.len() >= MAX_TARGETS {
            return Err(TargetError::TooMany);
        }
        // The URL twice (the map's key and the shown form) and the key.
        let cost = 3 * url.len() + TARGET_OVERHEAD;
        if table.bytes + cost > MAX_TARGET_BYTES {
            return Err(TargetError::TooManyBytes);
        }
        table.bytes += cost;
        let id = table.list.len() as u32;
        let at = self.resolve(url);
        table.list.push(Arc::new(Target {
            url: crate::store::redact_url(url),
            at,
            sources: OnceLock::new(),
        }));
        table.ids.insert(url.to_string(), id);
        Ok(id)
    }

    /// Target `id` (as its reference was given it).
    pub fn get(&self, id: u32) -> Arc<Target> {
        Arc::clone(&crate::sync::read(&self.table).list[id as usize])
    }

    /// The prefixes that refused targets would need allowed.
    pub fn refused(&self) -> Vec<String> {
        lock(&self.refused).iter().cloned().collect()
    }

    fn refuse(&self, url: &str, suggest: String) -> TargetError {
        let home = match &self.home_at {
            Home::Local(d) => d.display().to_string(),
            Home::Remote(u) => crate::store::redact_url(u),
        };
        lock(&self.refused).insert(suggest.clone());
        TargetError::Outside {
            url: crate::store::redact_url(url),
            home,
            suggest,
        }
    }

    fn resolve(&self, url: &str) -> Result<(Arc<dyn ReadableStore>, StoreKey), TargetError> {
        let key = |rest: &str| {
            StoreKey::new(rest.trim_start_matches("./")).map_err(|e| TargetError::BadKey {
                url: url.to_string(),
                reason: e.to_string(),
            })
        };
        let local = match url.split_once("://") {
            Some(("file", rest)) => Some(rest),
            Some(_) => None,
            None => Some(url),
        };
        if let Some(path) = local {
            let p = Path::new(path);
            if p.is_relative() {
                return Ok((Arc::clone(&self.home), key(path)?));
            }
            if let Home::Local(dir) = &self.home_at
                && let Ok(rel) = p.strip_prefix(dir)
            {
                return Ok((Arc::clone(&self.home), key(&rel.to_string_lossy())?));
            }
            for a in &self.allowed {
                if let Allowed::Local(dir) = a
                    && let Ok(rel) = p.strip_prefix(dir)
                {
                    return Ok((
                        self.store_for(&dir.display().to_string())?,
                        key(&rel.to_string_lossy())?,
                    ));
                }
            }
            let parent = p.parent().map_or("/".to_string(), |d| format!("{}/", d.display()));
            return Err(self.refuse(
                url,
                format!("file://{}", parent.trim_end_matches('/').to_string() + "/"),
            ));
        }
        if let Home::Remote(base) = &self.home_at
            && let Some(rest) = url.strip_prefix(base.as_str())
        {
            return Ok((Arc::clone(&self.home), key(rest)?));
        }
        for a in &self.allowed {
            if let Allowed::Remote(prefix) = a
                && let Some(rest) = url.strip_prefix(prefix.as_str())
            {
                return Ok((self.store_for(prefix)?, key(rest)?));
            }
        }
        if !crate::store::object_url(url) {
            return Err(TargetError::NotAUrl { url: url.to_string() });
        }
        Err(self.refuse(url, url_root(url)))
    }

    /// The store of an allowed prefix (a local directory or a URL).
    fn store_for(&self, prefix: &str) -> Result<Arc<dyn ReadableStore>, TargetError> {
        let mut stores = lock(&self.stores);
        if let Some(s) = stores.get(prefix) {
            return Ok(Arc::clone(s));
        }
        let store: Arc<dyn ReadableStore> = if prefix.starts_with('/') {
            Arc::new(FilesystemStore::with_symlinks(prefix, self.options.symlinks))
        } else {
            self.remote(prefix)?
        };
        stores.insert(prefix.to_string(), Arc::clone(&store));
        Ok(store)
    }

    #[cfg(feature = "remote")]
    fn remote(&self, prefix: &str) -> Result<Arc<dyn ReadableStore>, TargetError> {
        let opts = self
            .options
            .remote
            .as_ref()
            .ok_or_else(|| TargetError::NoRemoteOptions {
                prefix: prefix.to_string(),
            })?;
        crate::store::object::RemoteStore::open(prefix, opts)
            .map(|s| Arc::new(s) as Arc<dyn ReadableStore>)
            .map_err(|e| TargetError::Remote { reason: e.to_string() })
    }

    #[cfg(not(feature = "remote"))]
    fn remote(&self, prefix: &str) -> Result<Arc<dyn ReadableStore>, TargetError> {
        Err(TargetError::NoRemoteFeature {
            prefix: prefix.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;

    /// Distinct targets are kept for the mount's life, so their bytes are
    /// bounded: past MAX_TARGET_BYTES a new URL is an error on its key,
    /// and URLs already seen still resolve.
    #[test]
    fn interned_urls_are_bounded_in_bytes() {
        let t = Targets::new(
            Arc::new(MemoryStore::default()),
            Home::Local("/nonexistent".into()),
            TargetOptions::home_only(),
        );
        let url = |i: usize| format!("{i}/{}", "x".repeat(4000));
        let first = t.intern(&url(0)).unwrap();
        let refused = (1..20_000).map(|i| t.intern(&url(i))).position(|r| r.is_err());
        let at = refused.expect("some URL past the budget is refused");
        assert!(at * 3 * 4000 <= MAX_TARGET_BYTES, "refused only at {at}");
        let e = t.intern(&url(19_999)).unwrap_err();
        assert_eq!(e, TargetError::TooManyBytes);
        assert_eq!(t.intern(&url(0)).unwrap(), first);
    }
}

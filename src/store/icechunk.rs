//! Icechunk repositories, read through the `icechunk` crate.
//!
//! A repository is opened once ([`Repo::open`]); a version (branch tip, tag
//! or snapshot id) is resolved once, at mount, to a snapshot, and that
//! snapshot's read-only session is one more [`super::ReadableStore`]
//! ([`VersionStore`], `snapshot.rs`): its Zarr keys (`zarr.json`,
//! `a/c/0/1`) are answered from the snapshot and its manifests, which the
//! crate caches. Commits are `commit.rs`, the repository's storage and
//! options `config.rs`. Nothing is
//! ever written, so a mount is as immutable as the snapshot it shows.
//!
//! [`AllVersions`] is the `--all-versions` view: one store whose top level
//! is `branches/<name>/`, `tags/<name>/` and `snapshots/<id>/`, each the
//! whole hierarchy of that version. Those directories have no metadata of
//! their own in the repository: they (and a version with no root group, such
//! as the initial empty commit) answer a synthesized empty group.
//!
//! Invariants: every request runs on the process's runtime
//! (`store::runtime`) with a deadline
//! (a stalled store gives `TimedOut`, never a hang) and is registered in
//! [`super::inflight`]; a key the snapshot does not hold is `Ok(None)`, and
//! any other failure (a corrupt manifest, an unreachable bucket) is an
//! error naming the repository, the version and the key.

use crate::store::{StoreError, StoreResult};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use icechunk::Repository;
use icechunk::format::SnapshotId;
use icechunk::repository::VersionInfo;
use icechunk::store::StoreErrorKind;

use super::inflight;
use super::object::RemoteOptions;

/// The metadata of the directories Icechunk has no node for.
const EMPTY_GROUP: &[u8] = br#"{"zarr_format": 3, "node_type": "group", "attributes": {}}"#;

pub use super::Version;

/// One snapshot of the history.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Its id (20 characters of Crockford base32).
    pub id: String,
    /// Its commit message.
    pub message: String,
    /// When it was committed (`None`: its object cannot be read).
    pub at: Option<chrono::DateTime<chrono::Utc>>,
}

impl Snapshot {
    /// The comment lines a version's `header.cdl` carries.
    pub fn note(&self) -> String {
        match self.at {
            Some(at) => format!(
                "icechunk snapshot {}, committed {}: {}",
                self.id,
                at.format("%Y-%m-%dT%H:%M:%S%.3fZ"),
                self.message
            ),
            None => format!("icechunk snapshot {}: {}", self.id, self.message),
        }
    }
}

/// Branches or tags.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefKind {
    /// Branches (`refs/branch.NAME`).
    Branch,
    /// Tags (`refs/tag.NAME`).
    Tag,
}

impl RefKind {
    fn of(version: &Version) -> RefKind {
        match version {
            Version::Tag(_) => RefKind::Tag,
            _ => RefKind::Branch,
        }
    }

    fn singular(self) -> &'static str {
        match self {
            RefKind::Branch => "branch",
            RefKind::Tag => "tag",
        }
    }

    /// Also the name of the `--all-versions` directory.
    pub fn plural(self) -> &'static str {
        match self {
            RefKind::Branch => "branches",
            RefKind::Tag => "tags",
        }
    }
}

/// Why a version cannot be shown: it does not exist (exit 2), or the
/// repository could not be asked.
#[derive(Debug)]
pub enum VersionError {
    /// No branch, tag or snapshot of that name: it says which.
    NoSuch(String),
    /// The repository could not be read.
    Io(StoreError),
}

/// How many snapshots of the size of the one a mount shows its cache of
/// snapshots holds (the icechunk crate advises a snapshot be at most a
/// fifth of it).
pub const SNAPSHOTS_CACHED: u64 = 5;

/// The fewest nodes the cache of snapshots holds (about 7 MiB).
pub const MIN_SNAPSHOT_CACHE_NODES: u64 = 10_000;

/// An open repository.
pub struct Repo {
    repo: Repository,
    runtime: &'static tokio::runtime::Runtime,
    /// The source without secrets, for messages.
    display: String,
    deadline: Duration,
}

/// The crate's error as one line: its `Display` adds a span trace after a
/// blank line.
/// What the icechunk library reported, in one line (its errors carry a
/// span trace and nested sources that a log line cannot hold), and whether
/// it says that what was asked for does not exist.
#[derive(Debug, thiserror::Error)]
#[error("{text}")]
pub(super) struct Reported {
    text: String,
    not_found: bool,
}

/// A repository's error, which says by its kind when a snapshot, branch
/// or tag is not there.
fn reported_repository(e: icechunk::repository::RepositoryError) -> Reported {
    use icechunk::format::IcechunkFormatErrorKind as F;
    use icechunk::repository::RepositoryErrorKind as R;
    use icechunk::storage::StorageErrorKind as S;
    let not_found = matches!(
        &e.kind,
        R::SnapshotNotFound { .. }
            | R::FormatError(F::SnapshotIdNotFound { .. } | F::BranchNotFound { .. } | F::TagNotFound { .. })
            | R::StorageError(S::ObjectNotFound)
    );
    Reported {
        text: line(e),
        not_found,
    }
}

fn line(e: impl std::fmt::Display) -> String {
    let text = e.to_string();
    let first = text.split("\ncontext:").next().unwrap_or_default();
    first.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// No manifest is fetched before a chunk of its array is read: the crate
/// would otherwise, at each session (each version served, each commit),
/// fetch in the background the manifests of the first 50 arrays whose
/// names look like coordinates (and compile its patterns again for each),
/// which a mount that decodes a chunk only when someone reads it never
/// asked for. The repository's other manifest settings (its splitting) are
/// its own.
static NO_PRELOAD: std::sync::LazyLock<icechunk::config::ManifestConfig> =
    std::sync::LazyLock::new(|| icechunk::config::ManifestConfig {
        preload: Some(icechunk::config::ManifestPreloadConfig {
            max_total_refs: Some(0),
            preload_if: Some(icechunk::config::ManifestPreloadCondition::False),
            max_arrays_to_scan: Some(0),
        }),
        ..Default::default()
    });

impl Repo {
    /// Open the repository at `source` (`icechunk+s3://bucket/prefix`,
    /// `icechunk+file:///path` or a local path).
    pub fn open(source: &str, opts: &RemoteOptions) -> StoreResult<Repo> {
        Repo::open_with(source, opts, None)
    }

    /// [`Repo::open`], its cache of snapshots holding `snapshot_nodes`
    /// nodes (`None`: the crate's default).
    fn open_with(source: &str, opts: &RemoteOptions, snapshot_nodes: Option<u64>) -> StoreResult<Repo> {
        let display = super::redact_url(source).trim_end_matches('/').to_string();
        let runtime = super::runtime()?;
        let deadline = opts.request_timeout.saturating_mul(3);
        let bad = |e: String| StoreError::Corrupt(format!("{display}: {e}"));
        let refused = |e: config::ConfigError| bad(e.to_string());
        let repo = runtime.block_on(async {
            let options = config::Options::new(opts).map_err(refused)?;
            let storage = config::storage_for(source, &options).await.map_err(refused)?;
            let config = icechunk::RepositoryConfig {
                caching: snapshot_nodes.map(|n| icechunk::config::CachingConfig {
                    num_snapshot_nodes: Some(n),
                    ..Default::default()
                }),
                manifest: Some(NO_PRELOAD.clone()),
                ..Default::default()
            };
            let open = Repository::open(storage).config(config).execute();
            let repo = match tokio::time::timeout(deadline, open).await {
                Err(_) => return Err(StoreError::TimedOut(format!("{display}: no answer"))),
                Ok(r) => r.map_err(|e| bad(explain(line(e))))?,
            };
            let unread = config::unread_containers(repo.config(), &options);
            if !unread.is_empty() {
                let (repository, prefixes) = (&display, unread.join(", "));
                tracing::info!(
                    "{repository} declares virtual chunks in {prefixes}: they give EIO unless allowed with --store-option virtual_chunks=PREFIX"
                );
            }
            match config::virtual_access(repo.config(), &options).map_err(refused)? {
                None => Ok(repo),
                Some(access) => repo
                    .reopen(Some(access.config), Some(access.credentials))
                    .await
                    .map_err(|e| bad(line(e))),
            }
        })?;
        Ok(Repo {
            repo,
            runtime,
            display,
            deadline,
        })
    }

    /// Open the repository at `source`, its cache of snapshots sized for
    /// the one `version` names now: [`SNAPSHOTS_CACHED`] times its nodes,
    /// at least [`MIN_SNAPSHOT_CACHE_NODES`]. The crate's default (500,000
    /// nodes, about 700 bytes each) let every commit of a writer add its
    /// snapshot until hundreds were held. Where the version cannot be
    /// counted, the repository keeps the crate's size (its error comes
    /// where the version is read).
    pub fn open_for(source: &str, opts: &RemoteOptions, version: &Version) -> StoreResult<Repo> {
        let repo = Repo::open(source, opts)?;
        let Some(nodes) = repo.nodes_of(version) else {
            return Ok(repo);
        };
        let cached = nodes.saturating_mul(SNAPSHOTS_CACHED).max(MIN_SNAPSHOT_CACHE_NODES);
        tracing::debug!(nodes, cached, "the cache of snapshots holds {cached} nodes");
        drop(repo);
        Repo::open_with(source, opts, Some(cached))
    }

    /// How many nodes the snapshot `version` names holds, if it can be read.
    fn nodes_of(&self, version: &Version) -> Option<u64> {
        let snapshot = self.resolve(version).ok()?;
        let id = SnapshotId::try_from(snapshot.id.as_str()).ok()?;
        self.run("count the snapshot's nodes", async {
            let session = self
                .repo
                .readonly_session(&VersionInfo::SnapshotId(id))
                .await
                .map_err(reported_repository)?;
            let nodes = session
                .list_nodes(&icechunk::format::Path::root())
                .await
                .map_err(|e| Reported {
                    text: line(e),
                    not_found: false,
                })?;
            Ok(nodes.count() as u64)
        })
        .ok()
    }

    /// The repository's location, without secrets.
    pub fn display(&self) -> &str {
        &self.display
    }

    /// The repository's on-disk format version (1 or 2).
    pub fn spec_version(&self) -> u8 {
        self.repo.spec_version() as u8
    }

    fn run<T>(&self, what: &str, f: impl Future<Output = Result<T, Reported>>) -> StoreResult<T> {
        let _asking = inflight::begin(&format!("{}: {what}", self.display));
        self.runtime.block_on(async {
            match tokio::time::timeout(self.deadline, f).await {
                Err(_) => Err(StoreError::TimedOut(format!(
                    "{}: {what}: no answer in {:?}",
                    self.display, self.deadline
                ))),
                Ok(r) => r.map_err(|e| {
                    let text = format!("{}: {what}: {e}", self.display);
                    match e.not_found {
                        true => StoreError::NotFound(text),
                        false => StoreError::Corrupt(text),
                    }
                }),
            }
        })
    }

    /// The snapshot a version names, or [`VersionError::NoSuch`].
    pub fn resolve(&self, version: &Version) -> Result<Snapshot, VersionError> {
        let info =
            match version {
                Version::Branch(b) => VersionInfo::BranchTipRef(b.clone()),
                Version::Tag(t) => VersionInfo::TagRef(t.clone()),
                Version::Snapshot(s) => VersionInfo::SnapshotId(SnapshotId::try_from(s.as_str()).map_err(|_| {
                    VersionError::NoSuch(format!("{s:?} is not a snapshot id (20 characters of base32)"))
                })?),
            };
        if let Version::Branch(name) | Version::Tag(name) = version {
            let kind = RefKind::of(version);
            let names = self.ref_names(kind).map_err(VersionError::Io)?;
            if !names.contains(name) {
                let known: Vec<&str> = names.iter().map(String::as_str).collect();
                return Err(VersionError::NoSuch(format!(
                    "no {} {name:?} in {} (its {}: {})",
                    kind.singular(),
                    self.display,
                    kind.plural(),
                    known.join(", ")
                )));
            }
        }
        let id = self
            .run("resolve", async {
                self.repo.resolve_version(&info).await.map_err(reported_repository)
            })
            .map_err(|e| match version {
                // The repository has no such snapshot object.
                Version::Snapshot(_) if e.is_not_found() => {
                    VersionError::NoSuch(format!("no {version} in {}", self.display))
                }
                _ => VersionError::Io(e),
            })?;
        let history = self.history_of(&VersionInfo::SnapshotId(id.clone()), 1);
        match history {
            Ok(mut h) if !h.is_empty() => Ok(h.remove(0)),
            Ok(_) => Err(VersionError::NoSuch(format!("no {version} in {}", self.display))),
            Err(e) if matches!(version, Version::Snapshot(_)) => {
                Err(VersionError::NoSuch(format!("no {version} in {} ({e})", self.display)))
            }
            Err(e) => Err(VersionError::Io(e)),
        }
    }

    /// The names of the repository's branches or tags.
    fn ref_names(&self, kind: RefKind) -> StoreResult<BTreeSet<String>> {
        self.run(kind.plural(), async {
            match kind {
                RefKind::Branch => self.repo.list_branches().await.map_err(reported_repository),
                RefKind::Tag => self.repo.list_tags().await.map_err(reported_repository),
            }
        })
    }

    /// The repository's branches or tags, each with the snapshot it names.
    pub fn refs(&self, kind: RefKind) -> StoreResult<BTreeMap<String, String>> {
        let names = self.ref_names(kind)?;
        self.run(kind.plural(), async {
            let mut out = BTreeMap::new();
            for name in names {
                let id = match kind {
                    RefKind::Branch => self.repo.lookup_branch(&name).await,
                    RefKind::Tag => self.repo.lookup_tag(&name).await,
                };
                out.insert(name, id.map_err(reported_repository)?.to_string());
            }
            Ok(out)
        })
    }

    /// At most `limit` snapshots from `version` back through its parents,
    /// and the failure that ended the walk early, if one did (a corrupt or
    /// missing snapshot object).
    fn walk_history(&self, version: &VersionInfo, limit: usize) -> StoreResult<(Vec<Snapshot>, Option<StoreError>)> {
        let display = &self.display;
        self.run("history", async {
            let failed = |e| StoreError::Corrupt(format!("{display}: history: {}", line(e)));
            let stream = match self.repo.ancestry(version).await {
                Ok(s) => s,
                Err(e) => return Ok((Vec::new(), Some(failed(e)))),
            };
            let mut stream = std::pin::pin!(stream);
            let mut out = Vec::new();
            while out.len() < limit {
                match stream.next().await {
                    None => break,
                    Some(Ok(i)) => out.push(Snapshot {
                        id: i.id.to_string(),
                        message: i.message,
                        at: Some(i.flushed_at),
                    }),
                    Some(Err(e)) => return Ok((out, Some(failed(e)))),
                }
            }
            Ok((out, None))
        })
    }

    fn history_of(&self, version: &VersionInfo, limit: usize) -> StoreResult<Vec<Snapshot>> {
        match self.walk_history(version, limit)? {
            (out, None) => Ok(out),
            (_, Some(e)) => Err(e),
        }
    }

    /// Every snapshot reachable from the snapshots `tips` (the refs'), by
    /// id. A snapshot that cannot be read ends its walk with a warning
    /// naming it: what was read before it is still there.
    pub fn history<'a>(&self, tips: impl Iterator<Item = &'a String>) -> StoreResult<BTreeMap<String, Snapshot>> {
        let mut seen: BTreeMap<String, Snapshot> = BTreeMap::new();
        for id in tips {
            let sid = SnapshotId::try_from(id.as_str()).map_err(|e| StoreError::Corrupt(line(e)))?;
            let (walked, failed) = self.walk_history(&VersionInfo::SnapshotId(sid), usize::MAX)?;
            if let Some(e) = failed {
                tracing::warn!(snapshot = %id, error = %e, "history is cut short at an unreadable snapshot");
            }
            for s in walked {
                seen.entry(s.id.clone()).or_insert(s);
            }
        }
        Ok(seen)
    }

    /// The store of one resolved snapshot.
    pub fn version_store(self: &Arc<Repo>, snapshot: &Snapshot) -> StoreResult<VersionStore> {
        let id = SnapshotId::try_from(snapshot.id.as_str()).map_err(|e| StoreError::Corrupt(line(e)))?;
        let session = self.run("open snapshot", async {
            self.repo
                .readonly_session(&VersionInfo::SnapshotId(id))
                .await
                .map_err(reported_repository)
        })?;
        let store = self
            .runtime
            .block_on(icechunk::Store::from_session(Arc::new(tokio::sync::RwLock::new(
                session,
            ))));
        Ok(VersionStore {
            repo: Arc::clone(self),
            store,
            name: format!("{}@{}", self.display, snapshot.id),
            snapshot: snapshot.id.clone(),
        })
    }
}

/// The crate's advice, in nzfs's terms: a virtual chunk nobody allowed,
/// a format newer than this build reads.
fn explain(message: String) -> String {
    const UNAUTHORIZED: &str = ", to be able to fetch the chunk you need to authorize";
    const UPGRADE: &str = "Please upgrade the icechunk library";
    if let Some((head, _)) = message.split_once(UPGRADE) {
        return format!(
            "{head}A newer nzfs is needed (this one reads it with icechunk {})",
            icechunk::format::format_constants::ICECHUNK_LIB_VERSION
        );
    }
    match message.split_once(UNAUTHORIZED) {
        Some((head, _)) => {
            let prefix = head.rsplit(' ').next().unwrap_or_default();
            format!("{head}, which this mount does not read: allow it with --store-option virtual_chunks={prefix}")
        }
        None => message,
    }
}

/// A failure of the crate's store: `None` when the key is not there.
/// Whether the crate's error says the key is not in the snapshot: not
/// there, or a key no snapshot can hold (not a Zarr key, or a chunk
/// outside its array's grid), which every other store answers with `None`.
fn not_found(e: &icechunk::store::StoreError) -> bool {
    matches!(
        e.kind(),
        StoreErrorKind::NotFound(_) | StoreErrorKind::InvalidKey { .. } | StoreErrorKind::InvalidIndex { .. }
    )
}

mod commit;
mod config;
mod snapshot;
mod versions;
pub use commit::Commit;
pub use snapshot::VersionStore;
pub use versions::AllVersions;

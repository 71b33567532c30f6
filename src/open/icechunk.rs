//! Icechunk repositories as a source: the version asked for (a branch's
//! tip by default, a tag, a snapshot, or every version), checked before a
//! mount's daemon starts, and a branch followed by its tip.
//!
//! Invariant: a version that does not exist exits 2, a repository that
//! cannot be asked exits 1; without the `icechunk` feature a repository is
//! refused with how to build one that reads it.

#[cfg(feature = "icechunk")]
use super::{Kind, LOCAL_METADATA_TTL, REMOTE_METADATA_TTL, fail, refused, remote_options};
use super::{Opened, Source, SourceError, Versions};
#[cfg(feature = "icechunk")]
use crate::cdl::VersionRoot;
#[cfg(feature = "icechunk")]
use crate::store::ReadableStore;
#[cfg(feature = "icechunk")]
use crate::zarr::hierarchy::Hierarchy;

/// A version that is not there is [`SourceError::NoSuchVersion`].
#[cfg(feature = "icechunk")]
fn version_error(e: crate::store::icechunk::VersionError) -> SourceError {
    match e {
        crate::store::icechunk::VersionError::NoSuch(m) => SourceError::NoSuchVersion(m),
        crate::store::icechunk::VersionError::Io(e) => refused(format!("repository {e}")),
    }
}

/// Before `nzfs mount` starts its daemon: the Icechunk version asked for
/// exists, so that a wrong name fails in the foreground.
pub fn check_version(source: &Source) -> Result<(), SourceError> {
    #[cfg(feature = "icechunk")]
    if let Kind::Icechunk(versions) = &source.kind
        && let Some(version) = versions.named()
    {
        let repo =
            crate::store::icechunk::Repo::open(&source.given.to_string_lossy(), &remote_options(&source.access)?)
                .map_err(|e| refused(format!("repository {e}")))?;
        repo.resolve(version).map_err(version_error)?;
    }
    let _ = source;
    Ok(())
}

#[cfg(not(feature = "icechunk"))]
pub(super) fn open_icechunk(source: &Source, _versions: &Versions) -> Result<Opened, SourceError> {
    let given = source.given.to_string_lossy();
    let why = super::Built::THIS.refusal(&given);
    super::fail(why.unwrap_or_else(|| format!("{}: not an Icechunk repository this build reads", source.shown())))
}

/// Snapshot `s` shown at `path` of the mount (`""`: the whole mount).
#[cfg(feature = "icechunk")]
fn shown_at(s: &crate::store::icechunk::Snapshot, path: String) -> VersionRoot {
    VersionRoot {
        path,
        note: s.note(),
        time: s.at.map(std::time::SystemTime::from),
    }
}

/// The version shown of `versions` (the tip of `main` when none is named).
#[cfg(feature = "icechunk")]
fn shown_version(versions: &Versions) -> crate::store::icechunk::Version {
    (versions.named().cloned()).unwrap_or_else(|| crate::store::icechunk::Version::Branch("main".into()))
}

/// Open an Icechunk repository at the version `versions` names (the tip
/// of `main` by default), or every version. A version that does not
/// exist is [`SourceError::NoSuchVersion`].
#[cfg(feature = "icechunk")]
pub(super) fn open_icechunk(from: &Source, versions: &Versions) -> Result<Opened, SourceError> {
    use crate::store::icechunk::{AllVersions, Repo, Version};
    use std::sync::Arc;
    let given = from.given.to_string_lossy();
    let source: &str = &given;
    let shown = from.shown();
    let all_versions = *versions == Versions::All;
    // Its cache of snapshots sized for the one shown (every version's,
    // with --all-versions: the crate's own size).
    let opts = remote_options(&from.access)?;
    let repo = match all_versions {
        true => Repo::open(source, &opts),
        false => Repo::open_for(source, &opts, &shown_version(versions)),
    };
    let repo = repo.map_err(|e| refused(format!("repository {e}")))?;
    tracing::info!(repository = %shown, format = repo.spec_version(), "opened an Icechunk repository");
    let repo = Arc::new(repo);
    let mut follows = None;
    let (store, versions, shown): (Box<dyn ReadableStore>, _, _) = if all_versions {
        let all = AllVersions::new(Arc::clone(&repo)).map_err(|e| refused(format!("repository {e}")))?;
        let versions = all.versions().map(|(dir, s)| shown_at(s, dir)).collect();
        (Box::new(all), versions, format!("{shown} (all versions)"))
    } else {
        let version = shown_version(versions);
        // A branch moves with every commit: a mount follows its tip.
        if let Version::Branch(branch) = &version {
            let every = match source.contains("://") {
                true => REMOTE_METADATA_TTL,
                false => LOCAL_METADATA_TTL,
            };
            let tip = BranchTip {
                repo: Arc::clone(&repo),
                branch: branch.clone(),
                shown: shown.clone(),
            };
            follows = Some((every, Arc::new(tip) as Arc<dyn crate::fs::Rereading>));
        }
        let snapshot = repo.resolve(&version).map_err(version_error)?;
        tracing::info!(repository = %shown, %version, snapshot = %snapshot.id, "showing {version}: {}", snapshot.note());
        let store = repo
            .version_store(&snapshot)
            .map_err(|e| refused(format!("repository {e}")))?;
        let versions = vec![shown_at(&snapshot, String::new())];
        (Box::new(store), versions, format!("{shown}@{}", snapshot.id))
    };
    let hierarchy = match Hierarchy::open(store.as_ref()) {
        Ok(h) => h,
        // The initial commit of a repository has no root group yet.
        Err(crate::zarr::hierarchy::OpenError::NotZarr) if !all_versions => {
            return fail(format!("{shown} is empty at this version (no root group)"));
        }
        Err(e) => return fail(format!("repository {shown}: {e}")),
    };
    Ok(Opened {
        store,
        hierarchy,
        shown,
        versions,
        follows,
        repository: Some(repo),
    })
}

/// An Icechunk branch, looked at again by its tip (one request for the
/// branch's reference) and read again at its new snapshot.
#[cfg(feature = "icechunk")]
struct BranchTip {
    repo: std::sync::Arc<crate::store::icechunk::Repo>,
    branch: String,
    /// The repository as messages name it.
    shown: String,
}

#[cfg(feature = "icechunk")]
impl BranchTip {
    fn tip(&self) -> Result<crate::store::icechunk::Snapshot, crate::fs::RereadError> {
        let version = crate::store::icechunk::Version::Branch(self.branch.clone());
        self.repo.resolve(&version).map_err(|e| match e {
            crate::store::icechunk::VersionError::NoSuch(m) => crate::fs::RereadError::NoSuchVersion(m),
            crate::store::icechunk::VersionError::Io(e) => crate::fs::RereadError::Store(e),
        })
    }
}

/// What a look at the tip found: its snapshot's id, or why it cannot be
/// seen (a failure is a look of its own: the reading again that follows
/// fails too, and says why).
#[cfg(feature = "icechunk")]
fn seen(tip: Result<&str, &str>) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    tip.hash(&mut h);
    h.finish()
}

#[cfg(feature = "icechunk")]
impl BranchTip {
    /// Snapshot `snapshot` of the branch, served with `hierarchy`.
    fn at(
        &self,
        snapshot: &crate::store::icechunk::Snapshot,
        hierarchy: Hierarchy,
        store: crate::store::icechunk::VersionStore,
        own_commit: Option<Vec<String>>,
    ) -> crate::fs::Reread {
        let shown = format!("{}@{}", self.shown, snapshot.id);
        let versions = vec![shown_at(snapshot, String::new())];
        crate::fs::Reread {
            hierarchy,
            store: Some((Box::new(store), shown, versions)),
            own_commit,
        }
    }
}

#[cfg(feature = "icechunk")]
impl crate::fs::Rereading for BranchTip {
    fn look(&self, _store: &dyn ReadableStore, _hierarchy: &Hierarchy) -> u64 {
        let tip = self.tip().map_err(|e| e.to_string());
        seen(tip.as_ref().map(|s| s.id.as_str()).map_err(String::as_str))
    }
    fn reread(
        &self,
        _store: &dyn ReadableStore,
        _served: &Hierarchy,
        _since: Option<u64>,
    ) -> Result<crate::fs::Reread, crate::fs::RereadError> {
        let snapshot = self.tip()?;
        let store = self.repo.version_store(&snapshot)?;
        let hierarchy = Hierarchy::open(&store)?;
        tracing::info!(repository = %self.shown, branch = %self.branch, snapshot = %snapshot.id, "the branch moved: {}", snapshot.note());
        Ok(self.at(&snapshot, hierarchy, store, None))
    }
    /// The mount's own commit on the snapshot it serves: its hierarchy is
    /// the one served with the commit's change (a node removed, or the
    /// same), and only the changed array's chunks differ.
    fn after_own_commit(
        &self,
        store: &dyn ReadableStore,
        hierarchy: &Hierarchy,
        commit: &crate::fs::OwnCommit<'_>,
    ) -> Option<(crate::fs::Reread, u64)> {
        if store.snapshot().as_deref() != Some(commit.parent) {
            return None;
        }
        let hierarchy = commit.hierarchy(hierarchy)?;
        let version = crate::store::icechunk::Version::Snapshot(commit.snapshot.to_string());
        let snapshot = self.repo.resolve(&version).ok()?;
        let store = self.repo.version_store(&snapshot).ok()?;
        tracing::info!(repository = %self.shown, branch = %self.branch, snapshot = %snapshot.id, "this mount's commit: {}", snapshot.note());
        let made = self.at(&snapshot, hierarchy, store, Some(commit.rewrote()));
        Some((made, seen(Ok(&snapshot.id))))
    }
}

/// The spool of a writable mount (`--writable`) of the Icechunk branch
/// `source` shows (`opened`: what the mount reads, whose repository the
/// commits go through): files closed there are committed to that branch.
/// What an earlier daemon left in the spool is logged.
#[cfg(feature = "icechunk")]
pub fn writable_spool(
    source: &Source,
    opened: &Opened,
    dir: &std::path::Path,
    size: u64,
) -> Result<crate::write::spool::Spool, SourceError> {
    use crate::store::icechunk::Version;
    let branch = match &source.kind {
        Kind::Icechunk(Versions::One(None)) => "main".to_string(),
        Kind::Icechunk(Versions::One(Some(Version::Branch(b)))) => b.clone(),
        _ => {
            return fail(format!(
                "--writable: {} is not an Icechunk branch; only a branch can be mounted writable",
                source.shown()
            ));
        }
    };
    let repo = match &opened.repository {
        Some(repo) => std::sync::Arc::clone(repo),
        None => std::sync::Arc::new(
            crate::store::icechunk::Repo::open_for(
                &source.given.to_string_lossy(),
                &remote_options(&source.access)?,
                &Version::Branch(branch.clone()),
            )
            .map_err(|e| refused(format!("repository {e}")))?,
        ),
    };
    let target = crate::write::Branch { repo, branch };
    let (spool, left) = crate::write::spool::Spool::open(dir, size, crate::fs::STAGED_INO, Box::new(target))
        .map_err(|e| refused(format!("--writable: {e}")))?;
    for file in left {
        tracing::warn!(
            file = %file.display(),
            "left in the spool by an earlier daemon (killed before its writer closed it, or its commit failed): it is not in the repository"
        );
    }
    Ok(spool)
}

/// Without the `icechunk` feature nothing is writable.
#[cfg(not(feature = "icechunk"))]
pub fn writable_spool(
    source: &Source,
    _opened: &Opened,
    _dir: &std::path::Path,
    _size: u64,
) -> Result<crate::write::spool::Spool, SourceError> {
    Err(SourceError::Refused(format!(
        "--writable: {} cannot be mounted writable: only an Icechunk branch can, and this nzfs was built \
         without Icechunk support (it is in the default features: cargo build --release)",
        source.shown()
    )))
}

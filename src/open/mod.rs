//! Opening a [`Source`] (what `nzfs mount`, `check` and `cdl` are given: a
//! store directory, a zip, a reference set, an object-store URL with
//! feature `remote`, an Icechunk repository with feature `icechunk`), with
//! its hierarchy discovered.
//!
//! Invariants: [`open`] matches the source's kind once, and every kind
//! comes back as one [`Opened`], so that the commands above it never ask
//! which kind it was; failures are [`SourceError`]s, which the command
//! line turns into its exit codes; nothing here knows the command line.

use std::path::Path;

use crate::array::Dataset;
use crate::cdl::VersionRoot;
use crate::store::references::{Home, ReferenceStore, TargetOptions, Targets};
use crate::store::{FilesystemStore, ReadableStore, Symlinks};
use crate::zarr::documents::ZMETADATA;
use crate::zarr::hierarchy::{Hierarchy, OpenError};

mod follow;
mod icechunk;
mod source;

use icechunk::open_icechunk;
pub use icechunk::{check_version, writable_spool};
pub use source::{Access, Built, Kind, Source, SourceError, Versions};

fn refused(msg: impl Into<String>) -> SourceError {
    SourceError::Refused(msg.into())
}

fn fail<T>(msg: impl Into<String>) -> Result<T, SourceError> {
    Err(refused(msg))
}

/// A store that cannot be opened as a hierarchy, `message` saying why; one
/// that is not there (nothing at its path or prefix, or no Zarr metadata)
/// is [`SourceError::NotFound`].
fn unopened(e: &OpenError, message: String) -> SourceError {
    match e {
        OpenError::NotZarr => SourceError::NotFound(message),
        OpenError::Io(io) if io.kind() == std::io::ErrorKind::NotFound => SourceError::NotFound(message),
        _ => refused(message),
    }
}

/// The store as shown in /proc/mounts and messages (see
/// [`crate::store::redact_url`]).
pub fn shown_store(store: &Path) -> String {
    crate::store::redact_url(&store.to_string_lossy())
}

/// An opened source.
pub struct Opened {
    /// The store to read.
    pub store: Box<dyn ReadableStore>,
    /// Its groups and arrays.
    pub hierarchy: Hierarchy,
    /// What messages and `nzfs status` call it (an Icechunk version adds
    /// `@snapshot`).
    pub shown: String,
    /// The versions it shows, where (an Icechunk repository's).
    pub versions: Vec<VersionRoot>,
    /// How often a mount of it looks at its metadata again by default,
    /// and how (`None`: it is read once: a zip, a reference set, a pinned
    /// Icechunk version).
    pub follows: Option<(std::time::Duration, std::sync::Arc<dyn crate::fs::Rereading>)>,
    /// The Icechunk repository it reads, where it is one: a writable
    /// mount commits through the same handle, so that the snapshot it
    /// reads back after a commit of its own is the one its cache holds.
    #[cfg(feature = "icechunk")]
    pub repository: Option<std::sync::Arc<crate::store::icechunk::Repo>>,
}

/// How often a mount of a local directory looks at its metadata again: a
/// look is a `stat` per document and a listing per group, from the page
/// cache.
pub const LOCAL_METADATA_TTL: std::time::Duration = std::time::Duration::from_secs(5);
/// How often a mount of object storage or HTTP does: gcsfuse's stat-cache
/// default, so that a look (a `HEAD` per document, a `LIST` per group)
/// costs a busy mount at most one round a minute.
pub const REMOTE_METADATA_TTL: std::time::Duration = std::time::Duration::from_secs(60);

impl Opened {
    fn plain(store: Box<dyn ReadableStore>, hierarchy: Hierarchy, shown: String) -> Opened {
        Opened {
            store,
            hierarchy,
            shown,
            versions: Vec::new(),
            follows: None,
            #[cfg(feature = "icechunk")]
            repository: None,
        }
    }
}

/// The environment variables object_store reads, as its configuration keys.
#[cfg(feature = "remote")]
fn remote_options(access: &Access) -> Result<crate::store::object::RemoteOptions, SourceError> {
    let mut environment: Vec<(String, String)> = Vec::new();
    if let Ok(name) = std::env::var("AWS_PROFILE") {
        // object_store reads no profiles: the shared files' settings come
        // first, so the environment's own AWS_* variables still win.
        let home = std::env::var("HOME").unwrap_or_default();
        let file = |var: &str, default: &str| std::env::var(var).unwrap_or_else(|_| format!("{home}/.aws/{default}"));
        let (credentials, config) = (
            file("AWS_SHARED_CREDENTIALS_FILE", "credentials"),
            file("AWS_CONFIG_FILE", "config"),
        );
        let text = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
        match crate::store::object::aws_profile(&name, &text(&credentials), &text(&config)) {
            Some(settings) => environment.extend(settings),
            None => {
                return fail(format!(
                    "AWS_PROFILE={name}: no such profile in {credentials} or {config}"
                ));
            }
        }
    }
    environment.extend(
        std::env::vars()
            .filter(|(k, _)| ["AWS_", "GOOGLE_", "AZURE_"].iter().any(|p| k.starts_with(p)))
            .map(|(k, v)| (k.to_ascii_lowercase(), v)),
    );
    Ok(crate::store::object::RemoteOptions {
        environment,
        options: access.options.clone(),
        anonymous: access.anonymous,
        retries: usize::from(access.retries),
        connect_timeout: access.connect_timeout.max(std::time::Duration::from_secs(1)),
        request_timeout: access.request_timeout.max(std::time::Duration::from_secs(1)),
    })
}

/// Open `source` and discover its hierarchy: its kind is matched once.
pub fn open(source: &Source) -> Result<Opened, SourceError> {
    let store = source.given.as_path();
    let access = &source.access;
    #[cfg(feature = "remote")]
    let url = source.given.to_str().unwrap_or_default();
    #[cfg(feature = "remote")]
    let path = url.split(['?', '#']).next().unwrap_or_default();
    if access.disk_cache.is_some() && source.is_local_files() {
        tracing::warn!("--disk-cache applies to remote stores only; a local store is read directly");
    }
    match &source.kind {
        Kind::Icechunk(versions) => open_icechunk(source, versions),
        // A zip in object storage: its directory's store, read by ranges.
        #[cfg(feature = "remote")]
        Kind::RemoteZip => {
            let (parent, name) = path.rsplit_once('/').unwrap_or_default();
            let remote = crate::store::object::RemoteStore::open(&format!("{parent}/"), &remote_options(access)?)
                .map_err(|e| refused(format!("store {e}")))?;
            let opened = open_zip(Box::new(remote), name, &source.shown())?;
            Ok(opened.followed_remote_file(source, parent, name))
        }
        #[cfg(feature = "remote")]
        Kind::RemoteReferences => {
            let opened = remote_references(source, path, false)?;
            Ok(match path.trim_end_matches('/').rsplit_once('/') {
                Some((parent, name)) => opened.followed_remote_file(source, parent, name),
                None => opened,
            })
        }
        #[cfg(feature = "remote")]
        Kind::Remote => open_remote(source, url, path),
        // A local file (a reference set, a zip) is followed by its stat, and
        // opened again whole when it was replaced or rewritten.
        Kind::References => local_references(source, false).map(|o| o.followed_file(store, source)),
        Kind::Zip => {
            let path = store.canonicalize()?;
            let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
                return fail(format!("store {}: not a file name nzfs can read", store.display()));
            };
            let inner = FilesystemStore::with_symlinks(dir, access.symlinks);
            open_zip(Box::new(inner), name, &source.shown()).map(|o| o.followed_file(store, source))
        }
        Kind::Directory => {
            let s = local_store(store, access.symlinks)?;
            let h = match Hierarchy::open(&s) {
                // A Parquet set is followed by its .zmetadata.
                Err(crate::zarr::hierarchy::OpenError::References) => {
                    return local_references(source, true).map(|o| o.followed_file(&store.join(ZMETADATA), source));
                }
                Err(crate::zarr::hierarchy::OpenError::Ocdbt(dbs)) => {
                    return open_ocdbt(Box::new(s), dbs, source.shown());
                }
                h => h.map_err(|e| unopened(&e, format!("store {}: {e}", store.display())))?,
            };
            Ok(Opened::plain(Box::new(s), h, source.shown()).followed(LOCAL_METADATA_TTL))
        }
    }
}

/// A reference set in object storage (a JSON file, or with `parquet` a
/// Parquet directory at `path`): its directory is its home.
#[cfg(feature = "remote")]
fn remote_references(source: &Source, path: &str, parquet: bool) -> Result<Opened, SourceError> {
    let Some((parent, name)) = path.trim_end_matches('/').rsplit_once('/') else {
        return fail(format!("store {}: not a reference set's URL", source.shown()));
    };
    let parent = format!("{parent}/");
    // One set of options for the set's home and its targets.
    let (allowed, remote) = reference_options(&source.access)?;
    let home = crate::store::object::RemoteStore::open(&parent, &remote).map_err(|e| refused(format!("store {e}")))?;
    let options = TargetOptions {
        allowed,
        symlinks: source.access.symlinks,
        remote: Some(remote),
    };
    open_references(
        Box::new(home),
        Home::Remote(parent),
        name,
        parquet,
        options,
        source.shown(),
    )
}

/// An object-store or HTTP prefix (`url`, `path` without its query): a
/// store, or a kerchunk Parquet set told by its `.zmetadata`.
#[cfg(feature = "remote")]
fn open_remote(source: &Source, url: &str, path: &str) -> Result<Opened, SourceError> {
    // `virtual_chunks=` is no object_store setting: a Parquet set (told
    // only once the store is open) takes it, any other store ignores it.
    let (allowed, plain) = reference_options(&source.access)?;
    let remote = crate::store::object::RemoteStore::open(url, &plain).map_err(|e| refused(format!("store {e}")))?;
    let shown = remote.display().to_string();
    let remote: Box<dyn crate::store::ReadableStore> = match &source.access.disk_cache {
        Some((dir, size)) => Box::new(
            crate::store::disk_cache::DiskCached::new(Box::new(remote), &shown, dir, *size)
                .map_err(|e| refused(e.to_string()))?,
        ),
        None => Box::new(remote),
    };
    let hierarchy = match Hierarchy::open(remote.as_ref()) {
        // A kerchunk Parquet set: mounted as one, from its directory's parent.
        Err(crate::zarr::hierarchy::OpenError::References) => {
            // Followed by its .zmetadata, which its writer rewrites
            // with the set.
            return remote_references(source, path, true)
                .map(|o| o.followed_remote_file(source, path.trim_end_matches('/'), ZMETADATA));
        }
        Err(crate::zarr::hierarchy::OpenError::Ocdbt(dbs)) => return open_ocdbt(remote, dbs, source.shown()),
        other => other,
    };
    if !allowed.is_empty() {
        tracing::warn!(
            "--store-option virtual_chunks= applies to reference sets and Icechunk repositories; {shown} is neither"
        );
    }
    let hierarchy = hierarchy.map_err(|e| {
        let http = url.starts_with("http://") || url.starts_with("https://");
        let text = e.to_string();
        // object_store looks for credentials last on the cloud's
        // instance-metadata endpoint: failing there means none were
        // found, and that leads the message (the endpoint's own words
        // follow, for who wants them).
        if text.contains("169.254.169.254") || text.contains("metadata.google.internal") {
            return refused(format!(
                "store {shown}: no credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY \
                 (or AWS_PROFILE), GOOGLE_APPLICATION_CREDENTIALS or AZURE_STORAGE_ACCOUNT_KEY, or use \
                 --anonymous for a public bucket (the last place looked at said: {text})"
            ));
        }
        // A bucket (or container) that is not there: the store is not.
        if text.contains("NoSuchBucket") || text.contains("ContainerNotFound") {
            let bucket = url
                .split("://")
                .nth(1)
                .and_then(|r| r.split('/').next())
                .unwrap_or_default();
            return SourceError::NotFound(format!(
                "store {shown}: the bucket {bucket:?} does not exist (or is not at this endpoint)"
            ));
        }
        let hint = match e {
            crate::zarr::hierarchy::OpenError::Io(_) if http => {
                " (an HTTP server cannot be listed: consolidate the store's metadata, e.g. \
                 zarr.consolidate_metadata() or xarray's consolidated=True, or mount the URL of one array)"
            }
            _ => "",
        };
        unopened(&e, format!("store {shown}: {text}{hint}"))
    })?;
    Ok(Opened::plain(remote, hierarchy, source.shown()).followed(REMOTE_METADATA_TTL))
}

/// The OCDBT databases of `inner` in directories `databases`
/// (tensorstore's `ocdbt` key-value store; an Orbax checkpoint, or a
/// `CheckpointManager`'s steps), each at its latest version, as one store.
/// Not followed: a new version is a new manifest, read by a new mount.
fn open_ocdbt(
    inner: Box<dyn crate::store::ReadableStore>,
    databases: Vec<String>,
    shown: String,
) -> Result<Opened, SourceError> {
    let store = crate::store::ocdbt::OcdbtStore::open_databases(inner, databases)
        .map_err(|e| refused(format!("store {shown}: {e}")))?;
    let hierarchy = Hierarchy::open(&store).map_err(|e| unopened(&e, format!("store {shown}: {e}")))?;
    tracing::info!(
        databases = store.databases().len(),
        nodes = hierarchy.nodes.len(),
        "read OCDBT databases (their latest versions)"
    );
    Ok(Opened::plain(Box::new(store), hierarchy, shown))
}

/// A local reference set: a JSON file, or (told by the hierarchy's
/// refusal of its .zmetadata) with `parquet` a Parquet directory; its home
/// is its parent.
fn local_references(source: &Source, parquet: bool) -> Result<Opened, SourceError> {
    let store = source.given.as_path();
    let path = store.canonicalize()?;
    let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
        return fail(format!("store {}: not a name nzfs can read", store.display()));
    };
    let home = FilesystemStore::with_symlinks(dir, source.access.symlinks);
    let at = Home::Local(dir.to_path_buf());
    open_references(
        Box::new(home),
        at,
        name,
        parquet,
        target_options(&source.access)?,
        source.shown(),
    )
}

/// The `virtual_chunks=` prefixes of `--store-option`, and the remote
/// options without them (they allow reference targets, and are
/// no object_store setting).
#[cfg(feature = "remote")]
fn reference_options(access: &Access) -> Result<(Vec<String>, crate::store::object::RemoteOptions), SourceError> {
    let mut options = remote_options(access)?;
    let mut allowed = Vec::new();
    options.options.retain(|(k, v)| {
        let target = k == "virtual_chunks";
        if target {
            allowed.extend(v.split(',').map(|p| p.trim().to_string()).filter(|p| !p.is_empty()));
        }
        !target
    });
    Ok((allowed, options))
}

/// How a reference set's targets may be read, from `access`: the
/// `virtual_chunks=` prefixes, the symlink policy, and (with `remote`) the
/// object-store options.
fn target_options(access: &Access) -> Result<TargetOptions, SourceError> {
    #[cfg(feature = "remote")]
    let options = {
        let (allowed, remote) = reference_options(access)?;
        TargetOptions {
            allowed,
            symlinks: access.symlinks,
            remote: Some(remote),
        }
    };
    #[cfg(not(feature = "remote"))]
    let options = TargetOptions {
        allowed: access
            .options
            .iter()
            .filter(|(k, _)| k == "virtual_chunks")
            .flat_map(|(_, v)| v.split(',').map(|p| p.trim().to_string()).filter(|p| !p.is_empty()))
            .collect(),
        symlinks: access.symlinks,
    };
    Ok(options)
}

/// Open the reference set `name` in `home` (a JSON file, or with `parquet`
/// a Parquet directory), its targets read as `options` allow.
fn open_references(
    home: Box<dyn ReadableStore>,
    at: Home,
    name: &str,
    parquet: bool,
    options: TargetOptions,
    shown: String,
) -> Result<Opened, SourceError> {
    let key = crate::store::StoreKey::new(name).map_err(|e| refused(format!("store {shown}: {e}")))?;
    let targets = Targets::new(std::sync::Arc::from(home), at, options);
    let refs = if parquet {
        ReferenceStore::open_parquet(targets, key)
    } else {
        ReferenceStore::open(targets, key)
    }
    .map_err(|e| refused(format!("store {shown}: {e}")))?;
    let hierarchy = Hierarchy::open(&refs).map_err(|e| refused(format!("store {shown}: {e}")))?;
    tracing::info!(store = %shown, "opened a {} reference set", if parquet { "Parquet" } else { "JSON" });
    Ok(Opened::plain(Box::new(refs), hierarchy, shown))
}

/// Open the zip at `key` of `inner` as a store.
fn open_zip(inner: Box<dyn ReadableStore>, key: &str, shown: &str) -> Result<Opened, SourceError> {
    let key = crate::store::StoreKey::new(key).map_err(|e| refused(format!("store {shown}: {e}")))?;
    let zip = crate::store::zip::ZipStore::open(inner, key).map_err(|e| refused(format!("store {shown}: {e}")))?;
    let hierarchy = Hierarchy::open(&zip).map_err(|e| refused(format!("store {shown}: {e}")))?;
    Ok(Opened::plain(Box::new(zip), hierarchy, shown.to_string()))
}

/// Which netCDF file `path` is by its first bytes, if it is one.
fn netcdf_kind(path: &Path) -> Option<&'static str> {
    use std::io::Read;
    let mut magic = [0u8; 4];
    std::fs::File::open(path).ok()?.read_exact(&mut magic).ok()?;
    match &magic {
        b"CDF\x01" => Some("netCDF classic"),
        b"CDF\x02" => Some("netCDF 64-bit offset"),
        b"CDF\x05" => Some("netCDF CDF-5"),
        b"\x89HDF" => Some("netCDF-4, HDF5"),
        _ => None,
    }
}

/// The store of a directory (its hierarchy is discovered by the caller).
fn local_store(store: &Path, symlinks: Symlinks) -> Result<FilesystemStore, SourceError> {
    match std::fs::metadata(store) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let shown = std::path::absolute(store).unwrap_or_else(|_| store.to_path_buf());
            return Err(SourceError::NotFound(format!(
                "store {} does not exist",
                shown.display()
            )));
        }
        Err(e) => return fail(format!("store {}: {e}", store.display())),
        Ok(m) if !m.is_dir() => {
            if let Some(kind) = netcdf_kind(store) {
                return fail(format!(
                    "store {} is a netCDF file ({kind}): programs that read netCDF read it as it is \
                     (ncdump -h {}), with no mount; nzfs mounts Zarr stores, and shows each group of one \
                     as a netCDF file",
                    store.display(),
                    store.display()
                ));
            }
            return fail(format!(
                "store {} is not a directory or a zip: nzfs mounts a store directory, a zip of one \
                 (zarr-python's ZipStore), an object-store URL, or an Icechunk repository",
                store.display()
            ));
        }
        Ok(_) => {}
    }
    // Absolute, so that the daemon can leave its working directory.
    if symlinks == Symlinks::Follow {
        tracing::warn!(
            store = %store.display(),
            "--follow-symlinks: symlinks that leave the store are followed; with allow_other, \
             every user can read what they point at"
        );
    }
    Ok(FilesystemStore::with_symlinks(store.canonicalize()?, symlinks))
}

/// Open a source as a dataset, for reading it without a mount (`check`,
/// `cdl`): the same hierarchy and arrays a mount shows.
pub fn open_dataset(source: &Source, cache_bytes: u64) -> Result<Dataset, SourceError> {
    let opened = open(source)?;
    Ok(Dataset::new(
        std::sync::Arc::from(opened.store),
        opened.hierarchy,
        cache_bytes,
        crate::array::MissingChunks::Fill,
    ))
}

//! Opening what `nzfs mount`, `check` and `cdl` are given: a store
//! directory, an object-store URL (feature `remote`) or an Icechunk
//! repository (feature `icechunk`), with its hierarchy discovered.
//!
//! Invariant: every source kind comes back as one [`Opened`], so that the
//! commands above it never ask which kind it was; a version flag given for
//! a source that has no versions is an error, not ignored.

use std::path::Path;

use crate::array::Dataset;
use crate::cdl::VersionRoot;
use crate::cli::{CliError, StoreArgs};
use crate::store::references::{Home, ReferenceStore, TargetOptions, Targets};
use crate::store::{FilesystemStore, ReadableStore, Symlinks};
use crate::zarr::documents::ZMETADATA;
use crate::zarr::hierarchy::{Hierarchy, OpenError};

mod follow;
mod icechunk;

use icechunk::open_icechunk;
pub use icechunk::{check_version, writable_spool};

fn fail<T>(msg: impl Into<String>) -> Result<T, CliError> {
    Err(CliError::new(msg))
}

/// A store that cannot be opened as a hierarchy, `message` saying why; one
/// that is not there (nothing at its path or prefix, or no Zarr metadata)
/// exits with [`crate::cli::EXIT_NOT_FOUND`].
fn unopened(e: &OpenError, message: String) -> CliError {
    match e {
        OpenError::NotZarr => CliError::not_found(message),
        OpenError::Io(io) if io.kind() == std::io::ErrorKind::NotFound => CliError::not_found(message),
        _ => CliError::new(message),
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
        }
    }
}

/// The environment variables object_store reads, as its configuration keys.
#[cfg(feature = "remote")]
fn remote_options(args: &StoreArgs) -> Result<crate::store::object::RemoteOptions, CliError> {
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
    let mut options = Vec::new();
    for kv in &args.store_options {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| CliError::new(format!("--store-option {kv:?}: expected KEY=VALUE")))?;
        options.push((k.trim().to_ascii_lowercase(), v.to_string()));
    }
    Ok(crate::store::object::RemoteOptions {
        environment,
        options,
        anonymous: args.anonymous,
        retries: usize::from(args.retries),
        connect_timeout: std::time::Duration::from_secs(args.connect_timeout.max(1)),
        request_timeout: std::time::Duration::from_secs(args.request_timeout.max(1)),
    })
}

/// Open a store (a directory, or with the `remote` feature a URL, or with
/// the `icechunk` feature a repository) and discover its hierarchy.
pub fn open_store(store: &Path, args: &StoreArgs) -> Result<Opened, CliError> {
    if let Some(why) = store.to_str().and_then(|s| crate::cli::Built::THIS.refusal(s)) {
        return fail(why);
    }
    if let Some(source) = store.to_str().filter(|s| crate::store::icechunk_source(s)) {
        return open_icechunk(source, args);
    }
    if args.version().is_some() {
        return fail(format!(
            "--branch, --tag, --snapshot and --all-versions apply to Icechunk repositories; {} is not one",
            shown_store(store)
        ));
    }
    #[cfg(feature = "remote")]
    if let Some(url) = store.to_str().filter(|s| crate::store::object::is_remote(s)) {
        // A zip in object storage: its directory's store, read by ranges.
        let path = url.split(['?', '#']).next().unwrap_or_default();
        if path.ends_with(".zip")
            && let Some((parent, name)) = path.rsplit_once('/')
        {
            let remote = crate::store::object::RemoteStore::open(&format!("{parent}/"), &remote_options(args)?)
                .map_err(|e| CliError::new(format!("store {e}")))?;
            let opened = open_zip(Box::new(remote), name, &shown_store(store))?;
            return Ok(opened.followed_remote_file(store, args, parent, name));
        }
        // A reference set in object storage: its directory is its home. A
        // Parquet set is told by its .zmetadata (below).
        let remote_references = |parquet: bool| -> Result<Opened, CliError> {
            let Some((parent, name)) = path.trim_end_matches('/').rsplit_once('/') else {
                return fail(format!("store {}: not a reference set's URL", shown_store(store)));
            };
            let parent = format!("{parent}/");
            // One set of options for the set's home and its targets.
            let (allowed, remote) = reference_options(args)?;
            let home = crate::store::object::RemoteStore::open(&parent, &remote)
                .map_err(|e| CliError::new(format!("store {e}")))?;
            let options = TargetOptions {
                allowed,
                symlinks: args.policy(),
                remote: Some(remote),
            };
            open_references(
                Box::new(home),
                Home::Remote(parent),
                name,
                parquet,
                options,
                shown_store(store),
            )
        };
        if [".json", ".json.gz", ".json.zst"].iter().any(|x| path.ends_with(x)) {
            let opened = remote_references(false)?;
            return Ok(match path.trim_end_matches('/').rsplit_once('/') {
                Some((parent, name)) => opened.followed_remote_file(store, args, parent, name),
                None => opened,
            });
        }
        // `virtual_chunks=` is no object_store setting: a Parquet set (told
        // only once the store is open) takes it, any other store ignores it.
        let (allowed, plain) = reference_options(args)?;
        let remote =
            crate::store::object::RemoteStore::open(url, &plain).map_err(|e| CliError::new(format!("store {e}")))?;
        let shown = remote.display().to_string();
        let remote: Box<dyn crate::store::ReadableStore> = match &args.disk_cache {
            Some(dir) => Box::new(
                crate::store::disk_cache::DiskCached::new(Box::new(remote), &shown, dir, args.disk_cache_size)
                    .map_err(|e| CliError::new(e.to_string()))?,
            ),
            None => Box::new(remote),
        };
        let hierarchy = match Hierarchy::open(remote.as_ref()) {
            // A kerchunk Parquet set: mounted as one, from its directory's parent.
            Err(crate::zarr::hierarchy::OpenError::References) => {
                // Followed by its .zmetadata, which its writer rewrites
                // with the set.
                return remote_references(true)
                    .map(|o| o.followed_remote_file(store, args, path.trim_end_matches('/'), ZMETADATA));
            }
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
                return CliError::new(format!(
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
                return CliError::not_found(format!(
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
        return Ok(Opened::plain(remote, hierarchy, shown_store(store)).followed(REMOTE_METADATA_TTL));
    }
    if args.disk_cache.is_some() {
        tracing::warn!("--disk-cache applies to remote stores only; a local store is read directly");
    }
    // A reference set: a JSON file, or (told by the hierarchy's refusal of
    // its .zmetadata, below) a Parquet directory; its home is its parent.
    let local_references = |parquet: bool| -> Result<Opened, CliError> {
        let path = store.canonicalize()?;
        let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
            return fail(format!("store {}: not a name nzfs can read", store.display()));
        };
        let home = FilesystemStore::with_symlinks(dir, args.policy());
        let at = Home::Local(dir.to_path_buf());
        open_references(
            Box::new(home),
            at,
            name,
            parquet,
            target_options(args)?,
            shown_store(store),
        )
    };
    // A local file (a reference set, a zip) is followed by its stat, and
    // opened again whole when it was replaced or rewritten.
    if store.is_file() && is_reference_json(store) {
        return local_references(false).map(|o| o.followed_file(store, store, args));
    }
    if store.is_file() && is_zip(store) {
        let path = store.canonicalize()?;
        let (Some(dir), Some(name)) = (path.parent(), path.file_name().and_then(|n| n.to_str())) else {
            return fail(format!("store {}: not a file name nzfs can read", store.display()));
        };
        let inner = FilesystemStore::with_symlinks(dir, args.policy());
        return open_zip(Box::new(inner), name, &shown_store(store)).map(|o| o.followed_file(store, store, args));
    }
    let s = local_store(store, args.policy())?;
    let h = match Hierarchy::open(&s) {
        // A Parquet set is followed by its .zmetadata.
        Err(crate::zarr::hierarchy::OpenError::References) => {
            return local_references(true).map(|o| o.followed_file(&store.join(ZMETADATA), store, args));
        }
        h => h.map_err(|e| unopened(&e, format!("store {}: {e}", store.display())))?,
    };
    Ok(Opened::plain(Box::new(s), h, shown_store(store)).followed(LOCAL_METADATA_TTL))
}

/// The `virtual_chunks=` prefixes of `--store-option`, and the remote
/// options without them (they allow reference targets, and are
/// no object_store setting).
#[cfg(feature = "remote")]
fn reference_options(args: &StoreArgs) -> Result<(Vec<String>, crate::store::object::RemoteOptions), CliError> {
    let mut options = remote_options(args)?;
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

/// How a reference set's targets may be read, from `args`: the
/// `virtual_chunks=` prefixes, the symlink policy, and (with `remote`) the
/// object-store options.
fn target_options(args: &StoreArgs) -> Result<TargetOptions, CliError> {
    #[cfg(feature = "remote")]
    let options = {
        let (allowed, remote) = reference_options(args)?;
        TargetOptions {
            allowed,
            symlinks: args.policy(),
            remote: Some(remote),
        }
    };
    #[cfg(not(feature = "remote"))]
    let options = TargetOptions {
        allowed: args
            .store_options
            .iter()
            .filter_map(|kv| kv.strip_prefix("virtual_chunks="))
            .map(str::to_string)
            .collect(),
        symlinks: args.policy(),
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
) -> Result<Opened, CliError> {
    let key = crate::store::StoreKey::new(name).map_err(|e| CliError::new(format!("store {shown}: {e}")))?;
    let targets = Targets::new(std::sync::Arc::from(home), at, options);
    let refs = if parquet {
        ReferenceStore::open_parquet(targets, key)
    } else {
        ReferenceStore::open(targets, key)
    }
    .map_err(|e| CliError::new(format!("store {shown}: {e}")))?;
    let hierarchy = Hierarchy::open(&refs).map_err(|e| CliError::new(format!("store {shown}: {e}")))?;
    tracing::info!(store = %shown, "opened a {} reference set", if parquet { "Parquet" } else { "JSON" });
    Ok(Opened::plain(Box::new(refs), hierarchy, shown))
}

/// Whether the local file `store` is a zip (its first bytes are `PK\x03\x04`,
/// or `PK\x05\x06` for an empty one).
fn is_zip(store: &Path) -> bool {
    let mut magic = [0u8; 4];
    std::fs::File::open(store)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
        .is_ok_and(|()| magic == *b"PK\x03\x04" || magic == *b"PK\x05\x06")
}

/// Whether the local file `store` looks like a kerchunk reference set:
/// JSON whose first kilobytes hold `"refs"`, `".zgroup"`,
/// `".zattrs"` or `"version"` keys, or a compressed `.json.gz`/`.json.zst`.
fn is_reference_json(store: &Path) -> bool {
    let name = store.to_string_lossy();
    if name.ends_with(".json.gz") || name.ends_with(".json.zst") {
        return true;
    }
    let mut head = vec![0u8; 4096];
    let Ok(n) = std::fs::File::open(store).and_then(|mut f| std::io::Read::read(&mut f, &mut head)) else {
        return false;
    };
    let text = String::from_utf8_lossy(&head[..n]);
    text.trim_start().starts_with('{')
        && ["\"refs\"", "\".zgroup\"", "\".zattrs\"", "\"version\""]
            .iter()
            .any(|k| text.contains(k))
}

/// Open the zip at `key` of `inner` as a store.
fn open_zip(inner: Box<dyn ReadableStore>, key: &str, shown: &str) -> Result<Opened, CliError> {
    let key = crate::store::StoreKey::new(key).map_err(|e| CliError::new(format!("store {shown}: {e}")))?;
    let zip =
        crate::store::zip::ZipStore::open(inner, key).map_err(|e| CliError::new(format!("store {shown}: {e}")))?;
    let hierarchy = Hierarchy::open(&zip).map_err(|e| CliError::new(format!("store {shown}: {e}")))?;
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
fn local_store(store: &Path, symlinks: Symlinks) -> Result<FilesystemStore, CliError> {
    match std::fs::metadata(store) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let shown = std::path::absolute(store).unwrap_or_else(|_| store.to_path_buf());
            return Err(CliError::not_found(format!("store {} does not exist", shown.display())));
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

/// Open a store directory as a dataset, for reading it without a mount
/// (`check`, `cdl`): the same hierarchy and arrays a mount shows.
pub fn open_dataset(store: &Path, args: &StoreArgs, cache_bytes: u64) -> Result<Dataset, CliError> {
    let opened = open_store(store, args)?;
    Ok(Dataset::new(
        std::sync::Arc::from(opened.store),
        opened.hierarchy,
        cache_bytes,
        crate::array::MissingChunks::Fill,
    ))
}

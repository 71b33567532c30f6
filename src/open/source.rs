//! What to open, as one typed value: where the source is, which kind it
//! is (a directory, a zip, a reference set, an object-store prefix, an
//! Icechunk repository at a version) and how it is read. The command line
//! builds it from its flags, the opener matches on its kind once, and
//! answers with its own error type.
//!
//! Invariants: a source is told its kind here, once, before anything
//! opens it (a kerchunk Parquet set is the one kind told only by opening:
//! its directory's `.zmetadata` refuses to be Zarr's); a store this build
//! cannot read, and a version asked of a source that has none, are refused
//! here with their fix.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::store::{Symlinks, Version};

/// How a source is read: what the command line's store flags say.
#[derive(Debug, Clone)]
pub struct Access {
    /// Which symlinks of a local store are followed.
    pub symlinks: Symlinks,
    /// The store's options, `KEY=VALUE` split (keys trimmed and
    /// lower-cased): object_store's settings and `virtual_chunks=`.
    pub options: Vec<(String, String)>,
    /// Remote stores: no credentials (a public bucket).
    pub anonymous: bool,
    /// Remote stores: retries of a failed request.
    pub retries: u8,
    /// Remote stores: how long a connection may take (at least 1 s).
    pub connect_timeout: Duration,
    /// Remote stores: how long a request may take (at least 1 s).
    pub request_timeout: Duration,
    /// Remote stores: where raw chunk objects are kept, and its budget.
    pub disk_cache: Option<(PathBuf, u64)>,
}

impl Default for Access {
    fn default() -> Access {
        Access {
            symlinks: Symlinks::Beneath,
            options: Vec::new(),
            anonymous: false,
            retries: 5,
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
            disk_cache: None,
        }
    }
}

/// Which versions of an Icechunk repository are shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Versions {
    /// One: a branch's tip (`None`: `main`'s), a tag or a snapshot.
    One(Option<Version>),
    /// Every branch, tag and snapshot.
    All,
}

impl Versions {
    /// The version named, if one was (`All` names none).
    pub fn named(&self) -> Option<&Version> {
        match self {
            Versions::One(v) => v.as_ref(),
            Versions::All => None,
        }
    }
}

/// The kind of a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A store directory, or a kerchunk Parquet set (a directory whose
    /// `.zmetadata` says so).
    Directory,
    /// A zip of a store (zarr-python's ZipStore).
    Zip,
    /// A kerchunk JSON reference set (`.json`, `.json.gz`, `.json.zst`).
    References,
    /// An object-store or HTTP prefix holding a store (or a Parquet set).
    #[cfg(feature = "remote")]
    Remote,
    /// A zip in object storage, read by ranges.
    #[cfg(feature = "remote")]
    RemoteZip,
    /// A JSON reference set in object storage.
    #[cfg(feature = "remote")]
    RemoteReferences,
    /// An Icechunk repository (a directory or an `icechunk+` URL).
    Icechunk(Versions),
}

/// What to open.
#[derive(Debug, Clone)]
pub struct Source {
    /// As given (a path or a URL, which may hold credentials: show it
    /// through [`crate::store::redact_url`]).
    pub given: PathBuf,
    /// Its kind.
    pub kind: Kind,
    /// How it is read.
    pub access: Access,
}

/// Why a source cannot be opened, with what to do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SourceError {
    /// Nothing is there: no such path, bucket or prefix, or no Zarr
    /// metadata in it.
    #[error("{0}")]
    NotFound(String),
    /// An Icechunk branch, tag or snapshot that does not exist.
    #[error("{0}")]
    NoSuchVersion(String),
    /// Anything else.
    #[error("{0}")]
    Refused(String),
}

impl SourceError {
    /// What it says.
    pub fn message(&self) -> &str {
        match self {
            SourceError::NotFound(m) | SourceError::NoSuchVersion(m) | SourceError::Refused(m) => m,
        }
    }
}

impl From<std::io::Error> for SourceError {
    fn from(e: std::io::Error) -> SourceError {
        SourceError::Refused(e.to_string())
    }
}

/// What this nzfs was built to read, besides local stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Built {
    /// Object storage and HTTP (the `remote` feature).
    pub remote: bool,
    /// Icechunk repositories (the `icechunk` feature).
    pub icechunk: bool,
}

impl Built {
    /// This build.
    pub const THIS: Built = Built {
        remote: cfg!(feature = "remote"),
        icechunk: cfg!(feature = "icechunk"),
    };

    /// Why this build cannot read `store`, with the fix; `None` when it
    /// can (or when `store` is none of the kinds a feature reads).
    pub fn refusal(&self, store: &str) -> Option<String> {
        let shown = crate::store::redact_url(store);
        let rebuild = "it is in the default features: cargo build --release";
        if !self.icechunk && crate::store::icechunk_source(store) {
            return Some(format!(
                "{shown} is an Icechunk repository: this nzfs was built without Icechunk support ({rebuild})"
            ));
        }
        if !self.remote && crate::store::object_url(store) {
            return Some(format!(
                "{shown} is an object storage URL: this nzfs was built without object storage support ({rebuild})"
            ));
        }
        None
    }
}

/// The extensions of a JSON reference set.
const JSON_SETS: [&str; 3] = [".json", ".json.gz", ".json.zst"];

impl Source {
    /// The source at `given`, read with `access`, told its kind: an
    /// Icechunk repository shows `versions` (a version named for any other
    /// source is refused).
    pub fn new(given: &Path, access: Access, versions: Versions) -> Result<Source, SourceError> {
        let text = given.to_str();
        let refused = |m: String| Err(SourceError::Refused(m));
        if let Some(why) = text.and_then(|s| Built::THIS.refusal(s)) {
            return refused(why);
        }
        let at = |kind| {
            Ok(Source {
                given: given.to_path_buf(),
                kind,
                access: access.clone(),
            })
        };
        if text.is_some_and(crate::store::icechunk_source) {
            return at(Kind::Icechunk(versions));
        }
        if versions != Versions::One(None) {
            return refused(format!(
                "--branch, --tag, --snapshot and --all-versions apply to Icechunk repositories; {} is not one",
                crate::store::redact_url(&given.to_string_lossy())
            ));
        }
        #[cfg(feature = "remote")]
        if let Some(url) = text.filter(|s| crate::store::object::is_remote(s)) {
            let path = url.split(['?', '#']).next().unwrap_or_default();
            if path.ends_with(".zip") && path.contains('/') {
                return at(Kind::RemoteZip);
            }
            if JSON_SETS.iter().any(|x| path.ends_with(x)) {
                return at(Kind::RemoteReferences);
            }
            return at(Kind::Remote);
        }
        if given.is_file() && is_reference_json(given) {
            return at(Kind::References);
        }
        if given.is_file() && is_zip(given) {
            return at(Kind::Zip);
        }
        at(Kind::Directory)
    }

    /// Whether it is read from this machine's filesystem as files (a
    /// directory, a zip, a reference set; not an Icechunk repository).
    pub fn is_local_files(&self) -> bool {
        matches!(self.kind, Kind::Directory | Kind::Zip | Kind::References)
    }

    /// The source as shown in /proc/mounts and messages.
    pub fn shown(&self) -> String {
        crate::store::redact_url(&self.given.to_string_lossy())
    }
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
    if JSON_SETS[1..].iter().any(|x| name.ends_with(x)) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(given: &Path) -> Result<Kind, SourceError> {
        Source::new(given, Access::default(), Versions::One(None)).map(|s| s.kind)
    }

    #[test]
    fn a_source_is_told_its_kind_once() {
        let dir = tempfile::tempdir().unwrap();
        let (zip, json, store) = (
            dir.path().join("a.zip"),
            dir.path().join("refs"),
            dir.path().join("s.zarr"),
        );
        std::fs::write(&zip, b"PK\x05\x06\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0").unwrap();
        std::fs::write(&json, br#"{"version": 1, "refs": {}}"#).unwrap();
        std::fs::create_dir(&store).unwrap();
        assert_eq!(kind(&zip), Ok(Kind::Zip));
        assert_eq!(kind(&json), Ok(Kind::References));
        assert_eq!(kind(&store), Ok(Kind::Directory));
        // What is not there is a directory to the opener, which says so.
        assert_eq!(kind(&dir.path().join("none")), Ok(Kind::Directory));
        let pinned = Versions::One(Some(Version::Tag("v1".into())));
        let err = Source::new(&store, Access::default(), pinned).unwrap_err();
        assert!(err.message().contains("apply to Icechunk repositories"), "{err}");
        assert!(matches!(
            Source::new(&store, Access::default(), Versions::All),
            Err(SourceError::Refused(_))
        ));
    }

    #[cfg(feature = "remote")]
    #[test]
    fn a_url_is_told_by_its_name() {
        let url = |s: &str| kind(Path::new(s));
        assert_eq!(url("s3://b/data.zarr"), Ok(Kind::Remote));
        assert_eq!(url("s3://b/d/data.zarr.zip"), Ok(Kind::RemoteZip));
        assert_eq!(url("https://h/refs.json.gz?x=1"), Ok(Kind::RemoteReferences));
    }
}

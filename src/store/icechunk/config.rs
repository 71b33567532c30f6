//! How an Icechunk repository is reached: its storage (`icechunk+s3://`,
//! `icechunk+file://`, a local path) and the virtual-chunk containers the
//! user lets it read, both from `--store-option` and the environment.
//!
//! Invariants: a `--store-option` key this module does not know is an
//! error (a typo is never ignored); keys from the environment are only
//! read, never checked, since `AWS_*` holds settings of other tools too.
//! A virtual-chunk container is read only when the user names its prefix
//! with `virtual_chunks=PREFIX`: a repository cannot make nzfs fetch from
//! places the user did not allow.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use icechunk::config::{Credentials, S3Credentials, S3Options, S3StaticCredentials};
use icechunk::virtual_chunks::VirtualChunkContainer;
use icechunk::{ObjectStoreConfig, RepositoryConfig, Storage};

use super::line;

/// Why an Icechunk repository cannot be opened with the options given.
#[derive(Debug, thiserror::Error)]
pub(super) enum ConfigError {
    #[error(
        "--store-option {key}: not an option of Icechunk repositories (they take {known}, \
         and the google_* and azure_* options of gs:// and az:// stores)"
    )]
    UnknownOption { key: String, known: String },
    #[error("an az:// repository needs its account: --store-option azure_storage_account_name=NAME")]
    NoAzureAccount,
    #[error(
        "{0} repositories are not supported yet: use icechunk+s3://, icechunk+gs://, icechunk+az:// or a local path"
    )]
    Scheme(String),
    #[error("--store-option {VIRTUAL}={0}: only s3:// and file:// virtual chunks can be read yet")]
    VirtualScheme(String),
    #[error("--store-option {VIRTUAL}={prefix}: {reason}")]
    Container { prefix: String, reason: String },
    /// What the icechunk library reported, in one line.
    #[error("{0}")]
    Library(String),
}

fn library(e: impl std::fmt::Display) -> ConfigError {
    ConfigError::Library(line(e))
}
use crate::store::object::RemoteOptions;

/// The `--store-option` keys an Icechunk repository takes.
const KNOWN: &[&str] = &[
    "aws_endpoint",
    "aws_endpoint_url",
    "endpoint",
    "aws_region",
    "aws_default_region",
    "region",
    "aws_allow_http",
    "allow_http",
    "aws_access_key_id",
    "aws_secret_access_key",
    "aws_session_token",
    "aws_token",
    VIRTUAL,
];

/// `virtual_chunks=PREFIX`: read virtual chunks under PREFIX.
const VIRTUAL: &str = "virtual_chunks";

/// The options by key, the user's winning over the environment's;
/// checked once, when made.
pub(super) struct Options<'a> {
    map: HashMap<String, String>,
    opts: &'a RemoteOptions,
}

/// Whether `key` configures a repository on GCS (`google_*`, as for gs://
/// stores) or Azure (`azure_*`).
fn cloud_key(key: &str) -> bool {
    use std::str::FromStr;
    object_store::gcp::GoogleConfigKey::from_str(key).is_ok()
        || object_store::azure::AzureConfigKey::from_str(key).is_ok()
}

impl<'a> Options<'a> {
    pub(super) fn new(opts: &'a RemoteOptions) -> Result<Options<'a>, ConfigError> {
        if let Some((key, _)) = opts
            .options
            .iter()
            .find(|(k, _)| !KNOWN.contains(&k.as_str()) && !cloud_key(k))
        {
            return Err(ConfigError::UnknownOption {
                key: key.clone(),
                known: KNOWN.join(", "),
            });
        }
        let map = opts.environment.iter().chain(opts.options.iter()).cloned().collect();
        Ok(Options { map, opts })
    }

    fn get(&self, keys: &[&str]) -> Option<String> {
        keys.iter().find_map(|k| self.map.get(*k).cloned())
    }

    fn endpoint(&self) -> Option<String> {
        self.get(&["aws_endpoint", "aws_endpoint_url", "endpoint"])
    }

    /// S3 settings: region, endpoint (a custom one, such as MinIO's or
    /// moto's, is path-style), plain HTTP when the endpoint is http://.
    fn s3(&self) -> S3Options {
        let endpoint = self.endpoint();
        let mut config = S3Options::default();
        config.region = self.get(&["aws_region", "aws_default_region", "region"]);
        config.allow_http = endpoint.as_deref().is_some_and(|e| e.starts_with("http://"))
            || self.get(&["aws_allow_http", "allow_http"]).as_deref() == Some("true");
        config.force_path_style = endpoint.is_some();
        config.endpoint_url = endpoint;
        config.anonymous = self.opts.anonymous;
        config.network_stream_timeout_seconds =
            Some(self.opts.request_timeout.as_secs().clamp(1, u64::from(u32::MAX)) as u32);
        config
    }

    /// Unsigned with `--anonymous`, the given keys, or the crate's search
    /// of the environment and instance metadata.
    fn s3_credentials(&self) -> S3Credentials {
        match (self.get(&["aws_access_key_id"]), self.get(&["aws_secret_access_key"])) {
            _ if self.opts.anonymous => S3Credentials::Anonymous,
            (Some(access_key_id), Some(secret_access_key)) => S3Credentials::Static(S3StaticCredentials {
                access_key_id,
                secret_access_key,
                session_token: self.get(&["aws_session_token", "aws_token"]),
                expires_after: None,
            }),
            _ => S3Credentials::FromEnv,
        }
    }

    /// The `virtual_chunks=` prefixes, each ending in `/`.
    fn virtual_prefixes(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .opts
            .options
            .iter()
            .filter(|(k, _)| k == VIRTUAL)
            .map(|(_, v)| if v.ends_with('/') { v.clone() } else { format!("{v}/") })
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

/// The storage of the repository at `url` (`icechunk+s3://bucket/prefix`,
/// `icechunk+file:///path` or a plain local path).
pub(super) async fn storage_for(url: &str, o: &Options<'_>) -> Result<Arc<dyn Storage + Send + Sync>, ConfigError> {
    let opts = o.opts;
    let rest = url.strip_prefix("icechunk+").unwrap_or(url);
    if let Some(path) = rest
        .strip_prefix("file://")
        .or((!crate::store::is_url(rest)).then_some(rest))
    {
        return icechunk::new_local_filesystem_storage(Path::new(path))
            .await
            .map_err(library);
    }
    let (scheme, path) = rest.split_once("://").unwrap_or_default();
    let (bucket, prefix) = path.split_once('/').unwrap_or((path, ""));
    let prefix = (!prefix.trim_matches('/').is_empty()).then(|| prefix.trim_matches('/').to_string());
    let bucket = bucket.to_string();
    match scheme {
        "s3" => icechunk::new_s3_object_store_storage(o.s3(), bucket, prefix, Some(o.s3_credentials()), vec![], vec![])
            .await
            .map_err(library),
        "gs" | "gcs" => {
            use icechunk::storage::GcsCredentials;
            let credentials = if opts.anonymous {
                GcsCredentials::Anonymous
            } else {
                GcsCredentials::FromEnv
            };
            icechunk::storage::new_gcs_storage(bucket, prefix, Some(credentials), Some(o.map.clone()), vec![], vec![])
                .map_err(library)
        }
        "az" | "azure" => {
            use icechunk::storage::AzureCredentials;
            let account = o
                .get(&["azure_storage_account_name", "account_name"])
                .ok_or(ConfigError::NoAzureAccount)?;
            let credentials = if opts.anonymous {
                AzureCredentials::Anonymous
            } else {
                AzureCredentials::FromEnv
            };
            icechunk::storage::new_azure_blob_storage(account, bucket, prefix, Some(credentials), Some(o.map.clone()))
                .await
                .map_err(library)
        }
        other => Err(ConfigError::Scheme(other.to_string())),
    }
}

/// What reading virtual chunks needs: the containers (the repository's own
/// declarations, with ours for the prefixes the user named) and the
/// prefixes allowed, with their credentials.
pub(super) struct VirtualAccess {
    pub config: RepositoryConfig,
    pub credentials: HashMap<String, Option<Credentials>>,
}

/// The access `virtual_chunks=` options ask for, given the repository's
/// configuration; `None` when they name no prefix.
///
/// An `s3://` prefix is read with the repository's S3 settings and
/// credentials: when the options name an endpoint, the container is
/// declared with it (the repository's declaration may name another);
/// otherwise the repository's declaration is used, or plain AWS S3 in the
/// given region. A `file://` prefix needs no credentials.
pub(super) fn virtual_access(
    declared: &RepositoryConfig,
    o: &Options<'_>,
) -> Result<Option<VirtualAccess>, ConfigError> {
    let prefixes = o.virtual_prefixes();
    if prefixes.is_empty() {
        return Ok(None);
    }
    let mut config = declared.clone();
    let mut credentials = HashMap::new();
    for prefix in prefixes {
        let has = declared.get_virtual_chunk_container(&prefix).is_some();
        let (store, credential) = if prefix.starts_with("s3://") {
            let store = (!has || o.endpoint().is_some()).then(|| ObjectStoreConfig::S3Compatible(o.s3()));
            (store, Credentials::S3(o.s3_credentials()))
        } else if let Some(path) = prefix.strip_prefix("file://") {
            let store = (!has).then(|| ObjectStoreConfig::LocalFileSystem(path.into()));
            (store, Credentials::LocalFileSystemAccess)
        } else {
            return Err(ConfigError::VirtualScheme(prefix));
        };
        if let Some(store) = store {
            let container_error = |e: String| ConfigError::Container {
                prefix: prefix.clone(),
                reason: e,
            };
            let container =
                VirtualChunkContainer::new(prefix.clone(), store).map_err(|e| container_error(e.to_string()))?;
            config.set_virtual_chunk_container(container).map_err(container_error)?;
        }
        credentials.insert(prefix, Some(credential));
    }
    Ok(Some(VirtualAccess { config, credentials }))
}

/// The repository's declared containers the options do not let nzfs read,
/// for a log line that says how to.
pub(super) fn unread_containers(declared: &RepositoryConfig, o: &Options<'_>) -> Vec<String> {
    let allowed = o.virtual_prefixes();
    let mut out: Vec<String> = declared
        .virtual_chunk_containers()
        .map(|c| c.url_prefix().to_string())
        .filter(|p| !allowed.contains(p))
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(pairs: &[(&str, &str)]) -> RemoteOptions {
        RemoteOptions {
            environment: Vec::new(),
            options: pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
            anonymous: false,
            connect_timeout: std::time::Duration::from_secs(5),
            request_timeout: std::time::Duration::from_secs(30),
            retries: 0,
        }
    }

    #[test]
    fn unknown_options_are_refused_and_the_environment_is_not_checked() {
        let err = Options::new(&options(&[("aws_regoin", "x")]))
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("aws_regoin") && err.contains("virtual_chunks"), "{err}");
        let mut env = options(&[]);
        env.environment.push(("aws_profile".into(), "x".into()));
        assert!(Options::new(&env).is_ok());
    }

    /// What `virtual_access` makes of these options against `declared`.
    fn access_for(declared: &RepositoryConfig, pairs: &[(&str, &str)]) -> Result<Option<VirtualAccess>, ConfigError> {
        virtual_access(declared, &Options::new(&options(pairs)).unwrap())
    }

    #[test]
    fn virtual_prefixes_are_declared_only_where_needed() {
        let mut declared = RepositoryConfig::default();
        let aws = ObjectStoreConfig::S3(S3Options::default());
        declared
            .set_virtual_chunk_container(VirtualChunkContainer::new("s3://b/".into(), aws.clone()).unwrap())
            .unwrap();
        // Named without an endpoint: the repository's declaration stays.
        let access = access_for(&declared, &[("virtual_chunks", "s3://b")]).unwrap().unwrap();
        assert_eq!(access.config.get_virtual_chunk_container("s3://b/").unwrap().store, aws);
        assert!(access.credentials.contains_key("s3://b/"));
        // With an endpoint, ours replaces it.
        let with_endpoint = [("virtual_chunks", "s3://b/"), ("aws_endpoint", "http://127.0.0.1:9")];
        let access = access_for(&declared, &with_endpoint).unwrap().unwrap();
        let ObjectStoreConfig::S3Compatible(s3) = &access.config.get_virtual_chunk_container("s3://b/").unwrap().store
        else {
            panic!()
        };
        assert_eq!(s3.endpoint_url.as_deref(), Some("http://127.0.0.1:9"));
        assert!(s3.allow_http && s3.force_path_style);
        // An undeclared file:// prefix is declared; other schemes refused.
        let access = access_for(&declared, &[("virtual_chunks", "file:///data/")])
            .unwrap()
            .unwrap();
        assert!(access.config.get_virtual_chunk_container("file:///data/").is_some());
        assert!(access_for(&declared, &[("virtual_chunks", "gs://b/")]).is_err());
        assert!(access_for(&declared, &[]).unwrap().is_none());
        assert_eq!(
            unread_containers(&declared, &Options::new(&options(&[])).unwrap()),
            ["s3://b/"]
        );
    }
}

//! How a remote store is reached: the options and credentials of a mount
//! (`--store-option`, the environment, AWS profiles), the retry policy, and
//! the `object_store` client built from them for a URL.
//!
//! Invariant: an option the user gave that the URL's kind of store does not
//! know is an error naming it (a typo is never ignored); one from the
//! environment is ignored, since `AWS_*` holds settings of other tools too.

use std::time::Duration;

use object_store::client::HttpConnector;
use object_store::path::Path;
use object_store::{BackoffConfig, ObjectStore, RetryConfig};

use super::BoundedConnector;

/// How a remote store is reached.
#[derive(Debug, Clone)]
pub struct RemoteOptions {
    /// `object_store` configuration from the environment (`aws_region`,
    /// `google_application_credentials`, …): keys the scheme does not know
    /// are ignored, since `AWS_*` holds settings of other tools too.
    pub environment: Vec<(String, String)>,
    /// `object_store` configuration the user gave (`--store-option`): a key
    /// the scheme does not know is an error, so a typo is not ignored.
    pub options: Vec<(String, String)>,
    /// Send unsigned requests (public buckets).
    pub anonymous: bool,
    /// How long a connection may take.
    pub connect_timeout: Duration,
    /// How long a request may take, retries aside.
    pub request_timeout: Duration,
    /// Retries of a failed request (5xx, 429, resets, timeouts).
    pub retries: usize,
}

impl RemoteOptions {
    /// The retry policy: exponential backoff from 100 ms, and no retry
    /// starts later than two request timeouts after the first attempt, so
    /// a read fails within about three request timeouts.
    fn retry(&self) -> RetryConfig {
        RetryConfig {
            backoff: BackoffConfig {
                init_backoff: Duration::from_millis(100),
                max_backoff: Duration::from_secs(5),
                base: 2.0,
            },
            max_retries: self.retries,
            retry_timeout: self.request_timeout * 2,
        }
    }

    /// Every setting for a store of `scheme`, in the order they apply.
    fn settings(&self, scheme: &str) -> Vec<(String, String, bool)> {
        let mut out: Vec<(String, String, bool)> = Vec::new();
        out.extend(self.environment.iter().map(|(k, v)| (k.clone(), v.clone(), false)));
        out.extend(self.options.iter().map(|(k, v)| (k.clone(), v.clone(), true)));
        let ms = |d: Duration| format!("{}ms", d.as_millis());
        out.push(("connect_timeout".into(), ms(self.connect_timeout), true));
        out.push(("timeout".into(), ms(self.request_timeout), true));
        // Plain HTTP is allowed where the user asked for it: an http://
        // URL, or an http:// endpoint (MinIO, moto, a proxy).
        let http_endpoint = out
            .iter()
            .any(|(k, v, _)| k.contains("endpoint") && v.starts_with("http://"));
        if scheme == "http" || http_endpoint {
            out.push(("allow_http".into(), "true".into(), true));
        }
        if self.anonymous && scheme != "http" && scheme != "https" {
            out.push(("skip_signature".into(), "true".into(), true));
        }
        out
    }
}

/// The settings of AWS profile `name` from the shared credentials and
/// config files' text (`~/.aws/credentials`, `~/.aws/config`): keys,
/// session token and region. `None` when neither file has the profile.
/// (object_store reads no profiles itself; `AWS_PROFILE` is this.)
pub fn aws_profile(name: &str, credentials: &str, config: &str) -> Option<Vec<(String, String)>> {
    let section = |text: &str, header: &str| -> Option<Vec<(String, String)>> {
        let mut inside = false;
        let mut found = None::<Vec<(String, String)>>;
        for line in text.lines().map(str::trim) {
            if let Some(h) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                inside = h.trim() == header;
                if inside {
                    found.get_or_insert_with(Vec::new);
                }
            } else if inside && let Some((k, v)) = line.split_once('=') {
                let key = match k.trim() {
                    "region" => "aws_region".to_string(),
                    k @ ("aws_access_key_id" | "aws_secret_access_key" | "aws_session_token") => k.to_string(),
                    _ => continue,
                };
                found.get_or_insert_with(Vec::new).push((key, v.trim().to_string()));
            }
        }
        found
    };
    let profile_header = if name == "default" {
        "default".to_string()
    } else {
        format!("profile {name}")
    };
    let from_config = section(config, &profile_header);
    let from_credentials = section(credentials, name);
    if from_config.is_none() && from_credentials.is_none() {
        return None;
    }
    // The credentials file wins over the config file.
    Some(
        from_config
            .into_iter()
            .flatten()
            .chain(from_credentials.into_iter().flatten())
            .collect(),
    )
}

/// Why an object-store client cannot be built for a URL.
#[derive(Debug, thiserror::Error)]
pub(super) enum BuildError {
    #[error("unknown option {key:?} for this kind of store{}", suggestion(.nearest))]
    UnknownOption { key: String, nearest: Option<String> },
    #[error("{0:?} URLs are not stores nzfs reads")]
    Scheme(object_store::ObjectStoreScheme),
    #[error(transparent)]
    Client(#[from] object_store::Error),
}

/// ` (did you mean KEY?)`, or nothing.
fn suggestion(nearest: &Option<String>) -> String {
    nearest
        .as_ref()
        .map_or_else(String::new, |k| format!(" (did you mean {k}?)"))
}

/// Apply `settings` to a builder whose keys parse as `K`; an unknown key
/// that must be known is an error naming it.
fn configure<B, K: std::str::FromStr>(
    builder: B,
    settings: &[(String, String, bool)],
    set: impl Fn(B, K, &str) -> B,
) -> Result<B, BuildError> {
    settings
        .iter()
        .try_fold(builder, |b, (key, value, strict)| match key.parse::<K>() {
            Ok(k) => Ok(set(b, k, value)),
            Err(_) if *strict => Err(BuildError::UnknownOption {
                key: key.clone(),
                nearest: nearest_option::<K>(key),
            }),
            Err(_) => Ok(b),
        })
}

/// The options users give most, of every kind of store: the one nearest
/// a mistyped key is offered, among those this kind of store takes.
const KNOWN_OPTIONS: &[&str] = &[
    "aws_access_key_id",
    "aws_secret_access_key",
    "aws_session_token",
    "aws_region",
    "aws_default_region",
    "aws_endpoint",
    "aws_endpoint_url",
    "aws_allow_http",
    "aws_virtual_hosted_style_request",
    "aws_skip_signature",
    "aws_unsigned_payload",
    "aws_imdsv1_fallback",
    "aws_metadata_endpoint",
    "aws_request_payer",
    "aws_s3_express",
    "google_service_account",
    "google_service_account_key",
    "google_application_credentials",
    "google_skip_signature",
    "azure_storage_account_name",
    "azure_storage_account_key",
    "azure_storage_client_id",
    "azure_storage_client_secret",
    "azure_storage_tenant_id",
    "azure_storage_sas_key",
    "azure_storage_token",
    "azure_storage_use_emulator",
    "azure_storage_endpoint",
    "azure_skip_signature",
    "azure_use_azure_cli",
];

/// The known option nearest `key` that `K` takes, when it is near (at most
/// a third of its letters away).
fn nearest_option<K: std::str::FromStr>(key: &str) -> Option<String> {
    KNOWN_OPTIONS
        .iter()
        .filter(|k| k.parse::<K>().is_ok())
        .map(|k| (strsim::levenshtein(&key.to_ascii_lowercase(), k), *k))
        .filter(|&(d, _)| d > 0 && d <= key.len().div_ceil(3))
        .min()
        .map(|(_, k)| k.to_string())
}

/// The `object_store` client for `url`, and the path of the store in it.
pub(super) fn build(
    url: &url::Url,
    opts: &RemoteOptions,
    connector: BoundedConnector<impl HttpConnector>,
) -> Result<(Box<dyn ObjectStore>, Path), BuildError> {
    use object_store::ObjectStoreScheme as S;
    let (scheme, path) = S::parse(url).map_err(object_store::Error::from)?;
    let settings = opts.settings(url.scheme());
    let retry = opts.retry();
    let store: Box<dyn ObjectStore> = match scheme {
        S::AmazonS3 => {
            let b = object_store::aws::AmazonS3Builder::new().with_url(url.as_str());
            let b = configure(b, &settings, |b, k, v| b.with_config(k, v))?;
            Box::new(b.with_retry(retry).with_http_connector(connector).build()?)
        }
        S::GoogleCloudStorage => {
            let b = object_store::gcp::GoogleCloudStorageBuilder::new().with_url(url.as_str());
            let b = configure(b, &settings, |b, k, v| b.with_config(k, v))?;
            Box::new(b.with_retry(retry).with_http_connector(connector).build()?)
        }
        S::MicrosoftAzure => {
            let b = object_store::azure::MicrosoftAzureBuilder::new().with_url(url.as_str());
            let b = configure(b, &settings, |b, k, v| b.with_config(k, v))?;
            Box::new(b.with_retry(retry).with_http_connector(connector).build()?)
        }
        S::Http => {
            let base = &url[..url::Position::BeforePath];
            let b = object_store::http::HttpBuilder::new().with_url(base);
            let b = configure(b, &settings, |b, k, v| b.with_config(k, v))?;
            Box::new(b.with_retry(retry).with_http_connector(connector).build()?)
        }
        other => return Err(BuildError::Scheme(other)),
    };
    Ok((store, path))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mistyped_option_gets_the_nearest_one_its_store_takes() {
        use object_store::aws::AmazonS3ConfigKey as S3;
        use object_store::gcp::GoogleConfigKey as Gcs;
        assert_eq!(nearest_option::<S3>("aws_endpont").as_deref(), Some("aws_endpoint"));
        assert_eq!(nearest_option::<S3>("AWS_REGOIN").as_deref(), Some("aws_region"));
        assert_eq!(nearest_option::<S3>("aws_zzz"), None);
        // Only what that kind of store takes: no S3 key for GCS.
        assert_eq!(nearest_option::<Gcs>("aws_endpont"), None);
        let e = BuildError::UnknownOption {
            key: "aws_endpont".into(),
            nearest: Some("aws_endpoint".into()),
        };
        assert!(e.to_string().ends_with("(did you mean aws_endpoint?)"), "{e}");
    }

    #[test]
    fn aws_profiles_are_read_from_the_shared_files() {
        let credentials =
            "[default]\naws_access_key_id = D\n\n[lab]\naws_access_key_id=LK\naws_secret_access_key = LS\n";
        let config = "[default]\nregion = us-east-1\n[profile lab]\nregion=eu-west-1\noutput = json\n";
        let lab = aws_profile("lab", credentials, config).unwrap();
        assert_eq!(
            lab,
            [
                ("aws_region".to_string(), "eu-west-1".to_string()),
                ("aws_access_key_id".into(), "LK".into()),
                ("aws_secret_access_key".into(), "LS".into())
            ]
        );
        let default = aws_profile("default", credentials, config).unwrap();
        assert!(default.contains(&("aws_region".into(), "us-east-1".into())));
        assert!(default.contains(&("aws_access_key_id".into(), "D".into())));
        assert_eq!(aws_profile("nope", credentials, config), None);
    }
}

//! Object storage (S3, GCS, Azure, HTTP) through the `object_store` crate,
//! behind the same [`ReadableStore`] boundary as a local directory.
//!
//! The process's one tokio runtime (`store::runtime`) runs the requests; callers
//! (FUSE threads) block on their own request only, so they never wait on
//! each other. `get_ranges` issues its ranges concurrently (object_store
//! merges nearby ranges of one object). Every request has a timeout and
//! object_store's retries with backoff (5xx, 429, connection resets); the
//! final error maps to an `io::ErrorKind`: 404 is "absent", 403/401 are
//! `PermissionDenied` (EACCES), timeouts `TimedOut`, the rest `Other` (EIO).
//!
//! Invariants: a value longer than the caller's limit is refused from its
//! length before its body is read; an object's [`Stamp`] version is a hash
//! of its ETag (or last-modified time), so a shard rewritten while mounted
//! is noticed; credentials never appear in errors or logs (the store is
//! named by [`super::redact_url`]).

use crate::store::{StoreError, StoreResult};
use std::io;
use std::sync::Arc;

use object_store::client::HttpConnector;
use object_store::path::Path;
use object_store::{GetOptions, GetRange, ObjectStore, ObjectStoreExt};

mod config;

use super::bounded_http::BoundedConnector;
use config::build;
pub use config::{RemoteOptions, aws_profile};

use super::{Listing, RangeRequest, ReadableStore, Stamp, StoreKey, check_stamp, inflight, short_value};

/// A store in object storage, read through `object_store`.
pub struct RemoteStore {
    store: Arc<dyn ObjectStore>,
    root: String,
    /// The URL without query string or credentials, for messages.
    display: String,
    runtime: &'static tokio::runtime::Runtime,
}

/// Whether `s` names a remote store (a URL with a scheme nzfs reads).
pub fn is_remote(s: &str) -> bool {
    super::object_url(s)
}

fn io_error(what: &str, e: object_store::Error) -> StoreError {
    use object_store::Error as E;
    // object_store's message leaves out the HTTP client's causes ("error
    // sending request"); the chain says what happened ("operation timed out").
    let mut text = e.to_string();
    let mut source = std::error::Error::source(&e);
    while let Some(cause) = source {
        let line = cause.to_string();
        if !text.contains(&line) {
            text = format!("{text}: {line}");
        }
        source = cause.source();
    }
    let text = format!("{what}: {}", concise(&text));
    match &e {
        E::NotFound { .. } => StoreError::NotFound(text),
        E::PermissionDenied { .. } | E::Unauthenticated { .. } => StoreError::Denied(text),
        _ if timed_out(&e) => StoreError::TimedOut(text),
        _ => StoreError::failed(text),
    }
}

/// Whether a cause of `e` is a request or connection that timed out: the
/// HTTP client's own error kind, or an I/O error's.
fn timed_out(e: &object_store::Error) -> bool {
    use object_store::client::{HttpError, HttpErrorKind};
    let mut cause: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(e);
    while let Some(c) = cause {
        if c.downcast_ref::<HttpError>()
            .is_some_and(|h| h.kind() == HttpErrorKind::Timeout)
            || c.downcast_ref::<io::Error>()
                .is_some_and(|i| i.kind() == io::ErrorKind::TimedOut)
        {
            return true;
        }
        cause = c.source();
    }
    false
}

/// One line of an object_store error: the server's XML body (which can be
/// long, and holds request ids) is replaced by its `<Code>`.
fn concise(text: &str) -> String {
    let (head, body) = text.split_once("<?xml").unwrap_or((text, ""));
    // An HTML error page (nginx, Apache, a crashing server) adds nothing
    // to its status line.
    let lower = head.to_ascii_lowercase();
    let head = ["<html", "<!doctype"]
        .iter()
        .filter_map(|m| lower.find(m))
        .min()
        .map_or(head, |at| &head[..at]);
    let code = body
        .split_once("<Code>")
        .and_then(|(_, rest)| rest.split_once("</Code>"))
        .map(|(c, _)| format!(" ({c})"))
        .unwrap_or_default();
    let line: String = head.split_whitespace().collect::<Vec<_>>().join(" ");
    format!("{}{code}", line.trim_end_matches(':'))
}

fn version_of(meta: &object_store::ObjectMeta) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    match &meta.e_tag {
        Some(tag) => tag.hash(&mut h),
        None => meta.last_modified.timestamp_nanos_opt().hash(&mut h),
    }
    h.finish()
}

impl RemoteStore {
    /// Open the store at `url` (nothing is requested yet).
    pub fn open(url: &str, opts: &RemoteOptions) -> StoreResult<RemoteStore> {
        Self::open_over(url, opts, object_store::client::ReqwestConnector::default())
    }

    /// [`RemoteStore::open`] with the HTTP client `connector` makes in
    /// place of reqwest's (still bounded): the fuzz target answers every
    /// request from its input.
    #[doc(hidden)]
    pub fn open_over(url: &str, opts: &RemoteOptions, connector: impl HttpConnector) -> StoreResult<RemoteStore> {
        let parsed =
            url::Url::parse(url).map_err(|e| StoreError::Corrupt(format!("{}: {e}", super::redact_url(url))))?;
        let display = super::redact_url(url).trim_end_matches('/').to_string();
        let (store, root) = build(&parsed, opts, BoundedConnector(connector))
            .map_err(|e| StoreError::Corrupt(format!("{display}: {e}")))?;
        let runtime = super::runtime()?;
        Ok(RemoteStore {
            store: Arc::from(store),
            root: root.to_string(),
            display,
            runtime,
        })
    }

    /// The store's URL without secrets.
    pub fn display(&self) -> &str {
        &self.display
    }

    /// The object path of `key`, as it is: `Path::from` would percent-encode
    /// non-ASCII characters and `%` into another key (`données` became
    /// `donn%C3%A9es`, which the bucket does not hold). A key
    /// `Path::parse` refuses (a control character) falls back to that.
    fn path(&self, key: &str) -> Path {
        let full = match (self.root.is_empty(), key.is_empty()) {
            (true, _) => key.to_string(),
            (false, true) => self.root.clone(),
            (false, false) => format!("{}/{key}", self.root),
        };
        Path::parse(&full).unwrap_or_else(|_| Path::from(full.as_str()))
    }

    fn name(&self, key: &str) -> String {
        format!("{}/{key}", self.display)
    }

    /// The whole object at `key` (at most `max_len` bytes) with its stamp
    /// from the response, in one `GET`; `None` when it does not exist.
    fn fetch(&self, key: &StoreKey, max_len: u64) -> StoreResult<Option<(bytes::Bytes, Stamp)>> {
        let _reading = inflight::begin(key.as_str());
        let path = self.path(key.as_str());
        let name = self.name(key.as_str());
        self.runtime.block_on(async {
            let result = match self.store.get_opts(&path, GetOptions::default()).await {
                Ok(r) => r,
                Err(object_store::Error::NotFound { .. }) => return Ok(None),
                Err(e) => return Err(io_error(&name, e)),
            };
            if result.meta.size > max_len {
                return Err(super::too_large(result.meta.size, max_len));
            }
            let stamp = Stamp {
                len: result.meta.size,
                version: version_of(&result.meta),
            };
            Ok(Some((body_within(result, max_len, &name).await?, stamp)))
        })
    }

    /// The object's metadata, or `None` when it does not exist.
    fn head(&self, key: &StoreKey) -> StoreResult<Option<object_store::ObjectMeta>> {
        let path = self.path(key.as_str());
        match self.runtime.block_on(self.store.head(&path)) {
            Ok(m) => Ok(Some(m)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(io_error(&self.name(key.as_str()), e)),
        }
    }
}

impl ReadableStore for RemoteStore {
    fn get(&self, key: &StoreKey, max_len: u64) -> StoreResult<Option<Vec<u8>>> {
        Ok(self.fetch(key, max_len)?.map(|(bytes, _)| Vec::from(bytes)))
    }

    /// One `GET`: the response's ETag (or last-modified time) and length
    /// are the stamp (the default would ask a `HEAD` first).
    fn get_stamped(&self, key: &StoreKey, max_len: u64, buf: &mut Vec<u8>) -> StoreResult<(bool, Option<Stamp>)> {
        buf.clear();
        Ok(match self.fetch(key, max_len)? {
            Some((bytes, stamp)) => {
                buf.extend_from_slice(&bytes);
                (true, Some(stamp))
            }
            None => (false, None),
        })
    }

    fn get_range(&self, key: &StoreKey, offset: u64, len: u64, expect: Option<Stamp>) -> StoreResult<Option<Vec<u8>>> {
        let _reading = inflight::begin(key.as_str());
        let request = RangeRequest {
            key: key.clone(),
            offset,
            len,
            expect,
        };
        Ok(self.runtime.block_on(self.get_range_async(&request))?.map(Vec::from))
    }

    fn stat(&self, key: &StoreKey) -> StoreResult<Option<Stamp>> {
        let _reading = inflight::begin(key.as_str());
        Ok(self.head(key)?.map(|m| Stamp {
            len: m.size,
            version: version_of(&m),
        }))
    }

    fn profile(&self) -> super::Profile {
        super::Profile {
            concurrency: 16,
            rereads_are_cheap: false,
            rewritten_in_place: true,
        }
    }

    fn get_ranges(&self, requests: &[RangeRequest]) -> Vec<StoreResult<Option<Vec<u8>>>> {
        let _reading: Vec<_> = requests.iter().map(|r| inflight::begin(r.key.as_str())).collect();
        // Ranges of one object (one version) are merged where they lie
        // close together, into few requests; all requests are in flight at once.
        let mut groups: Vec<(&StoreKey, Option<Stamp>, Vec<usize>)> = Vec::new();
        for (i, r) in requests.iter().enumerate() {
            match groups.iter_mut().find(|(k, e, _)| *k == &r.key && *e == r.expect) {
                Some((_, _, members)) => members.push(i),
                None => groups.push((&r.key, r.expect, vec![i])),
            }
        }
        let fetches = groups.iter().map(|(key, expect, members)| {
            let ranges: Vec<std::ops::Range<u64>> = members
                .iter()
                .map(|&i| requests[i].offset..requests[i].offset.saturating_add(requests[i].len))
                .collect();
            async move {
                object_store::coalesce_ranges(
                    &ranges,
                    |range| self.fetch_range(key, range, *expect),
                    object_store::OBJECT_STORE_COALESCE_DEFAULT,
                )
                .await
            }
        });
        let results = self.runtime.block_on(join_all(fetches.collect()));
        let mut out: Vec<Option<StoreResult<Option<Vec<u8>>>>> = (0..requests.len()).map(|_| None).collect();
        for ((_, _, members), fetched) in groups.iter().zip(results) {
            match fetched {
                Ok(parts) => {
                    for (&i, part) in members.iter().zip(parts) {
                        let r = &requests[i];
                        out[i] = Some(match part.len() as u64 {
                            n if n == r.len => Ok(Some(Vec::from(part))),
                            n => Err(short_value(&r.key, r.offset, r.len, r.offset + n)),
                        });
                    }
                }
                Err(e) => {
                    for &i in members {
                        out[i] = Some(match &e {
                            StoreError::NotFound(_) => Ok(None),
                            e => Err(e.duplicate()),
                        });
                    }
                }
            }
        }
        out.into_iter().map(|o| o.expect("every request answered")).collect()
    }
}

impl crate::store::Listable for RemoteStore {
    fn list_dir(&self, prefix: &str) -> StoreResult<Listing> {
        let _reading = inflight::begin(prefix);
        let path = self.path(prefix);
        let base = if self.root.is_empty() && prefix.is_empty() {
            None
        } else {
            Some(&path)
        };
        let listed = self
            .runtime
            .block_on(self.store.list_with_delimiter(base))
            .map_err(|e| io_error(&self.name(prefix), e))?;
        let last = |p: &Path| p.filename().map(str::to_string);
        let mut out = Listing {
            keys: listed.objects.iter().filter_map(|o| last(&o.location)).collect(),
            prefixes: listed.common_prefixes.iter().filter_map(last).collect(),
        };
        out.keys.sort();
        out.prefixes.sort();
        Ok(out)
    }
}

impl RemoteStore {
    /// One range of `key` for [`ReadableStore::get_ranges`]: an absent
    /// object is a `NotFound` error here (the whole group is absent).
    async fn fetch_range(
        &self,
        key: &StoreKey,
        range: std::ops::Range<u64>,
        expect: Option<Stamp>,
    ) -> StoreResult<bytes::Bytes> {
        let request = RangeRequest {
            key: key.clone(),
            offset: range.start,
            len: range.end - range.start,
            expect,
        };
        match self.get_range_async(&request).await? {
            Some(v) => Ok(v),
            None => Err(StoreError::NotFound(format!("{key} is absent"))),
        }
    }

    /// One range, checked against its stamp and length; the response's
    /// buffer as it came (callers copy only what they keep).
    async fn get_range_async(&self, r: &RangeRequest) -> StoreResult<Option<bytes::Bytes>> {
        let path = self.path(r.key.as_str());
        let name = self.name(r.key.as_str());
        let options = GetOptions {
            range: Some(GetRange::Bounded(r.offset..r.offset + r.len)),
            ..GetOptions::default()
        };
        let result = match self.store.get_opts(&path, options).await {
            Ok(res) => res,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(io_error(&name, e)),
        };
        let have = Stamp {
            len: result.meta.size,
            version: version_of(&result.meta),
        };
        check_stamp(&r.key, have, r.expect)?;
        if r.offset + r.len > have.len {
            return Err(short_value(&r.key, r.offset, r.len, have.len));
        }
        // The client refuses a body longer than the range (bounded_http).
        let bytes = result.bytes().await.map_err(|e| io_error(&name, e))?;
        if bytes.len() as u64 != r.len {
            return Err(short_value(&r.key, r.offset, r.len, bytes.len() as u64));
        }
        Ok(Some(bytes))
    }
}

/// A whole object's body, refused as soon as it passes `limit` bytes (a
/// server may send more than its Content-Length said, or send no length):
/// nothing past the limit is held. A body that comes in one piece is kept as it
/// came (no copy).
async fn body_within(result: object_store::GetResult, limit: u64, name: &str) -> StoreResult<bytes::Bytes> {
    use futures::StreamExt;
    let too_long = || StoreError::Corrupt(format!("{name}: the server sent more than the {limit} bytes asked for"));
    let mut stream = result.into_stream();
    let mut first: Option<bytes::Bytes> = None;
    let mut rest = bytes::BytesMut::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| io_error(name, e))?;
        let held = first.as_ref().map_or(0, bytes::Bytes::len) + rest.len();
        if (held + chunk.len()) as u64 > limit {
            return Err(too_long());
        }
        match first.take() {
            None if rest.is_empty() => first = Some(chunk),
            None => rest.extend_from_slice(&chunk),
            Some(f) => {
                rest.reserve(f.len() + chunk.len());
                rest.extend_from_slice(&f);
                rest.extend_from_slice(&chunk);
            }
        }
    }
    Ok(first.unwrap_or_else(|| rest.freeze()))
}

/// Run futures concurrently and collect their outputs in order.
async fn join_all<F: std::future::Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut pinned: Vec<std::pin::Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = (0..pinned.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in pinned.iter_mut().enumerate() {
            if out[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => out[i] = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().map(|o| o.expect("every future finished")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every remote store, of any bucket or scheme, runs on the process's
    /// one runtime: a reference set naming many prefixes starts no more
    /// threads than one store does.
    #[test]
    fn every_remote_store_shares_one_runtime() {
        let opts = RemoteOptions {
            environment: Vec::new(),
            options: vec![("aws_region".into(), "us-east-1".into())],
            anonymous: true,
            connect_timeout: std::time::Duration::from_secs(1),
            request_timeout: std::time::Duration::from_secs(1),
            retries: 0,
        };
        let a = RemoteStore::open("s3://one/a.zarr", &opts).unwrap();
        let b = RemoteStore::open("s3://two/b.zarr", &opts).unwrap();
        let c = RemoteStore::open(
            "https://example.invalid/c.zarr",
            &RemoteOptions {
                options: Vec::new(),
                ..opts
            },
        )
        .unwrap();
        assert!(std::ptr::eq(a.runtime, b.runtime) && std::ptr::eq(b.runtime, c.runtime));
    }

    /// A timeout is known by the HTTP client's error kind anywhere in the
    /// chain, not by the words of a message.
    #[test]
    fn a_timeout_is_known_by_its_kind() {
        use object_store::client::{HttpError, HttpErrorKind};
        let generic = |kind, words: &str| object_store::Error::Generic {
            store: "S3",
            source: Box::new(HttpError::new(kind, StoreError::failed(words))),
        };
        assert_eq!(
            io_error("k", generic(HttpErrorKind::Timeout, "no words")).kind(),
            "timed_out"
        );
        assert_eq!(
            io_error("k", generic(HttpErrorKind::Request, "Timeout in the text")).kind(),
            "io"
        );
    }

    #[test]
    fn urls_are_recognised_and_errors_are_one_line() {
        assert!(is_remote("s3://bucket/x.zarr") && is_remote("gs://b/x") && is_remote("https://h/x"));
        assert!(!is_remote("/data/x.zarr") && !is_remote("x.zarr"));
        // 404 is "absent", 403 is EACCES (docs/remote.md's mapping).
        let denied = io_error(
            "s3://b/k",
            object_store::Error::PermissionDenied {
                path: "k".into(),
                source: "403 Forbidden".into(),
            },
        );
        assert_eq!(denied.kind(), "denied");
        assert_eq!(denied.errno(), libc::EACCES);
        let missing = io_error(
            "s3://b/k",
            object_store::Error::NotFound {
                path: "k".into(),
                source: "404".into(),
            },
        );
        assert_eq!(missing.kind(), "not_found");
        assert_eq!(
            concise("Error: GET http://h/b failed:\n404 Not Found: <?xml v?><Error><Code>NoSuchBucket</Code></Error>"),
            "Error: GET http://h/b failed: 404 Not Found (NoSuchBucket)"
        );
        assert_eq!(
            concise("GET http://h/x failed - 500 Internal Server Error: <!doctype html>\n<title>x</title>"),
            "GET http://h/x failed - 500 Internal Server Error"
        );
    }
}

//! The HTTP client under every object store, with bounded response bodies:
//! a server (or anything between) may answer a 16-byte range with gigabytes,
//! or an error status with an endless body that `object_store` would read
//! whole into its message.
//!
//! Invariants: the body of a successful answer to a `Range: bytes=A-B`
//! request is never held past `B - A + 1` bytes (more is an error as it
//! streams in); a listing's (S3, GCS and Azure list calls, WebDAV
//! `PROPFIND`), which `object_store` reads whole to parse it, never past
//! [`LISTING_BODY_BYTES`]; the body of an error status is cut at
//! [`ERROR_BODY_BYTES`]; every other answer passes as it is (the store
//! layer bounds whole objects by their `max_len`).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use object_store::client::{
    ClientOptions, HttpClient, HttpConnector, HttpError, HttpErrorKind, HttpRequest, HttpResponse, HttpResponseBody,
    HttpService, ReqwestConnector,
};

/// The most of an error answer's body kept (its message).
pub const ERROR_BODY_BYTES: usize = 4 << 10;
/// The most bytes of one listing's answer: a page of S3's 1,000 keys is
/// about 300 KB, a `PROPFIND` of 100,000 entries about 50 MB.
pub const LISTING_BODY_BYTES: u64 = 64 << 20;

/// Whether `req` lists a prefix: a WebDAV `PROPFIND`, or the list calls of
/// S3 and GCS (`list-type=`) and Azure (`comp=list`).
fn is_listing(req: &HttpRequest) -> bool {
    req.method().as_str() == "PROPFIND"
        || req
            .uri()
            .query()
            .is_some_and(|q| q.split('&').any(|p| p.starts_with("list-type=") || p == "comp=list"))
}

/// Builds the bounded client for each store, over the client `C` builds
/// (reqwest's; the fuzz target gives a scripted server).
#[derive(Debug)]
pub struct BoundedConnector<C = ReqwestConnector>(pub C);

impl Default for BoundedConnector {
    fn default() -> Self {
        BoundedConnector(ReqwestConnector::default())
    }
}

impl<C: HttpConnector> HttpConnector for BoundedConnector<C> {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        Ok(HttpClient::new(Bounded(self.0.connect(options)?)))
    }
}

#[derive(Debug)]
struct Bounded(HttpClient);

/// The length a `Range: bytes=A-B` header asks for.
fn range_len(req: &HttpRequest) -> Option<u64> {
    let v = req.headers().get(http::header::RANGE)?.to_str().ok()?;
    let (a, b) = v.strip_prefix("bytes=")?.split_once('-')?;
    let (a, b) = (a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?);
    b.checked_sub(a)?.checked_add(1)
}

impl HttpService for Bounded {
    fn call<'a, 'b>(
        &'a self,
        req: HttpRequest,
    ) -> Pin<Box<dyn Future<Output = Result<HttpResponse, HttpError>> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        let asked = range_len(&req).or_else(|| is_listing(&req).then_some(LISTING_BODY_BYTES));
        Box::pin(async move {
            let response = self.0.execute(req).await?;
            let (parts, body) = response.into_parts();
            let limit = if !parts.status.is_success() {
                Limit::Cut(ERROR_BODY_BYTES as u64)
            } else if let Some(n) = asked {
                Limit::Refuse(n)
            } else {
                return Ok(HttpResponse::from_parts(parts, body));
            };
            let body = HttpResponseBody::new(Limited {
                inner: body,
                limit,
                seen: 0,
            });
            Ok(HttpResponse::from_parts(parts, body))
        })
    }
}

#[derive(Debug, Clone, Copy)]
enum Limit {
    /// Keep this many bytes and end the body there.
    Cut(u64),
    /// More than this many bytes is an error.
    Refuse(u64),
}

struct Limited {
    inner: HttpResponseBody,
    limit: Limit,
    seen: u64,
}

impl Body for Limited {
    type Data = Bytes;
    type Error = HttpError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, HttpError>>> {
        let this = &mut *self;
        if let Limit::Cut(n) = this.limit
            && this.seen >= n
        {
            return Poll::Ready(None);
        }
        let frame = match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => frame,
            other => return other,
        };
        let Some(data) = frame.data_ref() else {
            return Poll::Ready(Some(Ok(frame)));
        };
        let len = data.len() as u64;
        match this.limit {
            Limit::Refuse(n) if this.seen + len > n => Poll::Ready(Some(Err(HttpError::new(
                HttpErrorKind::Decode,
                crate::store::StoreError::Corrupt(format!(
                    "the server sent more than the {n} bytes asked for (a range, or a listing's bound)"
                )),
            )))),
            Limit::Cut(n) if this.seen + len > n => {
                let keep = (n - this.seen) as usize;
                this.seen = n;
                let data = frame.into_data().unwrap_or_default().slice(..keep);
                Poll::Ready(Some(Ok(Frame::data(data))))
            }
            _ => {
                this.seen += len;
                Poll::Ready(Some(Ok(frame)))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        // The inner hint may be the server's lie: promise nothing.
        SizeHint::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(range: Option<&str>) -> HttpRequest {
        let mut b = http::Request::builder().uri("http://127.0.0.1/x");
        if let Some(r) = range {
            b = b.header(http::header::RANGE, r);
        }
        b.body(object_store::client::HttpRequestBody::from(Vec::new())).unwrap()
    }

    #[test]
    fn listings_are_told_from_object_reads() {
        let req = |method: &str, uri: &str| {
            http::Request::builder()
                .method(method)
                .uri(uri)
                .body(object_store::client::HttpRequestBody::from(Vec::new()))
                .unwrap()
        };
        assert!(is_listing(&req(
            "GET",
            "http://h/b?list-type=2&prefix=a%2F&delimiter=%2F"
        )));
        assert!(is_listing(&req("GET", "http://h/c?restype=container&comp=list")));
        assert!(is_listing(&req("PROPFIND", "http://h/store/")));
        assert!(!is_listing(&req("GET", "http://h/b/a/zarr.json")));
        assert!(!is_listing(&req("GET", "http://h/b/a/c/0?X-Amz-Signature=x")));
    }

    #[test]
    fn ranges_are_read_from_the_request() {
        assert_eq!(range_len(&request(Some("bytes=0-15"))), Some(16));
        assert_eq!(range_len(&request(Some("bytes=100-100"))), Some(1));
        assert_eq!(range_len(&request(Some("bytes=5-"))), None);
        assert_eq!(range_len(&request(Some("bytes=9-1"))), None);
        assert_eq!(range_len(&request(None)), None);
    }

    /// Every frame of a body, or its first error.
    fn drain(body: Limited) -> Result<Vec<u8>, HttpError> {
        let mut body = Box::pin(body);
        let mut out = Vec::new();
        futures::executor::block_on(std::future::poll_fn(|cx| {
            loop {
                match body.as_mut().poll_frame(cx) {
                    Poll::Ready(None) => return Poll::Ready(Ok(())),
                    Poll::Ready(Some(Err(e))) => return Poll::Ready(Err(e)),
                    Poll::Ready(Some(Ok(f))) => out.extend_from_slice(f.data_ref().unwrap()),
                    Poll::Pending => return Poll::Pending,
                }
            }
        }))?;
        Ok(out)
    }

    #[test]
    fn bodies_past_their_limit_are_refused_or_cut() {
        let limited = |len: usize, limit| Limited {
            inner: HttpResponseBody::from(vec![7u8; len]),
            limit,
            seen: 0,
        };
        assert_eq!(drain(limited(16, Limit::Refuse(16))).unwrap().len(), 16);
        let e = drain(limited(1 << 20, Limit::Refuse(16))).unwrap_err().to_string();
        assert!(e.contains("more than the 16 bytes"), "{e}");
        assert_eq!(drain(limited(1 << 20, Limit::Cut(100))).unwrap(), vec![7u8; 100]);
        assert_eq!(drain(limited(10, Limit::Cut(100))).unwrap(), vec![7u8; 10]);
    }
}

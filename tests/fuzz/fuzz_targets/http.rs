//! Any bytes as a lying HTTP server under a remote store: every request is
//! answered with the status, headers (`Content-Range`, `Content-Length`,
//! `ETag`, `Last-Modified`) and body frames the input describes. The
//! store's whole reads, range reads (one and several) and stats err or
//! answer, never panic, never return more than was asked for, and a range
//! that answers has exactly the length asked for.
#![no_main]
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use object_store::client::{
    ClientOptions, HttpClient, HttpConnector, HttpError, HttpRequest, HttpResponse, HttpResponseBody, HttpService,
};

use nzfs::store::object::{RemoteOptions, RemoteStore};
use nzfs::store::{RangeRequest, ReadableStore, StoreKey};

/// One answer, parsed from the input.
#[derive(Debug)]
struct Script {
    status: u16,
    headers: Vec<(&'static str, String)>,
    frames: Vec<Vec<u8>>,
}

impl Script {
    /// status byte, then four header lines (empty: absent) ended by `\n`,
    /// then the body: each frame a length byte and that many bytes.
    fn parse(data: &[u8]) -> Script {
        const STATUSES: [u16; 8] = [200, 206, 206, 206, 404, 416, 500, 304];
        let status = STATUSES[usize::from(data.first().copied().unwrap_or(0)) % STATUSES.len()];
        let mut rest = data.get(1..).unwrap_or_default();
        let mut headers = Vec::new();
        for name in ["content-range", "content-length", "etag", "last-modified"] {
            let end = rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len());
            let value = String::from_utf8_lossy(&rest[..end]).into_owned();
            if !value.is_empty() {
                headers.push((name, value));
            }
            rest = rest.get(end + 1..).unwrap_or_default();
        }
        let mut frames = Vec::new();
        while let Some((&n, tail)) = rest.split_first() {
            // A length byte of 255 stands for a 64 KiB frame of its next byte.
            let frame = if n == 255 {
                vec![tail.first().copied().unwrap_or(0); 64 << 10]
            } else {
                tail[..usize::from(n).min(tail.len())].to_vec()
            };
            rest = &tail[usize::from(n).min(tail.len())..];
            frames.push(frame);
        }
        Script {
            status,
            headers,
            frames,
        }
    }
}

#[derive(Debug, Clone)]
struct Server(Arc<Script>);

impl HttpService for Server {
    fn call<'a, 'b>(
        &'a self,
        _req: HttpRequest,
    ) -> Pin<Box<dyn Future<Output = Result<HttpResponse, HttpError>> + Send + 'b>>
    where
        'a: 'b,
        Self: 'b,
    {
        let script = self.0.clone();
        Box::pin(async move {
            let mut b = http::Response::builder().status(script.status);
            for (name, value) in &script.headers {
                if let Ok(v) = http::HeaderValue::from_str(value) {
                    b = b.header(*name, v);
                }
            }
            let frames = script
                .frames
                .iter()
                .cloned()
                .map(|f| Ok::<_, HttpError>(bytes::Bytes::from(f)));
            let stream = futures::stream::iter(frames.collect::<Vec<_>>());
            let body = HttpResponseBody::new(http_body_util::StreamBody::new(futures::StreamExt::map(stream, |r| {
                r.map(http_body::Frame::data)
            })));
            Ok(b.body(body).expect("a response"))
        })
    }
}

impl HttpConnector for Server {
    fn connect(&self, _: &ClientOptions) -> object_store::Result<HttpClient> {
        Ok(HttpClient::new(self.clone()))
    }
}

fuzz_target!(|data: &[u8]| {
    let server = Server(Arc::new(Script::parse(data)));
    let opts = RemoteOptions {
        environment: Vec::new(),
        options: Vec::new(),
        anonymous: true,
        connect_timeout: Duration::from_secs(1),
        request_timeout: Duration::from_secs(1),
        retries: 0,
    };
    let Ok(store) = RemoteStore::open_over("http://127.0.0.1:9/s.zarr", &opts, server) else {
        return;
    };
    let key = StoreKey::new("c/0").unwrap();
    if let Ok(Some(v)) = store.get(&key, 100) {
        assert!(v.len() <= 100, "a whole get of at most 100 bytes gave {}", v.len());
    }
    if let Ok(Some(v)) = store.get_range(&key, 3, 16, None) {
        assert_eq!(v.len(), 16, "a range of 16 bytes gave {}", v.len());
    }
    let requests: Vec<RangeRequest> = [(0, 4), (8, 4), (1 << 20, 10)]
        .into_iter()
        .map(|(offset, len)| RangeRequest {
            key: key.clone(),
            offset,
            len,
            expect: None,
        })
        .collect();
    for (r, got) in requests.iter().zip(store.get_ranges(&requests)) {
        if let Ok(Some(v)) = got {
            assert_eq!(v.len() as u64, r.len, "a range of {} bytes gave {}", r.len, v.len());
        }
    }
    let _ = store.stat(&key);
});

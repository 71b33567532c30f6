//! Real servers on 127.0.0.1 for the remote-store tests, each stopped on
//! drop: moto's S3 server (from the venv `scripts/setup.sh --test` makes),
//! nginx (Debian's), and [`Proxy`], a small HTTP proxy the tests own that
//! sits between nzfs and a server to add latency and faults, and counts
//! requests. Without a server a test says so and passes, except under CI
//! (`CI` set), where it fails.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A moto S3 server on a free loopback port, stopped on drop.
pub struct Moto {
    child: Child,
    pub port: u16,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Held from choosing a free port until a server listens on it, and by
/// [`Proxy::start`] while it binds: otherwise a test running alongside
/// could take the port in between, and the server's readiness probe would
/// reach the other test's listener (seen: a bucket created on another
/// test's moto).
static PORTS: Mutex<()> = Mutex::new(());

/// Start a server with `spawn(port)` on a free loopback port and wait
/// until it listens there; a server that exits first (its port was taken
/// after all) is started again on another port, at most three times.
fn spawn_listening(what: &str, mut spawn: impl FnMut(u16) -> Child) -> (Child, u16) {
    let _ports = PORTS.lock().unwrap_or_else(|p| p.into_inner());
    for _ in 0..3 {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut child = spawn(port);
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if child.try_wait().unwrap().is_some() {
                break; // exited: try another port
            }
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return (child, port);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{what} did not start listening on port {port}");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    panic!("{what} exited three times before listening");
}

fn moto_binary() -> Option<PathBuf> {
    let venv = std::env::var("NZFS_VENV").unwrap_or_else(|_| ".venv".into());
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    [
        root.join(&venv).join("bin/moto_server"),
        PathBuf::from(&venv).join("bin/moto_server"),
    ]
    .into_iter()
    .find(|p| p.exists())
}

impl Moto {
    pub fn start() -> Option<Moto> {
        Moto::start_with(&[])
    }

    /// Start moto with extra environment (e.g. `INITIAL_NO_AUTH_ACTION_COUNT`).
    pub fn start_with(env: &[(&str, &str)]) -> Option<Moto> {
        let Some(bin) = moto_binary() else {
            assert!(
                std::env::var_os("CI").is_none(),
                "moto_server missing (scripts/setup.sh --test installs it)"
            );
            eprintln!("skipping: no moto_server (run scripts/setup.sh --test)");
            return None;
        };
        let (child, port) = spawn_listening("moto_server", |port| {
            Command::new(&bin)
                .envs(env.iter().copied())
                .args(["-H", "127.0.0.1", "-p", &port.to_string()])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start moto_server")
        });
        let moto = Moto { child, port };
        // Listening is not yet answering: under a loaded CI machine moto's
        // first request was once closed with no reply. Its dashboard
        // answers once it serves, and counts as none of the unsigned
        // actions INITIAL_NO_AUTH_ACTION_COUNT allows.
        let deadline = Instant::now() + Duration::from_secs(30);
        while moto.request_once("GET", "/moto-api/", &[], b"").0 == 0 {
            assert!(
                Instant::now() < deadline,
                "moto_server on port {port} listens but never answers"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(moto)
    }

    /// One unsigned request (moto accepts them for writes); the status.
    pub fn request(&self, method: &str, path: &str, body: &[u8]) -> u16 {
        self.request_with(method, path, &[], body).0
    }

    /// One request with extra headers; the status and the body.
    /// A request refused or closed with no reply (status 0: moto dropped it
    /// unread, as it did once under a loaded CI machine) is sent again,
    /// four times at most.
    pub fn request_with(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
        let mut reply = self.request_once(method, path, headers, body);
        for _ in 0..4 {
            if reply.0 != 0 {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
            reply = self.request_once(method, path, headers, body);
        }
        reply
    }

    fn request_once(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
        // Refused (status 0, sent again): seen once on a loaded CI machine
        // just after moto answered its first request.
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) else {
            return (0, String::new());
        };
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: {}\r\nConnection: close\r\n",
            self.port,
            body.len()
        );
        if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("content-type")) {
            head.push_str("Content-Type: application/octet-stream\r\n");
        }
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        if s.write_all(head.as_bytes()).and_then(|()| s.write_all(body)).is_err() {
            return (0, String::new());
        }
        let mut reply = String::new();
        let _ = s.read_to_string(&mut reply);
        let status = reply
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let body = reply.split_once("\r\n\r\n").map_or("", |(_, b)| b).to_string();
        (status, body)
    }

    /// One IAM action (form-encoded, as the AWS CLI sends it); the reply.
    /// Unsigned: moto accepts it while its no-auth allowance lasts.
    pub fn iam(&self, form: &str) -> String {
        let auth = "AWS4-HMAC-SHA256 Credential=setup/20260101/us-east-1/iam/aws4_request, \
                    SignedHeaders=host, Signature=00";
        let (status, body) = self.request_with(
            "POST",
            "/",
            &[
                ("Content-Type", "application/x-www-form-urlencoded"),
                ("Authorization", auth),
            ],
            format!("{form}&Version=2010-05-08").as_bytes(),
        );
        assert_eq!(status, 200, "IAM {form}: {body}");
        body
    }

    /// Upload every file of `store` under `prefix`; readable by anyone
    /// (ACL public-read) so that anonymous requests may read them.
    pub fn upload(&self, bucket: &str, store: &Path, prefix: &str) -> usize {
        let mut n = 0;
        for file in files(store) {
            let rel = file.strip_prefix(store).unwrap().to_str().unwrap();
            // A key as S3 clients send it: UTF-8, percent-encoded.
            let encoded: String = format!("{prefix}/{rel}")
                .bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                        (b as char).to_string()
                    }
                    b => format!("%{b:02X}"),
                })
                .collect();
            let (status, _) = self.request_with(
                "PUT",
                &format!("/{bucket}/{encoded}"),
                &[("x-amz-acl", "public-read")],
                &std::fs::read(&file).unwrap(),
            );
            assert_eq!(status, 200, "upload {rel}");
            n += 1;
        }
        n
    }

    pub fn options(&self) -> Vec<String> {
        s3_options(self.port, Some(("test", "test")))
    }
}

/// The `--store-option`s that reach an S3 endpoint on loopback `port`
/// (moto, or a [`Proxy`] in front of it) with these credentials, or
/// without any (then add `--anonymous`).
pub fn s3_options(port: u16, credentials: Option<(&str, &str)>) -> Vec<String> {
    let mut options = vec![
        format!("aws_endpoint=http://127.0.0.1:{port}"),
        "aws_region=us-east-1".into(),
    ];
    if let Some((key, secret)) = credentials {
        options.push(format!("aws_access_key_id={key}"));
        options.push(format!("aws_secret_access_key={secret}"));
    }
    options
        .into_iter()
        .flat_map(|o| ["--store-option".to_string(), o])
        .collect()
}

/// nginx serving tests/data on a free loopback port, stopped on drop.
pub struct Nginx {
    child: Child,
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Nginx {
    /// SIGTERM, so that the master stops its workers too (SIGKILL left
    /// them running after each test), then SIGKILL if it takes over 5 s.
    fn drop(&mut self) {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) };
        let start = std::time::Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Nginx {
    pub fn start() -> Option<Nginx> {
        let bin = ["/usr/sbin/nginx", "/usr/bin/nginx"]
            .into_iter()
            .find(|p| Path::new(p).exists());
        let Some(bin) = bin else {
            assert!(
                std::env::var_os("CI").is_none(),
                "nginx missing (scripts/setup.sh --test installs it)"
            );
            eprintln!("skipping: no nginx (run scripts/setup.sh --test)");
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let conf = dir.path().join("nginx.conf");
        let (child, port) = spawn_listening("nginx", |port| {
            let d = dir.path().display();
            std::fs::write(
                &conf,
                format!(
                    "daemon off; user root; pid {d}/nginx.pid; error_log {d}/error.log;\n\
                     events {{}}\n\
                     http {{ access_log off; server {{ listen 127.0.0.1:{port}; root {}; }} }}\n",
                    super::data_dir().display()
                ),
            )
            .unwrap();
            Command::new(bin)
                .arg("-c")
                .arg(&conf)
                .arg("-p")
                .arg(dir.path())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start nginx")
        });
        let server = Nginx { child, port, _dir: dir };
        Some(server)
    }
}

/// Every file under `dir`, sorted; a directory that cannot be listed (a
/// broken node of a mount) counts as a file.
pub fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(listing) = std::fs::read_dir(&d) else {
            out.push(d);
            continue;
        };
        for e in listing {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// What the proxy does to the requests that come next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Forward every request.
    None,
    /// Answer the next `n` requests with this status (503 SlowDown, 500, 403).
    Status(u16, usize),
    /// Reset the connection of the next `n` requests (RST, no answer).
    Reset(usize),
    /// Accept requests and never answer them, until the fault changes.
    Stall,
    /// Send the next `n` answers with only half their body, then close.
    Truncate(usize),
    /// Answer every GET with its own head but a body of this many zero
    /// bytes (Content-Length says so), until the fault changes.
    Flood(u64),
    /// The same for listings (`GET /bucket?list-type=2&...`) only.
    FloodListings(u64),
}

struct ProxyState {
    fault: Mutex<Fault>,
    latency: Mutex<Duration>,
    requests: AtomicUsize,
    /// "METHOD target" of every request since the last reset.
    log: Mutex<Vec<String>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    stop: AtomicBool,
}

/// An HTTP/1.1 proxy on a free loopback port in front of `upstream`.
pub struct Proxy {
    pub port: u16,
    state: Arc<ProxyState>,
    accept: Option<std::thread::JoinHandle<()>>,
}

impl Proxy {
    pub fn start(upstream: u16) -> Proxy {
        let listener = {
            let _ports = PORTS.lock().unwrap_or_else(|p| p.into_inner());
            TcpListener::bind("127.0.0.1:0").unwrap()
        };
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(ProxyState {
            fault: Mutex::new(Fault::None),
            latency: Mutex::new(Duration::ZERO),
            requests: AtomicUsize::new(0),
            log: Mutex::new(Vec::new()),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            stop: AtomicBool::new(false),
        });
        let shared = state.clone();
        let accept = std::thread::spawn(move || {
            for client in listener.incoming() {
                if shared.stop.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { continue };
                let state = shared.clone();
                std::thread::spawn(move || serve(client, upstream, &state));
            }
        });
        Proxy {
            port,
            state,
            accept: Some(accept),
        }
    }

    pub fn set_fault(&self, fault: Fault) {
        *self.state.fault.lock().unwrap() = fault;
    }

    /// Delay added before every forwarded request.
    pub fn set_latency(&self, latency: Duration) {
        *self.state.latency.lock().unwrap() = latency;
    }

    /// Requests received since the last [`Proxy::reset_counts`].
    pub fn requests(&self) -> usize {
        self.state.requests.load(Ordering::SeqCst)
    }

    /// The most requests that were in flight at once.
    pub fn max_in_flight(&self) -> usize {
        self.state.max_in_flight.load(Ordering::SeqCst)
    }

    /// "METHOD target" of every request since the last reset.
    pub fn request_log(&self) -> Vec<String> {
        self.state.log.lock().unwrap().clone()
    }

    pub fn reset_counts(&self) {
        self.state.log.lock().unwrap().clear();
        self.state.requests.store(0, Ordering::SeqCst);
        self.state.max_in_flight.store(0, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.state.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

/// One request read from `s`: its head (with `Connection: close` in place
/// of any Connection header) and body. `None` at the end of the stream.
fn read_request(s: &mut TcpStream) -> Option<Vec<u8>> {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        if s.read(&mut byte).ok()? == 0 || head.len() > 64 << 10 {
            return None;
        }
        head.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&head).to_string();
    let mut length = 0usize;
    let mut out = String::new();
    for line in text.split("\r\n").filter(|l| !l.is_empty()) {
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if !lower.starts_with("connection:") {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("Connection: close\r\n\r\n");
    let mut request = out.into_bytes();
    let mut body = vec![0u8; length];
    s.read_exact(&mut body).ok()?;
    request.extend(body);
    Some(request)
}

/// Take one use of the current fault.
fn next_fault(state: &ProxyState) -> Fault {
    let mut f = state.fault.lock().unwrap();
    let now = *f;
    *f = match now {
        Fault::Status(code, n) if n > 1 => Fault::Status(code, n - 1),
        Fault::Reset(n) if n > 1 => Fault::Reset(n - 1),
        Fault::Truncate(n) if n > 1 => Fault::Truncate(n - 1),
        Fault::Status(..) | Fault::Reset(_) | Fault::Truncate(_) => Fault::None,
        other => other,
    };
    now
}

fn serve(mut client: TcpStream, upstream: u16, state: &ProxyState) {
    let _ = client.set_read_timeout(Some(Duration::from_secs(60)));
    while let Some(request) = read_request(&mut client) {
        state.requests.fetch_add(1, Ordering::SeqCst);
        let line = String::from_utf8_lossy(&request[..request.len().min(512)]).to_string();
        let target = line.split("\r\n").next().unwrap_or_default();
        state
            .log
            .lock()
            .unwrap()
            .push(target.trim_end_matches(" HTTP/1.1").to_string());
        let now = state.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        state.max_in_flight.fetch_max(now, Ordering::SeqCst);
        let keep = answer(&mut client, &request, upstream, state);
        state.in_flight.fetch_sub(1, Ordering::SeqCst);
        if !keep {
            break;
        }
    }
}

/// Answer one request; whether the connection stays open.
fn answer(client: &mut TcpStream, request: &[u8], upstream: u16, state: &ProxyState) -> bool {
    let fault = next_fault(state);
    match fault {
        Fault::Status(code, _) => {
            let body = format!("<?xml version=\"1.0\"?><Error><Code>Fault{code}</Code></Error>");
            let head = format!(
                "HTTP/1.1 {code} Fault\r\nContent-Length: {}\r\nContent-Type: application/xml\r\n\r\n",
                body.len()
            );
            return client.write_all(head.as_bytes()).is_ok() && client.write_all(body.as_bytes()).is_ok();
        }
        Fault::Reset(_) => {
            // SO_LINGER 0: close sends RST.
            let linger = libc::linger {
                l_onoff: 1,
                l_linger: 0,
            };
            unsafe {
                libc::setsockopt(
                    std::os::fd::AsRawFd::as_raw_fd(client),
                    libc::SOL_SOCKET,
                    libc::SO_LINGER,
                    (&linger as *const libc::linger).cast(),
                    std::mem::size_of::<libc::linger>() as u32,
                );
            }
            return false;
        }
        Fault::Stall => {
            // Hold the request (bounded: the test changes the fault or ends).
            let start = Instant::now();
            while *state.fault.lock().unwrap() == Fault::Stall
                && !state.stop.load(Ordering::SeqCst)
                && start.elapsed() < Duration::from_secs(120)
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            return false;
        }
        Fault::None | Fault::Truncate(_) | Fault::Flood(_) | Fault::FloodListings(_) => {}
    }
    let latency = *state.latency.lock().unwrap();
    std::thread::sleep(latency);
    let Ok(mut up) = TcpStream::connect(("127.0.0.1", upstream)) else {
        return false;
    };
    let _ = up.set_read_timeout(Some(Duration::from_secs(60)));
    if up.write_all(request).is_err() {
        return false;
    }
    let mut response = Vec::new();
    let _ = up.read_to_end(&mut response);
    let split = response.windows(4).position(|w| w == b"\r\n\r\n").map(|p| p + 4);
    let Some(split) = split else {
        return false;
    };
    let head = String::from_utf8_lossy(&response[..split]).to_ascii_lowercase();
    let sized = head.contains("content-length:");
    let first_line = request.split(|&b| b == b'\r').next().unwrap_or_default();
    let listing = String::from_utf8_lossy(first_line).contains("list-type=");
    if let Fault::Flood(size) | Fault::FloodListings(size) = fault
        && request.starts_with(b"GET ")
        && (listing || matches!(fault, Fault::Flood(_)))
    {
        let head = String::from_utf8_lossy(&response[..split]).into_owned();
        let head: String = head
            .split("\r\n")
            .filter(|l| !l.to_ascii_lowercase().starts_with("content-length:") && !l.is_empty())
            .map(|l| format!("{l}\r\n"))
            .collect();
        if client
            .write_all(format!("{head}Content-Length: {size}\r\n\r\n").as_bytes())
            .is_err()
        {
            return false;
        }
        let zeros = vec![0u8; 1 << 20];
        let mut sent = 0u64;
        while sent < size && !state.stop.load(Ordering::SeqCst) {
            let n = (size - sent).min(zeros.len() as u64) as usize;
            if client.write_all(&zeros[..n]).is_err() {
                break;
            }
            sent += n as u64;
        }
        let _ = client.shutdown(Shutdown::Both);
        return false;
    }
    if let Fault::Truncate(_) = fault {
        let cut = split + (response.len() - split) / 2;
        let _ = client.write_all(&response[..cut]);
        let _ = client.shutdown(Shutdown::Both);
        return false;
    }
    client.write_all(&response).is_ok() && sized
}

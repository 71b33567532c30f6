//! Remote stores against real servers on 127.0.0.1: moto's S3 server
//! (`moto_server` from the test venv that `scripts/setup.sh --test`
//! installs) and nginx (Debian's, serving tests/data with range requests).
//! The remote mount must show the same tree and the same bytes as the local
//! mount of the same store, for every file. Without a server the test says
//! so and passes, except under CI (`CI` set), where it fails.
#![cfg(feature = "remote")]

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::mount::Mount;

/// A moto S3 server on a free loopback port, stopped on drop.
struct Moto {
    child: Child,
    port: u16,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
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
    fn start() -> Option<Moto> {
        let Some(bin) = moto_binary() else {
            assert!(
                std::env::var_os("CI").is_none(),
                "moto_server missing (scripts/setup.sh --test installs it)"
            );
            eprintln!("skipping: no moto_server (run scripts/setup.sh --test)");
            return None;
        };
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(bin)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start moto_server");
        let moto = Moto { child, port };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "moto_server did not start");
            std::thread::sleep(Duration::from_millis(100));
        }
        Some(moto)
    }

    /// One unsigned request (moto accepts them for writes); the status.
    fn request(&self, method: &str, path: &str, body: &[u8]) -> u16 {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: {}\r\n\
             Content-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
            self.port,
            body.len()
        );
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(body).unwrap();
        let mut reply = String::new();
        let _ = s.read_to_string(&mut reply);
        reply
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0)
    }

    fn upload(&self, bucket: &str, store: &Path, prefix: &str) -> usize {
        let mut n = 0;
        for file in files(store) {
            let rel = file.strip_prefix(store).unwrap().to_str().unwrap();
            let status = self.request(
                "PUT",
                &format!("/{bucket}/{prefix}/{rel}"),
                &std::fs::read(&file).unwrap(),
            );
            assert_eq!(status, 200, "upload {rel}");
            n += 1;
        }
        n
    }

    fn options(&self) -> Vec<String> {
        [
            format!("aws_endpoint=http://127.0.0.1:{}", self.port),
            "aws_allow_http=true".into(),
            "aws_access_key_id=test".into(),
            "aws_secret_access_key=test".into(),
            "aws_region=us-east-1".into(),
        ]
        .into_iter()
        .flat_map(|o| ["--store-option".to_string(), o])
        .collect()
    }
}

/// nginx serving tests/data on a free loopback port, stopped on drop.
struct Nginx {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Nginx {
    fn start() -> Option<Nginx> {
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
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let conf = dir.path().join("nginx.conf");
        let d = dir.path().display();
        std::fs::write(
            &conf,
            format!(
                "daemon off; user root; pid {d}/nginx.pid; error_log {d}/error.log;\n\
                 events {{}}\n\
                 http {{ access_log off; server {{ listen 127.0.0.1:{port}; root {}; }} }}\n",
                common::data_dir().display()
            ),
        )
        .unwrap();
        let child = Command::new(bin)
            .arg("-c")
            .arg(&conf)
            .arg("-p")
            .arg(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nginx");
        let server = Nginx { child, port, _dir: dir };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "nginx did not start");
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(server)
    }
}

/// Compare every file of a remote mount with the local mount of `store`.
fn same_as_local(remote: &Mount, store: &str) -> usize {
    let local = Mount::new(store, &[]);
    let local_files = files(&local.mp);
    let remote_files = files(&remote.mp);
    let rel = |fs: &[PathBuf], root: &Path| -> Vec<PathBuf> {
        fs.iter().map(|f| f.strip_prefix(root).unwrap().to_path_buf()).collect()
    };
    assert_eq!(
        rel(&remote_files, &remote.mp),
        rel(&local_files, &local.mp),
        "{store}: the trees differ"
    );
    for f in &local_files {
        let r = remote.mp.join(f.strip_prefix(&local.mp).unwrap());
        let want = std::fs::read(f).unwrap();
        assert_eq!(std::fs::read(&r).unwrap(), want, "{}", r.display());
        assert_eq!(std::fs::metadata(&r).unwrap().len(), want.len() as u64);
    }
    local_files.len()
}

#[test]
fn http_mounts_of_consolidated_stores_show_the_same_bytes() {
    let Some(nginx) = Nginx::start() else { return };
    let mut compared = 0;
    // v3 inline consolidated metadata, and v2 .zmetadata: no listing needed.
    for store in ["sample.zarr", "v2_xarray.zarr"] {
        let url = format!("http://127.0.0.1:{}/{store}", nginx.port);
        let remote = Mount::at(Path::new(&url), &[]);
        compared += same_as_local(&remote, store);
    }
    assert!(compared > 30, "compared {compared} files");
    // Without consolidated metadata the hierarchy cannot be discovered over
    // HTTP: one line that says what to do.
    let url = format!("http://127.0.0.1:{}/hier.zarr", nginx.port);
    let out = common::mount::nzfs(&["check", &url]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("consolidate") && err.contains(&url), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

/// Every file under `dir`, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
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

#[test]
fn s3_mounts_show_the_same_bytes_as_local_mounts() {
    let Some(moto) = Moto::start() else { return };
    assert_eq!(moto.request("PUT", "/nzfs", b""), 200, "create the bucket");
    // v3 with consolidated metadata, listing-discovered v3 with groups and
    // shards, Zarr v2 (consolidated) and strings.
    let stores = [
        "sample.zarr",
        "hier.zarr",
        "sharding.zarr",
        "v2_xarray.zarr",
        "strings_v3.zarr",
    ];
    let options = moto.options();
    let extra: Vec<&str> = options.iter().map(String::as_str).collect();
    let mut compared = 0;
    for store in stores {
        let uploaded = moto.upload("nzfs", &common::data_dir().join(store), store);
        assert!(uploaded > 3, "{store}");
        let url = format!("s3://nzfs/{store}");
        let remote = Mount::at(Path::new(&url), &extra);
        compared += same_as_local(&remote, store);
        // The URL is what /proc/mounts shows, without secrets.
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
        assert!(mounts.contains(&format!("nzfs:{url} ")), "{mounts}");
        assert!(!mounts.contains("secret_access_key") && !mounts.contains("test@"));
    }
    assert!(compared >= 200, "compared {compared} files");
}

#[test]
fn a_missing_bucket_or_prefix_is_a_one_line_error() {
    let Some(moto) = Moto::start() else { return };
    let options = moto.options();
    let mut args: Vec<&str> = vec!["check"];
    args.extend(options.iter().map(String::as_str));
    args.push("s3://no-such-bucket/x.zarr");
    let out = common::mount::nzfs(&args);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("s3://no-such-bucket/x.zarr"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}

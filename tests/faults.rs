//! Remote stores under faults, against moto's S3 server on 127.0.0.1 with
//! the tests' own proxy in between (`common::servers::Proxy`): latency,
//! 503 throttling, 500s, connection resets, a truncated body and a server
//! that stalls. Each gives what a lying or slow server must give (retried to the
//! right bytes, or a bounded EIO with a log line naming the URL), and the
//! mount keeps working. Credentials: moto with authentication on, a
//! user policy that denies one prefix (EACCES), wrong keys, and
//! anonymous requests to a public bucket.
#![cfg(feature = "remote")]

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::mount::{Mount, nzfs, read_paths};
use common::servers::{Fault, Moto, Proxy, s3_options};

/// moto with sample.zarr uploaded to bucket `nzfs`, and a proxy before it.
fn setup() -> Option<(Moto, Proxy)> {
    let moto = Moto::start()?;
    assert_eq!(moto.request("PUT", "/nzfs", b""), 200, "create the bucket");
    moto.upload("nzfs", &common::data_dir().join("sample.zarr"), "sample.zarr");
    let proxy = Proxy::start(moto.port);
    Some((moto, proxy))
}

fn args(options: &[String], extra: &[&'static str]) -> Vec<String> {
    options
        .iter()
        .cloned()
        .chain(extra.iter().map(|s| s.to_string()))
        .collect()
}

fn as_strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

read_paths!(faults_are_retried_or_give_a_bounded_eio_and_the_mount_survives);
fn faults_are_retried_or_give_a_bounded_eio_and_the_mount_survives() {
    let Some((_moto, proxy)) = setup() else { return };
    let local = Mount::new("sample.zarr", &[]);
    let options = args(
        &s3_options(proxy.port, Some(("test", "test"))),
        &["--request-timeout", "2", "--retries", "3", "--no-prefetch"],
    );
    let remote = Mount::at(Path::new("s3://nzfs/sample.zarr"), &as_strs(&options));
    let want = |f: &str| std::fs::read(local.mp.join("t2m").join(f)).unwrap();
    let read = |f: &str| std::fs::read(remote.mp.join("t2m").join(f));
    // Each fault below meets the read of one chunk file: with
    // --no-prefetch, no other chunk is requested ahead of it.
    let mut files = [
        "0.0.0.bin",
        "0.1.0.bin",
        "1.0.0.bin",
        "1.1.0.bin",
        "0.0.1.bin",
        "0.1.1.bin",
    ]
    .into_iter();

    // Latency: slower, same bytes; and one request (the chunk's own:
    // nothing decoded ahead under --no-prefetch).
    proxy.set_latency(Duration::from_millis(150));
    proxy.reset_counts();
    let f = files.next().unwrap();
    let t = Instant::now();
    assert_eq!(read(f).unwrap(), want(f));
    assert!(t.elapsed() >= Duration::from_millis(150));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(proxy.requests(), 1, "--no-prefetch: requests besides the chunk's own");
    // The status document says so (docs/troubleshooting.md: `prefetch` is null).
    let status = nzfs(&["status", "--json", remote.mp.to_str().unwrap()]);
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("\"prefetch\":null"),
        "{}",
        String::from_utf8_lossy(&status.stdout)
    );
    proxy.set_latency(Duration::ZERO);

    // Throttling, resets and a truncated body are retried: same bytes.
    for fault in [Fault::Status(503, 2), Fault::Reset(2), Fault::Truncate(1)] {
        let f = files.next().unwrap();
        proxy.reset_counts();
        proxy.set_fault(fault);
        assert_eq!(read(f).unwrap(), want(f), "{fault:?}");
        assert!(proxy.requests() >= 2, "{fault:?}: {} requests", proxy.requests());
    }

    // A server that keeps failing, or stalls: EIO within about three
    // request timeouts (2 s here), and a log line naming the object.
    for fault in [Fault::Status(500, 1000), Fault::Stall] {
        let f = files.next().unwrap();
        proxy.set_fault(fault);
        let t = Instant::now();
        let err = read(f).expect_err("a failing server cannot give data");
        assert_eq!(err.raw_os_error(), Some(libc::EIO), "{fault:?}: {err}");
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "{fault:?} took {:?}",
            t.elapsed()
        );
        proxy.set_fault(Fault::None);
        let log = remote.log();
        let index = f.trim_end_matches(".bin").replace('.', "/");
        let url = format!("s3://nzfs/sample.zarr/t2m/c/{index}");
        assert!(
            log.lines().any(|l| l.contains(&url)),
            "{fault:?}: no log line names {url}:\n{log}"
        );
        // The failure was not cached: the same file reads once the server is back.
        assert_eq!(read(f).unwrap(), want(f), "{fault:?}, afterwards");
    }
    assert!(remote.log().contains("timed out"), "{}", remote.log());

    // Metadata was read at mount: listing and headers need no request.
    proxy.reset_counts();
    assert!(std::fs::read_dir(&remote.mp).unwrap().count() > 3);
    assert_eq!(
        std::fs::read(remote.mp.join("t2m/header.cdl")).unwrap(),
        std::fs::read(local.mp.join("t2m/header.cdl")).unwrap()
    );
    assert_eq!(proxy.requests(), 0, "listing and header.cdl went to the network");
    // A warm re-read comes from the decoded cache, with no request at all.
    assert_eq!(read("0.0.0.bin").unwrap(), want("0.0.0.bin"));
    assert_eq!(proxy.requests(), 0, "a cached chunk was requested again");
}

read_paths!(unmounting_while_a_request_is_stalled_is_clean);
fn unmounting_while_a_request_is_stalled_is_clean() {
    let Some((_moto, proxy)) = setup() else { return };
    let options = s3_options(proxy.port, Some(("test", "test")));
    let remote = Mount::at(Path::new("s3://nzfs/sample.zarr"), &as_strs(&options));
    let pid = remote.daemon_pid();
    proxy.set_fault(Fault::Stall);
    let file = remote.mp.join("t2m/0.0.0.bin");
    let reader = std::thread::spawn(move || std::fs::read(file).map(|_| ()));
    std::thread::sleep(Duration::from_millis(500));
    let t = Instant::now();
    let out = nzfs(&["unmount", "--lazy", remote.mp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The daemon exits on its own, and the reader gets an error, not a hang.
    while unsafe { libc::kill(pid, 0) } == 0 {
        assert!(t.elapsed() < Duration::from_secs(20), "the daemon did not exit");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(reader.join().unwrap().is_err());
    proxy.set_fault(Fault::None);
}

read_paths!(wrong_credentials_fail_clearly_and_denied_objects_give_eacces);
fn wrong_credentials_fail_clearly_and_denied_objects_give_eacces() {
    let files: Vec<_> = common::servers::files(&common::data_dir().join("sample.zarr"));
    // moto checks signatures and policies once the setup requests are done:
    // three IAM actions, the bucket and the uploads.
    let allowance = (4 + files.len()).to_string();
    let Some(moto) = Moto::start_with(&[("INITIAL_NO_AUTH_ACTION_COUNT", &allowance)]) else {
        return;
    };
    moto.iam("Action=CreateUser&UserName=reader");
    let policy = r#"{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:*","Resource":"*"},{"Effect":"Deny","Action":"s3:GetObject","Resource":"arn:aws:s3:::nzfs/sample.zarr/t2m/c/1/*"}]}"#;
    let encoded: String = policy
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    moto.iam(&format!(
        "Action=PutUserPolicy&UserName=reader&PolicyName=read&PolicyDocument={encoded}"
    ));
    let reply = moto.iam("Action=CreateAccessKey&UserName=reader");
    let field = |name: &str| {
        reply
            .split_once(&format!("<{name}>"))
            .and_then(|(_, r)| r.split_once('<'))
            .map(|(v, _)| v.to_string())
            .expect("access key in the reply")
    };
    let (key, secret) = (field("AccessKeyId"), field("SecretAccessKey"));
    assert_eq!(moto.request("PUT", "/nzfs", b""), 200, "create the bucket");
    moto.upload("nzfs", &common::data_dir().join("sample.zarr"), "sample.zarr");

    // Good credentials: the mount works, and an object the policy denies is EACCES.
    let good = s3_options(moto.port, Some((&key, &secret)));
    let remote = Mount::at(Path::new("s3://nzfs/sample.zarr"), &as_strs(&good));
    let local = Mount::new("sample.zarr", &[]);
    let f = "t2m/0.0.0.bin";
    assert_eq!(
        std::fs::read(remote.mp.join(f)).unwrap(),
        std::fs::read(local.mp.join(f)).unwrap()
    );
    let err = std::fs::read(remote.mp.join("t2m/1.0.0.bin")).expect_err("denied by the policy");
    assert_eq!(err.raw_os_error(), Some(libc::EACCES), "{err}");
    let log = remote.log();
    assert!(
        log.lines()
            .any(|l| l.contains("s3://nzfs/sample.zarr/t2m/c/1/0/0") && l.contains("AccessDenied")),
        "{log}"
    );
    assert!(!log.contains(&secret), "the secret key is in the log");

    // The same keys from a named profile of the shared credentials file.
    let home = tempfile::tempdir().unwrap();
    let credentials = home.path().join("credentials");
    std::fs::write(
        &credentials,
        format!(
            "[other]\naws_access_key_id = x\n\n[reader]\naws_access_key_id = {key}\naws_secret_access_key = {secret}\n"
        ),
    )
    .unwrap();
    let endpoint = format!("aws_endpoint=http://127.0.0.1:{}", moto.port);
    let profile = |name: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_nzfs"))
            .args([
                "cdl",
                "--store-option",
                &endpoint,
                "--store-option",
                "aws_region=us-east-1",
            ])
            .arg("s3://nzfs/sample.zarr")
            .env("AWS_PROFILE", name)
            .env("AWS_SHARED_CREDENTIALS_FILE", &credentials)
            .env("AWS_CONFIG_FILE", home.path().join("config"))
            .output()
            .unwrap()
    };
    let out = profile("reader");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("t2m("));
    let out = profile("missing");
    assert!(String::from_utf8_lossy(&out.stderr).contains("AWS_PROFILE=missing: no such profile"));

    // Wrong credentials: one clear line, exit 2. (Anonymous requests to a
    // moto that checks signatures crash moto; anonymous_reads_… covers them.)
    for (label, opts) in [
        ("wrong key", s3_options(moto.port, Some((&key, "not-the-secret")))),
        ("unknown key", s3_options(moto.port, Some(("AKIAUNKNOWN", "x")))),
    ] {
        let mut cmd = vec!["check".to_string()];
        cmd.extend(opts);
        cmd.push("s3://nzfs/sample.zarr".into());
        let out = nzfs(&as_strs(&cmd));
        assert_eq!(out.status.code(), Some(2), "{label}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("s3://nzfs/sample.zarr") && err.contains("403"),
            "{label}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "{label}: {err}");
    }
}

read_paths!(anonymous_reads_of_an_open_bucket_and_absent_chunks);
fn anonymous_reads_of_an_open_bucket_and_absent_chunks() {
    let Some((moto, _proxy)) = setup() else { return };
    moto.upload("nzfs", &common::data_dir().join("fills.zarr"), "fills.zarr");
    // moto without authentication is a bucket anyone may read.
    let mut opts = s3_options(moto.port, None);
    opts.push("--anonymous".into());
    let mut cmd = vec!["cdl".to_string()];
    cmd.extend(opts.iter().cloned());
    cmd.push("s3://nzfs/sample.zarr".into());
    let out = nzfs(&as_strs(&cmd));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("t2m("));

    // A chunk with no object reads as the fill value, like a local store's,
    // or EIO under --missing-chunks error.
    let local = Mount::new("fills.zarr", &[]);
    let fill = Mount::at(Path::new("s3://nzfs/fills.zarr"), &as_strs(&opts));
    let mut strict_opts = opts.clone();
    strict_opts.extend(["--missing-chunks".to_string(), "error".to_string()]);
    let strict = Mount::at(Path::new("s3://nzfs/fills.zarr"), &as_strs(&strict_opts));
    let store = common::data_dir().join("fills.zarr/integer");
    let mut absent = 0;
    for entry in std::fs::read_dir(local.mp.join("integer")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let Some(index) = name.strip_suffix(".bin").filter(|n| *n != "data") else {
            continue;
        };
        let key = store.join("c").join(index.replace('.', "/"));
        let want = std::fs::read(local.mp.join("integer").join(&name)).unwrap();
        assert_eq!(
            std::fs::read(fill.mp.join("integer").join(&name)).unwrap(),
            want,
            "{name}"
        );
        let strict_read = std::fs::read(strict.mp.join("integer").join(&name));
        if key.exists() {
            assert_eq!(strict_read.unwrap(), want, "{name}");
        } else {
            absent += 1;
            assert_eq!(strict_read.unwrap_err().raw_os_error(), Some(libc::EIO), "{name}");
        }
    }
    assert!(absent > 0, "fills.zarr/integer has no absent chunk");
}

read_paths!(a_body_longer_than_the_range_is_refused_as_it_streams);
/// A server that answers each GET, a small range of a shard, with a 1 GiB
/// body (its Content-Length saying so): the body is refused as it streams
/// in, so the read is EIO, quickly, and the daemon's memory stays far
/// below the body's size. (An error status's body is cut the same way:
/// `bounded_http`'s unit test.)
fn a_body_longer_than_the_range_is_refused_as_it_streams() {
    let Some(moto) = Moto::start() else { return };
    assert_eq!(moto.request("PUT", "/nzfs", b""), 200, "create the bucket");
    moto.upload("nzfs", &common::data_dir().join("sharding.zarr"), "sharding.zarr");
    let proxy = Proxy::start(moto.port);
    let options = args(
        &s3_options(proxy.port, Some(("test", "test"))),
        &["--request-timeout", "20", "--retries", "0", "--no-prefetch"],
    );
    let remote = Mount::at(Path::new("s3://nzfs/sharding.zarr"), &as_strs(&options));
    let file = remote.mp.join("index_end/data.bin");
    assert!(std::fs::metadata(&file).is_ok());
    proxy.reset_counts();
    proxy.set_fault(Fault::Flood(1 << 30));
    let t = Instant::now();
    let err = std::fs::read(&file).expect_err("a flooding server cannot give data");
    proxy.set_fault(Fault::None);
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "{err}");
    let hwm = common::mount::vm_hwm(remote.daemon_pid());
    assert!(hwm < 256 << 20, "the daemon held {} MiB", hwm >> 20);
    assert!(t.elapsed() < Duration::from_secs(60), "took {:?}", t.elapsed());
}

/// A server that answers a listing (`GET /bucket?list-type=2...`), which
/// object_store reads whole, with a 1 GiB body: it is refused past the
/// listing bound as it streams in. `nzfs cdl` of a store with no
/// consolidated metadata walks it, within 512 MiB of data (prlimit),
/// and fails with the reason instead of holding the body.
#[test]
fn an_endless_listing_is_refused_as_it_streams() {
    let Some(moto) = Moto::start() else { return };
    assert_eq!(moto.request("PUT", "/nzfs", b""), 200, "create the bucket");
    moto.upload("nzfs", &common::data_dir().join("hier.zarr"), "hier.zarr");
    let proxy = Proxy::start(moto.port);
    proxy.set_fault(Fault::FloodListings(1 << 30));
    let options = args(
        &s3_options(proxy.port, Some(("test", "test"))),
        &["--request-timeout", "60", "--retries", "0"],
    );
    let out = std::process::Command::new("prlimit")
        .arg(format!("--data={}", 512u64 << 20))
        .arg(env!("CARGO_BIN_EXE_nzfs"))
        .arg("cdl")
        .args(&options)
        .arg("s3://nzfs/hier.zarr")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code().is_some() && !said.contains("memory allocation"),
        "{:?}: {said}",
        out.status
    );
    assert!(!out.status.success() && said.contains("more than the"), "{said}");
}

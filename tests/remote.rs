//! Remote stores against real servers on 127.0.0.1: moto's S3 server
//! (`moto_server` from the test venv that `scripts/setup.sh --test`
//! installs) and nginx (Debian's, serving tests/data with range requests).
//! The remote mount must show the same tree and the same bytes as the local
//! mount of the same store, for every file. Without a server the test says
//! so and passes, except under CI (`CI` set), where it fails.
#![cfg(feature = "remote")]

mod common;

use std::path::{Path, PathBuf};

use common::mount::Mount;
use common::servers::{Moto, Nginx, files};

/// Compare every file of a remote mount with the local mount of `store`.
fn same_as_local(remote: &Mount, store: &str) -> usize {
    same_as(remote, &Mount::new(store, &[]), store)
}

/// Compare every file of a remote mount with a local mount.
fn same_as(remote: &Mount, local: &Mount, store: &str) -> usize {
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
        // A file the local mount cannot read (a corrupt fixture) fails the
        // same way remotely.
        match std::fs::read(f) {
            Ok(want) => {
                assert_eq!(std::fs::read(&r).unwrap(), want, "{}", r.display());
                assert_eq!(std::fs::metadata(&r).unwrap().len(), want.len() as u64);
            }
            Err(e) => {
                let got = std::fs::read(&r).expect_err(&format!("{} reads remotely", r.display()));
                assert_eq!(got.raw_os_error(), e.raw_os_error(), "{}", r.display());
            }
        }
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
    // What the message suggests works: the URL of one array needs no listing.
    let url = format!("http://127.0.0.1:{}/hier.zarr/sub/deep/edge", nginx.port);
    let remote = Mount::at(Path::new(&url), &[]);
    let local = Mount::at(&common::data_dir().join("hier.zarr/sub/deep/edge"), &[]);
    let (r, l) = (files(&remote.mp), files(&local.mp));
    assert_eq!(r.len(), l.len());
    assert!(r.len() > 2);
    for (a, b) in r.iter().zip(&l) {
        assert_eq!(std::fs::read(a).unwrap(), std::fs::read(b).unwrap(), "{}", a.display());
    }
}

#[test]
fn s3_mounts_show_the_same_bytes_as_local_mounts() {
    let Some(moto) = Moto::start() else { return };
    assert_eq!(moto.request("PUT", "/nzfs", b""), 200, "create the bucket");
    // Every fixture store: v3 consolidated or listing-discovered, groups,
    // shards, Zarr v2, NCZarr, strings, and the deliberately broken ones.
    let mut stores: Vec<String> = std::fs::read_dir(common::data_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".zarr"))
        .collect();
    stores.sort();
    assert!(stores.len() > 30, "{stores:?}");
    let options = moto.options();
    let extra: Vec<&str> = options.iter().map(String::as_str).collect();
    let mut compared = 0;
    for store in &stores {
        let uploaded = moto.upload("nzfs", &common::data_dir().join(store), store);
        assert!(uploaded >= 1, "{store}");
        let url = format!("s3://nzfs/{store}");
        let remote = Mount::at(Path::new(&url), &extra);
        compared += same_as_local(&remote, store);
        // The URL is what /proc/mounts shows, without secrets.
        let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
        assert!(mounts.contains(&format!("nzfs:{url} ")), "{mounts}");
        assert!(!mounts.contains("secret_access_key") && !mounts.contains("test@"));
    }
    assert!(compared >= 1000, "compared {compared} files");
}

/// A secret given as a `--store-option` (or in `-o store_option=`) is in
/// no command line of the daemon, which lives as long as the mount and whose
/// `/proc/PID/cmdline` every user may read: the daemon gets its settings on
/// its stdin, and reads with them.
#[test]
fn a_store_option_secret_is_in_no_daemon_command_line() {
    let Some(moto) = Moto::start() else { return };
    assert_eq!(moto.request("PUT", "/argv", b""), 200, "create the bucket");
    moto.upload("argv", &common::data_dir().join("sample.zarr"), "sample.zarr");
    let secret = "kept-out-of-argv-7f3a";
    let options = common::servers::s3_options(moto.port, Some(("AKIDARGV", secret)));
    let mut extra: Vec<&str> = options.iter().map(String::as_str).collect();
    extra.extend(["-o", "store_option=aws_session_token=token-out-of-argv-9c1e"]);
    let remote = Mount::at(Path::new("s3://argv/sample.zarr"), &extra);
    same_as_local(&remote, "sample.zarr");
    let cmdline = std::fs::read(format!("/proc/{}/cmdline", remote.daemon_pid())).unwrap();
    let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
    for kept_out in [
        secret,
        "token-out-of-argv-9c1e",
        "AKIDARGV",
        "store-option",
        "aws_endpoint",
    ] {
        assert!(
            !cmdline.contains(kept_out),
            "the daemon's command line holds {kept_out}: {cmdline}"
        );
    }
    // What it holds names the mount, for ps.
    assert!(
        cmdline.contains("s3://argv/sample.zarr") && cmdline.contains(&*remote.mp.to_string_lossy()),
        "{cmdline}"
    );
    assert!(!remote.log().contains(secret));
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
    // A mount and cdl of it: the store is not there (exit 3, as
    // docs/usage.md says), and the message says it is the bucket.
    let tmp = tempfile::tempdir().unwrap();
    let mut args: Vec<&str> = vec!["cdl"];
    args.extend(options.iter().map(String::as_str));
    args.push("s3://no-such-bucket/x.zarr");
    let out = common::mount::nzfs(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("the bucket \"no-such-bucket\" does not exist"), "{err}");
    let mut args: Vec<&str> = vec!["mount"];
    args.extend(options.iter().map(String::as_str));
    args.extend(["s3://no-such-bucket/x.zarr", tmp.path().to_str().unwrap()]);
    assert_eq!(common::mount::nzfs(&args).status.code(), Some(3));
    // With no credentials at all, the message leads with what to set.
    let bare = common::servers::s3_options(moto.port, None);
    let mut args: Vec<&str> = vec!["cdl"];
    args.extend(bare.iter().map(String::as_str));
    args.push("s3://no-such-bucket/x.zarr");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nzfs"))
        .args(&args)
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env_remove("AWS_PROFILE")
        .env("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
        .env("AWS_CONFIG_FILE", "/nonexistent")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("nzfs: store s3://no-such-bucket/x.zarr: no credentials found: set AWS_ACCESS_KEY_ID"),
        "{err}"
    );
}

/// A Zarr v3 store of one 1-D uint8 array of `chunks` chunks of `chunk`
/// bytes (codec `bytes` only), with values that differ in every chunk.
fn many_chunks_store(dir: &Path, chunks: u64, chunk: u64) {
    let array = dir.join("a");
    std::fs::create_dir_all(array.join("c")).unwrap();
    std::fs::write(
        dir.join("zarr.json"),
        r#"{"zarr_format":3,"node_type":"group","attributes":{}}"#,
    )
    .unwrap();
    std::fs::write(
        array.join("zarr.json"),
        format!(
            r#"{{"zarr_format":3,"node_type":"array","shape":[{}],"data_type":"uint8",
            "chunk_grid":{{"name":"regular","configuration":{{"chunk_shape":[{chunk}]}}}},
            "chunk_key_encoding":{{"name":"default"}},"fill_value":0,
            "codecs":[{{"name":"bytes"}}],"dimension_names":["x"],"attributes":{{}}}}"#,
            chunks * chunk
        ),
    )
    .unwrap();
    for i in 0..chunks {
        let bytes: Vec<u8> = (0..chunk).map(|j| (i * 7 + j) as u8).collect();
        std::fs::write(array.join("c").join(i.to_string()), bytes).unwrap();
    }
}

/// Latency is hidden: behind a proxy that adds 20 ms to every request, a
/// sequential reader of chunk files, of `data.bin` and of the `.nc` keeps
/// at least 16 requests in flight; a shard's inner chunks come in one
/// merged range request; a warm re-read makes no request.
#[test]
fn sequential_reads_keep_many_requests_in_flight() {
    let Some(moto) = Moto::start() else { return };
    assert_eq!(moto.request("PUT", "/nzfs", b""), 200);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("many.zarr");
    many_chunks_store(&store, 256, 4096);
    moto.upload("nzfs", &store, "many.zarr");
    moto.upload("nzfs", &common::data_dir().join("sharding.zarr"), "sharding.zarr");
    let proxy = common::servers::Proxy::start(moto.port);
    let options = common::servers::s3_options(proxy.port, Some(("test", "test")));
    let opts: Vec<&str> = options.iter().map(String::as_str).collect();
    let local = Mount::at(&store, &[]);
    proxy.set_latency(std::time::Duration::from_millis(20));

    for (what, file) in [("chunk files", ""), ("data.bin", "a/data.bin"), (".nc", "many.nc")] {
        let remote = Mount::at(Path::new("s3://nzfs/many.zarr"), &opts);
        proxy.reset_counts();
        if file.is_empty() {
            for i in 0..256 {
                let f = format!("a/{i:03}.bin");
                assert_eq!(
                    std::fs::read(remote.mp.join(&f)).unwrap(),
                    std::fs::read(local.mp.join(&f)).unwrap()
                );
            }
        } else {
            assert_eq!(
                std::fs::read(remote.mp.join(file)).unwrap(),
                std::fs::read(local.mp.join(file)).unwrap()
            );
        }
        let (requests, in_flight) = (proxy.requests(), proxy.max_in_flight());
        eprintln!("{what}: {requests} requests, at most {in_flight} in flight");
        assert!(in_flight >= 16, "{what}: at most {in_flight} requests in flight");
        assert!(requests <= 256 + 8, "{what}: {requests} requests for 256 chunks");
        // Warm: from the decoded cache, no request at all.
        proxy.reset_counts();
        assert_eq!(std::fs::read(remote.mp.join("a/data.bin")).unwrap().len(), 256 * 4096);
        assert_eq!(proxy.requests(), 0, "{what}: a warm re-read made requests");
    }

    // A whole shard of 4 inner chunks: its length, its index, and one
    // merged request for the inner chunks.
    let remote = Mount::at(Path::new("s3://nzfs/sharding.zarr"), &opts);
    let local = Mount::new("sharding.zarr", &[]);
    proxy.reset_counts();
    let f = "index_end/0.0.bin";
    assert_eq!(
        std::fs::read(remote.mp.join(f)).unwrap(),
        std::fs::read(local.mp.join(f)).unwrap()
    );
    assert!(proxy.requests() <= 3, "{} requests for one shard", proxy.requests());
}

/// `--disk-cache`: a second mount of the same URL reads every chunk from
/// local disk (only metadata, and one `HEAD` per chunk object for its
/// version, go to the server), within the budget.
#[test]
fn a_disk_cache_serves_a_second_mount_without_chunk_requests() {
    let Some(moto) = Moto::start() else { return };
    assert_eq!(moto.request("PUT", "/nzfs", b""), 200);
    for store in ["sample.zarr", "sharding.zarr"] {
        moto.upload("nzfs", &common::data_dir().join(store), store);
    }
    let proxy = common::servers::Proxy::start(moto.port);
    let cache = tempfile::tempdir().unwrap();
    let mut options = common::servers::s3_options(proxy.port, Some(("test", "test")));
    options.extend(["--disk-cache".into(), cache.path().display().to_string()]);
    options.extend(["--disk-cache-size".into(), "64MiB".into()]);
    let opts: Vec<&str> = options.iter().map(String::as_str).collect();
    for store in ["sample.zarr", "sharding.zarr"] {
        let url = format!("s3://nzfs/{store}");
        {
            let first = Mount::at(Path::new(&url), &opts);
            same_as_local(&first, store);
        }
        proxy.reset_counts();
        let second = Mount::at(Path::new(&url), &opts);
        let compared = same_as_local(&second, store);
        let log = proxy.request_log();
        // Each chunk object's version is asked (HEAD, no body); none is
        // downloaded again.
        let data: Vec<&String> = log
            .iter()
            .filter(|l| {
                !l.starts_with("HEAD")
                    && !["zarr.json", ".zmetadata", "list-type", "delimiter"]
                        .iter()
                        .any(|m| l.contains(m))
            })
            .collect();
        assert!(
            data.is_empty(),
            "{store}: {} files, requests for data: {data:?}",
            compared
        );
        // nzfs status shows the disk cache, and counts as store reads only
        // what reached the server.
        let out = common::mount::nzfs(&["status", "--json", second.mp.to_str().unwrap()]);
        let doc = nzfs::json::parse(&out.stdout).unwrap();
        let int = |a: &str, b: &str| doc.get(a).and_then(|v| v.get(b)).and_then(|v| v.as_u64());
        let gets = log
            .iter()
            .filter(|l| (l.starts_with("GET") || l.starts_with("HEAD")) && !l.contains("list-type"))
            .count() as u64;
        assert!(int("disk_cache", "hits").unwrap_or(0) > 0, "{store}: {doc:?}");
        assert!(int("disk_cache", "used_bytes").unwrap_or(0) > 0, "{store}: {doc:?}");
        let requests = int("store_reads", "requests").unwrap();
        assert!(
            requests <= gets,
            "{store}: {requests} store reads counted, the server saw {gets} GETs"
        );
        let text = String::from_utf8(common::mount::nzfs(&["status", second.mp.to_str().unwrap()]).stdout).unwrap();
        assert!(text.contains("disk cache "), "{text}");
    }
    let on_disk: u64 = files(cache.path())
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .sum();
    assert!(on_disk > 0 && on_disk <= 64 << 20, "{on_disk} bytes in the disk cache");
}

/// Node names with accents, CJK, spaces and `%` read over S3 as
/// they do locally (uploaded with their keys percent-encoded in the URL,
/// as every S3 client sends them).
#[test]
fn non_ascii_names_read_over_s3_as_locally() {
    let Some(moto) = Moto::start() else { return };
    assert_eq!(moto.request("PUT", "/names", b""), 200, "create the bucket");
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("n.zarr");
    let array = r#"{"zarr_format": 3, "node_type": "array", "shape": [2], "data_type": "int16",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [2]}},
        "chunk_key_encoding": {"name": "default"}, "fill_value": 0,
        "codecs": [{"name": "bytes", "configuration": {"endian": "little"}}]}"#;
    let group = r#"{"zarr_format": 3, "node_type": "group"}"#;
    std::fs::create_dir_all(&s).unwrap();
    std::fs::write(s.join("zarr.json"), group).unwrap();
    for (g, a) in [
        ("données-v1", "température"),
        ("日本", "データ"),
        ("a b", "c d"),
        ("pct%41", "50%"),
    ] {
        std::fs::create_dir_all(s.join(g).join(a).join("c")).unwrap();
        std::fs::write(s.join(g).join("zarr.json"), group).unwrap();
        std::fs::write(s.join(g).join(a).join("zarr.json"), array).unwrap();
        std::fs::write(s.join(g).join(a).join("c/0"), [1u8, 0, 2, 0]).unwrap();
    }
    assert!(moto.upload("names", &s, "n.zarr") >= 13);
    let options = moto.options();
    let extra: Vec<&str> = options.iter().map(String::as_str).collect();
    let remote = Mount::at(Path::new("s3://names/n.zarr"), &extra);
    let local = Mount::at(&s, &[]);
    assert!(same_as(&remote, &local, "n.zarr") >= 4 * 4);
    assert_eq!(
        std::fs::read(remote.mp.join("données-v1/température/0.bin")).unwrap(),
        [1i16.to_ne_bytes(), 2i16.to_ne_bytes()].concat()
    );
    // A non-ASCII prefix in the URL itself.
    let sub = Mount::at(Path::new("s3://names/n.zarr/données-v1"), &extra);
    assert_eq!(
        std::fs::read(sub.mp.join("température/data.bin")).unwrap(),
        [1i16.to_ne_bytes(), 2i16.to_ne_bytes()].concat()
    );
}

/// A zip store in object storage mounts through range requests
/// (its tail, its central directory, its members) as its directory does.
#[test]
fn a_zip_store_in_a_bucket_mounts_as_its_directory() {
    let Some(moto) = Moto::start() else { return };
    assert_eq!(moto.request("PUT", "/zips", b""), 200, "create the bucket");
    for zip in ["zipped.zip", "zipped.zarr.zip"] {
        let body = std::fs::read(common::data_dir().join(zip)).unwrap();
        let (status, _) = moto.request_with("PUT", &format!("/zips/sub/{zip}"), &[], &body);
        assert_eq!(status, 200, "upload {zip}");
        let options = moto.options();
        let extra: Vec<&str> = options.iter().map(String::as_str).collect();
        let remote = Mount::at(Path::new(&format!("s3://zips/sub/{zip}")), &extra);
        assert!(same_as_local(&remote, "zipped.zarr") > 10, "{zip}");
    }
}

/// A disk cache shared by two mounts, with the store changed between them
/// as an xarray append changes it: a chunk rewritten in place (same key,
/// new bytes) and a chunk that was absent written. The second mount reads
/// both as the store holds them now (it read the old bytes and the fill).
#[test]
fn a_disk_cache_never_serves_a_rewritten_or_new_chunk_as_it_was() {
    let Some(moto) = Moto::start() else { return };
    assert_eq!(moto.request("PUT", "/grow", b""), 200);
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("g.zarr");
    many_chunks_store(&store, 4, 16);
    std::fs::remove_file(store.join("a/c/3")).unwrap();
    moto.upload("grow", &store, "g.zarr");
    let cache = tempfile::tempdir().unwrap();
    let mut options = moto.options();
    options.extend(["--disk-cache".into(), cache.path().display().to_string()]);
    let opts: Vec<&str> = options.iter().map(String::as_str).collect();
    let url = Path::new("s3://grow/g.zarr");
    let old: Vec<u8> = (0..16u64).map(|j| (2 * 7 + j) as u8).collect();
    {
        let first = Mount::at(url, &opts);
        assert_eq!(std::fs::read(first.mp.join("a/2.bin")).unwrap(), old);
        assert_eq!(
            std::fs::read(first.mp.join("a/3.bin")).unwrap(),
            vec![0u8; 16],
            "absent: the fill"
        );
    }
    let (rewritten, new) = (vec![200u8; 16], vec![201u8; 16]);
    assert_eq!(moto.request("PUT", "/grow/g.zarr/a/c/2", &rewritten), 200);
    assert_eq!(moto.request("PUT", "/grow/g.zarr/a/c/3", &new), 200);
    let second = Mount::at(url, &opts);
    assert_eq!(
        std::fs::read(second.mp.join("a/2.bin")).unwrap(),
        rewritten,
        "the rewritten chunk"
    );
    assert_eq!(
        std::fs::read(second.mp.join("a/3.bin")).unwrap(),
        new,
        "the chunk written since"
    );
    let data = std::fs::read(second.mp.join("a/data.bin")).unwrap();
    assert_eq!(&data[32..], [rewritten, new].concat());
}

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

//! Icechunk repositories through real mounts. The fixture
//! `tests/data/icechunk/history` was written by icechunk-python (format 1)
//! with xarray and zarr-python; every expected array was read back by
//! zarr-python through icechunk's store at its version
//! (`scripts/fixtures_icechunk.py`, `tests/data/expected/icechunk.json`).
#![cfg(feature = "icechunk")]

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::mount::{Mount, nzfs, read_paths};
use nzfs::json;

use common::repos::{Expected, REPO, arrays, assert_eio, block_on, expected, open, same_arrays, snapshot_named_in};

/// Each `snapshots/<id>` directory by the commit message its header names.
fn snapshots_by_message(mp: &Path) -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(mp.join("snapshots")).unwrap() {
        let dir = e.unwrap().path();
        if !dir.is_dir() {
            continue;
        }
        let header = std::fs::read_to_string(dir.join("header.cdl")).unwrap();
        let id = dir.file_name().unwrap().to_str().unwrap().to_string();
        let note = header.lines().nth(1).unwrap_or_default();
        let prefix = format!("// icechunk snapshot {id}, committed ");
        assert!(note.starts_with(&prefix), "{header}");
        let message = note.split_once(": ").map(|(_, m)| m.to_string()).unwrap();
        out.insert(message, dir);
    }
    out
}

read_paths!(every_version_of_a_repository_equals_zarr_python);
fn every_version_of_a_repository_equals_zarr_python() {
    let (refs, snapshots) = expected();
    let m = Mount::new(REPO, &["--all-versions"]);
    let mut top: Vec<String> = std::fs::read_dir(&m.mp)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| !n.ends_with(".nc") && n != "header.cdl" && n != "index.html")
        .collect();
    top.sort();
    assert_eq!(top, ["branches", "snapshots", "tags"]);
    let mut compared = 0;
    for v in &refs {
        compared += same_arrays(&m.mp.join(&v.name), v);
        // A version's root is named like the dataset, so the same file
        // name compares across versions.
        assert!(m.mp.join(&v.name).join("history.nc").is_file(), "{}", v.name);
    }
    let found = snapshots_by_message(&m.mp);
    assert_eq!(found.len(), snapshots.len(), "{found:?}");
    // Each version's files carry its commit time: `ls -t snapshots/` lists
    // the newest first, in the order the fixture script recorded them
    // (newest first by commit time).
    let mtime = |p: &Path| std::fs::metadata(p).unwrap().modified().unwrap();
    let mut by_time: Vec<(std::time::SystemTime, &String)> =
        found.iter().map(|(message, dir)| (mtime(dir), message)).collect();
    by_time.sort_by_key(|t| std::cmp::Reverse(t.0));
    let newest_first: Vec<&String> = by_time.into_iter().map(|(_, m)| m).collect();
    let recorded: Vec<&String> = snapshots.iter().map(|s| &s.name).collect();
    assert_eq!(newest_first, recorded);
    let main = m.mp.join("branches/main");
    assert_eq!(mtime(&main.join("temp/0.0.bin")), mtime(&main));
    for s in &snapshots {
        let dir = found
            .get(&s.name)
            .unwrap_or_else(|| panic!("no snapshot {:?}: {found:?}", s.name));
        compared += same_arrays(dir, s);
    }
    assert!(compared >= 25, "{compared}");
    // The versions differ where the commits say: ncdump reads both .nc files.
    let dump = |v: &str| {
        let out = std::process::Command::new("ncdump")
            .arg(m.mp.join(v).join("history.nc"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    };
    let (v1, main) = (dump("tags/v1"), dump("branches/main"));
    assert!(main.contains("humidity") && !v1.contains("humidity"));
    assert_eq!(v1.lines().next(), main.lines().next(), "both are `netcdf history {{`");
}

read_paths!(each_version_flag_mounts_that_version);
fn each_version_flag_mounts_that_version() {
    let (refs, snapshots) = expected();
    let by_dir = |d: &str| refs.iter().find(|v| v.name == d).unwrap();
    // The default is the tip of main.
    let m = Mount::new(REPO, &[]);
    same_arrays(&m.mp, by_dir("branches/main"));
    let status = nzfs(&["status", "--json", m.mp.to_str().unwrap()]);
    let status = String::from_utf8_lossy(&status.stdout).to_string();
    let id = snapshot_named_in(&m.mp.join("header.cdl"));
    assert!(
        status.contains(&format!("@{id}")),
        "status names the snapshot: {status}"
    );
    assert!(
        m.log().contains(&format!("snapshot={id}")),
        "the log names it: {}",
        m.log()
    );
    drop(m);
    for (flag, value, dir) in [("--branch", "dev", "branches/dev"), ("--tag", "v1", "tags/v1")] {
        let m = Mount::new(REPO, &[flag, value]);
        same_arrays(&m.mp, by_dir(dir));
    }
    // A snapshot by id: the one the "first" commit made.
    let all = Mount::new(REPO, &["--all-versions"]);
    let found = snapshots_by_message(&all.mp);
    let first = snapshots.iter().find(|s| s.name.starts_with("first")).unwrap();
    let id = found[&first.name].file_name().unwrap().to_str().unwrap().to_string();
    let m = Mount::new(REPO, &["--snapshot", &id]);
    same_arrays(&m.mp, first);
    // nzfs cdl takes the same flags, and names the snapshot too.
    let store = common::data_dir().join(REPO);
    let out = nzfs(&["cdl", "--snapshot", &id, store.to_str().unwrap()]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("// icechunk snapshot {id}, ")) && text.contains("first: temperature"));
    assert!(!text.contains("pressure"), "{text}");
}

#[test]
fn unknown_versions_are_refused_with_exit_2() {
    let store = common::data_dir().join(REPO);
    let store = store.to_str().unwrap();
    let mp = tempfile::tempdir().unwrap();
    let mp = mp.path().to_str().unwrap();
    for (flag, value, says) in [
        ("--branch", "nope", "no branch \"nope\""),
        ("--tag", "nope", "no tag \"nope\""),
        ("--snapshot", "ABC", "is not a snapshot id"),
        ("--snapshot", "ZZZZZZZZZZZZZZZZZZZG", "no snapshot ZZZZZZZZZZZZZZZZZZZG"),
    ] {
        for args in [
            vec!["mount", flag, value, store, mp],
            vec!["cdl", flag, value, store],
            vec!["check", flag, value, store],
        ] {
            let out = nzfs(&args);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains(says) && err.lines().count() == 1, "{args:?}: {err}");
        }
    }
    assert!(!nzfs::daemon::is_mount_point(Path::new(mp)));
    // A version flag on a store without versions is an error, not ignored.
    let sample = common::data_dir().join("sample.zarr");
    let out = nzfs(&["cdl", "--tag", "v1", sample.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("apply to Icechunk repositories"));
    // A repository on HTTP, and virtual chunks on GCS, are refused with a
    // message rather than tried; so is an option Icechunk does not take.
    // GCS and Azure repositories are tried: an unreachable one is one line
    // naming the request, an az:// one without an account says so.
    let unreachable = "google_base_url=http://127.0.0.1:1";
    for (args, says) in [
        (
            vec!["cdl", "icechunk+http://127.0.0.1:1/repo"],
            "http repositories are not supported yet",
        ),
        (
            vec![
                "cdl",
                "--anonymous",
                "--store-option",
                unreachable,
                "icechunk+gs://b/repo",
            ],
            "http://127.0.0.1:1/b/repo",
        ),
        (
            vec!["cdl", "icechunk+az://container/repo"],
            "needs its account: --store-option azure_storage_account_name=NAME",
        ),
        (
            vec!["cdl", "--store-option", "virtual_chunks=gs://b/", store],
            "only s3:// and file:// virtual chunks",
        ),
        (
            vec!["cdl", "--store-option", "aws_regoin=x", store],
            "aws_regoin: not an option",
        ),
    ] {
        let out = nzfs(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(says), "{args:?}: {err}");
    }
}

/// A copy of the history fixture at `dir/name`, for a test to change.
fn fixture_copy(dir: &Path, name: &str) -> PathBuf {
    let repo = dir.join(name);
    common::copy_dir(&common::data_dir().join(REPO), &repo);
    repo
}

read_paths!(corrupt_manifests_and_snapshots_give_eio_and_the_rest_reads);
fn corrupt_manifests_and_snapshots_give_eio_and_the_rest_reads() {
    let (refs, _) = expected();
    let dir = tempfile::tempdir().unwrap();
    let repo = fixture_copy(dir.path(), "history");
    // Every manifest garbled: metadata (in the snapshot) still reads, chunks
    // do not.
    for e in std::fs::read_dir(repo.join("manifests")).unwrap() {
        std::fs::write(e.unwrap().path(), b"not a manifest at all").unwrap();
    }
    let m = Mount::at(&repo, &["--tag", "v1"]);
    let header = std::fs::read_to_string(m.mp.join("temp/header.cdl")).unwrap();
    assert!(header.contains("float temp(time, x)"), "{header}");
    assert_eio(&m.mp.join("temp/data.bin"));
    let log = m.log();
    assert!(log.contains("temp/c/"), "the log names the chunk key: {log}");
    drop(m);

    // The dev branch's own snapshot garbled: its directories fail, every
    // other version still reads.
    let fresh = fixture_copy(dir.path(), "fresh");
    let all = Mount::at(&fresh, &["--all-versions"]);
    let dev_id = snapshot_named_in(&all.mp.join("branches/dev/header.cdl"));
    drop(all);
    std::fs::write(fresh.join("snapshots").join(&dev_id), b"garbage").unwrap();
    let all = Mount::at(&fresh, &["--all-versions"]);
    let err = std::fs::read_dir(all.mp.join("branches/dev")).map(|_| ()).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "branches/dev");
    let err = std::fs::read_dir(all.mp.join("snapshots").join(&dev_id))
        .map(|_| ())
        .unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO), "snapshots/{dev_id}");
    for v in refs.iter().filter(|v| v.name != "branches/dev") {
        same_arrays(&all.mp.join(&v.name), v);
    }
    assert!(all.log().contains(&dev_id), "the log names the snapshot: {}", all.log());
}

read_paths!(a_repository_on_s3_reads_like_the_local_one);
fn a_repository_on_s3_reads_like_the_local_one() {
    use common::servers::Moto;
    let Some(moto) = Moto::start() else { return };
    assert_eq!(moto.request("PUT", "/nzfs", b""), 200, "create the bucket");
    assert!(moto.upload("nzfs", &common::data_dir().join(REPO), "repos/history") >= 10);
    let (refs, _) = expected();
    let options = moto.options();
    let mut args: Vec<&str> = options.iter().map(String::as_str).collect();
    args.push("--all-versions");
    let m = Mount::at(Path::new("icechunk+s3://nzfs/repos/history"), &args);
    for v in &refs {
        same_arrays(&m.mp.join(&v.name), v);
    }
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap();
    assert!(mounts.contains("nzfs:icechunk+s3://nzfs/repos/history "), "{mounts}");
    drop(m);
    // A version that is not there: exit 2 from the remote repository too.
    let mp = tempfile::tempdir().unwrap();
    let mut args: Vec<&str> = vec![
        "mount",
        "--tag",
        "nope",
        "icechunk+s3://nzfs/repos/history",
        mp.path().to_str().unwrap(),
    ];
    args.extend(options.iter().map(String::as_str));
    let out = nzfs(&args);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
}

/// The virtual-chunk fixture's arrays, as the fixture script recorded them
/// (`temp` as netCDF4-python reads the source file, `native` as zarr-python
/// reads it through icechunk), and the source file's S3 URL.
fn virtual_expected() -> (Expected, String) {
    let text = std::fs::read(common::data_dir().join("expected/icechunk.json")).unwrap();
    let doc = json::parse(&text).unwrap();
    let v = doc.get("virtual").unwrap();
    let file = v.get("virtual_file").unwrap().as_str().unwrap().to_string();
    (
        Expected {
            name: "virtual".into(),
            arrays: arrays(v),
        },
        file,
    )
}

read_paths!(virtual_chunks_are_read_from_s3_only_when_allowed_and_never_stale);
fn virtual_chunks_are_read_from_s3_only_when_allowed_and_never_stale() {
    use common::servers::Moto;
    let Some(moto) = Moto::start() else { return };
    let (want, file) = virtual_expected();
    // The referenced netCDF file, where the references say it is.
    let (bucket, key) = file.strip_prefix("s3://").unwrap().split_once('/').unwrap();
    assert_eq!(moto.request("PUT", &format!("/{bucket}"), b""), 200);
    let nc = std::fs::read(common::data_dir().join("icechunk/virtual-src/temp.nc")).unwrap();
    assert_eq!(moto.request("PUT", &format!("/{bucket}/{key}"), &nc), 200);
    let mut options = moto.options();
    let allow = format!("virtual_chunks=s3://{bucket}/");
    options.extend(["--store-option".to_string(), allow.clone()]);
    let args: Vec<&str> = options.iter().map(String::as_str).collect();
    let m = Mount::new("icechunk/virtual", &args);
    for (path, bytes) in &want.arrays {
        let got = std::fs::read(m.mp.join(path).join("data.bin")).unwrap();
        assert!(got == *bytes, "{path}/data.bin differs from the fixture's read");
    }
    // One chunk file is one reference: the first two rows.
    let temp = &want.arrays.iter().find(|(p, _)| p == "temp").unwrap().1;
    assert_eq!(std::fs::read(m.mp.join("temp/0.0.bin")).unwrap(), temp[..48]);
    // `stale` refers to the same bytes, but recorded the object as it was
    // in 2001: the object has changed since, so its chunks are refused.
    assert_eio(&m.mp.join("stale/data.bin"));
    let log = m.log();
    assert!(
        log.contains("stale/c/0/0") && log.contains(&format!("has changed ({file})")),
        "the log names the chunk and the reference: {log}"
    );
    drop(m);

    // Not allowed: the virtual chunks give EIO with the option to use, the
    // repository's own chunks read.
    let options = moto.options();
    let args: Vec<&str> = options.iter().map(String::as_str).collect();
    let m = Mount::new("icechunk/virtual", &args);
    let native = &want.arrays.iter().find(|(p, _)| p == "native").unwrap().1;
    assert_eq!(std::fs::read(m.mp.join("native/data.bin")).unwrap(), *native);
    assert_eio(&m.mp.join("temp/data.bin"));
    let log = m.log();
    assert!(
        log.contains("temp/c/") && log.contains(&format!("--store-option {allow}")),
        "{log}"
    );
    assert!(log.contains("declares virtual chunks in s3://nzfs-virtual/"), "{log}");
}

read_paths!(a_repository_migrated_to_format_2_reads_the_same_and_a_newer_format_is_refused);
fn a_repository_migrated_to_format_2_reads_the_same_and_a_newer_format_is_refused() {
    let (refs, snapshots) = expected();
    let dir = tempfile::tempdir().unwrap();
    let repo = fixture_copy(dir.path(), "history");
    // The crate itself rewrites the repository in its newest format.
    block_on(async {
        let opened = open(&repo).await;
        assert_eq!(opened.spec_version() as u8, 1);
        icechunk::migrations::migrate_1_to_2(opened, false, true, None)
            .await
            .unwrap();
        assert_eq!(open(&repo).await.spec_version() as u8, 2);
    });
    let m = Mount::at(&repo, &["--all-versions"]);
    for v in &refs {
        same_arrays(&m.mp.join(&v.name), v);
    }
    let found = snapshots_by_message(&m.mp);
    for s in &snapshots {
        same_arrays(&found[&s.name], s);
    }
    assert!(m.log().contains("format=2"), "{}", m.log());
    drop(m);
    // The same through an icechunk+file:// URL.
    let url = format!("icechunk+file://{}", repo.display());
    let m = Mount::at(Path::new(&url), &["--tag", "v1"]);
    same_arrays(&m.mp, refs.iter().find(|v| v.name == "tags/v1").unwrap());
    drop(m);

    // A format this build does not know: the repository file's header says
    // 3. Refused at mount, naming the version, and nothing is mounted.
    let info = repo.join("repo");
    let mut bytes = std::fs::read(&info).unwrap();
    // magic (12 bytes) | implementation name (24) | spec version | ...
    assert!(bytes.starts_with("ICE🧊CHUNK".as_bytes()) && bytes[36] == 2);
    bytes[36] = 3;
    std::fs::write(&info, bytes).unwrap();
    let mp = tempfile::tempdir().unwrap();
    for args in [
        vec!["mount", repo.to_str().unwrap(), mp.path().to_str().unwrap()],
        vec!["cdl", repo.to_str().unwrap()],
    ] {
        let out = nzfs(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}");
        assert!(
            err.contains("format version 3") && err.contains("A newer nzfs is needed"),
            "{args:?}: {err}"
        );
    }
    assert!(!nzfs::daemon::is_mount_point(mp.path()));
}

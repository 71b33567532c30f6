//! A live mount follows its store's metadata: an xarray append grows
//! `data.bin` and `header.cdl`, a variable added later appears, and an
//! attribute changed later reaches `header.cdl`, within the look interval
//! (`--metadata-ttl 1` here). The store's states are what xarray and
//! zarr-python wrote (scripts/fixtures_living.py), each applied over the
//! mounted copy file by file, as a writer replaces objects; the values are
//! compared with what zarr-python read back.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::mount::Mount;

fn living() -> std::path::PathBuf {
    common::data_dir().join("living")
}

fn expected(state: &str, array: &str) -> Vec<u8> {
    std::fs::read(living().join("expected").join(format!("{state}.{array}.bin"))).unwrap()
}

/// The files under `dir` (`common::servers::files`), relative, chunks
/// before metadata documents and the root's last (the order xarray writes
/// them in).
fn files(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out: Vec<std::path::PathBuf> = common::servers::files(dir)
        .into_iter()
        .map(|p| p.strip_prefix(dir).unwrap().to_path_buf())
        .collect();
    out.sort_by_key(|p| (p.ends_with("zarr.json"), std::cmp::Reverse(p.components().count())));
    out
}

/// Make the store at `store` what state `state` holds: every object that
/// differs is replaced (written beside it, then renamed over it).
fn apply(store: &Path, state: &str) {
    let from = living().join(format!("{state}.zarr"));
    for rel in files(&from) {
        let bytes = std::fs::read(from.join(&rel)).unwrap();
        let to = store.join(&rel);
        if std::fs::read(&to).ok().as_deref() == Some(&bytes[..]) {
            continue;
        }
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        let tmp = to.with_extension("writing");
        std::fs::write(&tmp, &bytes).unwrap();
        std::fs::rename(&tmp, &to).unwrap();
    }
}

/// Wait (up to 20 s) until `done` holds, looking at the mount meanwhile:
/// a look at the store's metadata starts only when something in the
/// mount is looked at.
fn until(mp: &Path, what: &str, done: impl Fn() -> bool) {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < Duration::from_secs(20), "never followed: {what}");
        let _ = std::fs::metadata(mp.join("header.cdl"));
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn copy_of(state: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("t2m.zarr");
    common::copy_dir(&living().join(format!("{state}.zarr")), &store);
    (tmp, store)
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_default()
}

fn text(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// An xarray append (4 steps, then 2 more: the shape grows to 6 and the
/// last chunk is rewritten) shows in a live mount: `header.cdl`, the size
/// and the bytes of `data.bin`, the time coordinate and `nzfs status`.
/// Old code: `time = 4` for ever.
#[test]
fn an_append_shows_in_the_live_mount() {
    let (_tmp, store) = copy_of("s0");
    let m = Mount::at(&store, &["--metadata-ttl", "1"]);
    let t2m = m.mp.join("t2m");
    assert!(text(&t2m.join("header.cdl")).contains("time = 4 ;"));
    assert_eq!(read(&t2m.join("data.bin")), expected("s0", "t2m"));
    apply(&store, "s1");
    until(&m.mp, "time = 6 in header.cdl", || {
        text(&t2m.join("header.cdl")).contains("time = 6 ;")
    });
    assert_eq!(std::fs::metadata(t2m.join("data.bin")).unwrap().len(), 6 * 3 * 2 * 4);
    assert_eq!(
        read(&t2m.join("data.bin")),
        expected("s1", "t2m"),
        "the appended values"
    );
    assert_eq!(read(&m.mp.join("time/data.bin")), expected("s1", "time"));
    let root = text(&m.mp.join("header.cdl"));
    assert!(root.contains("time = 6 ;"), "{root}");
    let status = m.status();
    let meta = status.get("metadata").expect("a metadata member");
    assert_eq!(meta.get("followed"), Some(&nzfs::json::Value::Bool(true)));
    assert!(meta.get("version").and_then(|v| v.as_u64()) >= Some(1), "{meta:?}");
    assert!(
        m.log().contains("the store's metadata changed; now serving it"),
        "{}",
        m.log()
    );
}

/// A reader that opened `data.bin` before an append reads the version it
/// opened or is told EIO (the append rewrote the last chunk in place, so
/// the old version cannot be read again), with a log line that says why;
/// never the appended bytes under the old ones. Its `fstat` keeps the old
/// size, and a new open reads the new version. Old code: the held file
/// grew to 6 steps and its read returned them.
#[test]
fn a_reader_holding_data_bin_open_across_an_append_reads_one_version() {
    use std::os::unix::fs::FileExt;
    let (_tmp, store) = copy_of("s0");
    let m = Mount::at(&store, &["--metadata-ttl", "1"]);
    let path = m.mp.join("t2m/data.bin");
    // O_DIRECT: every read reaches the daemon (none is a cached page).
    let held = held_open(&path);
    let mut buf = vec![0u8; 4096];
    let n = held.read_at(&mut buf, 0).unwrap();
    assert_eq!(&buf[..n], &expected("s0", "t2m")[..]);
    apply(&store, "s1");
    until(&m.mp, "6 steps in a new open of data.bin", || {
        std::fs::metadata(&path).map(|m| m.len()).ok() == Some(6 * 3 * 2 * 4)
    });
    assert_eq!(read(&path), expected("s1", "t2m"), "a new open reads the new version");
    assert_eq!(
        held.metadata().unwrap().len(),
        4 * 3 * 2 * 4,
        "the held file keeps its size"
    );
    match held.read_at(&mut buf, 0) {
        Ok(n) => panic!("the held file read {n} bytes of a store rewritten in place"),
        Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}"),
    }
    assert!(
        m.log().contains("the store changed since the file was opened"),
        "{}",
        m.log()
    );
    drop(held);
    assert_eq!(read(&path), expected("s1", "t2m"));
}

/// A variable added later appears with its values; an attribute changed
/// later reaches the array's `header.cdl`. Old code: neither.
#[test]
fn a_new_array_and_a_changed_attribute_show_in_the_live_mount() {
    let (_tmp, store) = copy_of("s1");
    let m = Mount::at(&store, &["--metadata-ttl", "1"]);
    assert!(!m.mp.join("sst").exists());
    assert!(text(&m.mp.join("t2m/header.cdl")).contains("t2m:units = \"K\""));
    apply(&store, "s2");
    until(&m.mp, "sst listed", || {
        std::fs::read_dir(&m.mp)
            .map(|d| d.filter_map(Result::ok).any(|e| e.file_name() == "sst"))
            .unwrap_or(false)
    });
    assert_eq!(read(&m.mp.join("sst/data.bin")), expected("s2", "sst"));
    apply(&store, "s3");
    until(&m.mp, "the new units in header.cdl", || {
        text(&m.mp.join("t2m/header.cdl")).contains("t2m:units = \"degC\"")
    });
    assert_eq!(read(&m.mp.join("t2m/data.bin")), expected("s3", "t2m"));
}

/// `--metadata-ttl never` serves what was read at the mount, whatever the
/// store becomes; `nzfs status` says it is not followed.
#[test]
fn a_mount_told_never_serves_what_it_mounted() {
    let (_tmp, store) = copy_of("s0");
    let m = Mount::at(&store, &["--metadata-ttl", "never"]);
    apply(&store, "s1");
    for _ in 0..12 {
        let _ = std::fs::metadata(m.mp.join("header.cdl"));
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(text(&m.mp.join("t2m/header.cdl")).contains("time = 4 ;"));
    let status = m.status();
    assert_eq!(
        status.get("metadata").and_then(|v| v.get("followed")),
        Some(&nzfs::json::Value::Bool(false))
    );
}

/// The same append over S3 (moto), in a live mount with a disk cache: the
/// new shape and the rewritten last chunk show, never the cached old
/// chunk under the new shape. Old code: 4 steps after 65 s.
#[test]
fn an_append_in_object_storage_shows_in_the_live_mount() {
    let Some(moto) = common::servers::Moto::start() else {
        return;
    };
    assert_eq!(moto.request("PUT", "/living", b""), 200);
    moto.upload("living", &living().join("s0.zarr"), "t.zarr");
    let cache = tempfile::tempdir().unwrap();
    let mut options = moto.options();
    options.extend([
        "--disk-cache".into(),
        cache.path().display().to_string(),
        "--metadata-ttl".into(),
        "1".into(),
    ]);
    let opts: Vec<&str> = options.iter().map(String::as_str).collect();
    let m = Mount::at(Path::new("s3://living/t.zarr"), &opts);
    let t2m = m.mp.join("t2m");
    assert_eq!(read(&t2m.join("data.bin")), expected("s0", "t2m"));
    // As xarray writes it: the chunks, then the arrays' documents, then
    // the root's (consolidated).
    let s1 = living().join("s1.zarr");
    for rel in files(&s1) {
        let bytes = std::fs::read(s1.join(&rel)).unwrap();
        if std::fs::read(living().join("s0.zarr").join(&rel)).ok().as_deref() != Some(&bytes[..]) {
            let key = format!("/living/t.zarr/{}", rel.display());
            assert_eq!(moto.request("PUT", &key, &bytes), 200, "{key}");
        }
    }
    until(&m.mp, "time = 6 over S3", || {
        text(&t2m.join("header.cdl")).contains("time = 6 ;")
    });
    assert_eq!(
        read(&t2m.join("data.bin")),
        expected("s1", "t2m"),
        "the appended values"
    );
    assert_eq!(read(&t2m.join("1.0.0.bin")), expected("s1", "t2m")[3 * 24..].to_vec());
}

/// Over object storage without consolidated metadata, the first look
/// (an interval after the mount, which it does not slow down) reads the
/// metadata again and serves what changed since the mount: an append made
/// right after the mount shows.
#[test]
fn an_append_to_unconsolidated_object_storage_right_after_the_mount_shows() {
    let Some(moto) = common::servers::Moto::start() else {
        return;
    };
    assert_eq!(moto.request("PUT", "/loose", b""), 200);
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("t.zarr");
    common::copy_dir(&living().join("s0.zarr"), &store);
    let plain = r#"{"zarr_format":3,"node_type":"group","attributes":{}}"#;
    std::fs::write(store.join("zarr.json"), plain).unwrap();
    moto.upload("loose", &store, "t.zarr");
    let m = every_second(&moto, "s3://loose/t.zarr");
    let t2m = m.mp.join("t2m");
    assert!(text(&t2m.join("header.cdl")).contains("time = 4 ;"));
    let s1 = living().join("s1.zarr");
    for rel in files(&s1).into_iter().filter(|r| r != Path::new("zarr.json")) {
        let key = format!("/loose/t.zarr/{}", rel.display());
        assert_eq!(
            moto.request("PUT", &key, &std::fs::read(s1.join(&rel)).unwrap()),
            200,
            "{key}"
        );
    }
    until(&m.mp, "time = 6 over S3, unconsolidated", || {
        text(&t2m.join("header.cdl")).contains("time = 6 ;")
    });
    assert_eq!(read(&t2m.join("data.bin")), expected("s1", "t2m"));
}

/// The kerchunk set `gen.json` (`text`) edited as a new run would write
/// it: its array a row fewer, with a new attribute `units = "m"`.
fn one_row_fewer_and_units(text: &str) -> String {
    let after = text
        .replace("\"stop\": 4", "\"stop\": 3")
        .replace("\\\"shape\\\": [4, 6]", "\\\"shape\\\": [3, 6]")
        .replace(
            "\\\"_ARRAY_DIMENSIONS\\\": [\\\"row\\\", \\\"col\\\"]}",
            "\\\"_ARRAY_DIMENSIONS\\\": [\\\"row\\\", \\\"col\\\"], \\\"units\\\": \\\"m\\\"}",
        );
    assert_ne!(after, text, "the edit applies");
    after
}

/// A kerchunk reference set replaced by another (a row fewer, a new
/// attribute) shows in the live mount: a look is one `stat` of the file.
/// Old code: a reference set was read once, at the mount.
#[test]
fn a_replaced_reference_set_shows_in_the_live_mount() {
    let tmp = tempfile::tempdir().unwrap();
    let kerchunk = common::data_dir().join("kerchunk");
    for f in ["gen.json", "gen.bin"] {
        std::fs::copy(kerchunk.join(f), tmp.path().join(f)).unwrap();
    }
    let refs = tmp.path().join("gen.json");
    let m = Mount::at(&refs, &["--metadata-ttl", "1"]);
    let data = m.mp.join("g/data.bin");
    let before = read(&data);
    assert_eq!(before.len(), 4 * 6 * 8);
    let held = held_open(&data);
    assert!(!text(&m.mp.join("g/header.cdl")).contains("units"));
    let text_before = std::fs::read_to_string(&refs).unwrap();
    let after = one_row_fewer_and_units(&text_before);
    let writing = tmp.path().join("gen.json.writing");
    std::fs::write(&writing, after).unwrap();
    std::fs::rename(&writing, &refs).unwrap();
    until(&m.mp, "the new attribute in header.cdl", || {
        text(&m.mp.join("g/header.cdl")).contains("g:units = \"m\"")
    });
    assert_eq!(read(&data), before[..3 * 6 * 8], "the first three rows, as before");
    assert!(m.log().contains("read again"), "{}", m.log());
    // A reader that opened it before reads the old references whole.
    let mut buf = vec![0u8; 4096];
    let n = std::os::unix::fs::FileExt::read_at(&held, &mut buf, 0).unwrap();
    assert_eq!(buf[..n], before[..], "the held file reads the four rows it opened");
}

/// A Parquet reference set replaced by another (its writer rewrites the
/// set's `.zmetadata` with it) shows in the live mount: a look is one
/// `stat` of its `.zmetadata`. Old code: a Parquet set was read once, at
/// the mount.
#[test]
fn a_replaced_parquet_reference_set_shows_in_the_live_mount() {
    let tmp = tempfile::tempdir().unwrap();
    let kerchunk = tmp.path().join("kerchunk");
    common::copy_dir(&common::data_dir().join("kerchunk"), &kerchunk);
    let set = kerchunk.join("refs.parq");
    let m = Mount::at(&set, &["--metadata-ttl", "1"]);
    assert!(m.mp.join("t").is_dir() && !m.mp.join("sst").exists());
    // The set replaced whole, as a writer that writes beside and renames.
    let new = kerchunk.join("refs.parq.new");
    common::copy_dir(&kerchunk.join("multi.parq"), &new);
    std::fs::rename(&set, kerchunk.join("refs.parq.old")).unwrap();
    std::fs::rename(&new, &set).unwrap();
    until(&m.mp, "the new set's arrays", || m.mp.join("sst").is_dir());
    assert!(!m.mp.join("t").exists());
    let other = Mount::at(&kerchunk.join("multi.parq"), &[]);
    let sst = read(&m.mp.join("sst/data.bin"));
    assert!(!sst.is_empty());
    assert_eq!(sst, read(&other.mp.join("sst/data.bin")));
    assert!(m.log().contains("read again"), "{}", m.log());
}

/// A zip of a store replaced by a zip of the store grown (the xarray
/// append, zipped: scripts/fixtures_living.py) shows in the live mount.
/// Old code: a zip was read once, at the mount.
#[test]
fn a_replaced_zip_shows_in_the_live_mount() {
    let tmp = tempfile::tempdir().unwrap();
    let zip = tmp.path().join("t2m.zarr.zip");
    std::fs::copy(living().join("s0.zarr.zip"), &zip).unwrap();
    let m = Mount::at(&zip, &["--metadata-ttl", "1"]);
    let t2m = m.mp.join("t2m");
    assert_eq!(read(&t2m.join("data.bin")), expected("s0", "t2m"));
    let held = held_open(&t2m.join("data.bin"));
    let writing = tmp.path().join("t2m.zarr.zip.writing");
    std::fs::copy(living().join("s1.zarr.zip"), &writing).unwrap();
    std::fs::rename(&writing, &zip).unwrap();
    until(&m.mp, "time = 6 in header.cdl", || {
        text(&t2m.join("header.cdl")).contains("time = 6 ;")
    });
    assert_eq!(read(&t2m.join("data.bin")), expected("s1", "t2m"));
    // A reader that opened it before: the old zip's bytes are gone.
    let e = std::os::unix::fs::FileExt::read_at(&held, &mut [0u8; 4096], 0).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EIO), "{e}");
}

/// `path` opened with `O_DIRECT`: every read reaches the daemon.
fn held_open(path: &Path) -> std::fs::File {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .unwrap()
}

/// A mount of `url` in `moto` that looks at its store every second.
fn every_second(moto: &common::servers::Moto, url: &str) -> Mount {
    let mut options = moto.options();
    options.extend(["--metadata-ttl".into(), "1".into()]);
    let opts: Vec<&str> = options.iter().map(String::as_str).collect();
    Mount::at(Path::new(url), &opts)
}

/// A chunk rewritten in place in object storage while the metadata stays
/// as it was (a pipeline that rewrites its last chunk): after the mount's
/// interval, the next use of the cached decode checks the object's ETag
/// with one `HEAD`, and the chunk file (through the kernel's page cache:
/// its open drops the old pages) and `data.bin` read the new bytes. They
/// were served as decoded at the first read until the unmount.
#[test]
fn a_chunk_rewritten_in_object_storage_shows_in_the_live_mount() {
    let Some(moto) = common::servers::Moto::start() else {
        return;
    };
    assert_eq!(moto.request("PUT", "/inplace", b""), 200);
    moto.upload("inplace", &living().join("s0.zarr"), "t.zarr");
    let m = every_second(&moto, "s3://inplace/t.zarr");
    let t2m = m.mp.join("t2m");
    let direct = |p: &Path| {
        let mut out = Vec::new();
        std::io::Read::read_to_end(&mut held_open(p), &mut out).unwrap();
        out
    };
    let s0 = expected("s0", "t2m");
    let step = s0.len() / 4;
    assert_eq!(direct(&t2m.join("data.bin")), s0);
    assert_eq!(read(&t2m.join("0.0.0.bin"))[..step], s0[..step]);
    // Chunk (0, 0, 0) rewritten with the object of chunk (1, 0, 0): its
    // first step is now the array's step 3. No metadata document changes.
    let c1 = std::fs::read(living().join("s0.zarr/t2m/c/1/0/0")).unwrap();
    assert_eq!(moto.request("PUT", "/inplace/t.zarr/t2m/c/0/0/0", &c1), 200);
    until(&m.mp, "the rewritten chunk file over S3", || {
        read(&t2m.join("0.0.0.bin"))[..step] == s0[3 * step..]
    });
    assert_eq!(direct(&t2m.join("data.bin"))[..step], s0[3 * step..], "data.bin");
}

/// A chunk rewritten in place in object storage shows through the pages of
/// `data.bin` the kernel holds, though no chunk file is looked at: past the
/// interval, a `stat` of `data.bin` (which the kernel makes before serving
/// its pages once their attributes are old) looks at the objects its
/// decodes read, a few `HEAD`s at a time, and a changed one moves the
/// file's mtime, on which the kernel drops the pages. Old code: the old
/// bytes were served from the page cache until the kernel let them go.
#[test]
fn a_chunk_rewritten_in_object_storage_shows_through_the_cached_pages_of_data_bin() {
    let Some(moto) = common::servers::Moto::start() else {
        return;
    };
    assert_eq!(moto.request("PUT", "/inplace-pages", b""), 200);
    moto.upload("inplace-pages", &living().join("s0.zarr"), "t.zarr");
    let m = every_second(&moto, "s3://inplace-pages/t.zarr");
    let data = m.mp.join("t2m/data.bin");
    let s0 = expected("s0", "t2m");
    let step = s0.len() / 4;
    let nc_of = |root: &Path| {
        let name = std::fs::read_dir(root)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .find(|n| n.ends_with(".nc"))
            .expect("the group's .nc");
        root.join(name)
    };
    let nc = nc_of(&m.mp);
    // Read through the page cache, twice: the second from the kernel's pages.
    assert_eq!(read(&data), s0);
    assert_eq!(read(&data), s0);
    let nc_before = read(&nc);
    assert_eq!(read(&nc), nc_before);
    let c1 = std::fs::read(living().join("s0.zarr/t2m/c/1/0/0")).unwrap();
    assert_eq!(moto.request("PUT", "/inplace-pages/t.zarr/t2m/c/0/0/0", &c1), 200);
    until(&m.mp, "data.bin's cached pages over S3", || {
        read(&data)[..step] == s0[3 * step..]
    });
    // All of it as a new mount of the store shows it, and the group's .nc
    // too (its mtime follows the same looks).
    let fresh = every_second(&moto, "s3://inplace-pages/t.zarr");
    assert_eq!(read(&data), read(&fresh.mp.join("t2m/data.bin")));
    let nc_now = read(&nc_of(&fresh.mp));
    assert_ne!(nc_now, nc_before);
    until(&m.mp, "the .nc's cached pages over S3", || read(&nc) == nc_now);
}

/// A Parquet reference set in object storage replaced by another shows in
/// the live mount: a look is one `HEAD` of its `.zmetadata`. Old code: read
/// once, at the mount.
#[test]
fn a_replaced_parquet_reference_set_in_object_storage_shows_in_the_live_mount() {
    let Some(moto) = common::servers::Moto::start() else {
        return;
    };
    assert_eq!(moto.request("PUT", "/refs-parq", b""), 200);
    let kerchunk = common::data_dir().join("kerchunk");
    moto.upload("refs-parq", &kerchunk, "k");
    let m = every_second(&moto, "s3://refs-parq/k/refs.parq");
    assert!(m.mp.join("t").is_dir() && !m.mp.join("sst").exists());
    // The other set written over it, its .zmetadata among its objects.
    moto.upload("refs-parq", &kerchunk.join("multi.parq"), "k/refs.parq");
    until(&m.mp, "the new set's arrays over S3", || m.mp.join("sst").is_dir());
    let other = every_second(&moto, "s3://refs-parq/k/multi.parq");
    let sst = read(&m.mp.join("sst/data.bin"));
    assert!(!sst.is_empty());
    assert_eq!(sst, read(&other.mp.join("sst/data.bin")));
}

/// A zip of a store in object storage replaced by a zip of the store grown
/// shows in the live mount: a look is one `HEAD` of the zip. Old code: a
/// zip in object storage was read once, at the mount.
#[test]
fn a_replaced_zip_in_object_storage_shows_in_the_live_mount() {
    let Some(moto) = common::servers::Moto::start() else {
        return;
    };
    assert_eq!(moto.request("PUT", "/zipped-live", b""), 200);
    // Readable by anyone, as `upload` makes them: moto lets an unsigned
    // PUT replace only such an object.
    let public = [("x-amz-acl", "public-read")];
    let s0 = std::fs::read(living().join("s0.zarr.zip")).unwrap();
    assert_eq!(
        moto.request_with("PUT", "/zipped-live/t2m.zarr.zip", &public, &s0).0,
        200
    );
    let m = every_second(&moto, "s3://zipped-live/t2m.zarr.zip");
    let t2m = m.mp.join("t2m");
    assert_eq!(read(&t2m.join("data.bin")), expected("s0", "t2m"));
    let s1 = std::fs::read(living().join("s1.zarr.zip")).unwrap();
    assert_eq!(moto.request("PUT", "/zipped-live/t2m.zarr.zip", &s1), 200);
    until(&m.mp, "time = 6 in header.cdl over S3", || {
        text(&t2m.join("header.cdl")).contains("time = 6 ;")
    });
    assert_eq!(read(&t2m.join("data.bin")), expected("s1", "t2m"));
}

/// A kerchunk reference set in object storage replaced by another (a row
/// fewer, a new attribute) shows in the live mount, its targets read from
/// beside it. Old code: read once, at the mount.
#[test]
fn a_replaced_reference_set_in_object_storage_shows_in_the_live_mount() {
    let Some(moto) = common::servers::Moto::start() else {
        return;
    };
    assert_eq!(moto.request("PUT", "/refs-live", b""), 200);
    let kerchunk = common::data_dir().join("kerchunk");
    for f in ["gen.json", "gen.bin"] {
        let bytes = std::fs::read(kerchunk.join(f)).unwrap();
        let public = [("x-amz-acl", "public-read")];
        assert_eq!(
            moto.request_with("PUT", &format!("/refs-live/{f}"), &public, &bytes).0,
            200
        );
    }
    let m = every_second(&moto, "s3://refs-live/gen.json");
    let data = m.mp.join("g/data.bin");
    let before = read(&data);
    assert_eq!(before.len(), 4 * 6 * 8);
    assert!(!text(&m.mp.join("g/header.cdl")).contains("units"));
    let text_before = std::fs::read_to_string(kerchunk.join("gen.json")).unwrap();
    let after = one_row_fewer_and_units(&text_before);
    assert_eq!(moto.request("PUT", "/refs-live/gen.json", after.as_bytes()), 200);
    until(&m.mp, "the new attribute in header.cdl over S3", || {
        text(&m.mp.join("g/header.cdl")).contains("g:units = \"m\"")
    });
    assert_eq!(read(&data), before[..3 * 6 * 8], "the first three rows, as before");
}

/// The `metadata.retired` member of `m`'s status: how many older versions
/// the mount keeps for files open across a change.
fn retired(m: &Mount) -> Option<u64> {
    m.status().get("metadata")?.get("retired")?.as_u64()
}

/// A version served before a change is kept only while a file that only
/// it answers for is open: none after a change with nothing open; one
/// while a reader holds the old `header.cdl` (its `fstat` keeps the old
/// size), and none once that reader closes it. Old code: every version,
/// 8 deep, whatever was open (and no such member).
#[test]
fn an_older_version_is_kept_only_while_a_file_of_it_is_open() {
    let (_tmp, store) = copy_of("s1");
    let m = Mount::at(&store, &["--metadata-ttl", "1"]);
    let header = m.mp.join("t2m/header.cdl");
    assert!(text(&header).contains("t2m:units = \"K\""));
    apply(&store, "s2");
    until(&m.mp, "sst listed", || m.mp.join("sst").exists());
    assert_eq!(retired(&m), Some(0), "nothing was open across the change");
    let held = held_open(&header);
    let old_len = held.metadata().unwrap().len();
    apply(&store, "s3");
    until(&m.mp, "the new units in header.cdl", || {
        text(&header).contains("t2m:units = \"degC\"")
    });
    assert_eq!(retired(&m), Some(1), "the held header's version");
    assert_eq!(held.metadata().unwrap().len(), old_len, "the held file keeps its size");
    drop(held);
    // The kernel sends the release after close() returns.
    let start = Instant::now();
    while retired(&m) != Some(0) {
        assert!(start.elapsed() < Duration::from_secs(10), "the old version stayed");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The daemon's resident memory, in KiB.
fn rss_kib(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Another writer changing a store of 1,500 arrays (6 MiB of metadata
/// documents) twelve times, with no file open across the changes, leaves
/// the mount holding one version of the parsed metadata, not nine: its
/// resident memory grows by less than two versions' worth (each document
/// parsed takes up to four times its size). Old code: eight retired
/// versions stayed, the memory grew by ~8 versions.
#[test]
fn metadata_changes_with_nothing_open_keep_one_version_in_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("wide.zarr");
    let pad = "x".repeat(4000);
    let root = |n: u32| format!(r#"{{"zarr_format":3,"node_type":"group","attributes":{{"change":{n}}}}}"#);
    std::fs::create_dir_all(&store).unwrap();
    std::fs::write(store.join("zarr.json"), root(0)).unwrap();
    let mut docs = 0;
    for i in 0..1500 {
        let dir = store.join(format!("a{i:04}"));
        std::fs::create_dir(&dir).unwrap();
        let doc = format!(
            r#"{{"zarr_format":3,"node_type":"array","shape":[4],"data_type":"int32","chunk_grid":{{"name":"regular","configuration":{{"chunk_shape":[4]}}}},"chunk_key_encoding":{{"name":"default"}},"fill_value":0,"codecs":[{{"name":"bytes","configuration":{{"endian":"little"}}}}],"attributes":{{"pad":"{pad}"}}}}"#
        );
        docs += doc.len() as u64;
        std::fs::write(dir.join("zarr.json"), doc).unwrap();
    }
    let m = Mount::at(&store, &["--metadata-ttl", "1"]);
    let pid = m.daemon_pid();
    assert!(text(&m.mp.join("header.cdl")).contains("change = 0"));
    let before = rss_kib(pid);
    for n in 1..=12 {
        // Every array's document is written again too (a writer that
        // consolidates or touches each node): each look parses them anew.
        let tmp = store.join("zarr.json.writing");
        std::fs::write(&tmp, root(n)).unwrap();
        std::fs::rename(&tmp, store.join("zarr.json")).unwrap();
        until(&m.mp, &format!("change {n}"), || {
            text(&m.mp.join("header.cdl")).contains(&format!("change = {n}"))
        });
    }
    let grown = rss_kib(pid).saturating_sub(before) << 10;
    assert_eq!(retired(&m), Some(0));
    assert!(
        grown < 2 * 4 * docs,
        "grew by {} MiB over 12 changes of {} MiB of documents",
        grown >> 20,
        docs >> 20
    );
}

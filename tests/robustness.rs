//! Bad input, faults and load, through real mounts: a clear EIO on exactly
//! the file that is bad, a log line naming the store key and the reason,
//! and everything else keeps working.

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::mount::{Mount, read_paths};

/// A private copy of a fixture store, to damage.
fn copy_of(store: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let path = tmp.path().join(store);
    common::copy_dir(&common::data_dir().join(store), &path);
    (tmp, path)
}

fn eio(r: std::io::Result<Vec<u8>>) -> bool {
    matches!(r, Err(ref e) if e.raw_os_error() == Some(libc::EIO))
}

/// Deterministic garbage.
fn garbage(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

read_paths!(corrupt_chunks_fail_alone_for_every_codec);
fn corrupt_chunks_fail_alone_for_every_codec() {
    let manifest = common::manifest();
    // (store, array, chunk key of grid index 0, second chunk key and file name)
    let arrays = [
        ("codecs.zarr", "transpose_zstd"),
        ("codecs.zarr", "transpose_big_gzip"),
        ("codecs.zarr", "gzip"),
        ("codecs.zarr", "crc32c"),
        ("codecs.zarr", "zstd_crc32c"),
        ("blosc.zarr", "lz4_shuffle"),
        ("blosc.zarr", "zstd_bitshuffle"),
        ("blosc.zarr", "blosclz_noshuffle"),
        ("blosc.zarr", "zlib_shuffle"),
        ("blosc.zarr", "lz4hc_noshuffle"),
        ("sharding.zarr", "index_end"),
        ("sharding.zarr", "index_start"),
        ("sharding.zarr", "inner_gzip"),
        ("sharding.zarr", "inner_blosc"),
        ("endian.zarr", "int32_big"),
    ];
    let mut by_store: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (store, array) in arrays {
        by_store.entry(store).or_default().push(array);
    }
    for (store, list) in by_store {
        let (_tmp, path) = copy_of(store);
        // Damage the first three chunks of each array: truncated, garbage, empty.
        let mut damaged = Vec::new();
        for array in &list {
            let e = manifest.iter().find(|e| e.store == store && e.path == *array).unwrap();
            assert!(e.chunk_count() >= 4, "{store}/{array}");
            for (k, how) in ["truncated", "garbage", "empty"].into_iter().enumerate() {
                let idx = e.unravel(k as u64);
                let key: Vec<String> = idx.iter().map(u64::to_string).collect();
                let file = path.join(array).join("c").join(key.join("/"));
                let bytes = std::fs::read(&file).unwrap();
                let new = match how {
                    "truncated" => bytes[..bytes.len() / 2].to_vec(),
                    "garbage" if *array == "int32_big" => garbage(bytes.len() + 3, k as u64),
                    "garbage" => garbage(bytes.len(), k as u64 + 7),
                    _ => Vec::new(),
                };
                std::fs::write(&file, new).unwrap();
                damaged.push((e.clone(), k as u64, format!("{array}/c/{}", key.join("/"))));
            }
        }
        let m = Mount::at(&path, &[]);
        for (e, k, _) in &damaged {
            let file = m.mp.join(&e.path).join(e.chunk_name(*k));
            assert!(eio(std::fs::read(&file)), "{store}/{} chunk {k} should fail", e.path);
            // Its siblings still read exactly.
            for sibling in 3..e.chunk_count().min(6) {
                let bytes = std::fs::read(m.mp.join(&e.path).join(e.chunk_name(sibling))).unwrap();
                e.check_chunk(sibling, &bytes).unwrap();
            }
        }
        let log = m.log();
        for (_, _, key) in &damaged {
            assert!(log.contains(key.as_str()), "{key} not logged:\n{log}");
        }
    }
}

fn write_store(dir: &Path, nodes: &[(&str, &str)]) {
    for (path, doc) in nodes {
        let d = if path.is_empty() {
            dir.to_path_buf()
        } else {
            dir.join(path)
        };
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("zarr.json"), doc).unwrap();
    }
}

fn array_doc(codecs: &str, shape: &str, chunks: &str) -> String {
    format!(
        r#"{{"zarr_format": 3, "node_type": "array", "shape": {shape}, "data_type": "int16",
        "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": {chunks}}}}},
        "chunk_key_encoding": {{"name": "default"}}, "fill_value": 7, "codecs": {codecs}}}"#
    )
}

read_paths!(broken_metadata_refuses_only_that_node_and_refused_codecs_only_its_values);
fn broken_metadata_refuses_only_that_node_and_refused_codecs_only_its_values() {
    let tmp = tempfile::tempdir().unwrap();
    let ok_codecs = r#"[{"name": "bytes", "configuration": {"endian": "little"}}]"#;
    let good = array_doc(ok_codecs, "[4]", "[2]");
    let cases: Vec<(&str, String, &str)> = vec![
        ("truncated", r#"{"zarr_format": 3, "node_ty"#.into(), "invalid JSON"),
        ("not_object", "[1, 2, 3]".into(), "not a JSON object"),
        (
            "format2",
            good.replace(r#""zarr_format": 3"#, r#""zarr_format": 2"#),
            "zarr_format is 2",
        ),
        (
            "node_type",
            good.replace(r#""node_type": "array""#, r#""node_type": "table""#),
            "node_type",
        ),
        (
            "absurd_shape",
            array_doc(ok_codecs, "[18446744073709551615, 18446744073709551615]", "[1, 1]"),
            "overflows",
        ),
        (
            "huge_chunk",
            array_doc(ok_codecs, "[10, 10]", "[4294967296, 4294967296]"),
            "larger than nzfs can hold",
        ),
        ("zero_chunk", array_doc(ok_codecs, "[4]", "[0]"), "chunk dimension is 0"),
        ("negative_shape", array_doc(ok_codecs, "[-4]", "[2]"), "non-negative"),
        (
            "bad_fill",
            good.replace(r#""fill_value": 7"#, r#""fill_value": 70000"#),
            "fill_value",
        ),
        (
            "bad_endian",
            array_doc(
                r#"[{"name": "bytes", "configuration": {"endian": "middle"}}]"#,
                "[4]",
                "[2]",
            ),
            "endian",
        ),
        (
            "bad_transpose",
            array_doc(
                r#"[{"name": "transpose", "configuration": {"order": [0, 0]}}, {"name": "bytes", "configuration": {"endian": "little"}}]"#,
                "[4, 4]",
                "[2, 2]",
            ),
            "permutation",
        ),
        ("no_codecs", array_doc("[]", "[4]", "[2]"), "empty"),
        ("dims_mismatch", array_doc(ok_codecs, "[4, 4]", "[2]"), "dimensions"),
    ];
    let mut nodes: Vec<(&str, &str)> = vec![("", r#"{"zarr_format": 3, "node_type": "group"}"#), ("good", &good)];
    for (name, doc, _) in &cases {
        nodes.push((name, doc));
    }
    write_store(tmp.path(), &nodes);
    std::fs::create_dir_all(tmp.path().join("good/c")).unwrap();
    std::fs::write(tmp.path().join("good/c/0"), [1u8, 0, 2, 0]).unwrap();
    // An array directory that lost its zarr.json is no node at all.
    std::fs::create_dir_all(tmp.path().join("lost/c")).unwrap();
    std::fs::write(tmp.path().join("lost/c/0"), [0u8; 4]).unwrap();

    let m = Mount::at(tmp.path(), &[]);
    assert_eq!(
        std::fs::read(m.mp.join("good/0.bin")).unwrap(),
        [1i16.to_ne_bytes(), 2i16.to_ne_bytes()].concat()
    );
    assert_eq!(
        std::fs::read(m.mp.join("good/1.bin")).unwrap(),
        [7i16.to_ne_bytes(), 7i16.to_ne_bytes()].concat()
    );
    assert!(std::fs::metadata(m.mp.join("lost")).is_err());
    let log = m.log();
    // Metadata that is understood but whose codecs are refused keeps its
    // directory and header.cdl; only its values are EIO.
    let codec_cases = ["bad_endian", "bad_transpose"];
    for (name, _, reason) in &cases {
        if codec_cases.contains(name) {
            assert!(std::fs::read_dir(m.mp.join(name)).is_ok(), "{name}: its directory");
            let cdl = std::fs::read_to_string(m.mp.join(name).join("header.cdl")).unwrap();
            assert!(cdl.contains(&format!("{name}(")), "{name}: {cdl}");
            let err = std::fs::read(m.mp.join(name).join("data.bin")).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::EIO), "{name}: data.bin");
        } else {
            let err = std::fs::read_dir(m.mp.join(name)).unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::EIO), "{name}");
        }
        let line = log
            .lines()
            .find(|l| l.contains(&format!("{name}/zarr.json")))
            .unwrap_or_else(|| panic!("{name} not logged:\n{log}"));
        assert!(line.contains(reason), "{name}: {reason:?} not in {line}");
    }
}

read_paths!(hostile_consolidated_names_are_ignored_with_a_warning);
fn hostile_consolidated_names_are_ignored_with_a_warning() {
    let tmp = tempfile::tempdir().unwrap();
    let arr = array_doc(
        r#"[{"name": "bytes", "configuration": {"endian": "little"}}]"#,
        "[2]",
        "[2]",
    );
    let group = r#"{"zarr_format": 3, "node_type": "group"}"#;
    let root = format!(
        r#"{{"zarr_format": 3, "node_type": "group", "consolidated_metadata": {{"kind": "inline", "must_understand": false,
        "metadata": {{"ok": {arr}, "..": {group}, "../escape": {arr}, ".": {group}, "a//b": {arr}, "/abs": {arr},
        "__private": {arr}, "x/../../etc": {arr}, "fine/./x": {arr}}}}}}}"#
    );
    write_store(tmp.path(), &[("", &root)]);
    let m = Mount::at(tmp.path(), &[]);
    let mut names: Vec<String> = std::fs::read_dir(&m.mp)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.retain(|n| !n.ends_with(".nc"));
    names.sort();
    assert_eq!(names, ["header.cdl", "index.html", "ok"]);
    let log = m.log();
    for bad in ["../escape", "a//b", "/abs", "__private", "x/../../etc", "fine/./x"] {
        assert!(log.contains(bad), "{bad} not logged:\n{log}");
    }
    // The one valid array reads its (absent) chunk as fill, from inside the store.
    assert_eq!(
        std::fs::read(m.mp.join("ok/0.bin")).unwrap(),
        [7i16.to_ne_bytes(), 7i16.to_ne_bytes()].concat()
    );
}

/// A plain directory store's group whose name the spec reserves (zarr-python
/// 3.4 writes one named `__x11`) is hidden with a log line, as a
/// consolidated store's entry is (old code: hidden silently); a `__`
/// directory that holds no node's metadata is passed over quietly.
#[test]
fn a_reserved_name_in_a_plain_store_is_hidden_with_a_log_line() {
    let tmp = tempfile::tempdir().unwrap();
    let arr = array_doc(
        r#"[{"name": "bytes", "configuration": {"endian": "little"}}]"#,
        "[2]",
        "[2]",
    );
    let group = r#"{"zarr_format": 3, "node_type": "group"}"#;
    write_store(tmp.path(), &[("", group), ("ok", &arr), ("__x11", group)]);
    std::fs::create_dir(tmp.path().join("__pycache__")).unwrap();
    let m = Mount::at(tmp.path(), &[]);
    assert!(m.mp.join("ok").is_dir());
    assert!(!m.mp.join("__x11").exists());
    let log = m.log();
    assert!(log.contains("__x11") && log.contains("reserves"), "{log}");
    assert!(!log.contains("__pycache__"), "{log}");
}

#[test]
fn a_shard_replaced_under_the_core_never_mixes_old_index_and_new_bytes() {
    use nzfs::fs::{FsConfig, MissingChunks, NzFs};
    let (_tmp, path) = copy_of("sharding.zarr");
    let s = nzfs::store::FilesystemStore::new(&path);
    let h = nzfs::zarr::hierarchy::Hierarchy::open(&s).unwrap();
    let options = FsConfig {
        cache_bytes: 1 << 20,
        missing_chunks: MissingChunks::Fill,
        dataset_name: "s".into(),
        uid: 0,
        gid: 0,
        mtime: std::time::SystemTime::UNIX_EPOCH,
        ..Default::default()
    };
    let fs = NzFs::new(Box::new(s), h, options).unwrap();
    let e = common::manifest()
        .into_iter()
        .find(|e| e.store == "sharding.zarr" && e.path == "index_big_no_crc")
        .unwrap();
    let dir = fs.lookup(1, std::ffi::OsStr::new("index_big_no_crc")).unwrap().ino;
    let ino = fs.lookup(dir, std::ffi::OsStr::new("0.0.bin")).unwrap().ino;
    // Inner chunk 0 of shard (0, 0): the index is cached now.
    let first = fs.read(ino, 0, 8).unwrap().bytes().to_vec();
    // Replace the shard with shard (1, 0), which has the same length.
    let c = path.join("index_big_no_crc/c");
    std::fs::copy(c.join("1/0"), path.join("tmp")).unwrap();
    std::fs::rename(path.join("tmp"), c.join("0/0")).unwrap();
    // Inner chunk 3 (the last bytes) needs the object again: EIO, not a mix.
    let err = fs.read(ino, 88, 8).unwrap_err();
    assert_eq!(err.errno(), libc::EIO);
    assert!(err.to_string().contains("changed while mounted"), "{err}");
    // The stale index was dropped: the next read sees the new shard whole.
    let whole = fs.read(ino, 0, 96).unwrap().bytes().to_vec();
    let shard_1_0 = {
        let mut v = Vec::new();
        for r in 4..8 {
            for col in 0..6 {
                let at = (r * 9 + col) * 4;
                v.extend_from_slice(&e.bytes[at..at + 4]);
            }
        }
        v
    };
    assert_ne!(first, shard_1_0[..8]);
    // Inner chunk 0 cached from the old object is not reused with the new one.
    assert_eq!(whole, shard_1_0);
}

read_paths!(chunks_deleted_or_replaced_under_a_mount_read_as_their_new_state);
fn chunks_deleted_or_replaced_under_a_mount_read_as_their_new_state() {
    let (_tmp, path) = copy_of("keys.zarr");
    let m = Mount::at(&path, &["--cache-size", "1KiB"]);
    let k = common::manifest()
        .into_iter()
        .find(|e| e.store == "keys.zarr" && e.path == "default_slash")
        .unwrap();
    std::fs::remove_file(path.join("default_slash/c/0/0")).unwrap();
    let fill = std::fs::read(m.mp.join("default_slash/0.0.bin")).unwrap();
    assert!(fill.iter().all(|&b| b == 0), "absent chunk is the fill value 0");
    // The read above may have started decoding the next chunks ahead, from
    // their objects as they are now: a read after the change below must not
    // be handed what those decodes read.
    std::fs::copy(path.join("default_slash/c/1/1"), path.join("default_slash/c/0/1")).unwrap();
    let replaced = std::fs::read(m.mp.join("default_slash/0.1.bin")).unwrap();
    k.check_chunk(3, &replaced).unwrap(); // chunk (1, 1) is linear 3
}

read_paths!(a_vanished_store_gives_eio_and_the_daemon_stays_up);
fn a_vanished_store_gives_eio_and_the_daemon_stays_up() {
    let (tmp, path) = copy_of("sample.zarr");
    let m = Mount::at(&path, &["--cache-size", "1KiB"]);
    let cached = std::fs::read(m.mp.join("t2m/0.0.0.bin")).unwrap();
    std::fs::rename(&path, tmp.path().join("moved")).unwrap();
    assert!(eio(std::fs::read(m.mp.join("t2m/1.1.1.bin"))));
    assert!(eio(std::fs::read(m.mp.join("lat/0.bin"))));
    // The daemon is alive: metadata still answers.
    assert!(
        std::fs::read_to_string(m.mp.join("header.cdl"))
            .unwrap()
            .contains("t2m")
    );
    assert_eq!(
        std::fs::metadata(m.mp.join("t2m/0.0.0.bin")).unwrap().len(),
        cached.len() as u64
    );
    std::fs::rename(tmp.path().join("moved"), &path).unwrap();
    assert_eq!(std::fs::read(m.mp.join("t2m/1.1.1.bin")).unwrap().len(), 1400);
}

read_paths!(sigterm_unmounts_a_background_daemon);
fn sigterm_unmounts_a_background_daemon() {
    let m = Mount::new("sample.zarr", &[]);
    let pid = m.daemon_pid();
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let start = Instant::now();
    while nzfs::daemon::is_mount_point(&m.mp) || std::path::Path::new(&format!("/proc/{pid}")).exists() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "still mounted or running after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(m.log().contains("unmounting on signal"));
}

read_paths!(sixteen_readers_on_a_small_cache_read_correct_bytes);
fn sixteen_readers_on_a_small_cache_read_correct_bytes() {
    let manifest = common::manifest();
    let arrays: Vec<_> = manifest
        .iter()
        .filter(|e| {
            e.store == "sharding.zarr"
                && ["rows", "partial", "nested", "index_start", "outer_zstd"].contains(&e.path.as_str())
        })
        .cloned()
        .collect();
    let budget = 256 * 1024;
    let m = Mount::new("sharding.zarr", &["--cache-size", "256KiB"]);
    let deadline = Instant::now() + Duration::from_secs(3);
    let reads = std::sync::atomic::AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..16u64 {
            let (m, arrays, reads) = (&m, &arrays, &reads);
            s.spawn(move || {
                let mut x = t * 7919 + 1;
                while Instant::now() < deadline {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                    let e = &arrays[(x >> 33) as usize % arrays.len()];
                    let k = (x >> 17) % e.chunk_count();
                    let path = m.mp.join(&e.path).join(e.chunk_name(k));
                    if x % 3 == 0 {
                        let bytes = std::fs::read(&path).unwrap();
                        e.check_chunk(k, &bytes).unwrap();
                    } else {
                        // A 4 KiB pread somewhere in the file, checked against a whole read's bytes.
                        let f = std::fs::File::open(&path).unwrap();
                        let len = f.metadata().unwrap().len();
                        let off = (x >> 7) % len;
                        let mut buf = vec![0u8; 4096.min((len - off) as usize)];
                        f.read_exact_at(&mut buf, off).unwrap();
                        let whole = std::fs::read(&path).unwrap();
                        assert_eq!(buf, whole[off as usize..off as usize + buf.len()]);
                    }
                    reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                }
            });
        }
    });
    assert!(reads.into_inner() > 100);
    let hwm = common::mount::vm_hwm(m.daemon_pid());
    assert!(hwm < budget + (64 << 20), "daemon peak RSS {hwm} bytes");
}

read_paths!(a_failed_read_names_its_request_and_reader_pid_in_the_log);
/// A failed read is logged with the request that failed and the pid of
/// the process that read, so that with many readers and threads the line
/// is tied to its reader.
fn a_failed_read_names_its_request_and_reader_pid_in_the_log() {
    let (_tmp, path) = copy_of("codecs.zarr");
    std::fs::write(path.join("gzip/c/0/0/0"), garbage(64, 3)).unwrap();
    let m = Mount::at(&path, &[]);
    let reader = std::process::Command::new("cat")
        .arg(m.mp.join("gzip/0.0.0.bin"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = reader.id();
    let out = reader.wait_with_output().unwrap();
    assert!(!out.status.success(), "reading a corrupt chunk must fail");
    let log = m.log();
    let line = log
        .lines()
        .find(|l| l.contains("returning EIO") && l.contains("gzip/c/0/0/0"))
        .unwrap_or_else(|| panic!("no EIO line naming gzip/c/0/0/0:\n{log}"));
    assert!(
        line.contains(&format!("pid={pid}")),
        "the reader's pid {pid} is not named: {line}"
    );
    assert!(
        line.split_whitespace()
            .any(|w| w.strip_prefix("req=").is_some_and(|n| n.parse::<u64>().is_ok())),
        "no request id: {line}"
    );
}

read_paths!(links_back_up_the_tree_are_not_followed);
/// A group holding `a -> .` and `b -> .` (and a subgroup holding `up ->
/// ..`) is a tree without end: 2^64 groups within the depth limit. Links
/// back up the tree are not followed, so `nzfs cdl` ends at once and the
/// mount shows the store as it is.
fn links_back_up_the_tree_are_not_followed() {
    // (A store with no consolidated metadata: its tree is walked.)
    let (_tmp, store) = copy_of("hier.zarr");
    std::os::unix::fs::symlink(".", store.join("a")).unwrap();
    std::os::unix::fs::symlink(".", store.join("b")).unwrap();
    std::os::unix::fs::symlink("..", store.join("sub/up")).unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_nzfs"))
        .arg("cdl")
        .arg(&store)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("nzfs cdl still walking the loops after 60 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let m = Mount::at(&store, &[]);
    let log = m.log();
    assert!(log.contains("a link to a directory above it"), "{log}");
    let mut names: Vec<String> = std::fs::read_dir(&m.mp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(!names.iter().any(|n| n == "a" || n == "b"), "{names:?}");
    assert!(names.iter().any(|n| n == "sub"), "{names:?}");
    assert!(!m.mp.join("sub/up").exists());
}

/// NGFF axis names are copied to each level a multiscale image names:
/// 32 axes of 8,000-byte names and 20,000 datasets naming one array fit
/// the attributes' 1 MiB, and were 5 GB of copies. A level is named once,
/// so `nzfs cdl` runs within 512 MiB of data (prlimit) and names it.
#[test]
fn axis_names_are_copied_once_per_level() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("img.zarr");
    std::fs::create_dir_all(store.join("a")).unwrap();
    let axes: Vec<String> = (0..32)
        .map(|i| format!(r#"{{"name": "{}{i:02}"}}"#, "x".repeat(7998)))
        .collect();
    let datasets = vec![r#"{"path": "a"}"#; 20_000].join(",");
    std::fs::write(
        store.join("zarr.json"),
        format!(
            r#"{{"zarr_format": 3, "node_type": "group", "attributes": {{"multiscales": [{{"axes": [{}], "datasets": [{datasets}]}}]}}}}"#,
            axes.join(",")
        ),
    )
    .unwrap();
    let ones = vec!["1"; 32].join(",");
    std::fs::write(
        store.join("a/zarr.json"),
        format!(
            r#"{{"zarr_format": 3, "node_type": "array", "shape": [{ones}], "data_type": "uint8",
              "chunk_grid": {{"name": "regular", "configuration": {{"chunk_shape": [{ones}]}}}},
              "chunk_key_encoding": {{"name": "default"}}, "fill_value": 0, "codecs": [{{"name": "bytes"}}]}}"#
        ),
    )
    .unwrap();
    let out = std::process::Command::new("prlimit")
        .arg(format!("--data={}", 512u64 << 20))
        .arg(env!("CARGO_BIN_EXE_nzfs"))
        .arg("cdl")
        .arg(&store)
        .output()
        .unwrap();
    let cdl = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{:?}: {}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(cdl.contains(&format!("{}31", "x".repeat(7998))), "the level is named");
}

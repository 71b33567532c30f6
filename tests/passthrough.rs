//! FUSE passthrough through a real mount: open chunk files served by
//! the kernel from sealed memfds. These tests need root (CAP_SYS_ADMIN),
//! which CI has; they force `--passthrough always` so that a machine
//! without passthrough fails them instead of silently testing the other path.

mod common;

use std::io::Read;
use std::os::unix::fs::FileExt;
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::mount::{Mount, mmap_bytes, nzfs};

fn t2m() -> common::Expected {
    common::manifest()
        .into_iter()
        .find(|e| e.store == "sample.zarr" && e.path == "t2m")
        .unwrap()
}

fn always(extra: &[&str]) -> Mount {
    let mut args = vec!["--passthrough", "always", "-v"];
    args.extend(extra);
    let m = Mount::new("sample.zarr", &args);
    assert!(m.log().contains("passthrough on"), "log:\n{}", m.log());
    m
}

#[test]
fn the_kernel_serves_open_chunk_files_while_the_daemon_is_stopped() {
    let m = always(&[]);
    let e = t2m();
    let files: Vec<std::fs::File> = (0..e.chunk_count())
        .map(|k| std::fs::File::open(m.mp.join("t2m").join(e.chunk_name(k))).unwrap())
        .collect();
    // Rust's read_to_end asks statx for the size, with the birth time: the
    // first such statx of a connection goes to the daemon (FUSE_STATX,
    // which it answers ENOSYS, and the kernel asks only GETATTR from then
    // on, cached). Ask it before the daemon stops, as any reader's first
    // `stat` would.
    std::fs::metadata(m.mp.join("t2m").join(e.chunk_name(0))).unwrap();
    let pid = m.daemon_pid();
    unsafe { libc::kill(pid, libc::SIGSTOP) };
    // With the daemon stopped, only kernel-held backing files can answer.
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut out = Vec::new();
        for mut f in files {
            let mut bytes = Vec::new();
            let r = f.read_to_end(&mut bytes).map(|_| bytes);
            out.push(r.map_err(|e| e.to_string()));
        }
        let _ = tx.send(out);
    });
    let got = rx.recv_timeout(Duration::from_secs(10));
    unsafe { libc::kill(pid, libc::SIGCONT) };
    let got = got.expect("a read waited for the stopped daemon: not served by passthrough");
    for (k, bytes) in got.into_iter().enumerate() {
        e.check_chunk(k as u64, &bytes.unwrap()).unwrap();
    }
}

#[test]
fn eviction_while_a_file_is_open_keeps_it_whole() {
    // A 1-byte budget: every backing that is not open goes at once.
    let m = always(&["--cache-size", "1"]);
    let e = t2m();
    let dir = m.mp.join("t2m");
    let held = std::fs::File::open(dir.join(e.chunk_name(0))).unwrap();
    let mut head = vec![0u8; 100];
    held.read_exact_at(&mut head, 0).unwrap();
    for round in 0..3 {
        for k in 1..e.chunk_count() {
            let bytes = std::fs::read(dir.join(e.chunk_name(k))).unwrap();
            e.check_chunk(k, &bytes)
                .unwrap_or_else(|err| panic!("round {round}: {err}"));
        }
    }
    // The rest, from where the first read left off.
    let mut rest = vec![0u8; held.metadata().unwrap().len() as usize - head.len()];
    held.read_exact_at(&mut rest, head.len() as u64).unwrap();
    e.check_chunk(0, &[head, rest].concat()).unwrap();
    drop(held);
    // Reopened after its backing went: decoded again, same bytes.
    e.check_chunk(0, &std::fs::read(dir.join(e.chunk_name(0))).unwrap())
        .unwrap();
    assert!(!m.log().contains("WARN"), "log:\n{}", m.log());
}

#[test]
fn many_opens_of_one_chunk_share_its_backing() {
    let m = always(&["--cache-size", "1"]);
    let e = t2m();
    let path = m.mp.join("t2m").join(e.chunk_name(3));
    std::thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(|| {
                for _ in 0..10 {
                    let files: Vec<_> = (0..8).map(|_| std::fs::File::open(&path).unwrap()).collect();
                    for mut f in files {
                        let mut bytes = Vec::new();
                        f.read_to_end(&mut bytes).unwrap();
                        e.check_chunk(3, &bytes).unwrap();
                    }
                }
            });
        }
    });
    // mmap goes through the backing file too.
    let mapped = mmap_bytes(&path);
    e.check_chunk(3, &mapped).unwrap();
}

#[test]
fn a_corrupt_chunk_fails_at_open_with_the_usual_log_line() {
    let m = Mount::new("bad.zarr", &["--passthrough", "always"]);
    for _ in 0..2 {
        let err = std::fs::File::open(m.mp.join("bad_crc/1.bin")).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EIO));
    }
    assert_eq!(
        std::fs::read(m.mp.join("bad_crc/0.bin")).unwrap(),
        [5i32.to_ne_bytes(), 6i32.to_ne_bytes()].concat()
    );
    let log = m.log();
    assert!(log.contains("passthrough on"), "log:\n{log}");
    assert!(
        log.contains("bad_crc/c/1") && log.contains("checksum mismatch") && log.contains("open"),
        "log:\n{log}"
    );
}

#[test]
fn unmount_with_open_files_detaches_and_the_daemon_exits() {
    let m = always(&[]);
    let e = t2m();
    let pid = m.daemon_pid();
    let f = std::fs::File::open(m.mp.join("t2m").join(e.chunk_name(1))).unwrap();
    let out = nzfs(&["unmount", m.mp.to_str().unwrap()]);
    assert!(!out.status.success(), "an open file keeps the mount busy");
    let out = nzfs(&["unmount", "-z", m.mp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The open file still reads whole: its backing is held by the kernel.
    let mut bytes = Vec::new();
    (&f).read_to_end(&mut bytes).unwrap();
    e.check_chunk(1, &bytes).unwrap();
    drop(f);
    let start = Instant::now();
    while std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z")
    {
        assert!(start.elapsed() < Duration::from_secs(15), "the daemon did not exit");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn passthrough_always_is_refused_without_cap_sys_admin_and_auto_falls_back() {
    // Without CAP_SYS_ADMIN in the bounding set, `always` must fail before
    // mounting, with a message that says why.
    let dir = tempfile::tempdir().unwrap();
    let sample = common::data_dir().join("sample.zarr");
    let out = Command::new("setpriv")
        .args([
            "--bounding-set",
            "-sys_admin",
            env!("CARGO_BIN_EXE_nzfs"),
            "mount",
            "--passthrough",
            "always",
        ])
        .arg(&sample)
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("CAP_SYS_ADMIN") && err.lines().count() == 1, "{err}");
    // `never` is honoured as root, and logged.
    let m = Mount::new("sample.zarr", &["--passthrough", "never", "-v"]);
    let e = t2m();
    e.check_chunk(0, &std::fs::read(m.mp.join("t2m").join(e.chunk_name(0))).unwrap())
        .unwrap();
    assert!(m.log().contains("passthrough off"), "log:\n{}", m.log());
}

/// Backings held open by readers count against --cache-size: with a 1 MiB
/// budget, eight readers holding 256 KiB chunk files open keep at most
/// 1 MiB of backings (they kept all eight, 2 MiB, and 48 such readers of
/// 32 MiB chunks held 1.5 GiB); the files past the budget are read through
/// the daemon, with the same bytes.
#[test]
fn backings_held_open_stay_within_the_cache_budget() {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join("wide.zarr");
    std::fs::create_dir_all(store.join("a/c")).unwrap();
    std::fs::write(store.join("zarr.json"), r#"{"zarr_format": 3, "node_type": "group"}"#).unwrap();
    std::fs::write(
        store.join("a/zarr.json"),
        r#"{"zarr_format": 3, "node_type": "array", "shape": [8, 262144], "data_type": "uint8",
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1, 262144]}},
            "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]}"#,
    )
    .unwrap();
    let chunk = |k: usize| (0..262144usize).map(|i| (i * 7 + k * 13) as u8).collect::<Vec<u8>>();
    std::fs::create_dir_all(store.join("a/c")).unwrap();
    for k in 0..8 {
        std::fs::create_dir_all(store.join(format!("a/c/{k}"))).unwrap();
        std::fs::write(store.join(format!("a/c/{k}/0")), chunk(k)).unwrap();
    }
    let m = Mount::at(&store, &["--passthrough", "always", "--cache-size", "1MiB", "-v"]);
    let files: Vec<std::fs::File> = (0..8)
        .map(|k| std::fs::File::open(m.mp.join(format!("a/{k}.0.bin"))).unwrap())
        .collect();
    for (k, f) in files.iter().enumerate() {
        let mut got = vec![0u8; 262144];
        f.read_exact_at(&mut got, 0).unwrap();
        assert!(got == chunk(k), "chunk {k} read other bytes");
    }
    let doc = m.status();
    let held = doc
        .get("passthrough")
        .and_then(|p| p.get("backing_bytes"))
        .and_then(|b| b.as_u64())
        .unwrap();
    assert!(held <= 1 << 20, "backings held open: {held} bytes with a 1 MiB budget");
    drop(files);
}

//! A mount's life through the real binary: what `nzfs mount` refuses (with
//! one line), the signals that end a foreground mount and those that do
//! not, mount points with odd names, readahead, and `nzfs unmount` of a busy
//! or stale mount. (`tests/mount.rs` reads what the mounts show.)

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use nzfs::daemon::is_mount_point;

use common::mount::{Mount, nzfs, read_paths};

read_paths!(mount_refuses_bad_inputs_with_one_line);
fn mount_refuses_bad_inputs_with_one_line() {
    let tmp = tempfile::tempdir().unwrap();
    let mp = tmp.path().join("mp");
    std::fs::create_dir(&mp).unwrap();
    let sample = common::data_dir().join("sample.zarr");
    let tmp2 = tempfile::tempdir().unwrap();
    let cut_ocdbt = tmp2.path().join("ocdbt");
    common::copy_dir(&common::data_dir().join("ocdbt"), &cut_ocdbt);
    let leaf = cut_ocdbt.join("d/02f49dd27cc3c97d16d554eb021417f6");
    let bytes = std::fs::read(&leaf).unwrap();
    std::fs::write(&leaf, &bytes[..bytes.len() - 10]).unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec!["/nonexistent/store.zarr".into(), mp.display().to_string()],
            "does not exist",
        ),
        (
            vec![tmp.path().display().to_string(), mp.display().to_string()],
            "not a Zarr store",
        ),
        // tensorstore's OCDBT (scripts/fixtures_ocdbt.py) with its B+tree
        // leaf cut short: the database and why (tests/ocdbt.rs mounts it
        // whole).
        (
            vec![cut_ocdbt.display().to_string(), mp.display().to_string()],
            "OCDBT database manifest.ocdbt: a B+tree node in d/",
        ),
        (
            vec![
                sample.display().to_string(),
                tmp.path().join("nope").display().to_string(),
            ],
            "mount point",
        ),
        (
            vec![sample.display().to_string(), tmp.path().display().to_string()],
            "not empty",
        ),
    ];
    for (args, want) in cases {
        let mut full = vec!["mount"];
        full.extend(args.iter().map(String::as_str));
        let out = nzfs(&full);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{full:?} succeeded");
        assert!(err.contains(want), "{full:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
    let out = nzfs(&["unmount", mp.to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("not mounted"));
    // Already mounted.
    let m = Mount::new("sample.zarr", &[]);
    let out = nzfs(&["mount", sample.to_str().unwrap(), m.mp.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("already mounted"));
}

#[test]
fn foreground_mount_unmounts_on_sigterm_sigint_sighup_and_sigquit() {
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGQUIT] {
        let tmp = tempfile::tempdir().unwrap();
        let mp = tmp.path().join("mp");
        std::fs::create_dir(&mp).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_nzfs"))
            .args(["mount", "-f"])
            .arg(common::data_dir().join("sample.zarr"))
            .arg(&mp)
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        while !is_mount_point(&mp) {
            assert!(start.elapsed() < Duration::from_secs(30), "never mounted");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(std::fs::metadata(mp.join("t2m/0.0.0.bin")).is_ok());
        unsafe { libc::kill(child.id() as i32, signal) };
        let status = child.wait().unwrap();
        assert!(status.success(), "exit after signal {signal}: {status}");
        assert!(!is_mount_point(&mp), "still mounted after signal {signal}");
    }
}

read_paths!(stray_signals_leave_the_daemon_serving);
/// SIGUSR1, SIGUSR2 and SIGALRM (whose default action ends a process)
/// leave the daemon serving: no stale mount.
fn stray_signals_leave_the_daemon_serving() {
    let m = Mount::new("sample.zarr", &[]);
    let pid = m.daemon_pid();
    let want = std::fs::read(m.mp.join("t2m/0.0.0.bin")).unwrap();
    for signal in [libc::SIGUSR1, libc::SIGUSR2, libc::SIGALRM] {
        assert_eq!(unsafe { libc::kill(pid, signal) }, 0);
        std::thread::sleep(Duration::from_millis(200));
        assert_eq!(unsafe { libc::kill(pid, 0) }, 0, "the daemon died of signal {signal}");
        assert!(!nzfs::daemon::is_stale(&m.mp), "stale after signal {signal}");
        assert_eq!(
            std::fs::read(m.mp.join("t2m/0.0.0.bin")).unwrap(),
            want,
            "after signal {signal}"
        );
    }
}

read_paths!(odd_mount_point_names_mount_and_unmount);
/// Mount points whose names hold a tab, a newline or a backslash (octal
/// escapes in mountinfo), or that start with `-` (after `--`), mount and
/// unmount by their real names.
fn odd_mount_point_names_mount_and_unmount() {
    let tmp = tempfile::tempdir().unwrap();
    let sample = common::data_dir().join("sample.zarr");
    for name in ["tab\there", "new\nline", "back\\slash", "-dash"] {
        let mp = tmp.path().join(name);
        std::fs::create_dir(&mp).unwrap();
        let log = tmp.path().join("log");
        let run = |args: &[&std::ffi::OsStr]| {
            let out = Command::new(env!("CARGO_BIN_EXE_nzfs"))
                .current_dir(tmp.path())
                .args(args)
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{name:?}: {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        run(&[
            "mount".as_ref(),
            sample.as_os_str(),
            "--log-file".as_ref(),
            log.as_os_str(),
            "--".as_ref(),
            name.as_ref(),
        ]);
        assert!(is_mount_point(&mp), "{name:?} not mounted");
        assert!(std::fs::metadata(mp.join("t2m/0.0.0.bin")).is_ok(), "{name:?}");
        run(&["unmount".as_ref(), "--".as_ref(), name.as_ref()]);
        assert!(!is_mount_point(&mp), "{name:?} still mounted");
    }
}

read_paths!(setting_readahead_asks_nothing_of_the_mount);
/// The daemon never waits on its own mount: the readahead it sets between
/// mounting and serving finds the mount's device in the mount table. It
/// used to `stat` the mount point, a request to the daemon itself; a
/// SIGKILL while that waited left the daemon unkillable and the mount hung
/// instead of stale (`unmount_says_busy_and_recovers_a_stale_mount` hung
/// so in CI). Here the daemon's own sequence runs in this process: mount
/// (with the INIT handshake), then the readahead, with no thread serving
/// yet, so a request to the mount would never be answered.
fn setting_readahead_asks_nothing_of_the_mount() {
    use nzfs::array::MissingChunks;
    use nzfs::fs::{FsConfig, NzFs};
    let dir = tempfile::tempdir().unwrap();
    let mp = dir.path().join("mnt");
    std::fs::create_dir(&mp).unwrap();
    let mp = mp.canonicalize().unwrap();
    let store = nzfs::store::FilesystemStore::new(common::data_dir().join("sample.zarr"));
    let hierarchy = nzfs::zarr::hierarchy::Hierarchy::open(&store).unwrap();
    let options = FsConfig {
        cache_bytes: 1 << 20,
        missing_chunks: MissingChunks::Fill,
        dataset_name: "sample".into(),
        uid: 0,
        gid: 0,
        mtime: std::time::SystemTime::UNIX_EPOCH,
        ..Default::default()
    };
    let fs = NzFs::new(Box::new(store), hierarchy, options).unwrap();
    let adapter = nzfs::fuse::FuseAdapter::new(fs, nzfs::fuse::Passthrough::Never);
    let mut config = fuser::Config::default();
    config.mount_options = vec![fuser::MountOption::RO, fuser::MountOption::FSName("nzfs-test".into())];
    let mut session = fuser::Session::new(adapter, &mp, &config).unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let asked = mp.clone();
    std::thread::spawn(move || {
        nzfs::daemon::raise_readahead(&asked);
        let _ = tx.send(());
    });
    let answered = rx.recv_timeout(Duration::from_secs(5)).is_ok();
    // Serve, so that a request left waiting is answered, then unmount.
    let mut unmounter = session.unmount_callable();
    let serving = std::thread::spawn(move || session.run());
    if !answered {
        let _ = rx.recv_timeout(Duration::from_secs(5));
    }
    if unmounter.unmount().is_err() {
        let path = std::ffi::CString::new(mp.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path.
        unsafe { libc::umount2(path.as_ptr(), libc::MNT_DETACH) };
    }
    let _ = serving.join();
    assert!(answered, "setting the readahead waited for the mount's own daemon");
}

read_paths!(unmount_says_busy_and_recovers_a_stale_mount);
fn unmount_says_busy_and_recovers_a_stale_mount() {
    // Busy: a process sits in a directory of the mount.
    let m = Mount::new("sample.zarr", &[]);
    let mut holder = Command::new("sleep")
        .arg("30")
        .current_dir(m.mp.join("t2m"))
        .spawn()
        .unwrap();
    let out = nzfs(&["unmount", m.mp.to_str().unwrap()]);
    let _ = holder.kill();
    let _ = holder.wait();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("busy"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(m);

    // Stale: the daemon is killed with SIGKILL.
    let m = Mount::new("sample.zarr", &[]);
    m.kill_daemon();
    // `nzfs unmount` clears the stale mount point.
    let out = nzfs(&["unmount", m.mp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(std::fs::read_dir(&m.mp).unwrap().next().is_none());
    drop(m);

    // A new mount at a stale mount point clears it and mounts.
    let m = Mount::new("sample.zarr", &[]);
    m.kill_daemon();
    let sample = common::data_dir().join("sample.zarr");
    let out = nzfs(&["mount", sample.to_str().unwrap(), m.mp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("stale"));
    assert_eq!(std::fs::metadata(m.mp.join("t2m/0.0.0.bin")).unwrap().len(), 1400);
}

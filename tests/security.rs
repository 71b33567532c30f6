//! Through real mounts: a mount reveals no more than its store
//! (symlinks, special files, owners and modes, as other users see them) and
//! a hostile or dead store cannot hang the daemon.
//!
//! The multi-user test creates two users and a group, and deletes them
//! again on the way out (also on failure). Requires root, `runuser`,
//! `mknod` and (for the dead-store test) `bindfs`.

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::mount::{Mount, nzfs, read_paths};
use common::users::Users;

/// 64 `uint8` elements in one chunk, `bytes` codec: any 64-byte file is a
/// valid chunk, so only the store's refusal stops a leak.
const ARRAY: &str = r#"{"zarr_format": 3, "node_type": "array", "shape": [64], "data_type": "uint8",
  "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [64]}},
  "chunk_key_encoding": {"name": "default"}, "fill_value": 0, "codecs": [{"name": "bytes"}]}"#;
const GROUP: &str = r#"{"zarr_format": 3, "node_type": "group"}"#;
const SECRET: &[u8; 64] = b"root-only secret: this must never be readable through a mount!!\n";

fn chunk_bytes() -> Vec<u8> {
    (0..64u8).map(|i| i.wrapping_mul(3)).collect()
}

fn set_mode(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A store under `dir` with one array per name; returns its path. The
/// store is world-traversable, as a shared dataset is.
fn store_with(dir: &Path, arrays: &[&str]) -> PathBuf {
    let s = dir.join("s.zarr");
    std::fs::create_dir_all(&s).unwrap();
    std::fs::write(s.join("zarr.json"), GROUP).unwrap();
    for a in arrays {
        std::fs::create_dir_all(s.join(a).join("c")).unwrap();
        std::fs::write(s.join(a).join("zarr.json"), ARRAY).unwrap();
    }
    set_mode(dir, 0o755);
    s
}

/// Let other users reach the mount point (tempdirs are 0700).
fn open_to_others(m: &Mount) {
    set_mode(m.dir.path(), 0o755);
}

fn errno_of(r: &std::io::Result<Vec<u8>>) -> Option<i32> {
    r.as_ref().err().and_then(|e| e.raw_os_error())
}

fn timed_read(p: &Path) -> (std::io::Result<Vec<u8>>, Duration) {
    let t = Instant::now();
    let r = std::fs::read(p);
    (r, t.elapsed())
}

/// Read `path` as `user`: the bytes, or the error `cat` printed.
fn read_as(user: &str, path: &Path) -> Result<Vec<u8>, String> {
    let out = common::users::cat_output(user, path);
    if out.status.success() {
        Ok(out.stdout)
    } else {
        assert!(
            !out.stdout.windows(16).any(|w| SECRET.windows(16).any(|s| s == w)),
            "secret bytes leaked to {user}"
        );
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn denied(r: Result<Vec<u8>, String>) -> bool {
    matches!(r, Err(ref e) if e.contains("Permission denied"))
}

read_paths!(symlinks_owners_and_modes_as_other_users_see_them);
fn symlinks_owners_and_modes_as_other_users_see_them() {
    let users = Users::create();
    let tmp = tempfile::tempdir().unwrap();
    let secret = tmp.path().join("secret");
    std::fs::write(&secret, SECRET).unwrap();
    set_mode(&secret, 0o600);
    let s = store_with(tmp.path(), &["real", "out", "inside", "loop", "locked", "grp"]);
    let bytes = chunk_bytes();
    std::fs::write(s.join("real/c/0"), &bytes).unwrap();
    symlink(&secret, s.join("out/c/0")).unwrap();
    symlink("../../real/c/0", s.join("inside/c/0")).unwrap();
    symlink("0", s.join("loop/c/0")).unwrap();
    std::fs::write(s.join("locked/c/0"), &bytes).unwrap();
    set_mode(&s.join("locked/c/0"), 0o000);
    std::fs::write(s.join("grp/c/0"), &bytes).unwrap();
    for p in ["grp", "grp/c", "grp/zarr.json", "grp/c/0"] {
        std::os::unix::fs::chown(s.join(p), None, Some(users.gid())).unwrap();
        set_mode(
            &s.join(p),
            if p.ends_with('0') || p.ends_with("json") {
                0o640
            } else {
                0o750
            },
        );
    }

    let m = Mount::at(&s, &["-o", "allow_other"]);
    open_to_others(&m);

    // A symlink out of the store: refused for everyone, the mounting root too.
    for f in ["out/0.bin", "out/data.bin"] {
        assert_eq!(errno_of(&std::fs::read(m.mp.join(f))), Some(libc::EIO), "{f} as root");
        assert!(read_as(&users.other, &m.mp.join(f)).is_err(), "{f} as another user");
    }
    let log = m.log();
    assert!(log.contains("out/c/0") && log.contains("outside the store"), "{log}");
    // Inside the store: followed. A loop: EIO.
    assert_eq!(std::fs::read(m.mp.join("inside/0.bin")).unwrap(), bytes);
    assert_eq!(read_as(&users.other, &m.mp.join("inside/0.bin")).unwrap(), bytes);
    assert_eq!(errno_of(&std::fs::read(m.mp.join("loop/0.bin"))), Some(libc::EIO));

    // chmod 000: its owner (root) reads it, another user may not.
    let locked = m.mp.join("locked/0.bin");
    let meta = std::fs::metadata(&locked).unwrap();
    assert_eq!((meta.mode() & 0o7777, meta.uid()), (0o000, 0));
    assert_eq!(std::fs::read(&locked).unwrap(), bytes);
    assert!(denied(read_as(&users.other, &locked)));
    // 0640 root:group: members only; write bits never shown.
    let grp = m.mp.join("grp/0.bin");
    let meta = std::fs::metadata(&grp).unwrap();
    assert_eq!((meta.mode() & 0o7777, meta.gid()), (0o440, users.gid()));
    assert_eq!(std::fs::metadata(m.mp.join("grp")).unwrap().mode() & 0o7777, 0o550);
    assert_eq!(
        std::fs::metadata(m.mp.join("grp/data.bin")).unwrap().mode() & 0o7777,
        0o440
    );
    assert_eq!(read_as(&users.member, &grp).unwrap(), bytes);
    assert_eq!(read_as(&users.member, &m.mp.join("grp/data.bin")).unwrap(), bytes);
    assert!(denied(read_as(&users.other, &grp)));
    assert!(denied(read_as(&users.other, &m.mp.join("grp/header.cdl"))));
    drop(m);

    // --follow-symlinks follows, and so this test would see a leak.
    let m = Mount::at(&s, &["--follow-symlinks"]);
    assert_eq!(std::fs::read(m.mp.join("out/0.bin")).unwrap(), SECRET);
    assert!(m.log().contains("--follow-symlinks"));
    drop(m);
    let m = Mount::at(&s, &["-o", "follow_symlinks"]);
    assert_eq!(std::fs::read(m.mp.join("out/0.bin")).unwrap(), SECRET);
    drop(m);

    // -o uid=,gid=,umask= replace what the store says.
    let m = Mount::at(&s, &["-o", "allow_other,uid=1234,gid=5678,umask=027"]);
    open_to_others(&m);
    for (f, mode) in [
        ("real/0.bin", 0o440),
        ("locked/0.bin", 0o440),
        ("real", 0o550),
        ("", 0o550),
    ] {
        let meta = std::fs::metadata(m.mp.join(f)).unwrap();
        assert_eq!(
            (meta.mode() & 0o7777, meta.uid(), meta.gid()),
            (mode, 1234, 5678),
            "{f}"
        );
    }
    assert!(denied(read_as(&users.other, &m.mp.join("real/0.bin"))));
}

/// The pids of daemons serving a mount made under `dir`.
fn daemons_under(dir: &Path) -> Vec<String> {
    let pattern = format!("daemon-child.*{}", dir.display());
    let out = Command::new("pgrep").args(["-f", &pattern]).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

fn assert_no_daemon_within(dir: &Path, limit: Duration) {
    let t = Instant::now();
    while !daemons_under(dir).is_empty() {
        assert!(t.elapsed() < limit, "an nzfs daemon is still running after {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

read_paths!(special_files_fail_fast_and_the_rest_of_the_mount_works);
fn special_files_fail_fast_and_the_rest_of_the_mount_works() {
    let tmp = tempfile::tempdir().unwrap();
    let s = store_with(tmp.path(), &["ok", "fifo", "sock", "dev", "devlink"]);
    std::fs::write(s.join("ok/c/0"), chunk_bytes()).unwrap();
    let mkfifo = |p: &Path| assert!(Command::new("mkfifo").arg(p).status().unwrap().success());
    mkfifo(&s.join("fifo/c/0"));
    drop(std::os::unix::net::UnixListener::bind(s.join("sock/c/0")).unwrap());
    assert!(
        Command::new("mknod")
            .arg(s.join("dev/c/0"))
            .args(["c", "1", "5"])
            .status()
            .unwrap()
            .success()
    );
    symlink("/dev/zero", s.join("devlink/c/0")).unwrap();
    // A group whose zarr.json is a FIFO: the mount must not hang on it.
    std::fs::create_dir(s.join("g")).unwrap();
    mkfifo(&s.join("g/zarr.json"));

    let t = Instant::now();
    let m = Mount::at(&s, &["--follow-symlinks"]);
    assert!(t.elapsed() < Duration::from_secs(10), "mount took {:?}", t.elapsed());
    for a in ["fifo", "sock", "dev", "devlink"] {
        for f in ["0.bin", "data.bin"] {
            let (r, took) = timed_read(&m.mp.join(a).join(f));
            assert_eq!(errno_of(&r), Some(libc::EIO), "{a}/{f}");
            assert!(took < Duration::from_secs(1), "{a}/{f} took {took:?}");
        }
    }
    let log = m.log();
    for what in [
        "fifo/c/0 is a FIFO",
        "sock/c/0 is a socket",
        "dev/c/0 is a character device",
    ] {
        assert!(log.contains(what), "log lacks {what:?}:\n{log}");
    }
    // The rest works.
    assert_eq!(std::fs::read(m.mp.join("ok/0.bin")).unwrap(), chunk_bytes());
    assert!(std::fs::read_to_string(m.mp.join("header.cdl")).unwrap().contains("ok"));
    let g = std::fs::read_dir(m.mp.join("g")).map(|_| ()).unwrap_err();
    assert_eq!(g.raw_os_error(), Some(libc::EIO));
    assert!(m.log().contains("g/zarr.json is a FIFO"));

    let out = nzfs(&["unmount", m.mp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_no_daemon_within(m.dir.path(), Duration::from_secs(5));
}

#[test]
fn a_fifo_root_zarr_json_is_refused_by_every_command_without_hanging() {
    let tmp = tempfile::tempdir().unwrap();
    let s = tmp.path().join("s.zarr");
    std::fs::create_dir(&s).unwrap();
    assert!(
        Command::new("mkfifo")
            .arg(s.join("zarr.json"))
            .status()
            .unwrap()
            .success()
    );
    let mp = tmp.path().join("mnt");
    std::fs::create_dir(&mp).unwrap();
    let store = s.to_str().unwrap();
    for args in [
        vec!["mount", store, mp.to_str().unwrap()],
        vec!["cdl", store],
        vec!["check", store],
    ] {
        let t = Instant::now();
        let out = nzfs(&args);
        assert!(t.elapsed() < Duration::from_secs(10), "{args:?} took {:?}", t.elapsed());
        assert!(!out.status.success(), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("zarr.json is a FIFO"), "{args:?}: {err}");
    }
    assert!(!nzfs::daemon::is_mount_point(&mp));
}

/// A store behind bindfs, which the test stops with SIGSTOP: a store that
/// no longer answers, like a dead NFS server.
struct StoppableStore {
    bindfs: std::process::Child,
    path: PathBuf,
}

impl StoppableStore {
    fn over(src: &Path, at: &Path) -> StoppableStore {
        std::fs::create_dir(at).unwrap();
        let bindfs = Command::new("bindfs")
            .args(["-f", "-o", "ro"])
            .arg(src)
            .arg(at)
            .stderr(Stdio::null())
            .spawn()
            .expect("bindfs (apt-get install bindfs; scripts/setup.sh --test does)");
        let t = Instant::now();
        while !nzfs::daemon::is_mount_point(at) {
            assert!(t.elapsed() < Duration::from_secs(10), "bindfs did not mount");
            std::thread::sleep(Duration::from_millis(20));
        }
        StoppableStore {
            bindfs,
            path: at.to_path_buf(),
        }
    }

    fn signal(&self, sig: i32) {
        unsafe { libc::kill(self.bindfs.id() as i32, sig) };
    }
}

impl Drop for StoppableStore {
    fn drop(&mut self) {
        self.signal(libc::SIGCONT);
        let _ = Command::new("fusermount3").arg("-u").arg(&self.path).status();
        let _ = self.bindfs.kill();
        let _ = self.bindfs.wait();
    }
}

/// A `cat` of `path`, checked to be blocked after half a second.
fn blocked_cat(path: &Path) -> std::process::Child {
    let mut reader = Command::new("cat")
        .arg(path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(reader.try_wait().unwrap().is_none(), "the read should be blocked");
    reader
}

/// A mount of a copy of sample.zarr behind a [`StoppableStore`], the store
/// then stopped, and a `cat` of `file` blocked on it.
fn a_reader_blocked_in_a_dead_store(dir: &Path, file: &str) -> (StoppableStore, Mount, std::process::Child) {
    let src = dir.join("src.zarr");
    common::copy_dir(&common::data_dir().join("sample.zarr"), &src);
    let store = StoppableStore::over(&src, &dir.join("bound.zarr"));
    let m = Mount::at(&store.path, &[]);
    assert!(
        std::fs::read_to_string(m.mp.join("header.cdl"))
            .unwrap()
            .contains("t2m")
    );
    store.signal(libc::SIGSTOP);
    // This reader now waits on the daemon, which waits on the dead store.
    let reader = blocked_cat(&m.mp.join(file));
    (store, m, reader)
}

#[test]
fn a_read_blocked_in_a_dead_store_does_not_keep_the_daemon_alive() {
    let tmp = tempfile::tempdir().unwrap();
    let (_store, m, mut reader) = a_reader_blocked_in_a_dead_store(tmp.path(), "t2m/0.0.0.bin");
    // Busy: only a lazy unmount detaches it; the daemon must still exit.
    let out = nzfs(&["unmount", "--lazy", m.mp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_no_daemon_within(m.dir.path(), Duration::from_secs(5));
    let log = m.log();
    assert!(log.contains("abandoning a store read"), "{log}");
    // The blocked reader is released with an error, not left hanging.
    let t = Instant::now();
    while reader.try_wait().unwrap().is_none() {
        if t.elapsed() > Duration::from_secs(5) {
            let ps = Command::new("ps")
                .args(["-eLo", "pid,tid,stat,wchan:32,cmd"])
                .output()
                .unwrap();
            let ps = String::from_utf8_lossy(&ps.stdout);
            let threads: Vec<&str> = ps
                .lines()
                .filter(|l| l.contains("nzfs") || l.contains("bindfs"))
                .collect();
            panic!(
                "the reader is still blocked; threads:\n{}\nlog:\n{log}",
                threads.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn sigterm_ends_a_daemon_whose_store_is_dead() {
    let tmp = tempfile::tempdir().unwrap();
    let (_store, m, mut reader) = a_reader_blocked_in_a_dead_store(tmp.path(), "lat/0.bin");
    unsafe { libc::kill(m.daemon_pid(), libc::SIGTERM) };
    assert_no_daemon_within(m.dir.path(), Duration::from_secs(5));
    let _ = reader.kill();
    let _ = reader.wait();
}

read_paths!(a_read_blocked_in_the_store_does_not_stop_reads_of_other_objects);
fn a_read_blocked_in_the_store_does_not_stop_reads_of_other_objects() {
    let tmp = tempfile::tempdir().unwrap();
    let s = store_with(tmp.path(), &["ok"]);
    std::fs::write(s.join("ok/c/0"), chunk_bytes()).unwrap();
    // Array `slow` lives on a bindfs mount inside the store.
    let slow_src = tmp.path().join("slow-src");
    std::fs::create_dir_all(slow_src.join("c")).unwrap();
    std::fs::write(slow_src.join("zarr.json"), ARRAY).unwrap();
    std::fs::write(slow_src.join("c/0"), chunk_bytes()).unwrap();
    let slow = StoppableStore::over(&slow_src, &s.join("slow"));
    let m = Mount::at(&s, &[]);
    assert!(
        std::fs::read_to_string(m.mp.join("header.cdl"))
            .unwrap()
            .contains("slow")
    );
    slow.signal(libc::SIGSTOP);
    let mut blocked = blocked_cat(&m.mp.join("slow/0.bin"));
    for f in ["ok/0.bin", "ok/data.bin"] {
        let (r, took) = timed_read(&m.mp.join(f));
        assert_eq!(r.unwrap(), chunk_bytes(), "{f}");
        assert!(took < Duration::from_secs(1), "{f} took {took:?} behind a blocked read");
    }
    assert!(blocked.try_wait().unwrap().is_none(), "the slow read is still blocked");
    slow.signal(libc::SIGCONT);
    assert!(
        blocked.wait().unwrap().success(),
        "the slow read completes once the store answers"
    );
}

/// `null_terminated_bytes[8]`: a string-valued array, so it has `data.txt`.
const TEXT_ARRAY: &str = r#"{"zarr_format": 3, "node_type": "array", "shape": [8],
  "data_type": {"name": "null_terminated_bytes", "configuration": {"length_bytes": 8}},
  "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [8]}},
  "chunk_key_encoding": {"name": "default"}, "fill_value": "", "codecs": [{"name": "bytes"}]}"#;

/// The files of a group directory that combine objects: its header and
/// its `.nc`.
fn combined_files_of_group(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "nc"))
        .collect();
    assert_eq!(files.len(), 1, "one .nc in {}", dir.display());
    files.push(dir.join("header.cdl"));
    files
}

read_paths!(files_that_combine_objects_deny_what_their_objects_deny);
/// A file that combines objects (`data.bin`, `data.txt`,
/// `header.cdl`, a group's `.nc`) never shows another user what a direct
/// read of one of those objects would deny. Each case sits in a subgroup of
/// its own, beside one whose objects are all public (which every user reads
/// through every file, so the rule does not refuse more than it must).
fn files_that_combine_objects_deny_what_their_objects_deny() {
    let users = Users::create();
    let tmp = tempfile::tempdir().unwrap();
    let s = store_with(tmp.path(), &[]);
    let secret_attrs = r#""attributes": {"password": "hunter2"}, "node_type": "array""#;
    let array_with_secret = ARRAY.replace(r#""node_type": "array""#, secret_attrs);
    let bytes = chunk_bytes();
    let mut text = b"abcdefgh".repeat(8);
    text[7] = 0;
    let add_array = |path: &str, meta: &str, chunk: &[u8]| {
        std::fs::create_dir_all(s.join(path).join("c")).unwrap();
        std::fs::write(s.join(path).join("zarr.json"), meta).unwrap();
        std::fs::write(s.join(path).join("c/0"), chunk).unwrap();
    };
    for g in ["public", "chunk0600", "all0640", "json0600", "sub0700"] {
        std::fs::create_dir_all(s.join(g)).unwrap();
        std::fs::write(s.join(g).join("zarr.json"), GROUP).unwrap();
        add_array(&format!("{g}/v"), &array_with_secret, &bytes);
        add_array(&format!("{g}/t"), TEXT_ARRAY, &text);
    }
    // 1. Chunk objects 0600 root under a 0644 zarr.json.
    for a in ["v", "t"] {
        set_mode(&s.join("chunk0600").join(a).join("c/0"), 0o600);
    }
    // 2. zarr.json and chunks all 0640 root:root (the README's example).
    for a in ["v", "t"] {
        for f in ["zarr.json", "c/0"] {
            set_mode(&s.join("all0640").join(a).join(f), 0o640);
        }
    }
    // 3. A 0600 zarr.json holding a password.
    set_mode(&s.join("json0600/v/zarr.json"), 0o600);
    set_mode(&s.join("json0600/t/zarr.json"), 0o600);
    // 4. A 0700 group below the one whose header is read.
    std::fs::create_dir_all(s.join("sub0700/inner")).unwrap();
    std::fs::write(s.join("sub0700/inner/zarr.json"), GROUP).unwrap();
    add_array("sub0700/inner/w", &array_with_secret, &bytes);
    set_mode(&s.join("sub0700/inner"), 0o700);

    let m = Mount::at(&s, &["-o", "allow_other"]);
    open_to_others(&m);
    let shows_secret =
        |b: &[u8]| String::from_utf8_lossy(b).contains("hunter2") || b.windows(bytes.len()).any(|w| w == bytes);
    let every_file = |g: &str| {
        let mut files = combined_files_of_group(&m.mp.join(g));
        for a in ["v", "t"] {
            files.push(m.mp.join(g).join(a).join("header.cdl"));
        }
        files.push(m.mp.join(g).join("v/data.bin"));
        files.push(m.mp.join(g).join("t/data.txt"));
        files
    };

    // The control: every user reads every file of the public group, and
    // the values and attributes are there.
    for f in every_file("public") {
        for user in [&users.member, &users.other] {
            let got = read_as(user, &f).unwrap_or_else(|e| panic!("{} as {user}: {e}", f.display()));
            assert_eq!(got, std::fs::read(&f).unwrap(), "{}", f.display());
        }
    }
    assert!(shows_secret(&std::fs::read(m.mp.join("public/v/data.bin")).unwrap()));
    assert!(String::from_utf8_lossy(&std::fs::read(m.mp.join("public/header.cdl")).unwrap()).contains("hunter2"));

    // Each case: root reads every file (and sees what it hides); another
    // user is refused every file that shows a denied object.
    let refused = |g: &str, files: &[PathBuf]| {
        for f in files {
            assert!(
                shows_secret(&std::fs::read(f).unwrap()) || f.ends_with("t/data.txt") || f.ends_with("t/header.cdl"),
                "{}",
                f.display()
            );
            for user in [&users.member, &users.other] {
                let r = read_as(user, f);
                assert!(denied(r.clone()), "{g}: {} as {user}: {r:?}", f.display());
            }
        }
    };
    let group_files = |g: &str| combined_files_of_group(&m.mp.join(g));
    // 1: data.bin, data.txt and the group's .nc show the chunks.
    let mut files = vec![m.mp.join("chunk0600/v/data.bin"), m.mp.join("chunk0600/t/data.txt")];
    files.extend(
        group_files("chunk0600")
            .into_iter()
            .filter(|f| !f.ends_with("header.cdl")),
    );
    refused("chunk0600", &files);
    assert!(read_as(&users.other, &m.mp.join("chunk0600/v/header.cdl")).is_ok());
    // 2: everything that shows the arrays.
    refused("all0640", &every_file("all0640"));
    // 3: the headers and the .nc show the attributes.
    let mut files = group_files("json0600");
    files.extend([m.mp.join("json0600/v/header.cdl"), m.mp.join("json0600/v/data.bin")]);
    refused("json0600", &files);
    // 4: the 0700 group's arrays appear in its parent's header, and the root's.
    refused("sub0700", &[m.mp.join("sub0700/header.cdl"), m.mp.join("header.cdl")]);
    // Its parent's .nc holds only the parent's own arrays: still readable.
    let nc = group_files("sub0700").remove(0);
    assert!(read_as(&users.other, &nc).is_ok());
    // The modes say so too, as `ls -l` shows them.
    assert_eq!(
        std::fs::metadata(m.mp.join("chunk0600/v/data.bin")).unwrap().mode() & 0o777,
        0o400
    );
    assert_eq!(
        std::fs::metadata(m.mp.join("public/v/data.bin")).unwrap().mode() & 0o777,
        0o444
    );
}

//! What nzfs writes or hands on with its user's rights, tried as another
//! user would attack it: the default log directory and the log file (never
//! a shared temporary directory, never through a link, never a file of
//! someone else's), `install-helper` (a copy root owns, files replaced by
//! rename, never written through a link) and the fsname a normal user's
//! mount gives fusermount3 (no option smuggled in by the store's path).
//!
//! Requires root, `runuser`, the `nobody` user, fusermount3 and a
//! `/dev/fuse` open to every user (udev's default).

mod common;

use std::os::unix::fs::{MetadataExt, PermissionsExt, chown, symlink};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use nzfs::daemon::is_mount_point;

const SECRET: &[u8] = b"root's alone\n";
/// uid and gid of `nobody` (Debian's).
const NOBODY: u32 = 65534;

fn set_mode(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A root-only file (mode 0600) in `dir` that no test may change.
fn secret(dir: &Path) -> PathBuf {
    let p = dir.join("secret");
    std::fs::write(&p, SECRET).unwrap();
    set_mode(&p, 0o600);
    p
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `nzfs mount STORE MP ...` with only `env` in its environment (and PATH),
/// as the system's systemd runs an fstab mount unit.
fn mount_with_env(store: &Path, mp: &Path, extra: &[&str], env: &[(&str, &Path)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_nzfs"));
    cmd.env_clear()
        .env("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")
        .env("LANG", "C.UTF-8")
        .arg("mount")
        .arg(store)
        .arg(mp)
        .args(extra);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// Unmounts `mp` on drop if a test (on the old code) mounted it.
struct Unmount(PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        if is_mount_point(&self.0) {
            let _ = Command::new("fusermount3").arg("-uz").arg(&self.0).status();
        }
    }
}

/// The default log's name for mount point `mp`.
fn log_name(mp: &Path) -> String {
    let stem: String = mp.to_str().unwrap().trim_matches('/').replace('/', "_");
    format!("{stem}.log")
}

/// Root with neither $HOME nor $XDG_STATE_HOME (fstab through the system
/// systemd) logs to /var/log/nzfs, root's own, not to /tmp/nzfs, which any
/// user can make first; a normal user is told to pass --log-file.
#[test]
fn a_mount_without_home_logs_to_no_shared_directory() {
    let tmp = tempfile::tempdir().unwrap();
    let mp = tmp.path().join("mnt");
    std::fs::create_dir(&mp).unwrap();
    let _u = Unmount(mp.clone());
    let out = mount_with_env(&common::data_dir().join("sample.zarr"), &mp, &[], &[]);
    assert!(out.status.success(), "{}", text(&out));
    let said = text(&out);
    let log = Path::new("/var/log/nzfs").join(log_name(&mp));
    assert!(said.contains(&format!("log {})", log.display())), "{said}");
    let dir = std::fs::symlink_metadata("/var/log/nzfs").unwrap();
    assert!(
        dir.is_dir() && dir.uid() == 0 && dir.mode() & 0o077 == 0,
        "{:o}",
        dir.mode()
    );
    let out = common::mount::nzfs(&["unmount", mp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out));
    let _ = std::fs::remove_file(&log);

    // A normal user with no $HOME: nowhere of theirs to log to.
    let out = Command::new("runuser")
        .args(["-u", "nobody", "--", "env", "-i", "PATH=/usr/bin:/bin"])
        .arg(env!("CARGO_BIN_EXE_nzfs"))
        .arg("mount")
        .arg(common::data_dir().join("sample.zarr"))
        .arg(&mp)
        .output()
        .unwrap();
    let said = text(&out);
    assert!(!out.status.success(), "{said}");
    assert!(said.contains("--log-file") && said.contains("$HOME"), "{said}");
}

/// A default log directory another user made first (world-writable, with
/// the log's name linked to a root-only file) is refused, and so is a log
/// file that is a link or another user's: the root-only file is unchanged.
#[test]
fn a_log_directory_or_file_another_user_planted_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let secret = secret(tmp.path());
    let mp = tmp.path().join("mnt");
    std::fs::create_dir(&mp).unwrap();
    let _u = Unmount(mp.clone());
    let store = common::data_dir().join("sample.zarr");
    let state = tmp.path().join("state");
    let planted = state.join("nzfs");
    std::fs::create_dir_all(&planted).unwrap();
    chown(&planted, Some(NOBODY), Some(NOBODY)).unwrap();
    set_mode(&planted, 0o777);
    symlink(&secret, planted.join(log_name(&mp))).unwrap();
    let out = mount_with_env(&store, &mp, &[], &[("XDG_STATE_HOME", &state)]);
    let said = text(&out);
    assert!(
        !out.status.success(),
        "mounted, logging through the planted link: {said}"
    );
    assert!(said.contains("belongs to uid 65534"), "{said}");
    assert_eq!(std::fs::read(&secret).unwrap(), SECRET);

    // The directory is root's now, but the log's name is still a link.
    chown(&planted, Some(0), Some(0)).unwrap();
    set_mode(&planted, 0o700);
    let out = mount_with_env(&store, &mp, &[], &[("XDG_STATE_HOME", &state)]);
    let said = text(&out);
    assert!(!out.status.success() && said.contains("symbolic link"), "{said}");
    assert_eq!(std::fs::read(&secret).unwrap(), SECRET);

    // --log-file: a link, then a file of another user's.
    let link = tmp.path().join("link.log");
    symlink(&secret, &link).unwrap();
    let out = mount_with_env(&store, &mp, &["--log-file", link.to_str().unwrap()], &[]);
    assert!(
        !out.status.success() && text(&out).contains("symbolic link"),
        "{}",
        text(&out)
    );
    let theirs = tmp.path().join("theirs.log");
    std::fs::write(&theirs, b"").unwrap();
    chown(&theirs, Some(NOBODY), Some(NOBODY)).unwrap();
    let out = mount_with_env(&store, &mp, &["--log-file", theirs.to_str().unwrap()], &[]);
    assert!(
        !out.status.success() && text(&out).contains("belongs to uid 65534"),
        "{}",
        text(&out)
    );
    assert_eq!(std::fs::read(&secret).unwrap(), SECRET);
    assert!(std::fs::read(&theirs).unwrap().is_empty());
}

/// `install-helper` run by root from an nzfs a user owns (a pip or venv
/// install) installs root's own copy, which the user's later change of
/// their file does not reach, and replaces a man page planted as a link
/// rather than writing through it. A PREFIX/bin others can write is
/// refused.
#[test]
fn install_helper_installs_a_copy_of_roots_and_writes_through_no_link() {
    let tmp = tempfile::tempdir().unwrap();
    set_mode(tmp.path(), 0o755);
    let secret = secret(tmp.path());
    // The user's install.
    let venv = tmp.path().join("venv/bin");
    std::fs::create_dir_all(&venv).unwrap();
    let theirs = venv.join("nzfs");
    std::fs::copy(env!("CARGO_BIN_EXE_nzfs"), &theirs).unwrap();
    for p in [&theirs, &venv, &venv.parent().unwrap().to_path_buf()] {
        chown(p, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    let prefix = tmp.path().join("prefix");
    let man = prefix.join("share/man/man1");
    std::fs::create_dir_all(&man).unwrap();
    symlink(&secret, man.join("nzfs-mount.1")).unwrap();
    // `BINARY install-helper [--remove] --prefix PREFIX`.
    let helper = |binary: &Path, remove: bool, prefix: &Path| {
        Command::new(binary)
            .arg("install-helper")
            .args(remove.then_some("--remove"))
            .arg("--prefix")
            .arg(prefix)
            .output()
            .unwrap()
    };
    let out = helper(&theirs, false, &prefix);
    assert!(out.status.success(), "{}", text(&out));
    let installed = prefix.join("bin/nzfs");
    let meta = std::fs::symlink_metadata(&installed).unwrap();
    assert!(
        meta.is_file() && meta.uid() == 0 && meta.mode() & 0o7777 == 0o755,
        "{} is not root's own file: {meta:?}",
        installed.display()
    );
    assert_eq!(
        std::fs::read(&secret).unwrap(),
        SECRET,
        "written through the planted link"
    );
    let page = std::fs::symlink_metadata(man.join("nzfs-mount.1")).unwrap();
    assert!(page.is_file() && page.uid() == 0, "{page:?}");
    // The user replaces their file: root's copy is still nzfs.
    std::fs::write(&theirs, b"#!/bin/sh\necho replaced\n").unwrap();
    let out = Command::new(&installed).arg("--version").output().unwrap();
    assert!(text(&out).starts_with("nzfs "), "{}", text(&out));
    // An earlier copy is replaced; --remove takes it and the pages away.
    let again = helper(&installed, false, &prefix);
    assert!(again.status.success(), "{}", text(&again));
    let removed = helper(&installed, true, &prefix);
    assert!(removed.status.success(), "{}", text(&removed));
    assert!(installed.symlink_metadata().is_err() && !man.join("nzfs-mount.1").exists());

    // A bin directory others may write to: what root puts there could be
    // swapped.
    let open = tmp.path().join("open");
    std::fs::create_dir_all(open.join("bin")).unwrap();
    set_mode(&open.join("bin"), 0o777);
    let out = helper(Path::new(env!("CARGO_BIN_EXE_nzfs")), false, &open);
    assert!(
        !out.status.success() && text(&out).contains("writable by others"),
        "{}",
        text(&out)
    );
    assert!(open.join("bin/nzfs").symlink_metadata().is_err());
}

/// A normal user's mount goes through fusermount3, which splits its `-o`
/// list at commas: a store path holding `,max_read=4096,subtype=evil` adds
/// no option, and the mount table names the store whole.
#[test]
fn a_comma_in_the_store_path_adds_no_mount_option() {
    let mode = std::fs::metadata("/dev/fuse").unwrap().mode();
    assert_eq!(
        mode & 0o006,
        0o006,
        "/dev/fuse must be open to every user (udev's 0666) for this test"
    );
    let tmp = tempfile::tempdir().unwrap();
    set_mode(tmp.path(), 0o755);
    let store = tmp.path().join("z,max_read=4096,subtype=evil");
    common::copy_dir(&common::data_dir().join("sample.zarr"), &store);
    let mp = tmp.path().join("mnt");
    let logs = tmp.path().join("logs");
    for d in [&mp, &logs] {
        std::fs::create_dir(d).unwrap();
        chown(d, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    let _u = Unmount(mp.clone());
    let as_nobody = |args: &[&str]| {
        Command::new("runuser")
            .args(["-u", "nobody", "--"])
            .arg(env!("CARGO_BIN_EXE_nzfs"))
            .args(args)
            .output()
            .unwrap()
    };
    let log = logs.join("nzfs.log");
    let out = as_nobody(&[
        "mount",
        store.to_str().unwrap(),
        mp.to_str().unwrap(),
        "--log-file",
        log.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out));
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
    let line = mountinfo
        .lines()
        .find(|l| l.split(' ').nth(4).map(nzfs::mounts::unescape).as_deref() == Some(mp.to_str().unwrap().as_bytes()))
        .expect("the mount in mountinfo")
        .to_string();
    let (_, after) = line.split_once(" - ").unwrap();
    let fields: Vec<&str> = after.split(' ').collect();
    let umount = as_nobody(&["unmount", mp.to_str().unwrap()]);
    assert!(umount.status.success(), "{}", text(&umount));
    assert_eq!(fields[0], "fuse.nzfs", "{line}");
    assert_eq!(
        String::from_utf8(nzfs::mounts::unescape(fields[1])).unwrap(),
        format!("nzfs:{}", store.display()),
        "{line}"
    );
    assert!(
        !fields[2].contains("max_read=4096"),
        "an option came from the store's path: {line}"
    );
}

//! nzfs on a real system, as an administrator meets it: mount(8) and fstab
//! through fuse3's `mount.fuse3`, the systemd mount unit of docs/install.md, `nzfs
//! status` on a live mount, its install steps (man pages,
//! completions), and mounts by unprivileged users with and without
//! `allow_other`.
//!
//! Needs root, as CI runs it. The tests change system state and put it back
//! (the `nzfs` helper link in /usr/local/bin, /etc/fuse.conf, test users),
//! one at a time under `common::system::SYSTEM`.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::mount::{Mount, nzfs, read_file};
use common::system::*;
use nzfs::daemon::is_mount_point;
use nzfs::json::Value;

#[test]
fn mount_t_fuse_nzfs_takes_nzfs_options_ignores_mount_options_and_refuses_rw() {
    let _s = serial();
    let _h = Helper::install();
    let tmp = tempfile::tempdir().unwrap();
    let mp = tmp.path().join("mnt");
    std::fs::create_dir(&mp).unwrap();
    let log = tmp.path().join("nzfs.log");
    let options = format!(
        "ro,allow_other,cache_size=2GiB,threads=3,missing_chunks=fill,log_file={},\
         noauto,nofail,_netdev,users,x-systemd.automount,noatime,defaults",
        log.display()
    );
    ok(Command::new("mount")
        .args(["-t", "fuse.nzfs"])
        .arg(sample())
        .arg(&mp)
        .args(["-o", &options]));
    check_sample_mount(&mp);
    assert!(mountinfo(&mp).contains("noatime"), "{}", mountinfo(&mp));
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.contains("mount is live"), "{logged}");
    umount(&mp);

    // rw, which mount(8) passes unless told ro, is refused with the reason.
    let out = run(Command::new("mount").args(["-t", "fuse.nzfs"]).arg(sample()).arg(&mp));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("read-only") && err.contains("-o ro"),
        "{err}"
    );
    assert!(!is_mount_point(&mp));
    // So is an unknown nzfs value, with clap's message.
    let out = run(Command::new("mount")
        .args(["-t", "fuse.nzfs", "-o", "ro,cache_size=lots"])
        .arg(sample())
        .arg(&mp));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("lots"), "{err}");
    assert!(!is_mount_point(&mp));
}

/// The fenced block after `marker` in docs/install.md, with its example
/// paths replaced.
fn doc_block(marker: &str, store: &Path, mp: &Path) -> String {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/install.md")).unwrap();
    let after = &doc[doc
        .find(marker)
        .unwrap_or_else(|| panic!("no {marker} in docs/install.md"))..];
    let start = after.find("```\n").unwrap() + 4;
    let block = &after[start..start + after[start..].find("```").unwrap()];
    block
        .replace("/data/era5.zarr", store.to_str().unwrap())
        .replace("/mnt/era5", mp.to_str().unwrap())
}

#[test]
fn documented_fstab_line_and_mount_unit_work() {
    let _s = serial();
    let _h = Helper::install();
    let tmp = tempfile::tempdir().unwrap();
    let mp = tmp.path().join("mnt");
    std::fs::create_dir(&mp).unwrap();

    let fstab = tmp.path().join("fstab");
    std::fs::write(&fstab, doc_block("<!-- fstab:", &sample(), &mp)).unwrap();
    ok(Command::new("mount").arg("-T").arg(&fstab).arg(&mp));
    check_sample_mount(&mp);
    umount(&mp);
    ok(Command::new("mount").args(["-a", "-T"]).arg(&fstab));
    check_sample_mount(&mp);
    umount(&mp);

    let unit = doc_block("<!-- mount-unit:", &sample(), &mp);
    let name = ok(Command::new("systemd-escape").args(["-p", "--suffix=mount"]).arg(&mp)).stdout;
    let path = tmp.path().join(String::from_utf8(name).unwrap().trim());
    std::fs::write(&path, &unit).unwrap();
    ok(Command::new("systemd-analyze").arg("verify").arg(&path));
    // What systemd runs for a .mount unit: mount What Where -t Type -o Options.
    let key = |k: &str| {
        unit.lines()
            .find_map(|l| l.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("no {k}= in the unit"))
            .to_string()
    };
    assert_eq!(key("Where"), mp.to_str().unwrap());
    ok(Command::new("mount").args([
        key("What"),
        key("Where"),
        "-t".into(),
        key("Type"),
        "-o".into(),
        key("Options"),
    ]));
    check_sample_mount(&mp);
    umount(&mp);
}

/// Mount options for tests of what the daemon sees of chunk-file reads:
/// with passthrough (which `scripts/test.sh` forces on for a run as root)
/// the kernel serves chunk files from memfds and the daemon sees none.
const DAEMON_PATH: &[&str] = &["--passthrough", "never"];

/// Drop-behind: a chunk file read whole through the page cache leaves the
/// decoded cache, and the kernel serves re-reads; after the kernel drops
/// its pages the chunk is decoded again, to the same bytes. A read with
/// `O_DIRECT` bypasses the page cache, so the daemon keeps the chunk.
#[test]
fn chunks_read_whole_are_left_to_the_page_cache() {
    let _s = serial();
    let m = Mount::new("sample.zarr", DAEMON_PATH);
    let expected = sample_t2m();
    let counts = || counts_of(&m.mp);
    let (d0, r0, u0) = counts();

    // O_DIRECT, twice: decoded once, kept, the second read a cache hit.
    // (Chunk 1: a read of chunk 0 would start a prefetch run.)
    let direct = m.mp.join("t2m").join(expected.chunk_name(1));
    expected.check_chunk(1, &read_file(&direct, true)).unwrap();
    expected.check_chunk(1, &read_file(&direct, true)).unwrap();
    let (d1, r1, u1) = counts();
    assert_eq!((d1, r1), (d0 + 1, r0), "O_DIRECT reads");
    assert!(u1 > u0, "an O_DIRECT read keeps its chunk cached: {u0} -> {u1}");

    // Through the page cache: decoded, served, let go.
    let last = expected.chunk_count() - 1;
    let file = m.mp.join("t2m").join(expected.chunk_name(last));
    expected.check_chunk(last, &read_file(&file, false)).unwrap();
    let (d2, r2, u2) = counts();
    assert_eq!((d2, r2, u2), (d1 + 1, r1 + 1, u1), "a page-cached read");
    // A re-read is the kernel's: no request reaches the daemon.
    expected.check_chunk(last, &read_file(&file, false)).unwrap();
    assert_eq!(counts(), (d2, r2, u2), "a warm re-read");
    // The kernel lets its pages go: the next read decodes again.
    let f = std::fs::File::open(&file).unwrap();
    // SAFETY: a valid descriptor; fadvise changes no memory of ours.
    let rc = unsafe { libc::posix_fadvise(std::os::fd::AsRawFd::as_raw_fd(&f), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(rc, 0);
    drop(f);
    expected.check_chunk(last, &read_file(&file, false)).unwrap();
    assert_eq!(counts(), (d2 + 1, r2 + 1, u2), "a read after the page cache let go");

    // data.bin, where each chunk is one stretch of it: array `a` has 3
    // elements in chunks of 2, so the second chunk's stretch is one element
    // (its padding is not in data.bin). One read covers both.
    let m = Mount::new("nz_shared_dimension.zarr", DAEMON_PATH);
    let (d0, r0, u0) = counts_of(&m.mp);
    let data = read_file(&m.mp.join("a/data.bin"), false);
    assert_eq!(data.len(), 3 * 4);
    assert_eq!(counts_of(&m.mp), (d0 + 2, r0 + 2, u0), "data.bin read whole");
    // The group's .nc holds both variables (a: 2 chunks, b: 2), counted
    // apart from data.bin: a's chunks are decoded again for it.
    let nc = read_file(&m.mp.join("nz_shared_dimension.nc"), false);
    assert!(nc.starts_with(b"CDF"));
    assert_eq!(counts_of(&m.mp), (d0 + 6, r0 + 6, u0), "the .nc read whole");
}

/// The decoded-cache counts of a mount: decodes, released, bytes used.
fn counts_of(mp: &Path) -> (u64, u64, u64) {
    let s = status(mp);
    let c = |k| at(&s, &["cache", k]);
    (c("decodes"), c("released_whole_reads"), c("used_bytes"))
}

#[test]
fn status_shows_the_cache_filling_and_errors_with_their_keys() {
    let _s = serial();
    let m = Mount::new("sample.zarr", DAEMON_PATH);
    let first = status(&m.mp);
    assert!(first.get("store").unwrap().as_str().unwrap().ends_with("sample.zarr"));
    let expected = sample_t2m();
    let used = at(&first, &["cache", "used_bytes"]);
    let mut decoded = at(&first, &["chunks_decoded"]);
    let mut released = at(&first, &["cache", "released_whole_reads"]);
    // Last chunk first: a sequential reader would have the prefetcher decode
    // the next chunk before cat asks for it. Each chunk file read whole is
    // decoded, then let go: the kernel page cache holds it (drop-behind).
    for i in (0..expected.chunk_count()).rev() {
        let file = m.mp.join("t2m").join(expected.chunk_name(i));
        ok(Command::new("cat").arg(&file).stdout(std::process::Stdio::null()));
        let now = status(&m.mp);
        let (u, d, r) = (
            at(&now, &["cache", "used_bytes"]),
            at(&now, &["chunks_decoded"]),
            at(&now, &["cache", "released_whole_reads"]),
        );
        assert!(
            u == used && d == decoded + 1 && r == released + 1,
            "chunk {i}: cache {used} -> {u}, decoded {decoded} -> {d}, released {released} -> {r}"
        );
        (decoded, released) = (d, r);
    }
    // data.bin needs every chunk again, and keeps them (they are not
    // stretches of it, so drop-behind does not follow it): the cache fills.
    ok(Command::new("cat")
        .arg(m.mp.join("t2m/data.bin"))
        .stdout(std::process::Stdio::null()));
    let now = status(&m.mp);
    assert_eq!(at(&now, &["chunks_decoded"]), decoded + expected.chunk_count());
    assert!(at(&now, &["cache", "used_bytes"]) > used, "{now}");
    let last = status(&m.mp);
    assert!(at(&last, &["store_reads", "requests"]) >= expected.chunk_count());
    assert!(at(&last, &["store_reads", "bytes"]) > 0);
    assert_eq!(at(&last, &["errors", "total"]), 0);
    let text = String::from_utf8(nzfs(&["status", m.mp.to_str().unwrap()]).stdout).unwrap();
    assert!(
        text.contains("store        ") && text.contains("sample.zarr") && text.contains("errors       0"),
        "{text}"
    );

    let bad = Mount::new("bad.zarr", &[]);
    assert!(std::fs::read(bad.mp.join("bad_crc/1.bin")).is_err());
    let doc = status(&bad.mp);
    assert!(at(&doc, &["errors", "by_kind", "decode"]) >= 1, "{doc}");
    let recent = doc.get("errors").unwrap().get("recent").unwrap().as_array().unwrap();
    assert!(
        recent[0]
            .get("message")
            .unwrap()
            .as_str()
            .unwrap()
            .contains("bad_crc/c/1"),
        "{doc}"
    );

    let out = nzfs(&["status", m.dir.path().to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("is not a mount point"), "{err}");
}

/// Without passthrough the kernel opens files itself after the first open
/// (FUSE_NO_OPEN_SUPPORT): one open request, however many opens; every read
/// still equals numpy's, and huge pages back the daemon's heap. With
/// passthrough every open asks the daemon (it answers with a backing file).
#[test]
fn opens_reach_the_daemon_once_without_passthrough() {
    let _s = serial();
    let expected = sample_t2m();
    for (mode, many) in [("never", false), ("always", true)] {
        let m = Mount::new("sample.zarr", &["--passthrough", mode]);
        for round in 0..10 {
            for i in 0..expected.chunk_count() {
                let bytes = std::fs::read(m.mp.join("t2m").join(expected.chunk_name(i))).unwrap();
                expected
                    .check_chunk(i, &bytes)
                    .unwrap_or_else(|e| panic!("{mode} round {round}: {e}"));
            }
            assert!(std::fs::read_dir(m.mp.join("t2m")).unwrap().count() > 1);
        }
        let doc = status(&m.mp);
        let requests = at(&doc, &["opens", "requests"]);
        let by_kernel = doc.get("opens").unwrap().get("by_kernel").unwrap().clone();
        if many {
            assert!(requests >= 10 * expected.chunk_count(), "{mode}: {doc}");
            assert_eq!(by_kernel, Value::Bool(false), "{mode}: {doc}");
        } else {
            assert_eq!(requests, 1, "{mode}: {doc}");
            assert_eq!(by_kernel, Value::Bool(true), "{mode}: {doc}");
            assert!(m.log().contains("opens are answered by the kernel"), "{}", m.log());
        }
        let environ = std::fs::read(format!("/proc/{}/environ", m.daemon_pid())).unwrap();
        assert!(
            environ
                .split(|&b| b == 0)
                .any(|v| v.starts_with(b"GLIBC_TUNABLES=") && v.ends_with(b"glibc.malloc.hugetlb=1")),
            "{mode}: the daemon runs without the huge-page tunable"
        );
    }
}

#[test]
fn documented_install_steps_give_man_pages_and_completions() {
    let _s = serial();
    let tmp = tempfile::tempdir().unwrap();
    let man1 = tmp.path().join("man/man1");
    ok(Command::new(env!("CARGO_BIN_EXE_nzfs")).arg("man").arg(&man1));
    for page in ["nzfs", "nzfs-mount", "nzfs-status", "nzfs-completions"] {
        assert!(man1.join(format!("{page}.1")).is_file(), "{page}.1");
    }
    let man = |page: &str| {
        let out = ok(Command::new("man")
            .args(["-P", "cat"])
            .arg(page)
            .env("MANPATH", tmp.path().join("man"))
            .env("MANWIDTH", "100"));
        String::from_utf8(out.stdout).unwrap()
    };
    let top = man("nzfs");
    assert!(top.contains("nzfs-mount(1)") && top.contains("nzfs-status(1)"), "{top}");
    let mount = man("nzfs-mount");
    assert!(
        mount.contains("nzfs mount") && mount.contains("cache_size=2GiB"),
        "{mount}"
    );

    let script = tmp.path().join("nzfs.bash");
    let out = ok(Command::new(env!("CARGO_BIN_EXE_nzfs")).args(["completions", "bash"]));
    std::fs::write(&script, &out.stdout).unwrap();
    let shown = ok(Command::new("bash").arg("-c").arg(format!(
        "source {}; complete -p nzfs; COMP_WORDS=(nzfs st); COMP_CWORD=1; _nzfs nzfs st nzfs; echo \"${{COMPREPLY[@]}}\"",
        script.display()
    )));
    let shown = String::from_utf8(shown.stdout).unwrap();
    assert!(shown.contains("-F _nzfs nzfs") && shown.contains("status"), "{shown}");
    for (shell, mark) in [("zsh", "#compdef nzfs"), ("fish", "complete -c nzfs")] {
        let out = ok(Command::new(env!("CARGO_BIN_EXE_nzfs")).args(["completions", shell]));
        assert!(String::from_utf8_lossy(&out.stdout).contains(mark), "{shell}");
    }
}

/// Two unprivileged users for a test, removed on drop.
struct Users([&'static str; 2]);

impl Users {
    fn create() -> Users {
        let u = Users(["nzfs-s-owner", "nzfs-s-other"]);
        u.remove(); // left over from an interrupted run
        for name in u.0 {
            common::users::accounts(Command::new("useradd").args(["-M", "-N", "-s", "/usr/sbin/nologin", name]));
        }
        u
    }

    fn remove(&self) {
        for name in self.0 {
            let _ = Command::new("userdel")
                .arg(name)
                .stderr(std::process::Stdio::null())
                .status();
        }
    }

    fn uid(&self, i: usize) -> u32 {
        let out = ok(Command::new("id").args(["-u", self.0[i]]));
        String::from_utf8(out.stdout).unwrap().trim().parse().unwrap()
    }
}

impl Drop for Users {
    fn drop(&mut self) {
        self.remove();
    }
}

/// /etc/fuse.conf, put back as it was on drop.
struct FuseConf(Option<Vec<u8>>);

impl FuseConf {
    fn save() -> FuseConf {
        FuseConf(std::fs::read("/etc/fuse.conf").ok())
    }

    fn set(&self, user_allow_other: bool) {
        let kept: String = String::from_utf8_lossy(self.0.as_deref().unwrap_or_default())
            .lines()
            .filter(|l| l.trim() != "user_allow_other")
            .map(|l| format!("{l}\n"))
            .collect();
        let extra = if user_allow_other { "user_allow_other\n" } else { "" };
        std::fs::write("/etc/fuse.conf", format!("{kept}{extra}")).unwrap();
    }
}

impl Drop for FuseConf {
    fn drop(&mut self) {
        match &self.0 {
            Some(b) => std::fs::write("/etc/fuse.conf", b).unwrap(),
            None => {
                let _ = std::fs::remove_file("/etc/fuse.conf");
            }
        }
    }
}

/// /dev/fuse must be open to every user, as udev sets it on Debian. The
/// test does not change it: a mode changed for the whole machine is seen
/// by every other process, and a second run restored the first's change.
fn require_dev_fuse_open_to_all() {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata("/dev/fuse").unwrap().permissions().mode() & 0o7777;
    assert_eq!(
        mode & 0o666,
        0o666,
        "/dev/fuse is {mode:o}: normal users' mounts need it 0666 (udev's default; a container's root must open it to all)"
    );
}

/// Run `args` as `user`, with HOME in `home`.
fn as_user(user: &str, home: &Path, args: &[&str]) -> Output {
    run(Command::new("runuser")
        .args(["-u", user, "--", "env"])
        .arg(format!("HOME={}", home.display()))
        .args(args))
}

#[test]
fn unprivileged_users_mount_unmount_and_share_with_allow_other() {
    let _s = serial();
    let users = Users::create();
    let conf = FuseConf::save();
    require_dev_fuse_open_to_all();
    let (owner, other) = (users.0[0], users.0[1]);
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path();
    std::fs::set_permissions(base, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // Everything the owner needs, readable by it: the binary, the store, a
    // home for the log, and a mount point of its own.
    let bin = base.join("nzfs");
    std::fs::copy(env!("CARGO_BIN_EXE_nzfs"), &bin).unwrap();
    let store = base.join("sample.zarr");
    common::copy_dir(&sample(), &store);
    ok(Command::new("chmod").args(["-R", "a+rX"]).arg(&store));
    let (home, mp) = (base.join("home"), base.join("mnt"));
    for d in [&home, &mp] {
        std::fs::create_dir(d).unwrap();
        std::os::unix::fs::chown(d, Some(users.uid(0)), None).unwrap();
    }
    let (b, s, m) = (bin.to_str().unwrap(), store.to_str().unwrap(), mp.to_str().unwrap());
    let expected = sample_t2m();
    let chunk = mp.join("t2m").join(expected.chunk_name(0));
    let read_as = |user: &str| as_user(user, &home, &["cat", chunk.to_str().unwrap()]);

    // A private mount: the owner reads, another user cannot enter.
    let out = as_user(owner, &home, &[b, "mount", s, m]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(mountinfo(&mp).contains("user_id=") && mountinfo(&mp).contains(" - fuse.nzfs "));
    let out = read_as(owner);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    expected.check_chunk(0, &out.stdout).unwrap();
    let out = read_as(other);
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("Permission denied"));
    let out = as_user(owner, &home, &[b, "status", m]);
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("chunks       "),
        "{out:?}"
    );
    let out = as_user(owner, &home, &[b, "unmount", m]);
    assert!(out.status.success() && !is_mount_point(&mp), "{out:?}");

    // allow_other without user_allow_other: refused, saying why.
    conf.set(false);
    let out = as_user(owner, &home, &[b, "mount", "-o", "allow_other", s, m]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && err.contains("user_allow_other"), "{err}");
    assert!(!is_mount_point(&mp));

    // Allowed: the other user reads the same bytes.
    conf.set(true);
    let out = as_user(owner, &home, &[b, "mount", "-o", "allow_other", s, m]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = read_as(other);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    expected.check_chunk(0, &out.stdout).unwrap();
    let out = as_user(owner, &home, &[b, "unmount", m]);
    assert!(out.status.success() && !is_mount_point(&mp), "{out:?}");
}

/// mount(8) runs the helper of a `fuse.nzfs` line from a fixed PATH, where
/// an nzfs that pip put in a virtual environment is not found:
/// `nzfs install-helper` copies it into /usr/local/bin, saying so, after
/// which `mount -t fuse.nzfs` mounts and `man` finds the pages; `--remove`
/// undoes both.
#[test]
fn install_helper_lets_mount_find_nzfs_and_remove_undoes_it() {
    let _s = serial();
    let link = Path::new("/usr/local/bin/nzfs");
    assert!(
        link.symlink_metadata().is_err(),
        "/usr/local/bin/nzfs exists: remove it to run these tests"
    );
    struct Undo;
    impl Drop for Undo {
        fn drop(&mut self) {
            let _ = Command::new(env!("CARGO_BIN_EXE_nzfs"))
                .args(["install-helper", "--remove"])
                .output();
        }
    }
    let _undo = Undo;
    let out = ok(Command::new(env!("CARGO_BIN_EXE_nzfs")).arg("install-helper"));
    let said = String::from_utf8(out.stdout).unwrap();
    assert!(said.contains(" as /usr/local/bin/nzfs: "), "{said}");
    // A copy of root's, not a link (tests/privileged.rs tries the attack).
    assert_eq!(
        std::fs::read(link).unwrap(),
        std::fs::read(env!("CARGO_BIN_EXE_nzfs")).unwrap()
    );
    let tmp = tempfile::tempdir().unwrap();
    let mp = tmp.path().join("mnt");
    std::fs::create_dir(&mp).unwrap();
    ok(Command::new("mount")
        .args(["-t", "fuse.nzfs"])
        .arg(sample())
        .arg(&mp)
        .args(["-o", "ro,cache_size=2GiB"]));
    check_sample_mount(&mp);
    umount(&mp);
    let page = ok(Command::new("man").args(["-w", "nzfs-mount"]).env_remove("MANPATH"));
    // (Debian's /usr/local/man is a link to share/man.)
    let found = PathBuf::from(String::from_utf8(page.stdout).unwrap().trim());
    assert_eq!(
        found.canonicalize().unwrap(),
        Path::new("/usr/local/share/man/man1/nzfs-mount.1")
            .canonicalize()
            .unwrap()
    );
    ok(Command::new(env!("CARGO_BIN_EXE_nzfs")).args(["install-helper", "--remove"]));
    assert!(link.symlink_metadata().is_err(), "the link is gone");
    assert!(!Path::new("/usr/local/share/man/man1/nzfs-mount.1").exists());
}

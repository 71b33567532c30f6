//! Two throwaway users and a group, for tests of what other users may
//! read through an `allow_other` mount: created by [`Users::create`] (as
//! root, with `useradd`), removed on drop, also when the test fails.

use std::path::Path;
use std::process::{Command, Stdio};

/// Two users and a group for the test; removed on drop.
pub struct Users {
    pub member: String,
    pub other: String,
    pub group: String,
    /// The users have fixed names: one test of a binary holds them at a
    /// time (the test harness runs tests in parallel).
    _one: std::sync::MutexGuard<'static, ()>,
}

static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl Users {
    pub fn create() -> Users {
        let u = Users {
            _one: ONE.lock().unwrap_or_else(|e| e.into_inner()),
            member: "nzfs-t-member".into(),
            other: "nzfs-t-other".into(),
            group: "nzfs-t-group".into(),
        };
        u.remove(); // left over from an interrupted run
        let ok = |c: &mut Command| accounts(c);
        ok(Command::new("groupadd").arg(&u.group));
        for (name, groups) in [(&u.member, Some(&u.group)), (&u.other, None)] {
            let mut c = Command::new("useradd");
            c.args(["-M", "-N", "-s", "/usr/sbin/nologin"]);
            if let Some(g) = groups {
                c.args(["-G", g]);
            }
            ok(c.arg(name));
        }
        u
    }

    pub fn remove(&self) {
        for name in [&self.member, &self.other] {
            let _ = Command::new("userdel").arg(name).stderr(Stdio::null()).status();
        }
        let _ = Command::new("groupdel").arg(&self.group).stderr(Stdio::null()).status();
    }

    pub fn gid(&self) -> u32 {
        let out = Command::new("getent").args(["group", &self.group]).output().unwrap();
        String::from_utf8_lossy(&out.stdout)
            .split(':')
            .nth(2)
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }
}

/// Run `c` (a `groupadd` or `useradd`), again while it fails, for a
/// second at most: the shadow tools refuse at once while another process
/// holds the password files' lock (CI saw `useradd` fail so, now and then,
/// with nothing of this suite's running beside it). Its stderr is in the
/// panic.
pub fn accounts(c: &mut Command) {
    let mut tries = 0;
    loop {
        let out = c.output().unwrap();
        if out.status.success() {
            return;
        }
        tries += 1;
        assert!(
            tries < 10,
            "{c:?}: {:?}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

impl Drop for Users {
    fn drop(&mut self) {
        self.remove();
    }
}

/// `cat PATH` run as `user`, its output whole (what it printed even when
/// it failed).
pub fn cat_output(user: &str, path: &Path) -> std::process::Output {
    Command::new("runuser")
        .args(["-u", user, "--", "cat"])
        .arg(path)
        .output()
        .unwrap()
}

/// Run `cat PATH` as `user`: its output, or the error it printed.
pub fn cat_as(user: &str, path: &Path) -> Result<Vec<u8>, String> {
    let out = cat_output(user, path);
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// A mount under `allow_other` of a copy of fixture `fixture` that other
/// users may reach, with store object `restricted` (when given) made root's
/// alone (mode 600). Keep the directory while the mount is used.
pub fn mount_for_others(fixture: &str, restricted: Option<&str>) -> (tempfile::TempDir, super::mount::Mount) {
    mount_for_others_after(fixture, |store| {
        if let Some(object) = restricted {
            mode(&store.join(object), 0o600);
        }
    })
}

fn mode(p: &std::path::Path, m: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).unwrap();
}

/// [`mount_for_others`], with the copy of the fixture changed by `prepare`
/// (given the store's path; the temporary directory holds it) before the
/// mount.
pub fn mount_for_others_after(
    fixture: &str,
    prepare: impl FnOnce(&std::path::Path),
) -> (tempfile::TempDir, super::mount::Mount) {
    let tmp = tempfile::tempdir().unwrap();
    let store = tmp.path().join(std::path::Path::new(fixture).file_name().unwrap());
    super::copy_dir(&super::data_dir().join(fixture), &store);
    mode(tmp.path(), 0o755);
    prepare(&store);
    let m = super::mount::Mount::at(&store, &["-o", "allow_other"]);
    mode(m.dir.path(), 0o755);
    (tmp, m)
}

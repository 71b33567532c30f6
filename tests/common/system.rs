//! Helpers of the tests that change the system (tests/system.rs): run
//! commands, check a live mount of the sample, link the test binary where
//! mount(8) finds it. Such tests run one at a time under [`SYSTEM`].

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

use super::mount::nzfs;
use nzfs::daemon::is_mount_point;
use nzfs::json::{self, Value};

pub static SYSTEM: Mutex<()> = Mutex::new(());

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SYSTEM.lock().unwrap_or_else(|p| p.into_inner())
}

pub fn run(cmd: &mut Command) -> Output {
    cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

pub fn ok(cmd: &mut Command) -> Output {
    let out = run(cmd);
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

pub fn sample() -> PathBuf {
    super::data_dir().join("sample.zarr")
}

/// What numpy reads of the sample's t2m (tests/data/expected).
pub fn sample_t2m() -> super::Expected {
    super::manifest()
        .into_iter()
        .find(|e| e.store == "sample.zarr" && e.path == "t2m")
        .unwrap()
}

/// mount(8) runs helpers with a fixed PATH: link the test binary into
/// /usr/local/bin for the test's duration.
pub struct Helper(PathBuf);

impl Helper {
    pub fn install() -> Helper {
        let link = PathBuf::from("/usr/local/bin/nzfs");
        if let Ok(target) = std::fs::read_link(&link) {
            assert_eq!(
                target,
                Path::new(env!("CARGO_BIN_EXE_nzfs")),
                "/usr/local/bin/nzfs is someone else's"
            );
        } else {
            assert!(
                !link.exists(),
                "/usr/local/bin/nzfs exists: remove it to run these tests"
            );
            std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_nzfs"), &link).unwrap();
        }
        Helper(link)
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

pub fn status(mp: &Path) -> Value {
    let out = nzfs(&["status", "--json", mp.to_str().unwrap()]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    json::parse(&out.stdout).unwrap()
}

pub fn at(v: &Value, path: &[&str]) -> u64 {
    path.iter()
        .fold(v, |v, k| v.get(k).unwrap_or_else(|| panic!("no {k} in {v}")))
        .as_u64()
        .unwrap()
}

/// The line of /proc/self/mountinfo for `mp`.
pub fn mountinfo(mp: &Path) -> String {
    let mp = mp.canonicalize().unwrap();
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap()
        .lines()
        .find(|l| l.split(' ').nth(4) == Some(mp.to_str().unwrap()))
        .unwrap_or_else(|| panic!("{} is not in mountinfo", mp.display()))
        .to_string()
}

/// Check a live mount of the sample: its type, that it reads what numpy
/// reads, and that the cache budget is 2 GiB (the `cache_size=2GiB` option).
pub fn check_sample_mount(mp: &Path) {
    let info = mountinfo(mp);
    assert!(info.contains(" - fuse.nzfs ") && info.contains(" ro,"), "{info}");
    let expected = sample_t2m();
    for i in 0..expected.chunk_count() {
        let bytes = std::fs::read(mp.join("t2m").join(expected.chunk_name(i))).unwrap();
        expected.check_chunk(i, &bytes).unwrap();
    }
    assert_eq!(at(&status(mp), &["cache", "budget_bytes"]), 2 << 30);
}

pub fn umount(mp: &Path) {
    ok(Command::new("umount").arg(mp));
    assert!(!is_mount_point(mp));
}

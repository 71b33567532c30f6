//! A real mount of a fixture through the `nzfs` binary, unmounted on drop.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use nzfs::daemon::is_mount_point;

pub fn nzfs(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_nzfs"))
        .args(args)
        .output()
        .expect("run nzfs")
}

/// A live mount, unmounted on drop.
pub struct Mount {
    pub dir: tempfile::TempDir,
    pub mp: PathBuf,
}

impl Mount {
    pub fn new(store: &str, extra: &[&str]) -> Mount {
        Mount::at(&super::data_dir().join(store), extra)
    }

    /// Mount the store at `store` (any path).
    pub fn at(store: &Path, extra: &[&str]) -> Mount {
        let dir = tempfile::tempdir().unwrap();
        let mp = dir.path().join("mnt");
        std::fs::create_dir(&mp).unwrap();
        let log = dir.path().join("nzfs.log");
        let mut args = vec![
            "mount",
            store.to_str().unwrap(),
            mp.to_str().unwrap(),
            "--log-file",
            log.to_str().unwrap(),
        ];
        args.extend(extra);
        // scripts/test.sh runs the mount tests once per read path.
        let forced = std::env::var("NZFS_TEST_PASSTHROUGH").unwrap_or_default();
        if !forced.is_empty() && !extra.iter().any(|a| a.starts_with("--passthrough")) {
            args.extend(["--passthrough", forced.as_str()]);
        }
        let out = nzfs(&args);
        assert!(
            out.status.success(),
            "nzfs mount failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(is_mount_point(&mp), "mount returned before the mount was live");
        Mount { dir, mp }
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        // The node named "header.cdl" is listed as "header.cdl.node".
        rel.split('/').filter(|s| !s.is_empty()).fold(self.mp.clone(), |p, s| {
            p.join(if s == "header.cdl" { "header.cdl.node" } else { s })
        })
    }

    /// SIGKILL the daemon and wait until the mount point is stale.
    pub fn kill_daemon(&self) {
        unsafe { libc::kill(self.daemon_pid(), libc::SIGKILL) };
        let start = Instant::now();
        while !nzfs::daemon::is_stale(&self.mp) {
            assert!(start.elapsed() < Duration::from_secs(10), "mount never went stale");
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn daemon_pid(&self) -> i32 {
        let pattern = format!("daemon-child.*{}", self.dir.path().display());
        let pids = Command::new("pgrep").args(["-f", &pattern]).output().unwrap();
        String::from_utf8_lossy(&pids.stdout)
            .lines()
            .next()
            .expect("daemon pid")
            .trim()
            .parse()
            .unwrap()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("nzfs.log")).unwrap_or_default()
    }

    /// `nzfs status --json` of this mount.
    pub fn status(&self) -> nzfs::json::Value {
        let out = nzfs(&["status", "--json", self.mp.to_str().unwrap()]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        nzfs::json::parse(&out.stdout).unwrap()
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let stale = nzfs::daemon::is_stale(&self.mp);
        if !stale && !is_mount_point(&self.mp) {
            return; // the test unmounted it already
        }
        let out = nzfs(&["unmount", self.mp.to_str().unwrap()]);
        if !out.status.success() {
            let _ = Command::new("fusermount3").args(["-u", "-z"]).arg(&self.mp).status();
        }
    }
}

/// The bytes of `path` through mmap(2), as numpy.memmap maps them.
pub fn mmap_bytes(path: &std::path::Path) -> Vec<u8> {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).unwrap();
    let len = f.metadata().unwrap().len() as usize;
    if len == 0 {
        return Vec::new();
    }
    // SAFETY: a read-only private mapping of an open file, copied out and unmapped.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            f.as_raw_fd(),
            0,
        );
        assert_ne!(p, libc::MAP_FAILED, "mmap {}", path.display());
        let v = std::slice::from_raw_parts(p as *const u8, len).to_vec();
        libc::munmap(p, len);
        v
    }
}

/// The peak resident memory (`VmHWM`) of process `pid`, in bytes.
pub fn vm_hwm(pid: i32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

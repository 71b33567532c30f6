//! A real mount of a fixture through the `nzfs` binary, unmounted on drop;
//! and the read-path matrix: a test declared with [`read_paths!`] runs
//! twice, its mounts serving file reads once through FUSE passthrough and
//! once through the daemon, so both read paths are proven by one
//! `cargo test`.

use std::cell::Cell;
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

/// How the mounts of a matrix test serve file reads.
#[derive(Clone, Copy, Debug)]
pub enum ReadPath {
    /// FUSE passthrough: the kernel reads chunk files from backing files
    /// (`--passthrough always`: the mount fails where the kernel cannot).
    Passthrough,
    /// Every read through the daemon (`--passthrough never`).
    Daemon,
}

impl ReadPath {
    fn flag(self) -> &'static str {
        match self {
            ReadPath::Passthrough => "always",
            ReadPath::Daemon => "never",
        }
    }
}

thread_local! {
    /// The read path of the matrix test running on this thread.
    static READ_PATH: Cell<Option<ReadPath>> = const { Cell::new(None) };
}

/// Run `test` with every [`Mount`] it makes on `path`. Passthrough needs
/// root (`CAP_SYS_ADMIN`): for others that half of the matrix says it is
/// skipped.
pub fn on_read_path(path: ReadPath, test: fn()) {
    if matches!(path, ReadPath::Passthrough) && unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: FUSE passthrough needs root");
        return;
    }
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            READ_PATH.set(None);
        }
    }
    READ_PATH.set(Some(path));
    let _reset = Reset;
    test()
}

/// `read_paths!(name);` beside `fn name()` makes it a test of the read-path
/// matrix: `name::passthrough` and `name::daemon` run it on each read path
/// (a module and a function may share a name).
#[allow(unused_macros)]
macro_rules! read_paths {
    ($name:ident) => {
        mod $name {
            #[test]
            fn passthrough() {
                $crate::common::mount::on_read_path($crate::common::mount::ReadPath::Passthrough, super::$name)
            }
            #[test]
            fn daemon() {
                $crate::common::mount::on_read_path($crate::common::mount::ReadPath::Daemon, super::$name)
            }
        }
    };
}
#[allow(unused_imports)]
pub(crate) use read_paths;

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
        // A test of the read-path matrix mounts on its read path, unless
        // it chose one itself.
        let forced = READ_PATH
            .get()
            .filter(|_| !extra.iter().any(|a| a.starts_with("--passthrough")))
            .map(ReadPath::flag);
        if let Some(flag) = forced {
            args.extend(["--passthrough", flag]);
        }
        let out = nzfs(&args);
        assert!(
            out.status.success(),
            "nzfs mount failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(is_mount_point(&mp), "mount returned before the mount was live");
        let m = Mount { dir, mp };
        // The matrix is what it says: the daemon reports the read path.
        if let Some(path) = forced.and(READ_PATH.get()) {
            let on = m.status().get("passthrough").and_then(|p| p.get("on")).cloned();
            let want = matches!(path, ReadPath::Passthrough);
            assert_eq!(on, Some(nzfs::json::Value::Bool(want)), "{path:?}: passthrough");
        }
        m
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

    /// The daemon's log once it holds `needle` (a line may be written
    /// just after the reply it explains), or as it is after 10 seconds.
    #[allow(dead_code)]
    pub fn log_with(&self, needle: &str) -> String {
        let until = std::time::Instant::now() + Duration::from_secs(10);
        loop {
            let log = self.log();
            if log.contains(needle) || std::time::Instant::now() > until {
                return log;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The decoded-chunk cache's counts in `nzfs status`: (hits, decodes).
    pub fn cache_counts(&self) -> (u64, u64) {
        let status = self.status();
        let count = |name: &str| {
            status
                .get("cache")
                .and_then(|c| c.get(name))
                .and_then(|v| v.as_u64())
                .unwrap()
        };
        (count("hits"), count("decodes"))
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

/// All of `path`; with `direct`, opened with `O_DIRECT`, so that every
/// read reaches the daemon (none is answered from the kernel's pages).
pub fn read_file(path: &Path, direct: bool) -> Vec<u8> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(if direct { libc::O_DIRECT } else { 0 })
        .open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    f.read_to_end(&mut out).unwrap();
    out
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

//! How many CPUs this process may use, and the thread pools sized from it.
//!
//! The count is the smaller of the CPUs in the process's affinity mask
//! (`taskset`, `cpuset`) and its cgroup's CPU quota, rounded up (`cpu.max`
//! in cgroup v2 or `cpu.cfs_quota_us` / `cpu.cfs_period_us` in v1, the
//! tightest of the cgroup and its parents): what a container or a
//! Kubernetes pod with CPU limits may use, not what the host has. It is
//! never below 1. Every pool size in the daemon is derived here, each with
//! a cap, and a command-line setting wins over it; [`Cpus::reason`] says
//! where the count came from, for `nzfs status`.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// FUSE threads, at least and at most: one request each at a time.
const FUSE_THREADS: (usize, usize) = (2, 32);
/// Decode workers (prefetch), at least and at most.
const DECODERS: (usize, usize) = (2, 64);
/// Threads of a remote store's I/O runtime: they move bytes and never
/// decode, so a few serve many requests.
const IO_THREADS: (usize, usize) = (2, 8);

/// The CPUs this process may use, and why that many.
#[derive(Debug, Clone, PartialEq)]
pub struct Cpus {
    /// How many CPUs.
    pub count: usize,
    /// Where the count came from, in words.
    pub reason: String,
}

/// The pool sizes the daemon uses.
#[derive(Debug, Clone, PartialEq)]
pub struct Sizing {
    /// The CPUs counted.
    pub cpus: Cpus,
    /// FUSE worker threads (`--threads`, else from the CPUs).
    pub fuse_threads: usize,
    /// Prefetch decode workers (`--decoders`, else from the CPUs).
    pub decoders: usize,
}

impl Sizing {
    /// Sizes for `cpus`, with the command line's settings where given.
    pub fn new(cpus: Cpus, fuse_threads: Option<usize>, decoders: Option<usize>) -> Sizing {
        let n = cpus.count;
        Sizing {
            fuse_threads: fuse_threads.unwrap_or(n.clamp(FUSE_THREADS.0, FUSE_THREADS.1)),
            decoders: decoders.unwrap_or(n.clamp(DECODERS.0, DECODERS.1)),
            cpus,
        }
    }

    /// Sizes for this machine, nothing overridden.
    pub fn for_machine() -> Sizing {
        Sizing::new(available().clone(), None, None)
    }
}

/// The CPUs this process may use (read once).
pub fn available() -> &'static Cpus {
    static CPUS: OnceLock<Cpus> = OnceLock::new();
    CPUS.get_or_init(|| {
        let cgroups = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        count(affinity(), &cgroups, Path::new("/sys/fs/cgroup"))
    })
}

/// Threads for a remote store's I/O runtime.
pub fn io_threads() -> usize {
    available().count.clamp(IO_THREADS.0, IO_THREADS.1)
}

/// The CPUs in this process's affinity mask.
fn affinity() -> Option<usize> {
    // SAFETY: a zeroed cpu_set_t is a valid empty set, and the kernel
    // writes at most its size.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        (libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) == 0)
            .then(|| libc::CPU_COUNT(&set) as usize)
            .filter(|&n| n > 0)
    }
}

/// The count from an affinity mask's size and the cgroups of
/// `/proc/self/cgroup` (`cgroups`), found under `root`.
pub fn count(affinity: Option<usize>, cgroups: &str, root: &Path) -> Cpus {
    let online = affinity.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let mask = match affinity {
        Some(n) => format!("{n} in the affinity mask"),
        None => format!("{online} online (no affinity mask)"),
    };
    match quota(cgroups, root) {
        Some((cpus, file)) if (cpus.ceil() as usize) < online => Cpus {
            count: (cpus.ceil() as usize).max(1),
            reason: format!("{mask}, a quota of {cpus:.2} in {}", file.display()),
        },
        _ => Cpus {
            count: online.max(1),
            reason: mask,
        },
    }
}

/// The tightest CPU quota (in CPUs) of this process's cgroup and its
/// parents, and the file that set it.
fn quota(cgroups: &str, root: &Path) -> Option<(f64, PathBuf)> {
    let mut best: Option<(f64, PathBuf)> = None;
    let mut consider = |found: Option<(f64, PathBuf)>| {
        if let Some((q, f)) = found
            && best.as_ref().is_none_or(|(b, _)| q < *b)
        {
            best = Some((q, f));
        }
    };
    for line in cgroups.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else {
            continue;
        };
        let relative = path.trim_start_matches('/');
        if controllers.is_empty() {
            // cgroup v2: cpu.max of the group and each parent.
            for dir in ancestors(&root.join(relative), root) {
                let file = dir.join("cpu.max");
                consider(
                    std::fs::read_to_string(&file)
                        .ok()
                        .and_then(|t| cpu_max(&t))
                        .map(|q| (q, file)),
                );
            }
        } else if controllers.split(',').any(|c| c == "cpu") {
            // cgroup v1: the hierarchy is mounted at cpu,cpuacct or cpu.
            for mount in [controllers, "cpu,cpuacct", "cpu"] {
                let base = root.join(mount);
                for dir in ancestors(&base.join(relative), &base) {
                    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
                    let (Some(q), Some(p)) = (read("cpu.cfs_quota_us"), read("cpu.cfs_period_us")) else {
                        continue;
                    };
                    let file = dir.join("cpu.cfs_quota_us");
                    consider(cfs(&q, &p).map(|q| (q, file)));
                }
            }
        }
    }
    best
}

/// `dir` and its parents up to `root`, both included.
fn ancestors(dir: &Path, root: &Path) -> Vec<PathBuf> {
    dir.ancestors()
        .take_while(|d| d.starts_with(root))
        .map(Path::to_path_buf)
        .collect()
}

/// CPUs allowed by a cgroup v2 `cpu.max` ("QUOTA PERIOD", or "max PERIOD"
/// for none).
pub fn cpu_max(text: &str) -> Option<f64> {
    let mut fields = text.split_whitespace();
    let quota = fields.next()?;
    let period = fields.next().unwrap_or("100000");
    cfs(quota, period)
}

/// CPUs allowed by a quota and period in microseconds (a negative quota,
/// or `max`, is none).
fn cfs(quota: &str, period: &str) -> Option<f64> {
    let quota: i64 = quota.trim().parse().ok()?;
    let period: i64 = period.trim().parse().ok()?;
    (quota > 0 && period > 0).then(|| quota as f64 / period as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cgroup_tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let file = dir.path().join(path);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }
        dir
    }

    #[test]
    fn cpu_max_reads_quota_and_period() {
        assert_eq!(cpu_max("max 100000\n"), None);
        assert_eq!(cpu_max("250000 100000\n"), Some(2.5));
        assert_eq!(cpu_max("50000 100000"), Some(0.5));
        assert_eq!(cpu_max("garbage"), None);
        assert_eq!(cpu_max(""), None);
    }

    #[test]
    fn the_affinity_mask_counts_when_no_quota_is_set() {
        let root = cgroup_tree(&[("kubepods/pod1/cpu.max", "max 100000\n")]);
        let cpus = count(Some(6), "0::/kubepods/pod1\n", root.path());
        assert_eq!(cpus.count, 6);
        assert_eq!(cpus.reason, "6 in the affinity mask");
    }

    #[test]
    fn a_cgroup_v2_quota_limits_the_count_and_parents_count_too() {
        // The pod allows 2.5 CPUs; its parent 4: the pod's is the tighter.
        let root = cgroup_tree(&[
            ("kubepods/cpu.max", "400000 100000\n"),
            ("kubepods/pod1/cpu.max", "250000 100000\n"),
            ("kubepods/pod1/c1/cpu.max", "max 100000\n"),
        ]);
        let cpus = count(Some(16), "0::/kubepods/pod1/c1\n", root.path());
        assert_eq!(cpus.count, 3);
        assert!(cpus.reason.contains("a quota of 2.50"), "{}", cpus.reason);
        assert!(cpus.reason.contains("kubepods/pod1/cpu.max"), "{}", cpus.reason);
        // A quota above the mask leaves the mask's count.
        assert_eq!(count(Some(2), "0::/kubepods/pod1/c1\n", root.path()).count, 2);
        // A fraction of a CPU still gets one.
        let small = cgroup_tree(&[("x/cpu.max", "20000 100000\n")]);
        assert_eq!(count(Some(8), "0::/x\n", small.path()).count, 1);
    }

    #[test]
    fn a_cgroup_v1_quota_counts() {
        let root = cgroup_tree(&[
            ("cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "300000\n"),
            ("cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n"),
            ("cpu,cpuacct/cpu.cfs_quota_us", "-1\n"),
            ("cpu,cpuacct/cpu.cfs_period_us", "100000\n"),
        ]);
        let cgroups = "12:memory:/docker/abc\n4:cpu,cpuacct:/docker/abc\n";
        assert_eq!(count(Some(32), cgroups, root.path()).count, 3);
    }

    #[test]
    fn pools_follow_the_count_within_caps_and_settings_win() {
        let cpus = |count| Cpus {
            count,
            reason: String::new(),
        };
        let s = Sizing::new(cpus(16), None, None);
        assert_eq!((s.fuse_threads, s.decoders), (16, 16));
        let s = Sizing::new(cpus(1), None, None);
        assert_eq!((s.fuse_threads, s.decoders), (2, 2));
        let s = Sizing::new(cpus(128), None, None);
        assert_eq!((s.fuse_threads, s.decoders), (32, 64));
        let s = Sizing::new(cpus(16), Some(4), Some(3));
        assert_eq!((s.fuse_threads, s.decoders), (4, 3));
    }

    #[test]
    fn this_machine_has_at_least_one() {
        assert!(available().count >= 1);
    }
}

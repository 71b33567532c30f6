//! The daemon on the machine it runs on: its thread pools follow the CPUs
//! it may use (affinity mask, cgroup quota) unless the command line sizes
//! them, and `nzfs status` says which. Real mounts, as in `tests/mount.rs`.

mod common;

use common::mount::{Mount, nzfs};

/// The daemon sizes its pools from the CPUs it may use: started on one
/// CPU (its affinity mask, as `taskset -c 0` or a cpuset gives it), it
/// runs the smallest pools and `nzfs status` says why; `--threads` and
/// `--decoders` win over the count.
#[test]
fn pools_follow_the_cpus_the_daemon_may_use() {
    let status = |m: &Mount| {
        let out = nzfs(&["status", "--json", m.mp.to_str().unwrap()]);
        nzfs::json::parse(&out.stdout).unwrap()
    };
    let at = |doc: &nzfs::json::Value, a: &str, b: &str| doc.get(a).and_then(|v| v.get(b)).cloned();
    let int = |v: Option<nzfs::json::Value>| v.and_then(|v| v.as_u64());
    // This thread, and the mount it starts, on CPU 0 alone.
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET writes inside it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        assert_eq!(libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set), 0);
    }
    let m = Mount::new("sample.zarr", &[]);
    let doc = status(&m);
    assert_eq!(int(at(&doc, "cpus", "count")), Some(1), "{doc:?}");
    let why = at(&doc, "cpus", "why").and_then(|v| v.as_str().map(str::to_string));
    assert_eq!(why.as_deref(), Some("1 in the affinity mask"));
    assert_eq!(int(at(&doc, "cpus", "fuse_threads")), Some(2));
    assert_eq!(int(at(&doc, "cpus", "decoders")), Some(2));
    assert_eq!(int(at(&doc, "prefetch", "workers")), Some(2));
    drop(m);
    let m = Mount::new("sample.zarr", &["--threads", "3", "--decoders", "5"]);
    let doc = status(&m);
    assert_eq!(int(at(&doc, "cpus", "fuse_threads")), Some(3));
    assert_eq!(int(at(&doc, "cpus", "decoders")), Some(5));
    assert_eq!(int(at(&doc, "prefetch", "workers")), Some(5));
    let threads = std::fs::read_dir(format!("/proc/{}/task", m.daemon_pid()))
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.unwrap().path().join("comm")).ok())
        .filter(|name| name.starts_with("nzfs-prefetch"))
        .count();
    assert_eq!(threads, 5, "prefetch threads running");
}

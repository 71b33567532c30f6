//! How the daemon's process uses memory: glibc's allocation policy
//! ([`tune_allocator`]) and a heap on transparent huge pages
//! ([`huge_page_heap`]). Both are process-wide and set once, before the
//! mount starts; neither changes what any read returns. Both are glibc's:
//! built against another libc (the static musl binary), they do nothing.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Keep decoded-chunk-sized blocks on the heap instead of mapping and
/// unmapping each one: a chunk evicted from the cache is then reused for the
/// next decode without page faults or TLB shootdowns. Measured: it halves
/// the system time of a cold sequential read (`scripts/bench local`).
pub fn tune_allocator() {
    #[cfg(target_env = "gnu")]
    // SAFETY: mallopt only changes glibc's allocation policy.
    unsafe {
        // Up to 16 MiB from the heap, where a freed decode buffer is reused
        // by the next decode without fresh page faults. From 16 MiB on,
        // mmap: fuser's per-thread request buffers (16 MiB + 4 KiB,
        // zeroed) then cost no resident memory until used, where from the
        // heap the zeroing made one resident (16 MiB of RSS at mount).
        libc::mallopt(libc::M_MMAP_THRESHOLD, 16 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
        // One arena: a block freed by one thread is reused by the next
        // decode on any thread, so what the heap keeps stays near the cache
        // budget instead of one budget's worth per thread. Measured on 16
        // cores (`scripts/bench cores`), one arena was as fast as one per
        // four CPUs, or faster, and kept less. MALLOC_ARENA_MAX, where set,
        // wins.
        if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
            libc::mallopt(libc::M_ARENA_MAX, 1);
        }
    }
}

/// The glibc tunable that backs the heap with transparent huge pages.
const HUGE_PAGE_TUNABLE: &str = "glibc.malloc.hugetlb=1";

/// `GLIBC_TUNABLES` with `glibc.malloc.hugetlb=1` added, for this program
/// started again (or a daemon child started with it, which then need not
/// start again); `None` where it is set already, where glibc is not in use,
/// and in a set-id program, whose tunables glibc may erase (no loop).
pub fn huge_page_tunables() -> Option<String> {
    if cfg!(not(target_env = "gnu")) {
        return None;
    }
    let current = std::env::var("GLIBC_TUNABLES").unwrap_or_default();
    // SAFETY: getauxval only reads the auxiliary vector.
    let secure = unsafe { libc::getauxval(libc::AT_SECURE) } != 0;
    if secure || current.contains("glibc.malloc.hugetlb") {
        return None;
    }
    Some(match current.as_str() {
        "" => HUGE_PAGE_TUNABLE.to_string(),
        other => format!("{other}:{HUGE_PAGE_TUNABLE}"),
    })
}

/// Run the daemon with its heap on transparent huge pages: start this
/// program again in place (same pid, arguments and descriptors) with
/// `glibc.malloc.hugetlb=1` added to `GLIBC_TUNABLES`, which glibc reads
/// only at start. Decoded chunks are fresh memory that the cache keeps, and
/// faulting them in 4 KiB pages cost about a sixth of the daemon's CPU on a
/// cold read; in 2 MiB pages it is one fault per 512. Measured
/// (`scripts/bench local` figures, docs/performance.md): cold reads 1.06 -> 1.2 GB/s with two
/// readers. Best effort: a tunable the user set is kept, an older glibc
/// ignores it, and when the exec fails the daemon runs as it is.
pub fn huge_page_heap() {
    let Some(tunables) = huge_page_tunables() else {
        return;
    };
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let e = Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env("GLIBC_TUNABLES", tunables)
        .exec();
    tracing::debug!(error = %e, "running without huge pages: cannot start again with {HUGE_PAGE_TUNABLE}");
}

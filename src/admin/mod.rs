//! Commands about nzfs itself rather than a store: `nzfs status` (asks a
//! live mount with an ioctl of its root, see [`crate::fs::status`]), `nzfs man` (man pages from the clap definitions)
//! and `nzfs completions` (shell completion scripts).
//!
//! Invariant: `status` never hangs on a stuck daemon: the question runs on
//! a thread of its own and is abandoned after [`STATUS_TIMEOUT`].

use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::daemon::CliError;
use crate::fs::status::schema::{Metadata, StatusDoc};
use crate::fs::status::{STATUS_BYTES, STATUS_IOCTL};

mod writes;
pub use writes::{commit, discard, unmount};

/// How long `nzfs status` waits for the mount to answer.
pub const STATUS_TIMEOUT: Duration = Duration::from_secs(10);

/// Ask the mount root at `mp` for its status document.
fn ask(mp: &Path) -> std::io::Result<Vec<u8>> {
    let root = std::fs::File::open(mp)?;
    let mut buf = vec![0u8; STATUS_BYTES];
    // SAFETY: a restricted ioctl: the kernel writes at most the size its
    // number encodes, STATUS_BYTES, which buf holds.
    let n = unsafe { libc::ioctl(root.as_raw_fd(), STATUS_IOCTL as libc::Ioctl, buf.as_mut_ptr()) };
    if n < 0 {
        return Err(std::io::Error::last_os_error());
    }
    buf.truncate((n as usize).min(STATUS_BYTES));
    Ok(buf)
}

/// The status document of the nzfs mount at `mp`, as JSON text.
pub fn query_status(mp: &Path) -> Result<String, CliError> {
    query_status_within(mp, STATUS_TIMEOUT)
}

/// [`query_status`], waiting at most `timeout`.
fn query_status_within(mp: &Path, timeout: Duration) -> Result<String, CliError> {
    let (tx, rx) = std::sync::mpsc::channel();
    let asked = mp.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(ask(&asked));
    });
    let shown = mp.display();
    match rx.recv_timeout(timeout) {
        Err(_) => Err(CliError::new(format!(
            "{shown}: the mount did not answer within {} s (its daemon is busy or stuck; see its log)",
            timeout.as_secs()
        ))),
        Ok(Ok(bytes)) => {
            String::from_utf8(bytes).map_err(|_| CliError::new(format!("{shown}: the status is not UTF-8")))
        }
        Ok(Err(e)) => Err(CliError::new(match e.raw_os_error() {
            Some(libc::ENOTCONN) => {
                format!("{shown}: the mount's daemon is gone (stale mount; `nzfs unmount {shown}` clears it)")
            }
            Some(libc::ENOTTY) | Some(libc::EINVAL) if !crate::daemon::is_mount_point(mp) => {
                match crate::mounts::nzfs_mount_around(mp) {
                    Some(m) => format!(
                        "{shown} is inside the nzfs mount {}, not its root: ask `nzfs status {}`",
                        m.point.display(),
                        m.point.display()
                    ),
                    None => format!("{shown} is not a mount point"),
                }
            }
            Some(libc::ENOTTY) | Some(libc::EINVAL) => format!("{shown} is not an nzfs mount"),
            _ => format!("{shown}: {e}"),
        })),
    }
}

/// `nzfs status` with no mount point: the live nzfs mounts, one a line
/// (mount point, then store), or as JSON `[{"mountpoint", "store"}]`;
/// a note on stderr when there is none.
pub fn list_mounts(as_json: bool) -> Result<(), CliError> {
    let mounts: Vec<_> = crate::mounts::table()
        .into_iter()
        .filter(|m| m.fstype == "fuse.nzfs")
        .collect();
    let store = |m: &crate::mounts::Mounted| m.source.strip_prefix("nzfs:").unwrap_or(&m.source).to_string();
    if as_json {
        let items: Vec<String> = mounts
            .iter()
            .map(|m| {
                format!(
                    "{{\"mountpoint\":{},\"store\":{}}}",
                    crate::json::Value::Str(m.point.to_string_lossy().into_owned()),
                    crate::json::Value::Str(store(m))
                )
            })
            .collect();
        println!("[{}]", items.join(","));
        return Ok(());
    }
    if mounts.is_empty() {
        eprintln!("nzfs: no nzfs mount is live (nzfs mount STORE MOUNTPOINT makes one)");
    }
    for m in &mounts {
        println!(
            "{}  {}",
            crate::naming::escaped(&m.point.to_string_lossy()),
            crate::naming::escaped(&store(m))
        );
    }
    Ok(())
}

/// `nzfs status`: print the document, or a summary of it.
pub fn status(mp: &Path, as_json: bool) -> Result<(), CliError> {
    let text = query_status(mp)?;
    if as_json {
        println!("{text}");
        return Ok(());
    }
    let doc =
        StatusDoc::parse(text.as_bytes()).map_err(|e| CliError::new(format!("{}: bad status: {e}", mp.display())))?;
    print!("{}", render_status(&mp.display().to_string(), &doc, SystemTime::now()));
    Ok(())
}

fn size(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

fn duration(secs: f64) -> String {
    let s = secs.max(0.0) as u64;
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m {}s", s / 60, s % 60),
        3600..86400 => format!("{}h {}m", s / 3600, s / 60 % 60),
        _ => format!("{}d {}h", s / 86400, s / 3600 % 24),
    }
}

/// The `metadata` line of `nzfs status`: whether the mount follows its
/// store's metadata, and what its looks found.
fn metadata_line(meta: &Metadata, now: SystemTime) -> String {
    if !meta.followed {
        return "read once at the mount (not followed)".to_string();
    }
    let ago = |t: Option<u64>| match t {
        None => "never".to_string(),
        Some(t) => {
            let then = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(t);
            format!(
                "{} ago",
                duration(now.duration_since(then).map_or(0.0, |d| d.as_secs_f64()))
            )
        }
    };
    let mut line = format!(
        "looked at every {}s while used: {} ({} looks), last looked {}, last changed {}",
        meta.interval_s,
        match meta.version {
            0 => "as mounted".to_string(),
            v => format!("{} since the mount", crate::naming::count(v, "change")),
        },
        meta.looks,
        ago(meta.last_checked),
        ago(meta.last_changed),
    );
    if meta.retired > 0 {
        line += &format!(
            "; {} kept for files open since",
            crate::naming::count(meta.retired, "older version")
        );
    }
    if meta.failed {
        line += "; the last look could not read the store again (the log says why)";
    }
    line
}

/// The human-readable form of a status document.
pub fn render_status(mp: &str, doc: &StatusDoc, now: SystemTime) -> String {
    let mut out = format!("nzfs mount {mp}\n");
    out += &format!("  store        {}\n", doc.store);
    out += &format!(
        "  daemon       pid {}, up {}, nzfs {}\n",
        doc.pid,
        duration(doc.uptime_s),
        doc.version
    );
    let cache = &doc.cache;
    let rate = cache.hit_rate.map_or("-".to_string(), |r| format!("{:.1}%", r * 100.0));
    out += &format!(
        "  cache        {} of {} used, hit rate {rate} ({} hits, {} decodes)\n",
        size(cache.used_bytes),
        size(cache.budget_bytes),
        cache.hits + cache.waits,
        cache.decodes,
    );
    out += &format!(
        "  chunks       {} decoded, {} left to the page cache after a whole read\n",
        doc.chunks_decoded, cache.released_whole_reads,
    );
    let reads = doc.store_reads.clone().unwrap_or_default();
    out += &format!(
        "  store reads  {} requests, {} read, {} failed, {} in flight (of {} at once)\n",
        reads.requests,
        size(reads.bytes),
        reads.failures,
        reads.in_flight,
        reads.concurrency,
    );
    if let Some(d) = &doc.disk_cache {
        out += &format!(
            "  disk cache   {} hits ({}), {} misses, {} stats answered; {} of {} used\n",
            d.hits,
            size(d.hit_bytes),
            d.misses,
            d.stat_hits,
            d.used_bytes.map_or("?".to_string(), size),
            size(d.budget_bytes),
        );
    }
    let prefetch = doc.prefetch.clone().unwrap_or_default();
    out += &format!(
        "  prefetch     {} queued, {} done ({} workers)\n",
        prefetch.queued, prefetch.done, prefetch.workers,
    );
    let cpus = &doc.cpus;
    out += &format!(
        "  cpus         {} ({}): {} FUSE threads, {} decoders\n",
        cpus.count, cpus.why, cpus.fuse_threads, cpus.decoders,
    );
    let pt = &doc.passthrough;
    out += &format!(
        "  passthrough  {}\n",
        if pt.on {
            format!(
                "on, {}, {}",
                crate::naming::count(pt.backings, "backing file"),
                size(pt.backing_bytes)
            )
        } else {
            "off".to_string()
        }
    );
    out += &format!(
        "  opens        {}{}\n",
        crate::naming::count(doc.opens.requests, "open request"),
        if doc.opens.by_kernel {
            " (then the kernel opens files itself)"
        } else {
            ""
        }
    );
    out += &format!(
        "  names        {}, {} listed with attributes{}\n",
        crate::naming::count(doc.names.lookups, "lookup"),
        doc.names.listed_with_attributes,
        if doc.names.readdirplus {
            ""
        } else {
            " (the kernel lists names only)"
        }
    );
    out += &format!("  metadata     {}\n", metadata_line(&doc.metadata, now));
    let secs = now.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    if let Some(w) = &doc.writes {
        out += &format!(
            "  writes       {} ({} failed), {} staged ({} of {})\n",
            crate::naming::count(w.commits_made, "commit"),
            w.commits_failed,
            crate::naming::count(w.staged, "file"),
            size(w.staged_bytes),
            size(w.limit_bytes),
        );
        for c in &w.commits {
            out += &format!(
                "    {} ago  {}  {}\n",
                duration(secs.saturating_sub(c.time) as f64),
                c.snapshot,
                c.message
            );
        }
        for f in &w.failures {
            out += &format!(
                "    {} ago  FAILED  {}: {}\n",
                duration(secs.saturating_sub(f.time) as f64),
                f.message,
                f.reason
            );
        }
        for k in &w.kept {
            out += &format!("    kept {} ({}): {}\n", k.path, size(k.bytes), k.why);
        }
        if !w.held.is_empty() {
            out += &format!(
                "    held for nzfs commit: {}: {}\n",
                writes::counted(&w.held),
                w.held.join(", ")
            );
        }
    }
    let kinds: Vec<String> = doc.errors.by_kind.iter().map(|(k, n)| format!("{k} {n}")).collect();
    out += &format!("  errors       {}", doc.errors.total);
    if !kinds.is_empty() {
        out += &format!(" ({})", kinds.join(", "));
    }
    out += "\n";
    let now = now.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    for e in &doc.errors.recent {
        out += &format!(
            "    {} ago  {}: {}\n",
            duration(now.saturating_sub(e.time) as f64),
            e.kind,
            e.message
        );
    }
    out
}

/// Bytes that every nzfs binary holds (they are this constant), by which
/// `install-helper` knows an earlier copy of nzfs at `PREFIX/bin/nzfs`.
const HELPER_MARK: &[u8] = b"nzfs install-helper: this binary is nzfs";

/// Whether `path` is what an earlier `install-helper` put there: a copy
/// of some nzfs (it holds [`HELPER_MARK`]) or, as older versions made it,
/// a link to this one.
fn installed_by_us(path: &Path, exe: &Path) -> bool {
    let Ok(meta) = path.symlink_metadata() else {
        return false;
    };
    if meta.file_type().is_symlink() {
        return std::fs::read_link(path)
            .ok()
            .and_then(|t| path.parent().unwrap_or(path).join(t).canonicalize().ok())
            .is_some_and(|t| t == exe);
    }
    meta.file_type().is_file()
        && std::fs::read(path).is_ok_and(|bytes| bytes.windows(HELPER_MARK.len()).any(|w| w == HELPER_MARK))
}

/// Refuse a directory that someone other than this user (or root) could
/// change: a file root installs there could be replaced after the fact.
fn check_install_dir(dir: &Path) -> Result<(), CliError> {
    let meta = std::fs::metadata(dir).map_err(|e| CliError::new(format!("{}: {e}", dir.display())))?;
    match crate::owned::not_yours_alone(&meta, true) {
        Some(why) => Err(CliError::new(format!(
            "{} {why}: a file installed there could be replaced; make it root's alone (chmod go-w), \
             or choose another --prefix",
            dir.display()
        ))),
        None => Ok(()),
    }
}

/// Write `bytes` to `dir/name` as a new file of this user's with `mode`,
/// through a fresh temporary file renamed over the name: whatever was at
/// the name, a link included, is replaced, never written through.
fn install_file(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> std::io::Result<std::path::PathBuf> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let path = dir.join(name);
    let tmp = dir.join(format!(".{name}.nzfs-install.{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.set_permissions(std::fs::Permissions::from_mode(mode))?;
        f.sync_all()?;
        std::fs::rename(&tmp, &path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.map(|()| path)
}

/// `nzfs install-helper`: install a copy of this binary as
/// `PREFIX/bin/nzfs` (where mount(8)'s fixed PATH finds it), owned by who
/// runs it, and write the man pages to `PREFIX/share/man/man1`; with
/// `remove`, undo that. A copy, not a link: root's mount(8), fstab and
/// systemd would otherwise run a file that a pip or venv install leaves
/// to its user. A `PREFIX/bin/nzfs` that is not an nzfs is never touched,
/// and nothing is written through a link.
pub fn install_helper(prefix: &Path, remove: bool) -> Result<(), CliError> {
    let exe = std::env::current_exe()
        .and_then(|p| p.canonicalize())
        .map_err(|e| CliError::new(format!("cannot tell where this nzfs is: {e}")))?;
    let bin = prefix.join("bin");
    let target = bin.join("nzfs");
    let man = prefix.join("share/man/man1");
    let ours = installed_by_us(&target, &exe);
    let denied = |what: &Path, e: std::io::Error| {
        let hint = match e.kind() {
            std::io::ErrorKind::PermissionDenied => format!("; run it as root: sudo {} install-helper", exe.display()),
            _ => String::new(),
        };
        CliError::new(format!("{}: {e}{hint}", what.display()))
    };
    if remove {
        if ours {
            std::fs::remove_file(&target).map_err(|e| denied(&target, e))?;
            println!("nzfs: removed {}", target.display());
        } else if target.symlink_metadata().is_ok() {
            return Err(CliError::new(format!(
                "{} is not an nzfs that install-helper put there: left alone",
                target.display()
            )));
        }
        for page in man_pages() {
            let path = man.join(format!("{}.1", page.0));
            if std::fs::remove_file(&path).is_ok() {
                println!("nzfs: removed {}", path.display());
            }
        }
        return Ok(());
    }
    if !ours && target.symlink_metadata().is_ok() {
        return Err(CliError::new(format!(
            "{} exists and is not an nzfs that install-helper put there: remove it first, or choose another --prefix",
            target.display()
        )));
    }
    std::fs::create_dir_all(&bin).map_err(|e| denied(&bin, e))?;
    check_install_dir(&bin)?;
    let binary = std::fs::read(&exe).map_err(|e| denied(&exe, e))?;
    install_file(&bin, "nzfs", &binary, 0o755).map_err(|e| denied(&target, e))?;
    println!(
        "nzfs: installed a copy of {} as {}: mount(8), /etc/fstab lines of type fuse.nzfs and systemd mount \
         units run `nzfs` from a fixed PATH, which finds it there (run this again after upgrading nzfs)",
        exe.display(),
        target.display()
    );
    std::fs::create_dir_all(&man).map_err(|e| denied(&man, e))?;
    check_install_dir(&man)?;
    for (name, cmd) in man_pages() {
        let mut out = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut out)?;
        install_file(&man, &format!("{name}.1"), &out, 0o644).map_err(|e| denied(&man.join(&name), e))?;
    }
    println!(
        "nzfs: wrote the man pages to {} (`man nzfs`; `mandb -q` indexes them for apropos)",
        man.display()
    );
    Ok(())
}

/// The man pages: `nzfs` and `nzfs-<subcommand>`, with their commands.
fn man_pages() -> Vec<(String, clap::Command)> {
    let top = crate::cli::command();
    let mut pages = vec![("nzfs".to_string(), top.clone())];
    for sub in top.get_subcommands() {
        let name = format!("nzfs-{}", sub.get_name());
        let synopsis = format!("nzfs {}", sub.get_name());
        pages.push((name.clone(), sub.clone().name(name).bin_name(synopsis)));
    }
    pages
}

/// `nzfs man DIR`: nzfs.1 and `nzfs-<subcommand>.1`.
pub fn write_man_pages(dir: &Path) -> Result<(), CliError> {
    std::fs::create_dir_all(dir).map_err(|e| CliError::new(format!("{}: {e}", dir.display())))?;
    for (name, cmd) in man_pages() {
        let mut out = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut out)?;
        let path = dir.join(format!("{name}.1"));
        std::fs::write(&path, out).map_err(|e| CliError::new(format!("{}: {e}", path.display())))?;
        println!("{}", path.display());
    }
    Ok(())
}

/// `nzfs completions SHELL`.
pub fn print_completions(shell: clap_complete::Shell) {
    clap_complete::generate(shell, &mut crate::cli::command(), "nzfs", &mut std::io::stdout());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_text_shows_every_part() {
        let doc = StatusDoc::parse(
            br#"{"version":"0.1.0","pid":42,"store":"/d.zarr","uptime_s":3725.0,
            "cache":{"budget_bytes":536870912,"used_bytes":1048576,"hits":9,"waits":1,"decodes":10,"hit_rate":0.5,"released_whole_reads":6},
            "chunks_decoded":10,
            "store_reads":{"requests":12,"bytes":2048,"lookups":3,"failures":1,"in_flight":2,"concurrency":16},
            "prefetch":{"workers":16,"queued":5,"done":4},
            "disk_cache":{"hits":7,"hit_bytes":3145728,"misses":2,"stat_hits":1,"used_bytes":4194304,"budget_bytes":1073741824},
            "cpus":{"count":4,"why":"16 in the affinity mask, a quota of 3.50 in /sys/fs/cgroup/cpu.max","fuse_threads":4,"decoders":4},
            "errors":{"total":3,"by_kind":{"decode":2,"store":1},
              "recent":[{"time":1000,"kind":"decode","message":"store key t2m/c/0: bad crc"}]},
            "passthrough":{"on":false,"backings":0,"backing_bytes":0},
            "opens":{"by_kernel":true,"requests":1},
            "names":{"readdirplus":true,"lookups":3,"listed_with_attributes":120},
            "metadata":{"followed":true,"interval_s":60,"version":2,"looks":37,"last_checked":1080,"last_changed":990,"failed":true},
            "writes":{"staged":1,"staged_bytes":2048,"limit_bytes":1073741824,"commits_made":2,"commits_failed":1,
              "commits":[{"time":1085,"snapshot":"FBP04222ZMZHX5WZ5Q6G","message":"t2m/data.bin written through nzfs by dd (pid 7) as ann (uid 1000)"}]}}"#,
        )
        .unwrap();
        let text = render_status("/mnt/nz", &doc, SystemTime::UNIX_EPOCH + Duration::from_secs(1090));
        for want in [
            "nzfs mount /mnt/nz",
            "store        /d.zarr",
            "pid 42, up 1h 2m, nzfs 0.1.0",
            "1.0 MiB of 512.0 MiB used, hit rate 50.0% (10 hits, 10 decodes)",
            "10 decoded, 6 left to the page cache after a whole read",
            "12 requests, 2.0 KiB read, 1 failed, 2 in flight (of 16 at once)",
            "5 queued, 4 done (16 workers)",
            "disk cache   7 hits (3.0 MiB), 2 misses, 1 stats answered; 4.0 MiB of 1.0 GiB used",
            "cpus         4 (16 in the affinity mask, a quota of 3.50 in /sys/fs/cgroup/cpu.max): 4 FUSE threads, 4 decoders",
            "passthrough  off",
            "opens        1 open request (then the kernel opens files itself)",
            "names        3 lookups, 120 listed with attributes\n",
            "errors       3 (decode 2, store 1)",
            "writes       2 commits (1 failed), 1 file staged (2.0 KiB of 1.0 GiB)",
            "5s ago  FBP04222ZMZHX5WZ5Q6G  t2m/data.bin written through nzfs by dd (pid 7) as ann (uid 1000)",
            "1m 30s ago  decode: store key t2m/c/0: bad crc",
            "metadata     looked at every 60s while used: 2 changes since the mount (37 looks), last looked 10s ago, \
             last changed 1m 40s ago; the last look could not read the store again (the log says why)",
        ] {
            assert!(text.contains(want), "{want:?} missing from\n{text}");
        }
        let frozen = StatusDoc::parse(br#"{"metadata":{"followed":false}}"#).unwrap();
        let text = render_status("/mnt/nz", &frozen, SystemTime::UNIX_EPOCH);
        assert!(
            text.contains("metadata     read once at the mount (not followed)"),
            "{text}"
        );
    }
}

//! Mounting, daemonizing and unmounting.
//!
//! `nzfs mount` checks its inputs into a [`MountConfig`], then starts itself
//! again as a detached daemon child (`--daemon-child`), whose stdin carries
//! that config (the child parses no command line) and whose stderr is a
//! pipe. The child opens
//! the store, mounts (fuser's `Session::new` returns after the kernel's INIT
//! handshake, so the mount is live), writes [`READY`] on that pipe and moves
//! its stderr to the log file. The parent relays any error line and exits 0
//! only on [`READY`]. SIGINT, SIGTERM, SIGHUP and SIGQUIT unmount cleanly;
//! SIGUSR1, SIGUSR2 and SIGALRM are ignored.

use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use fuser::Config;

use crate::cli::{MetadataTtl, MountArgs};
use crate::zarr::documents::ZARR_JSON;

mod checks;
mod config;
mod log;
mod options;
mod signals;
use crate::fs::{FsConfig, NzFs};
use crate::fuse::FuseAdapter;
use checks::{check_built, check_dev_fuse, check_fusermount, check_mountpoint, check_outside_store, check_swapped};
pub use config::{MAX_ENCODED, MountConfig};
pub use options::{Access, MountPlan};
use signals::{block_termination_signals, wait_for_termination_signal};

use log::prune_logs;
pub use log::{RotatingLog, default_log_file};

/// The line a daemon child prints once its mount is live.
pub const READY: &str = "nzfs: mount is live";
/// How the daemon starts a line `nzfs mount` shows the user once mounted.
const NOTE: &str = "nzfs: note: ";

pub use crate::cli::CliError;
pub use crate::open::{Opened, open, open_dataset, shown_store};

fn fail<T>(msg: impl Into<String>) -> Result<T, CliError> {
    Err(CliError::new(msg.into()))
}

/// The dataset's name: the store directory's name without `.zarr`.
pub fn dataset_name(store: &Path) -> String {
    let text = store.to_string_lossy();
    let base = if crate::store::is_url(&text) {
        // A URL: its last path segment, without any query string.
        let path = text.split(['?', '#']).next().unwrap_or_default().trim_end_matches('/');
        path.rsplit('/')
            .next()
            .filter(|s| !s.is_empty() && !s.contains(':'))
            .map(str::to_string)
    } else {
        store
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
    };
    let mut base = base.unwrap_or_else(|| "dataset".into());
    // A reference set's compression, then its format, then the store's,
    // then OME-Zarr's `.ome` (`cells.ome.zarr` is `cells`: its OME-TIFF is
    // `cells.ome.tif`, not `cells.ome.ome.tif`).
    for suffix in [".gz", ".zst", ".json", ".parq", ".parquet", ".zip", ".zarr", ".ome"] {
        if let Some(b) = base.strip_suffix(suffix).filter(|b| !b.is_empty()) {
            base = b.to_string();
        }
    }
    base
}

/// Whether `mp` is a FUSE mount whose daemon is gone ("Transport endpoint
/// is not connected"). Listing is asked, not `stat`: the kernel may still
/// answer `stat` from its attribute cache.
pub fn is_stale(mp: &Path) -> bool {
    let enotconn = |e: &std::io::Error| e.raw_os_error() == Some(libc::ENOTCONN);
    match std::fs::metadata(mp) {
        Err(e) => enotconn(&e),
        Ok(_) => is_mount_point(mp) && std::fs::read_dir(mp).is_err_and(|e| enotconn(&e)),
    }
}

/// Whether `path` is a mount point (per /proc/self/mountinfo).
pub fn is_mount_point(path: &Path) -> bool {
    let Ok(canon) = path.canonicalize().or_else(|_| std::path::absolute(path)) else {
        return false;
    };
    crate::mounts::at(&canon).is_some()
}

/// The environment variable that carries a store location holding a
/// secret (`https://user:password@host/…`, a pre-signed URL) to `nzfs
/// mount` (the CSI plugin starts mounts so), so that argv, which every user
/// may read in `/proc/PID/cmdline`, holds only its redacted form.
pub const STORE_ENV: &str = "NZFS_STORE_URL";

/// Take the store from [`STORE_ENV`] when the command line names it by its
/// redacted form (as the daemon and the CSI plugin's mounts are started).
pub fn store_from_environment(args: &mut MountArgs) {
    if let Ok(full) = std::env::var(STORE_ENV) {
        if crate::store::redact_url(&full) == args.store.to_string_lossy() {
            args.store = full.into();
        }
        // SAFETY: called before any thread starts.
        unsafe { std::env::remove_var(STORE_ENV) };
    }
}

/// `nzfs mount` in the parent: check, start the daemon, hand it its
/// settings, wait for it.
pub fn mount_background(mut config: MountConfig, log_file: &Path) -> Result<(), CliError> {
    check_built(&config.store)?;
    check_outside_store(&config.store, &config.mountpoint)?;
    check_swapped(&config.store, &config.mountpoint)?;
    check_mountpoint(&config.mountpoint, config.mount.nonempty)?;
    check_dev_fuse()?;
    check_fusermount()?;
    crate::open::check_version(&config.store_args.source(&config.store)?)?;
    if let Some(dir) = log_file.parent() {
        if log::default_log_dir().is_ok_and(|d| d == dir) {
            log::own_log_dir(dir)?;
            prune_logs(dir, log_file);
        } else {
            std::fs::create_dir_all(dir).map_err(|e| CliError::new(format!("log directory {}: {e}", dir.display())))?;
        }
    }
    // Refused here, with the reason, rather than by the daemon's first line.
    log::open_log(log_file).map_err(|e| CliError::new(format!("log file {}: {e}", log_file.display())))?;
    config.log_file = Some(log_file.to_path_buf());
    // The daemon's argv names its mount for `ps` and nothing else: every
    // setting, the store's secrets and the store options included, reaches
    // it on its stdin.
    let mut cmd = Command::new(std::env::current_exe()?);
    cmd.args(["mount", "--daemon-child", "--"])
        .arg(config.shown_store())
        .arg(&config.mountpoint)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // Its heap on huge pages from the start, so that it need not start
    // itself again (its settings on stdin would be gone).
    if let Some(tunables) = crate::memory::huge_page_tunables() {
        cmd.env("GLIBC_TUNABLES", tunables);
    }
    // SAFETY: setsid is async-signal-safe; it detaches the daemon from the
    // terminal so the shell's Ctrl-C and hang-up do not reach it.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = cmd.spawn()?;
    {
        use std::io::Write;
        // Dropped at the end of this block: the child reads to EOF.
        let mut stdin = child.stdin.take().expect("piped");
        // A child that died at once shows its own error below.
        let _ = stdin.write_all(&config.encode());
    }
    let stderr = child.stderr.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = Vec::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line == READY {
                let notes: Vec<String> = lines.into_iter().filter(|l: &String| l.starts_with(NOTE)).collect();
                let _ = tx.send(Ok(notes));
                return;
            }
            lines.push(line);
        }
        let _ = tx.send(Err(lines));
    });
    match rx.recv_timeout(Duration::from_secs(120)) {
        Ok(Ok(notes)) => {
            println!(
                "nzfs: mounted {} at {} (daemon pid {}, log {})",
                config.shown_store(),
                config.mountpoint.display(),
                child.id(),
                log_file.display()
            );
            for note in notes {
                eprintln!("{note}");
            }
            Ok(())
        }
        Ok(Err(lines)) => {
            // The daemon's exit status is the mount's (a store not there,
            // a usage error), so that a caller can tell them apart.
            let code = child
                .wait()
                .ok()
                .and_then(|s| s.code())
                .and_then(|c| u8::try_from(c).ok())
                .filter(|&c| c != 0)
                .unwrap_or(1);
            let msg = lines
                .iter()
                .rev()
                .find(|l| l.starts_with("nzfs:") || l.starts_with("error:"))
                .or_else(|| lines.iter().rev().find(|l| !l.trim().is_empty()))
                .map(|l| l.trim_start_matches("nzfs: ").to_string())
                .unwrap_or_default();
            let msg = if msg.is_empty() {
                "the daemon exited before the mount was live".to_string()
            } else {
                msg
            };
            Err(CliError::new(msg).with_code(code))
        }
        Err(_) => {
            let _ = child.kill();
            fail(format!(
                "the mount did not become live within 120 s (see {})",
                log_file.display()
            ))
        }
    }
}

/// How [`serve`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Serving {
    /// `nzfs mount -f`: this process checks the mount point, and logs to
    /// stderr.
    Foreground,
    /// The daemon child of a `nzfs mount`, which checked the mount point:
    /// it says [`READY`] on stderr once the mount is live, then logs to
    /// its log file.
    DaemonChild,
}

/// Serve the mount in this process until it is unmounted or signalled.
pub fn serve(config: &MountConfig, serving: Serving) -> Result<(), CliError> {
    let daemon_child = serving == Serving::DaemonChild;
    // A daemon child was started with it (starting again would lose the
    // settings read from its stdin).
    if !daemon_child {
        crate::memory::huge_page_heap();
    }
    if !daemon_child {
        check_built(&config.store)?;
        check_outside_store(&config.store, &config.mountpoint)?;
        check_swapped(&config.store, &config.mountpoint)?;
        check_mountpoint(&config.mountpoint, config.mount.nonempty)?;
        check_dev_fuse()?;
        check_fusermount()?;
    }
    crate::memory::tune_allocator();
    let source = config.store_args.source(&config.store)?;
    let opened = open(&source)?;
    let spool = match config.mount.writable {
        true => {
            let mut spool = crate::open::writable_spool(&source, &opened, &config.spool_dir, config.spool_size)?;
            if config.mount.explicit_commit {
                spool.hold_until_commit();
            }
            Some(std::sync::Arc::new(spool))
        }
        false => None,
    };
    let follow = match (config.metadata_ttl, opened.follows.clone()) {
        (Some(MetadataTtl::Never), _) | (None, None) => None,
        (Some(MetadataTtl::Every(secs)), Some((_, how))) => Some((Duration::from_secs(secs.into()), how)),
        (None, Some(follows)) => Some(follows),
        (Some(MetadataTtl::Every(_)), None) => {
            tracing::warn!(
                "--metadata-ttl: this store (a pinned Icechunk version) is read once; its metadata is not looked at again"
            );
            None
        }
    };
    let mtime = std::fs::metadata(config.store.join(ZARR_JSON))
        .or_else(|_| std::fs::metadata(&config.store))
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH);
    // SAFETY: getuid/getgid cannot fail.
    let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
    let sizing = crate::cpus::Sizing::new(
        crate::cpus::available().clone(),
        config.threads.map(usize::from),
        config.decoders.map(usize::from),
    );
    tracing::info!(
        cpus = sizing.cpus.count,
        why = %sizing.cpus.reason,
        fuse_threads = sizing.fuse_threads,
        decoders = sizing.decoders,
        "sized to the CPUs this process may use"
    );
    let fs_config = FsConfig {
        cache_bytes: config.cache_bytes,
        missing_chunks: config.missing_chunks.into(),
        dataset_name: dataset_name(&config.store),
        uid,
        gid,
        mtime,
        versions: opened.versions,
        ownership: config.mount.ownership,
        previews: config.previews,
        tiff: config.tiff,
        prefetch: config.prefetch,
        nc_format: config.nc_format.into(),
        sizing: sizing.clone(),
        store_name: opened.shown,
        // Object storage's chunks are checked as often as its metadata.
        remote_recheck: follow.as_ref().map(|(every, _)| *every),
    };
    let fs = NzFs::new(opened.store, opened.hierarchy, fs_config).map_err(|e| CliError::new(e.to_string()))?;
    // Non-conformant stores still mount; say once what `nzfs check` would.
    let report = crate::nz::check(fs.dataset(), crate::nz::Scope::METADATA, &mut |_, _| {});
    if !report.declared() {
        // A plain Zarr store: nothing to warn about.
        tracing::info!("the store does not declare NZ-1.0: its netCDF views follow Zarr's metadata as it is");
    } else if !report.findings.is_empty() {
        let first = report
            .findings
            .first()
            .map(|f| format!("{} {}: {}", f.path, f.rule, f.found))
            .unwrap_or_default();
        tracing::warn!(
            errors = report.errors(),
            warnings = report.warnings(),
            first = %first,
            "the store declares NZ-1.0 but does not fully follow it; it is mounted anyway (details: nzfs check {})",
            config.shown_store()
        );
    }
    let mut fuse_config = Config::default();
    fuse_config.mount_options = config.mount.fuse_options();
    fuse_config.acl = config.mount.session_acl();
    fuse_config.n_threads = Some(sizing.fuse_threads);
    fuse_config.clone_fd = sizing.fuse_threads > 1;

    let mountpoint = config.mountpoint.canonicalize()?;
    block_termination_signals();
    let passthrough = crate::fuse::Passthrough::from(config.passthrough);
    match &follow {
        Some((every, _)) => tracing::info!(
            every_s = every.as_secs(),
            "the store's metadata is looked at again while the mount is used (--metadata-ttl)"
        ),
        None => tracing::info!("the store's metadata was read once and is served as it was"),
    }
    let mut adapter = FuseAdapter::new(fs, passthrough).following(follow);
    if let Some(spool) = spool {
        tracing::info!(spool = %config.spool_dir.display(), "writable: a NAME.nc closed in a group's directory becomes the group NAME, one commit each");
        adapter = adapter.writable(spool);
    }
    let notifier = adapter.notifier_slot();
    let mut session = fuser::Session::new(adapter, &mountpoint, &fuse_config)
        .map_err(|e| CliError::new(format!("cannot mount on {}: {e}", config.mountpoint.display())))?;
    let _ = notifier.set(std::sync::Arc::new(session.notifier()));
    let mut unmounter = session.unmount_callable();
    // After INIT (done by Session::new), which sets the mount's readahead.
    raise_readahead(&mountpoint);
    // A daemon must not keep the directory it was started from busy.
    if daemon_child {
        let _ = std::env::set_current_dir("/");
    }
    let signal_mountpoint = mountpoint.clone();
    std::thread::Builder::new().name("nzfs-signals".into()).spawn(move || {
        let sig = wait_for_termination_signal();
        tracing::info!(signal = sig, "unmounting on signal");
        STOPPING.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Err(e) = unmounter.unmount() {
            tracing::warn!(error = %e, "unmount failed; detaching lazily");
            let _ = lazy_unmount(&signal_mountpoint);
        }
    })?;
    tracing::info!(store = %config.shown_store(), mountpoint = %config.mountpoint.display(), "mount is live");
    if daemon_child {
        announce_ready_and_detach_stderr(config.log_file.as_deref());
    }
    // The session runs on a thread of its own, so that a worker blocked in
    // the store (a dead NFS server) cannot keep this process alive: fuser
    // joins every worker before `run` returns.
    let (done_tx, done) = std::sync::mpsc::channel();
    std::thread::Builder::new().name("nzfs-session".into()).spawn(move || {
        let _ = done_tx.send(session.run());
    })?;
    wait_for_session(&done, &mountpoint)?;
    tracing::info!("unmounted; exiting");
    Ok(())
}

/// Wait until the session ends. Once the mount is gone (perhaps lazily,
/// with files still open) or a termination signal arrived, give it
/// [`ABANDON_AFTER`]; if it still runs, and a signal asked to stop or a store
/// read is stuck, log the abandoned reads and exit the process.
fn wait_for_session(done: &std::sync::mpsc::Receiver<std::io::Result<()>>, mountpoint: &Path) -> Result<(), CliError> {
    let mut ending_since: Option<std::time::Instant> = None;
    loop {
        match done.recv_timeout(Duration::from_millis(250)) {
            Ok(result) => return result.map_err(CliError::from),
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Ok(()),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
        }
        let stopping = STOPPING.load(std::sync::atomic::Ordering::SeqCst);
        // The mount table only: a `stat` of the mount point would be a
        // request to this very process, and one caught by SIGKILL while its
        // answer is pending leaves the process unkillable (a thread waits
        // for itself), with the mount hung instead of stale.
        if !stopping && crate::mounts::at(mountpoint).is_some() {
            ending_since = None;
            continue;
        }
        // Unmounted (perhaps lazily, with files still open) or told to stop.
        let since = *ending_since.get_or_insert_with(std::time::Instant::now);
        let stuck = crate::store::inflight::older_than(ABANDON_AFTER);
        if since.elapsed() >= ABANDON_AFTER && (stopping || !stuck.is_empty()) {
            for (key, waited) in &stuck {
                tracing::warn!(key = %key, waited_s = waited.as_secs(), "abandoning a store read that never returned");
            }
            match stuck.len() {
                0 => tracing::warn!(
                    "the FUSE session did not end within {} s of the unmount or signal (no store read was \
                     pending: a request of the kernel's was); exiting anyway",
                    ABANDON_AFTER.as_secs()
                ),
                n => tracing::warn!(
                    stuck_reads = n,
                    "the FUSE session did not end: {n} store reads never returned (each logged above); exiting anyway"
                ),
            }
            release_fuse_connection();
            std::process::exit(0);
        }
    }
}

/// Close this process's `/dev/fuse` descriptors. A thread stuck for good
/// in the store (waiting uninterruptibly on a dead server) keeps the whole
/// descriptor table alive after `exit`, and with it the FUSE connection, so
/// readers of the mount would stay blocked. Closing the descriptors
/// explicitly lets the kernel abort the connection (when the last one is
/// released) and fail those readers with `ENOTCONN` at once.
fn release_fuse_connection() {
    let Ok(entries) = std::fs::read_dir("/proc/self/fd") else {
        return;
    };
    let fds: Vec<i32> = entries
        .filter_map(Result::ok)
        .filter(|e| std::fs::read_link(e.path()).is_ok_and(|t| t == Path::new("/dev/fuse")))
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
        .collect();
    for fd in fds {
        // SAFETY: the process exits right after; nothing uses these again.
        unsafe { libc::close(fd) };
    }
}

/// How long a stopping daemon waits for its session to end, and how old a
/// store read must be to count as stuck.
const ABANDON_AFTER: Duration = Duration::from_secs(2);

/// Set once a termination signal arrived.
static STOPPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Ask the kernel for 1 MiB readahead on the mount at `mountpoint` (its
/// backing device info defaults to 128 KiB): large sequential reads then
/// arrive as 1 MiB FUSE requests. Best effort: it needs write access to
/// sysfs (root). Call it after the INIT handshake, which sets the mount's
/// readahead itself (a knob written before it changed how passthrough
/// reads behaved).
///
/// The device number comes from the mount table, not from a `stat` of the
/// mount point: that would be a request to this very process, and one
/// pending when a SIGKILL came left the process unkillable (a thread
/// waiting for itself), the mount hung instead of stale.
pub fn raise_readahead(mountpoint: &Path) {
    let Some(mounted) = crate::mounts::at(mountpoint) else {
        return;
    };
    let knob = format!("/sys/class/bdi/{}/read_ahead_kb", mounted.dev);
    match std::fs::write(&knob, "1024") {
        Ok(()) => tracing::debug!(%knob, "readahead set to 1 MiB"),
        Err(e) => tracing::debug!(%knob, error = %e, "readahead left at the kernel default"),
    }
}

fn announce_ready_and_detach_stderr(log_file: Option<&Path>) {
    // Before READY: `nzfs mount` prints these under its "mounted" line.
    for note in crate::store::notes::take() {
        eprintln!("{NOTE}{note}");
    }
    eprintln!("{READY}");
    // From now on the parent is gone: stderr must not be its pipe.
    let target = log_file
        .and_then(|p| log::open_log(p).ok())
        .or_else(|| std::fs::OpenOptions::new().write(true).open("/dev/null").ok());
    if let Some(f) = target {
        use std::os::fd::AsRawFd;
        // SAFETY: dup2 onto fd 2 with a valid open descriptor.
        unsafe {
            libc::dup2(f.as_raw_fd(), 2);
        }
    }
}

fn fusermount(mp: &Path, lazy: bool) -> std::io::Result<std::process::Output> {
    let mut cmd = Command::new("fusermount3");
    cmd.arg("-u");
    if lazy {
        cmd.arg("-z");
    }
    cmd.arg("--").arg(mp).output()
}

fn lazy_unmount(mp: &Path) -> std::io::Result<()> {
    fusermount(mp, true).map(|_| ())
}

/// `nzfs unmount`.
pub fn unmount(mp: &Path, lazy: bool) -> Result<(), CliError> {
    let stale = is_stale(mp);
    if !stale && !is_mount_point(mp) {
        if std::fs::symlink_metadata(mp).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound) {
            return fail(format!("{} does not exist (no mount point there)", mp.display()));
        }
        if let Some(m) = crate::mounts::nzfs_mount_around(mp) {
            return fail(format!(
                "{} is inside the nzfs mount {}: unmount that: nzfs unmount {}",
                mp.display(),
                m.point.display(),
                m.point.display()
            ));
        }
        return fail(format!("{} is not mounted", mp.display()));
    }
    match fusermount(mp, lazy) {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => {
            let msg = String::from_utf8_lossy(&out.stderr).trim().to_string();
            if msg.contains("busy") {
                fail(format!(
                    "{} is busy: a process has a file or directory open under it \
                     (find it with `fuser -vm {}`); close it, or use `nzfs unmount --lazy`",
                    mp.display(),
                    mp.display()
                ))
            } else {
                fail(format!("cannot unmount {}: {msg}", mp.display()))
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let path = std::ffi::CString::new(mp.as_os_str().as_encoded_bytes())
                .map_err(|_| CliError::new(format!("cannot unmount {}: a NUL in its name", mp.display())))?;
            let flags = if lazy { libc::MNT_DETACH } else { 0 };
            // SAFETY: a valid NUL-terminated path.
            if unsafe { libc::umount2(path.as_ptr(), flags) } == 0 {
                Ok(())
            } else {
                fail(format!(
                    "cannot unmount {}: {}",
                    mp.display(),
                    std::io::Error::last_os_error()
                ))
            }
        }
        Err(e) => fail(format!("cannot run fusermount3: {e}")),
    }
}

//! The daemon's log files: where a mount point's log lives by default,
//! how the default directory is kept bounded, and [`RotatingLog`], the
//! writer that keeps one log bounded while its daemon runs.
//!
//! Invariants: a log and its one old copy (`NAME.log.1`) hold at most
//! [`ROTATE_LOG_BYTES`] each, give or take one line, however long the
//! daemon runs and at whatever verbosity. A log is never opened through a
//! link nor appended to when another user owns it ([`open_log`]), and the
//! default directory is never a shared temporary one: it is the user's
//! own, mode 0700, or the mount is refused with the fix ([`own_log_dir`]).

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::cli::CliError;

/// The default log directory: `$XDG_STATE_HOME/nzfs`, else
/// `$HOME/.local/state/nzfs`, else, for root alone (the system systemd
/// instance runs fstab's mount units with neither set), `/var/log/nzfs`.
/// Never a shared temporary directory, where another user could have made
/// the directory or a link in it first.
pub fn default_log_dir() -> Result<PathBuf, CliError> {
    let base = std::env::var_os("XDG_STATE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|h| !h.is_empty())
                .map(|h| PathBuf::from(h).join(".local/state"))
        });
    match base {
        Some(base) => Ok(base.join("nzfs")),
        None if rustix::process::geteuid().is_root() => Ok(PathBuf::from("/var/log/nzfs")),
        None => Err(CliError::new(
            "neither $XDG_STATE_HOME nor $HOME is set, so there is no directory of yours for the log: \
             pass --log-file PATH (in a directory only you can write), or -f to log to stderr",
        )),
    }
}

/// The default spool of a writable mount at `mp`: `spool/<mountpoint>`
/// beside the default log directory's files, or for root without a home
/// `/var/lib/nzfs/spool/<mountpoint>`.
pub fn default_spool_dir(mp: &Path) -> Result<PathBuf, CliError> {
    let base = match default_log_dir() {
        Ok(dir) if dir != Path::new("/var/log/nzfs") => dir,
        Ok(_) => PathBuf::from("/var/lib/nzfs"),
        Err(_) => {
            return Err(CliError::new(
                "neither $XDG_STATE_HOME nor $HOME is set, so there is no directory of yours for the spool: \
                 pass --spool-dir DIR (a directory only you can enter)",
            ));
        }
    };
    Ok(base.join("spool").join(mountpoint_stem(mp)))
}

/// A mount point as one file name, one for each: its absolute path with
/// `/` as `_`, and `_` and `%` written `%5f` and `%25` so that no two
/// paths share a name (`/mnt/nz` is `mnt_nz`, `/W/a_b` is `W_a%5fb` and
/// `/W/a/b` is `W_a_b`; `/` is `root`).
fn mountpoint_stem(mp: &Path) -> String {
    let abs = std::path::absolute(mp).unwrap_or_else(|_| mp.to_path_buf());
    let mut stem = String::new();
    for c in abs.to_string_lossy().trim_matches('/').chars() {
        match c {
            '/' => stem.push('_'),
            '_' => stem.push_str("%5f"),
            '%' => stem.push_str("%25"),
            c => stem.push(c),
        }
    }
    if stem.is_empty() { "root".into() } else { stem }
}

/// The default log file for a mount point, in `default_log_dir`.
pub fn default_log_file(mp: &Path) -> Result<PathBuf, CliError> {
    Ok(default_log_dir()?.join(format!("{}.log", mountpoint_stem(mp))))
}

/// Make (mode 0700) and check the default log directory `dir`: it must be
/// a directory, not a link, owned by this user and writable by no one
/// else, or another user could plant a link or read the log there.
pub(super) fn own_log_dir(dir: &Path) -> Result<(), CliError> {
    use std::os::unix::fs::DirBuilderExt;
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| CliError::new(format!("log directory {}: {e}", parent.display())))?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(CliError::new(format!("log directory {}: {e}", dir.display()))),
    }
    let meta =
        std::fs::symlink_metadata(dir).map_err(|e| CliError::new(format!("log directory {}: {e}", dir.display())))?;
    let why = match meta.file_type().is_dir() {
        false => Some("is not a directory (a link?)".to_string()),
        true => crate::owned::not_yours_alone(&meta, false),
    };
    match why {
        Some(why) => Err(CliError::new(format!(
            "log directory {} {why}: nzfs logs only to a directory of yours that no one else can write; \
             remove it, or pass --log-file PATH",
            dir.display()
        ))),
        None => Ok(()),
    }
}

/// Open a log file for appending without following a link at its name:
/// created (mode 0600) if missing, else it must be a regular file of this
/// user's. A directory others may write to must be sticky (`/tmp`), so
/// that no one else can swap the file after the check.
pub fn open_log(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let refuse = |why: String| io::Error::new(io::ErrorKind::PermissionDenied, why);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty())
        && let Ok(meta) = std::fs::metadata(dir)
        && meta.mode() & 0o002 != 0
        && meta.mode() & 0o1000 == 0
    {
        return Err(refuse(format!(
            "{} is writable by anyone and not sticky: choose a log directory of your own",
            dir.display()
        )));
    }
    let flags = libc::O_NOFOLLOW | libc::O_CLOEXEC;
    let created = std::fs::OpenOptions::new()
        .append(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(flags)
        .open(path);
    let file = match created {
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            std::fs::OpenOptions::new().append(true).custom_flags(flags).open(path)
        }
        other => other,
    }
    .map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => refuse("is a symbolic link: nzfs never logs through a link".into()),
        _ => e,
    })?;
    let meta = file.metadata()?;
    let me = rustix::process::geteuid().as_raw();
    if !meta.file_type().is_file() {
        return Err(refuse("is not a regular file".into()));
    }
    if meta.uid() != me {
        return Err(refuse(format!("belongs to uid {}, not to you (uid {me})", meta.uid())));
    }
    Ok(file)
}

/// The most log files kept in the default log directory, and the age past
/// which one goes (one per mount point, for ever).
const KEEP_LOGS: usize = 50;
const KEEP_LOG_DAYS: u64 = 14;
/// A log longer than this is moved to `NAME.log.1` (one old copy kept) by
/// [`RotatingLog`], before the line that would take it past: while its
/// daemon runs, and at the first line of the next mount of a log already
/// past it.
pub const ROTATE_LOG_BYTES: u64 = 8 << 20;

/// Bound the default log directory before a mount writes to `current`
/// (which [`RotatingLog`] keeps bounded itself): remove logs not written for
/// [`KEEP_LOG_DAYS`] days, then the oldest past [`KEEP_LOGS`], except those
/// of mount points mounted now. Best effort: a failure is only logged.
pub(super) fn prune_logs(dir: &Path, current: &Path) {
    let live: std::collections::HashSet<PathBuf> = crate::mounts::table()
        .into_iter()
        .filter(|m| m.fstype.starts_with("fuse"))
        .filter_map(|m| default_log_file(&m.point).ok())
        .collect();
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let now = std::time::SystemTime::now();
    let mut logs: Vec<(std::time::SystemTime, PathBuf)> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().ends_with(".log") || p.to_string_lossy().ends_with(".log.1"))
        .filter(|p| p != current && !live.contains(p))
        .filter_map(|p| Some((std::fs::metadata(&p).ok()?.modified().ok()?, p)))
        .collect();
    logs.sort();
    let old = |t: &std::time::SystemTime| {
        now.duration_since(*t)
            .is_ok_and(|d| d.as_secs() > KEEP_LOG_DAYS * 86_400)
    };
    let excess = logs.len().saturating_sub(KEEP_LOGS);
    for (i, (t, p)) in logs.iter().enumerate() {
        if (i < excess || old(t))
            && let Err(e) = std::fs::remove_file(p)
        {
            tracing::debug!(path = %p.display(), error = %e, "cannot remove an old log");
        }
    }
}

/// `NAME.log` -> `NAME.log.1`.
fn old_copy(path: &Path) -> PathBuf {
    let mut old = path.as_os_str().to_owned();
    old.push(".1");
    PathBuf::from(old)
}

/// A log file that rotates itself: a write (the formatter writes each
/// event's line in one) that would take it past its limit first moves it to `NAME.log.1` (replacing the copy there) and
/// starts a fresh file. A rotation that fails (the directory became
/// read-only) keeps writing to the file as it is and tries again a limit
/// later.
pub struct RotatingLog {
    path: PathBuf,
    limit: u64,
    /// The open file and the bytes it holds.
    file: Mutex<(File, u64)>,
}

impl RotatingLog {
    /// Open `path` for appending, rotated past `ROTATE_LOG_BYTES`.
    pub fn open(path: &Path) -> io::Result<RotatingLog> {
        RotatingLog::with_limit(path, ROTATE_LOG_BYTES)
    }

    /// Open `path` for appending, rotated past `limit` bytes.
    pub fn with_limit(path: &Path, limit: u64) -> io::Result<RotatingLog> {
        let file = append(path)?;
        let len = file.metadata()?.len();
        Ok(RotatingLog {
            path: path.to_path_buf(),
            limit,
            file: Mutex::new((file, len)),
        })
    }
}

fn append(path: &Path) -> io::Result<File> {
    open_log(path)
}

impl Write for &RotatingLog {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        // A panic elsewhere while holding the lock leaves a usable file.
        let mut guard = crate::sync::lock(&self.file);
        let (file, len) = &mut *guard;
        if *len > 0 && len.saturating_add(buf.len() as u64) > self.limit {
            let fresh = std::fs::rename(&self.path, old_copy(&self.path)).and_then(|()| append(&self.path));
            // On failure this is still the old file (or, renamed, its
            // copy), written on.
            if let Ok(f) = fresh {
                *file = f;
            }
            *len = 0;
        }
        file.write_all(buf)?;
        *len += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        crate::sync::lock(&self.file).0.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_mount_points_never_share_a_spool_or_log_name() {
        assert_eq!(mountpoint_stem(Path::new("/mnt/nz")), "mnt_nz");
        assert_eq!(mountpoint_stem(Path::new("/")), "root");
        let names: std::collections::HashSet<String> = ["/W/a/b", "/W/a_b", "/W/a%5fb", "/W_a/b", "/W/a/_b", "/W/a_/b"]
            .iter()
            .map(|p| mountpoint_stem(Path::new(p)))
            .collect();
        assert_eq!(names.len(), 6, "{names:?}");
    }

    #[test]
    fn a_log_rotates_past_its_limit_and_keeps_one_old_copy() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mp.log");
        std::fs::write(&path, b"from an earlier mount\n").unwrap();
        let log = RotatingLog::with_limit(&path, 100).unwrap();
        // One write per line, as the log's formatter writes each event.
        for i in 0..40 {
            (&log)
                .write_all(format!("line {i:02} of the log\n").as_bytes())
                .unwrap();
        }
        let now = std::fs::read_to_string(&path).unwrap();
        let old = std::fs::read_to_string(old_copy(&path)).unwrap();
        assert!(
            now.len() <= 100 && old.len() <= 100,
            "{} and {} bytes",
            now.len(),
            old.len()
        );
        assert!(now.ends_with("line 39 of the log\n"), "{now}");
        // Whole lines only: each file starts where a line starts.
        assert!(
            now.starts_with("line ") && old.starts_with("line "),
            "{old:?} / {now:?}"
        );
        let entries = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(entries, 2, "one log and one old copy");
    }

    #[test]
    fn a_log_past_its_limit_at_a_new_mount_rotates_at_its_first_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mp.log");
        std::fs::write(&path, vec![b'x'; 150]).unwrap();
        let log = RotatingLog::with_limit(&path, 100).unwrap();
        (&log).write_all(b"mounted again\n").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"mounted again\n");
        assert_eq!(std::fs::read(old_copy(&path)).unwrap().len(), 150);
    }
}

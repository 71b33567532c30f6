//! What a mount needs before it starts, each checked with a message that
//! says how to fix it: a mount point that exists, is a directory, is empty
//! and not already (or stalely) mounted; store and mount point not given
//! the wrong way round; `/dev/fuse` usable; `fusermount3` present for a
//! mount as a normal user; a store this build reads.

use std::path::Path;

use super::{CliError, fail, is_mount_point, is_stale, lazy_unmount};
use crate::zarr::documents::ROOT_DOCUMENTS;

/// `s` as one word for a shell command a message suggests (quoted when it
/// holds anything but safe characters).
fn shell_word(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:@%=,".contains(c)) {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// A store this build cannot read (a URL without the `remote` feature, a
/// repository without `icechunk`): refused before the mount point is
/// looked at, as its fix is another build.
pub(super) fn check_built(store: &Path) -> Result<(), CliError> {
    match store.to_str().and_then(|s| crate::open::Built::THIS.refusal(s)) {
        Some(why) => Err(CliError::new(why)),
        None => Ok(()),
    }
}

pub(super) fn check_mountpoint(mp: &Path, nonempty: bool) -> Result<(), CliError> {
    if is_stale(mp) {
        // A daemon died (SIGKILL, OOM) and left its mount behind: clear it.
        eprintln!(
            "nzfs: {} was a stale mount (its daemon died); unmounting it first",
            mp.display()
        );
        let _ = lazy_unmount(mp);
    }
    match std::fs::metadata(mp) {
        Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => fail(format!(
            "mount point {} is a stale FUSE mount that could not be cleared; run `nzfs unmount {}`",
            mp.display(),
            mp.display()
        )),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => fail(format!(
            "mount point {} does not exist; create it first: mkdir -p {}",
            mp.display(),
            shell_word(&mp.to_string_lossy())
        )),
        Err(e) => fail(format!("mount point {}: {e}", mp.display())),
        Ok(m) if !m.is_dir() => fail(format!("mount point {} is not a directory", mp.display())),
        Ok(_) if is_mount_point(mp) => fail(format!("mount point {} is already mounted", mp.display())),
        Ok(_) if !nonempty && std::fs::read_dir(mp)?.next().is_some() => match crate::mounts::nzfs_mount_around(mp) {
            // A directory the mount shows is a group's or an array's: no
            // mount belongs over it.
            Some(around) => fail(format!(
                "mount point {} lies inside the nzfs mount {}; mount on an empty directory outside it",
                mp.display(),
                around.point.display()
            )),
            None => fail(format!(
                "mount point {} is not empty (use -o nonempty to mount over it anyway)",
                mp.display()
            )),
        },
        Ok(_) => Ok(()),
    }
}

/// Whether directory `dir` holds Zarr metadata at its root.
fn holds_zarr_metadata(dir: &Path) -> bool {
    ROOT_DOCUMENTS.iter().any(|f| dir.join(f).is_file())
}

/// A mount point that is the store or lies inside it: a mount there hides
/// the store's own files (from nzfs too), so it is refused, and no `-o
/// nonempty` is offered.
pub(super) fn check_outside_store(store: &Path, mp: &Path) -> Result<(), CliError> {
    let (Ok(store), Ok(mp)) = (std::fs::canonicalize(store), std::fs::canonicalize(mp)) else {
        return Ok(());
    };
    // (A directory that is no store is refused for that, later.)
    if holds_zarr_metadata(&store) && mp.starts_with(&store) {
        return fail(format!(
            "mount point {} {} the store {}: a mount there would hide the store's own files; \
             mount it on an empty directory outside the store (mkdir -p /tmp/nz && nzfs mount {} /tmp/nz)",
            mp.display(),
            if mp == store { "is" } else { "lies inside" },
            store.display(),
            shell_word(&store.to_string_lossy()),
        ));
    }
    Ok(())
}

/// Arguments in the wrong order (`nzfs mount MOUNTPOINT STORE`), or a
/// mount over a store: a "mount point" that holds Zarr metadata is refused
/// whatever the first argument is, and never with `-o nonempty` offered.
/// When the first argument is no store (absent, an empty directory, a
/// live nzfs mount, a directory without Zarr metadata) the two look
/// swapped; when it is one too, the mount would hide the second.
pub(super) fn check_swapped(store: &Path, mp: &Path) -> Result<(), CliError> {
    if !holds_zarr_metadata(mp) {
        return Ok(());
    }
    let (s, m) = (store.display(), mp.display());
    let remote = store.to_string_lossy().contains("://");
    let first = if remote {
        None
    } else if crate::mounts::at(&std::path::absolute(store).unwrap_or_else(|_| store.to_path_buf()))
        .is_some_and(|mounted| mounted.fstype == "fuse.nzfs")
    {
        Some("is an nzfs mount")
    } else if std::fs::symlink_metadata(store).is_err() {
        Some("does not exist")
    } else if std::fs::read_dir(store).is_ok_and(|mut d| d.next().is_none()) {
        Some("is an empty directory")
    } else if store.is_dir() && !holds_zarr_metadata(store) {
        Some("holds no Zarr metadata")
    } else {
        None
    };
    match first {
        Some(what) => {
            let make = match what {
                "does not exist" => format!("mkdir -p {} && ", shell_word(&store.to_string_lossy())),
                _ => String::new(),
            };
            fail(format!(
                "the arguments look swapped: {m} holds Zarr metadata (it is a store) and {s} {what}; \
                 the store comes first: {make}nzfs mount {} {}",
                shell_word(&mp.to_string_lossy()),
                shell_word(&store.to_string_lossy())
            ))
        }
        None => fail(format!(
            "mount point {m} is itself a Zarr store (it holds Zarr metadata): a mount there would hide it; \
             mount {s} on an empty directory instead: mkdir -p /tmp/nz && nzfs mount {} /tmp/nz",
            shell_word(&store.to_string_lossy())
        )),
    }
}

pub(super) fn check_dev_fuse() -> Result<(), CliError> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")
        .map(|_| ())
        .map_err(|e| {
            CliError::new(if e.kind() == std::io::ErrorKind::PermissionDenied {
                format!(
                    "/dev/fuse is unavailable ({e}): a normal user needs it mode 0666 \
                     (udev's default on Debian; `chmod 0666 /dev/fuse` in a container)"
                )
            } else {
                format!("/dev/fuse is unavailable ({e}); install fuse3 and load the fuse module")
            })
        })
}

/// A normal user's mount goes through the setuid `fusermount3`, which no
/// wheel can ship: say which package has it when it is missing.
/// Looked for where fuser looks: `$FUSERMOUNT_PATH`, else `fusermount3` or
/// `fusermount` on `PATH`, in `/sbin` or `/bin`.
pub(super) fn check_fusermount() -> Result<(), CliError> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return Ok(());
    }
    let runnable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    let found = match std::env::var_os("FUSERMOUNT_PATH") {
        Some(p) => runnable(Path::new(&p)),
        None => {
            let path = std::env::var_os("PATH").unwrap_or_default();
            std::env::split_paths(&path)
                .chain([std::path::PathBuf::from("/sbin"), std::path::PathBuf::from("/bin")])
                .any(|d| ["fusermount3", "fusermount"].iter().any(|b| runnable(&d.join(b))))
        }
    };
    match found {
        true => Ok(()),
        false => fail(
            concat!(
                "fusermount3 is missing: a mount as a normal user needs it, and it must come from the ",
                "system (it is setuid, so no pip wheel can ship it): apt install fuse3 (Debian, Ubuntu), ",
                "dnf install fuse3 (Fedora, RHEL), zypper install fuse3 (SUSE), or mount as root"
            )
            .to_string(),
        ),
    }
}

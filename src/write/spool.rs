//! Files being written into a writable mount: staged on local disk, in
//! the spool directory, until their writer closes them, then handed to the
//! [`Target`] as one commit.
//!
//! A staged file has an inode of its own (`inos | n`, where `inos` is the
//! bit the mount's inode layout gives the spool, outside every number the
//! hierarchy's nodes and views take), and a name in a group's
//! directory. Its bytes are a plain file of the spool, written where the
//! writer writes (`pwrite`), read where it reads: nothing of it is held in
//! memory. Closing it (FUSE `flush`) commits it when it was written since
//! the last commit; a commit that succeeds removes it (the group it became
//! shows in its place), one that fails makes that `close()` fail and keeps
//! its bytes in the spool, named in the log.
//!
//! Invariants: the spool directory is the daemon user's own, mode 0700,
//! never a link, and one daemon's (locked while it runs); the staged files together hold at most the spool's
//! limit (a write past it is `ENOSPC`); nothing reaches the repository but
//! through [`Target::commit`], once per close of a written file.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use super::WriteError;
use crate::sync::lock;

mod dirs;
mod edit;
mod held;
mod history;
pub use edit::{Base, Pending, Shown, Version};
pub use held::{Discarded, HeldCommit};
pub use history::{Failed, Kept, Made};

/// Where a staged file goes when it is closed.
pub trait Target: Send + Sync {
    /// The closed (or synced) file `file`, written as `name` in the group
    /// at hierarchy path `parent`, as one commit with `message`: the
    /// snapshot's id and the names of the arrays it made. `replace`: an
    /// earlier commit of the same file (at its writer's `fsync`) made the
    /// group with these arrays, which this one replaces (anything else
    /// below it at the tip is a conflict).
    fn commit(
        &self,
        at: (&str, &str),
        file: &File,
        message: &str,
        replace: Option<&[String]>,
    ) -> Result<(String, Vec<String>), WriteError>;

    /// One commit with `message` of what `change` reads, sets and deletes
    /// at the branch's tip: the snapshot made, and its parent. An error
    /// from `change` leaves the branch as it was.
    fn change(
        &self,
        message: &str,
        change: &mut dyn FnMut(&dyn super::Stage) -> Result<(), WriteError>,
    ) -> Result<super::Landed, WriteError>;
}

/// Why a spool request failed; each is one errno.
#[derive(Debug, thiserror::Error)]
pub enum SpoolError {
    /// No staged file of that inode or name.
    #[error("no such file being written")]
    NotFound,
    /// A held group with files or groups staged in it.
    #[error("{0}: files or groups are staged in it")]
    NotEmpty(String),
    /// The spool's limit would be passed.
    #[error(
        "the spool holds at most {limit} bytes; this write would take it to {wanted} \
         ({kept} of them in files kept from failed commits and earlier daemons: \
         once recovered, remove them from {}, listed by nzfs status)",
        dir.display()
    )]
    Full {
        /// The limit.
        limit: u64,
        /// Where the write would have taken it.
        wanted: u64,
        /// The bytes of kept files among them.
        kept: u64,
        /// The spool directory.
        dir: PathBuf,
    },
    /// A write would change the size of an existing array's file.
    #[error("the file is {size} bytes and keeps its size (a write to byte {wanted} would grow it)")]
    Size {
        /// The file's size.
        size: u64,
        /// Where the write would have taken it.
        wanted: u64,
    },
    /// The commit failed; the file stays in the spool.
    #[error("{0}")]
    Commit(WriteError),
    /// The spool's disk failed.
    #[error("the spool: {0}")]
    Io(#[from] io::Error),
}

/// A staged file's attributes.
#[derive(Debug, Clone, Copy)]
pub struct Stat {
    /// Its inode number.
    pub ino: u64,
    /// Its size.
    pub size: u64,
    /// Who created it.
    pub uid: u32,
    /// Their group.
    pub gid: u32,
    /// When it was last written.
    pub mtime: SystemTime,
    /// Its permission bits, as its creator asked (less their umask).
    pub perm: u16,
    /// A group `mkdir` made, held for `nzfs commit` (else a file).
    pub dir: bool,
}

struct Staged {
    parent_ino: u64,
    parent: String,
    name: String,
    path: PathBuf,
    file: File,
    /// Written since the last commit.
    dirty: bool,
    /// The last commit failed (its bytes are kept at release).
    failed: bool,
    /// A commit of it made its group (at an `fsync`), with these arrays:
    /// the next replaces them, and only them.
    made: Option<Vec<String>>,
    /// Writes since it was created (a commit taken meanwhile leaves it
    /// dirty).
    writes: u64,
    size: u64,
    uid: u32,
    gid: u32,
    mtime: SystemTime,
    perm: u16,
    /// Handles open for writing (its create's included).
    write_opens: u32,
    /// Who wrote it, for the commit's message.
    writer: String,
}

/// The files being written into one mount.
pub struct Spool {
    /// Holds the spool directory's lock (`flock`) while the daemon runs.
    _lock: File,
    dir: PathBuf,
    limit: u64,
    /// The bit every staged file's inode number carries.
    inos: u64,
    next: AtomicU64,
    files: Mutex<BTreeMap<u64, Staged>>,
    /// Writes into existing arrays' files, by inode (`edit.rs`); locked
    /// after `files` where both are.
    edits: Mutex<BTreeMap<u64, edit::Edit>>,
    /// Files the hierarchy shows that were unlinked (`rm -r` of a node
    /// unlinks its files before it removes its directory, the commit):
    /// hidden from then on, until the next removal is committed.
    hidden: Mutex<std::collections::HashSet<u64>>,
    /// Groups made by `mkdir`, held for [`Spool::commit_held`] (`dirs.rs`).
    dirs: Mutex<BTreeMap<u64, dirs::HeldDir>>,
    /// Nodes removed by `rmdir`, held for [`Spool::commit_held`], in order.
    removed: Mutex<Vec<(String, u64)>>,
    history: Mutex<history::History>,
    /// Files kept that no handle holds (failed commits' bytes, an earlier
    /// daemon's leftovers): counted against the limit while they are there.
    kept: Mutex<Vec<Kept>>,
    /// Held while an edit is committed.
    edit_commit: Mutex<()>,
    target: Box<dyn Target>,
    /// New files wait for [`Spool::commit_held`] (`--commit explicit`),
    /// not their close.
    explicit: bool,
}

impl Spool {
    /// The spool at `dir` (made 0700 when missing; refused when it is a
    /// link, another user's, or open to others), holding at most `limit`
    /// bytes, committing to `target`, numbering its files' inodes with the
    /// bit `inos` (a power of two above every other inode number the
    /// mount gives). Also returns the files an earlier daemon left there
    /// (killed before their writers closed them).
    pub fn open(dir: &Path, limit: u64, inos: u64, target: Box<dyn Target>) -> io::Result<(Spool, Vec<PathBuf>)> {
        match std::fs::DirBuilder::new().mode(0o700).recursive(true).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let meta = std::fs::symlink_metadata(dir)?;
        let me = rustix::process::geteuid().as_raw();
        if !meta.is_dir() || meta.uid() != me || meta.mode() & 0o077 != 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!(
                    "spool {}: it must be a directory of uid {me} with mode 0700 (it is {}, uid {}, mode {:o}); \
                     choose another with --spool-dir",
                    dir.display(),
                    if meta.is_dir() {
                        "a directory"
                    } else {
                        "not a directory"
                    },
                    meta.uid(),
                    meta.mode() & 0o7777
                ),
            ));
        }
        // One daemon a spool: a second would take the first's files for
        // leftovers, and their names for its own.
        let lock = File::open(dir)?;
        if let Err(e) = rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            return Err(io::Error::new(
                io::ErrorKind::WouldBlock,
                format!(
                    "spool {}: another nzfs daemon uses it ({e}); give this mount a spool of its own with --spool-dir",
                    dir.display()
                ),
            ));
        }
        let mut left = Vec::new();
        for e in std::fs::read_dir(dir)? {
            left.push(e?.path());
        }
        left.sort();
        // New files are numbered past what was left.
        let first = left
            .iter()
            .filter_map(|p| p.file_name()?.to_str()?.split('-').next()?.parse::<u64>().ok())
            .max()
            .map_or(1, |n| n + 1);
        let spool = Spool {
            _lock: lock,
            dir: dir.to_path_buf(),
            limit,
            inos,
            next: AtomicU64::new(first),
            files: Mutex::default(),
            edits: Mutex::default(),
            hidden: Mutex::default(),
            dirs: Mutex::default(),
            removed: Mutex::default(),
            history: Mutex::default(),
            kept: Mutex::new(
                left.iter()
                    .map(|p| Kept {
                        path: p.clone(),
                        bytes: std::fs::symlink_metadata(p).map_or(0, |m| m.len()),
                        why: "left by an earlier daemon, killed before its writer closed it".into(),
                    })
                    .collect(),
            ),
            edit_commit: Mutex::default(),
            target,
            explicit: false,
        };
        Ok((spool, left))
    }

    /// A new file of the spool, numbered past every other and named after
    /// `name`: 0600, made here (never through a link).
    fn new_file(&self, name: &str) -> io::Result<(u64, PathBuf, File)> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let path = self.dir.join(format!("{n}-{}", name.replace('/', "_")));
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)?;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        Ok((n, path, file))
    }

    /// Whether `ino` is a staged file's inode number.
    pub fn owns(&self, ino: u64) -> bool {
        ino & !(self.inos - 1) == self.inos
    }

    /// Stage a new file `name` in the group directory `parent_ino` (at
    /// hierarchy path `parent`), created by `uid`:`gid` with permission
    /// bits `perm`, written by `writer` (for the commit's
    /// message); its create is its first handle open for writing.
    pub fn create(
        &self,
        parent_ino: u64,
        parent: &str,
        name: &str,
        (uid, gid, perm): (u32, u32, u16),
        writer: String,
    ) -> Result<Stat, SpoolError> {
        let (n, path, file) = self.new_file(name)?;
        let ino = self.inos | n;
        let staged = Staged {
            parent_ino,
            parent: parent.to_string(),
            name: name.to_string(),
            path,
            file,
            dirty: true,
            failed: false,
            made: None,
            writes: 0,
            size: 0,
            uid,
            gid,
            mtime: SystemTime::now(),
            perm: perm & 0o7777,
            write_opens: 1,
            writer,
        };
        let stat = stat_of(ino, &staged);
        lock(&self.files).insert(ino, staged);
        Ok(stat)
    }

    /// The staged file `name` in directory `parent_ino`.
    pub fn lookup(&self, parent_ino: u64, name: &str) -> Option<Stat> {
        lock(&self.files)
            .iter()
            .find(|(_, s)| s.parent_ino == parent_ino && s.name == name)
            .map(|(&ino, s)| stat_of(ino, s))
    }

    /// The staged files of directory `parent_ino`, then the groups held
    /// there: name and attributes.
    pub fn list(&self, parent_ino: u64) -> Vec<(String, Stat)> {
        let mut listed: Vec<(String, Stat)> = lock(&self.files)
            .iter()
            .filter(|(_, s)| s.parent_ino == parent_ino)
            .map(|(&ino, s)| (s.name.clone(), stat_of(ino, s)))
            .collect();
        listed.extend(self.list_dirs(parent_ino));
        listed
    }

    /// A staged file's (or held group's) attributes.
    pub fn stat(&self, ino: u64) -> Result<Stat, SpoolError> {
        let file = lock(&self.files).get(&ino).map(|s| stat_of(ino, s));
        file.or_else(|| self.dir_stat(ino)).ok_or(SpoolError::NotFound)
    }

    /// Hide file `ino`, which the hierarchy shows (an unlink of it).
    pub fn hide(&self, ino: u64) {
        lock(&self.hidden).insert(ino);
    }

    /// Whether file `ino` was unlinked.
    pub fn is_hidden(&self, ino: u64) -> bool {
        lock(&self.hidden).contains(&ino)
    }

    /// A removal was committed: what was hidden for it is gone with it, and
    /// what was hidden for none shows again.
    pub fn unhide_all(&self) {
        lock(&self.hidden).clear();
    }

    /// The bytes all staged files hold.
    fn used(files: &BTreeMap<u64, Staged>) -> u64 {
        files.values().map(|s| s.size).sum()
    }

    /// Whether `wanted` bytes of staged files and edits fit beside what the
    /// spool keeps, or the error that refuses them. Kept files count as
    /// they were kept; past the limit, those removed since are let go of
    /// first.
    fn fits(&self, wanted: u64) -> Result<(), SpoolError> {
        if wanted.saturating_add(self.kept_bytes(false)) <= self.limit {
            return Ok(());
        }
        let kept = self.kept_bytes(true);
        match wanted.saturating_add(kept) <= self.limit {
            true => Ok(()),
            false => Err(SpoolError::Full {
                limit: self.limit,
                wanted: wanted.saturating_add(kept),
                kept,
                dir: self.dir.clone(),
            }),
        }
    }

    /// Write `data` at `offset` of a staged file.
    pub fn write(&self, ino: u64, offset: u64, data: &[u8]) -> Result<usize, SpoolError> {
        let mut files = lock(&self.files);
        let used = Self::used(&files) + self.edits_used();
        let s = files.get_mut(&ino).ok_or(SpoolError::NotFound)?;
        let end = offset.saturating_add(data.len() as u64);
        let grows = end.saturating_sub(s.size);
        self.fits(used.saturating_add(grows))?;
        s.file.write_all_at(data, offset)?;
        s.size = s.size.max(end);
        s.dirty = true;
        s.writes += 1;
        s.mtime = SystemTime::now();
        Ok(data.len())
    }

    /// Read up to `size` bytes at `offset` of a staged file.
    pub fn read(&self, ino: u64, offset: u64, size: u32) -> Result<Vec<u8>, SpoolError> {
        let files = lock(&self.files);
        let s = files.get(&ino).ok_or(SpoolError::NotFound)?;
        let len = (size as u64).min(s.size.saturating_sub(offset)) as usize;
        let mut buf = vec![0; len];
        s.file.read_exact_at(&mut buf, offset)?;
        Ok(buf)
    }

    /// A staged file's `fsync`: its bytes to the spool's disk, and, when
    /// it is named `NAME.nc`, was written since its last commit and is
    /// whole netCDF (classic or netCDF-4), a commit of it (replacing the group an earlier
    /// one made). It stays staged: its writer's close commits what it
    /// writes after. `Some(id)`: the new snapshot.
    pub fn sync(&self, ino: u64) -> Result<Option<String>, SpoolError> {
        // The disk and the header are asked without the lock: other files
        // are written meanwhile.
        let (file, at, writes, replace, message, wanted) = {
            let files = lock(&self.files);
            let s = files.get(&ino).ok_or(SpoolError::NotFound)?;
            let message = format!(
                "{} synced through nzfs by {}",
                crate::naming::escaped(&super::node_path(&s.parent, &s.name)),
                s.writer
            );
            let at = (s.parent.clone(), s.name.clone());
            let wanted = s.dirty && crate::write::names::group_of(&s.name).is_some();
            (s.file.try_clone()?, at, s.writes, s.made.clone(), message, wanted)
        };
        file.sync_data()?;
        if self.explicit || !wanted || crate::netcdf::nc4::open(&file).is_err() {
            return Ok(None);
        }
        let result = self.target.commit((&at.0, &at.1), &file, &message, replace.as_deref());
        self.record(&message, result.as_ref().map(|(id, _)| id.as_str()));
        let (id, made) = result.map_err(SpoolError::Commit)?;
        if let Some(s) = lock(&self.files).get_mut(&ino) {
            s.made = Some(made);
            s.dirty = s.writes != writes;
        }
        Ok(Some(id))
    }

    /// Set a staged file's size.
    pub fn truncate(&self, ino: u64, size: u64) -> Result<Stat, SpoolError> {
        let mut files = lock(&self.files);
        let used = Self::used(&files) + self.edits_used();
        let s = files.get_mut(&ino).ok_or(SpoolError::NotFound)?;
        self.fits(used.saturating_add(size.saturating_sub(s.size)))?;
        s.file.set_len(size)?;
        s.size = size;
        s.dirty = true;
        s.writes += 1;
        s.mtime = SystemTime::now();
        Ok(stat_of(ino, s))
    }

    /// Move a staged file to `name` in directory `parent_ino` (the group at
    /// hierarchy path `parent`).
    pub fn rename(&self, ino: u64, parent_ino: u64, parent: &str, name: &str) -> Result<(), SpoolError> {
        let mut files = lock(&self.files);
        let s = files.get_mut(&ino).ok_or(SpoolError::NotFound)?;
        s.parent_ino = parent_ino;
        s.parent = parent.to_string();
        s.name = name.to_string();
        Ok(())
    }

    /// The writer closed a staged file: commit it when it is named
    /// `NAME.nc` and was written since the last commit (a file of another
    /// name, a writer's temporary one, waits to be renamed). `Some(id)`:
    /// the new snapshot, and the file is gone from the spool.
    pub fn close(&self, ino: u64) -> Result<Option<String>, SpoolError> {
        // The commit runs without the lock: other files are written
        // meanwhile. The file is taken out and put back if it fails.
        let staged = {
            let mut files = lock(&self.files);
            match files.get(&ino) {
                None => return Ok(None),
                // Held for `nzfs commit`.
                Some(_) if self.explicit => return Ok(None),
                // Committed whole at its last fsync: it leaves the spool.
                Some(s) if !s.dirty && s.made.is_some() => {
                    let s = files.remove(&ino).expect("present");
                    let _ = std::fs::remove_file(&s.path);
                    return Ok(None);
                }
                Some(s) if !s.dirty || crate::write::names::group_of(&s.name).is_none() => return Ok(None),
                Some(_) => files.remove(&ino).expect("present"),
            }
        };
        let message = format!(
            "{} written through nzfs by {}",
            crate::naming::escaped(&super::node_path(&staged.parent, &staged.name)),
            staged.writer
        );
        let result = self.target.commit(
            (&staged.parent, &staged.name),
            &staged.file,
            &message,
            staged.made.as_deref(),
        );
        self.record(&message, result.as_ref().map(|(id, _)| id.as_str()));
        match result {
            Ok((id, _)) => {
                let _ = std::fs::remove_file(&staged.path);
                Ok(Some(id))
            }
            Err(e) => {
                let mut staged = staged;
                staged.dirty = false;
                staged.failed = true;
                lock(&self.files).insert(ino, staged);
                Err(SpoolError::Commit(e))
            }
        }
    }

    /// Another handle of staged file `ino` opened for writing.
    pub fn open_for_writing(&self, ino: u64) -> Result<(), SpoolError> {
        let mut files = lock(&self.files);
        let s = files.get_mut(&ino).ok_or(SpoolError::NotFound)?;
        s.write_opens += 1;
        Ok(())
    }

    /// A handle of a staged file was released (`writing`: one opened for
    /// writing). At the last handle open for writing, a file written since
    /// its last commit (a shared `mmap` written after the `close()`, whose
    /// pages the kernel writes back at `munmap`) is committed now, as at a
    /// close: `Ok(Some(id))`, or the commit's error (its bytes kept). Then
    /// a file whose commit failed leaves the mount, its bytes kept in the
    /// spool (returned, for the log).
    pub fn release(&self, ino: u64, writing: bool) -> (Result<Option<String>, SpoolError>, Option<PathBuf>) {
        let last = {
            let mut files = lock(&self.files);
            match files.get_mut(&ino) {
                Some(s) if writing => {
                    s.write_opens = s.write_opens.saturating_sub(1);
                    s.write_opens == 0
                }
                Some(s) => s.write_opens == 0,
                None => return (Ok(None), None),
            }
        };
        let committed = match last {
            true => self.close(ino),
            false => Ok(None),
        };
        let kept = {
            let mut files = lock(&self.files);
            match files.get(&ino) {
                Some(s) if s.failed && s.write_opens == 0 => files.remove(&ino).map(|s| (s.path, s.size)),
                _ => None,
            }
        };
        if let Some((path, bytes)) = &kept {
            let why = self.failures().first().map_or_else(String::new, |f| f.2.clone());
            self.keep(path, *bytes, format!("its commit failed: {why}"));
        }
        (committed, kept.map(|(p, _)| p))
    }

    /// Remove the staged file `name` of directory `parent_ino` (a writer
    /// that gave up on it, as netCDF's `nc_abort` does).
    pub fn remove(&self, parent_ino: u64, name: &str) -> Result<(), SpoolError> {
        let mut files = lock(&self.files);
        let ino = files
            .iter()
            .find(|(_, s)| s.parent_ino == parent_ino && s.name == name)
            .map(|(&ino, _)| ino)
            .ok_or(SpoolError::NotFound)?;
        let s = files.remove(&ino).expect("found");
        std::fs::remove_file(&s.path)?;
        Ok(())
    }
}

fn stat_of(ino: u64, s: &Staged) -> Stat {
    Stat {
        ino,
        size: s.size,
        uid: s.uid,
        gid: s.gid,
        mtime: s.mtime,
        perm: s.perm,
        dir: false,
    }
}

#[cfg(test)]
mod tests;

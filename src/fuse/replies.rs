//! How the adapter words its replies: the kernel's attributes of a file
//! ([`FuseAdapter::attr`], with the time-outs of [`FuseAdapter::ttl`]),
//! batches of directory entries, the status document, and errors, each
//! logged once with the request and the reader's pid that caused it
//! ([`Caller`]) before it becomes an errno.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use fuser::{Errno, FileAttr, FileType, INodeNo, Request};

use super::{FRESH_TTL, FuseAdapter, TTL};
use crate::fs::{Attr, FsError, Kind, NzFs};

impl FuseAdapter {
    pub(super) fn errno(&self, who: Caller, op: &str, ino: u64, e: &FsError) -> Errno {
        errno(&self.fs(), who, op, ino, e)
    }

    /// The status document ([`crate::fs::status`]) with the adapter's
    /// part, for an asker with user id `uid`: the recent errors' messages
    /// are for root and the mount's owner alone.
    pub(super) fn status(&self, uid: u32) -> String {
        use crate::fs::status::schema::{Names, Opens, Passthrough};
        let to_owner = uid == 0 || uid == rustix::process::getuid().as_raw();
        let (bytes, entries) = self.backings.usage();
        let count = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let mut doc = self.fs().status();
        doc.passthrough = Passthrough {
            on: self.passthrough.load(Ordering::Relaxed),
            backings: entries as u64,
            backing_bytes: bytes,
        };
        doc.opens = Opens {
            by_kernel: self.no_open.load(Ordering::Relaxed),
            requests: count(&self.open_requests),
        };
        doc.names = Names {
            readdirplus: self.readdirplus.load(Ordering::Relaxed),
            lookups: count(&self.lookup_requests),
            listed_with_attributes: count(&self.listed_with_attributes),
        };
        doc.metadata = self.live.status();
        doc.writes = self.mount.writes_status();
        crate::fs::status::status_text(doc, to_owner)
    }

    /// How long the kernel may keep `ino`'s attributes (and name).
    pub(super) fn ttl(&self, fs: &NzFs, ino: u64) -> Duration {
        // A chunk file served by passthrough is checked at each open (and
        // read from its backing, not the page cache): its attributes need
        // no second look, which would wait for the daemon.
        let passthrough = self.passthrough.load(Ordering::Relaxed) && fs.passthrough_chunk(ino).is_some();
        match fs.follows_store(ino) && !passthrough {
            true => FRESH_TTL,
            // The metadata's look interval, where it is followed.
            false => self.live.ttl(TTL),
        }
    }

    /// Attributes of a staged file, through the one builder of the
    /// kernel's attributes ([`FuseAdapter::attr`]).
    pub(super) fn staged_attr(&self, s: crate::mount::Stat) -> FileAttr {
        self.attr(Attr {
            ino: s.ino,
            kind: if s.dir { Kind::Directory } else { Kind::File },
            size: s.size,
            // As its creator asked: a file being written is no more open
            // to others than they chose.
            perm: s.perm,
            nlink: if s.dir { 2 } else { 1 },
            uid: s.uid,
            gid: s.gid,
            mtime: s.mtime,
            blksize: 4096,
        })
    }

    /// The attributes of an entry whose own could not be had: its kind,
    /// no permissions, the mount's owner.
    pub(super) fn bare_attr(&self, ino: u64, kind: Kind) -> FileAttr {
        self.attr(Attr {
            ino,
            kind,
            size: 0,
            perm: 0,
            nlink: 1,
            uid: 0,
            gid: 0,
            mtime: std::time::UNIX_EPOCH,
            blksize: crate::fs::FILE_BLKSIZE,
        })
    }

    pub(super) fn attr(&self, a: Attr) -> FileAttr {
        FileAttr {
            ino: INodeNo(a.ino),
            size: a.size,
            blocks: a.size.div_ceil(512),
            atime: a.mtime,
            mtime: a.mtime,
            ctime: a.mtime,
            crtime: a.mtime,
            kind: file_type(a.kind),
            // A writable mount's owner writes where writes are taken (the
            // kernel checks the mode under allow_other); others read, as
            // the store lets them.
            // (A read-only mount asks for no filesystem: every attribute
            // reply passes here.)
            perm: match self.mount.is_writable() && self.mount.takes_writes(&self.fs(), a.ino) {
                true => a.perm | 0o200,
                false => a.perm,
            },
            nlink: a.nlink,
            uid: a.uid,
            gid: a.gid,
            rdev: 0,
            blksize: a.blksize,
            flags: 0,
        }
    }
}

/// Staged files are never cached by the kernel: the name leaves the
/// directory as its group arrives.
pub(super) const STAGED_TTL: Duration = Duration::ZERO;

/// Who made a request: the kernel's id of it and the pid of the process
/// that asked, named on each log line the request causes, so that with
/// many threads a line is tied to its request and its reader.
#[derive(Clone, Copy)]
pub(super) struct Caller {
    req: u64,
    pub(super) pid: u32,
}

impl Caller {
    pub(super) fn of(req: &Request) -> Caller {
        Caller {
            req: req.unique().0,
            pid: req.pid(),
        }
    }

    /// A span over the request's work on this thread (`-v` and up), so
    /// that what the core logs meanwhile carries the request too.
    pub(super) fn span(self, op: &'static str) -> tracing::span::EnteredSpan {
        tracing::debug_span!("request", req = self.req, pid = self.pid, op).entered()
    }
}

/// Log an error once, at the level its kind deserves, with its caller,
/// count it for `nzfs status`, and turn it into an errno.
pub(super) fn errno(fs: &NzFs, who: Caller, op: &str, ino: u64, e: &FsError) -> Errno {
    let errno = e.errno();
    let (req, pid) = (who.req, who.pid);
    if e.is_expected() {
        tracing::debug!(op, ino, req, pid, error = %e);
    } else if errno == libc::EIO {
        tracing::warn!(op, ino, req, pid, error = %e, "returning EIO");
    } else {
        tracing::info!(op, ino, req, pid, error = %e, errno, "returning an error");
    }
    fs.note_error(e);
    Errno::from_i32(errno)
}

pub(super) fn file_type(k: Kind) -> FileType {
    match k {
        Kind::Directory => FileType::Directory,
        Kind::File => FileType::RegularFile,
    }
}

//! The mount core: the filesystem as a writer sees it, between the FUSE
//! adapter (`fuse/`) and the served version ([`crate::fs::NzFs`])
//! with what is staged beside it ([`crate::write::spool`]). Every write
//! request is one call here, which decides it (who may write, which names
//! are creatable, when a directory is empty, what a commit says, whether
//! a flush is another process's) and answers with a typed result or an
//! [`FsError`], whose errno is decided once ([`FsError::errno`]); the
//! adapter only translates the request and the reply.
//!
//! What a request changes is committed here too, and the version that
//! shows it is served through [`Served`], the one thing the core asks of
//! whoever serves the mount (the adapter's live version, which tells the
//! kernel).
//!
//! Invariants: only the mount's owner and root create, write, remove or
//! commit; a read-only mount takes none of it (`EROFS`, and `ENOSYS` for
//! the `flush` and `fsync` the kernel then stops sending); a file the
//! mount accepts is committed or refused, never dropped (`staged.rs`);
//! a commit that fails changes nothing and fails its request with the
//! reason; every decision a commit makes is checked again at the branch's
//! tip in the session that commits (`nodes.rs`, `edits.rs`).

use std::sync::Arc;

use crate::fs::{FsError, NzFs, OwnChange, OwnCommit};
use crate::naming;
use crate::write::Landed;

mod edits;
mod errors;
mod handles;
mod invalidate;
mod kernel;
mod list;
mod live;
mod nodes;
mod shown;
mod staged;
mod status;

/// The spool a writable mount is given, and a staged file's attributes:
/// the adapter passes them on and formats them, and calls nothing of
/// the spool.
pub use crate::write::spool::{Spool, Stat};
pub use handles::{Handles, Held, Open};
pub use invalidate::Invalidator;
pub use kernel::{Kernel, KernelSlot};
pub use list::STAGED_OFFSET;
pub use live::Live;
pub use shown::{Entry, Opened};
pub use staged::Sized;

/// What the core asks of whoever serves the mount.
pub trait Served: Send + Sync {
    /// The filesystem served now (a look at the store starts when due).
    fn now(&self) -> Arc<NzFs>;
    /// Look at the branch at once, so that what a commit made shows;
    /// `from_dir_request`: the request holds directories locked in the
    /// kernel until it is answered, so the kernel is told afterwards.
    fn look_now(&self, from_dir_request: bool);
    /// Serve the version a commit of the mount's own made, before the
    /// request is answered (`from_dir_request` as in
    /// [`Served::look_now`]).
    fn serve_own_commit(&self, commit: &OwnCommit<'_>, from_dir_request: bool);
    /// Drop what the kernel caches of the files `inos` (written bytes
    /// that no longer show: a discarded edit's).
    fn forget_pages(&self, inos: &[u64]);
}

/// What an open handle is, as the core's requests need to know
/// ([`Handles::handle`]): a staged file opened for writing, an array's
/// file opened for writing (an edit), or any other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handle {
    /// A staged file, opened (or created) for writing.
    StagedWrite,
    /// An array's `data.bin` or chunk file, opened for writing.
    Edit,
    /// Opened for reading.
    Other,
}

/// Who asks: the user and the process (thread) the kernel names.
#[derive(Debug, Clone, Copy)]
pub struct Asker {
    /// The user id.
    pub uid: u32,
    /// The thread id.
    pub pid: u32,
}

/// The mount core (module doc).
pub struct Mount {
    served: Arc<dyn Served>,
    spool: Option<Arc<Spool>>,
    handles: Handles,
}

impl Mount {
    /// A read-only mount of what `served` serves.
    pub fn new(served: Arc<dyn Served>) -> Mount {
        Mount {
            served,
            spool: None,
            handles: Handles::default(),
        }
    }

    /// Take writes into `spool` (a writable mount of an Icechunk branch).
    pub fn writable(mut self, spool: Arc<Spool>) -> Mount {
        self.spool = Some(spool);
        self
    }

    /// Serve from `served` from now on (the adapter follows the store).
    pub fn served_by(&mut self, served: Arc<dyn Served>) {
        self.served = served;
    }

    /// The open handles that hold something.
    pub fn handles(&self) -> &Handles {
        &self.handles
    }

    /// Whether the mount takes writes.
    pub fn is_writable(&self) -> bool {
        self.spool.is_some()
    }

    /// The spool, when the mount is writable.
    pub fn spool(&self) -> Option<&Spool> {
        self.spool.as_deref()
    }

    /// The spool, shared, when the mount is writable.
    pub fn spool_arc(&self) -> Option<Arc<Spool>> {
        self.spool.clone()
    }

    /// The spool, or `EROFS`.
    fn writable_spool(&self) -> Result<&Spool, FsError> {
        self.spool().ok_or(FsError::ReadOnly)
    }

    fn fs(&self) -> Arc<NzFs> {
        self.served.now()
    }

    /// Whether `uid` may write here: the mount's owner or root.
    pub fn may_write(&self, uid: u32) -> bool {
        uid == 0 || uid == rustix::process::getuid().as_raw()
    }

    /// The refusal of a user who may not write.
    fn owner_only(&self, uid: u32) -> Result<(), FsError> {
        match self.may_write(uid) {
            true => Ok(()),
            false => Err(FsError::Denied("only the mount's owner and root write")),
        }
    }

    /// Whether `ino` of `fs` takes writes on this mount: a file being
    /// written, a node's directory (new files and groups in a group's,
    /// unlinks and removals in any), an array's `data.bin` and chunk
    /// files; nothing on a read-only mount.
    pub fn takes_writes(&self, fs: &NzFs, ino: u64) -> bool {
        self.spool().is_some_and(|s| s.owns(ino) || fs.takes_writes(ino))
    }
}

/// `landed`, a commit of `change` the mount made itself, as the served
/// version is told of it.
fn own_commit<'a>(landed: &'a Landed, change: OwnChange<'a>) -> OwnCommit<'a> {
    OwnCommit {
        snapshot: &landed.snapshot,
        parent: &landed.parent,
        change,
    }
}

/// Who wrote a file, for its commit's message: the program's name, its
/// pid and the user.
pub(crate) fn writer(pid: u32, uid: u32) -> String {
    let program = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
    let user = user_name(uid).unwrap_or_else(|| "?".into());
    // Both are any bytes their owner chose: escaped, so that neither
    // forges a line of the log or of `nzfs status`.
    format!(
        "{} (pid {pid}) as {} (uid {uid})",
        naming::escaped(program.trim_end_matches('\n')),
        naming::escaped(&user)
    )
}

/// The name of user `uid` in /etc/passwd.
fn user_name(uid: u32) -> Option<String> {
    let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
    passwd.lines().find_map(|l| {
        let mut f = l.split(':');
        let name = f.next()?;
        (f.nth(1)?.parse::<u32>().ok()? == uid).then(|| name.to_string())
    })
}

/// Whether thread `by` is of another process than thread `creator`, and
/// `creator` still runs (FUSE names the thread that asked).
fn another_process(creator: u32, by: u32) -> bool {
    let tgid = |tid: u32| {
        std::fs::read_to_string(format!("/proc/{tid}/status"))
            .ok()?
            .lines()
            .find_map(|l| l.strip_prefix("Tgid:")?.trim().parse::<u32>().ok())
    };
    creator != by && crate::fs::reader::alive(creator) && tgid(creator).is_some_and(|c| Some(c) != tgid(by))
}

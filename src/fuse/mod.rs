//! The fuser adapter: every method calls the core ([`crate::fs::NzFs`]) and
//! replies, or maps the error through [`crate::fs::FsError::errno`]. No filesystem
//! logic lives here.
//!
//! Directories are listed with their entries' attributes (READDIRPLUS),
//! except those whose size needs a decode ([`NzFs::attr_is_cheap`]), which
//! the kernel looks up when something stats them.
//!
//! `FOPEN_KEEP_CACHE` lets the kernel page cache serve re-reads. Names and
//! attributes are kept by the kernel for an hour, or for the interval at
//! which the store's metadata is looked at again where the mount follows
//! it ([`Live`]: a change swaps in a filesystem made from the new
//! metadata). On a local store the files that show objects also follow
//! them: their attributes time out
//! after [`FRESH_TTL`], their mtime follows the objects, and with
//! `FUSE_AUTO_INVAL_DATA` the kernel drops their pages when it changed.
//! When the daemon finds an object changed first (a read or open of
//! another view), it drops those pages itself at once ([`Invalidator`]),
//! so no read mixes old cached pages with new ones.
//! Every write-type operation answers `EROFS`, but on a writable mount (an
//! Icechunk branch), where each is one call into the mount core
//! ([`crate::mount::Mount`]), which decides it, and its answer or error is
//! replied here.
//!
//! FUSE passthrough ([`Passthrough`]): when the kernel offers it and the
//! daemon has `CAP_SYS_ADMIN`, an open chunk file that is decoded whole is
//! answered with a backing file (a sealed memfd from
//! [`crate::fs::backing`]), and the kernel serves its reads without asking
//! the daemon. Every open of one inode shares its backing (a kernel rule);
//! a backing stays registered while any handle is open.
//!
//! Without passthrough no file open needs the daemon (an open holds no
//! state, and the mount is read-only, so the kernel refuses writes before
//! asking; a writable mount answers every open): the first `open` answers `ENOSYS`, which a kernel offering
//! `FUSE_NO_OPEN_SUPPORT` takes as "succeed without asking, keep the page
//! cache" for that and every later open of a file, and it sends no
//! `release` either. A fresh `open`/`pread`/`close` is then one round trip
//! instead of three. Directories are still opened by the daemon, so a
//! broken group fails at `opendir` as before. A file whose inode number
//! is of an older version of the metadata (a reader held it open across a
//! change) is answered from that version (`mount/live.rs`).

use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use fuser::{
    AccessFlags, BackingId, Errno, FileHandle, FopenFlags, Generation, INodeNo, IoctlFlags, KernelConfig, LockOwner,
    OpenAccMode, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyDirectoryPlus,
    ReplyEmpty, ReplyEntry, ReplyIoctl, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr, Request, TimeOrNow, WriteFlags,
};

use crate::fs::backing::BackingPool;
use crate::fs::{FsError, NzFs};
use crate::mount::{Asker, Entry, Held, Kernel, KernelSlot, Mount, Opened, Sized};

mod init;
mod passthrough;
mod replies;
mod writes;
pub use crate::mount::{Invalidator, Live};
pub use passthrough::{Passthrough, has_cap_sys_admin};
use replies::{Caller, STAGED_TTL, errno, file_type};

const TTL: Duration = Duration::from_secs(3600);
/// The attribute timeout of files that follow a local store's objects
/// (chunk files, `data.bin`, `data.txt`, `.nc`): how soon a changed object
/// is seen on the next read or open.
pub const FRESH_TTL: Duration = Duration::from_secs(1);
/// Kernel readahead and the largest read request, in bytes.
const MAX_READAHEAD: u32 = 1 << 20;
/// Background requests (readahead) the kernel keeps in flight at most, and
/// past how many it counts the mount as congested and stops starting
/// readahead: a sequential reader keeps its whole readahead window (the
/// daemon sets it on the mount's backing device) in flight as 1 MiB
/// requests, and many readers of one mount share these.
const MAX_BACKGROUND: u16 = 64;
const CONGESTION_THRESHOLD: u16 = 48;
/// The fuser adapter: turns kernel requests into calls of the core
/// ([`NzFs`]) and its answers and errors into replies.
pub struct FuseAdapter {
    /// The filesystem served now (made again when the store's metadata
    /// changed, where the mount follows it).
    live: Arc<Live>,
    mode: Passthrough,
    /// Passthrough is in use (set at INIT; cleared if the kernel refuses).
    passthrough: AtomicBool,
    backings: BackingPool<BackingId>,
    /// Opens are answered by the kernel alone (set at INIT, see the module
    /// doc).
    no_open: AtomicBool,
    /// File `open` requests that reached the daemon (for `nzfs status`).
    open_requests: AtomicU64,
    /// The kernel lists directories with their entries' attributes.
    readdirplus: AtomicBool,
    /// `lookup` requests, and entries listed with their attributes.
    lookup_requests: AtomicU64,
    listed_with_attributes: AtomicU64,
    /// The session's notifier, set once the session exists
    /// ([`FuseAdapter::notifier_slot`]): what drops the kernel's pages of
    /// files whose objects changed ([`Invalidator`]).
    notifier: KernelSlot,
    /// The mount core: what the mount takes writes into (`--writable`)
    /// and every write decision.
    mount: Mount,
}

impl FuseAdapter {
    /// Serve `fs`, with passthrough as `mode` says, serving the metadata
    /// read at the mount ([`FuseAdapter::following`] looks again).
    pub fn new(fs: NzFs, mode: Passthrough) -> Self {
        let budget = fs.config().cache_bytes;
        let fs = Arc::new(fs);
        fs.start_prefetcher();
        let notifier: KernelSlot = Arc::default();
        // A store whose objects are followed (a local one, or object
        // storage the mount follows): a change drops the kernel's pages of
        // every file that showed the old object.
        let invalidator = match fs.dataset().checks_objects() {
            true => match Invalidator::start(Arc::clone(&notifier)) {
                Ok(inv) => {
                    inv.watch(&fs);
                    Some(inv)
                }
                Err(e) => {
                    tracing::warn!(error = %e, "no thread to drop the kernel's pages of changed files");
                    None
                }
            },
            false => None,
        };
        let live = Live::new(fs, None, invalidator, Arc::clone(&notifier));
        FuseAdapter {
            mount: Mount::new(Arc::new(Arc::clone(&live))),
            live,
            mode,
            passthrough: AtomicBool::new(false),
            backings: BackingPool::new(budget),
            no_open: AtomicBool::new(false),
            open_requests: AtomicU64::new(0),
            readdirplus: AtomicBool::new(false),
            lookup_requests: AtomicU64::new(0),
            listed_with_attributes: AtomicU64::new(0),
            notifier,
        }
    }

    /// Take new `NAME.nc` files into `spool`, to be committed as groups
    /// when closed (a writable mount of an Icechunk branch).
    pub fn writable(mut self, spool: Arc<crate::mount::Spool>) -> Self {
        self.mount = self.mount.writable(spool);
        self
    }

    /// Look at the store's metadata again every so often while the mount
    /// is used, as `follow` says (`None`: never), and serve it anew when
    /// it changed.
    pub fn following(mut self, follow: Option<(Duration, Arc<dyn crate::fs::Rereading>)>) -> Self {
        self.live = self.live.following(follow);
        self.mount.served_by(Arc::new(Arc::clone(&self.live)));
        self
    }

    /// Reply `e` through the one error path ([`replies::errno`]): logged
    /// with its caller and counted.
    fn failed(&self, req: &Request, op: &str, ino: u64, e: &FsError) -> Errno {
        self.errno(Caller::of(req), op, ino, e)
    }

    /// The filesystem to answer a request from; a look at the store's
    /// metadata starts in the background when one is due.
    fn fs(&self) -> arc_swap::Guard<Arc<NzFs>> {
        self.live.poke();
        self.live.fs()
    }

    /// Where the session's notifier goes once the session exists (fuser
    /// makes it from the session, which owns this adapter).
    pub fn notifier_slot(&self) -> KernelSlot {
        Arc::clone(&self.notifier)
    }
}

impl fuser::Filesystem for FuseAdapter {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        self.negotiate(config)
    }

    fn lookup(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let who = Caller::of(req);
        let _span = who.span("lookup");
        self.lookup_requests.fetch_add(1, Ordering::Relaxed);
        let fs = self.fs();
        match self.mount.lookup(&fs, parent.0, name) {
            Ok(Entry::Shown(a)) => {
                self.live.looked_up(a.ino);
                reply.entry(&self.ttl(&fs, a.ino), &self.attr(a), Generation(0))
            }
            Ok(Entry::Staged(st)) => reply.entry(&STAGED_TTL, &self.staged_attr(st), Generation(0)),
            Err(e) => reply.error(self.errno(who, "lookup", parent.0, &e)),
        }
    }

    fn getattr(&self, req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let who = Caller::of(req);
        let _span = who.span("getattr");
        if let Some(staged) = self.mount.staged_attr(ino.0) {
            return match staged {
                Ok(st) => reply.attr(&STAGED_TTL, &self.staged_attr(st)),
                Err(e) => reply.error(self.errno(who, "getattr", ino.0, &e)),
            };
        }
        let now = self.fs();
        let old = self.live.version_of(&now, ino.0);
        let fs = old.as_ref().unwrap_or(&now);
        match fs.getattr(ino.0) {
            Ok(a) => reply.attr(&self.ttl(fs, a.ino), &self.attr(a)),
            Err(e) => reply.error(self.errno(who, "getattr", ino.0, &e)),
        }
    }

    fn open(&self, req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let who = Caller::of(req);
        let _span = who.span("open");
        self.open_requests.fetch_add(1, Ordering::Relaxed);
        let write = flags.acc_mode() != OpenAccMode::O_RDONLY;
        match self.mount.open(asker(req), ino.0, write, flags.0 & libc::O_TRUNC != 0) {
            Ok(Opened::StagedWrite(fh)) => return reply.opened(FileHandle(fh), FopenFlags::FOPEN_DIRECT_IO),
            Ok(Opened::StagedRead) => return reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO),
            Ok(Opened::Edit(fh)) => return reply.opened(FileHandle(fh), FopenFlags::empty()),
            Ok(Opened::Shown) => {}
            Err(e) => return reply.error(self.errno(who, "open", ino.0, &e)),
        }
        let fs = self.fs();
        if let Err(e) = fs.open(ino.0, write) {
            return reply.error(self.errno(who, "open", ino.0, &e));
        }
        if self.no_open.load(Ordering::Relaxed) {
            // Not an error: the kernel opens this and every later file
            // itself (module doc).
            return reply.error(Errno::ENOSYS);
        }
        self.open_for_reading(&fs, ino.0, who, reply)
    }

    fn release(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        // What was staged is committed or kept, never dropped (the mount core).
        let released = self.mount.release(ino.0, fh.0, req.pid());
        if released.is_some_and(|o| o.held == Held::Passthrough) {
            self.backings.release(ino.0, self.fs().cache().bytes());
        }
        reply.ok();
    }

    fn read(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let ino = ino.0;
        if let Some(staged) = self.mount.read_staged(ino, offset, size) {
            return match staged {
                Ok(data) => reply.data(&data),
                Err(e) => reply.error(self.failed(req, "read", ino, &e)),
            };
        }
        // What is replied lands in the kernel page cache (FOPEN_KEEP_CACHE),
        // unless the reader bypasses it.
        let page_cached = flags.0 & libc::O_DIRECT == 0;
        // Answered by whichever thread finishes the chunk's decode, so this
        // worker is free for the next request meanwhile.
        // A file opened before the store changed is read in the version
        // it was opened in (mount/live.rs).
        let now = self.fs();
        let old = self.live.version_of(&now, ino);
        let core = old.as_ref().unwrap_or(&now);
        let fs = Arc::clone(core);
        let who = Caller::of(req);
        let _span = who.span("read");
        // What a writer wrote into it shows over the store's bytes.
        let edited = self.mount.spool_arc().filter(|s| s.is_edited(ino));
        crate::fs::reader::serving(who.pid, Some((ino, offset, size)), || {
            core.read_for_kernel(ino, offset, size, page_cached, move |result| match (result, edited) {
                (Ok(data), None) => reply.data(data.bytes()),
                (Ok(data), Some(spool)) => match Mount::patch_edited(&spool, ino, offset, data.bytes()) {
                    Ok(Some(bytes)) => reply.data(&bytes),
                    Ok(None) => reply.data(data.bytes()),
                    Err(e) => reply.error(errno(&fs, who, "read", ino, &e)),
                },
                (Err(e), _) => reply.error(errno(&fs, who, "read", ino, &e)),
            })
        });
    }

    fn opendir(&self, req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let who = Caller::of(req);
        let _span = who.span("opendir");
        // A group held for `nzfs commit`: its listing changes as files
        // are staged in it, so the kernel keeps none.
        if let Some(held) = self.mount.staged_attr(ino.0) {
            return match held {
                Ok(st) if st.dir => reply.opened(FileHandle(0), FopenFlags::empty()),
                Ok(_) => reply.error(self.errno(who, "opendir", ino.0, &FsError::NotADirectory)),
                Err(e) => reply.error(self.errno(who, "opendir", ino.0, &e)),
            };
        }
        match self.fs().opendir(ino.0) {
            // A listing the kernel keeps across opens, unless the metadata
            // is followed (a listing is made from memory: cheap).
            Ok(()) => reply.opened(
                FileHandle(0),
                match self.live.ttl(TTL) < TTL {
                    true => FopenFlags::FOPEN_CACHE_DIR,
                    false => FopenFlags::FOPEN_KEEP_CACHE | FopenFlags::FOPEN_CACHE_DIR,
                },
            ),
            Err(e) => reply.error(self.errno(who, "opendir", ino.0, &e)),
        }
    }

    fn readdir(&self, req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        let who = Caller::of(req);
        let _span = who.span("readdir");
        let listed = self.mount.list(&self.fs(), ino.0, offset, |entry| {
            reply.add(
                INodeNo(entry.ino),
                entry.next_offset,
                file_type(entry.kind),
                &entry.name,
            )
        });
        match listed {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(self.errno(who, "readdir", ino.0, &e)),
        }
    }

    fn readdirplus(&self, req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectoryPlus) {
        let who = Caller::of(req);
        let _span = who.span("readdirplus");
        let fs = self.fs();
        let listed = self.mount.list(&fs, ino.0, offset, |entry| {
            // An entry whose attributes need a decode (a text view's size),
            // or fail, is listed with none the kernel keeps: a later look
            // at it asks (and decodes, or gets the error).
            // A file being written, or a group held: the spool's.
            let staged = self.mount.staged_attr(entry.ino).and_then(Result::ok);
            let found = match (staged, fs.attr_is_cheap(entry.ino)) {
                (Some(_), _) | (None, false) => None,
                (None, true) => fs.getattr(entry.ino).ok(),
            };
            let (ttl, attr) = match (staged, found) {
                (Some(st), _) => (STAGED_TTL, self.staged_attr(st)),
                (None, Some(a)) => {
                    self.listed_with_attributes.fetch_add(1, Ordering::Relaxed);
                    (self.ttl(&fs, a.ino), self.attr(a))
                }
                (None, None) => (Duration::ZERO, self.bare_attr(entry.ino, entry.kind)),
            };
            let full = reply.add(
                INodeNo(entry.ino),
                entry.next_offset,
                &entry.name,
                &ttl,
                &attr,
                Generation(0),
            );
            // The kernel counts a lookup of each entry it was given, but
            // of `.` and `..`.
            if !full && entry.name != "." && entry.name != ".." {
                self.live.looked_up(entry.ino);
            }
            full
        });
        match listed {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(self.errno(who, "readdirplus", ino.0, &e)),
        }
    }

    /// (A batch of forgets comes here one by one: fuser's default.)
    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.live.forgotten(ino.0, nlookup);
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let files = self.fs().hierarchy().nodes.len() as u64;
        reply.statfs(0, 0, 0, files, 0, 4096, 255, MAX_READAHEAD);
    }

    fn access(&self, req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        let who = Caller::of(req);
        let _span = who.span("access");
        // A writable mount takes writes where the mount core says.
        match self
            .mount
            .access(&self.fs(), req.uid(), ino.0, mask.contains(AccessFlags::W_OK))
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(self.errno(who, "access", ino.0, &e)),
        }
    }

    // Every write-type operation: read-only filesystem, but for the files
    // a writable mount stages (the mount core).

    fn setattr(
        &self,
        req: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        match self.mount.set_size(req.uid(), ino.0, size) {
            Ok(Sized::Staged(st)) => reply.attr(&STAGED_TTL, &self.staged_attr(st)),
            Ok(Sized::Shown(a)) => reply.attr(&STAGED_TTL, &self.attr(a)),
            Err(e) => reply.error(self.failed(req, "setattr", ino.0, &e)),
        }
    }

    fn mknod(&self, req: &Request, p: INodeNo, _n: &OsStr, _m: u32, _u: u32, _r: u32, reply: ReplyEntry) {
        reply.error(self.failed(req, "mknod", p.0, &FsError::ReadOnly));
    }

    /// A new group (the mount core).
    fn mkdir(&self, req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, reply: ReplyEntry) {
        let _span = Caller::of(req).span("mkdir");
        let perm = (mode & !umask & 0o7777) as u16;
        match self.mount.make_group(asker(req), (req.gid(), perm), parent.0, name) {
            Ok(a) => reply.entry(&STAGED_TTL, &self.attr(a), Generation(0)),
            Err(e) => reply.error(self.failed(req, "mkdir", parent.0, &e)),
        }
    }

    /// A staged file goes (a writer that gives up on it); a file the
    /// hierarchy shows is hidden until its directory is removed (the mount core).
    fn unlink(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.mount.unlink(req.uid(), parent.0, name) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(self.failed(req, "unlink", parent.0, &e)),
        }
    }

    /// An empty directory's node leaves the branch (the mount core).
    fn rmdir(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let _span = Caller::of(req).span("rmdir");
        match self.mount.remove_node(asker(req), parent.0, name) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(self.failed(req, "rmdir", parent.0, &e)),
        }
    }

    fn symlink(&self, req: &Request, p: INodeNo, _n: &OsStr, _t: &Path, reply: ReplyEntry) {
        reply.error(self.failed(req, "symlink", p.0, &FsError::ReadOnly));
    }

    /// Only a staged file moves (NCO writes `out.nc.pid….tmp`, closes it,
    /// then renames it `out.nc`): renamed to `NAME.nc` in a group's
    /// directory, it is committed then.
    fn rename(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        new_parent: INodeNo,
        new_name: &OsStr,
        _f: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let _span = Caller::of(req).span("rename");
        match self
            .mount
            .rename(asker(req), (parent.0, name), (new_parent.0, new_name))
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(self.failed(req, "rename", parent.0, &e)),
        }
    }

    fn link(&self, req: &Request, i: INodeNo, _np: INodeNo, _nn: &OsStr, reply: ReplyEntry) {
        reply.error(self.failed(req, "link", i.0, &FsError::ReadOnly));
    }

    fn write(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _wf: WriteFlags,
        _flags: OpenFlags,
        _lo: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        match self.mount.write(asker(req), ino.0, offset, data) {
            Ok(n) => reply.written(n),
            Err(e) => reply.error(self.failed(req, "write", ino.0, &e)),
        }
    }

    /// A new `NAME.nc` in a group's directory of a writable mount: staged
    /// until closed.
    fn create(&self, req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, _f: i32, reply: ReplyCreate) {
        let _span = Caller::of(req).span("create");
        let perm = (mode & !umask & 0o7777) as u16;
        match self.mount.create(asker(req), (req.gid(), perm), parent.0, name) {
            Ok((st, fh)) => reply.created(
                &STAGED_TTL,
                &self.staged_attr(st),
                Generation(0),
                FileHandle(fh),
                FopenFlags::FOPEN_DIRECT_IO,
            ),
            Err(e) => reply.error(self.failed(req, "create", parent.0, &e)),
        }
    }

    /// A `close()`: a staged file written since its last commit is
    /// committed now, and a commit that fails fails the `close()`.
    ///
    /// A read-only mount answers `ENOSYS`, which the kernel keeps for the
    /// connection: no close waits on the daemon (a stopped daemon's
    /// passthrough reads go on, and no close costs a round trip).
    fn flush(&self, req: &Request, ino: INodeNo, fh: FileHandle, _lo: LockOwner, reply: ReplyEmpty) {
        let _span = Caller::of(req).span("flush");
        match self.mount.flush(ino.0, fh.0, asker(req)) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(self.failed(req, "flush", ino.0, &e)),
        }
    }

    /// A staged file's bytes reach the spool's disk, and a whole one is
    /// committed; an array's file commits what was written (the mount core).
    /// (`ENOSYS` on a read-only mount, as `flush`.)
    fn fsync(&self, req: &Request, ino: INodeNo, fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        match self.mount.fsync(ino.0, fh.0, asker(req)) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(self.failed(req, "fsync", ino.0, &e)),
        }
    }

    fn setxattr(&self, req: &Request, i: INodeNo, _n: &OsStr, _v: &[u8], _f: i32, _p: u32, reply: ReplyEmpty) {
        reply.error(self.failed(req, "setxattr", i.0, &FsError::ReadOnly));
    }

    fn removexattr(&self, req: &Request, i: INodeNo, _n: &OsStr, reply: ReplyEmpty) {
        reply.error(self.failed(req, "removexattr", i.0, &FsError::ReadOnly));
    }

    /// Nothing has extended attributes: `ENOSYS`, which the kernel keeps
    /// for the connection and answers every later `getxattr` itself
    /// (`EOPNOTSUPP`). `ls -l` asks three per entry (`security.selinux`
    /// and both POSIX ACLs): answered by the daemon, they were most of a
    /// large listing's time.
    fn getxattr(&self, _req: &Request, _ino: INodeNo, _name: &OsStr, _size: u32, reply: ReplyXattr) {
        reply.error(Errno::ENOSYS);
    }

    /// The status document ([`crate::fs::status::STATUS_IOCTL`] on the
    /// mount root, as `nzfs status` asks): it returns the document's length;
    /// `nzfs commit` and `nzfs discard` ([`writes::ioctl`]) commit or drop
    /// what a `--commit explicit` mount holds. Any other ioctl is `ENOTTY`.
    #[allow(clippy::too_many_arguments)]
    fn ioctl(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _flags: IoctlFlags,
        cmd: u32,
        in_data: &[u8],
        out_size: u32,
        reply: ReplyIoctl,
    ) {
        if ino == INodeNo::ROOT
            && let Some(answer) = writes::ioctl(&self.mount, asker(req), cmd, in_data, out_size as usize)
        {
            return match answer {
                Ok(bytes) => reply.ioctl(0, &bytes),
                Err((what, e)) => reply.error(self.failed(req, what, ino.0, &e)),
            };
        }
        if ino != INodeNo::ROOT || cmd != crate::fs::status::STATUS_IOCTL {
            return reply.error(Errno::from_i32(libc::ENOTTY));
        }
        let doc = self.status(req.uid());
        match i32::try_from(doc.len()) {
            Ok(len) if doc.len() <= out_size as usize => reply.ioctl(len, doc.as_bytes()),
            _ => reply.error(Errno::from_i32(libc::ERANGE)),
        }
    }

    fn fallocate(&self, req: &Request, i: INodeNo, _fh: FileHandle, _o: u64, _l: u64, _m: i32, reply: ReplyEmpty) {
        reply.error(self.failed(req, "fallocate", i.0, &FsError::ReadOnly));
    }
}

/// Who made a request, as the mount core needs to know.
fn asker(req: &Request) -> Asker {
    Asker {
        uid: req.uid(),
        pid: req.pid(),
    }
}

/// The session's notifier is how the mount core tells the kernel.
impl Kernel for fuser::Notifier {
    fn drop_inode(&self, ino: u64, offset: i64, len: i64) -> std::io::Result<()> {
        self.inval_inode(INodeNo(ino), offset, len)
    }

    fn drop_entry(&self, parent: u64, name: &OsStr) -> std::io::Result<()> {
        self.inval_entry(INodeNo(parent), name)
    }
}

//! The fuser adapter: every method calls the core ([`crate::fs::NzFs`]) and
//! replies, or maps the error through [`FsError::errno`]. No filesystem
//! logic lives here.
//!
//! The store is treated as immutable while mounted: long TTLs, and
//! `FOPEN_KEEP_CACHE` so the kernel page cache serves re-reads. Every
//! write-type operation answers `EROFS`.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use fuser::{
    AccessFlags, Errno, FileAttr, FileHandle, FileType, FopenFlags, Generation, INodeNo, KernelConfig, LockOwner,
    OpenAccMode, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry,
    ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};

use crate::fs::{Attr, FsError, Kind, NzFs};

const TTL: Duration = Duration::from_secs(3600);
/// Kernel readahead and the largest read request, in bytes.
const MAX_READAHEAD: u32 = 1 << 20;

pub struct FuseAdapter {
    fs: Arc<NzFs>,
}

impl FuseAdapter {
    pub fn new(fs: NzFs) -> Self {
        let fs = Arc::new(fs);
        fs.start_prefetcher();
        FuseAdapter { fs }
    }

    fn attr(&self, a: Attr) -> FileAttr {
        let o = self.fs.options();
        FileAttr {
            ino: INodeNo(a.ino),
            size: a.size,
            blocks: a.size.div_ceil(512),
            atime: o.mtime,
            mtime: o.mtime,
            ctime: o.mtime,
            crtime: o.mtime,
            kind: file_type(a.kind),
            perm: a.perm,
            nlink: a.nlink,
            uid: a.uid,
            gid: a.gid,
            rdev: 0,
            blksize: MAX_READAHEAD,
            flags: 0,
        }
    }
}

fn file_type(k: Kind) -> FileType {
    match k {
        Kind::Directory => FileType::Directory,
        Kind::File => FileType::RegularFile,
    }
}

/// Log an error once, at the level its kind deserves, and turn it into an errno.
fn errno(op: &str, ino: u64, e: &FsError) -> Errno {
    if e.is_expected() {
        tracing::debug!(op, ino, error = %e);
    } else {
        tracing::warn!(op, ino, error = %e, "returning EIO");
    }
    Errno::from_i32(e.errno())
}

impl fuser::Filesystem for FuseAdapter {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        let _ = config.set_max_readahead(MAX_READAHEAD);
        tracing::info!(nodes = self.fs.hierarchy().nodes.len(), "mounted");
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.fs.lookup(parent.0, name) {
            Ok(a) => reply.entry(&TTL, &self.attr(a), Generation(0)),
            Err(e) => reply.error(errno("lookup", parent.0, &e)),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.fs.getattr(ino.0) {
            Ok(a) => reply.attr(&TTL, &self.attr(a)),
            Err(e) => reply.error(errno("getattr", ino.0, &e)),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, flags: OpenFlags, reply: ReplyOpen) {
        let write = flags.acc_mode() != OpenAccMode::O_RDONLY;
        match self.fs.open(ino.0, write) {
            Ok(()) => reply.opened(FileHandle(0), FopenFlags::FOPEN_KEEP_CACHE),
            Err(e) => reply.error(errno("open", ino.0, &e)),
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let ino = ino.0;
        // Answered by whichever thread finishes the chunk's decode, so this
        // worker is free for the next request meanwhile.
        self.fs.read_then(ino, offset, size, move |result| match result {
            Ok(data) => reply.data(data.bytes()),
            Err(e) => reply.error(errno("read", ino, &e)),
        });
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        match self.fs.opendir(ino.0) {
            Ok(()) => reply.opened(
                FileHandle(0),
                FopenFlags::FOPEN_KEEP_CACHE | FopenFlags::FOPEN_CACHE_DIR,
            ),
            Err(e) => reply.error(errno("opendir", ino.0, &e)),
        }
    }

    fn readdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        // Entries are produced in batches until the kernel's buffer is full.
        let mut offset = offset;
        loop {
            let batch = match self.fs.readdir(ino.0, offset, 256) {
                Ok(b) => b,
                Err(e) => return reply.error(errno("readdir", ino.0, &e)),
            };
            if batch.is_empty() {
                return reply.ok();
            }
            for entry in batch {
                if reply.add(
                    INodeNo(entry.ino),
                    entry.next_offset,
                    file_type(entry.kind),
                    &entry.name,
                ) {
                    return reply.ok();
                }
                offset = entry.next_offset;
            }
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        let files = self.fs.hierarchy().nodes.len() as u64;
        reply.statfs(0, 0, 0, files, 0, 4096, 255, MAX_READAHEAD);
    }

    fn access(&self, _req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        if mask.contains(AccessFlags::W_OK) {
            return reply.error(Errno::EROFS);
        }
        match self.fs.kind(ino.0) {
            Ok(_) => reply.ok(),
            Err(e) => reply.error(errno("access", ino.0, &e)),
        }
    }

    // Every write-type operation: read-only filesystem.

    fn setattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        _size: Option<u64>,
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
        reply.error(Errno::EROFS);
    }

    fn mknod(&self, _req: &Request, _p: INodeNo, _n: &OsStr, _m: u32, _u: u32, _r: u32, reply: ReplyEntry) {
        reply.error(Errno::EROFS);
    }

    fn mkdir(&self, _req: &Request, _p: INodeNo, _n: &OsStr, _m: u32, _u: u32, reply: ReplyEntry) {
        reply.error(Errno::EROFS);
    }

    fn unlink(&self, _req: &Request, _p: INodeNo, _n: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }

    fn rmdir(&self, _req: &Request, _p: INodeNo, _n: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }

    fn symlink(&self, _req: &Request, _p: INodeNo, _n: &OsStr, _t: &Path, reply: ReplyEntry) {
        reply.error(Errno::EROFS);
    }

    fn rename(
        &self,
        _req: &Request,
        _p: INodeNo,
        _n: &OsStr,
        _np: INodeNo,
        _nn: &OsStr,
        _f: RenameFlags,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::EROFS);
    }

    fn link(&self, _req: &Request, _i: INodeNo, _np: INodeNo, _nn: &OsStr, reply: ReplyEntry) {
        reply.error(Errno::EROFS);
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        _data: &[u8],
        _wf: WriteFlags,
        _flags: OpenFlags,
        _lo: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        reply.error(Errno::EROFS);
    }

    fn create(&self, _req: &Request, _p: INodeNo, _n: &OsStr, _m: u32, _u: u32, _f: i32, reply: ReplyCreate) {
        reply.error(Errno::EROFS);
    }

    fn setxattr(&self, _req: &Request, _i: INodeNo, _n: &OsStr, _v: &[u8], _f: i32, _p: u32, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }

    fn removexattr(&self, _req: &Request, _i: INodeNo, _n: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }

    fn fallocate(&self, _req: &Request, _i: INodeNo, _fh: FileHandle, _o: u64, _l: u64, _m: i32, reply: ReplyEmpty) {
        reply.error(Errno::EROFS);
    }
}

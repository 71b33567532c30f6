//! The attributes of each inode: its kind and size (from metadata alone,
//! so `stat` decodes nothing but the text views' sizes), owner and mode,
//! and mtime; and how the files that show store objects follow them.
//!
//! On a local store a file that shows objects (a chunk file, `data.bin`,
//! `data.txt`, a `.nc`, a TIFF) has an mtime that follows them: a chunk file's
//! carries its object's version, the others their arrays' generation
//! (which goes up when an object read for them changed), in the
//! nanoseconds of the mount's time. With a short attribute timeout for
//! just these files ([`NzFs::follows_store`]) and `FUSE_AUTO_INVAL_DATA`,
//! the kernel drops its cached pages of such a file within about a second
//! of a change, on the next read or open.
//!
//! Invariant: the version is read before the size, so a text view whose
//! objects changed is sized from the new values.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{Attr, FILE_BLKSIZE, FsError, Inode, Kind, NzFs};
use crate::array::Array;

/// `base` to the whole second, with `version` in its nanoseconds: a change
/// of version is a change of mtime.
fn following(base: SystemTime, version: u64) -> SystemTime {
    let since = base.duration_since(UNIX_EPOCH).unwrap_or_default();
    UNIX_EPOCH + Duration::from_secs(since.as_secs()) + Duration::from_nanos(version % 1_000_000_000)
}

impl NzFs {
    /// Whether `ino` exists, and what kind of node it is: what `open` and
    /// `access` need, without asking the store for owners and modes.
    pub fn kind(&self, ino: u64) -> Result<Kind, FsError> {
        let inode = self.inode(ino)?;
        self.kind_and_size(inode).map(|(kind, _)| kind)
    }

    /// The attributes of `ino`.
    pub fn getattr(&self, ino: u64) -> Result<Attr, FsError> {
        let inode = self.inode(ino)?;
        // First: a changed object counts its array's generation up, which
        // the sizes of text views follow.
        let version = self.values_version(inode);
        let (kind, size) = self.kind_and_size(inode)?;
        let access = match inode {
            Inode::Node(n) => self.dir_access(n),
            Inode::File(k, n) => k.view().access(self, n),
            Inode::Chunk { node, index } => self.chunk_access(node, index),
        };
        let (perm, uid, gid) = self.ownership_of(access, kind);
        let nlink = match kind {
            Kind::Directory => 2,
            Kind::File => 1,
        };
        let blksize = match inode {
            Inode::File(k, _) => k.view().blksize(),
            _ => FILE_BLKSIZE,
        };
        let mtime = self.made(inode.node());
        let mtime = match version {
            Some(v) => following(mtime, v),
            None => mtime,
        };
        Ok(Attr {
            ino,
            kind,
            size,
            perm,
            nlink,
            uid,
            gid,
            mtime,
            blksize,
        })
    }

    /// Whether the attributes of `ino` come without decoding anything: all
    /// but the text views' (`data.txt`, a variable-length array's chunk
    /// files), whose sizes are their rendered text's. A listing hands the
    /// kernel the cheap ones only, so that `ls` decodes nothing.
    pub fn attr_is_cheap(&self, ino: u64) -> bool {
        match self.inode(ino).ok() {
            Some(Inode::File(k, _)) => k.view().attr_is_cheap(),
            Some(Inode::Chunk { node, .. }) => self
                .dataset
                .array(node)
                .is_some_and(|a| a.metadata().data_type.element_size().is_some()),
            _ => true,
        }
    }

    /// What the mtime of a file that shows store objects follows (local
    /// stores only): a chunk file its object's version, `data.bin` and
    /// `data.txt` their array's generation, a `.nc` its arrays'. The kernel
    /// drops its cached pages of a file whose mtime changed
    /// (`FUSE_AUTO_INVAL_DATA`), at the latest when the short attribute
    /// timeout of such files ([`NzFs::follows_store`]) runs out.
    fn values_version(&self, inode: Inode) -> Option<u64> {
        match inode {
            Inode::Chunk { node, index } => self.dataset.array(node)?.object_version(index),
            Inode::File(k, n) if k.view().follows_store() => k.view().version(self, n),
            _ => None,
        }
    }

    /// The sum of the generations of the arrays among `nodes`: what a file
    /// that shows several arrays' values follows.
    pub(super) fn generations(&self, nodes: &[usize]) -> Option<u64> {
        self.sum_generations(nodes, Array::values_generation)
    }

    /// The sum of `generation` of each array among `nodes` (`None` when one
    /// is untracked): [`Array::values_generation`] looks at the store,
    /// [`Array::last_generation`] takes what that last counted.
    pub(super) fn sum_generations(&self, nodes: &[usize], generation: impl Fn(&Array) -> Option<u64>) -> Option<u64> {
        nodes.iter().try_fold(0u64, |sum, &c| match self.dataset.array(c) {
            Some(a) => generation(a).map(|g| sum.wrapping_add(g)),
            None => Some(sum),
        })
    }

    /// Whether `ino` is a file whose bytes follow the store's objects as
    /// they change (see `NzFs::values_version`): its attributes must be
    /// looked at again soon.
    pub fn follows_store(&self, ino: u64) -> bool {
        self.dataset.tracks_changes()
            && match self.inode(ino).ok() {
                Some(Inode::Chunk { .. }) => true,
                Some(Inode::File(k, _)) => k.view().follows_store(),
                _ => false,
            }
    }

    /// The kind and size of `inode`, from metadata alone.
    fn kind_and_size(&self, inode: Inode) -> Result<(Kind, u64), FsError> {
        Ok(match inode {
            Inode::Node(n) => {
                let node = self.hierarchy().nodes.get(n).ok_or(FsError::NotFound)?;
                (Kind::Directory, node.children.len() as u64)
            }
            Inode::File(k, n) => match k.view().name(self, n) {
                Some(_) => (Kind::File, k.view().size(self, n)?),
                None => return Err(FsError::NotFound),
            },
            Inode::Chunk { node, index } => {
                let (m, names) = self.array_files(node)?;
                if index >= names.count() {
                    return Err(FsError::NotFound);
                }
                match self.info[node].text.as_ref().filter(|t| t.variable) {
                    Some(_) => (Kind::File, self.chunk_text_size(node, index)?),
                    None => (Kind::File, m.chunk_bytes_of(index)),
                }
            }
        })
    }
}

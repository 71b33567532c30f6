//! A store on the local filesystem: key `a/b/c` is the file `ROOT/a/b/c`.
//!
//! Invariants ("a mount reveals no more than its store"):
//! - every key resolves beneath the root. By default ([`Symlinks::Beneath`])
//!   a key is opened with `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`
//!   relative to the root, so a symlink that stays inside the store works
//!   (as zarr-python allows) and one that leaves it is refused with an error
//!   naming the key. An absolute symlink is allowed only when its target is
//!   inside the root, and is then opened again with `RESOLVE_NO_SYMLINKS`
//!   along the resolved path, so a swap in between cannot escape.
//!   [`Symlinks::Follow`] opens plain paths (`--follow-symlinks`);
//! - only regular files are read: every object is opened with
//!   `O_NONBLOCK | O_NOCTTY` and checked with `fstat`, so a FIFO, socket,
//!   device or directory where an object is expected is refused at once
//!   (a directory is "no value": keys and prefixes share one namespace);
//! - the root is opened afresh for every request, so a store moved or
//!   deleted under a mount reads as gone, not as its old self;
//! - every request is registered in [`super::inflight`] while it runs;
//! - a listing never offers a link back to a directory above it (or to
//!   itself) as a prefix: the store's tree has no loop.

use crate::store::{StoreError, StoreResult};
use std::fs::File;
use std::io::Read;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use rustix::fs::{Advice, Dir, FileType, Mode, OFlags, RawMode, ResolveFlags, Stat};
use rustix::io::Errno;

use super::{
    Access, Listing, MAX_RANGE, RangeRequest, ReadableStore, Stamp, StoreKey, check_stamp, inflight, short_value,
    too_large,
};

/// How symlinks inside a filesystem store are treated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Symlinks {
    /// Followed only while they stay beneath the store root (the default).
    #[default]
    Beneath,
    /// Followed wherever they lead (`--follow-symlinks`).
    Follow,
}

/// A store on the local filesystem (see the module doc).
#[derive(Debug, Clone)]
pub struct FilesystemStore {
    root: PathBuf,
    symlinks: Symlinks,
}

impl FilesystemStore {
    /// A store rooted at `root`, whose symlinks must stay beneath it.
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self::with_symlinks(root, Symlinks::Beneath)
    }

    /// The store under `root`, following symlinks as `symlinks` says.
    pub fn with_symlinks(root: impl Into<PathBuf>, symlinks: Symlinks) -> Self {
        let root = root.into();
        // Canonical, so that a resolved symlink target can be compared with it.
        let root = root.canonicalize().unwrap_or(root);
        FilesystemStore { root, symlinks }
    }

    /// Its root directory (canonical where it could be made so).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Open `rel` (`""` is the root itself) with `flags`, beneath the root.
    fn resolve(&self, rel: &str, flags: OFlags) -> StoreResult<OwnedFd> {
        // openat2 refuses O_PATH with any flag but a few (O_NOCTTY among them).
        let flags = match flags.contains(OFlags::PATH) {
            false => flags | OFlags::CLOEXEC | OFlags::NOCTTY,
            true => flags | OFlags::CLOEXEC,
        };
        if rel.is_empty() {
            return open_path(&self.root, flags);
        }
        if self.symlinks == Symlinks::Follow {
            return open_path(&self.root.join(rel), flags);
        }
        let root = open_path(&self.root, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC)?;
        let beneath = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
        match openat2(&root, Path::new(rel), flags, beneath) {
            Err(e) if e.raw_os_error() == Some(libc::EXDEV) => {
                // An absolute symlink, or one that climbs out: allowed only
                // when where it ends is still beneath the root.
                let target = std::fs::canonicalize(self.root.join(rel)).map_err(|e| resolve_error(rel, e))?;
                let inside = target.strip_prefix(&self.root).map_err(|_| escapes(rel))?;
                let inside = if inside.as_os_str().is_empty() {
                    Path::new(".")
                } else {
                    inside
                };
                openat2(&root, inside, flags, beneath | ResolveFlags::NO_SYMLINKS).map_err(|e| resolve_error(rel, e))
            }
            r => r.map_err(|e| resolve_error(rel, e)),
        }
    }

    /// The regular file at `key` with its `stat`, or `None` when there is
    /// no value (nothing there, or a directory).
    fn open_object(&self, key: &StoreKey) -> StoreResult<Option<(File, Stat)>> {
        let fd = match self.resolve(key.as_str(), OFlags::RDONLY | OFlags::NONBLOCK) {
            Ok(fd) => fd,
            Err(e) if is_absent(&e) => return Ok(None),
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => return Err(not_regular(key, "a socket")),
            Err(e) => return Err(e),
        };
        let st = fstat(&fd)?;
        match file_kind(&st) {
            None => Ok(Some((File::from(fd), st))),
            Some("a directory") => Ok(None),
            Some(kind) => Err(not_regular(key, kind)),
        }
    }
}

impl FilesystemStore {
    /// The `stat` of whatever `rel` resolves to beneath the root (not
    /// opened: `O_PATH`), or `None` when nothing is there.
    /// The directories `""`, `a`, `a/b`, ... down to `prefix`, as (device,
    /// inode): a link to one of them makes a loop.
    fn directories_down_to(&self, prefix: &str) -> Vec<(u64, u64)> {
        let parts: Vec<&str> = prefix.split('/').filter(|p| !p.is_empty()).collect();
        (0..=parts.len())
            .filter_map(|n| self.stat_path(&parts[..n].join("/")).ok().flatten())
            .map(|st| (st.st_dev, st.st_ino))
            .collect()
    }

    fn stat_path(&self, rel: &str) -> StoreResult<Option<Stat>> {
        match self.resolve(rel, OFlags::PATH) {
            Ok(fd) => fstat(&fd).map(Some),
            Err(e) if is_absent(&e) => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// `None` for a regular file, else what the object is.
fn file_type(st: &Stat) -> FileType {
    FileType::from_raw_mode(st.st_mode as RawMode)
}

fn file_kind(st: &Stat) -> Option<&'static str> {
    match file_type(st) {
        FileType::RegularFile => None,
        FileType::Directory => Some("a directory"),
        FileType::Fifo => Some("a FIFO"),
        FileType::Socket => Some("a socket"),
        FileType::CharacterDevice => Some("a character device"),
        FileType::BlockDevice => Some("a block device"),
        _ => Some("not a regular file"),
    }
}

fn not_regular(key: &StoreKey, kind: &str) -> StoreError {
    StoreError::Corrupt(format!("{key} is {kind}, not a regular file: refused"))
}

fn escapes(rel: &str) -> StoreError {
    StoreError::Corrupt(format!(
        "{rel} is a symlink that leads outside the store: refused (--follow-symlinks allows it)"
    ))
}

/// Name the key in resolution errors that say something about the store.
fn resolve_error(rel: &str, e: impl Into<StoreError>) -> StoreError {
    let e = e.into();
    match e.raw_os_error() {
        Some(libc::EXDEV) => escapes(rel),
        Some(libc::ELOOP) => StoreError::Corrupt(format!("{rel}: too many levels of symlinks (a symlink loop?)")),
        _ => e,
    }
}

/// Errors that mean no object can be at a path: it is not there, a parent
/// is a file, or a name in it is longer than the filesystem allows (a node
/// named in consolidated metadata only may have any length).
fn is_absent(e: &StoreError) -> bool {
    e.is_not_found() || e.raw_os_error() == Some(libc::ENAMETOOLONG)
}

fn open_path(path: &Path, flags: OFlags) -> StoreResult<OwnedFd> {
    Ok(rustix::fs::open(path, flags, Mode::empty())?)
}

fn openat2(dir: &OwnedFd, rel: &Path, flags: OFlags, resolve: ResolveFlags) -> StoreResult<OwnedFd> {
    // With RESOLVE_BENEATH the kernel answers EAGAIN when a rename or
    // mount anywhere on the system raced the lookup: try again (bounded;
    // it succeeds at once unless renames run in a tight loop).
    let mut attempts = 0;
    loop {
        match rustix::fs::openat2(dir, rel, flags, Mode::empty(), resolve) {
            Err(Errno::AGAIN) if attempts < 64 => {
                attempts += 1;
                std::thread::yield_now();
            }
            other => return Ok(other?),
        }
    }
}

fn fstat(fd: &OwnedFd) -> StoreResult<Stat> {
    Ok(rustix::fs::fstat(fd)?)
}

// The field types of `Stat` differ between architectures: the casts are
// no-ops on some.
#[allow(clippy::unnecessary_cast)]
fn stamp(st: &Stat) -> Stamp {
    let ctime = (st.st_ctime as u64).wrapping_mul(1_000_000_007) ^ st.st_ctime_nsec as u64;
    let mtime = (st.st_mtime as u64).wrapping_mul(998_244_353) ^ st.st_mtime_nsec as u64;
    let version =
        (st.st_ino as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ctime.rotate_left(21) ^ mtime.rotate_left(42);
    Stamp {
        len: st.st_size as u64,
        version,
    }
}

/// `len` bytes at `offset` of an opened object, checked against its stamp
/// and length (see [`ReadableStore::get_range`]).
fn read_range(
    key: &StoreKey,
    (file, st): &(File, Stat),
    offset: u64,
    len: u64,
    expect: Option<Stamp>,
) -> StoreResult<Option<Vec<u8>>> {
    use std::os::unix::fs::FileExt;
    check_stamp(key, stamp(st), expect)?;
    let have = st.st_size as u64;
    if len > MAX_RANGE || offset.checked_add(len).is_none_or(|end| end > have) {
        return Err(short_value(key, offset, len, have));
    }
    let mut buf = vec![0; len as usize];
    file.read_exact_at(&mut buf, offset)
        .map_err(|_| short_value(key, offset, len, have))?;
    Ok(Some(buf))
}

/// The entries of an open directory, without `.` and `..`: each name and
/// its `d_type`.
fn read_dir_fd(fd: OwnedFd) -> StoreResult<Vec<(Vec<u8>, FileType)>> {
    let mut out = Vec::new();
    for entry in Dir::new(fd)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            out.push((name.to_vec(), entry.file_type()));
        }
    }
    Ok(out)
}

impl ReadableStore for FilesystemStore {
    fn get(&self, key: &StoreKey, max_len: u64) -> StoreResult<Option<Vec<u8>>> {
        let mut buf = Vec::new();
        Ok(self.get_into(key, max_len, &mut buf)?.then_some(buf))
    }

    fn get_into(&self, key: &StoreKey, max_len: u64, buf: &mut Vec<u8>) -> StoreResult<bool> {
        Ok(self.get_stamped(key, max_len, buf)?.0)
    }

    /// The stamp is the `fstat` of the file read, taken before its bytes
    /// are: a rewrite while it is read changes the object's stamp, which
    /// the next check sees.
    fn get_stamped(&self, key: &StoreKey, max_len: u64, buf: &mut Vec<u8>) -> StoreResult<(bool, Option<Stamp>)> {
        buf.clear();
        let _reading = inflight::begin(key.as_str());
        let Some((file, st)) = self.open_object(key)? else {
            return Ok((false, None));
        };
        let len = st.st_size as u64;
        if len > max_len {
            return Err(too_large(len, max_len));
        }
        buf.reserve_exact(len as usize);
        // The file may grow while we read: never read past the limit.
        file.take(max_len + 1).read_to_end(buf)?;
        if buf.len() as u64 > max_len {
            return Err(too_large(buf.len() as u64, max_len));
        }
        Ok((true, Some(stamp(&st))))
    }

    fn get_range(&self, key: &StoreKey, offset: u64, len: u64, expect: Option<Stamp>) -> StoreResult<Option<Vec<u8>>> {
        let _reading = inflight::begin(key.as_str());
        let Some(object) = self.open_object(key)? else {
            return Ok(None);
        };
        read_range(key, &object, offset, len, expect)
    }

    /// Runs of ranges of one key share one open, and the kernel is told of
    /// every range of a run before the first is read
    /// (`POSIX_FADV_WILLNEED`), so that the reads of a run's ranges that
    /// are not in the page cache go to the device together instead of one
    /// after the other (a random read of a shard file needs several).
    fn get_ranges(&self, requests: &[RangeRequest]) -> Vec<StoreResult<Option<Vec<u8>>>> {
        let mut out = Vec::with_capacity(requests.len());
        for run in requests.chunk_by(|a, b| a.key == b.key) {
            let key = &run[0].key;
            let _reading = inflight::begin(key.as_str());
            let object = match self.open_object(key) {
                Ok(Some(object)) => object,
                Ok(None) => {
                    out.extend(run.iter().map(|_| Ok(None)));
                    continue;
                }
                Err(_) => {
                    // Each request meets (and reports) the failure itself.
                    out.extend(run.iter().map(|r| self.get_range(key, r.offset, r.len, r.expect)));
                    continue;
                }
            };
            if run.len() > 1 {
                for r in run {
                    // Advice only: its failure changes nothing.
                    let len = std::num::NonZeroU64::new(r.len.min(MAX_RANGE));
                    let _ = rustix::fs::fadvise(&object.0, r.offset.min(i64::MAX as u64), len, Advice::WillNeed);
                }
            }
            out.extend(run.iter().map(|r| read_range(key, &object, r.offset, r.len, r.expect)));
        }
        out
    }

    fn stat(&self, key: &StoreKey) -> StoreResult<Option<Stamp>> {
        let _reading = inflight::begin(key.as_str());
        let Some(st) = self.stat_path(key.as_str())? else {
            return Ok(None);
        };
        match file_kind(&st) {
            None => Ok(Some(stamp(&st))),
            Some("a directory") => Ok(None),
            Some(kind) => Err(not_regular(key, kind)),
        }
    }

    fn dir_stamp(&self, prefix: &str) -> StoreResult<Option<Stamp>> {
        let _reading = inflight::begin(prefix);
        Ok(self
            .stat_path(prefix)?
            .filter(|st| file_type(st) == FileType::Directory)
            .map(|st| stamp(&st)))
    }

    fn profile(&self) -> super::Profile {
        super::Profile {
            rereads_are_cheap: true,
            ..super::Profile::default()
        }
    }

    fn will_need(&self, key: &StoreKey) {
        if let Ok(Some((file, _))) = self.open_object(key) {
            // Advice only, on the whole file: its failure changes nothing.
            let _ = rustix::fs::fadvise(&file, 0, None, Advice::WillNeed);
        }
    }

    fn access(&self, path: &str) -> StoreResult<Option<Access>> {
        let _reading = inflight::begin(path);
        Ok(self.stat_path(path)?.map(|st| Access {
            uid: st.st_uid,
            gid: st.st_gid,
            mode: st.st_mode & 0o7777,
        }))
    }
}

impl crate::store::Listable for FilesystemStore {
    fn list_dir(&self, prefix: &str) -> StoreResult<Listing> {
        if !prefix.is_empty() {
            StoreKey::new(prefix)?;
        }
        let _reading = inflight::begin(prefix);
        let mut listing = Listing::default();
        let fd = match self.resolve(prefix, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NONBLOCK) {
            Ok(fd) => fd,
            Err(e) if is_absent(&e) => return Ok(listing),
            Err(e) => return Err(e),
        };
        // The directories from the root down to this one, as (device,
        // inode), asked for at the first link met.
        let mut above: Option<Vec<(u64, u64)>> = None;
        for (name, d_type) in read_dir_fd(fd)? {
            let Ok(name) = String::from_utf8(name) else {
                tracing::warn!(prefix, "skipping a non-UTF-8 name");
                continue;
            };
            let is_dir = match d_type {
                FileType::Directory => true,
                FileType::Symlink | FileType::Unknown => {
                    // A symlink is a prefix when it resolves, beneath the
                    // root, to a directory; anything else is listed as a key
                    // whose read says what is wrong with it.
                    let rel = if prefix.is_empty() {
                        name.clone()
                    } else {
                        format!("{prefix}/{name}")
                    };
                    match self.stat_path(&rel) {
                        Ok(Some(st)) if file_type(&st) == FileType::Directory => {
                            let above = above.get_or_insert_with(|| self.directories_down_to(prefix));
                            if above.contains(&(st.st_dev, st.st_ino)) {
                                // A loop (`a -> .`): a tree without end.
                                tracing::warn!(key = %rel, "a link to a directory above it: not followed");
                                continue;
                            }
                            true
                        }
                        _ => false,
                    }
                }
                _ => false,
            };
            if is_dir {
                listing.prefixes.push(name)
            } else {
                listing.keys.push(name)
            }
        }
        listing.keys.sort();
        listing.prefixes.sort();
        Ok(listing)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Listable;
    use std::os::unix::fs::symlink;

    fn key(k: &str) -> StoreKey {
        StoreKey::new(k).unwrap()
    }

    #[test]
    fn symlinks_inside_work_and_outside_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = dir.path().join("s");
        std::fs::create_dir_all(store.join("a/c")).unwrap();
        std::fs::write(store.join("a/c/0"), b"inside").unwrap();
        std::fs::write(dir.path().join("secret"), b"outside").unwrap();
        symlink("0", store.join("a/c/rel")).unwrap();
        symlink(store.join("a/c/0"), store.join("a/c/abs")).unwrap();
        symlink("../../../secret", store.join("a/c/up")).unwrap();
        symlink(dir.path().join("secret"), store.join("a/c/out")).unwrap();
        symlink("loop", store.join("a/c/loop")).unwrap();
        symlink("c", store.join("a/d")).unwrap();
        let s = FilesystemStore::new(&store);
        assert_eq!(s.get(&key("a/c/rel"), 99).unwrap().unwrap(), b"inside");
        assert_eq!(s.get(&key("a/c/abs"), 99).unwrap().unwrap(), b"inside");
        assert_eq!(s.get(&key("a/d/0"), 99).unwrap().unwrap(), b"inside");
        for k in ["a/c/up", "a/c/out"] {
            let e = s.get(&key(k), 99).unwrap_err();
            assert!(e.to_string().contains("outside the store"), "{k}: {e}");
            assert!(s.get_range(&key(k), 0, 1, None).is_err());
            assert!(s.stat(&key(k)).is_err());
        }
        let e = s.get(&key("a/c/loop"), 99).unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
        let l = s.list_dir("a").unwrap();
        assert_eq!(l.prefixes, ["c", "d"]);
        let follow = FilesystemStore::with_symlinks(&store, Symlinks::Follow);
        assert_eq!(follow.get(&key("a/c/out"), 99).unwrap().unwrap(), b"outside");
    }

    /// One buffer serves reads of values of any size, each exactly the
    /// value; an absent key leaves it empty, and a value over the limit is
    /// an error whatever the buffer held.
    #[test]
    fn get_into_reuses_one_buffer_for_values_of_any_size() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("big"), vec![1u8; 5000]).unwrap();
        std::fs::write(dir.path().join("small"), b"abc").unwrap();
        let s = FilesystemStore::new(dir.path());
        let mut buf = Vec::new();
        assert!(s.get_into(&key("big"), 5000, &mut buf).unwrap());
        assert_eq!(buf, vec![1u8; 5000]);
        assert!(s.get_into(&key("small"), 5000, &mut buf).unwrap());
        assert_eq!(buf, b"abc");
        assert!(buf.capacity() >= 5000, "the buffer was kept");
        assert!(!s.get_into(&key("nope"), 5000, &mut buf).unwrap());
        assert!(buf.is_empty());
        assert!(s.get_into(&key("big"), 4999, &mut buf).is_err());
        assert_eq!(s.get(&key("small"), 3).unwrap().unwrap(), b"abc");
    }

    #[test]
    fn special_files_are_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        rustix::fs::mknodat(rustix::fs::CWD, &fifo, FileType::Fifo, Mode::from_raw_mode(0o644), 0).unwrap();
        let _sock = std::os::unix::net::UnixListener::bind(dir.path().join("sock")).unwrap();
        let s = FilesystemStore::new(dir.path());
        for (k, what) in [("fifo", "FIFO"), ("sock", "socket")] {
            let e = s.get(&key(k), 99).unwrap_err();
            assert!(e.to_string().contains(what), "{k}: {e}");
            assert!(s.get_range(&key(k), 0, 1, None).is_err());
        }
        assert!(s.stat(&key("fifo")).is_err());
        let dev = FilesystemStore::with_symlinks(dir.path(), Symlinks::Follow);
        symlink("/dev/zero", dir.path().join("zero")).unwrap();
        let e = dev.get(&key("zero"), 99).unwrap_err();
        assert!(e.to_string().contains("character device"), "{e}");
    }

    #[test]
    fn access_reports_owner_and_mode() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("k"), b"x").unwrap();
        std::fs::set_permissions(dir.path().join("k"), std::fs::Permissions::from_mode(0o640)).unwrap();
        let s = FilesystemStore::new(dir.path());
        let a = s.access("k").unwrap().unwrap();
        assert_eq!(a.mode, 0o640);
        assert_eq!(a.uid, unsafe { libc::getuid() });
        assert!(s.access("").unwrap().is_some());
        assert_eq!(s.access("nope").unwrap(), None);
    }

    #[test]
    fn get_ranges_answers_each_range_as_get_range_would() {
        let dir = tempfile::tempdir().unwrap();
        let data: Vec<u8> = (0..=255u8).cycle().take(10_000).collect();
        std::fs::write(dir.path().join("a"), &data).unwrap();
        std::fs::write(dir.path().join("b"), b"short").unwrap();
        let s = FilesystemStore::new(dir.path());
        let a = s.stat(&key("a")).unwrap().unwrap();
        let stale = Stamp {
            version: a.version ^ 1,
            ..a
        };
        let r = |k: &str, offset, len, expect| RangeRequest {
            key: key(k),
            offset,
            len,
            expect,
        };
        let requests = [
            r("a", 0, 10, Some(a)),
            r("a", 9_000, 1_000, None),
            r("a", 9_999, 2, None),
            r("a", 5, 5, Some(stale)),
            r("nope", 0, 1, None),
            r("b", 1, 3, None),
            r("a", 4_096, 100, Some(a)),
        ];
        let got = s.get_ranges(&requests);
        assert_eq!(got.len(), requests.len());
        for (q, g) in requests.iter().zip(got) {
            let one = s.get_range(&q.key, q.offset, q.len, q.expect);
            match (g, one) {
                (Ok(g), Ok(one)) => assert_eq!(g, one, "{q:?}"),
                (Err(g), Err(one)) => assert_eq!(g.to_string(), one.to_string(), "{q:?}"),
                (g, one) => panic!("{q:?}: batch {g:?}, alone {one:?}"),
            }
        }
        let again = s.get_ranges(&requests[..2]);
        assert_eq!(again[0].as_ref().unwrap().as_deref(), Some(&data[..10]));
        assert_eq!(again[1].as_ref().unwrap().as_deref(), Some(&data[9_000..]));
    }
}

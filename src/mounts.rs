//! The kernel's mount table, read in one place: `/proc/self/mountinfo`,
//! its fields split and its octal escapes (`\040` space, `\011` tab,
//! `\012` newline, `\134` backslash) undone, so that a mount point whose
//! name holds any byte but NUL is found by its real path.

use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

/// One mount: where, of what type, from what source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mounted {
    /// The mount point, unescaped.
    pub point: PathBuf,
    /// The filesystem type (`fuse.nzfs`).
    pub fstype: String,
    /// The source, unescaped (`nzfs:STORE`).
    pub source: String,
    /// Its device number as `major:minor` (what `st_dev` of its files
    /// says, without asking the filesystem).
    pub dev: String,
}

/// A field as mountinfo writes it, back to its bytes.
pub fn unescape(field: &str) -> Vec<u8> {
    let b = field.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 3 < b.len() && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c)) {
            let v = u32::from(b[i + 1] - b'0') * 64 + u32::from(b[i + 2] - b'0') * 8 + u32::from(b[i + 3] - b'0');
            out.push(v as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// One line of mountinfo, parsed.
fn parse(line: &str) -> Option<Mounted> {
    let (left, right) = line.split_once(" - ")?;
    let dev = left.split(' ').nth(2)?;
    let point = left.split(' ').nth(4)?;
    let mut r = right.split(' ');
    let fstype = r.next()?;
    let source = r.next()?;
    Some(Mounted {
        point: PathBuf::from(OsString::from_vec(unescape(point))),
        fstype: String::from_utf8_lossy(&unescape(fstype)).into_owned(),
        source: String::from_utf8_lossy(&unescape(source)).into_owned(),
        dev: dev.to_string(),
    })
}

/// Every mount this process sees, in mount order (empty if the table
/// cannot be read).
pub fn table() -> Vec<Mounted> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(parse)
        .collect()
}

/// The innermost nzfs mount that `path` lies strictly inside, if any
/// (`path` made absolute first; no request is made to the mount).
pub fn nzfs_mount_around(path: &Path) -> Option<Mounted> {
    let path = std::path::absolute(path).ok()?;
    table()
        .into_iter()
        .filter(|m| m.fstype == "fuse.nzfs" && path != m.point && path.starts_with(&m.point))
        .max_by_key(|m| m.point.as_os_str().len())
}

/// The last mount at `point` (the top of a stack), if any.
pub fn at(point: &Path) -> Option<Mounted> {
    table().into_iter().rev().find(|m| m.point == point)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_are_undone() {
        assert_eq!(unescape(r"/var/lib/a\040b"), b"/var/lib/a b");
        assert_eq!(unescape(r"nzfs:/x\134y"), br"nzfs:/x\y");
        assert_eq!(unescape(r"/t\011ab\012nl"), b"/t\tab\nnl");
        assert_eq!(unescape(r"end\04"), br"end\04");
        assert_eq!(unescape(r"\777"), [0o777u32 as u8]);
        let m = parse(r"36 35 98:0 / /mnt/a\011b rw,noatime master:1 - fuse.nzfs nzfs:/d\040x rw").unwrap();
        assert_eq!(m.point, Path::new("/mnt/a\tb"));
        assert_eq!(m.dev, "98:0");
        assert_eq!(m.fstype, "fuse.nzfs");
        assert_eq!(m.source, "nzfs:/d x");
        // This test's own root is a mount point with a type.
        assert!(at(Path::new("/")).is_some());
    }
}

//! The request this thread serves, in one place: who waits for it (the
//! process id the kernel gives with each FUSE request, so that long work
//! done for one reader, a preview's render, can stop once that reader is
//! gone: killed, or interrupted by Ctrl-C, as fuser does not pass
//! FUSE_INTERRUPT on), and for a read, which bytes of which file (so that
//! dropping the kernel's pages of a changed chunk leaves out the pages this
//! read is filling).
//!
//! Invariants: the request is set only for the duration of [`serving`], on
//! the thread that serves it, and the one before is put back after; with
//! none set (the Python API, tests, work run for a prefetch), work always
//! goes on and every page may be dropped.

use std::cell::Cell;

/// One request: its reader, and the read's `(inode, offset, size)`.
#[derive(Clone, Copy, Default)]
struct Request {
    reader: Option<u32>,
    read: Option<(u64, u64, u64)>,
}

thread_local! {
    static REQUEST: Cell<Request> = const {
        Cell::new(Request {
            reader: None,
            read: None,
        })
    };
}

/// Run `f` as the service of a request from process (thread) `pid`; for a
/// read, of `[offset, offset + size)` of inode `ino` (`read`).
pub fn serving<T>(pid: u32, read: Option<(u64, u64, u32)>, f: impl FnOnce() -> T) -> T {
    let now = Request {
        reader: Some(pid).filter(|&p| p != 0),
        read: read.map(|(ino, offset, size)| (ino, offset, u64::from(size))),
    };
    let before = REQUEST.with(|r| r.replace(now));
    let out = f();
    REQUEST.with(|r| r.set(before));
    out
}

/// The reader of the request this thread serves, if any.
pub fn current() -> Option<u32> {
    REQUEST.with(Cell::get).reader
}

/// The read this thread serves, `(inode, offset, size)`, if any.
pub fn current_read() -> Option<(u64, u64, u64)> {
    REQUEST.with(Cell::get).read
}

/// Whether process (or thread) `pid` still runs: it exists in `/proc` and
/// is neither a zombie nor dead. A `/proc` that cannot be read says yes.
pub fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the command name, which is in parentheses and
        // may hold any byte: look after the last ')'.
        Ok(stat) => !matches!(
            stat.rsplit_once(')')
                .and_then(|(_, rest)| rest.trim_start().chars().next()),
            Some('Z' | 'X' | 'x')
        ),
        Err(e) => e.kind() != std::io::ErrorKind::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readers_are_scoped_and_the_dead_are_told() {
        assert_eq!(current(), None);
        serving(std::process::id(), Some((7, 4096, 100)), || {
            assert_eq!(current(), Some(std::process::id()));
            assert_eq!(current_read(), Some((7, 4096, 100)));
            assert!(alive(std::process::id()));
            serving(0, None, || assert_eq!((current(), current_read()), (None, None)));
            assert_eq!(current_read(), Some((7, 4096, 100)));
        });
        assert_eq!((current(), current_read()), (None, None));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Exited but not reaped: a zombie.
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(!alive(pid));
        child.wait().unwrap();
        assert!(!alive(pid));
    }
}

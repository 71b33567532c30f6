//! Who is waiting for the request this thread serves: the process id the
//! kernel gives with each FUSE request, so that long work done for one
//! reader (a preview's render) can stop once that reader is gone (killed,
//! or interrupted by Ctrl-C: fuser does not pass FUSE_INTERRUPT on).
//!
//! Invariants: the reader is set only for the duration of [`serving`], on
//! the thread that serves the request; with no reader set (the Python API,
//! tests, work run for a prefetch), work always goes on.

use std::cell::Cell;

thread_local! {
    static READER: Cell<Option<u32>> = const { Cell::new(None) };
}

/// Run `f` as the service of a request from process (thread) `pid`.
pub fn serving<T>(pid: u32, f: impl FnOnce() -> T) -> T {
    let before = READER.with(|r| r.replace(Some(pid).filter(|&p| p != 0)));
    let out = f();
    READER.with(|r| r.set(before));
    out
}

/// The reader of the request this thread serves, if any.
pub fn current() -> Option<u32> {
    READER.with(Cell::get)
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
        serving(std::process::id(), || {
            assert_eq!(current(), Some(std::process::id()));
            assert!(alive(std::process::id()));
        });
        assert_eq!(current(), None);
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Exited but not reaped: a zombie.
        std::thread::sleep(std::time::Duration::from_millis(200));
        assert!(!alive(pid));
        child.wait().unwrap();
        assert!(!alive(pid));
    }
}

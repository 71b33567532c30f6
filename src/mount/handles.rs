//! The handle table: an open that holds something until its release (a
//! passthrough backing, a read through the daemon for want of room for
//! one, a file opened for writing) gets a handle number of its own,
//! recorded with its inode, what it holds and the opener's pid. Every
//! other open (a read through the daemon, a file being written opened for
//! reading, a directory) is handle 0 and holds nothing, so reads cost no
//! entry.
//!
//! Invariants: a recorded handle's number is never 0 and is not reused
//! while the daemon runs; an inode has an open through the daemon for
//! want of room exactly while such a handle of it is recorded.

use std::collections::HashMap;
use std::sync::Mutex;

use super::Handle;
use crate::sync::lock;

/// What an open holds until its release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held {
    /// A chunk file the kernel reads from a backing file.
    Passthrough,
    /// A chunk file read through the daemon because its backing would not
    /// fit the budget: no backing is made for the inode meanwhile.
    OverBudget,
    /// An array's file opened for writing: its `flush` and `fsync` commit.
    Edit,
    /// A file being written, opened for writing (its `create` too): its
    /// `flush` and `fsync` commit, its last release commits what a shared
    /// `mmap` wrote after the close.
    StagedWrite,
}

impl Held {
    /// What a handle that holds `held` (`None`: nothing) is to the core's
    /// requests.
    pub fn handle(held: Option<Held>) -> Handle {
        match held {
            Some(Held::StagedWrite) => Handle::StagedWrite,
            Some(Held::Edit) => Handle::Edit,
            Some(Held::Passthrough | Held::OverBudget) | None => Handle::Other,
        }
    }
}

/// One recorded open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Open {
    /// The inode opened.
    pub ino: u64,
    /// What it holds.
    pub held: Held,
    /// The process (thread) that opened it.
    pub pid: u32,
}

#[derive(Default)]
struct Table {
    last: u64,
    open: HashMap<u64, Open>,
    /// Handles of [`Held::OverBudget`], by inode.
    through_daemon: HashMap<u64, u32>,
}

/// The handle table (module doc).
#[derive(Default)]
pub struct Handles {
    table: Mutex<Table>,
}

impl Handles {
    /// Record `open`: its handle number.
    pub fn open(&self, open: Open) -> u64 {
        let mut t = lock(&self.table);
        t.last += 1;
        let fh = t.last;
        if open.held == Held::OverBudget {
            *t.through_daemon.entry(open.ino).or_default() += 1;
        }
        t.open.insert(fh, open);
        fh
    }

    /// What handle `fh` is, as the core's requests need to know.
    pub fn handle(&self, fh: u64) -> Handle {
        Held::handle(lock(&self.table).open.get(&fh).map(|o| o.held))
    }

    /// Forget handle `fh` at its release: what it was, if recorded.
    pub fn release(&self, fh: u64) -> Option<Open> {
        let mut t = lock(&self.table);
        let open = t.open.remove(&fh)?;
        if open.held == Held::OverBudget
            && let Some(n) = t.through_daemon.get_mut(&open.ino)
        {
            *n -= 1;
            if *n == 0 {
                t.through_daemon.remove(&open.ino);
            }
        }
        Some(open)
    }

    /// The processes (the threads that opened them) holding `ino` open
    /// for writing: a file being written, or an array's file.
    pub fn writers(&self, ino: u64) -> Vec<u32> {
        lock(&self.table)
            .open
            .values()
            .filter(|o| o.ino == ino && matches!(o.held, Held::StagedWrite | Held::Edit))
            .map(|o| o.pid)
            .collect()
    }

    /// Whether `ino` is open through the daemon for want of room for a
    /// backing.
    pub fn through_daemon(&self, ino: u64) -> bool {
        lock(&self.table).through_daemon.contains_key(&ino)
    }

    /// How many opens are recorded.
    pub fn len(&self) -> usize {
        lock(&self.table).open.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Handles are distinct and not 0, say what they hold, and an inode is
    /// open through the daemon until the last such handle of it goes.
    #[test]
    fn handles_are_recorded_until_their_release() {
        let h = Handles::default();
        let open = |ino, held| Open { ino, held, pid: 7 };
        let a = h.open(open(5, Held::OverBudget));
        let b = h.open(open(5, Held::OverBudget));
        let c = h.open(open(6, Held::Edit));
        let d = h.open(open(7, Held::StagedWrite));
        assert!(a != 0 && a != b && b != c && c != d);
        assert_eq!(
            (h.handle(c), h.handle(d), h.handle(a)),
            (Handle::Edit, Handle::StagedWrite, Handle::Other)
        );
        assert_eq!(h.handle(0), Handle::Other);
        assert!(h.through_daemon(5) && !h.through_daemon(6));
        assert_eq!(h.release(a), Some(open(5, Held::OverBudget)));
        assert!(h.through_daemon(5), "one such open of 5 is left");
        h.release(b);
        assert!(!h.through_daemon(5));
        assert_eq!(h.release(b), None, "released once");
        assert_eq!(h.len(), 2);
        let e = h.open(open(5, Held::Passthrough));
        assert!(e > d, "numbers are not reused");
        // Who holds a file open for writing: the writers' handles alone.
        let f = h.open(Open {
            ino: 6,
            held: Held::Edit,
            pid: 9,
        });
        h.open(open(6, Held::Passthrough));
        assert_eq!(sorted(h.writers(6)), [7, 9]);
        h.release(f);
        assert_eq!(h.writers(6), [7]);
        assert_eq!(h.writers(5), Vec::<u32>::new());
    }

    fn sorted(mut v: Vec<u32>) -> Vec<u32> {
        v.sort_unstable();
        v
    }
}

//! Dropping what the kernel caches of the files that showed a chunk object
//! that changed. When the core finds an object changed since a decode read
//! it ([`crate::array::Dataset::on_change`]), the pages and attributes the
//! kernel holds of every view of that chunk ([`NzFs::views_of_chunk`]) are
//! dropped before anything decoded from the object now is served: what the
//! kernel itself does only at the attribute timeout. Without it a buffered
//! read could return a chunk that never existed, its cached pages old and
//! the rest new.
//!
//! Invariants: notifications are written by one thread of their own; the
//! thread that found the change waits for them at most [`WAIT`], because
//! the kernel drops a page only once no read holds it, and a read in
//! flight may be waiting for that very thread (a shared decode): past the
//! wait, the pages are dropped as soon as those reads end, and nothing
//! deadlocks. The pages of the read the finding thread serves
//! ([`crate::fs::reader::current_read`]) are left out (they are being
//! filled with the new bytes).

use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use super::kernel::{Kernel, KernelSlot};

use crate::fs::NzFs;

/// The longest the thread that found a change waits for the kernel.
pub const WAIT: Duration = Duration::from_millis(50);

/// Pages, for rounding the read left out.
const PAGE: u64 = 4096;

/// One batch of `(inode, offset, length)` to drop (length 0: to the end),
/// and who waits for it.
struct Job {
    ranges: Vec<(u64, i64, i64)>,
    done: SyncSender<()>,
}

/// The thread that writes the notifications.
pub struct Invalidator {
    /// Unbounded, so that a sender never waits on a thread that waits on
    /// the kernel (a job is a few inode numbers, and changes are rare).
    jobs: Sender<Job>,
}

impl Invalidator {
    /// Start the thread; it writes through the notifier once the session
    /// has put it in `slot` (nothing is cached before).
    pub fn start(slot: KernelSlot) -> std::io::Result<Arc<Invalidator>> {
        let (tx, rx) = channel::<Job>();
        std::thread::Builder::new()
            .name("nzfs-invalidate".into())
            .spawn(move || run(&rx, &slot))?;
        Ok(Arc::new(Invalidator { jobs: tx }))
    }

    /// Have the core tell this invalidator of every changed chunk of
    /// `fs`'s dataset (held weakly: the core owns the callback).
    pub fn watch(self: &Arc<Self>, fs: &Arc<NzFs>) {
        let (me, weak): (Arc<Invalidator>, Weak<NzFs>) = (Arc::clone(self), Arc::downgrade(fs));
        fs.dataset().on_change(Box::new(move |node, chunk| {
            if let Some(fs) = weak.upgrade() {
                me.drop_files(&fs.views_of_chunk(node, chunk));
            }
        }));
    }

    /// Drop the kernel's pages and attributes of `inos`, less the read
    /// this thread serves, waiting at most `WAIT`.
    pub fn drop_files(&self, inos: &[u64]) {
        let serving = crate::fs::reader::current_read();
        let ranges = inos.iter().flat_map(|&ino| ranges_of(ino, serving)).collect();
        let (done, finished) = sync_channel(1);
        if self.jobs.send(Job { ranges, done }).is_ok() {
            let _ = finished.recv_timeout(WAIT);
        }
    }
}

/// The ranges of `ino` to drop: all of it, or, where it is the file of
/// the read in flight, what lies around that read's pages.
fn ranges_of(ino: u64, serving: Option<(u64, u64, u64)>) -> Vec<(u64, i64, i64)> {
    let clamp = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    match serving {
        Some((i, offset, size)) if i == ino => {
            let first = offset / PAGE * PAGE;
            let end = offset.saturating_add(size).div_ceil(PAGE).saturating_mul(PAGE);
            let mut out = Vec::with_capacity(2);
            if first > 0 {
                out.push((ino, 0, clamp(first)));
            }
            if end < i64::MAX as u64 {
                out.push((ino, clamp(end), 0));
            }
            out
        }
        _ => vec![(ino, 0, 0)],
    }
}

fn run(jobs: &Receiver<Job>, slot: &OnceLock<Arc<dyn Kernel>>) {
    for job in jobs {
        if let Some(n) = slot.get() {
            for (ino, offset, len) in job.ranges {
                // ENOENT: the kernel holds no such inode (never looked up,
                // or forgotten), so nothing of it is cached.
                if let Err(e) = n.drop_inode(ino, offset, len)
                    && e.kind() != std::io::ErrorKind::NotFound
                {
                    tracing::debug!(ino, error = %e, "the kernel's pages of a changed file were not dropped");
                }
            }
        }
        let _ = job.done.try_send(());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_read_in_flight_is_left_out_by_whole_pages() {
        assert_eq!(ranges_of(7, None), [(7, 0, 0)]);
        assert_eq!(ranges_of(7, Some((8, 0, 4096))), [(7, 0, 0)]);
        assert_eq!(ranges_of(7, Some((7, 0, 4096))), [(7, 4096, 0)]);
        assert_eq!(ranges_of(7, Some((7, 5000, 100))), [(7, 0, 4096), (7, 8192, 0)]);
        assert_eq!(ranges_of(7, Some((7, 8192, 8192))), [(7, 0, 8192), (7, 16384, 0)]);
        assert_eq!(ranges_of(7, Some((7, u64::MAX - 10, 100))), [(7, 0, i64::MAX)]);
    }
}

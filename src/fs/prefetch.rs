//! Prefetch along sequential readers, with a window that grows.
//!
//! Two readers are recognised: one that starts chunk files of an array in
//! order (chunk file `k` soon after `k - 1`, give or take a few places for
//! several readers sharing the files), and one that reads the flat bytes of an
//! array (`data.bin`, or a variable of a group's `.nc`) where its last read
//! ended. Flat readers are followed each on its own: up to [`STREAMS`]
//! streams per array, a read continuing the stream whose last read ended
//! within [`SLACK`] of it, so that many readers of one file (MPI ranks,
//! dask workers, `xargs -P`) each get their window instead of resetting
//! one another's. A read of the first chunk file, or of the flat bytes from
//! offset 0, starts a run at once; elsewhere the second read in order does.
//! Each run gets a window of chunks ahead of it, decoded by background
//! workers through the cache. The window starts at about [`START_BYTES`]
//! and doubles with every step the run continues (as mountpoint-s3 does),
//! up to [`MAX_WINDOW`] chunks and a third of the cache budget shared by
//! the array's streams, so prefetching never evicts what is being read.
//! Any other access of chunk files resets their run.
//!
//! Threads of their own (up to [`MAX_ADVISERS`]) tell the disk which objects the
//! window will need ([`Array::will_need`]), so that a reader's reply never
//! waits for the opens (each can wait for the disk, for a cold directory
//! or inode).
//!
//! There are as many workers as the CPUs the daemon may use
//! ([`crate::cpus::Sizing::decoders`]), and at least as many as the store
//! serves requests well at once
//! ([`Profile::concurrency`](crate::store::Profile::concurrency):
//! 16 for object storage), each blocked on one chunk, so a reader keeps
//! every core decoding and a remote reader that many requests in flight.
//! A chunk is
//! decoded at most once whoever asks first (the cache's decode-once rule),
//! and a chunk is queued at most once per run, so prefetching never
//! duplicates a request; nor does it decode again a chunk that a reader
//! has just read whole and the kernel page cache holds (`served`), even
//! when a job for it was overtaken by the reader. Arrays whose shards are
//! read partially are not prefetched: one read there already fetches its
//! inner chunks together.
//!
//! The same workers share a shard read's decoding ([`NzFs::share_decodes`]):
//! when one read needs several inner chunks decoded (a 4 KiB row of a shard
//! of 128x128 inner chunks crosses 8), a worker takes the second half, last
//! first, with the bytes the read fetched, while the reader decodes from the
//! first; they meet in the middle, and the cache's decode-once rule keeps
//! either from decoding (or reading) what the other has.

use crate::sync::lock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Arc, Mutex, Weak};

use super::NzFs;
use crate::array::{Array, SharedDecodes};

/// The window's first size, in bytes of decoded chunks.
const START_BYTES: u64 = 1 << 20;
/// The most chunks ahead of a reader.
const MAX_WINDOW: u64 = 64;
/// A flat read that starts this close to where a stream's last read ended
/// continues that stream: the kernel's readahead sends its requests at
/// once, and they arrive in any order.
const SLACK: u64 = 16 << 20;
/// Readers of one array's flat bytes followed at once, at most.
const STREAMS: usize = 32;
/// A chunk file started this close to the last one started (either side)
/// continues the run: several readers of one array, each taking every
/// n-th file (`cat` of half the files each, `xargs -P`), start files a
/// little out of order, and a run that reset at every swap would prefetch
/// nothing for them.
const NEAR_STARTS: u64 = 4;
/// Threads that tell the disk what the window needs, at most (as many as
/// the workers up to this). An object's open can wait for the disk (a cold
/// directory block or inode), and several such waits in flight at once keep
/// the disk busy where one after another left it idle (a cold read of 128
/// chunks in 128 directories: one thread spent most of the read waiting for
/// lookups, behind the decoders).
const MAX_ADVISERS: usize = 8;
/// Chunks waiting for a worker, at most.
const QUEUE: usize = 4 * MAX_WINDOW as usize;

/// What a worker is asked to decode.
enum Job {
    /// Chunk `.1` of array node `.0`.
    Chunk(usize, u64),
    /// Inner chunks of one shard of array node `.0` that a read shared.
    Inner(usize, SharedDecodes),
}

pub(super) struct Prefetcher {
    requests: SyncSender<Job>,
    /// Chunks whose store objects the disk should start reading
    /// ([`Array::will_need`]), for the advising threads: opening an object
    /// can itself wait for the disk (its directory and inode, cold), which
    /// a reader's request must not. `None` where advice does nothing.
    advice: Option<SyncSender<(usize, u64)>>,
    pub(super) workers: usize,
    pub(super) counters: Arc<PrefetchCounters>,
}

/// Chunks queued for the workers, and chunks they finished (decoded, or
/// found cached by then).
#[derive(Debug, Default)]
pub(super) struct PrefetchCounters {
    pub(super) queued: AtomicU64,
    pub(super) done: AtomicU64,
}

/// One array's sequential readers: one run for its chunk files, and a
/// stream per reader of its flat bytes.
#[derive(Default)]
pub(super) struct Run {
    /// The chunk file whose start was read last (`None`: none yet).
    last_started: Mutex<Option<u64>>,
    /// The run along the chunk files.
    files: Mutex<Stream>,
    /// Readers of the flat bytes, each followed on its own (at most
    /// [`STREAMS`]; the least recently used makes way for a new one).
    flat: Mutex<Vec<Stream>>,
    /// Counts flat reads, to tell which stream was used least recently.
    ticks: AtomicU64,
}

/// A reader's run: where it is, and how far ahead of it chunks are queued.
#[derive(Debug, Default, Clone)]
struct Stream {
    /// Where its last read ended (the furthest, as requests may arrive out
    /// of order).
    end: u64,
    /// The window, in chunks (0: no run yet).
    window: u64,
    /// Chunks below this were queued during this run.
    queued_until: u64,
    /// The tick of its last read.
    used: u64,
}

impl NzFs {
    /// Start the prefetch workers (unless [`FsConfig::prefetch`](super::FsConfig::prefetch) said
    /// no). They hold a weak reference and end when the filesystem is
    /// dropped.
    pub fn start_prefetcher(self: &Arc<Self>) {
        if !self.config.prefetch {
            return;
        }
        let counters = Arc::new(PrefetchCounters::default());
        let finished = counters.clone();
        // Enough to decode on every CPU, and to keep as many requests in
        // flight as the store serves well.
        let workers = self.store().profile().concurrency.max(self.config.sizing.decoders);
        let (requests, workers) = spawn_pool(self, "nzfs-prefetch", workers, move |fs, job| {
            match job {
                Job::Chunk(node, index) => {
                    if let Ok((array, _)) = fs.array(node)
                        && fs.worth_prefetching(node, array, index)
                    {
                        // Errors surface when (if) a reader asks for the chunk.
                        let _ = array.prefetch_chunk(index);
                    }
                }
                Job::Inner(node, work) => {
                    if let Ok((array, _)) = fs.array(node) {
                        array.decode_shared(&work);
                    }
                }
            }
            finished.done.fetch_add(1, Ordering::Relaxed);
        });
        // Advice only where it does something (a local disk).
        let advice = self
            .store()
            .profile()
            .rereads_are_cheap
            .then(|| {
                spawn_pool(
                    self,
                    "nzfs-advise",
                    workers.min(MAX_ADVISERS),
                    |fs, (node, index): (usize, u64)| {
                        if let Ok((array, _)) = fs.array(node) {
                            array.will_need(index);
                        }
                    },
                )
            })
            .and_then(|(tx, started)| (started > 0).then_some(tx));
        if workers > 0 {
            let _ = self.prefetch.set(Prefetcher {
                requests,
                advice,
                workers,
                counters,
            });
        }
    }

    /// Note that a reader started chunk file `index` of `node`.
    pub(super) fn note_chunk_start(&self, node: usize, index: u64) {
        let run = &self.info[node].run;
        let previous = lock(&run.last_started).replace(index);
        let near = previous.is_some_and(|p| index != p && index.abs_diff(p) <= NEAR_STARTS);
        let mut stream = lock(&run.files);
        if !near {
            *stream = Stream::default();
            // A reader starting at the array's first chunk is taken to go
            // on (`cat`, `cp -r`, a glob in order), as the kernel's
            // readahead takes a read at offset 0: the first window saves a
            // round trip to the store before the run is recognised.
            if index != 0 {
                return;
            }
        }
        let Ok((array, _)) = self.array(node) else { return };
        let Some(window) = self.grow(&mut stream, array, 1) else {
            return;
        };
        let end = index.saturating_add(1).saturating_add(window).min(array.chunk_count());
        self.queue(&mut stream, node, array, index + 1..end);
    }

    /// Note a read of `len` flat bytes of array `node` from `offset` on
    /// (`data.bin`, or the array's variable in a `.nc`). The chunks the read
    /// itself spans are fetched together (the reader then finds them being
    /// decoded); the read's stream (the reader whose last read ended within
    /// [`SLACK`] of `offset`) also gets its window beyond the read. A read
    /// that continues no stream starts one.
    pub(super) fn note_flat_read(&self, node: usize, offset: u64, len: u64) {
        let Ok((array, _)) = self.array(node) else { return };
        if self.prefetch.get().is_none() || array.reads_partially() {
            return;
        }
        let run = &self.info[node].run;
        let end = offset.saturating_add(len);
        let tick = run.ticks.fetch_add(1, Ordering::Relaxed);
        let mut streams = lock(&run.flat);
        let continued = streams
            .iter()
            .enumerate()
            .filter(|(_, s)| offset > 0 && s.end > 0 && offset.abs_diff(s.end) <= SLACK)
            .min_by_key(|(_, s)| offset.abs_diff(s.end))
            .map(|(i, _)| i);
        let at = match continued {
            Some(i) => i,
            None if streams.len() < STREAMS => {
                streams.push(Stream::default());
                streams.len() - 1
            }
            None => {
                let oldest = (0..streams.len()).min_by_key(|&i| streams[i].used).unwrap_or(0);
                streams[oldest] = Stream::default();
                oldest
            }
        };
        let sharing = streams.len() as u64;
        let stream = &mut streams[at];
        stream.used = tick;
        stream.end = stream.end.max(end);
        // The reader decodes the first chunk itself.
        let touched = array.chunks_touched(offset, end, QUEUE);
        self.queue(stream, node, array, touched.into_iter().skip(1));
        // A read from the start goes on, as for chunk files.
        if continued.is_none() && offset != 0 {
            return;
        }
        let Some(window) = self.grow(stream, array, sharing) else {
            return;
        };
        let bytes = window.saturating_mul(array.metadata().chunk_bytes());
        let ahead = array.chunks_touched(end, end.saturating_add(bytes), window as usize);
        self.queue(stream, node, array, ahead);
    }

    /// Queue the inner-chunk decodes a read of `node` shares
    /// ([`Array::read_chunk_bytes_then`]) for a worker. Skipped when the
    /// queue is full: the reader then decodes them itself, as it would
    /// anyway.
    pub(super) fn share_decodes(&self, node: usize, work: SharedDecodes) {
        let Some(p) = self.prefetch.get() else { return };
        if p.requests.try_send(Job::Inner(node, work)).is_ok() {
            p.counters.queued.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Whether chunk `index` of `array` (node `node`) still needs decoding
    /// ahead of a reader: neither cached nor just read whole and let go to
    /// the kernel page cache. Asked when a chunk is queued, and again when a
    /// worker takes it (the reader may have overtaken the job meanwhile).
    fn worth_prefetching(&self, node: usize, array: &Array, index: u64) -> bool {
        !array.is_cached(index) && !self.served.released_recently(node, index)
    }

    /// Grow `stream`'s window (or start it); `None` when nothing may be
    /// prefetched. `sharing` streams of the array share a third of the
    /// cache budget.
    fn grow(&self, stream: &mut Stream, array: &Array, sharing: u64) -> Option<u64> {
        if self.prefetch.get().is_none() || array.reads_partially() {
            return None;
        }
        // Variable-length chunks have no fixed size: assume 64 KiB.
        let chunk = match array.metadata().chunk_bytes() {
            0 => 64 << 10,
            n => n,
        };
        let max = (self.config.cache_bytes / 3 / chunk / sharing.max(1))
            .saturating_sub(1)
            .min(MAX_WINDOW);
        if max == 0 {
            return None;
        }
        stream.window = match stream.window {
            0 => (START_BYTES / chunk).clamp(1, max),
            w => w.saturating_mul(2).min(max),
        };
        Some(stream.window)
    }

    /// Queue those of `chunks` (in the order a reader meets them) that are
    /// neither cached nor queued earlier in `stream`'s run.
    fn queue(&self, stream: &mut Stream, node: usize, array: &Array, chunks: impl IntoIterator<Item = u64>) {
        let Some(p) = self.prefetch.get() else { return };
        for next in chunks {
            if next < stream.queued_until {
                continue;
            }
            if self.worth_prefetching(node, array, next) {
                if p.requests.try_send(Job::Chunk(node, next)).is_err() {
                    return; // the workers are busy enough; the run goes on later
                }
                p.counters.queued.fetch_add(1, Ordering::Relaxed);
                // The disk reads the window's objects while the workers
                // decode the ones before; asked of the advising threads, so
                // that this reader's reply does not wait for the opens (a
                // full channel drops the advice: it is only that).
                if let Some(advice) = &p.advice {
                    let _ = advice.try_send((node, next));
                }
            }
            stream.queued_until = stream.queued_until.max(next + 1);
        }
    }
}

/// Start `count` threads named `NAME-N` that take jobs from one channel (of
/// [`QUEUE`] places) and hand each to `handle` with the filesystem, until
/// the filesystem or the channel's sender is dropped (they hold a weak
/// reference). The sender, and how many threads started.
fn spawn_pool<T: Send + 'static>(
    fs: &Arc<NzFs>,
    name: &str,
    count: usize,
    handle: impl Fn(&NzFs, T) + Send + Clone + 'static,
) -> (SyncSender<T>, usize) {
    let (tx, rx) = sync_channel::<T>(QUEUE);
    let rx = Arc::new(Mutex::new(rx));
    let mut started = 0;
    for i in 0..count {
        let (weak, rx, handle): (Weak<NzFs>, _, _) = (Arc::downgrade(fs), rx.clone(), handle.clone());
        let spawned = std::thread::Builder::new().name(format!("{name}-{i}")).spawn(move || {
            loop {
                let next = crate::sync::lock(&rx).recv();
                let Ok(job) = next else { return };
                let Some(fs) = weak.upgrade() else { return };
                handle(&fs, job);
            }
        });
        started += usize::from(spawned.is_ok());
    }
    (tx, started)
}

//! [`FastQueue`]: the queue itself.
//!
//! Threads. Producers call [`FastQueue::enqueue`], which encodes the record
//! into the open batch under the state lock and sleeps until its round is
//! durable. A writer thread and `PIPELINE_DEPTH` syncer threads turn the
//! rounds into pipelined writes and syncs (Lazy Gathering Write with group
//! commit; `writer.rs`). Acknowledgements are 1-byte writes of the delete
//! flag, gathered into the same rounds. Consumers pop ids from the Message
//! Index Node table (below) and read payloads with large reads
//! (Sequential Grouping Prefetch; `reader.rs`). A helper thread keeps a
//! spare segment ready, so that the writer rarely waits for a 64 MiB file
//! to be written.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod reader;
mod writer;

use writer::zero_range;

use crate::batch::MessageBatch;
use crate::message::{SegMap, Unlock};
pub use crate::message::Message;
use crate::clock::{Clock, SystemClock};
use crate::error::{Error, Result};
use crate::format::*;
use crate::manifest::{self, Manifest, Tail};
use crate::scan::{free_name, scan, seg_name, ScanMode, TornTail};
use crate::storage::{read_full, DirStorage, Storage, StorageFile};
use crate::sync::{self, Condvar, JoinHandle, Mutex, MutexGuard};

/// When [`FastQueue::enqueue`] returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// After the message is written and `fdatasync`'ed: it survives a
    /// crash of the process and of the machine. The default.
    Sync,
    /// After the message is written to the operating system (no sync): it
    /// survives a crash of the process, not a power loss. For users who
    /// accept losing the last messages for speed. [`FastQueue::flush`]
    /// syncs.
    Os,
}

/// Parameters of a queue. Not stored: each open may use other values.
#[derive(Clone, Debug)]
pub struct Config {
    /// Size of each preallocated segment file (default 64 MiB).
    pub segment_size: u64,
    /// A batch closes when it holds this many bytes (default 8 MiB: large
    /// enough that 64 producers of 64 KiB messages share one sync, which
    /// costs as much as several MiB of sequential writes on this kind of
    /// disk; see docs/fastqueue.md).
    pub batch_bytes: usize,
    /// A batch closes this long after its first record (default 1 ms; 0:
    /// no deliberate wait, a batch holds what arrived during the previous
    /// sync). It closes earlier when it holds as many records as the
    /// previous batch.
    pub batch_delay: Duration,
    /// When enqueue returns (default [`Durability::Sync`]).
    pub durability: Durability,
    /// Size of the read-ahead buffer of consumers (default 1 MiB).
    pub prefetch_bytes: usize,
    /// A message that fails this many times goes to the dead-letter queue
    /// (default 5).
    pub max_attempts: u32,
    /// Free segments kept ready by a background thread (default 1).
    pub spare_segments: usize,
    /// Visibility timeout: a message delivered by a dequeue and neither
    /// acknowledged nor given back within this time is delivered again,
    /// and the timeout counts as a failed attempt (default `None`: a
    /// delivered message stays in flight until ack, nack or the next
    /// open). [`FastQueue::dequeue_batch_with_visibility`] sets it per call.
    pub visibility_timeout: Option<Duration>,
    /// Syncer threads, for the loom models only (loom models at most five
    /// threads in all); the queue always runs `PIPELINE_DEPTH`.
    #[cfg(feature = "loom")]
    #[doc(hidden)]
    pub loom_syncers: usize,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            segment_size: 64 << 20,
            batch_bytes: 8 << 20,
            batch_delay: Duration::from_millis(1),
            durability: Durability::Sync,
            prefetch_bytes: 1 << 20,
            max_attempts: 5,
            spare_segments: 1,
            visibility_timeout: None,
            #[cfg(feature = "loom")]
            loom_syncers: PIPELINE_DEPTH,
        }
    }
}

impl Config {
    /// Checks every field; the error names the field.
    pub fn validate(&self) -> Result<()> {
        if !self.segment_size.is_multiple_of(4096)
            || self.segment_size < 4 * SEGMENT_HEADER_LEN
            || self.segment_size > (1 << 40)
        {
            return Err(Error::invalid(
                "segment_size",
                format!(
                    "{} is not a multiple of 4096 between 16 KiB and 1 TiB",
                    self.segment_size
                ),
            ));
        }
        if self.batch_bytes == 0 || self.batch_bytes > 1 << 30 {
            return Err(Error::invalid("batch_bytes", "must be between 1 and 1 GiB"));
        }
        if self.batch_delay > Duration::from_secs(10) {
            return Err(Error::invalid("batch_delay", "must be at most 10 s"));
        }
        if self.prefetch_bytes == 0 || self.prefetch_bytes > 1 << 30 {
            return Err(Error::invalid("prefetch_bytes", "must be between 1 and 1 GiB"));
        }
        if self.max_attempts == 0 {
            return Err(Error::invalid("max_attempts", "must be at least 1"));
        }
        if self.spare_segments > MAX_SPARE_SEGMENTS {
            return Err(Error::invalid(
                "spare_segments",
                format!("{} is more than the limit of {MAX_SPARE_SEGMENTS}", self.spare_segments),
            ));
        }
        if let Some(v) = self.visibility_timeout {
            check_visibility(v)?;
        }
        Ok(())
    }

    /// Largest payload a segment of this size holds.
    pub fn max_payload(&self) -> usize {
        (self.segment_size - SEGMENT_HEADER_LEN) as usize - RECORD_HEADER_LEN
    }
}

/// Most spare segments a queue keeps ready (each is a full segment file on
/// disk; [`FastQueue::open`] also checks that they fit on the file system).
pub const MAX_SPARE_SEGMENTS: usize = 1024;

/// Longest visibility timeout accepted (a week).
pub const MAX_VISIBILITY: Duration = Duration::from_secs(7 * 24 * 3600);

fn check_visibility(v: Duration) -> Result<()> {
    if v.is_zero() || v > MAX_VISIBILITY {
        return Err(Error::invalid(
            "visibility_timeout",
            format!("{v:?} is not between 1 ns and {} s", MAX_VISIBILITY.as_secs()),
        ));
    }
    Ok(())
}

/// One message as [`FastQueue::browse`] lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MessageInfo {
    /// Its id.
    pub id: u64,
    /// Payload bytes.
    pub size: u32,
    /// Failed deliveries so far.
    pub attempts: u32,
    /// The logical queue it is in.
    pub kind: QueueKind,
    /// What it is doing.
    pub state: MessageState,
    /// Time of the first enqueue, ns since the Unix epoch.
    pub enqueued_ns: u64,
    /// A retry's due time, ns since the Unix epoch (0 for the main queue).
    pub not_before_ns: u64,
}

/// The state of a message in [`FastQueue::browse`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MessageState {
    /// Waiting to be delivered (main queue, or a retry that is due).
    Ready,
    /// A retry not yet due.
    Delayed,
    /// Handed to a consumer, not yet acknowledged nor given back (or being
    /// copied by `nack` or `requeue_dead` at this instant).
    InFlight,
    /// In the dead-letter queue.
    Dead,
}

impl MessageState {
    /// Its name: `ready`, `delayed`, `in-flight`, `dead`.
    pub fn name(self) -> &'static str {
        match self {
            MessageState::Ready => "ready",
            MessageState::Delayed => "delayed",
            MessageState::InFlight => "in-flight",
            MessageState::Dead => "dead",
        }
    }
}

/// The iterator of [`FastQueue::iter`].
pub struct Messages<'a> {
    queue: &'a FastQueue,
    batch: std::vec::IntoIter<Message>,
    done: bool,
}

impl Iterator for Messages<'_> {
    type Item = Result<Message>;

    fn next(&mut self) -> Option<Result<Message>> {
        if let Some(m) = self.batch.next() {
            return Some(Ok(m));
        }
        if self.done {
            return None;
        }
        match self.queue.dequeue_batch(64, None) {
            Ok(b) if b.is_empty() => {
                self.done = true;
                None
            }
            Ok(b) => {
                self.batch = b.into_iter();
                self.batch.next().map(Ok)
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

/// What the open found and did.
#[derive(Clone, Debug, Default)]
pub struct OpenReport {
    /// Live messages recovered.
    pub messages: u64,
    /// Segment files in use.
    pub segments: usize,
    /// Bytes read by the scan.
    pub bytes_scanned: u64,
    /// The torn end that was dropped, if the last run crashed mid-batch.
    pub torn_tail: Option<TornTail>,
    /// Older copies of retried messages marked deleted (a crash came
    /// between the copy and the flag write).
    pub superseded: u64,
    /// Time the open took.
    pub duration: Duration,
}

/// A write round, from [`FastQueue::enqueue_many_nowait`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RoundTicket(u64);

/// Counters and sizes, see [`FastQueue::stats`].
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Messages waiting in the main queue.
    pub ready: u64,
    /// Messages waiting in the retry queue (due or not).
    pub retry: u64,
    /// Messages in the dead-letter queue.
    pub dead: u64,
    /// Delivered, not yet acknowledged.
    pub in_flight: u64,
    /// Deliveries whose visibility timeout ran out since open.
    pub expired: u64,
    /// Segment files in use and free.
    pub segments: usize,
    /// Free segment files ready for reuse.
    pub free_segments: usize,
    /// Messages enqueued since open.
    pub enqueued: u64,
    /// Messages acknowledged since open.
    pub acked: u64,
    /// Messages deleted by [`FastQueue::delete`] since open.
    pub deleted: u64,
    /// Write rounds (batches) since open.
    pub rounds: u64,
    /// `fdatasync` calls since open.
    pub syncs: u64,
    /// Rounds written while an earlier round's sync was still running
    /// (the pipelined writer at work).
    pub pipelined: u64,
    /// Median and 99th percentile of the last (up to 4,096) `fdatasync`
    /// calls of the writer, microseconds: what "one sync" costs here.
    pub sync_p50_us: f64,
    /// See `sync_p50_us`.
    pub sync_p99_us: f64,
    /// Bytes written since open (records and flags).
    pub bytes_written: u64,
    /// Segments recycled since open.
    pub recycled: u64,
    /// Segments whose messages are all acknowledged but which are not
    /// recycled yet because a consumer's mapped batch still borrows from
    /// them ([`FastQueue::dequeue_batch_mapped`]): each keeps a segment
    /// file on disk until the batch lets go.
    pub pinned_segments: usize,
    /// What the open found.
    pub open: OpenReport,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum MinState {
    Ready,
    InFlight,
    /// Being copied to the retry or dead queue by `nack`.
    Moving,
}

/// Message Index Node: where a live message is and what state it is in.
#[derive(Clone, Debug)]
struct Min {
    seq: u64,
    offset: u64,
    payload_len: u32,
    kind: QueueKind,
    /// Failed attempts: the stored count, plus visibility timeouts since
    /// open (made durable by the next copy of the record).
    attempts: u32,
    enqueued_ns: u64,
    not_before_ns: u64,
    state: MinState,
    /// Handed to a consumer since open (or since its last `nack`): only
    /// such a message may be acknowledged or given back.
    delivered: bool,
    /// Visibility deadline of the current delivery (clock ns; 0: none).
    lease_ns: u64,
}

struct Segment {
    name: String,
    file: Arc<dyn StorageFile>,
    /// Records whose delete flag is not durable yet.
    live: u64,
    /// End of the published records.
    end: u64,
    /// The segment mapped for [`FastQueue::dequeue_batch_mapped`], made at
    /// its first mapped read and kept until the segment is recycled (one
    /// `mmap` per segment, not per read). Every batch holding slices of it
    /// holds a clone: the recycler leaves the segment alone while any
    /// clone but this one exists.
    map: Option<Arc<SegMap>>,
}

/// Records bound for one segment, written by one call.
struct Chunk {
    seq: u64,
    offset: u64,
    batch: u64,
    buf: Vec<u8>,
    last_record: usize,
    /// `Some(id_floor)` when this chunk opens a new segment: above every
    /// id issued so far.
    activate: Option<u64>,
    records: Vec<(u64, Min)>,
}

/// A segment file and its name.
type SegFile = (String, Arc<dyn StorageFile>);

/// A round written and not yet completed (see `writer.rs`).
struct Round {
    number: u64,
    chunks: Vec<Chunk>,
    flags: Vec<(u64, u64)>,
    /// Files to sync.
    files: Vec<SegFile>,
    /// A syncer took it.
    claimed: bool,
    /// Durable; it completes when every earlier round has.
    synced: bool,
    syncs: u64,
    bytes: u64,
    /// Callers waiting for it.
    waiters: usize,
}

/// Condition variables for round completion: enough that the rounds in
/// flight and the one being gathered never share one.
const DONE_CVS: u64 = PIPELINE_DEPTH as u64 + 2;

#[derive(Default)]
struct State {
    segments: BTreeMap<u64, Segment>,
    free: Vec<String>,
    next_free: u64,
    allocating: bool,
    head_seq: u64,
    head_off: u64,
    /// Size of the head segment's file (segments made with another
    /// `segment_size` keep theirs).
    head_size: u64,
    next_seq: u64,
    next_id: u64,
    next_batch: u64,
    chunks: Vec<Chunk>,
    /// Chunks not yet published, per segment (a segment is not recycled
    /// while it has some).
    unpublished: HashMap<u64, u32>,
    flags: Vec<(u64, u64)>,
    /// Buffers of completed chunks, reused (no page faults and no
    /// reallocation copies for each new batch).
    buf_pool: Vec<Vec<u8>>,
    pending_bytes: usize,
    /// Callers waiting for the open round (one per record, one per
    /// `ack_many`), for rounds closed and not completed, and how many were
    /// waiting in all when the last round closed: the writer's estimate of
    /// the active callers (see `writer.rs`, `all_back`).
    pending_waiters: usize,
    inflight_waiters: usize,
    expected_waiters: usize,
    first_pending: Option<Instant>,
    flush_now: bool,
    sync_all: bool,
    open_round: u64,
    durable_round: u64,
    /// Rounds written, not yet completed, oldest first.
    written: VecDeque<Round>,
    /// The writer thread has exited (closing): syncers finish and exit.
    writer_done: bool,
    /// Segments to recycle, found at completion; the recycler renames them.
    retire_pending: Vec<u64>,
    /// Segments to recycle that a mapped batch still pins: the recycler
    /// looks at them again each time it wakes (at least every 50 ms) and
    /// recycles each once its last pin is gone.
    retire_pinned: Vec<u64>,
    failed: Option<String>,
    closing: bool,
    closed: bool,
    index: HashMap<u64, Min>,
    main: VecDeque<u64>,
    retry: BTreeSet<(u64, u64)>,
    dead: VecDeque<u64>,
    /// Deliveries whose visibility timeout ran out: delivered again first.
    redeliver: VecDeque<u64>,
    /// Visibility deadlines of deliveries: (deadline ns, id).
    leases: BTreeSet<(u64, u64)>,
    in_flight: u64,
    /// Durations of the last `fdatasync` calls, microseconds.
    sync_times: VecDeque<u32>,
    stats: Stats,
}

struct ReadCache {
    seq: u64,
    start: u64,
    data: Vec<u8>,
}

struct Inner {
    storage: Arc<dyn Storage>,
    /// The queue's lock, released when the last holder goes: the queue,
    /// or a mapped batch that outlives it (see [`SegMap`]).
    lock: Arc<Unlock>,
    dir: PathBuf,
    cfg: Config,
    clock: Arc<dyn Clock>,
    /// The process that opened the queue: its threads do not exist in a
    /// `fork()` child, which must open the queue itself.
    owner_pid: u32,
    state: Mutex<State>,
    /// The writer waits here for work.
    work_cv: Condvar,
    /// The writer waits here for room in the pipeline.
    room_cv: Condvar,
    /// Syncers wait here for written rounds.
    sync_cv: Condvar,
    /// The recycler waits here for segments to recycle.
    recycle_cv: Condvar,
    /// Producers and ackers wait for round `r` on `done_cv[r % DONE_CVS]`:
    /// a finished round wakes only its own waiters, not those of the rounds
    /// behind it.
    done_cv: [Condvar; DONE_CVS as usize],
    /// Consumers wait here for messages.
    ready_cv: Condvar,
    cache: Mutex<ReadCache>,
    allocator: Mutex<Option<JoinHandle<()>>>,
    /// Serialises manifest rewrites; holds the last generation written.
    manifest_generation: Mutex<u64>,
}

/// A durable disk message queue. Many threads may share one `&FastQueue`.
pub struct FastQueue {
    inner: Arc<Inner>,
    /// The writer first, then the syncers.
    threads: Mutex<Vec<JoinHandle<()>>>,
}


/// An item popped for delivery, read outside the state lock.
struct Popped {
    id: u64,
    min: Min,
    file: Arc<dyn StorageFile>,
    seg_name: String,
    seg_end: u64,
    /// The segment's mapping, pinned, for a mapped read (`None`: read with
    /// a copy).
    map: Option<Arc<SegMap>>,
}

impl Popped {
    /// Message `id` (index entry `min`) of segment `seg`, to be read with
    /// a copy; [`Inner::pin_maps`] gives it the mapping for a mapped read.
    fn of(id: u64, min: Min, seg: &Segment) -> Popped {
        Popped { id, min, file: seg.file.clone(), seg_name: seg.name.clone(), seg_end: seg.end, map: None }
    }
}

impl FastQueue {
    /// Opens (or creates) the queue in directory `dir`.
    pub fn open(dir: impl AsRef<Path>, cfg: Config) -> Result<FastQueue> {
        let dir = dir.as_ref();
        if dir.as_os_str().is_empty() {
            return Err(Error::invalid("path", "the queue directory is an empty path"));
        }
        cfg.validate()?;
        let storage = DirStorage::new(dir).map_err(|e| Error::io(dir, "create", e))?;
        FastQueue::open_with(Arc::new(storage), cfg)
    }

    /// Opens (or creates) the queue in `storage`: takes the lock, scans
    /// every segment, drops a torn tail, rebuilds the index.
    pub fn open_with(storage: Arc<dyn Storage>, cfg: Config) -> Result<FastQueue> {
        FastQueue::open_with_clock(storage, cfg, Arc::new(SystemClock))
    }

    /// [`FastQueue::open_with`] with another clock (enqueue times, retry
    /// delays and visibility deadlines), for tests that move time by hand.
    pub fn open_with_clock(storage: Arc<dyn Storage>, cfg: Config, clock: Arc<dyn Clock>) -> Result<FastQueue> {
        let started = Instant::now();
        cfg.validate()?;
        let dir = storage.path("");
        if storage.open_here() {
            return Err(Error::AlreadyOpen { path: dir });
        }
        match storage.try_lock() {
            Ok(true) => {}
            // Two opens in this process at once: the loser is told so.
            Ok(false) if storage.open_here() => return Err(Error::AlreadyOpen { path: dir }),
            Ok(false) => return Err(Error::Locked { path: dir }),
            Err(e) => return Err(Error::io(storage.path("LOCK"), "lock", e)),
        }
        let lock = Arc::new(Unlock::new(storage.clone()));
        let found = scan(&*storage, ScanMode::Open)?;
        for name in &found.temporary {
            storage.remove(name).map_err(|e| Error::io(storage.path(name), "remove", e))?;
        }
        let mut st = State {
            next_free: found.next_free,
            next_seq: found.next_seq,
            next_id: found.next_id,
            next_batch: found.next_batch,
            free: found.free.clone(),
            open_round: 1,
            ..State::default()
        };
        let io = |name: &str, op, e| Error::io(storage.path(name), op, e);
        if let Some(t) = &found.torn {
            // Zero what the torn batch left, so that no stale record is
            // read as part of the log after later appends.
            let seg = &found.segments[t.seg];
            zero_range(&*seg.file, t.offset, t.zero_to).map_err(|e| io(&seg.name, "write", e))?;
            seg.file.sync_data().map_err(|e| io(&seg.name, "fdatasync", e))?;
        }
        for seg in &found.segments {
            st.segments.insert(
                seg.seq,
                Segment { name: seg.name.clone(), file: seg.file.clone(), live: 0, end: seg.end, map: None },
            );
        }
        let mut superseded = Vec::new();
        for rec in &found.records {
            let h = &rec.header;
            let seq = found.segments[rec.seg].seq;
            let min = Min {
                seq,
                offset: rec.offset,
                payload_len: h.payload_len,
                kind: h.kind,
                attempts: h.attempts,
                enqueued_ns: h.enqueued_ns,
                not_before_ns: h.not_before_ns,
                state: MinState::Ready,
                delivered: false,
                lease_ns: 0,
            };
            st.segments.get_mut(&seq).unwrap().live += 1;
            if let Some(old) = st.index.insert(h.id, min.clone()) {
                // A retried message whose old copy kept its live flag.
                superseded.push((old.seq, old.offset));
            }
            push_ready(&mut st, h.id, &min);
        }
        for &(seq, offset) in &superseded {
            let seg = st.segments.get_mut(&seq).unwrap();
            seg.file
                .write_at(&[DELETED], offset + DELETE_FLAG_OFFSET)
                .and_then(|_| seg.file.sync_data())
                .map_err(|e| io(&seg.name, "write", e))?;
            seg.live -= 1;
        }
        let cfg_segment_size = cfg.segment_size;
        let inner = Arc::new(Inner {
            dir: dir.clone(),
            cfg,
            clock,
            owner_pid: std::process::id(),
            state: Mutex::new(State::default()),
            work_cv: Condvar::new(),
            room_cv: Condvar::new(),
            sync_cv: Condvar::new(),
            recycle_cv: Condvar::new(),
            done_cv: std::array::from_fn(|_| Condvar::new()),
            ready_cv: Condvar::new(),
            cache: Mutex::new(ReadCache { seq: 0, start: 0, data: Vec::new()}),
            allocator: Mutex::new(None),
            manifest_generation: Mutex::new(found.manifest.as_ref().map_or(0, |m| m.generation)),
            storage,
            lock,
        });
        if inner.cfg.spare_segments > 1 {
            // Asked-for spares must fit on the disk. (One, the default, is
            // only a wish: a consumer must still be able to open a queue
            // on a full file system to drain it.)
            let spares = inner.cfg.spare_segments.saturating_sub(st.free.len()) as u64;
            inner.check_space("spare_segments", spares)?;
        }
        // The head is the newest segment; a queue without one gets one now.
        match st.segments.iter().next_back() {
            Some((&seq, seg)) => {
                st.head_seq = seq;
                st.head_off = seg.end;
                st.head_size =
                    seg.file.len().map_err(|e| Error::io(inner.storage.path(&seg.name), "stat", e))?;
                if found.segments.last().is_some_and(|s| s.sealed) {
                    // Sealed before a crash that came before the next
                    // segment was set up: the next record opens one.
                    st.head_off = st.head_size;
                }
            }
            None => {
                let seq = st.next_seq;
                st.next_seq += 1;
                let id_floor = st.next_id;
                *sync::lock(&inner.state) = st;
                inner.activate(seq, id_floor)?;
                st = std::mem::take(&mut *sync::lock(&inner.state));
                st.head_seq = seq;
                st.head_off = SEGMENT_HEADER_LEN;
                st.head_size = cfg_segment_size;
            }
        }
        let retire: Vec<u64> = st
            .segments
            .iter()
            .filter(|(&seq, s)| s.live == 0 && seq != st.head_seq)
            .map(|(&seq, _)| seq)
            .collect();
        st.stats.open = OpenReport {
            messages: st.index.len() as u64,
            segments: st.segments.len(),
            bytes_scanned: found.bytes_scanned,
            torn_tail: found.torn.clone(),
            superseded: superseded.len() as u64,
            duration: Duration::ZERO,
        };
        *sync::lock(&inner.state) = st;
        inner.retire(retire)?;
        // Lists what is there now, and says the queue is open (not closed
        // cleanly) before any write.
        inner.write_manifest(None)?;
        sync::lock(&inner.state).stats.open.duration = started.elapsed();
        let mut threads = Vec::new();
        let spawn = |name: &'static str, f: fn(Arc<Inner>), threads: &mut Vec<JoinHandle<()>>| -> Result<()> {
            let worker = inner.clone();
            let h = sync::spawn(name, move || {
                // A thread that dies must not leave its callers waiting for
                // it: the queue fails, and every wait ends with the error.
                let me = worker.clone();
                if let Err(panic) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || f(worker))) {
                    me.died(name, &*panic);
                }
            })
            .map_err(|e| Error::io(&dir, "spawn a thread", e))?;
            threads.push(h);
            Ok(())
        };
        let started = spawn("writer", Inner::writer_loop, &mut threads).and_then(|_| {
            #[cfg(not(feature = "loom"))]
            let depth = PIPELINE_DEPTH;
            #[cfg(feature = "loom")]
            let depth = inner.cfg.loom_syncers;
            let syncers = if inner.cfg.durability == Durability::Sync { depth } else { 0 };
            (0..syncers).try_for_each(|_| spawn("syncer", Inner::syncer_loop, &mut threads))?;
            spawn("recycler", Inner::recycler_loop, &mut threads)
        });
        let q = FastQueue { inner, threads: Mutex::new(threads) };
        started.map(|_| q)
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.inner.cfg
    }

    /// The queue directory.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// Stores `payload` and returns its id once it is durable (see
    /// [`Durability`]): when this returns `Ok`, the message is
    /// *acknowledged*: it is delivered at least once, even after a crash.
    /// An `Err` means it may or may not have been stored.
    pub fn enqueue(&self, payload: &[u8]) -> Result<u64> {
        self.inner.owner()?;
        if payload.len() > self.inner.cfg.max_payload() {
            return Err(Error::TooLarge { len: payload.len(), max: self.inner.cfg.max_payload() });
        }
        let crc = crc32c::crc32c(payload);
        let now = self.inner.clock.now_ns();
        let mut st = self.inner.usable()?;
        let id = st.next_id;
        st.next_id += 1;
        let ticket = self.inner.append(&mut st, id, payload, crc, QueueKind::Main, 0, now, 0);
        self.inner.wait_round(st, ticket)?;
        Ok(id)
    }

    /// [`FastQueue::enqueue`] of several payloads with one wait: all go into
    /// the open round and the call returns their ids once that round is
    /// durable. If one payload is too large, none is stored.
    pub fn enqueue_many(&self, payloads: &[&[u8]]) -> Result<Vec<u64>> {
        let (ids, round) = self.enqueue_many_nowait(payloads)?;
        self.wait_durable(round)?;
        Ok(ids)
    }

    /// Puts several payloads into the open round and returns their ids and
    /// that round **without waiting**: they are not acknowledged (may be
    /// lost in a crash) until [`FastQueue::wait_durable`] of the round
    /// returns `Ok`. For a caller that gathers many producers' messages
    /// (one thread appends, another waits for the rounds in order, instead
    /// of a blocked thread per message). If one payload is too large, none
    /// is stored.
    pub fn enqueue_many_nowait(&self, payloads: &[&[u8]]) -> Result<(Vec<u64>, RoundTicket)> {
        self.inner.owner()?;
        let max = self.inner.cfg.max_payload();
        if let Some(p) = payloads.iter().find(|p| p.len() > max) {
            return Err(Error::TooLarge { len: p.len(), max });
        }
        let now = self.inner.clock.now_ns();
        let mut st = self.inner.usable()?;
        let mut ids = Vec::with_capacity(payloads.len());
        // Nothing appended: the last completed round is already durable.
        let mut ticket = st.durable_round;
        for p in payloads {
            let id = st.next_id;
            st.next_id += 1;
            ticket = self.inner.append(&mut st, id, p, crc32c::crc32c(p), QueueKind::Main, 0, now, 0);
            ids.push(id);
        }
        Ok((ids, RoundTicket(ticket)))
    }

    /// Waits until `round` (from [`FastQueue::enqueue_many_nowait`]) is
    /// durable; rounds complete in order, so an earlier round is durable too.
    pub fn wait_durable(&self, round: RoundTicket) -> Result<()> {
        self.inner.owner()?;
        // Not `usable`: a round made durable before a close still counts.
        let st = sync::lock(&self.inner.state);
        self.inner.wait_round(st, round.0)
    }

    /// Closes the open batch now and waits until everything enqueued or
    /// acknowledged before is durable; with [`Durability::Os`] it also
    /// syncs every segment.
    pub fn flush(&self) -> Result<()> {
        self.inner.owner()?;
        let mut st = self.inner.usable()?;
        st.flush_now = true;
        st.sync_all = true;
        self.inner.work_added(&mut st);
        let ticket = st.open_round;
        self.inner.work_cv.notify_one();
        self.inner.wait_round(st, ticket)
    }

    /// Takes the next message, or `None` if there is none. Deliveries whose
    /// visibility timeout ran out come first, then due retries, then the
    /// main queue in arrival order. The message stays in the queue, in
    /// flight, until [`FastQueue::ack`] or [`FastQueue::nack`], until its
    /// visibility timeout (if the configuration sets one) runs out, or
    /// until the next open.
    pub fn dequeue(&self) -> Result<Option<Message>> {
        Ok(self.dequeue_batch(1, None)?.pop())
    }

    /// Takes up to `max` messages; with `wait`, waits up to that long for
    /// the first one. The configuration's visibility timeout applies.
    pub fn dequeue_batch(&self, max: usize, wait: Option<Duration>) -> Result<Vec<Message>> {
        self.take(max, wait, false, self.inner.cfg.visibility_timeout)
    }

    /// [`FastQueue::dequeue_batch`] with a visibility timeout for these
    /// deliveries (`None`: none, whatever the configuration says). A
    /// message neither acknowledged nor given back within `visibility` is
    /// delivered again (to any consumer) and the timeout counts as a
    /// failed attempt: after `max_attempts` it goes to the dead-letter
    /// queue. A late [`FastQueue::ack`] is still accepted while the message
    /// is not acknowledged. See [`FastQueue::extend_visibility`].
    pub fn dequeue_batch_with_visibility(
        &self,
        max: usize,
        wait: Option<Duration>,
        visibility: Option<Duration>,
    ) -> Result<Vec<Message>> {
        if let Some(v) = visibility {
            check_visibility(v)?;
        }
        self.take(max, wait, false, visibility)
    }

    /// Takes up to `max` messages from the dead-letter queue (the
    /// configuration's visibility timeout applies; an expired delivery goes
    /// back to the dead-letter queue, not to the main one).
    pub fn dequeue_dead(&self, max: usize) -> Result<Vec<Message>> {
        self.take(max, None, true, self.inner.cfg.visibility_timeout)
    }

    /// Gives the delivery of `id` `by` more time from now: its visibility
    /// deadline becomes now + `by` (a consumer still working on a message
    /// calls this before the deadline). Fails unless the message is in
    /// flight.
    pub fn extend_visibility(&self, id: u64, by: Duration) -> Result<()> {
        self.inner.owner()?;
        check_visibility(by)?;
        let now = self.inner.clock.now_ns();
        let mut st = self.inner.usable()?;
        let st = &mut *st;
        let min = match st.index.get_mut(&id) {
            None => return Err(Error::UnknownId { id }),
            // A deadline already past ended the delivery (the expiry
            // itself is applied by the next dequeue).
            Some(m) if m.state != MinState::InFlight || (m.lease_ns != 0 && m.lease_ns <= now) => {
                return Err(Error::NotInFlight { id })
            }
            Some(m) => m,
        };
        st.leases.remove(&(min.lease_ns, id));
        min.lease_ns = now.saturating_add(by.as_nanos() as u64);
        st.leases.insert((min.lease_ns, id));
        Ok(())
    }

    fn take(&self, max: usize, wait: Option<Duration>, dead: bool, visibility: Option<Duration>) -> Result<Vec<Message>> {
        let popped = self.pop_for_delivery(max, wait, dead, visibility, false)?;
        self.inner.read(popped)
    }

    /// Takes up to `max` messages like [`FastQueue::dequeue_batch`], but
    /// reads them into `batch`, replacing what it held, and returns how
    /// many it took. The batch keeps its buffer from call to call, so a
    /// consumer that reuses one batch reads without allocating (and, for
    /// large messages, without faulting fresh pages in): see
    /// [`MessageBatch`]. Delivery, visibility, `ack`/`nack` and the checks
    /// of every record's checksums are those of `dequeue_batch`; if a read
    /// fails the batch is left empty and the messages stay in flight, as
    /// with `dequeue_batch`.
    pub fn dequeue_batch_into(&self, max: usize, wait: Option<Duration>, batch: &mut MessageBatch) -> Result<usize> {
        self.dequeue_batch_into_with_visibility(max, wait, self.inner.cfg.visibility_timeout, batch)
    }

    /// [`FastQueue::dequeue_batch_into`] with a visibility timeout for
    /// these deliveries, as in [`FastQueue::dequeue_batch_with_visibility`].
    pub fn dequeue_batch_into_with_visibility(
        &self,
        max: usize,
        wait: Option<Duration>,
        visibility: Option<Duration>,
        batch: &mut MessageBatch,
    ) -> Result<usize> {
        self.dequeue_batch_to(max, wait, visibility, batch, false)
    }

    /// Takes up to `max` messages like [`FastQueue::dequeue_batch_into`],
    /// but without copying their payloads: the batch's payload slices
    /// borrow from a read-only shared mapping of the segment files (one
    /// `mmap` per segment, kept by the queue). Each record is checked in
    /// place as `dequeue_batch` checks it (header checksum, payload CRC32C,
    /// id, segment, length; the file's length is looked up before each run
    /// of records, so a record cut under the queue is reported "cut short"
    /// instead of being touched).
    ///
    /// While the batch holds messages of a segment, that segment is
    /// *pinned*: it is not recycled (nor rewritten) even once all its
    /// messages are acknowledged, until the batch is cleared, reused for
    /// the next dequeue or dropped; the writer meanwhile takes a fresh
    /// segment file, it never waits for a consumer. A batch kept after the
    /// queue is closed keeps the queue's lock until then.
    ///
    /// **SIGBUS**: if another process cuts a segment file (`truncate`)
    /// while this batch maps it, touching a payload past the new end
    /// kills the process with `SIGBUS`, as with LMDB. The queue never cuts
    /// its own files while it is open (they are preallocated, of a fixed
    /// size, under the queue's `flock`), so only someone ignoring that lock
    /// can do it; where that cannot be ruled out, read with
    /// [`FastQueue::dequeue_batch_into`] (a copy: a cut file is reported,
    /// never fatal). Storage that cannot be mapped (the crash simulator) is
    /// read with a copy, transparently.
    pub fn dequeue_batch_mapped(&self, max: usize, wait: Option<Duration>, batch: &mut MessageBatch) -> Result<usize> {
        self.dequeue_batch_mapped_with_visibility(max, wait, self.inner.cfg.visibility_timeout, batch)
    }

    /// [`FastQueue::dequeue_batch_mapped`] with a visibility timeout for
    /// these deliveries, as in [`FastQueue::dequeue_batch_with_visibility`].
    pub fn dequeue_batch_mapped_with_visibility(
        &self,
        max: usize,
        wait: Option<Duration>,
        visibility: Option<Duration>,
        batch: &mut MessageBatch,
    ) -> Result<usize> {
        self.dequeue_batch_to(max, wait, visibility, batch, true)
    }

    /// The two batch reads: payloads copied into the batch, or `mapped`.
    fn dequeue_batch_to(
        &self,
        max: usize,
        wait: Option<Duration>,
        visibility: Option<Duration>,
        batch: &mut MessageBatch,
        mapped: bool,
    ) -> Result<usize> {
        if let Some(v) = visibility {
            check_visibility(v)?;
        }
        // Emptied before anything can fail, so that an error never leaves
        // the last batch's messages looking like this call's; clearing also
        // drops the last batch's pins before new ones are taken.
        batch.clear();
        // Popped with their segments' mappings when `mapped`: read_batch
        // reads those in place, the others with a copy.
        let popped = self.pop_for_delivery(max, wait, false, visibility, mapped)?;
        self.inner.read_batch(popped, batch)?;
        Ok(batch.len())
    }

    /// Pops up to `max` messages for delivery (marking them in flight),
    /// waiting up to `wait` for the first; the payloads are read by the
    /// caller, outside the state lock.
    ///
    /// With `map`, each message also gets its segment's mapping (made now
    /// if the segment has none), cloned under the state lock: the pin is
    /// taken before any acknowledgement could let the recycler at the
    /// segment.
    fn pop_for_delivery(
        &self,
        max: usize,
        wait: Option<Duration>,
        dead: bool,
        visibility: Option<Duration>,
        map: bool,
    ) -> Result<Vec<Popped>> {
        self.inner.owner()?;
        let clock = &self.inner.clock;
        let deadline = wait.map(|w| Instant::now() + w);
        let mut st = self.inner.usable()?;
        let popped = loop {
            let now = clock.now_ns();
            let dying = expire(&mut st, now, self.inner.cfg.max_attempts);
            if !dying.is_empty() {
                drop(st);
                self.inner.dead_letter(dying)?;
                st = self.inner.usable()?;
                continue;
            }
            let mut popped = pop(&mut st, max, dead, now, visibility);
            if !popped.is_empty() {
                if map {
                    // A mapping that cannot be made fails the call like a
                    // failed read: the messages stay in flight.
                    self.inner.pin_maps(&mut st, &mut popped)?;
                }
                break popped;
            }
            let Some(deadline) = deadline else { return Ok(Vec::new()) };
            let wall = Instant::now();
            if wall >= deadline {
                return Ok(Vec::new());
            }
            // Sleep until the deadline, the next retry or the next expiry.
            let mut nap = deadline - wall;
            let next = [st.retry.first(), st.leases.first()].into_iter().flatten().map(|&(due, _)| due).min();
            if let Some(due) = next {
                nap = nap.min(Duration::from_nanos(due.saturating_sub(now)).max(Duration::from_micros(100)));
            }
            st = sync::wait_timeout(&self.inner.ready_cv, st, nap);
            if st.failed.is_some() || st.closed {
                return Err(self.inner.unusable(&st));
            }
        };
        drop(st);
        Ok(popped)
    }

    /// Acknowledges a delivered message: sets its delete flag (a 1-byte
    /// write, synced with others) and returns when that is durable.
    ///
    /// `ack` and [`FastQueue::nack`] accept the same ids: a message handed
    /// out by a dequeue since the queue was opened and not yet
    /// acknowledged nor given back (in flight, or back in the queue after
    /// its visibility timeout ran out: a late acknowledgement still
    /// counts). A message never dequeued is refused
    /// ([`Error::NotDelivered`]), an unknown or already acknowledged id too
    /// ([`Error::UnknownId`]); nothing is changed then.
    pub fn ack(&self, id: u64) -> Result<()> {
        self.ack_many(&[id])
    }

    /// Acknowledges several messages with one wait; if one id is refused,
    /// none is acknowledged.
    pub fn ack_many(&self, ids: &[u64]) -> Result<()> {
        let ticket = self.ack_many_nowait(ids)?;
        self.wait_durable(ticket)
    }

    /// Acknowledges several messages **without waiting**: their delete
    /// flags go into the open round, and the call returns that round. The
    /// messages are no longer delivered by this process at once, but the
    /// acknowledgement is durable (a crash no longer brings them back) only
    /// when [`FastQueue::wait_durable`] of the round returns `Ok`. For a
    /// consumer that reads the next batch while the flags of the last one
    /// are synced (Sequential Grouping Prefetch with the deletes batched);
    /// rounds complete in order, so waiting for the last ticket covers the
    /// earlier ones. Accepts the same ids as [`FastQueue::ack`]; if one is
    /// refused, none is acknowledged.
    pub fn ack_many_nowait(&self, ids: &[u64]) -> Result<RoundTicket> {
        self.inner.owner()?;
        let mut st = self.inner.usable()?;
        if ids.is_empty() {
            // Nothing to make durable: the last completed round already is.
            return Ok(RoundTicket(st.durable_round));
        }
        for id in ids {
            match st.index.get(id) {
                None => return Err(Error::UnknownId { id: *id }),
                Some(m) if m.state == MinState::Moving => {
                    return Err(Error::invalid("id", format!("message {id} is being moved by nack")))
                }
                Some(m) if !m.delivered => return Err(Error::NotDelivered { id: *id }),
                Some(_) => {}
            }
        }
        for id in ids {
            // An id given twice is acknowledged once.
            let Some(min) = st.index.remove(id) else { continue };
            if min.state == MinState::InFlight {
                st.in_flight -= 1;
            }
            st.leases.remove(&(min.lease_ns, *id));
            st.flags.push((min.seq, min.offset));
            st.stats.acked += 1;
        }
        self.inner.work_added(&mut st);
        // A caller waiting, like a producer: with as many waiting as in the
        // last round the round closes without waiting for the timer.
        st.pending_waiters += 1;
        let ticket = st.open_round;
        self.inner.work_cv.notify_one();
        Ok(RoundTicket(ticket))
    }

    /// Gives a delivered message back: it is copied to the retry queue,
    /// due after `delay`, with its attempt count increased, or to the
    /// dead-letter queue once it reaches `max_attempts`. Returns the queue
    /// it went to, once the copy is durable. Accepts the same ids as
    /// [`FastQueue::ack`].
    pub fn nack(&self, id: u64, delay: Duration) -> Result<QueueKind> {
        self.inner.owner()?;
        let mut st = self.inner.usable()?;
        let st_ref = &mut *st;
        let min = match st_ref.index.get_mut(&id) {
            None => return Err(Error::UnknownId { id }),
            Some(m) if m.state == MinState::Moving => {
                return Err(Error::invalid("id", format!("message {id} is being moved by nack")))
            }
            Some(m) if !m.delivered => return Err(Error::NotDelivered { id }),
            Some(m) => {
                if m.state == MinState::Ready {
                    // Back in the queue after its visibility timeout.
                    st_ref.in_flight += 1;
                }
                st_ref.leases.remove(&(m.lease_ns, id));
                m.state = MinState::Moving;
                m.lease_ns = 0;
                m.clone()
            }
        };
        let popped = Popped::of(id, min.clone(), &st.segments[&min.seq]);
        drop(st);
        let read = self.inner.read(vec![popped]);
        let mut st = sync::lock(&self.inner.state);
        let msg = match read {
            Ok(mut m) => m.pop().unwrap(),
            Err(e) => {
                if let Some(m) = st.index.get_mut(&id) {
                    m.state = MinState::InFlight;
                }
                return Err(e);
            }
        };
        if let Some(e) = self.inner.check_usable(&st) {
            return Err(e);
        }
        let attempts = min.attempts.saturating_add(1);
        let kind = if attempts >= self.inner.cfg.max_attempts {
            QueueKind::Dead
        } else {
            QueueKind::Retry
        };
        let due = self.inner.clock.now_ns().saturating_add(delay.as_nanos() as u64);
        let crc = crc32c::crc32c(&msg.payload);
        let ticket =
            self.inner.append(&mut st, id, &msg.payload, crc, kind, attempts, min.enqueued_ns, due);
        self.inner.wait_round(st, ticket)?;
        Ok(kind)
    }

    /// Every live message as it is now, without taking or changing any:
    /// for a `mailq`-like listing while producers and consumers run. The
    /// list is one consistent snapshot, taken under the queue's lock: a
    /// message appears once its enqueue is durable (an enqueue still
    /// waiting for its round does not), with its state at that instant;
    /// by the time the caller reads it a consumer may have taken, acked or
    /// given back any of them. Ordered by id. Nothing is read from disk.
    pub fn browse(&self) -> Result<Vec<MessageInfo>> {
        self.inner.owner()?;
        let now = self.inner.clock.now_ns();
        let st = self.inner.usable()?;
        let mut out: Vec<MessageInfo> = st
            .index
            .iter()
            .map(|(&id, m)| MessageInfo {
                id,
                size: m.payload_len,
                attempts: m.attempts,
                kind: m.kind,
                state: match m.state {
                    MinState::InFlight | MinState::Moving => MessageState::InFlight,
                    MinState::Ready if m.kind == QueueKind::Dead => MessageState::Dead,
                    MinState::Ready if m.kind == QueueKind::Retry && m.not_before_ns > now => MessageState::Delayed,
                    MinState::Ready => MessageState::Ready,
                },
                enqueued_ns: m.enqueued_ns,
                not_before_ns: m.not_before_ns,
            })
            .collect();
        out.sort_unstable_by_key(|m| m.id);
        Ok(out)
    }

    /// Deletes messages by id, whatever their state (ready, delayed, in
    /// flight, dead), and returns once the deletes are durable: an
    /// administrator's delete (`postsuper -d`). A consumer holding one of
    /// them in flight gets [`Error::UnknownId`] when it acks or nacks it.
    /// Refused, deleting none of them, if one id is not a live message
    /// ([`Error::UnknownId`]) or is being copied by a `nack` or
    /// [`FastQueue::requeue_dead`] at this moment (try again).
    pub fn delete(&self, ids: &[u64]) -> Result<()> {
        self.inner.owner()?;
        let mut st = self.inner.usable()?;
        if ids.is_empty() {
            return Ok(());
        }
        for id in ids {
            match st.index.get(id) {
                None => return Err(Error::UnknownId { id: *id }),
                Some(m) if m.state == MinState::Moving => {
                    return Err(Error::invalid("id", format!("message {id} is being moved by nack or requeue; try again")))
                }
                Some(_) => {}
            }
        }
        for id in ids {
            let Some(min) = st.index.remove(id) else { continue };
            if min.state == MinState::InFlight {
                st.in_flight -= 1;
            }
            st.leases.remove(&(min.lease_ns, *id));
            st.flags.push((min.seq, min.offset));
            st.stats.deleted += 1;
        }
        self.inner.work_added(&mut st);
        st.pending_waiters += 1;
        let ticket = st.open_round;
        self.inner.work_cv.notify_one();
        self.inner.wait_round(st, ticket)
    }

    /// Moves dead letters back for another try: each is copied, with its
    /// attempt count reset to 0, to the retry queue due now (delivered
    /// before the main queue, as every retry is), keeping its id; returns
    /// the ids moved, once the copies are durable. `ids`: those dead
    /// letters (each must be one, and not taken by `dequeue_dead`:
    /// [`Error::NotDead`]); `None`: every dead letter not taken. A crash
    /// between the copy and the delete of the dead one is resolved on open
    /// (the newer copy wins), as for `nack`.
    pub fn requeue_dead(&self, ids: Option<&[u64]>) -> Result<Vec<u64>> {
        self.inner.owner()?;
        let st = self.inner.usable()?;
        let chosen: Vec<u64> = match ids {
            Some(ids) => {
                for &id in ids {
                    match st.index.get(&id) {
                        None => return Err(Error::UnknownId { id }),
                        Some(m) if m.kind != QueueKind::Dead || m.state != MinState::Ready => {
                            return Err(Error::NotDead { id })
                        }
                        Some(_) => {}
                    }
                }
                let mut v = ids.to_vec();
                v.sort_unstable();
                v.dedup();
                v
            }
            None => {
                let mut v: Vec<u64> = st
                    .index
                    .iter()
                    .filter(|(_, m)| m.kind == QueueKind::Dead && m.state == MinState::Ready)
                    .map(|(&id, _)| id)
                    .collect();
                v.sort_unstable();
                v
            }
        };
        // A dead letter left where it was (its entry of the dead-letter
        // queue is still there), reset to 0 attempts, due when copied.
        self.move_to_retry(st, chosen, Attempts::Reset, false, None)
    }

    /// Reads a live message without taking it or changing its state, in
    /// any state (for a `postcat`-like look at one message while consumers
    /// run). The payload is read outside the queue's lock with a direct
    /// read (not through the consumers' read-ahead buffer, whose position
    /// it would spoil) and checked as every read is. A message
    /// acknowledged or deleted meanwhile (its segment may then be recycled
    /// and rewritten under the read) is [`Error::UnknownId`], not damage.
    pub fn peek(&self, id: u64) -> Result<Message> {
        self.inner.owner()?;
        // A message copied by a nack or retry_now while it was read is
        // read again where it is now (a bounded number of times).
        let mut tries = 0;
        loop {
            let popped = {
                let st = self.inner.usable()?;
                let min = st.index.get(&id).ok_or(Error::UnknownId { id })?;
                Popped::of(id, min.clone(), &st.segments[&min.seq])
            };
            let (seq, offset) = (popped.min.seq, popped.min.offset);
            let mut out = Vec::with_capacity(1);
            let Err(e) = self.inner.read_scattered(std::slice::from_ref(&popped), &mut out) else {
                return Ok(out.pop().expect("one message read"));
            };
            let st = sync::lock(&self.inner.state);
            match st.index.get(&id) {
                None => return Err(Error::UnknownId { id }),
                // Still the same record at the same place: the damage is real.
                Some(m) if (m.seq, m.offset) == (seq, offset) => return Err(e),
                Some(_) if tries >= 3 => return Err(e),
                Some(_) => tries += 1,
            }
        }
    }

    /// Makes waiting messages due now: each is copied to the retry queue,
    /// due at once, keeping its id and attempt count (a retry that is
    /// delayed becomes due; a message of the main queue moves ahead of it,
    /// as due retries are delivered first). What `postqueue -f` does to a
    /// mail queue. `ids`: those messages; `None`: every delayed retry.
    /// An id that is not waiting (in flight, being moved, dead, already a
    /// due retry, or gone: a consumer may have taken or acknowledged it
    /// since the caller looked) is skipped: the ids moved are returned,
    /// once the copies are durable. A crash between a copy and the delete
    /// of the old one is resolved on open (the newer copy wins), as for
    /// `nack`; the copy is durable, so the new due time outlives a restart.
    pub fn retry_now(&self, ids: Option<&[u64]>) -> Result<Vec<u64>> {
        self.inner.owner()?;
        let st = self.inner.usable()?;
        let now = self.inner.clock.now_ns();
        let waiting = |m: &Min| {
            m.state == MinState::Ready
                && match m.kind {
                    QueueKind::Main => true,
                    QueueKind::Retry => m.not_before_ns > now,
                    QueueKind::Dead => false,
                }
        };
        let mut chosen: Vec<u64> = match ids {
            Some(ids) => ids.iter().copied().filter(|id| st.index.get(id).is_some_and(waiting)).collect(),
            None => st
                .index
                .iter()
                .filter(|(_, m)| m.kind == QueueKind::Retry && waiting(m))
                .map(|(&id, _)| id)
                .collect(),
        };
        chosen.sort_unstable();
        chosen.dedup();
        // A consumer may drop a message's queue entry while it is moving:
        // one given back is queued again. Due at `now`, attempts kept.
        self.move_to_retry(st, chosen, Attempts::Keep, true, Some(now))
    }

    /// Copies the `chosen` messages (each ready, none taken) to the retry
    /// queue, keeping their ids, and returns them once the copies are
    /// durable: what `requeue_dead` and `retry_now` share. Each is counted
    /// in flight and marked moving while it is read (as a nack's message is:
    /// publish takes it out again when the copy replaces it; a consumer
    /// skips it meanwhile); if the read fails or the queue stops taking
    /// work, each is made ready again (and, with `requeue`, put back in its
    /// queue). `due`: the copies' due time; `None`: now, after the read.
    fn move_to_retry(
        &self,
        mut st: MutexGuard<'_, State>,
        chosen: Vec<u64>,
        attempts: Attempts,
        requeue: bool,
        due: Option<u64>,
    ) -> Result<Vec<u64>> {
        if chosen.is_empty() {
            return Ok(chosen);
        }
        let mut popped = Vec::with_capacity(chosen.len());
        for &id in &chosen {
            let m = st.index.get_mut(&id).unwrap();
            m.state = MinState::Moving;
            let min = m.clone();
            st.in_flight += 1;
            popped.push(Popped::of(id, min.clone(), &st.segments[&min.seq]));
        }
        drop(st);
        let read = self.inner.read(popped);
        let mut st = sync::lock(&self.inner.state);
        let restore = |st: &mut State| {
            for id in &chosen {
                if let Some(m) = st.index.get_mut(id) {
                    m.state = MinState::Ready;
                    let m = m.clone();
                    st.in_flight -= 1;
                    if requeue {
                        push_ready(st, *id, &m);
                    }
                }
            }
        };
        let msgs = match read {
            Ok(m) => m,
            Err(e) => {
                restore(&mut st);
                return Err(e);
            }
        };
        if let Some(e) = self.inner.check_usable(&st) {
            restore(&mut st);
            return Err(e);
        }
        let due = due.unwrap_or_else(|| self.inner.clock.now_ns());
        let mut ticket = st.durable_round;
        for m in &msgs {
            let n = match attempts {
                Attempts::Reset => 0,
                Attempts::Keep => st.index[&m.id].attempts,
            };
            let crc = crc32c::crc32c(&m.payload);
            ticket = self.inner.append(&mut st, m.id, &m.payload, crc, QueueKind::Retry, n, m.enqueued_ns, due);
        }
        self.inner.wait_round(st, ticket)?;
        Ok(chosen)
    }

    /// The messages ready now, each taken as [`FastQueue::dequeue`] takes
    /// it (in flight until acked or given back), until none is ready (the
    /// iterator does not wait for more). Read in batches of 64.
    pub fn iter(&self) -> Messages<'_> {
        Messages { queue: self, batch: Vec::new().into_iter(), done: false }
    }

    /// Creates free segments until `count` are ready, so that later
    /// enqueues never wait for a new file to be written (for example
    /// before a benchmark, or to reserve disk space). Refuses a count whose
    /// segments do not fit in the file system's free space.
    pub fn reserve_segments(&self, count: usize) -> Result<()> {
        self.inner.owner()?;
        let have = self.inner.usable()?.free.len();
        let more = count.saturating_sub(have) as u64;
        self.inner.check_space("count", more)?;
        while self.inner.usable()?.free.len() < count {
            let name = self.inner.create_free()?;
            sync::lock(&self.inner.state).free.push(name);
        }
        Ok(())
    }

    /// Counters and sizes.
    pub fn stats(&self) -> Stats {
        if self.inner.owner().is_err() {
            return Stats::default();
        }
        let st = sync::lock(&self.inner.state);
        let mut s = st.stats.clone();
        let ready = |kind| st.index.values().filter(|m| m.state == MinState::Ready && m.kind == kind).count() as u64;
        s.ready = ready(QueueKind::Main);
        s.retry = ready(QueueKind::Retry);
        s.dead = ready(QueueKind::Dead);
        s.in_flight = st.in_flight;
        let mut times: Vec<u32> = st.sync_times.iter().copied().collect();
        times.sort_unstable();
        let pct = |p: f64| times.get(((times.len() as f64 - 1.0) * p).round() as usize).map_or(0.0, |&t| t as f64);
        (s.sync_p50_us, s.sync_p99_us) = (pct(0.5), pct(0.99));
        s.segments = st.segments.len();
        s.free_segments = st.free.len();
        s.pinned_segments = st.retire_pinned.len();
        s
    }

    /// Live messages (ready, in flight, retry and dead).
    pub fn len(&self) -> usize {
        if self.inner.owner().is_err() {
            return 0;
        }
        sync::lock(&self.inner.state).index.len()
    }

    /// Whether no live message is left.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes what is pending, stops the threads and closes the queue.
    /// Later calls fail with [`Error::Closed`]. The lock is released when
    /// the value is dropped. In a `fork()` child it does nothing but fail
    /// with [`Error::Forked`]: the threads and the lock belong to the
    /// parent.
    pub fn close(&self) -> Result<()> {
        if let Err(e) = self.inner.owner() {
            // The child has none of the threads to join; leave the
            // parent's handles alone.
            if let Ok(mut h) = self.threads.try_lock() {
                std::mem::forget(std::mem::take(&mut *h));
            }
            return Err(e);
        }
        {
            let mut st = sync::lock(&self.inner.state);
            if st.closed {
                return Ok(());
            }
            if st.closing {
                // Another thread is closing the queue: this close is done
                // when that one is (not before: the caller may rely on the
                // manifest and the lock being released).
                while !st.closed {
                    st = sync::wait(&self.inner.ready_cv, st);
                }
                return match &st.failed {
                    Some(cause) => Err(Error::Failed { dir: self.inner.dir.clone(), cause: cause.clone() }),
                    None => Ok(()),
                };
            }
            st.closing = true;
            // Everything is made durable before the clean-close mark (with
            // `Durability::Os` too).
            st.sync_all = true;
            self.inner.work_added(&mut st);
            self.inner.work_cv.notify_all();
        }
        // Marks the queue closed and wakes every waiter when this close
        // ends, even by a panic (a second close waits for it).
        let _closed = MarkClosed(&self.inner);
        // The writer first (it ends the rounds), then the syncers, then the
        // recycler.
        for h in std::mem::take(&mut *sync::lock(&self.threads)) {
            let _ = h.join();
        }
        if let Some(h) = sync::lock(&self.inner.allocator).take() {
            let _ = h.join();
        }
        let retire = {
            // Pinned ones whose batches let go meanwhile too (those still
            // pinned stay segments: the next open recycles them). None
            // after a failure: the next open's scan decides what is free.
            let mut st = sync::lock(&self.inner.state);
            let mut seqs = std::mem::take(&mut st.retire_pending);
            seqs.append(&mut st.retire_pinned);
            if st.failed.is_some() {
                seqs.clear();
            }
            seqs
        };
        if let Err(e) = self.inner.retire(retire) {
            self.inner.fail(e);
        }
        let tail = {
            let st = sync::lock(&self.inner.state);
            let head = st.segments.iter().next_back();
            head.filter(|_| st.failed.is_none()).map(|(&seq, s)| Tail { seq, end: s.end })
        };
        let marked = match tail {
            // Where the log ends, so that a later check can prove records
            // lost after this point.
            Some(tail) => self.inner.write_manifest(Some(tail)),
            None => Ok(()),
        };
        let mut st = sync::lock(&self.inner.state);
        if let Err(e) = marked {
            st.failed.get_or_insert(e.to_string());
        }
        match &st.failed {
            Some(cause) => Err(Error::Failed { dir: self.inner.dir.clone(), cause: cause.clone() }),
            None => Ok(()),
        }
    }
}

/// Sets `closed` and wakes every waiter when dropped (the end of
/// [`FastQueue::close`]).
struct MarkClosed<'a>(&'a Inner);

impl Drop for MarkClosed<'_> {
    fn drop(&mut self) {
        let mut st = sync::lock(&self.0.state);
        st.closed = true;
        drop(st);
        self.0.wake_all();
    }
}

impl Drop for FastQueue {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// The attempt count a message copied to the retry queue takes
/// ([`FastQueue::move_to_retry`]).
#[derive(Clone, Copy)]
enum Attempts {
    /// 0: a dead letter given another life.
    Reset,
    /// Its own: a waiting message made due.
    Keep,
}

fn push_ready(st: &mut State, id: u64, min: &Min) {
    match min.kind {
        QueueKind::Main => st.main.push_back(id),
        QueueKind::Retry => {
            st.retry.insert((min.not_before_ns, id));
        }
        QueueKind::Dead => st.dead.push_back(id),
    }
}

/// Ends the deliveries whose visibility deadline is past `now`: each counts
/// as a failed attempt and the message goes back to be delivered again
/// (dead letters back to the dead-letter queue). Returns those that reach
/// `max_attempts` with it, marked as moving: the caller copies them to the
/// dead-letter queue.
fn expire(st: &mut State, now: u64, max_attempts: u32) -> Vec<(u64, Min)> {
    let mut dying = Vec::new();
    while let Some(&(due, id)) = st.leases.first() {
        if due > now {
            break;
        }
        st.leases.pop_first();
        let Some(min) = st.index.get_mut(&id) else { continue };
        if min.state != MinState::InFlight || min.lease_ns != due {
            continue;
        }
        min.lease_ns = 0;
        st.stats.expired += 1;
        if min.kind == QueueKind::Dead {
            min.state = MinState::Ready;
            st.in_flight -= 1;
            st.dead.push_front(id);
            continue;
        }
        min.attempts = min.attempts.saturating_add(1);
        if min.attempts >= max_attempts {
            min.state = MinState::Moving;
            dying.push((id, min.clone()));
        } else {
            min.state = MinState::Ready;
            st.in_flight -= 1;
            st.redeliver.push_back(id);
        }
    }
    dying
}

/// Pops up to `max` deliverable messages and marks them in flight, with a
/// visibility deadline if `visibility` is set. Queue entries whose index
/// node changed (acknowledged, retried) are skipped.
fn pop(st: &mut State, max: usize, dead: bool, now: u64, visibility: Option<Duration>) -> Vec<Popped> {
    let mut out = Vec::new();
    while out.len() < max {
        // Each source holds ids; an entry is current only if the index node
        // still matches it (not acknowledged, not copied elsewhere).
        type Current = fn(&Min, u64) -> bool;
        let (id, current, due): (u64, Current, u64) = if dead {
            match st.dead.pop_front() {
                Some(id) => (id, |m, _| m.kind == QueueKind::Dead, 0),
                None => break,
            }
        } else if let Some(id) = st.redeliver.pop_front() {
            (id, |m, _| m.delivered && m.kind != QueueKind::Dead, 0)
        } else if let Some(&(due, id)) = st.retry.first().filter(|(due, _)| *due <= now) {
            st.retry.pop_first();
            (id, |m, due| m.kind == QueueKind::Retry && m.not_before_ns == due, due)
        } else {
            match st.main.pop_front() {
                Some(id) => (id, |m, _| m.kind == QueueKind::Main, 0),
                None => break,
            }
        };
        let Some(min) = st.index.get_mut(&id) else { continue };
        if min.state != MinState::Ready || !current(min, due) {
            continue;
        }
        min.state = MinState::InFlight;
        min.delivered = true;
        if let Some(v) = visibility {
            min.lease_ns = now.saturating_add(v.as_nanos() as u64);
            st.leases.insert((min.lease_ns, id));
        }
        let min = min.clone();
        st.in_flight += 1;
        let seg = &st.segments[&min.seq];
        out.push(Popped::of(id, min, seg));
    }
    out
}

impl Inner {
    /// Fails in a `fork()` child: the queue's threads and lock stayed in
    /// the parent, so nothing could ever complete here.
    fn owner(&self) -> Result<()> {
        let pid = std::process::id();
        if pid == self.owner_pid {
            Ok(())
        } else {
            Err(Error::Forked { dir: self.dir.clone(), owner: self.owner_pid, pid })
        }
    }

    /// Refuses to create `segments` more segment files if they would not
    /// fit in the file system's free space; `field` names the setting.
    fn check_space(&self, field: &'static str, segments: u64) -> Result<()> {
        let size = self.cfg.segment_size;
        let need = segments.checked_mul(size);
        let free = self.storage.available_bytes().map_err(|e| Error::io(&self.dir, "statvfs", e))?;
        let fits = match (need, free) {
            (None, _) => false,
            (Some(need), Some(free)) => need <= free,
            (Some(_), None) => true,
        };
        if fits {
            return Ok(());
        }
        let free = free.map_or(String::new(), |f| format!(", more than the {:.1} GiB free", f as f64 / (1u64 << 30) as f64));
        Err(Error::invalid(
            field,
            format!(
                "{segments} more segment files of {size} bytes need {} bytes{free} on the file system of {}",
                need.map_or("more than 2^64".to_string(), |n| n.to_string()),
                self.dir.display()
            ),
        ))
    }

    /// Copies deliveries whose visibility timeout ran out for the last
    /// allowed time to the dead-letter queue (not waiting for the copy to
    /// be durable: until it is, the message is still where it was).
    fn dead_letter(&self, dying: Vec<(u64, Min)>) -> Result<()> {
        for (id, min) in dying {
            let popped = Popped::of(id, min.clone(), &sync::lock(&self.state).segments[&min.seq]);
            let read = self.read(vec![popped]);
            let mut st = self.usable()?;
            let msg = match read {
                Ok(mut m) => m.pop().unwrap(),
                Err(e) => {
                    if let Some(m) = st.index.get_mut(&id) {
                        m.state = MinState::Ready;
                        st.in_flight -= 1;
                        st.redeliver.push_back(id);
                    }
                    return Err(e);
                }
            };
            let crc = crc32c::crc32c(&msg.payload);
            let now = self.clock.now_ns();
            self.append(&mut st, id, &msg.payload, crc, QueueKind::Dead, min.attempts, min.enqueued_ns, now);
        }
        Ok(())
    }

    /// Gives each popped message its segment's mapping, mapping the
    /// segment now if it has none (storage without mappings: left `None`).
    fn pin_maps(&self, st: &mut State, popped: &mut [Popped]) -> Result<()> {
        for p in popped {
            let seg = st.segments.get_mut(&p.min.seq).unwrap();
            if seg.map.is_none() {
                let made = seg.file.map().map_err(|e| Error::io(self.storage.path(&seg.name), "mmap", e))?;
                seg.map = made.map(|map| Arc::new(SegMap { map, _lock: self.lock.clone() }));
            }
            p.map = seg.map.clone();
        }
        Ok(())
    }

    fn unusable(&self, st: &State) -> Error {
        match &st.failed {
            Some(cause) => Error::Failed { dir: self.dir.clone(), cause: cause.clone() },
            None => Error::Closed,
        }
    }

    fn check_usable(&self, st: &State) -> Option<Error> {
        (st.failed.is_some() || st.closing || st.closed).then(|| self.unusable(st))
    }

    /// The state, if the queue still takes work.
    fn usable(&self) -> Result<MutexGuard<'_, State>> {
        let st = sync::lock(&self.state);
        match self.check_usable(&st) {
            Some(e) => Err(e),
            None => Ok(st),
        }
    }

}

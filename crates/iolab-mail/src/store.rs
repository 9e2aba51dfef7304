//! [`MailQueue`]: the few calls the server makes on its disk queue, so that
//! FastQueue and the paper's file-per-message baseline sit behind the same
//! server and the two runs differ only in the queue. Both calls are
//! blocking; the server runs them on tokio's blocking threads.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use fastqueue::{Config, FastQueue, FilePerMessageQueue};

use crate::config::{QueueChoice, ServerConfig};
use crate::error::Result;

/// A message taken for delivery.
#[derive(Debug)]
pub struct Taken {
    /// Queue id.
    pub id: u64,
    /// The stored record (envelope + message).
    pub record: Vec<u8>,
    /// Failed deliveries so far.
    pub attempts: u32,
    /// It came back through [`MailQueue::retry`] (or a flush): the queue
    /// holds its due time, so a not-before line in the record no longer
    /// applies (`deliver.rs`).
    pub retried: bool,
}

/// One stored record as the queue commands (`admin.rs`) list it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stored {
    /// Queue id (the queue's own number).
    pub id: u64,
    /// Record bytes.
    pub size: u64,
    /// Give-backs the queue counted (see [`Taken::attempts`]).
    pub attempts: u32,
    /// What it is doing.
    pub state: StoredState,
    /// When a delayed record is due, ms since the epoch.
    pub due_ms: Option<u64>,
    /// See [`Taken::retried`].
    pub retried: bool,
}

/// The state of a [`Stored`] record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StoredState {
    /// Waiting to be taken.
    Ready,
    /// Given back, not yet due.
    Delayed,
    /// Taken by a delivery.
    InFlight,
}

/// I/O the queue did, as counted by the queue itself.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct QueueIo {
    /// `fsync`/`fdatasync` calls.
    pub syncs: u64,
    /// Bytes written.
    pub bytes_written: u64,
    /// Median and 99th percentile of the queue's recent `fdatasync` calls,
    /// ms (FastQueue's own figures; 0 for filedir, which does not time them).
    pub sync_ms: (f64, f64),
}

/// A durable mail queue.
pub trait MailQueue: Send + Sync {
    /// Stores a record; returns once it is durable (this is what the `250`
    /// after `DATA` waits for).
    fn enqueue(&self, record: &[u8]) -> Result<u64>;
    /// The FastQueue underneath, if this queue commits in groups: the
    /// server then hands records to its committer threads (`commit.rs`)
    /// instead of blocking a thread per message.
    fn group_commit(&self) -> Option<Arc<FastQueue>> {
        None
    }
    /// Takes up to `max` records, waiting up to `wait` for the first. Each
    /// is in flight until acknowledged or retried, or until its visibility
    /// timeout (`ServerConfig::visibility_timeout`) runs out: then it is
    /// handed out again, counted as a failed attempt.
    fn take(&self, max: usize, wait: Duration) -> Result<Vec<Taken>>;
    /// A delivery of `id` is still running: its visibility deadline becomes
    /// now + the visibility timeout. False if the record is no longer this
    /// delivery's (its deadline passed, or another delivery finished it).
    fn renew(&self, id: u64) -> Result<bool>;
    /// Deletes delivered records; returns once that is durable.
    fn ack(&self, ids: &[u64]) -> Result<()>;
    /// Gives a record back, to be taken again after `delay`, with its
    /// attempt count increased.
    fn retry(&self, id: u64, delay: Duration) -> Result<()>;
    /// Records stored and not yet acknowledged.
    fn len(&self) -> usize;
    /// Whether no record is stored.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// What the queue wrote and synced since it was opened.
    fn io(&self) -> QueueIo;
    /// Writes what is pending and closes.
    fn close(&self) -> Result<()>;
    /// Every stored record, nothing taken (the queue commands' `list`).
    fn browse(&self) -> Result<Vec<Stored>>;
    /// A stored record's bytes, nothing taken; `None` if it is gone.
    fn peek(&self, id: u64) -> Result<Option<Vec<u8>>>;
    /// Deletes records in any state (`postsuper -d`); returns those
    /// deleted (an id already gone is left out). Durable when it returns
    /// (filedir: an unlink without a directory sync, as its ack).
    fn delete(&self, ids: &[u64]) -> Result<Vec<u64>>;
    /// Makes records that wait due now (`postqueue -f`); returns those it
    /// moved (one taken meanwhile is left out).
    fn flush(&self, ids: &[u64]) -> Result<Vec<u64>>;
    /// Replaces a stored record in place, if the queue can (filedir);
    /// false if it cannot or the record is gone.
    fn rewrite(&self, _id: u64, _record: &[u8]) -> Result<bool> {
        Ok(false)
    }
}

fn ms_of_ns(ns: u64) -> u64 {
    ns / 1_000_000
}

/// Opens an existing queue of either kind for the queue commands, with the
/// server stopped: `None` if `dir` holds no queue (nothing is created).
/// FastQueue is opened without a spare segment (a listing should not
/// write 64 MiB); the file-per-message queue with the number of hashed
/// directories it has.
pub fn open_existing(dir: &Path) -> Result<Option<(QueueChoice, Box<dyn MailQueue>)>> {
    if dir.join("MANIFEST").exists() {
        let fq = Config { max_attempts: u32::MAX, spare_segments: 0, ..Config::default() };
        let q = FastQueue::open(dir, fq)?;
        let store = FastStore { q: Arc::new(q), visibility: Duration::from_secs(120) };
        return Ok(Some((QueueChoice::Fast, Box::new(store))));
    }
    let msg = dir.join("msg");
    if msg.is_dir() {
        let split = std::fs::read_dir(&msg).map(|d| d.flatten().filter(|e| e.path().is_dir()).count()).unwrap_or(0);
        let split = split.clamp(1, 256) as u64;
        return Ok(Some((QueueChoice::FileDir, Box::new(FileStore::open(dir, split, Duration::from_secs(120))?))));
    }
    Ok(None)
}

/// Opens the queue `cfg` asks for in `dir`; `busy` for the main queue
/// (FastQueue then preallocates its spare segment now), not for the
/// dead-letter queue.
pub fn open(cfg: &ServerConfig, dir: &Path, busy: bool) -> Result<Box<dyn MailQueue>> {
    Ok(match cfg.queue {
        QueueChoice::Fast => Box::new(FastStore::open(dir, cfg, busy)?),
        QueueChoice::FileDir => Box::new(FileStore::open(dir, cfg.filedir_split, cfg.visibility_timeout)?),
    })
}

/// FastQueue as a mail queue: `retry` is FastQueue's `nack` into its retry
/// queue; the server keeps its own dead-letter queue (a second queue), so
/// FastQueue's own dead-lettering is switched off.
pub struct FastStore {
    q: Arc<FastQueue>,
    /// Given to every delivery taken (ServerConfig::visibility_timeout).
    visibility: Duration,
}

impl FastStore {
    /// Opens (or creates) the queue in `dir`.
    pub fn open(dir: &Path, cfg: &ServerConfig, preallocate: bool) -> Result<FastStore> {
        let fq = Config {
            segment_size: cfg.segment_size,
            batch_delay: cfg.batch_delay,
            // The server decides when to give up (ServerConfig::max_attempts).
            max_attempts: u32::MAX,
            ..Config::default()
        };
        let q = FastQueue::open(dir, fq)?;
        // The paper preallocates the queue's disk blocks when the system
        // starts (section 4.2); without this the first spare segment would
        // be written during the first minute of load.
        if preallocate {
            q.reserve_segments(q.config().spare_segments)?;
        }
        Ok(FastStore { q: Arc::new(q), visibility: cfg.visibility_timeout })
    }
}

impl MailQueue for FastStore {
    fn enqueue(&self, record: &[u8]) -> Result<u64> {
        Ok(self.q.enqueue(record)?)
    }
    fn group_commit(&self) -> Option<Arc<FastQueue>> {
        Some(self.q.clone())
    }
    fn take(&self, max: usize, wait: Duration) -> Result<Vec<Taken>> {
        // A delivery whose task dies or hangs is not pinned: after the
        // visibility timeout FastQueue hands the message out again (counted
        // as a failed attempt).
        let got = self.q.dequeue_batch_with_visibility(max, Some(wait), Some(self.visibility))?;
        Ok(got
            .into_iter()
            .map(|m| Taken { id: m.id, retried: m.kind == fastqueue::QueueKind::Retry, record: m.payload, attempts: m.attempts })
            .collect())
    }
    fn renew(&self, id: u64) -> Result<bool> {
        match self.q.extend_visibility(id, self.visibility) {
            Ok(()) => Ok(true),
            Err(fastqueue::Error::NotInFlight { .. } | fastqueue::Error::UnknownId { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
    fn ack(&self, ids: &[u64]) -> Result<()> {
        match self.q.ack_many(ids) {
            Ok(()) => Ok(()),
            // ack_many refuses the whole group for one id. An id already
            // acknowledged is a message whose visibility timeout ran out
            // while its first delivery was slow, and which a second
            // delivery acknowledged first: nothing left to do for it.
            Err(fastqueue::Error::UnknownId { .. }) => {
                for &id in ids {
                    match self.q.ack(id) {
                        Ok(()) | Err(fastqueue::Error::UnknownId { .. }) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                Ok(())
            }
            Err(e) => Err(e.into()),
        }
    }
    fn retry(&self, id: u64, delay: Duration) -> Result<()> {
        self.q.nack(id, delay)?;
        Ok(())
    }
    fn len(&self) -> usize {
        self.q.len()
    }
    fn io(&self) -> QueueIo {
        let s = self.q.stats();
        QueueIo { syncs: s.syncs, bytes_written: s.bytes_written, sync_ms: (s.sync_p50_us / 1e3, s.sync_p99_us / 1e3) }
    }
    fn close(&self) -> Result<()> {
        Ok(self.q.close()?)
    }
    fn browse(&self) -> Result<Vec<Stored>> {
        use fastqueue::MessageState as M;
        Ok(self
            .q
            .browse()?
            .into_iter()
            .map(|m| Stored {
                id: m.id,
                size: u64::from(m.size),
                attempts: m.attempts,
                // The server's FastQueue never dead-letters (max_attempts
                // is off): a dead one would be another program's.
                state: match m.state {
                    M::Ready | M::Dead => StoredState::Ready,
                    M::Delayed => StoredState::Delayed,
                    M::InFlight => StoredState::InFlight,
                },
                due_ms: (m.state == M::Delayed).then(|| ms_of_ns(m.not_before_ns)),
                retried: m.kind == fastqueue::QueueKind::Retry,
            })
            .collect())
    }
    fn peek(&self, id: u64) -> Result<Option<Vec<u8>>> {
        match self.q.peek(id) {
            Ok(m) => Ok(Some(m.payload)),
            Err(fastqueue::Error::UnknownId { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
    fn delete(&self, ids: &[u64]) -> Result<Vec<u64>> {
        // FastQueue refuses the whole call for one id gone (taken and
        // acknowledged since the caller looked: left out) or being copied
        // by a nack this instant (asked again, a bounded number of times).
        let mut left: Vec<u64> = ids.to_vec();
        left.sort_unstable();
        left.dedup();
        let mut busy = 0;
        loop {
            match self.q.delete(&left) {
                Ok(()) => return Ok(left),
                Err(fastqueue::Error::UnknownId { id }) => left.retain(|&x| x != id),
                Err(fastqueue::Error::Invalid { .. }) if busy < 200 => {
                    busy += 1;
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
    fn flush(&self, ids: &[u64]) -> Result<Vec<u64>> {
        Ok(self.q.retry_now(Some(ids))?)
    }
}

/// The file-per-message baseline as a mail queue. The baseline has no
/// delayed retry and keeps attempt counts in memory only, so a retried id
/// waits here, in memory, until it is due (after a restart it is simply
/// ready again: the file is still there). Visibility timeouts are kept here
/// too, in memory, with FastQueue's semantics (a lapsed delivery is handed
/// out again and counts as an attempt; a late acknowledgement still counts),
/// so that the two servers differ only in how the queue stores messages.
pub struct FileStore {
    q: FilePerMessageQueue,
    visibility: Duration,
    /// (due, id) of records waiting for their retry.
    delayed: Mutex<BTreeSet<(Instant, u64)>>,
    leases: Mutex<Leases>,
    /// Signalled by enqueue, so that `take` need not poll.
    arrived: Condvar,
    arrivals: Mutex<u64>,
    syncs: AtomicU64,
    bytes: AtomicU64,
}

/// Deliveries in flight and their visibility deadlines.
#[derive(Default)]
struct Leases {
    due: BTreeSet<(Instant, u64)>,
    of: HashMap<u64, Instant>,
    /// Acknowledged after their deadline, when the record was already back
    /// in the baseline's ready list: the file is deleted when the list
    /// hands it out next (the baseline cannot take an id out of the list;
    /// deleting the file first would make that read fail).
    acked_late: HashSet<u64>,
}

impl Leases {
    fn end(&mut self, id: u64) -> bool {
        match self.of.remove(&id) {
            Some(due) => self.due.remove(&(due, id)),
            None => false,
        }
    }
}

impl FileStore {
    /// Opens (or creates) the queue in `dir` with `split` hashed
    /// directories; deliveries get `visibility` to finish or renew.
    pub fn open(dir: &Path, split: u64, visibility: Duration) -> Result<FileStore> {
        Ok(FileStore {
            q: FilePerMessageQueue::open_split(dir, split)?,
            visibility,
            delayed: Mutex::new(BTreeSet::new()),
            leases: Mutex::new(Leases::default()),
            arrived: Condvar::new(),
            arrivals: Mutex::new(0),
            syncs: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        })
    }

    /// Puts due retries and lapsed deliveries back in the ready list;
    /// returns when the next of either is due.
    fn release_due(&self) -> Result<Option<Instant>> {
        let now = Instant::now();
        let mut next = None;
        {
            let mut delayed = self.delayed.lock().unwrap();
            while let Some(&(due, id)) = delayed.first() {
                if due > now {
                    next = Some(due);
                    break;
                }
                delayed.pop_first();
                give_back(&self.q, id)?;
            }
        }
        let mut leases = self.leases.lock().unwrap();
        while let Some(&(due, id)) = leases.due.first() {
            if due > now {
                next = Some(next.map_or(due, |n: Instant| n.min(due)));
                break;
            }
            leases.end(id);
            give_back(&self.q, id)?;
        }
        Ok(next)
    }
}

/// The baseline's `nack` (ready again, one attempt more); an id whose file
/// is gone was acknowledged meanwhile.
fn give_back(q: &FilePerMessageQueue, id: u64) -> Result<()> {
    match q.nack(id) {
        Ok(()) | Err(fastqueue::Error::UnknownId { .. }) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

impl MailQueue for FileStore {
    fn enqueue(&self, record: &[u8]) -> Result<u64> {
        let id = self.q.enqueue(record)?;
        // FilePerMessageQueue::enqueue: fsync of the file, then of its
        // hashed directory after the rename.
        self.syncs.fetch_add(2, Ordering::Relaxed);
        self.bytes.fetch_add(record.len() as u64, Ordering::Relaxed);
        *self.arrivals.lock().unwrap() += 1;
        self.arrived.notify_one();
        Ok(id)
    }
    fn take(&self, max: usize, wait: Duration) -> Result<Vec<Taken>> {
        let deadline = Instant::now() + wait;
        loop {
            let next_due = self.release_due()?;
            let seen = *self.arrivals.lock().unwrap();
            let got = self.q.dequeue_batch(max)?;
            let had = !got.is_empty();
            let mut out = Vec::with_capacity(got.len());
            {
                let mut leases = self.leases.lock().unwrap();
                let due = Instant::now() + self.visibility;
                for m in got {
                    if leases.acked_late.remove(&m.id) {
                        match self.q.ack(m.id) {
                            Ok(()) | Err(fastqueue::Error::UnknownId { .. }) => continue,
                            Err(e) => return Err(e.into()),
                        }
                    }
                    leases.of.insert(m.id, due);
                    leases.due.insert((due, m.id));
                    // The baseline counts give-backs in memory only: after
                    // a restart a record is ready again with none.
                    out.push(Taken { id: m.id, retried: m.attempts > 0, record: m.payload, attempts: m.attempts });
                }
            }
            if !out.is_empty() {
                return Ok(out);
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(Vec::new());
            }
            if had {
                continue;
            }
            let until = next_due.map_or(deadline, |d| d.min(deadline));
            let guard = self.arrivals.lock().unwrap();
            if *guard == seen {
                let _ = self.arrived.wait_timeout(guard, until.saturating_duration_since(now)).unwrap();
            }
        }
    }
    fn renew(&self, id: u64) -> Result<bool> {
        let mut leases = self.leases.lock().unwrap();
        if !leases.end(id) {
            return Ok(false);
        }
        let due = Instant::now() + self.visibility;
        leases.of.insert(id, due);
        leases.due.insert((due, id));
        Ok(true)
    }
    fn ack(&self, ids: &[u64]) -> Result<()> {
        for &id in ids {
            let mine = {
                let mut leases = self.leases.lock().unwrap();
                let mine = leases.end(id);
                if !mine {
                    // Back in the ready list (or retry wait) after its
                    // deadline, or finished by another delivery: delete it
                    // when it comes out (see `Leases::acked_late`). An id
                    // already deleted stays in that set, a few bytes, until
                    // the server stops.
                    leases.acked_late.insert(id);
                }
                mine
            };
            if mine {
                match self.q.ack(id) {
                    Ok(()) | Err(fastqueue::Error::UnknownId { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(())
    }
    fn retry(&self, id: u64, delay: Duration) -> Result<()> {
        // Only a delivery still holding the record gives it back: after its
        // deadline the record was handed out again already.
        if self.leases.lock().unwrap().end(id) {
            self.delayed.lock().unwrap().insert((Instant::now() + delay, id));
        }
        Ok(())
    }
    fn len(&self) -> usize {
        self.q.len() + self.delayed.lock().unwrap().len() + self.leases.lock().unwrap().of.len()
    }
    fn io(&self) -> QueueIo {
        QueueIo { syncs: self.syncs.load(Ordering::Relaxed), bytes_written: self.bytes.load(Ordering::Relaxed), sync_ms: (0.0, 0.0) }
    }
    fn close(&self) -> Result<()> {
        Ok(())
    }
    fn browse(&self) -> Result<Vec<Stored>> {
        let list = self.q.browse()?;
        // Delays and leases live here, in memory; the baseline counts a
        // delayed record as taken.
        let (now, wall) = (Instant::now(), crate::envelope::now_ms());
        let delayed: HashMap<u64, Instant> = self.delayed.lock().unwrap().iter().map(|&(due, id)| (id, due)).collect();
        Ok(list
            .into_iter()
            .map(|m| {
                let due = delayed.get(&m.id).map(|d| wall + d.saturating_duration_since(now).as_millis() as u64);
                let state = match (due, m.state) {
                    (Some(_), _) => StoredState::Delayed,
                    (None, fastqueue::MessageState::Ready) => StoredState::Ready,
                    (None, _) => StoredState::InFlight,
                };
                // A delayed record's give-back is counted when it is due
                // (`release_due`); FastQueue counts it at once.
                let attempts = m.attempts + u32::from(due.is_some());
                Stored { id: m.id, size: u64::from(m.size), attempts, state, due_ms: due, retried: attempts > 0 }
            })
            .collect())
    }
    fn peek(&self, id: u64) -> Result<Option<Vec<u8>>> {
        match self.q.peek(id) {
            Ok(p) => Ok(Some(p)),
            Err(fastqueue::Error::UnknownId { .. }) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }
    fn delete(&self, ids: &[u64]) -> Result<Vec<u64>> {
        let mut done = Vec::new();
        for &id in ids {
            self.delayed.lock().unwrap().retain(|&(_, d)| d != id);
            // A delivery holding it finds no lease when it settles: its
            // ack and retry then change nothing.
            self.leases.lock().unwrap().end(id);
            match self.q.delete(&[id]) {
                Ok(()) => done.push(id),
                Err(fastqueue::Error::UnknownId { .. }) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(done)
    }
    fn flush(&self, ids: &[u64]) -> Result<Vec<u64>> {
        let mut moved = Vec::new();
        {
            let mut delayed = self.delayed.lock().unwrap();
            let due: Vec<(Instant, u64)> = delayed.iter().copied().filter(|(_, id)| ids.contains(id)).collect();
            for entry in due {
                delayed.remove(&entry);
                give_back(&self.q, entry.1)?;
                moved.push(entry.1);
            }
        }
        if !moved.is_empty() {
            *self.arrivals.lock().unwrap() += 1;
            self.arrived.notify_one();
        }
        Ok(moved)
    }
    fn rewrite(&self, id: u64, record: &[u8]) -> Result<bool> {
        match self.q.replace(id, record) {
            Ok(()) => Ok(true),
            Err(fastqueue::Error::UnknownId { .. }) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Delivery;

    fn cfg(choice: QueueChoice, dir: &Path) -> ServerConfig {
        let mut c = ServerConfig::new(
            "127.0.0.1:0".parse().unwrap(),
            choice,
            dir.to_path_buf(),
            Delivery::Maildir(dir.join("mail")),
        );
        c.segment_size = 16 << 20;
        c
    }

    /// Both queues: enqueue, take, retry with a delay, ack; a retried
    /// record is not taken before it is due.
    #[test]
    fn both_queues_keep_the_contract() {
        for choice in [QueueChoice::Fast, QueueChoice::FileDir] {
            let tmp = tempfile::tempdir().unwrap();
            let c = cfg(choice, tmp.path());
            let q = open(&c, &tmp.path().join("q"), true).unwrap();
            let a = q.enqueue(b"one").unwrap();
            let b = q.enqueue(b"two").unwrap();
            let got = q.take(10, Duration::from_millis(10)).unwrap();
            assert_eq!(got.iter().map(|t| &t.record[..]).collect::<Vec<_>>(), vec![&b"one"[..], b"two"], "{choice:?}");
            q.retry(a, Duration::from_millis(150)).unwrap();
            q.ack(&[b]).unwrap();
            assert!(q.take(10, Duration::from_millis(20)).unwrap().is_empty(), "{choice:?}: retried too early");
            let again = q.take(10, Duration::from_secs(2)).unwrap();
            assert_eq!(again.len(), 1);
            assert_eq!((again[0].id, again[0].attempts), (a, 1), "{choice:?}");
            q.ack(&[a]).unwrap();
            assert!(q.is_empty());
            assert!(q.io().syncs >= 2);
            q.close().unwrap();
        }
    }

    /// What was enqueued and not acknowledged is there after a reopen.
    #[test]
    fn reopen_keeps_unacknowledged() {
        for choice in [QueueChoice::Fast, QueueChoice::FileDir] {
            let tmp = tempfile::tempdir().unwrap();
            let c = cfg(choice, tmp.path());
            let dir = tmp.path().join("q");
            {
                let q = open(&c, &dir, true).unwrap();
                let a = q.enqueue(b"keep").unwrap();
                let b = q.enqueue(b"gone").unwrap();
                let _ = q.take(10, Duration::from_millis(10)).unwrap();
                q.ack(&[b]).unwrap();
                let _ = a;
                q.close().unwrap();
            }
            let q = open(&c, &dir, true).unwrap();
            let got = q.take(10, Duration::from_millis(10)).unwrap();
            assert_eq!(got.len(), 1, "{choice:?}");
            assert_eq!(got[0].record, b"keep");
        }
    }

    /// Both queues, same visibility semantics: a renewed delivery keeps its
    /// record; a lapsed one is handed out again with one attempt more; the
    /// late acknowledgement of the first delivery still deletes it.
    #[test]
    fn both_queues_have_the_same_visibility_timeouts() {
        for choice in [QueueChoice::Fast, QueueChoice::FileDir] {
            let tmp = tempfile::tempdir().unwrap();
            let mut c = cfg(choice, tmp.path());
            c.visibility_timeout = Duration::from_millis(300);
            let q = open(&c, &tmp.path().join("q"), true).unwrap();
            let a = q.enqueue(b"slow").unwrap();
            assert_eq!(q.take(10, Duration::from_millis(10)).unwrap().len(), 1);
            for _ in 0..4 {
                std::thread::sleep(Duration::from_millis(150));
                assert!(q.renew(a).unwrap(), "{choice:?}: still this delivery's");
            }
            assert!(q.take(10, Duration::from_millis(50)).unwrap().is_empty(), "{choice:?}: renewed, not handed out");
            // No renewal: handed out again after the deadline.
            let again = q.take(10, Duration::from_secs(2)).unwrap();
            assert_eq!(again.len(), 1, "{choice:?}");
            assert_eq!((again[0].id, again[0].attempts), (a, 1), "{choice:?}: the lapse counts as an attempt");
            // The first delivery finishes late: its acknowledgement counts,
            // the second delivery's finds nothing left to do.
            q.ack(&[a]).unwrap();
            q.ack(&[a]).unwrap();
            assert!(q.take(10, Duration::from_millis(500)).unwrap().is_empty(), "{choice:?}");
            assert!(q.is_empty(), "{choice:?}: {} left", q.len());
            q.close().unwrap();
        }
    }

    /// A lapsed record acknowledged late while it waits in the ready list
    /// is not delivered a third time.
    #[test]
    fn a_late_acknowledgement_of_a_waiting_record_deletes_it() {
        for choice in [QueueChoice::Fast, QueueChoice::FileDir] {
            let tmp = tempfile::tempdir().unwrap();
            let mut c = cfg(choice, tmp.path());
            c.visibility_timeout = Duration::from_millis(100);
            let q = open(&c, &tmp.path().join("q"), true).unwrap();
            let a = q.enqueue(b"late").unwrap();
            let b = q.enqueue(b"other").unwrap();
            assert_eq!(q.take(1, Duration::from_millis(10)).unwrap()[0].id, a);
            std::thread::sleep(Duration::from_millis(250));
            // Lapsed; its return to the ready list happens in this take
            // (filedir puts it behind b, so this takes b).
            let first: Vec<u64> = q.take(1, Duration::from_millis(10)).unwrap().into_iter().map(|t| t.id).collect();
            q.ack(&[a]).unwrap();
            let rest: Vec<u64> = q.take(10, Duration::from_millis(50)).unwrap().into_iter().map(|t| t.id).collect();
            assert!(!rest.contains(&a), "{choice:?}: acknowledged, not handed out again: {rest:?}");
            let mut others: Vec<u64> = first.into_iter().chain(rest).collect();
            others.retain(|&id| id != a);
            assert_eq!(others, vec![b], "{choice:?}");
            q.ack(&[b]).unwrap();
            assert!(q.is_empty(), "{choice:?}: {} left", q.len());
        }
    }
}

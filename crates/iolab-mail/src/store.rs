//! [`MailQueue`]: the few calls the server makes on its disk queue, so that
//! FastQueue and the paper's file-per-message baseline sit behind the same
//! server and the two runs differ only in the queue. Both calls are
//! blocking; the server runs them on tokio's blocking threads.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex};
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
}

/// I/O the queue did, as counted by the queue itself.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QueueIo {
    /// `fsync`/`fdatasync` calls.
    pub syncs: u64,
    /// Bytes written.
    pub bytes_written: u64,
}

/// A durable mail queue.
pub trait MailQueue: Send + Sync {
    /// Stores a record; returns once it is durable (this is what the `250`
    /// after `DATA` waits for).
    fn enqueue(&self, record: &[u8]) -> Result<u64>;
    /// Takes up to `max` records, waiting up to `wait` for the first.
    fn take(&self, max: usize, wait: Duration) -> Result<Vec<Taken>>;
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
}

/// Opens the queue `cfg` asks for in `dir`; `busy` for the main queue
/// (FastQueue then preallocates its spare segment now), not for the
/// dead-letter queue.
pub fn open(cfg: &ServerConfig, dir: &Path, busy: bool) -> Result<Box<dyn MailQueue>> {
    Ok(match cfg.queue {
        QueueChoice::Fast => Box::new(FastStore::open(dir, cfg, busy)?),
        QueueChoice::FileDir => Box::new(FileStore::open(dir, cfg.filedir_split)?),
    })
}

/// FastQueue as a mail queue: `retry` is FastQueue's `nack` into its retry
/// queue; the server keeps its own dead-letter queue (a second queue), so
/// FastQueue's own dead-lettering is switched off.
pub struct FastStore {
    q: FastQueue,
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
        Ok(FastStore { q })
    }
}

impl MailQueue for FastStore {
    fn enqueue(&self, record: &[u8]) -> Result<u64> {
        Ok(self.q.enqueue(record)?)
    }
    fn take(&self, max: usize, wait: Duration) -> Result<Vec<Taken>> {
        let got = self.q.dequeue_batch(max, Some(wait))?;
        Ok(got.into_iter().map(|m| Taken { id: m.id, record: m.payload, attempts: m.attempts }).collect())
    }
    fn ack(&self, ids: &[u64]) -> Result<()> {
        Ok(self.q.ack_many(ids)?)
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
        QueueIo { syncs: s.syncs, bytes_written: s.bytes_written }
    }
    fn close(&self) -> Result<()> {
        Ok(self.q.close()?)
    }
}

/// The file-per-message baseline as a mail queue. The baseline has no
/// delayed retry and keeps attempt counts in memory only, so a retried id
/// waits here, in memory, until it is due (after a restart it is simply
/// ready again: the file is still there).
pub struct FileStore {
    q: FilePerMessageQueue,
    /// (due, id) of records waiting for their retry.
    delayed: Mutex<BTreeSet<(Instant, u64)>>,
    /// Signalled by enqueue, so that `take` need not poll.
    arrived: Condvar,
    arrivals: Mutex<u64>,
    syncs: AtomicU64,
    bytes: AtomicU64,
}

impl FileStore {
    /// Opens (or creates) the queue in `dir` with `split` hashed directories.
    pub fn open(dir: &Path, split: u64) -> Result<FileStore> {
        Ok(FileStore {
            q: FilePerMessageQueue::open_split(dir, split)?,
            delayed: Mutex::new(BTreeSet::new()),
            arrived: Condvar::new(),
            arrivals: Mutex::new(0),
            syncs: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
        })
    }

    fn release_due(&self) -> Result<Option<Instant>> {
        let now = Instant::now();
        let mut delayed = self.delayed.lock().unwrap();
        while let Some(&(due, id)) = delayed.first() {
            if due > now {
                return Ok(Some(due));
            }
            delayed.pop_first();
            self.q.nack(id)?;
        }
        Ok(None)
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
            if !got.is_empty() {
                return Ok(got.into_iter().map(|m| Taken { id: m.id, record: m.payload, attempts: m.attempts }).collect());
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(Vec::new());
            }
            let until = next_due.map_or(deadline, |d| d.min(deadline));
            let guard = self.arrivals.lock().unwrap();
            if *guard == seen {
                let _ = self.arrived.wait_timeout(guard, until.saturating_duration_since(now)).unwrap();
            }
        }
    }
    fn ack(&self, ids: &[u64]) -> Result<()> {
        for &id in ids {
            self.q.ack(id)?;
        }
        Ok(())
    }
    fn retry(&self, id: u64, delay: Duration) -> Result<()> {
        self.delayed.lock().unwrap().insert((Instant::now() + delay, id));
        Ok(())
    }
    fn len(&self) -> usize {
        self.q.len() + self.delayed.lock().unwrap().len()
    }
    fn io(&self) -> QueueIo {
        QueueIo { syncs: self.syncs.load(Ordering::Relaxed), bytes_written: self.bytes.load(Ordering::Relaxed) }
    }
    fn close(&self) -> Result<()> {
        Ok(())
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
}

//! Counters the server keeps, and the snapshot it reports
//! ([`StatsSnapshot`], also written as JSON by `iolab mail serve --stats`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::store::QueueIo;

/// Live counters, shared by sessions and delivery workers.
pub struct Stats {
    pub(crate) sessions: AtomicU64,
    pub(crate) sessions_open: AtomicU64,
    pub(crate) refused_connections: AtomicU64,
    pub(crate) accepted: AtomicU64,
    pub(crate) rejected: AtomicU64,
    pub(crate) delivered: AtomicU64,
    pub(crate) retried: AtomicU64,
    pub(crate) dead: AtomicU64,
    pub(crate) bounces: AtomicU64,
    pub(crate) rcpt_sent: AtomicU64,
    pub(crate) rcpt_bounced: AtomicU64,
    pub(crate) refused_client_connections: AtomicU64,
    pub(crate) delivery_syncs: AtomicU64,
    pub(crate) delivery_panics: AtomicU64,
    pub(crate) delivery_timeouts: AtomicU64,
    pub(crate) visibility_renewals: AtomicU64,
    /// Time from the end of `DATA` to the `250` (the queue's commit).
    pub(crate) commit: Latency,
    /// The commit's parts: waiting for a thread to run the enqueue on,
    /// inside the queue's enqueue (the group commit), and from its return
    /// until the session's task runs again.
    pub(crate) commit_thread_wait: Latency,
    pub(crate) commit_enqueue: Latency,
    pub(crate) commit_resume: Latency,
}

/// A latency histogram (µs, 1 µs to 10 min, 3 significant digits).
pub(crate) struct Latency(Mutex<Histogram<u64>>);

impl Default for Latency {
    fn default() -> Latency {
        Latency(Mutex::new(Histogram::new_with_bounds(1, 600_000_000, 3).unwrap()))
    }
}

impl Latency {
    pub(crate) fn record(&self, d: Duration) {
        let us = (d.as_micros() as u64).clamp(1, 600_000_000);
        let _ = self.0.lock().unwrap().record(us);
    }

    /// (p50, p99) in ms; zeros when nothing was recorded.
    fn percentiles_ms(&self) -> (f64, f64) {
        let h = self.0.lock().unwrap();
        let q = |p: f64| if h.is_empty() { 0.0 } else { h.value_at_quantile(p) as f64 / 1000.0 };
        (q(0.5), q(0.99))
    }
}

impl Default for Stats {
    fn default() -> Stats {
        Stats {
            sessions: AtomicU64::new(0),
            sessions_open: AtomicU64::new(0),
            refused_connections: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            rejected: AtomicU64::new(0),
            delivered: AtomicU64::new(0),
            retried: AtomicU64::new(0),
            dead: AtomicU64::new(0),
            bounces: AtomicU64::new(0),
            rcpt_sent: AtomicU64::new(0),
            rcpt_bounced: AtomicU64::new(0),
            refused_client_connections: AtomicU64::new(0),
            delivery_syncs: AtomicU64::new(0),
            delivery_panics: AtomicU64::new(0),
            delivery_timeouts: AtomicU64::new(0),
            visibility_renewals: AtomicU64::new(0),
            commit: Latency::default(),
            commit_thread_wait: Latency::default(),
            commit_enqueue: Latency::default(),
            commit_resume: Latency::default(),
        }
    }
}

/// The counters at one moment.
#[derive(Clone, Debug, Default, Serialize)]
pub struct StatsSnapshot {
    /// SMTP sessions accepted since start.
    pub sessions: u64,
    /// Sessions open now.
    pub sessions_open: u64,
    /// Connections answered `421` for the connection limit.
    pub refused_connections: u64,
    /// Messages answered `250` after `DATA` (durable in the queue).
    pub accepted: u64,
    /// Transactions refused with a 4xx/5xx reply after `DATA`.
    pub rejected: u64,
    /// Messages delivered to every recipient at once and acknowledged.
    pub delivered: u64,
    /// Attempts that left recipients deferred (the message went to the
    /// retry queue, or a record for those recipients was written).
    pub retried: u64,
    /// Messages with bounced recipients (a record of them in the
    /// dead-letter queue).
    pub dead: u64,
    /// Bounces (DSNs) queued for senders.
    pub bounces: u64,
    /// Recipients delivered.
    pub rcpt_sent: u64,
    /// Recipients bounced.
    pub rcpt_bounced: u64,
    /// Connections answered `421` for the per-client limit.
    pub refused_client_connections: u64,
    /// Messages in the queue (ready, in flight, retry).
    pub queued: u64,
    /// `fsync`/`fdatasync` calls of the queue (its own count).
    pub queue_syncs: u64,
    /// Maildir `fsync`s (file and directory).
    pub delivery_syncs: u64,
    /// Delivery tasks that panicked (their message was retried, the task
    /// replaced).
    pub delivery_panics: u64,
    /// Deliveries cut after `delivery_timeout` (and retried).
    pub delivery_timeouts: u64,
    /// Visibility deadlines renewed by deliveries still running.
    pub visibility_renewals: u64,
    /// Bytes the queue wrote (its own count).
    pub queue_bytes_written: u64,
    /// The queue's recent `fdatasync` latency (p50, p99), ms (FastQueue only).
    pub queue_sync_ms: (f64, f64),
    /// Commit latency (end of `DATA` to `250`) percentiles, ms.
    pub commit_ms_p50: f64,
    /// 99th percentile.
    pub commit_ms_p99: f64,
    /// The commit's parts (p50, p99, ms): waiting for a thread to run the
    /// enqueue on; inside the queue's enqueue (the durable write itself);
    /// from the enqueue's return until the session's task ran again.
    pub commit_thread_wait_ms: (f64, f64),
    /// See `commit_thread_wait_ms`.
    pub commit_enqueue_ms: (f64, f64),
    /// See `commit_thread_wait_ms`.
    pub commit_resume_ms: (f64, f64),
}

impl Stats {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// The counters now; `queued` and `io` come from the queue.
    pub fn snapshot(&self, queued: u64, io: QueueIo) -> StatsSnapshot {
        let (commit_ms_p50, commit_ms_p99) = self.commit.percentiles_ms();
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        StatsSnapshot {
            sessions: get(&self.sessions),
            sessions_open: get(&self.sessions_open),
            refused_connections: get(&self.refused_connections),
            accepted: get(&self.accepted),
            rejected: get(&self.rejected),
            delivered: get(&self.delivered),
            retried: get(&self.retried),
            dead: get(&self.dead),
            bounces: get(&self.bounces),
            rcpt_sent: get(&self.rcpt_sent),
            rcpt_bounced: get(&self.rcpt_bounced),
            refused_client_connections: get(&self.refused_client_connections),
            queued,
            queue_syncs: io.syncs,
            delivery_syncs: get(&self.delivery_syncs),
            delivery_panics: get(&self.delivery_panics),
            delivery_timeouts: get(&self.delivery_timeouts),
            visibility_renewals: get(&self.visibility_renewals),
            queue_bytes_written: io.bytes_written,
            queue_sync_ms: io.sync_ms,
            commit_ms_p50,
            commit_ms_p99,
            commit_thread_wait_ms: self.commit_thread_wait.percentiles_ms(),
            commit_enqueue_ms: self.commit_enqueue.percentiles_ms(),
            commit_resume_ms: self.commit_resume.percentiles_ms(),
        }
    }
}

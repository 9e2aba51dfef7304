//! Counters the server keeps, and the snapshot it reports
//! ([`StatsSnapshot`], also written as JSON by `iolab mail serve --stats`).
//!
//! Besides counts, the server times how long it takes to process each SMTP
//! command and each delivery ([`CommandTimes`]): the FastQueue paper's
//! Figure 3 (FSmail's time per command with one file per message) and
//! Figure 8 (the same with FastQueue), which `iolab paper fastqueue`
//! redraws from these timers.

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
    /// Messages the reader's `take` calls returned.
    pub(crate) taken: AtomicU64,
    /// Time from the end of `DATA` to the `250` (the queue's commit).
    pub(crate) commit: Latency,
    /// The commit's parts: waiting for a thread to run the enqueue on,
    /// inside the queue's enqueue (the group commit), and from its return
    /// until the session's task runs again.
    pub(crate) commit_thread_wait: Latency,
    pub(crate) commit_enqueue: Latency,
    pub(crate) commit_resume: Latency,
    /// Processing time per SMTP command and per delivery (the paper's
    /// Figures 3 and 8).
    pub(crate) steps: [Timer; Step::COUNT],
}

/// What [`Stats::steps`] times: each SMTP command a session answers, and
/// each message's way through delivery. Section 3 of the paper names the
/// commands (`EHLO`/`HELO`, `MAIL`, `RCPT`, `DATA`, `QUIT`) and "Deliver":
/// open the message's file, read it, deliver it, delete the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// `EHLO` or `HELO`: its line read to its reply written.
    Helo,
    /// `MAIL`.
    Mail,
    /// `RCPT`.
    Rcpt,
    /// The `DATA` command line to its `354` (or refusal) written.
    DataCommand,
    /// From the `354` written to the end of the text read: the client
    /// sending the message (network I/O, as the paper's DATA includes).
    DataText,
    /// The end of the text to the `250` (or refusal) written: the durable
    /// enqueue (the paper's "create a file, write the message, push it to
    /// the queue").
    Data,
    /// `QUIT`.
    Quit,
    /// Every other command line (`RSET`, `NOOP`, `VRFY`, `HELP`, unknown
    /// or refused lines).
    Other,
    /// One message from the queue's `take` returning it to its
    /// acknowledgement (or retry) being durable: the paper's Deliver.
    Deliver,
    /// Deliver's first part: taken to a delivery worker starting on it.
    DeliverWait,
    /// Deliver's second part: the delivery itself (relay or Maildir).
    DeliverSend,
    /// Deliver's last part: the outcome to its acknowledgement durable.
    DeliverAck,
    /// One `take` call of the reader that returned messages (one grouped
    /// read; includes waiting for the first message when the queue was
    /// empty).
    Take,
}

impl Step {
    pub(crate) const COUNT: usize = 13;
}

// `Take` is the last step: the timers' array has one slot per step.
const _: () = assert!(Step::Take as usize + 1 == Step::COUNT);

/// A processing-time histogram (ns, 2 significant digits: each
/// percentile within 1%) with the exact sum beside it, for means.
pub(crate) struct Timer {
    hist: Mutex<Histogram<u64>>,
    sum_ns: AtomicU64,
}

impl Default for Timer {
    fn default() -> Timer {
        Timer { hist: Mutex::new(Histogram::new_with_bounds(1, 600_000_000_000, 2).unwrap()), sum_ns: AtomicU64::new(0) }
    }
}

impl Timer {
    fn record(&self, d: Duration) {
        let ns = (d.as_nanos() as u64).clamp(1, 600_000_000_000);
        let _ = self.hist.lock().unwrap().record(ns);
        self.sum_ns.fetch_add(d.as_nanos() as u64, Ordering::Relaxed);
    }

    fn timing(&self) -> Timing {
        let h = self.hist.lock().unwrap();
        let count = h.len();
        let total_ms = self.sum_ns.load(Ordering::Relaxed) as f64 / 1e6;
        let q = |p: f64| if count == 0 { 0.0 } else { h.value_at_quantile(p) as f64 / 1e6 };
        Timing {
            count,
            total_ms,
            mean_ms: if count == 0 { 0.0 } else { total_ms / count as f64 },
            p50_ms: q(0.5),
            p90_ms: q(0.9),
            p99_ms: q(0.99),
            max_ms: if count == 0 { 0.0 } else { h.max() as f64 / 1e6 },
        }
    }
}

/// One step's processing times since the server started.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Timing {
    /// How many were timed.
    pub count: u64,
    /// Their sum, ms (exact).
    pub total_ms: f64,
    /// `total_ms / count` (0 when none).
    pub mean_ms: f64,
    /// Median, ms (within 1%).
    pub p50_ms: f64,
    /// 90th percentile, ms.
    pub p90_ms: f64,
    /// 99th percentile, ms.
    pub p99_ms: f64,
    /// Longest, ms.
    pub max_ms: f64,
}

/// Processing time of each SMTP command and of delivery (see [`Step`] for
/// where each clock starts and stops). A command's time runs from its line
/// being read to its reply being written to the socket; replies to
/// pipelined commands (RFC 2920) are written together, so each of them
/// runs until the group is written.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CommandTimes {
    /// `EHLO` and `HELO`.
    pub helo: Timing,
    /// `MAIL`.
    pub mail: Timing,
    /// `RCPT`.
    pub rcpt: Timing,
    /// The `DATA` line to its `354`.
    pub data_command: Timing,
    /// The `354` written to the end of the text read (the client sending).
    pub data_text: Timing,
    /// The end of the text to the `250` written, the durable enqueue
    /// included (the paper's DATA, less the network part).
    pub data: Timing,
    /// `QUIT`.
    pub quit: Timing,
    /// Any other command line.
    pub other: Timing,
    /// A message taken from the queue to its acknowledgement durable (the
    /// paper's Deliver).
    pub deliver: Timing,
    /// Deliver's parts: taken to a worker starting on it ...
    pub deliver_wait: Timing,
    /// ... the delivery itself ...
    pub deliver_send: Timing,
    /// ... and the outcome to its acknowledgement (or retry) durable.
    pub deliver_ack: Timing,
    /// Each `take` call that returned messages (one grouped read).
    pub take: Timing,
    /// Messages those calls returned.
    pub taken: u64,
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
            steps: Default::default(),
            taken: AtomicU64::new(0),
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
    /// Processing time of each SMTP command and of delivery.
    pub commands: CommandTimes,
}

impl Stats {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Adds one processing time of `step`.
    pub(crate) fn time(&self, step: Step, d: Duration) {
        self.steps[step as usize].record(d);
    }

    fn command_times(&self) -> CommandTimes {
        let t = |s: Step| self.steps[s as usize].timing();
        CommandTimes {
            helo: t(Step::Helo),
            mail: t(Step::Mail),
            rcpt: t(Step::Rcpt),
            data_command: t(Step::DataCommand),
            data_text: t(Step::DataText),
            data: t(Step::Data),
            quit: t(Step::Quit),
            other: t(Step::Other),
            deliver: t(Step::Deliver),
            deliver_wait: t(Step::DeliverWait),
            deliver_send: t(Step::DeliverSend),
            deliver_ack: t(Step::DeliverAck),
            take: t(Step::Take),
            taken: self.taken.load(Ordering::Relaxed),
        }
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
            commands: self.command_times(),
        }
    }
}

//! The bridge from the sessions to FastQueue's group commit.
//!
//! Measured at 5,000 sessions (docs/mail.md, "Where the commit time
//! goes"): with one blocking thread per waiting message, the time inside
//! `enqueue` was many times the `fdatasync` it waits for: every durable
//! round woke its hundreds of blocked threads, and each had to get a core
//! and the queue's lock again before its session could answer. Here a
//! session hands its record to the appender thread through a channel; the
//! appender puts everything waiting into FastQueue's open round at once
//! (`enqueue_many_nowait`, no wait) and passes the round on to the waiter
//! thread, which waits for the rounds in order (`wait_durable`) and answers
//! each session through a oneshot. Two threads instead of one per message;
//! every arrival joins the open round at once, so FastQueue's pipelined
//! writer still overlaps two rounds. A session writes `250` only after its
//! answer, i.e. after its round is durable.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Instant;

use fastqueue::{FastQueue, RoundTicket};
use tokio::sync::oneshot;

/// Records put into one round by one call at most.
const MAX_GROUP: usize = 4096;

/// A committed record: its id (or why it failed), when the appender took
/// it, when its round was durable.
pub(crate) type Committed = (std::result::Result<u64, String>, Instant, Instant);

struct Job {
    record: Vec<u8>,
    done: oneshot::Sender<Committed>,
}

/// A group appended to a round, waiting for it to be durable.
struct Appended {
    round: std::result::Result<RoundTicket, String>,
    answers: Vec<(u64, oneshot::Sender<Committed>)>,
    failed: Vec<oneshot::Sender<Committed>>,
    began: Instant,
}

/// Hands records to the appender thread.
pub(crate) struct Committer {
    tx: mpsc::Sender<Job>,
}

impl Committer {
    /// Starts the appender and waiter threads for `queue`. They end when
    /// the committer is dropped.
    pub(crate) fn start(queue: Arc<FastQueue>) -> std::io::Result<Committer> {
        let (tx, rx) = mpsc::channel::<Job>();
        let (appended_tx, appended_rx) = mpsc::channel::<Appended>();
        let q = queue.clone();
        std::thread::Builder::new().name("iolab-mail-append".into()).spawn(move || append_loop(&rx, &q, &appended_tx))?;
        std::thread::Builder::new().name("iolab-mail-durable".into()).spawn(move || wait_loop(&appended_rx, &queue))?;
        Ok(Committer { tx })
    }

    /// Stores `record`; the answer comes once it is durable (`None` if the
    /// committer threads are gone).
    pub(crate) async fn commit(&self, record: Vec<u8>) -> Option<Committed> {
        let (done, answer) = oneshot::channel();
        self.tx.send(Job { record, done }).ok()?;
        answer.await.ok()
    }
}

fn append_loop(rx: &mpsc::Receiver<Job>, queue: &FastQueue, appended: &mpsc::Sender<Appended>) {
    while let Ok(first) = rx.recv() {
        let mut jobs = vec![first];
        while jobs.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(j) => jobs.push(j),
                Err(_) => break,
            }
        }
        let began = Instant::now();
        let records: Vec<&[u8]> = jobs.iter().map(|j| &j.record[..]).collect();
        let group = match queue.enqueue_many_nowait(&records) {
            Ok((ids, round)) => Appended {
                round: Ok(round),
                answers: ids.into_iter().zip(jobs.into_iter().map(|j| j.done)).collect(),
                failed: Vec::new(),
                began,
            },
            // None of the group was stored: each session answers 451.
            Err(e) => Appended {
                round: Err(e.to_string()),
                answers: Vec::new(),
                failed: jobs.into_iter().map(|j| j.done).collect(),
                began,
            },
        };
        if appended.send(group).is_err() {
            return;
        }
    }
}

fn wait_loop(rx: &mpsc::Receiver<Appended>, queue: &FastQueue) {
    while let Ok(group) = rx.recv() {
        let durable = group.round.and_then(|r| queue.wait_durable(r).map_err(|e| e.to_string()));
        let ended = Instant::now();
        match durable {
            Ok(()) => {
                for (id, done) in group.answers {
                    let _ = done.send((Ok(id), group.began, ended));
                }
            }
            Err(why) => {
                // Not known to be durable: no 250 for any of them.
                for done in group.answers.into_iter().map(|(_, d)| d).chain(group.failed) {
                    let _ = done.send((Err(why.clone()), group.began, ended));
                }
            }
        }
    }
}

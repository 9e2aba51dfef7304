//! Delivery, Postfix's queue manager and delivery agents in one: one
//! reader takes messages from the queue in groups (one grouped prefetch
//! per call), `delivery_concurrency` tasks deliver them (Maildir or SMTP
//! relay), and one acknowledger settles each attempt from its
//! per-recipient results (`status.rs`), as Postfix's qmgr does:
//!
//! - every recipient sent (or bounced): the message is finished and
//!   acknowledged; the plain all-sent case is acknowledged in groups (one
//!   durable write for many);
//! - recipients bounced (a 5xx, or out of attempts): a DSN goes to the
//!   sender (`dsn.rs`, RFC 3464; none for `<>`) and a record of them to the
//!   dead-letter queue, before the original is acknowledged;
//! - every recipient deferred (a 4xx, a broken connection, a timeout, a
//!   panic): the message goes to the retry queue with exponential backoff;
//! - some deferred, others sent or bounced: a new record for only the
//!   deferred recipients (same queue id, its attempt count, a not-before
//!   time for the backoff) is stored, then the original acknowledged, so
//!   the recipients already done are not sent again (issue 26, defect 5).
//!
//! Every result is logged as Postfix's delivery agents log it
//! (`to=<...>, relay=..., delay=..., dsn=..., status=... (reply)`).
//!
//! A semaphore of `max_in_flight` permits bounds the messages taken and not
//! yet acknowledged: after a crash, at most that many are delivered again
//! (docs/mail.md, "At least once").
//!
//! Each message is timed from the `take` that returned it to its
//! acknowledgement (or retry) being durable, in three parts (waiting for a
//! worker, the delivery, the settling): the paper's "Deliver" (section 3,
//! Figures 3 and 8).
//!
//! Each delivery runs in a task of its own, watched by its worker
//! ([`supervise`]): the worker renews the message's visibility deadline
//! while the delivery runs, cuts it after `delivery_timeout`, and survives
//! its panic; in every case the outcome reaches the acknowledger, which
//! gives the permit back.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::{mpsc, watch, Mutex, Semaphore};
use tokio::time::MissedTickBehavior;
use tracing::{info, warn};

use crate::config::Delivery;
use crate::deferlog;
use crate::dsn;
use crate::envelope::{now_ms, since_ms, Envelope};
use crate::maildir;
use crate::relay::{relay_name, Failure, Relay};
use crate::shared::Shared;
use crate::spool::Held;
use crate::stats::{Stats, Step};
use crate::status::{Attempt, RcptResult, Status};
use crate::store::Taken;

/// How long the reader waits for mail before it looks at the stop flag.
const TAKE_WAIT: Duration = Duration::from_millis(100);
/// Acknowledgements gathered into one queue call at most.
const ACK_GROUP: usize = 1024;

/// What became of one taken record.
enum Outcome {
    /// Delivery was tried: one result per recipient.
    Attempted(Attempt),
    /// No recipient got a result of its own (a panic, a timeout, a record
    /// that is not mail).
    Failed(Failure),
    /// A rewritten record whose backoff has not run out: back to the
    /// retry queue for this long, no attempt made.
    NotYet(Duration),
}

/// A taken record and the memory it holds until it is settled.
struct Work {
    taken: Taken,
    held: Held,
    /// When `take` returned it.
    taken_at: Instant,
}

struct Done {
    taken: Arc<Taken>,
    outcome: Outcome,
    _held: Held,
    /// When `take` returned it, a worker started on it, and the outcome
    /// was known.
    times: [Instant; 3],
}

/// Times one message's delivery, now settled: see [`Step::Deliver`].
fn time_delivery(stats: &Stats, [taken, started, finished]: [Instant; 3]) {
    let now = Instant::now();
    stats.time(Step::Deliver, now - taken);
    stats.time(Step::DeliverWait, started - taken);
    stats.time(Step::DeliverSend, finished - started);
    stats.time(Step::DeliverAck, now - finished);
}

/// Runs until `stop` is set, then finishes the messages already taken.
pub(crate) async fn run(sh: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let permits = Arc::new(Semaphore::new(sh.cfg.max_in_flight));
    let (work_tx, work_rx) = mpsc::channel::<Work>(sh.cfg.delivery_batch.max(sh.cfg.delivery_concurrency));
    let work_rx = Arc::new(Mutex::new(work_rx));
    let (done_tx, done_rx) = mpsc::unbounded_channel::<Done>();
    let acker = tokio::spawn(acknowledge(sh.clone(), done_rx, permits.clone()));
    let mut workers = Vec::new();
    for _ in 0..sh.cfg.delivery_concurrency {
        workers.push(tokio::spawn(worker(sh.clone(), work_rx.clone(), done_tx.clone())));
    }
    drop(done_tx);
    loop {
        if *stop.borrow() {
            break;
        }
        let first = tokio::select! {
            p = permits.clone().acquire_owned() => p.expect("semaphore is never closed"),
            _ = stop.changed() => continue,
        };
        first.forget();
        let extra = permits.available_permits().min(sh.cfg.delivery_batch - 1);
        if extra > 0 {
            permits.try_acquire_many(extra as u32).expect("permits were available").forget();
        }
        let want = 1 + extra;
        let queue = sh.queue.clone();
        let called = Instant::now();
        let got = match tokio::task::spawn_blocking(move || queue.take(want, TAKE_WAIT)).await {
            Ok(Ok(got)) => got,
            Ok(Err(e)) => {
                warn!(target: "qmgr", "delivery: queue: {e}");
                permits.add_permits(want);
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
            Err(_) => {
                permits.add_permits(want);
                continue;
            }
        };
        permits.add_permits(want - got.len());
        let taken_at = Instant::now();
        if !got.is_empty() {
            sh.stats.time(Step::Take, taken_at - called);
            Stats::add(&sh.stats.taken, got.len() as u64);
        }
        for taken in got {
            // Taken records count against the same memory budget as the
            // sessions' text (spool.rs): a batch of large messages waits
            // here instead of growing the process.
            let held = sh.memory.take(taken.record.len()).await;
            if work_tx.send(Work { taken, held, taken_at }).await.is_err() {
                break;
            }
        }
    }
    drop(work_tx);
    for w in workers {
        let _ = w.await;
    }
    let _ = acker.await;
}

/// A delivery task's connection to the next hop (relay delivery only).
fn new_relay(sh: &Shared) -> Option<Relay> {
    match &sh.cfg.delivery {
        Delivery::Relay(addr) => Some(Relay::new(*addr, sh.cfg.relay_timeout, sh.cfg.hostname.clone())),
        Delivery::Maildir(_) => None,
    }
}

/// One of `delivery_concurrency` workers: takes the next message, has it
/// delivered by [`supervise`], reports the outcome.
async fn worker(sh: Arc<Shared>, work: Arc<Mutex<mpsc::Receiver<Work>>>, done: mpsc::UnboundedSender<Done>) {
    let mut relay = new_relay(&sh);
    loop {
        let next = work.lock().await.recv().await;
        let Some(Work { taken, held, taken_at }) = next else { break };
        let started = Instant::now();
        let taken = Arc::new(taken);
        // A record rewritten for its deferred recipients waits for its
        // not-before time once (`Outcome::NotYet`); given back, the queue
        // holds that time, and a flush (`iolab mail queue flush`) may have
        // made it due sooner.
        let not_before = if taken.retried { 0 } else { Envelope::decode(&taken.record).map_or(0, |(env, _)| env.not_before_ms) };
        let outcome = if sh.operator.deleted(taken.id) {
            // Deleted by the operator after it was taken: not delivered;
            // `settle` drops it.
            Outcome::Failed(Failure::Temporary("deleted by the operator".into()))
        } else if not_before > now_ms() {
            Outcome::NotYet(Duration::from_millis(not_before - now_ms()))
        } else {
            let (outcome, back) = supervise(&sh, taken.clone(), relay.take()).await;
            // A task that panicked or was cut took its connection with it.
            relay = back.or_else(|| new_relay(&sh));
            outcome
        };
        let times = [taken_at, started, Instant::now()];
        if done.send(Done { taken, outcome, _held: held, times }).is_err() {
            break;
        }
    }
}

/// Runs one delivery in a task of its own and watches it:
/// - while it runs, renews the message's visibility deadline every third of
///   `visibility_timeout`, so that a slow but live delivery is not handed
///   to a second task (which would deliver a duplicate);
/// - after `delivery_timeout` it cuts the delivery (a hung next hop or
///   disk): a temporary failure, retried with backoff;
/// - if the task panics, the message is a temporary failure too (retried,
///   and after `max_attempts` bounced: a message that always panics its
///   deliverer cannot loop forever) and the worker goes on with a new
///   task and connection. Either way the outcome reaches the acknowledger,
///   which returns the message's in-flight permit.
async fn supervise(sh: &Arc<Shared>, taken: Arc<Taken>, relay: Option<Relay>) -> (Outcome, Option<Relay>) {
    let id = taken.id;
    let mut task = tokio::spawn(deliver_one(sh.clone(), taken, relay));
    let every = sh.cfg.visibility_timeout / 3;
    let mut renew = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    renew.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let cut = tokio::time::sleep(sh.cfg.delivery_timeout);
    tokio::pin!(cut);
    let mut renewing = true;
    loop {
        tokio::select! {
            r = &mut task => return match r {
                Ok(outcome) => outcome,
                Err(e) if e.is_panic() => {
                    Stats::add(&sh.stats.delivery_panics, 1);
                    let why = panic_text(e.into_panic());
                    warn!(target: "qmgr", "delivery of queue record {id} panicked ({why}); retrying it with a new task");
                    (Outcome::Failed(Failure::Temporary(format!("delivery task panicked: {why}"))), None)
                }
                Err(e) => (Outcome::Failed(Failure::Temporary(format!("delivery task: {e}"))), None),
            },
            _ = renew.tick(), if renewing => match sh.queue.renew(id) {
                Ok(true) => Stats::add(&sh.stats.visibility_renewals, 1),
                // The deadline passed (the runtime did not get to renew
                // in time) and another delivery has it: both may arrive.
                Ok(false) => renewing = false,
                Err(e) => warn!(target: "qmgr", "renew the visibility of queue record {id}: {e}"),
            },
            _ = &mut cut => {
                task.abort();
                Stats::add(&sh.stats.delivery_timeouts, 1);
                let limit = sh.cfg.delivery_timeout.as_secs_f64();
                return (Outcome::Failed(Failure::Temporary(format!("delivery took longer than {limit} s"))), None);
            }
        }
    }
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    match p.downcast::<String>() {
        Ok(s) => *s,
        Err(p) => p.downcast_ref::<&str>().map_or_else(|| "no message".into(), |s| s.to_string()),
    }
}

/// Delivers one message; gives back the relay connection for the next.
async fn deliver_one(sh: Arc<Shared>, taken: Arc<Taken>, mut relay: Option<Relay>) -> (Outcome, Option<Relay>) {
    #[cfg(test)]
    tests::maybe_panic(&taken.record);
    let outcome = match (&sh.cfg.delivery, relay.as_mut()) {
        (_, Some(r)) => match Envelope::decode(&taken.record) {
            Err(why) => Outcome::Failed(not_mail(taken.id, why)),
            Ok((env, message)) => Outcome::Attempted(r.send(&env, message).await),
        },
        (Delivery::Maildir(root), None) => {
            let root = root.clone();
            let (t, sh2) = (taken.clone(), sh.clone());
            let written = tokio::task::spawn_blocking(move || match Envelope::decode(&t.record) {
                Err(why) => Err(not_mail(t.id, why)),
                Ok((env, message)) => Ok(maildir::deliver(&root, &env, message, |d| sh2.cfg.is_local_domain(d))),
            });
            match written.await {
                Ok(Ok(o)) => {
                    Stats::add(&sh.stats.delivery_syncs, o.syncs);
                    Outcome::Attempted(o.attempt)
                }
                Ok(Err(f)) => Outcome::Failed(f),
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(e) => Outcome::Failed(Failure::Temporary(e.to_string())),
            }
        }
        (Delivery::Relay(_), None) => unreachable!("relay workers have a connection"),
    };
    (outcome, relay)
}

fn not_mail(id: u64, why: impl std::fmt::Display) -> Failure {
    Failure::Permanent(format!("queue record {id} is not a mail record: {why}"))
}

/// The queue id a record's log lines carry (the queue's numeric id for a
/// record written before queue ids existed).
fn queue_id_of(env: &Envelope, id: u64) -> String {
    if env.queue_id.is_empty() {
        format!("Q{id:X}")
    } else {
        env.queue_id.clone()
    }
}

/// Postfix's delivery line (its smtp(8) and local(8) write the same).
fn log_result(qid: &str, relay: &str, delay: Duration, r: &RcptResult) {
    info!(
        target: "delivery",
        "{qid}: to=<{}>, relay={relay}, delay={:.2}, dsn={}, status={} ({})",
        r.rcpt,
        delay.as_secs_f64(),
        r.dsn,
        r.status.word(),
        r.reason,
    );
}

async fn acknowledge(sh: Arc<Shared>, mut done: mpsc::UnboundedReceiver<Done>, permits: Arc<Semaphore>) {
    while let Some(first) = done.recv().await {
        let mut batch = vec![first];
        while batch.len() < ACK_GROUP {
            match done.try_recv() {
                Ok(d) => batch.push(d),
                Err(_) => break,
            }
        }
        let mut delivered = Vec::new();
        // Queue ids whose earlier attempts left a defer log (deferlog.rs).
        let mut deferred_before = Vec::new();
        for d in batch {
            let all_sent = matches!(&d.outcome, Outcome::Attempted(a) if a.results.iter().all(|r| r.status == Status::Sent));
            if all_sent {
                let Outcome::Attempted(a) = &d.outcome else { unreachable!() };
                let env = Envelope::decode(&d.taken.record).map(|(e, _)| e).unwrap_or_default();
                let qid = queue_id_of(&env, d.taken.id);
                let delay = since_ms(env.arrival_ms);
                for r in &a.results {
                    log_result(&qid, &a.relay, delay, r);
                }
                Stats::add(&sh.stats.rcpt_sent, a.results.len() as u64);
                if attempts_before(&d.taken, &env) > 0 {
                    deferred_before.push(qid.clone());
                }
                delivered.push((d.taken.id, qid, d.times));
                continue;
            }
            settle(&sh, d.taken, d.outcome).await;
            time_delivery(&sh.stats, d.times);
            permits.add_permits(1);
        }
        if delivered.is_empty() {
            continue;
        }
        let n = delivered.len();
        let ids: Vec<u64> = delivered.iter().map(|d| d.0).collect();
        let queue = sh.queue.clone();
        let queue_dir = sh.cfg.queue_dir.clone();
        let acked = tokio::task::spawn_blocking(move || {
            queue.ack(&ids)?;
            for qid in deferred_before {
                deferlog::remove(&queue_dir, &qid);
            }
            Ok::<(), crate::error::MailError>(())
        });
        match acked.await {
            Ok(Ok(())) => {
                Stats::add(&sh.stats.delivered, n as u64);
                for (_, qid, times) in &delivered {
                    time_delivery(&sh.stats, *times);
                    info!(target: "qmgr", "{qid}: removed");
                }
            }
            // Not acknowledged: delivered again after a restart.
            Ok(Err(e)) => warn!(target: "qmgr", "acknowledge: {e}"),
            Err(e) => warn!(target: "qmgr", "acknowledge: {e}"),
        }
        permits.add_permits(n);
    }
}

/// Attempts made on this record's message so far, this one not counted:
/// the queue's count of give-backs plus what a rewritten record carries
/// (less the one give-back of its not-before wait, `Outcome::NotYet`).
fn attempts_before(taken: &Taken, env: &Envelope) -> u32 {
    let early = u32::from(env.not_before_ms != 0).min(taken.attempts);
    env.attempts.saturating_add(taken.attempts - early)
}

/// Everything but the all-sent case: see the module documentation.
async fn settle(sh: &Arc<Shared>, taken: Arc<Taken>, outcome: Outcome) {
    let sh2 = sh.clone();
    let r = tokio::task::spawn_blocking(move || settle_blocking(&sh2, &taken, outcome)).await;
    match r {
        Ok(Ok(())) => {}
        Ok(Err(e)) => warn!(target: "qmgr", "retry/bounce: {e}"),
        Err(e) => warn!(target: "qmgr", "retry/bounce: {e}"),
    }
}

fn settle_blocking(sh: &Shared, taken: &Taken, outcome: Outcome) -> crate::error::Result<()> {
    // Held until the records below are stored and the original
    // acknowledged: an operator's delete comes before or after, not
    // between (operator.rs).
    let held = sh.operator.hold();
    if sh.operator.take_deleted(taken.id) {
        let qid = Envelope::decode(&taken.record).map_or_else(|_| format!("Q{:X}", taken.id), |(env, _)| queue_id_of(&env, taken.id));
        info!(target: "qmgr", "{qid}: deleted by the operator during delivery: results dropped");
        return Ok(());
    }
    if let Outcome::NotYet(wait) = outcome {
        return sh.queue.retry(taken.id, wait);
    }
    let relay = match &sh.cfg.delivery {
        Delivery::Relay(a) => relay_name(*a),
        Delivery::Maildir(_) => "local".to_string(),
    };
    let (env, message) = match Envelope::decode(&taken.record) {
        Ok((env, message)) => (env, message),
        Err(why) => {
            // Not mail: nobody to tell; kept for the operator.
            warn!(target: "qmgr", "queue record {}: not a mail record ({why}): moved to the dead-letter queue", taken.id);
            let env = Envelope { rcpts: vec!["unknown".into()], bounce: Some(why), ..Default::default() };
            sh.dead.enqueue(&env.encode(&taken.record))?;
            sh.queue.ack(&[taken.id])?;
            Stats::add(&sh.stats.dead, 1);
            return Ok(());
        }
    };
    let qid = queue_id_of(&env, taken.id);
    let attempts = attempts_before(taken, &env).saturating_add(1);
    let mut attempt = match outcome {
        Outcome::Attempted(a) => a,
        Outcome::Failed(Failure::Temporary(why)) => Attempt::all(&relay, &env.rcpts, "4.3.0", &why),
        Outcome::Failed(Failure::Permanent(why)) => Attempt::all(&relay, &env.rcpts, "5.3.0", &why),
        Outcome::NotYet(_) => unreachable!("handled above"),
    };
    if attempts >= sh.cfg.max_attempts {
        // Postfix's maximal_queue_lifetime, counted in attempts: what is
        // still deferred is returned to the sender, with its last reason.
        for r in attempt.results.iter_mut().filter(|r| r.status == Status::Deferred) {
            r.status = Status::Bounced;
            r.reason = format!("{} (gave up after {attempts} attempts)", r.reason);
        }
    }
    let delay = since_ms(env.arrival_ms);
    for r in &attempt.results {
        log_result(&qid, &attempt.relay, delay, r);
    }
    let count = |s: Status| attempt.with(s).count() as u64;
    let (sent, deferred, bounced) = (count(Status::Sent), count(Status::Deferred), count(Status::Bounced));
    Stats::add(&sh.stats.rcpt_sent, sent);
    Stats::add(&sh.stats.rcpt_bounced, bounced);
    if deferred > 0 && sent == 0 && bounced == 0 {
        sh.queue.retry(taken.id, sh.cfg.backoff(attempts))?;
        Stats::add(&sh.stats.retried, 1);
        log_deferrals(sh, &qid, &attempt);
        return Ok(());
    }
    // The original is finished: what must outlive it is stored first (a
    // crash in between repeats it, never loses it).
    if bounced > 0 {
        let failed: Vec<&RcptResult> = attempt.with(Status::Bounced).collect();
        let reasons: Vec<String> = failed.iter().map(|r| format!("<{}>: {} {}", r.rcpt, r.dsn, r.reason)).collect();
        let dead = Envelope {
            rcpts: failed.iter().map(|r| r.rcpt.clone()).collect(),
            bounce: Some(reasons.join("; ")),
            attempts,
            ..env.clone()
        };
        sh.dead.enqueue(&dead.encode(message))?;
        Stats::add(&sh.stats.dead, 1);
        let remote = match &sh.cfg.delivery {
            Delivery::Relay(a) => Some(format!("[{}]", a.ip())),
            Delivery::Maildir(_) => None,
        };
        match dsn::bounce(&sh.cfg.hostname, &env, message, &failed, remote.as_deref()) {
            Some((dsn_env, text)) => {
                sh.queue.enqueue(&dsn_env.encode(&text))?;
                Stats::add(&sh.stats.bounces, 1);
                info!(target: "bounce", "{qid}: sender non-delivery notification: {}", dsn_env.queue_id);
                info!(
                    target: "qmgr",
                    "{}: from=<>, size={}, nrcpt=1 (queue active)",
                    dsn_env.queue_id,
                    text.len()
                );
            }
            None => info!(target: "bounce", "{qid}: no notification: the sender is <>"),
        }
    }
    if deferred > 0 {
        let rest = Envelope {
            rcpts: attempt.with(Status::Deferred).map(|r| r.rcpt.clone()).collect(),
            attempts,
            not_before_ms: now_ms() + sh.cfg.backoff(attempts).as_millis() as u64,
            ..env.clone()
        };
        sh.queue.enqueue(&rest.encode(message))?;
        Stats::add(&sh.stats.retried, 1);
    }
    sh.queue.ack(&[taken.id])?;
    drop(held);
    if deferred == 0 {
        deferlog::remove(&sh.cfg.queue_dir, &qid);
        info!(target: "qmgr", "{qid}: removed");
    } else {
        log_deferrals(sh, &qid, &attempt);
    }
    Ok(())
}

/// Keeps this attempt's deferred recipients and reasons for the queue
/// listing (deferlog.rs).
fn log_deferrals(sh: &Shared, qid: &str, attempt: &Attempt) {
    let at_ms = now_ms();
    let entries: Vec<deferlog::Deferral> = attempt
        .with(Status::Deferred)
        .map(|r| deferlog::Deferral { rcpt: r.rcpt.clone(), dsn: r.dsn.clone(), reason: r.reason.clone(), at_ms })
        .collect();
    if let Err(e) = deferlog::write(&sh.cfg.queue_dir, qid, &entries) {
        warn!(target: "qmgr", "{qid}: defer log: {e}");
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;
    use std::sync::Mutex as StdMutex;
    use std::time::Instant;

    use crate::config::{QueueChoice, ServerConfig};
    use crate::loadgen::{self, LoadSpec, Outcome};
    use crate::server::MailServer;

    use super::*;

    /// (marker, panics left): a delivery whose record contains the marker
    /// panics while panics are left. Markers are per test.
    static PANICS: StdMutex<Vec<(Vec<u8>, usize)>> = StdMutex::new(Vec::new());

    pub(super) fn maybe_panic(record: &[u8]) {
        let hit = {
            let mut p = PANICS.lock().unwrap();
            let hit = p.iter_mut().find(|(m, left)| *left > 0 && record.windows(m.len()).any(|w| w == &m[..]));
            hit.map(|(_, left)| *left -= 1).is_some()
        };
        if hit {
            panic!("a panic injected by a test");
        }
    }

    /// A delivery task that panics is replaced and its permit returned:
    /// with one worker and one permit, nothing after the first panic would
    /// be delivered otherwise. The panicking message is retried.
    #[test]
    fn a_panicking_delivery_is_retried_and_its_worker_replaced() {
        for choice in [QueueChoice::Fast, QueueChoice::FileDir] {
            let tmp = tempfile::tempdir().unwrap();
            let tag = format!("panictest-{}", choice.name());
            PANICS.lock().unwrap().push((tag.clone().into_bytes(), 2));
            let mail = tmp.path().join("mail");
            let mut c = ServerConfig::new("127.0.0.1:0".parse().unwrap(), choice, tmp.path().join("q"), Delivery::Maildir(mail.clone()));
            c.segment_size = 16 << 20;
            c.max_message_bytes = 1 << 20;
            c.local_domains = vec!["iolab.test".into()];
            c.delivery_concurrency = 1;
            c.max_in_flight = 1;
            c.retry_base = Duration::from_millis(50);
            c.retry_max = Duration::from_millis(200);
            c.drain_timeout = Duration::from_secs(1);
            let s = MailServer::start(c).unwrap();
            let spec = LoadSpec {
                addr: s.local_addr(),
                sessions: 1,
                messages: 3,
                sizes: vec![(300, 1.0)],
                per_connection: 3,
                tag,
                pause: Duration::ZERO,
                timeout: Duration::from_secs(10),
            };
            let report = loadgen::run_blocking(spec, Arc::new(AtomicBool::new(false))).unwrap();
            assert!(report.sent.iter().all(|m| m.outcome == Outcome::Accepted), "{choice:?}");
            let until = Instant::now() + Duration::from_secs(10);
            while s.stats().delivered < 3 && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
            }
            let st = s.stats();
            assert_eq!((st.delivered, st.delivery_panics, st.retried, st.dead), (3, 2, 2, 0), "{choice:?}: {st:?}");
            let copies = std::fs::read_dir(mail.join("sink").join("new")).unwrap().count();
            assert_eq!(copies, 3, "{choice:?}");
            s.shutdown();
            s.join().unwrap();
        }
    }
}

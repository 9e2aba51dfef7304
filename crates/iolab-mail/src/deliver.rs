//! Delivery: one reader takes messages from the queue in groups (one
//! grouped prefetch per call), `delivery_concurrency` tasks deliver them
//! (Maildir or SMTP relay), and one acknowledger gathers the outcomes:
//! delivered messages are acknowledged together (one durable write for
//! many), temporary failures go to the retry queue with exponential
//! backoff, permanent failures and messages out of attempts go to the
//! dead-letter queue with a bounce record.
//!
//! A semaphore of `max_in_flight` permits bounds the messages taken and not
//! yet acknowledged: after a crash, at most that many are delivered again
//! (docs/mail.md, "At least once").
//!
//! Each delivery runs in a task of its own, watched by its worker
//! ([`supervise`]): the worker renews the message's visibility deadline
//! while the delivery runs, cuts it after `delivery_timeout`, and survives
//! its panic; in every case the outcome reaches the acknowledger, which
//! gives the permit back.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch, Mutex, Semaphore};
use tokio::time::MissedTickBehavior;

use crate::config::Delivery;
use crate::envelope::Envelope;
use crate::maildir::{self, MaildirError};
use crate::relay::{Failure, Relay};
use crate::shared::Shared;
use crate::stats::Stats;
use crate::store::Taken;

/// How long the reader waits for mail before it looks at the stop flag.
const TAKE_WAIT: Duration = Duration::from_millis(100);
/// Acknowledgements gathered into one queue call at most.
const ACK_GROUP: usize = 1024;

struct Done {
    taken: Arc<Taken>,
    result: Result<(), Failure>,
}

/// Runs until `stop` is set, then finishes the messages already taken.
pub(crate) async fn run(sh: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let permits = Arc::new(Semaphore::new(sh.cfg.max_in_flight));
    let (work_tx, work_rx) = mpsc::channel::<Taken>(sh.cfg.delivery_batch.max(sh.cfg.delivery_concurrency));
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
        let got = match tokio::task::spawn_blocking(move || queue.take(want, TAKE_WAIT)).await {
            Ok(Ok(got)) => got,
            Ok(Err(e)) => {
                eprintln!("iolab-mail: delivery: queue: {e}");
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
        for t in got {
            if work_tx.send(t).await.is_err() {
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
async fn worker(sh: Arc<Shared>, work: Arc<Mutex<mpsc::Receiver<Taken>>>, done: mpsc::UnboundedSender<Done>) {
    let mut relay = new_relay(&sh);
    loop {
        let next = work.lock().await.recv().await;
        let Some(taken) = next else { break };
        let taken = Arc::new(taken);
        let (result, back) = supervise(&sh, taken.clone(), relay.take()).await;
        // A task that panicked or was cut took its connection with it.
        relay = back.or_else(|| new_relay(&sh));
        if done.send(Done { taken, result }).is_err() {
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
///   and after `max_attempts` dead-lettered: a message that always panics
///   its deliverer cannot loop forever) and the worker goes on with a new
///   task and connection. Either way the outcome reaches the acknowledger,
///   which returns the message's in-flight permit.
async fn supervise(sh: &Arc<Shared>, taken: Arc<Taken>, relay: Option<Relay>) -> (Result<(), Failure>, Option<Relay>) {
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
                    eprintln!("iolab-mail: delivery of message {id} panicked ({why}); retrying it with a new task");
                    (Err(Failure::Temporary(format!("delivery task panicked: {why}"))), None)
                }
                Err(e) => (Err(Failure::Temporary(format!("delivery task: {e}"))), None),
            },
            _ = renew.tick(), if renewing => match sh.queue.renew(id) {
                Ok(true) => Stats::add(&sh.stats.visibility_renewals, 1),
                // The deadline passed (the runtime did not get to renew
                // in time) and another delivery has it: both may arrive.
                Ok(false) => renewing = false,
                Err(e) => eprintln!("iolab-mail: renew the visibility of message {id}: {e}"),
            },
            _ = &mut cut => {
                task.abort();
                Stats::add(&sh.stats.delivery_timeouts, 1);
                let limit = sh.cfg.delivery_timeout.as_secs_f64();
                return (Err(Failure::Temporary(format!("delivery took longer than {limit} s"))), None);
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
async fn deliver_one(sh: Arc<Shared>, taken: Arc<Taken>, mut relay: Option<Relay>) -> (Result<(), Failure>, Option<Relay>) {
    #[cfg(test)]
    tests::maybe_panic(&taken.record);
    let result = match (&sh.cfg.delivery, relay.as_mut()) {
        (_, Some(r)) => match Envelope::decode(&taken.record) {
            Err(why) => Err(not_mail(taken.id, why)),
            Ok((env, message)) => r.send(&env, message).await,
        },
        (Delivery::Maildir(root), None) => {
            let root = root.clone();
            let t = taken.clone();
            let written = tokio::task::spawn_blocking(move || match Envelope::decode(&t.record) {
                Err(why) => Err(MaildirError::Permanent(not_mail(t.id, why).reason().to_string())),
                Ok((env, message)) => maildir::deliver(&root, &env, message),
            });
            match written.await {
                Ok(Ok(o)) => {
                    Stats::add(&sh.stats.delivery_syncs, o.syncs);
                    Ok(())
                }
                Ok(Err(MaildirError::Permanent(s))) => Err(Failure::Permanent(s)),
                Ok(Err(MaildirError::Temporary(s))) => Err(Failure::Temporary(s)),
                Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
                Err(e) => Err(Failure::Temporary(e.to_string())),
            }
        }
        (Delivery::Relay(_), None) => unreachable!("relay workers have a connection"),
    };
    (result, relay)
}

fn not_mail(id: u64, why: impl std::fmt::Display) -> Failure {
    Failure::Permanent(format!("queue record {id} is not a mail record: {why}"))
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
        for d in batch {
            match d.result {
                Ok(()) => delivered.push(d.taken.id),
                Err(failure) => {
                    give_back(&sh, d.taken, failure).await;
                    permits.add_permits(1);
                }
            }
        }
        if delivered.is_empty() {
            continue;
        }
        let n = delivered.len();
        let queue = sh.queue.clone();
        match tokio::task::spawn_blocking(move || queue.ack(&delivered)).await {
            Ok(Ok(())) => Stats::add(&sh.stats.delivered, n as u64),
            // Not acknowledged: delivered again after a restart.
            Ok(Err(e)) => eprintln!("iolab-mail: acknowledge: {e}"),
            Err(e) => eprintln!("iolab-mail: acknowledge: {e}"),
        }
        permits.add_permits(n);
    }
}

/// A failed delivery: retry later, or dead-letter it with a bounce record.
async fn give_back(sh: &Arc<Shared>, taken: Arc<Taken>, failure: Failure) {
    let attempts = taken.attempts + 1;
    let give_up = matches!(failure, Failure::Permanent(_)) || attempts >= sh.cfg.max_attempts;
    let sh2 = sh.clone();
    let outcome = tokio::task::spawn_blocking(move || -> crate::error::Result<bool> {
        if !give_up {
            sh2.queue.retry(taken.id, sh2.cfg.backoff(attempts))?;
            return Ok(false);
        }
        let (mut env, message) = match Envelope::decode(&taken.record) {
            Ok((env, message)) => (env, message.to_vec()),
            Err(_) => (Envelope { rcpts: vec!["unknown".into()], ..Default::default() }, taken.record.to_vec()),
        };
        env.bounce = Some(failure.reason().to_string());
        env.attempts = attempts;
        // The bounce record is durable before the original is deleted: a
        // crash between the two leaves both (one duplicate dead letter).
        sh2.dead.enqueue(&env.encode(&message))?;
        sh2.queue.ack(&[taken.id])?;
        Ok(true)
    })
    .await;
    match outcome {
        Ok(Ok(true)) => Stats::add(&sh.stats.dead, 1),
        Ok(Ok(false)) => Stats::add(&sh.stats.retried, 1),
        Ok(Err(e)) => eprintln!("iolab-mail: retry/dead-letter: {e}"),
        Err(e) => eprintln!("iolab-mail: retry/dead-letter: {e}"),
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

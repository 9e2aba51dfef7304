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

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch, Mutex, Semaphore};

use crate::config::Delivery;
use crate::envelope::Envelope;
use crate::maildir::{self, MaildirError};
use crate::relay::{Failure, Relay};
use crate::server::Shared;
use crate::stats::Stats;
use crate::store::Taken;

/// How long the reader waits for mail before it looks at the stop flag.
const TAKE_WAIT: Duration = Duration::from_millis(100);
/// Acknowledgements gathered into one queue call at most.
const ACK_GROUP: usize = 1024;

struct Done {
    taken: Taken,
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

async fn worker(sh: Arc<Shared>, work: Arc<Mutex<mpsc::Receiver<Taken>>>, done: mpsc::UnboundedSender<Done>) {
    let mut relay = match &sh.cfg.delivery {
        Delivery::Relay(addr) => Some(Relay::new(*addr, sh.cfg.relay_timeout, sh.cfg.hostname.clone())),
        Delivery::Maildir(_) => None,
    };
    loop {
        let next = work.lock().await.recv().await;
        let Some(taken) = next else { break };
        let result = match Envelope::decode(&taken.record) {
            Err(why) => Err(Failure::Permanent(format!("queue record {} is not a mail record: {why}", taken.id))),
            Ok((env, message)) => match (&sh.cfg.delivery, relay.as_mut()) {
                (_, Some(r)) => r.send(&env, message).await,
                (Delivery::Maildir(root), None) => {
                    let (root, env, message) = (root.clone(), env.clone(), message.to_vec());
                    match tokio::task::spawn_blocking(move || maildir::deliver(&root, &env, &message)).await {
                        Ok(Ok(o)) => {
                            Stats::add(&sh.stats.delivery_syncs, o.syncs);
                            Ok(())
                        }
                        Ok(Err(MaildirError::Permanent(s))) => Err(Failure::Permanent(s)),
                        Ok(Err(MaildirError::Temporary(s))) => Err(Failure::Temporary(s)),
                        Err(e) => Err(Failure::Temporary(e.to_string())),
                    }
                }
                (Delivery::Relay(_), None) => unreachable!("relay workers have a connection"),
            },
        };
        if done.send(Done { taken, result }).is_err() {
            break;
        }
    }
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
async fn give_back(sh: &Arc<Shared>, taken: Taken, failure: Failure) {
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
            Err(_) => (Envelope { rcpts: vec!["unknown".into()], ..Default::default() }, taken.record.clone()),
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

//! Model checks of the queue's threads with `loom` (issue 26, defect 1).
//!
//! Built with `--features loom`, the crate's locks, condition variables
//! and threads are loom's (`src/sync.rs`), so these models run the real
//! writer, syncers, recycler and callers over the in-memory storage, and
//! loom explores their interleavings at every lock, unlock, wait and
//! notify, up to a bound on preemptions. An interleaving in which every
//! thread waits and none can wake another is reported as a deadlock: a
//! wake-up that nobody sends. Loom has no clock: a timed wait is a wait
//! that never times out, so passing here means that no wait relies on its
//! timer to be woken. (The batch timer is the one wait that must: the
//! models use `batch_delay: 0`, with which the writer never waits while
//! its round has work; a consumer's timeout and the recycler's poll of
//! pinned segments are treated as infinite.)
//!
//! Run: `cargo test -p fastqueue --profile wheel --features loom --test
//! loom` (`make test` does). `LOOM_MAX_PREEMPTIONS` overrides each model's
//! bound on preemptions; `-- --nocapture` prints how many interleavings
//! each model explored.
//!
//! Thread budget: loom models at most 5 threads in all. A queue in
//! `Durability::Sync` has 4 (writer, two syncers, recycler), so its
//! models have the test's own thread as the only caller, which keeps
//! rounds in flight with the `_nowait` calls; `Durability::Os` has 2
//! (writer, recycler), which leaves room for two more callers. Some models
//! run one syncer (`Config::loom_syncers`, a field that exists only in
//! this build): the pipeline is the same (two rounds written and not
//! synced), only two syncs never run at once; that leaves a thread for a
//! second caller, and explores in seconds what takes hours with two
//! (the second syncer, idle, multiplies the interleavings: 280,000 of the
//! lost wake-up's model were not enough at one preemption). Two syncs at
//! once are exercised by the models that keep two syncers, by the
//! integration tests (`wakeup.rs`) and by the crash proptests.
#![cfg(feature = "loom")]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use fastqueue::sim::{CrashMode, SimStorage};
use fastqueue::{Config, Durability, Error, FastQueue, QueueKind};

/// Explores every interleaving of `model` with at most `preemptions`
/// preemptions each (`LOOM_MAX_PREEMPTIONS` overrides it). Each model's
/// bound is the largest that keeps it within seconds on two cores: the
/// count grows about a hundredfold per preemption (e.g. 461 interleavings
/// of `nack_racing_close` at 1, 60,184 at 2; `close_with_rounds_in_flight`
/// 5,828 at 1, over a million at 2).
fn check(name: &str, preemptions: usize, model: impl Fn() + Sync + Send + 'static) {
    // This model's own count (the models run on parallel test threads).
    let runs = Arc::new(AtomicUsize::new(0));
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(preemptions);
    }
    // The queue's calls take many steps each.
    b.max_branches = 100_000;
    let counter = runs.clone();
    b.check(move || {
        counter.fetch_add(1, Ordering::Relaxed);
        model();
    });
    let n = runs.load(Ordering::Relaxed);
    println!("loom model {name}: {n} interleavings, preemption bound {:?}", b.preemption_bound);
}

fn config(durability: Durability, segment_size: u64) -> Config {
    Config {
        segment_size,
        batch_delay: Duration::ZERO,
        durability,
        spare_segments: 0,
        ..Config::default()
    }
}

fn open(sim: &SimStorage, cfg: Config) -> FastQueue {
    FastQueue::open_with(Arc::new(sim.clone()), cfg).unwrap()
}

/// A storage holding a closed queue with `payloads`, for a model to start
/// from: made once (in a run of its own, the queue's threads being loom's)
/// instead of in each interleaving, whose number grows with every step
/// the model takes. Each caller gets its own copy.
fn image(payloads: &'static [&'static [u8]], cfg: Config) -> SimStorage {
    static LAST: Mutex<Option<SimStorage>> = Mutex::new(None);
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(0);
    // One run: loom checks the limit before each run (hence 2).
    b.max_permutations = Some(2);
    b.checkpoint_interval = 1;
    b.check(move || {
        let sim = SimStorage::new();
        let q = open(&sim, cfg.clone());
        q.enqueue_many(payloads).unwrap();
        q.close().unwrap();
        *LAST.lock().unwrap() = Some(sim);
    });
    let made = LAST.lock().unwrap().take().unwrap();
    made
}

/// A copy of `img` (everything in it is durable: its queue was closed).
fn copy(img: &SimStorage) -> SimStorage {
    img.crash_image(CrashMode::KeepUnsynced)
}

/// Issue 26's lost wake-up (one syncer; with two, loom finds the same
/// deadlock in the same first interleaving, but cannot finish the bound):
/// a nack in the same round as two other records (the writer then expects
/// three callers), whose completion adds the old copy's delete flag, then
/// a lone nack. Before the fix loom found the deadlock in its first
/// interleaving: the writer asleep in `work_cv` with the flag and the
/// record pending, the lone nack in `done_cv`, the syncers and the
/// recycler idle. The preemptions explored add the other orders: the
/// round of three in flight while the nack's own closes, and so on.
#[test]
fn lone_nack_after_a_round_of_three() {
    let cfg = Config { loom_syncers: 1, ..config(Durability::Sync, 16 << 10) };
    let img = image(&[b"a"], cfg.clone());
    check("lone_nack_after_a_round_of_three", 1, move || {
        let sim = copy(&img);
        let q = open(&sim, cfg.clone());
        let a = q.dequeue_batch(1, None).unwrap()[0].id;
        let (_, busy) = q.enqueue_many_nowait(&[b"x", b"y"]).unwrap();
        assert_eq!(q.nack(a, Duration::ZERO).unwrap(), QueueKind::Retry);
        q.wait_durable(busy).unwrap();
        assert_eq!(q.dequeue_batch(1, None).unwrap()[0].id, a);
        assert_eq!(q.nack(a, Duration::ZERO).unwrap(), QueueKind::Retry);
        q.close().unwrap();
    });
}

/// Rounds left in flight at a close (acknowledgements not waited for),
/// then a wait for them after the close: the close finishes them, the
/// wait returns `Ok`, and the recycler (woken when the last round
/// completes) lets the close end.
#[test]
fn close_with_rounds_in_flight() {
    check("close_with_rounds_in_flight", 1, || {
        let sim = SimStorage::new();
        let q = open(&sim, config(Durability::Sync, 16 << 10));
        q.enqueue(b"a").unwrap();
        let a = q.dequeue_batch(1, None).unwrap()[0].id;
        let (_, t1) = q.enqueue_many_nowait(&[b"b"]).unwrap();
        let t2 = q.ack_many_nowait(&[a]).unwrap();
        q.close().unwrap();
        q.wait_durable(t1).unwrap();
        q.wait_durable(t2).unwrap();
        assert!(matches!(q.enqueue(b"late"), Err(Error::Closed)));
    });
}

/// A nack racing a close (one syncer, which leaves room for the nacking
/// thread): the nack returns `Retry` or `Closed`, the close returns. When
/// the nack's copy lands in the close's last round, its completion adds
/// the old copy's delete flag, which the writer writes in one more round
/// after the close's barrier and leaves to the syncer as it ends; the
/// recycler, waiting for the pipeline to drain, used to be woken only by
/// its 50 ms poll (loom, which never times a wait out, found it at two
/// preemptions: the close waiting to join the recycler, forever).
#[test]
fn nack_racing_close() {
    let cfg = Config { loom_syncers: 1, ..config(Durability::Sync, 16 << 10) };
    let img = image(&[b"a"], cfg.clone());
    check("nack_racing_close", 2, move || {
        let sim = copy(&img);
        let q = Arc::new(open(&sim, cfg.clone()));
        let a = q.dequeue_batch(1, None).unwrap()[0].id;
        let q1 = q.clone();
        let nacker = loom::thread::spawn(move || q1.nack(a, Duration::ZERO));
        q.close().unwrap();
        let r = nacker.join().unwrap();
        assert!(matches!(r, Ok(QueueKind::Retry) | Err(Error::Closed)), "{r:?}");
        let report = fastqueue::check_storage(&sim).unwrap();
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        assert_eq!(report.live_messages, 1);
    });
}

/// Segments filled, acknowledged and recycled while rounds are in flight:
/// the barrier rounds that open a segment, the recycler's renames and
/// manifest, and its exit at the close.
#[test]
fn segments_recycled_while_rounds_overlap() {
    check("segments_recycled_while_rounds_overlap", 1, || {
        let sim = SimStorage::new();
        // Two 5 KiB records fill a 16 KiB segment: the third opens the next.
        let q = open(&sim, config(Durability::Sync, 16 << 10));
        let big = [7u8; 5 << 10];
        q.enqueue_many(&[&big[..], &big[..]]).unwrap();
        let ids: Vec<u64> = q.dequeue_batch(2, None).unwrap().iter().map(|m| m.id).collect();
        let t = q.ack_many_nowait(&ids).unwrap();
        q.enqueue_many(&[&big[..], &big[..]]).unwrap();
        q.wait_durable(t).unwrap();
        q.close().unwrap();
        let report = fastqueue::check_storage(&sim).unwrap();
        assert!(report.problems.is_empty(), "{:?}", report.problems);
        assert_eq!(report.live_messages, 2);
    });
}

/// Two callers and a close, all at once (`Durability::Os`: the writer
/// completes rounds itself, which leaves room for two caller threads): a
/// producer, a consumer waiting for its message without a time limit (to
/// loom every timeout is infinite), and the test's thread closing the
/// queue. Every call returns, with its result or `Closed`; a message whose
/// enqueue returned `Ok` is stored.
#[test]
fn producer_consumer_and_close_at_once() {
    check("producer_consumer_and_close_at_once", 1, || {
        let sim = SimStorage::new();
        let q = Arc::new(open(&sim, config(Durability::Os, 16 << 10)));
        let q1 = q.clone();
        let producer = loom::thread::spawn(move || q1.enqueue(b"m"));
        let q2 = q.clone();
        let consumer = loom::thread::spawn(move || {
            let got = q2.dequeue_batch(1, Some(Duration::from_secs(3600)))?;
            if let Some(m) = got.first() {
                q2.ack(m.id)?;
            }
            Ok::<_, Error>(got.len())
        });
        q.close().unwrap();
        let stored = producer.join().unwrap();
        let taken = consumer.join().unwrap();
        assert!(matches!(stored, Ok(_) | Err(Error::Closed)), "{stored:?}");
        assert!(matches!(taken, Ok(_) | Err(Error::Closed)), "{taken:?}");
        let live = fastqueue::check_storage(&sim).unwrap().live_messages;
        let acked = matches!(taken, Ok(1));
        assert_eq!(live, u64::from(stored.is_ok() && !acked), "{stored:?} {taken:?}");
    });
}

/// Two callers giving messages back and acknowledging while the test's
/// thread enqueues (`Durability::Os`), then a close: nack's copy, the
/// delete flag its completion adds, and the waiters of every round.
#[test]
fn nack_ack_and_enqueue_at_once() {
    check("nack_ack_and_enqueue_at_once", 1, || {
        let sim = SimStorage::new();
        let q = Arc::new(open(&sim, config(Durability::Os, 16 << 10)));
        q.enqueue_many(&[b"a", b"b"]).unwrap();
        let got = q.dequeue_batch(2, None).unwrap();
        let (a, b) = (got[0].id, got[1].id);
        let q1 = q.clone();
        let nacker = loom::thread::spawn(move || q1.nack(a, Duration::ZERO).unwrap());
        let q2 = q.clone();
        let acker = loom::thread::spawn(move || q2.ack(b).unwrap());
        q.enqueue(b"c").unwrap();
        assert_eq!(nacker.join().unwrap(), QueueKind::Retry);
        acker.join().unwrap();
        q.close().unwrap();
        assert_eq!(fastqueue::check_storage(&sim).unwrap().live_messages, 2);
    });
}

//! Issue 26, defect 1: waits that never end. A lone `nack` (or enqueue)
//! with nothing else going on used to block forever in its round: the
//! completion of an earlier round had added the old copy's delete flag
//! without waking the writer, which slept with no timeout, and the lone
//! caller's own record woke nobody either (the writer expected as many
//! callers as a busy round had). Also every way a wait can lose the
//! thread it waits for: a close while rounds are in flight, a thread of
//! the queue that dies, a consumer waiting when the queue closes.
//!
//! The sync gate of the crash simulator (`SimStorage::hold_syncs`) keeps
//! rounds in flight exactly as long as a test wants, so the states are
//! made on purpose rather than by timing. `HANG` only guards against a
//! hang (a failing test must end): no test measures a duration.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use fastqueue::sim::SimStorage;
use fastqueue::{Config, Error, FastQueue, QueueKind};

/// Long enough that only a hang exceeds it.
const HANG: Duration = Duration::from_secs(20);

fn open(sim: &SimStorage) -> Arc<FastQueue> {
    let cfg = Config { segment_size: 1 << 20, batch_delay: Duration::ZERO, spare_segments: 0, ..Config::default() };
    Arc::new(FastQueue::open_with(Arc::new(sim.clone()), cfg).unwrap())
}

/// Runs `f` on a thread of its own and returns what it returned; panics,
/// naming `what`, if it has not returned after [`HANG`].
fn returns<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(HANG) {
        Ok(v) => v,
        Err(_) => panic!("{what} never returned: a wait that nobody ends"),
    }
}

/// The state the issue found, made on purpose: a round of 8 callers (one
/// `enqueue_many` of 8) is still syncing when a `nack`'s round closes, so
/// the writer expects 9 callers from then on; the `nack`'s round then adds
/// the delete flag of the message's old copy, with the writer asleep.
/// Returns the queue, the nacked message's id (due again at once) and a
/// second delivered id.
fn writer_expecting_many(sim: &SimStorage) -> (Arc<FastQueue>, u64, u64) {
    let q = open(sim);
    q.enqueue_many(&[b"a", b"b"]).unwrap();
    let got = q.dequeue_batch(2, None).unwrap();
    let (a, b) = (got[0].id, got[1].id);
    sim.hold_syncs(true);
    let (_, busy) = q.enqueue_many_nowait(&[&b"busy"[..]; 8]).unwrap();
    assert!(sim.wait_for_held_syncs(1, HANG), "the busy round never reached its sync");
    let q2 = q.clone();
    let nack = std::thread::spawn(move || q2.nack(a, Duration::ZERO));
    assert!(sim.wait_for_held_syncs(2, HANG), "the nack's round never reached its sync");
    // Lets the writer go back to sleep before the rounds complete (the
    // state to reproduce; without the pause the bug may hide, the test
    // cannot fail for it).
    std::thread::sleep(Duration::from_millis(50));
    sim.hold_syncs(false);
    assert_eq!(nack.join().unwrap().unwrap(), QueueKind::Retry);
    q.wait_durable(busy).unwrap();
    // The completions are over: the writer sleeps with the flag pending.
    std::thread::sleep(Duration::from_millis(50));
    (q, a, b)
}

/// The defect: the next `nack` blocked until an unrelated enqueue.
#[test]
fn r26_a_lone_nack_after_a_busy_round_completes() {
    let sim = SimStorage::new();
    let (q, a, _) = writer_expecting_many(&sim);
    let again = q.dequeue_batch(1, None).unwrap();
    assert_eq!(again[0].id, a);
    let q2 = q.clone();
    assert_eq!(returns("a lone nack", move || q2.nack(a, Duration::ZERO)).unwrap(), QueueKind::Retry);
    q.close().unwrap();
}

/// The same state, then a lone enqueue: it woke nobody either.
#[test]
fn r26_a_lone_enqueue_after_a_busy_round_completes() {
    let sim = SimStorage::new();
    let (q, _, _) = writer_expecting_many(&sim);
    let q2 = q.clone();
    returns("a lone enqueue", move || q2.enqueue(b"lone")).unwrap();
    q.close().unwrap();
}

/// The same state, then a lone ack and a lone flush.
#[test]
fn r26_a_lone_ack_and_flush_after_a_busy_round_completes() {
    let sim = SimStorage::new();
    let (q, _, b) = writer_expecting_many(&sim);
    let q2 = q.clone();
    returns("a lone ack", move || q2.ack(b)).unwrap();
    let q2 = q.clone();
    returns("a lone flush", move || q2.flush()).unwrap();
    q.close().unwrap();
}

/// A close while rounds are in flight (held at their sync) waits for them
/// and returns once they are done; so does a caller waiting for one of
/// them, and its messages are durable.
#[test]
fn close_while_rounds_are_in_flight() {
    let sim = SimStorage::new();
    let q = open(&sim);
    sim.hold_syncs(true);
    let (ids, round) = q.enqueue_many_nowait(&[b"one", b"two"]).unwrap();
    assert!(sim.wait_for_held_syncs(1, HANG));
    let q2 = q.clone();
    let waiter = std::thread::spawn(move || q2.wait_durable(round));
    let q2 = q.clone();
    let closer = std::thread::spawn(move || q2.close());
    // Neither can return before the sync: both wait for the round.
    std::thread::sleep(Duration::from_millis(20));
    sim.hold_syncs(false);
    returns("the waiter of a round in flight at close", move || waiter.join().unwrap()).unwrap();
    returns("a close with rounds in flight", move || closer.join().unwrap()).unwrap();
    assert!(matches!(q.enqueue(b"late"), Err(Error::Closed)));
    drop(q);
    let q = open(&sim);
    let got: Vec<u64> = q.dequeue_batch(10, None).unwrap().iter().map(|m| m.id).collect();
    assert_eq!(got, ids);
}

/// Two closes at once: the second returns only once the queue is closed
/// (it now waits for the first instead of repeating its last steps).
#[test]
fn a_second_close_waits_for_the_first() {
    let sim = SimStorage::new();
    let q = open(&sim);
    sim.hold_syncs(true);
    q.enqueue_many_nowait(&[b"x"]).unwrap();
    assert!(sim.wait_for_held_syncs(1, HANG));
    let q2 = q.clone();
    let first = std::thread::spawn(move || q2.close());
    std::thread::sleep(Duration::from_millis(20));
    let q2 = q.clone();
    let (tx, rx) = mpsc::channel();
    let second = std::thread::spawn(move || {
        let r = q2.close();
        tx.send(()).unwrap();
        r
    });
    // Still held: the second close must not be done yet.
    std::thread::sleep(Duration::from_millis(20));
    assert!(rx.try_recv().is_err(), "the second close returned while the first was still closing");
    sim.hold_syncs(false);
    returns("the first close", move || first.join().unwrap()).unwrap();
    returns("the second close", move || second.join().unwrap()).unwrap();
}

/// A consumer waiting for messages when the queue is closed by another
/// thread gets `Closed` at once, whatever its timeout.
#[test]
fn a_waiting_consumer_is_released_by_close() {
    let sim = SimStorage::new();
    let q = open(&sim);
    let q2 = q.clone();
    let consumer = std::thread::spawn(move || q2.dequeue_batch(10, Some(Duration::from_secs(3600))));
    std::thread::sleep(Duration::from_millis(20));
    q.close().unwrap();
    let got = returns("a consumer waiting at close", move || consumer.join().unwrap());
    assert!(matches!(got, Err(Error::Closed)), "{got:?}");
}

/// A syncer thread that dies (a panic in `fdatasync`) stops the queue: the
/// producer waiting for the round gets an error naming it instead of
/// waiting forever, later calls fail at once, and close and drop return.
#[test]
fn a_dead_syncer_fails_its_waiters() {
    let sim = SimStorage::new();
    let q = open(&sim);
    sim.panic_at_next_sync();
    let q2 = q.clone();
    let got = returns("an enqueue whose syncer died", move || q2.enqueue(b"x"));
    let e = got.unwrap_err();
    assert!(matches!(e, Error::Failed { .. }) && e.to_string().contains("panicked"), "{e}");
    assert!(matches!(q.enqueue(b"y"), Err(Error::Failed { .. })));
    let q2 = q.clone();
    assert!(returns("close after a thread died", move || q2.close()).is_err());
    returns("drop after a thread died", move || drop(q));
}

/// The same when the writer thread dies: a round that opens a segment is
/// written and synced by the writer itself.
#[test]
fn a_dead_writer_fails_its_waiters() {
    let sim = SimStorage::new();
    let q = open(&sim);
    let big = vec![7u8; 600 << 10];
    q.enqueue(&big).unwrap();
    sim.panic_at_next_sync();
    let q2 = q.clone();
    let e = returns("an enqueue whose writer died", move || q2.enqueue(&vec![8u8; 600 << 10])).unwrap_err();
    assert!(e.to_string().contains("writer thread panicked"), "{e}");
    let q2 = q.clone();
    let consumer = returns("a dequeue after the writer died", move || q2.dequeue_batch(1, Some(Duration::from_secs(3600))));
    assert!(consumer.is_err());
    returns("drop after the writer died", move || drop(q));
    // Nothing stored is lost: the message enqueued before is there.
    let q = open(&sim);
    assert_eq!(q.dequeue_batch(10, None).unwrap()[0].payload, big);
}

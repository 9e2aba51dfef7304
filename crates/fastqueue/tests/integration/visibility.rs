//! Visibility timeouts, on a clock moved by hand; and which ids `ack` and
//! `nack` accept (the same ones).

use std::sync::Arc;
use std::time::Duration;

use fastqueue::sim::{CrashMode, SimStorage};
use fastqueue::{Config, Error, FastQueue, ManualClock, QueueKind};

use super::{drain, small_config};

const SEC: Duration = Duration::from_secs(1);

fn open(storage: &SimStorage, cfg: Config) -> (FastQueue, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::default());
    let q = FastQueue::open_with_clock(Arc::new(storage.clone()), cfg, clock.clone()).unwrap();
    (q, clock)
}

#[test]
fn an_unacknowledged_delivery_comes_back_after_its_timeout() {
    let storage = SimStorage::new();
    let cfg = Config { visibility_timeout: Some(30 * SEC), ..small_config() };
    let (q, clock) = open(&storage, cfg);
    let a = q.enqueue(b"a").unwrap();
    let b = q.enqueue(b"b").unwrap();
    let first = q.dequeue().unwrap().unwrap();
    assert_eq!((first.id, first.attempts), (a, 0));
    clock.advance(29 * SEC);
    // Not yet: the next one is b, then nothing.
    assert_eq!(q.dequeue().unwrap().unwrap().id, b);
    q.ack(b).unwrap();
    assert!(q.dequeue().unwrap().is_none());
    clock.advance(2 * SEC);
    // a's delivery timed out: delivered again, the timeout counted.
    let again = q.dequeue().unwrap().unwrap();
    assert_eq!((again.id, again.payload.as_slice(), again.attempts), (a, &b"a"[..], 1));
    let s = q.stats();
    assert_eq!((s.expired, s.in_flight, s.ready), (1, 1, 0));
    q.ack(a).unwrap();
    assert!(q.is_empty());
}

#[test]
fn a_late_ack_still_counts_and_extend_moves_the_deadline() {
    let storage = SimStorage::new();
    let (q, clock) = open(&storage, small_config());
    let a = q.enqueue(b"a").unwrap();
    let m = q.dequeue_batch_with_visibility(1, None, Some(10 * SEC)).unwrap();
    assert_eq!(m[0].id, a);
    clock.advance(8 * SEC);
    q.extend_visibility(a, 10 * SEC).unwrap();
    clock.advance(8 * SEC);
    assert!(q.dequeue().unwrap().is_none(), "extended deadline not honoured");
    clock.advance(3 * SEC);
    // Timed out, back in the queue; the slow consumer's ack still counts,
    // so the message is not delivered a second time.
    assert!(matches!(q.extend_visibility(a, SEC), Err(Error::NotInFlight { .. })));
    assert_eq!(q.stats().in_flight, 1, "expiry happens at the next dequeue");
    q.ack(a).unwrap();
    assert!(q.dequeue().unwrap().is_none());
    assert!(q.is_empty());
    // Without a timeout (the default) nothing comes back.
    let b = q.enqueue(b"b").unwrap();
    assert_eq!(q.dequeue().unwrap().unwrap().id, b);
    clock.advance(Duration::from_secs(1_000_000));
    assert!(q.dequeue().unwrap().is_none());
}

#[test]
fn repeated_timeouts_dead_letter_the_message_durably() {
    let storage = SimStorage::new();
    let cfg = Config { visibility_timeout: Some(SEC), max_attempts: 3, ..small_config() };
    let (q, clock) = open(&storage, cfg.clone());
    let id = q.enqueue(b"poison").unwrap();
    for attempt in 0..3 {
        let m = q.dequeue().unwrap().unwrap();
        assert_eq!((m.id, m.attempts, m.kind), (id, attempt, QueueKind::Main));
        clock.advance(2 * SEC);
    }
    // The third timeout reaches max_attempts: dead-lettered, not redelivered.
    assert!(q.dequeue().unwrap().is_none());
    q.flush().unwrap();
    let dead = q.dequeue_dead(10).unwrap();
    assert_eq!((dead.len(), dead[0].id, dead[0].attempts, dead[0].kind), (1, id, 3, QueueKind::Dead));
    // A dead letter whose delivery times out goes back to the dead queue.
    clock.advance(2 * SEC);
    assert!(q.dequeue().unwrap().is_none());
    assert_eq!(q.dequeue_dead(10).unwrap()[0].id, id);
    drop(q);
    // The move is durable: after a restart it is still a dead letter.
    let (q, _) = open(&storage.crash_image(CrashMode::DropUnsynced), cfg);
    assert!(q.dequeue().unwrap().is_none());
    let dead = q.dequeue_dead(10).unwrap();
    assert_eq!((dead[0].id, dead[0].attempts), (id, 3));
}

#[test]
fn a_waiting_consumer_wakes_when_a_delivery_expires() {
    // The real clock: a consumer blocked in dequeue_batch gets the message
    // whose 50 ms visibility timeout runs out while it waits.
    let dir = tempfile::tempdir().unwrap();
    let q = FastQueue::open(dir.path(), small_config()).unwrap();
    let id = q.enqueue(b"x").unwrap();
    let first = q.dequeue_batch_with_visibility(1, None, Some(Duration::from_millis(50))).unwrap();
    assert_eq!(first[0].id, id);
    let t0 = std::time::Instant::now();
    let again = q.dequeue_batch(1, Some(Duration::from_secs(10))).unwrap();
    assert_eq!(again[0].id, id);
    assert!(t0.elapsed() < Duration::from_secs(5));
    q.ack(id).unwrap();
}

#[test]
fn ack_and_nack_accept_and_refuse_the_same_ids() {
    let storage = SimStorage::new();
    let (q, _clock) = open(&storage, small_config());
    let waiting = q.enqueue(b"never dequeued").unwrap();
    // Never dequeued: both refuse it, and nothing changes.
    assert!(matches!(q.ack(waiting), Err(Error::NotDelivered { id }) if id == waiting));
    assert!(matches!(q.nack(waiting, Duration::ZERO), Err(Error::NotDelivered { id }) if id == waiting));
    assert_eq!(q.stats().ready, 1);
    // Unknown: both refuse.
    assert!(matches!(q.ack(9999), Err(Error::UnknownId { .. })));
    assert!(matches!(q.nack(9999, Duration::ZERO), Err(Error::UnknownId { .. })));
    // Delivered: both accept. After a nack the retry copy must be
    // dequeued again before it can be acknowledged.
    let m = q.dequeue().unwrap().unwrap();
    assert_eq!(q.nack(m.id, Duration::ZERO).unwrap(), QueueKind::Retry);
    assert!(matches!(q.ack(m.id), Err(Error::NotDelivered { .. })));
    let m = q.dequeue().unwrap().unwrap();
    assert_eq!((m.id, m.attempts), (waiting, 1));
    q.ack(m.id).unwrap();
    assert!(matches!(q.ack(m.id), Err(Error::UnknownId { .. })));
    assert!(matches!(q.nack(m.id, Duration::ZERO), Err(Error::UnknownId { .. })));
    // A batch with one refused id changes nothing.
    let c = q.enqueue(b"c").unwrap();
    let d = q.enqueue(b"d").unwrap();
    assert_eq!(q.dequeue().unwrap().unwrap().id, c);
    assert!(matches!(q.ack_many(&[c, d]), Err(Error::NotDelivered { id }) if id == d));
    assert_eq!(q.stats().in_flight, 1);
    // After a reopen nothing is delivered yet: both refuse.
    drop(q);
    let (q, _) = open(&storage.crash_image(CrashMode::KeepUnsynced), small_config());
    assert!(matches!(q.ack(c), Err(Error::NotDelivered { .. })));
    assert!(matches!(q.nack(c, Duration::ZERO), Err(Error::NotDelivered { .. })));
    assert_eq!(drain(&q).len(), 2);
}

#[test]
fn ack_many_of_nothing_returns_at_once() {
    // It used to wait forever for a round that had nothing to write.
    let (q, _) = open(&SimStorage::new(), small_config());
    q.ack_many(&[]).unwrap();
    q.enqueue(b"x").unwrap();
    q.ack_many(&[]).unwrap();
    assert_eq!(q.len(), 1);
}

//! FastQueue as a library (issue 26, "What a postmaster expects"):
//! iteration, browse without consuming, delete by id, dead letters back
//! for another try, and a second open in the same process named as such;
//! browse, delete and requeue while producers and consumers run.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use fastqueue::{Config, Error, FastQueue, MessageState, QueueKind};

fn cfg() -> Config {
    Config { segment_size: 1 << 20, batch_delay: Duration::ZERO, spare_segments: 0, max_attempts: 2, ..Config::default() }
}

fn state_of(q: &FastQueue, id: u64) -> Option<MessageState> {
    q.browse().unwrap().iter().find(|m| m.id == id).map(|m| m.state)
}

#[test]
fn browse_lists_every_state_without_taking_any() {
    let tmp = tempfile::tempdir().unwrap();
    let q = FastQueue::open(tmp.path(), cfg()).unwrap();
    let ids = q.enqueue_many(&[b"flight", b"delayed", b"dead!", b"ready"]).unwrap();
    assert_eq!(q.dequeue_batch(3, None).unwrap().len(), 3);
    q.nack(ids[1], Duration::from_secs(3600)).unwrap();
    q.nack(ids[2], Duration::ZERO).unwrap();
    // The due retry comes first; its second failure makes it dead.
    assert_eq!(q.dequeue_batch(1, None).unwrap()[0].id, ids[2]);
    assert_eq!(q.nack(ids[2], Duration::ZERO).unwrap(), QueueKind::Dead);
    let list = q.browse().unwrap();
    assert_eq!(list.iter().map(|m| m.id).collect::<Vec<_>>(), ids);
    let states: Vec<MessageState> = list.iter().map(|m| m.state).collect();
    assert_eq!(states, [MessageState::InFlight, MessageState::Delayed, MessageState::Dead, MessageState::Ready]);
    assert_eq!((list[2].attempts, list[2].kind, list[2].size), (2, QueueKind::Dead, 5));
    assert_eq!((list[1].attempts, list[1].kind), (1, QueueKind::Retry));
    // Browsing took nothing: the ready one is still there to take.
    assert_eq!(q.browse().unwrap(), list);
    assert_eq!(q.dequeue_batch(10, None).unwrap().iter().map(|m| m.id).collect::<Vec<_>>(), vec![ids[3]]);
    assert_eq!(state_of(&q, ids[3]), Some(MessageState::InFlight));
}

#[test]
fn delete_by_id_in_any_state_is_durable() {
    let tmp = tempfile::tempdir().unwrap();
    let ids = {
        let q = FastQueue::open(tmp.path(), cfg()).unwrap();
        let ids = q.enqueue_many(&[b"a", b"b", b"c"]).unwrap();
        let taken = q.dequeue_batch(1, None).unwrap()[0].id; // a, in flight
        q.delete(&[taken, ids[2]]).unwrap();
        // The consumer's late ack is refused, nothing else changes.
        assert!(matches!(q.ack(taken), Err(Error::UnknownId { .. })));
        assert!(matches!(q.delete(&[ids[1], 999]), Err(Error::UnknownId { id: 999 })));
        assert_eq!(q.len(), 1, "a refused delete deletes none");
        assert_eq!(q.stats().deleted, 2);
        ids
    };
    let q = FastQueue::open(tmp.path(), cfg()).unwrap();
    let left: Vec<u64> = q.iter().map(|m| m.unwrap().id).collect();
    assert_eq!(left, vec![ids[1]]);
}

#[test]
fn dead_letters_go_back_for_another_try() {
    let tmp = tempfile::tempdir().unwrap();
    let q = FastQueue::open(tmp.path(), cfg()).unwrap();
    let ids = q.enqueue_many(&[b"x", b"y", b"z"]).unwrap();
    for _ in 0..2 {
        for m in q.dequeue_batch(3, None).unwrap() {
            q.nack(m.id, Duration::ZERO).unwrap();
        }
    }
    assert_eq!(q.stats().dead, 3);
    assert!(matches!(q.requeue_dead(Some(&[12345])), Err(Error::UnknownId { .. })));
    let taken = q.dequeue_dead(1).unwrap()[0].id;
    assert!(matches!(q.requeue_dead(Some(&[taken])), Err(Error::NotDead { .. })), "a dead letter taken is not moved");
    let moved = q.requeue_dead(None).unwrap();
    assert_eq!(moved.len(), 2);
    assert!(!moved.contains(&taken));
    let back = q.dequeue_batch(10, None).unwrap();
    assert_eq!(back.iter().map(|m| m.id).collect::<BTreeSet<_>>(), moved.iter().copied().collect());
    assert!(back.iter().all(|m| m.attempts == 0 && m.kind == QueueKind::Retry));
    for m in &back {
        q.ack(m.id).unwrap();
    }
    q.ack(taken).unwrap();
    assert!(q.is_empty());
    drop(q);
    // Durable: nothing comes back after a reopen.
    let q = FastQueue::open(tmp.path(), cfg()).unwrap();
    assert!(q.is_empty(), "{:?}", q.browse().unwrap());
    let _ = ids;
}

#[test]
fn iteration_takes_what_is_ready_and_stops() {
    let tmp = tempfile::tempdir().unwrap();
    let q = FastQueue::open(tmp.path(), cfg()).unwrap();
    let payloads: Vec<Vec<u8>> = (0..150u32).map(|i| i.to_le_bytes().to_vec()).collect();
    let refs: Vec<&[u8]> = payloads.iter().map(|p| &p[..]).collect();
    let ids = q.enqueue_many(&refs).unwrap();
    let got: Vec<u64> = q.iter().map(|m| m.unwrap().id).collect();
    assert_eq!(got, ids);
    assert_eq!(q.iter().count(), 0, "all in flight now");
    assert_eq!(q.stats().in_flight, 150);
}

#[test]
fn a_second_open_in_the_same_process_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let q = FastQueue::open(tmp.path(), cfg()).unwrap();
    let e = FastQueue::open(tmp.path(), cfg()).err().unwrap();
    assert!(matches!(e, Error::AlreadyOpen { .. }), "{e}");
    assert!(e.to_string().contains("already open in this process"), "{e}");
    let e = fastqueue::check(tmp.path()).err().unwrap();
    assert!(matches!(e, Error::AlreadyOpen { .. }), "{e}");
    drop(q);
    let q = FastQueue::open(tmp.path(), cfg()).unwrap();
    drop(q);
    fastqueue::check(tmp.path()).unwrap();
}

/// The administrator's calls while 2 producers and a consumer run: every
/// message enqueued ends acknowledged, deleted or still listed, once.
#[test]
fn browse_delete_and_requeue_while_the_queue_runs() {
    let tmp = tempfile::tempdir().unwrap();
    let q = Arc::new(FastQueue::open(tmp.path(), cfg()).unwrap());
    let producers: Vec<_> = (0..2)
        .map(|p| {
            let q = q.clone();
            std::thread::spawn(move || (0..200u32).map(|i| q.enqueue(&[p as u8; 40][..(i % 40) as usize]).unwrap()).collect::<Vec<_>>())
        })
        .collect();
    let qc = q.clone();
    let consumer = std::thread::spawn(move || {
        let mut acked = Vec::new();
        for round in 0..300 {
            for m in qc.dequeue_batch(8, Some(Duration::from_millis(2))).unwrap() {
                // Some go to the dead-letter queue (max_attempts 2).
                let r = if (m.id + round) % 5 == 0 { qc.nack(m.id, Duration::ZERO).map(|_| ()) } else { qc.ack(m.id) };
                match r {
                    Ok(()) if (m.id + round) % 5 != 0 => acked.push(m.id),
                    Ok(()) | Err(Error::UnknownId { .. }) => {}
                    Err(e) => panic!("{e}"),
                }
            }
        }
        acked
    });
    let mut deleted = BTreeSet::new();
    for i in 0..50 {
        let list = q.browse().unwrap();
        if let Some(m) = list.iter().find(|m| m.state == MessageState::Ready && m.id % 7 == i % 7) {
            match q.delete(&[m.id]) {
                Ok(()) => {
                    deleted.insert(m.id);
                }
                Err(Error::UnknownId { .. }) | Err(Error::Invalid { .. }) => {}
                Err(e) => panic!("{e}"),
            }
        }
        q.requeue_dead(None).unwrap();
        std::thread::sleep(Duration::from_millis(1));
    }
    let enqueued: BTreeSet<u64> = producers.into_iter().flat_map(|p| p.join().unwrap()).collect();
    let acked: BTreeSet<u64> = consumer.join().unwrap().into_iter().collect();
    let left: BTreeSet<u64> = q.browse().unwrap().iter().map(|m| m.id).collect();
    assert_eq!(enqueued.len(), 400);
    assert!(acked.is_disjoint(&deleted) && left.is_disjoint(&deleted) && left.is_disjoint(&acked));
    let all: BTreeSet<u64> = acked.iter().chain(&deleted).chain(&left).copied().collect();
    assert_eq!(all, enqueued);
}

/// `peek` reads a message in any state without taking it; a message gone
/// is `UnknownId`, and a peek while the message is copied by a nack finds
/// the copy.
#[test]
fn peek_reads_without_taking() {
    let tmp = tempfile::tempdir().unwrap();
    let q = FastQueue::open(tmp.path(), cfg()).unwrap();
    let big = vec![7u8; 20_000];
    let ids = q.enqueue_many(&[b"small", &big, b"third"]).unwrap();
    let taken = q.dequeue_batch(1, None).unwrap()[0].id;
    q.nack(taken, Duration::from_secs(3600)).unwrap();
    for (id, want) in ids.iter().zip([&b"small"[..], &big, b"third"]) {
        let m = q.peek(*id).unwrap();
        assert_eq!((m.id, &m.payload[..]), (*id, want));
    }
    assert_eq!(q.peek(ids[0]).unwrap().attempts, 1);
    // Peeking took nothing: both of the main queue are still there.
    assert_eq!(q.dequeue_batch(10, None).unwrap().iter().map(|m| m.id).collect::<Vec<_>>(), &ids[1..]);
    q.ack(ids[1]).unwrap();
    assert!(matches!(q.peek(ids[1]), Err(Error::UnknownId { .. })));
    assert!(matches!(q.peek(9999), Err(Error::UnknownId { .. })));
}

/// `retry_now` makes a delayed retry due now (durably: it stays due after
/// a reopen), moves a message of the main queue ahead as a due retry,
/// keeps ids and attempts, and skips what is not waiting.
#[test]
fn retry_now_makes_waiting_messages_due() {
    let tmp = tempfile::tempdir().unwrap();
    let ids = {
        let q = FastQueue::open(tmp.path(), Config { max_attempts: 5, ..cfg() }).unwrap();
        let ids = q.enqueue_many(&[b"later", b"flight", b"main"]).unwrap();
        assert_eq!(q.dequeue_batch(2, None).unwrap().len(), 2);
        q.nack(ids[0], Duration::from_secs(3600)).unwrap();
        assert_eq!(state_of(&q, ids[0]), Some(MessageState::Delayed));
        // None: the delayed retries only.
        assert_eq!(q.retry_now(None).unwrap(), vec![ids[0]]);
        assert_eq!(state_of(&q, ids[0]), Some(MessageState::Ready));
        // In flight, unknown: skipped; a message of the main queue: moved.
        assert_eq!(q.retry_now(Some(&[ids[1], ids[2], 4242])).unwrap(), vec![ids[2]]);
        assert_eq!(q.retry_now(Some(&[ids[0], ids[2]])).unwrap(), Vec::<u64>::new(), "due already");
        ids
    };
    // Durable: after a reopen both are due retries, with their attempts.
    let q = FastQueue::open(tmp.path(), Config { max_attempts: 5, ..cfg() }).unwrap();
    let got = q.dequeue_batch(10, None).unwrap();
    let seen: Vec<(u64, u32, QueueKind)> = got.iter().map(|m| (m.id, m.attempts, m.kind)).collect();
    assert_eq!(seen, vec![(ids[0], 1, QueueKind::Retry), (ids[2], 0, QueueKind::Retry), (ids[1], 0, QueueKind::Main)]);
    assert_eq!(q.peek(ids[0]).unwrap().payload, b"later");
}

/// The file-per-message queue's calls for a mail queue's commands: browse
/// (ready or taken), peek, delete (taken or not; a taken one's ack is then
/// refused), replace (the payload, in place; a deleted file stays deleted).
#[test]
fn the_baseline_browses_peeks_deletes_and_replaces() {
    let tmp = tempfile::tempdir().unwrap();
    let q = fastqueue::FilePerMessageQueue::open_split(tmp.path(), 4).unwrap();
    let ids: Vec<u64> = [&b"one"[..], b"two", b"three"].iter().map(|p| q.enqueue(p).unwrap()).collect();
    let taken = q.dequeue().unwrap().unwrap().id;
    let list = q.browse().unwrap();
    let states: Vec<(u64, u32, MessageState)> = list.iter().map(|m| (m.id, m.size, m.state)).collect();
    assert_eq!(states, vec![(ids[0], 3, MessageState::InFlight), (ids[1], 3, MessageState::Ready), (ids[2], 5, MessageState::Ready)]);
    assert_eq!(q.peek(ids[2]).unwrap(), b"three");
    q.replace(ids[2], b"THREE!").unwrap();
    assert_eq!(q.peek(ids[2]).unwrap(), b"THREE!");
    assert!(matches!(q.delete(&[ids[1], 77]), Err(Error::UnknownId { id: 77 })));
    assert_eq!(q.browse().unwrap().len(), 3, "a refused delete deletes none");
    q.delete(&[taken, ids[1]]).unwrap();
    assert!(matches!(q.ack(taken), Err(Error::UnknownId { .. })));
    assert!(matches!(q.replace(ids[1], b"back?"), Err(Error::UnknownId { .. })));
    assert!(matches!(q.peek(ids[1]), Err(Error::UnknownId { .. })));
    let rest: Vec<(u64, Vec<u8>)> = std::iter::from_fn(|| q.dequeue().unwrap()).map(|m| (m.id, m.payload)).collect();
    assert_eq!(rest, vec![(ids[2], b"THREE!".to_vec())]);
}

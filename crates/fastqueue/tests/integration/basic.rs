use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use fastqueue::sim::SimStorage;
use fastqueue::{Config, Durability, Error, FastQueue, FilePerMessageQueue, QueueKind};

use super::{drain, payload, small_config};

#[test]
fn messages_come_back_in_order_and_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut ids = Vec::new();
    {
        let q = FastQueue::open(dir.path(), small_config()).unwrap();
        for i in 0..300 {
            ids.push(q.enqueue(&payload(&format!("m{i}"), 10 + i % 700)).unwrap());
        }
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        let first = q.dequeue_batch(10, None).unwrap();
        let got: Vec<u64> = first.iter().map(|m| m.id).collect();
        assert_eq!(got, ids[..10]);
        q.ack_many(&got[..5]).unwrap();
    }
    let q = FastQueue::open(dir.path(), small_config()).unwrap();
    let all = drain(&q);
    // The five acknowledged are gone; the five delivered but not
    // acknowledged come back (at least once), in order.
    let got: Vec<u64> = all.iter().map(|m| m.id).collect();
    assert_eq!(got, ids[5..]);
    for m in &all {
        let i = ids.iter().position(|&x| x == m.id).unwrap();
        assert_eq!(m.payload, payload(&format!("m{i}"), 10 + i % 700));
    }
    // Ids keep growing after a reopen.
    assert!(q.enqueue(b"later").unwrap() > *ids.last().unwrap());
}

#[test]
fn second_open_gets_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let q = FastQueue::open(dir.path(), small_config()).unwrap();
    let err = FastQueue::open(dir.path(), small_config()).err().unwrap();
    // This process holds it: said so (issue 26; it said "locked by another
    // process"). Another process still gets Locked (test_fastqueue.py).
    assert!(matches!(err, Error::AlreadyOpen { .. }), "{err}");
    assert!(err.to_string().contains("already open in this process"));
    assert!(matches!(fastqueue::check(dir.path()), Err(Error::AlreadyOpen { .. })));
    drop(q);
    FastQueue::open(dir.path(), small_config()).unwrap();
}

#[test]
fn bad_config_and_payloads_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config { segment_size: 5000, ..Config::default() };
    let err = FastQueue::open(dir.path(), cfg).err().unwrap();
    assert!(err.to_string().contains("segment_size"), "{err}");
    let q = FastQueue::open(dir.path(), small_config()).unwrap();
    let too_big = vec![0u8; q.config().max_payload() + 1];
    assert!(matches!(q.enqueue(&too_big), Err(Error::TooLarge { .. })));
    let big = q.enqueue(&vec![7u8; q.config().max_payload()]).unwrap();
    assert!(matches!(q.ack(12345), Err(Error::UnknownId { id: 12345 })));
    let id = q.enqueue(b"twice").unwrap();
    let got: Vec<u64> = q.dequeue_batch(2, None).unwrap().iter().map(|m| m.id).collect();
    assert_eq!(got, [big, id]);
    q.ack_many(&[id, id]).unwrap();
    assert!(matches!(q.ack(id), Err(Error::UnknownId { .. })));
    assert!(q.nack(12345, Duration::ZERO).is_err());
}

#[test]
fn nack_retries_then_dead_letters() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config { max_attempts: 3, ..small_config() };
    let id;
    {
        let q = FastQueue::open(dir.path(), cfg.clone()).unwrap();
        id = q.enqueue(b"flaky").unwrap();
        q.enqueue(b"next").unwrap();
        let m = q.dequeue().unwrap().unwrap();
        assert_eq!((m.id, m.attempts), (id, 0));
        assert_eq!(q.nack(id, Duration::from_secs(3600)).unwrap(), QueueKind::Retry);
        // Not due yet: the next message comes first, then nothing.
        assert_eq!(q.dequeue().unwrap().unwrap().payload, b"next");
        assert!(q.dequeue().unwrap().is_none());
        assert_eq!(q.stats().retry, 1);
    }
    let q = FastQueue::open(dir.path(), cfg.clone()).unwrap();
    // "next" was delivered, never acknowledged: it comes back. The retry
    // copy keeps its id and attempt count across the reopen.
    assert_eq!(q.dequeue().unwrap().unwrap().payload, b"next");
    assert!(q.dequeue().unwrap().is_none());
    assert_eq!(q.stats().retry, 1);
    drop(q);

    // A second message driven to the dead-letter queue.
    let dir = tempfile::tempdir().unwrap();
    let q = FastQueue::open(dir.path(), Config { max_attempts: 3, ..small_config() }).unwrap();
    let id = q.enqueue(b"poison").unwrap();
    let mut kinds = Vec::new();
    for attempt in 0..3 {
        let m = q.dequeue_batch(1, Some(Duration::from_secs(5))).unwrap().pop().unwrap();
        assert_eq!((m.id, m.attempts), (id, attempt));
        kinds.push(q.nack(id, Duration::ZERO).unwrap());
    }
    assert_eq!(kinds, [QueueKind::Retry, QueueKind::Retry, QueueKind::Dead]);
    assert!(q.dequeue().unwrap().is_none());
    let dead = q.dequeue_dead(10).unwrap();
    assert_eq!(dead.len(), 1);
    assert_eq!((dead[0].id, dead[0].attempts, dead[0].kind), (id, 3, QueueKind::Dead));
    q.ack(id).unwrap();
    assert!(q.is_empty());
}

#[test]
fn segments_are_recycled_but_not_under_a_slow_consumer() {
    let storage = SimStorage::new();
    let q = FastQueue::open_with(Arc::new(storage.clone()), small_config()).unwrap();
    let slow = q.enqueue(&payload("slow", 1000)).unwrap();
    let held = q.dequeue().unwrap().unwrap();
    assert_eq!(held.id, slow);
    for round in 0..5 {
        let ids: Vec<u64> =
            (0..40).map(|i| q.enqueue(&payload(&format!("{round}-{i}"), 900)).unwrap()).collect();
        let got = q.dequeue_batch(100, None).unwrap();
        assert_eq!(got.iter().map(|m| m.id).collect::<Vec<_>>(), ids);
        q.ack_many(&ids).unwrap();
    }
    let stats = q.stats();
    assert!(stats.recycled > 0, "{stats:?}");
    // The first segment holds the unacknowledged message: still there.
    let first = storage.read_file("seg-0000000000000001.fq");
    assert!(first.is_some(), "segment of the slow consumer was recycled");
    // Free files are reused: the directory does not grow with traffic.
    let names = fastqueue::Storage::list(&storage).unwrap();
    assert!(names.len() < 10, "{names:?}");
    q.ack(slow).unwrap();
    drop(q);
    let q = FastQueue::open_with(Arc::new(storage.crash_image(fastqueue::sim::CrashMode::KeepUnsynced)), small_config()).unwrap();
    assert!(q.is_empty());
}

#[test]
fn many_producers_and_consumers_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config {
        segment_size: 256 << 10,
        batch_delay: Duration::from_millis(2),
        spare_segments: 1,
        ..Config::default()
    };
    let q = Arc::new(FastQueue::open(dir.path(), cfg).unwrap());
    let producers: Vec<_> = (0..8)
        .map(|t| {
            let q = q.clone();
            std::thread::spawn(move || {
                (0..300).map(|i| q.enqueue(&payload(&format!("{t}-{i}"), 50 + i)).unwrap()).collect::<Vec<_>>()
            })
        })
        .collect();
    let consumers: Vec<_> = (0..3)
        .map(|_| {
            let q = q.clone();
            std::thread::spawn(move || {
                let mut got = Vec::new();
                while got.len() < 2400 {
                    let batch = q.dequeue_batch(32, Some(Duration::from_millis(200))).unwrap();
                    if batch.is_empty() {
                        break;
                    }
                    q.ack_many(&batch.iter().map(|m| m.id).collect::<Vec<_>>()).unwrap();
                    got.extend(batch.into_iter().map(|m| m.id));
                }
                got
            })
        })
        .collect();
    let mut sent = BTreeSet::new();
    for p in producers {
        sent.extend(p.join().unwrap());
    }
    let mut received = Vec::new();
    for c in consumers {
        received.extend(c.join().unwrap());
    }
    received.extend(drain(&q).into_iter().map(|m| m.id));
    let unique: BTreeSet<u64> = received.iter().copied().collect();
    assert_eq!(unique.len(), received.len(), "a message was delivered twice");
    assert_eq!(unique, sent);
    let stats = q.stats();
    assert!(stats.rounds < stats.enqueued, "no gathering: {stats:?}");
}

#[test]
fn os_durability_and_flush() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config { durability: Durability::Os, ..small_config() };
    let q = FastQueue::open(dir.path(), cfg.clone()).unwrap();
    for i in 0..50 {
        q.enqueue(&payload(&format!("{i}"), 100)).unwrap();
    }
    let before = q.stats().syncs;
    q.flush().unwrap();
    assert!(q.stats().syncs > before);
    drop(q);
    assert_eq!(drain(&FastQueue::open(dir.path(), cfg).unwrap()).len(), 50);
}

#[test]
fn file_per_message_baseline_has_the_same_behaviour() {
    let dir = tempfile::tempdir().unwrap();
    let ids: Vec<u64>;
    {
        let q = FilePerMessageQueue::open(dir.path()).unwrap();
        ids = (0..20).map(|i| q.enqueue(&payload(&format!("{i}"), 30)).unwrap()).collect();
        let got = q.dequeue_batch(5).unwrap();
        for m in &got[..3] {
            q.ack(m.id).unwrap();
        }
        assert!(matches!(FilePerMessageQueue::open(dir.path()), Err(Error::Locked { .. })));
    }
    let q = FilePerMessageQueue::open(dir.path()).unwrap();
    let got: Vec<u64> = q.dequeue_batch(100).unwrap().iter().map(|m| m.id).collect();
    assert_eq!(got, ids[3..]);
    assert!(matches!(q.ack(999), Err(Error::UnknownId { .. })));
}

#[test]
fn reopening_with_another_segment_size_keeps_everything() {
    let dir = tempfile::tempdir().unwrap();
    let big = Config { segment_size: 64 << 10, ..small_config() };
    let mut ids = Vec::new();
    for (round, cfg) in [small_config(), big.clone(), small_config(), big].into_iter().enumerate() {
        let q = FastQueue::open(dir.path(), cfg).unwrap();
        for i in 0..40 {
            ids.push(q.enqueue(&payload(&format!("{round}-{i}"), 900)).unwrap());
        }
        drop(q);
    }
    let q = FastQueue::open(dir.path(), small_config()).unwrap();
    assert_eq!(drain(&q).iter().map(|m| m.id).collect::<Vec<_>>(), ids);
    assert!(fastqueue::check(dir.path()).is_err(), "queue still open");
    drop(q);
    assert!(fastqueue::check(dir.path()).unwrap().problems.is_empty());
}

/// Large messages are read by one scatter read per run (straight into the
/// messages' buffers): payloads intact, checksums still verified, on real
/// files (`preadv`) and on the simulator (the generic path).
#[test]
fn large_messages_are_read_back_intact_and_verified() {
    let cfg = Config { segment_size: 4 << 20, prefetch_bytes: 1 << 20, ..small_config() };
    let sizes: Vec<usize> = (0..60).map(|i| 8_000 + (i * 7_919) % 70_000).collect();
    let dir = tempfile::tempdir().unwrap();
    let real: Arc<dyn fastqueue::Storage> = Arc::new(fastqueue::DirStorage::new(dir.path()).unwrap());
    let sim = SimStorage::new();
    for storage in [real, Arc::new(sim.clone()) as Arc<dyn fastqueue::Storage>] {
        let q = FastQueue::open_with(storage.clone(), cfg.clone()).unwrap();
        let ids: Vec<u64> =
            sizes.iter().enumerate().map(|(i, &n)| q.enqueue(&payload(&format!("L{i}"), n)).unwrap()).collect();
        let got = q.dequeue_batch(100, None).unwrap();
        assert_eq!(got.iter().map(|m| m.id).collect::<Vec<_>>(), ids);
        for (i, m) in got.iter().enumerate() {
            assert_eq!(m.payload, payload(&format!("L{i}"), sizes[i]), "message {i}");
        }
        drop(q);
        // One flipped payload bit: the read names the record.
        let name = "seg-0000000000000001.fq";
        let f = storage.open(name).unwrap();
        let at = 4096 + 64 + 3 * 1024;
        let mut b = [0u8; 1];
        f.read_at(&mut b, at).unwrap();
        f.write_at(&[b[0] ^ 0x40], at).unwrap();
        f.sync_data().unwrap();
        // The open verifies every record too: it names the damage.
        let err = FastQueue::open_with(storage.clone(), cfg.clone()).err().unwrap();
        assert!(err.to_string().contains("offset 4096"), "{err}");
        // Damage after the open: the scatter read of the dequeue finds it.
        f.write_at(&b, at).unwrap();
        let q = FastQueue::open_with(storage.clone(), cfg.clone()).unwrap();
        f.write_at(&[b[0] ^ 0x40], at).unwrap();
        let err = q.dequeue_batch(10, None).err().unwrap();
        assert!(matches!(&err, Error::Corrupt { offset: 4096, .. }), "{err}");
    }
}

/// enqueue_many: ids in order, durable together (across segment switches),
/// and a too-large payload stores none of the batch.
#[test]
fn enqueue_many_stores_a_batch_with_one_wait() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = small_config();
    let bodies: Vec<Vec<u8>> = (0..400).map(|i| payload(&format!("b{i}"), 50 + i % 900)).collect();
    let ids = {
        let q = FastQueue::open(dir.path(), cfg.clone()).unwrap();
        let refs: Vec<&[u8]> = bodies.iter().map(|b| &b[..]).collect();
        let mut ids = Vec::new();
        for chunk in refs.chunks(37) {
            ids.extend(q.enqueue_many(chunk).unwrap());
        }
        assert!(ids.windows(2).all(|w| w[0] < w[1]));
        assert!(q.enqueue_many(&[]).unwrap().is_empty());
        let huge = vec![0u8; cfg.max_payload() + 1];
        assert!(matches!(q.enqueue_many(&[b"ok", &huge]), Err(Error::TooLarge { .. })));
        assert_eq!(q.len(), bodies.len());
        ids
    };
    let q = FastQueue::open(dir.path(), cfg).unwrap();
    let all = drain(&q);
    assert_eq!(all.iter().map(|m| m.id).collect::<Vec<_>>(), ids);
    for (m, b) in all.iter().zip(&bodies) {
        assert_eq!(&m.payload, b);
    }
}

/// ack_many_nowait: the messages leave the queue at once, the returned
/// round makes the acknowledgement durable (a power loss after
/// `wait_durable` never brings them back; before it, it may), ids are
/// refused like `ack`'s, and rounds come in order.
#[test]
fn ack_many_nowait_is_durable_once_its_round_is() {
    let storage = SimStorage::new();
    let cfg = small_config();
    let q = FastQueue::open_with(Arc::new(storage.clone()), cfg.clone()).unwrap();
    let bodies: Vec<Vec<u8>> = (0..300).map(|i| payload(&format!("n{i}"), 40 + (i * 37) % 3000)).collect();
    let refs: Vec<&[u8]> = bodies.iter().map(|b| &b[..]).collect();
    let ids = q.enqueue_many(&refs).unwrap();
    // Refused like ack: a message never dequeued, and then none of the ids.
    let first = q.dequeue_batch(10, None).unwrap();
    let mut mixed: Vec<u64> = first.iter().map(|m| m.id).collect();
    mixed.push(ids[200]);
    assert!(matches!(q.ack_many_nowait(&mixed), Err(Error::NotDelivered { .. })));
    assert_eq!(q.len(), 300);
    // Acknowledged without waiting, batch after batch.
    let mut tickets = Vec::new();
    let mut waited = BTreeSet::new();
    let mut batch = first;
    for _ in 0..10 {
        let b: Vec<u64> = batch.iter().map(|m| m.id).collect();
        tickets.push(q.ack_many_nowait(&b).unwrap());
        waited.extend(b);
        batch = q.dequeue_batch(10, None).unwrap();
    }
    assert!(tickets.windows(2).all(|w| w[0] <= w[1]), "rounds in order: {tickets:?}");
    assert_eq!(q.len(), 300 - waited.len());
    q.wait_durable(*tickets.last().unwrap()).unwrap();
    // These are acknowledged and not waited for: a crash may bring them back.
    let late: Vec<u64> = batch.iter().map(|m| m.id).collect();
    q.ack_many_nowait(&late).unwrap();
    assert!(matches!(q.ack(late[0]), Err(Error::UnknownId { .. })), "already acknowledged");
    // Nothing to acknowledge: a round already durable.
    let none = q.ack_many_nowait(&[]).unwrap();
    assert!(none >= *tickets.last().unwrap());
    q.wait_durable(none).unwrap();
    let image = storage.crash_image(fastqueue::sim::CrashMode::DropUnsynced);
    drop(q);
    let q = FastQueue::open_with(Arc::new(image), cfg).unwrap();
    let got: BTreeSet<u64> = drain(&q).into_iter().map(|m| m.id).collect();
    for id in &ids {
        if waited.contains(id) {
            assert!(!got.contains(id), "{id}: acknowledged, waited for, came back");
        } else if !late.contains(id) {
            assert!(got.contains(id), "{id}: never acknowledged, lost");
        }
    }
}

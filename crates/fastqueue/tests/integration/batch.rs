//! `dequeue_batch_into` and `MessageBatch`: the same messages as
//! `dequeue_batch`, the same ack/nack/visibility rules, the same checks of
//! every record read (now also after the open, on damage made while the
//! queue runs), and a buffer reused without leaking stale bytes.

use std::sync::Arc;
use std::time::Duration;

use fastqueue::format::{HeaderCheck, RecordHeader, SEGMENT_HEADER_LEN};
use fastqueue::sim::{CrashMode, SimStorage};
use fastqueue::{Config, Error, FastQueue, FilePerMessageQueue, ManualClock, Message, MessageBatch, QueueKind, Storage};

use super::payload;

const SEC: Duration = Duration::from_secs(1);

/// Segments large enough for the largest payload below, small enough that
/// the messages span several.
pub(super) fn config() -> Config {
    Config { segment_size: 1 << 20, batch_delay: Duration::ZERO, spare_segments: 0, ..Config::default() }
}

/// Sizes on both sides of the scatter threshold (8 KiB), empty and
/// one-byte payloads, and runs of equal large records.
pub(super) fn sizes() -> Vec<usize> {
    let mut v = vec![0, 1, 7, 8, 100, 4000, 8191, 8192, 8193, 65536, 65536, 65536, 200_000, 3, 70_000, 9000, 50];
    v.extend(std::iter::repeat_n(65536, 20));
    v.extend((0..30).map(|i| 1 + 37 * i));
    v
}

fn fill(q: &FastQueue) -> Vec<u64> {
    sizes().iter().enumerate().map(|(i, &n)| q.enqueue(&payload(&format!("m{i}"), n)[..n]).unwrap()).collect()
}

/// Open a second, identical queue on a copy of `storage`.
fn twin(storage: &SimStorage, cfg: Config) -> FastQueue {
    FastQueue::open_with(Arc::new(storage.crash_image(CrashMode::KeepUnsynced)), cfg).unwrap()
}

#[test]
fn a_reused_batch_reads_what_dequeue_batch_reads() {
    let storage = SimStorage::new();
    {
        let q = FastQueue::open_with(Arc::new(storage.clone()), config()).unwrap();
        fill(&q);
        q.close().unwrap();
    }
    let a = twin(&storage, config());
    let b = twin(&storage, config());
    let mut batch = MessageBatch::new();
    let mut want: Vec<Message> = Vec::new();
    let mut got: Vec<Message> = Vec::new();
    // Batch sizes that cut runs of adjacent records at various places.
    for &max in [1usize, 3, 7, 64, 2, 5, 1000].iter().cycle() {
        let owned = a.dequeue_batch(max, None).unwrap();
        let n = b.dequeue_batch_into(max, None, &mut batch).unwrap();
        assert_eq!(n, owned.len());
        assert_eq!(batch.len(), n);
        want.extend(owned);
        got.extend(batch.iter().map(|m| m.to_message()));
        if n == 0 {
            break;
        }
    }
    assert_eq!(want.len(), sizes().len());
    assert_eq!(got, want);
    assert!(batch.is_empty() && batch.get(0).is_none());
}

#[test]
fn a_smaller_batch_after_a_larger_one_shows_only_its_own_bytes() {
    let storage = SimStorage::new();
    let q = FastQueue::open_with(Arc::new(storage), config()).unwrap();
    let big: Vec<u64> = (0..4).map(|i| q.enqueue(&payload(&format!("big{i}"), 100_000)).unwrap()).collect();
    let small = q.enqueue(b"tiny").unwrap();
    let large_again = q.enqueue(&payload("mid", 20_000)).unwrap();
    let mut batch = MessageBatch::with_capacity(1 << 16);
    assert_eq!(q.dequeue_batch_into(4, None, &mut batch).unwrap(), 4);
    assert_eq!(batch.ids(), big);
    let high_water = batch.buffer_bytes();
    assert!(high_water >= 400_000);
    q.ack_many(&batch.ids()).unwrap();
    assert_eq!(q.dequeue_batch_into(1, None, &mut batch).unwrap(), 1);
    let m = batch.get(0).unwrap();
    assert_eq!((m.id, m.payload, m.kind, m.attempts), (small, &b"tiny"[..], QueueKind::Main, 0));
    assert_eq!(q.dequeue_batch_into(1, None, &mut batch).unwrap(), 1);
    assert_eq!(batch.get(0).unwrap().payload, &payload("mid", 20_000)[..]);
    assert_eq!(batch.get(0).unwrap().id, large_again);
    // The buffer was reused, not grown or shrunk.
    assert_eq!(batch.buffer_bytes(), high_water);
    // Nothing left: the batch is emptied, not left holding the last one.
    assert_eq!(q.dequeue_batch_into(8, None, &mut batch).unwrap(), 0);
    assert!(batch.is_empty());
}

/// `dequeue_batch_into` or `dequeue_batch_mapped`.
type Read = fn(&FastQueue, usize, Option<Duration>, &mut MessageBatch) -> fastqueue::Result<usize>;
/// Their `_with_visibility` forms.
type ReadWithVisibility = fn(&FastQueue, usize, Option<Duration>, Option<Duration>, &mut MessageBatch) -> fastqueue::Result<usize>;

/// A batch read of the queue: its plain form and its `_with_visibility`
/// form.
pub(super) struct BatchRead {
    pub plain: Read,
    pub with_visibility: ReadWithVisibility,
}

/// Delivery through `read` as through `dequeue_batch`: ack, nack, the
/// visibility timeout, the retry and dead-letter queues, and the payloads
/// (still intact once their messages are acknowledged, as long as the
/// batch holds them).
pub(super) fn ack_nack_visibility_and_dead_letters(storage: Arc<dyn Storage>, read: BatchRead) {
    let clock = Arc::new(ManualClock::default());
    let cfg = Config { max_attempts: 2, ..config() };
    let q = FastQueue::open_with_clock(storage, cfg, clock.clone()).unwrap();
    let ids: Vec<u64> = (0..6).map(|i| q.enqueue(&payload(&format!("v{i}"), 10_000 + i)).unwrap()).collect();
    // Not delivered yet: refused.
    assert!(matches!(q.ack(ids[0]), Err(Error::NotDelivered { .. })));
    let mut batch = MessageBatch::new();
    assert_eq!((read.with_visibility)(&q, 3, None, Some(10 * SEC), &mut batch).unwrap(), 3);
    assert_eq!(batch.ids(), &ids[..3]);
    assert_eq!(q.stats().in_flight, 3);
    q.ack(ids[0]).unwrap();
    assert_eq!(q.nack(ids[1], Duration::ZERO).unwrap(), QueueKind::Retry);
    // ids[2] is neither acked nor nacked: it comes back after its timeout,
    // before the retry and the main queue, the timeout counted.
    clock.advance(11 * SEC);
    assert_eq!((read.plain)(&q, 10, None, &mut batch).unwrap(), 5);
    let got: Vec<(u64, u32, QueueKind)> = batch.iter().map(|m| (m.id, m.attempts, m.kind)).collect();
    assert_eq!(
        got,
        vec![
            (ids[2], 1, QueueKind::Main),
            (ids[1], 1, QueueKind::Retry),
            (ids[3], 0, QueueKind::Main),
            (ids[4], 0, QueueKind::Main),
            (ids[5], 0, QueueKind::Main)
        ]
    );
    for m in batch.iter() {
        let i = (m.id - ids[0]) as usize;
        assert_eq!(m.payload, &payload(&format!("v{i}"), 10_000 + i)[..]);
    }
    // A second failure of ids[1] sends it to the dead-letter queue.
    assert_eq!(q.nack(ids[1], Duration::ZERO).unwrap(), QueueKind::Dead);
    let ack: Vec<u64> = batch.ids().into_iter().filter(|&id| id != ids[1]).collect();
    let ticket = q.ack_many_nowait(&ack).unwrap();
    q.wait_durable(ticket).unwrap();
    // The payloads stay valid and unchanged after their messages were
    // acknowledged (a mapped batch still pins the segment).
    assert_eq!(batch.get(2).unwrap().payload, &payload("v3", 10_003)[..]);
    // Acknowledged: refused again, never delivered again.
    assert!(matches!(q.ack(ids[3]), Err(Error::UnknownId { .. })));
    assert_eq!((read.plain)(&q, 10, None, &mut batch).unwrap(), 0);
    assert_eq!(q.dequeue_dead(10).unwrap().iter().map(|m| m.id).collect::<Vec<_>>(), vec![ids[1]]);
    // A visibility of zero is refused as by dequeue_batch_with_visibility.
    assert!(matches!((read.with_visibility)(&q, 1, None, Some(Duration::ZERO), &mut batch), Err(Error::Invalid { .. })));
}

#[test]
fn ack_nack_and_visibility_work_as_with_dequeue_batch() {
    let read = BatchRead {
        plain: FastQueue::dequeue_batch_into,
        with_visibility: FastQueue::dequeue_batch_into_with_visibility,
    };
    ack_nack_visibility_and_dead_letters(Arc::new(SimStorage::new()), read);
}

#[test]
fn waits_for_a_message_like_dequeue_batch() {
    let storage = SimStorage::new();
    let q = Arc::new(FastQueue::open_with(Arc::new(storage), config()).unwrap());
    let mut batch = MessageBatch::new();
    assert_eq!(q.dequeue_batch_into(4, Some(Duration::from_millis(20)), &mut batch).unwrap(), 0);
    let producer = {
        let q = q.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            q.enqueue(&payload("late", 30_000)).unwrap()
        })
    };
    assert_eq!(q.dequeue_batch_into(4, Some(Duration::from_secs(10)), &mut batch).unwrap(), 1);
    assert_eq!(batch.get(0).unwrap().id, producer.join().unwrap());
}

/// Where each message record is: (segment name, offset, payload length).
fn records(storage: &SimStorage) -> Vec<(String, usize, usize)> {
    let mut out = Vec::new();
    for name in storage.list().unwrap().into_iter().filter(|n| n.starts_with("seg-")) {
        let bytes = storage.read_file(&name).unwrap();
        let mut off = SEGMENT_HEADER_LEN as usize;
        while off < bytes.len() {
            let HeaderCheck::Valid(h) = RecordHeader::decode(&bytes[off..]) else { break };
            if h.is_message() {
                out.push((name.clone(), off, h.payload_len as usize));
            }
            off += h.record_len();
        }
    }
    out
}

/// Flips one payload bit of every record of `len` payload bytes (the
/// queue is open: the damage is found by the read, not by the open).
fn flip_payloads(storage: &SimStorage, len: usize) -> usize {
    let hits: Vec<_> = records(storage).into_iter().filter(|r| r.2 == len).collect();
    for (name, off, plen) in &hits {
        let mut bytes = storage.read_file(name).unwrap();
        bytes[off + 64 + plen / 2] ^= 0x20;
        storage.write_file(name, bytes);
    }
    hits.len()
}

#[test]
fn a_checksum_failure_after_the_open_is_reported_by_both_apis() {
    // 12 345 B: read by the scatter/straight path; 321 B: through the
    // shared prefetch buffer.
    for len in [12_345usize, 321] {
        let storage = SimStorage::new();
        let q = FastQueue::open_with(Arc::new(storage.clone()), config()).unwrap();
        q.enqueue(&payload("good", len + 1)).unwrap();
        q.enqueue(&payload("bad", len)).unwrap();
        assert_eq!(flip_payloads(&storage, len), 1);
        let mut batch = MessageBatch::new();
        let err = q.dequeue_batch_into(10, None, &mut batch).unwrap_err();
        assert!(
            matches!(&err, Error::Corrupt { reason, .. } if reason.contains("checksum")),
            "{len}: {err}"
        );
        // Left empty (not holding the good message of the failed read).
        assert!(batch.is_empty());
        // The messages stay in flight, as with dequeue_batch: a reopen (or
        // a visibility timeout) brings them back.
        assert_eq!(q.stats().in_flight, 2);
        let storage2 = SimStorage::new();
        let q2 = FastQueue::open_with(Arc::new(storage2.clone()), config()).unwrap();
        q2.enqueue(&payload("bad", len)).unwrap();
        flip_payloads(&storage2, len);
        assert!(matches!(q2.dequeue_batch(10, None), Err(Error::Corrupt { .. })), "{len}");
    }
}

#[test]
fn a_record_cut_under_the_queue_is_not_read_from_stale_bytes() {
    // The first read leaves the record's exact bytes in the batch's
    // buffer; the file is then cut and the same record delivered again
    // (visibility timeout) into the same place of the buffer. The read
    // comes up short and must say so instead of checking the stale copy.
    let storage = SimStorage::new();
    let clock = Arc::new(ManualClock::default());
    let cfg = Config { visibility_timeout: Some(SEC), ..config() };
    let q = FastQueue::open_with_clock(Arc::new(storage.clone()), cfg, clock.clone()).unwrap();
    let ids: Vec<u64> = (0..3).map(|i| q.enqueue(&payload(&format!("c{i}"), 40_000)).unwrap()).collect();
    let mut batch = MessageBatch::new();
    assert_eq!(q.dequeue_batch_into(3, None, &mut batch).unwrap(), 3);
    assert_eq!(batch.ids(), ids);
    let recs = records(&storage);
    let (name, off, _) = &recs[2];
    let mut bytes = storage.read_file(name).unwrap();
    bytes.truncate(off + 64 + 1000);
    storage.write_file(name, bytes);
    clock.advance(2 * SEC);
    let err = q.dequeue_batch_into(3, None, &mut batch).unwrap_err();
    assert!(matches!(&err, Error::Corrupt { reason, .. } if reason.contains("cut short")), "{err}");
    assert!(batch.is_empty());
}

#[test]
fn the_baseline_reads_the_same_into_a_batch() {
    let dir = tempfile::tempdir().unwrap();
    let q = FilePerMessageQueue::open(dir.path().join("q")).unwrap();
    let sizes = [0usize, 1, 5000, 65536, 3, 200_000, 65536, 12];
    let ids: Vec<u64> = sizes.iter().enumerate().map(|(i, &n)| q.enqueue(&payload(&format!("f{i}"), n)[..n]).unwrap()).collect();
    let mut batch = MessageBatch::new();
    assert_eq!(q.dequeue_batch_into(3, &mut batch).unwrap(), 3);
    assert_eq!(batch.ids(), &ids[..3]);
    let mut got: Vec<Vec<u8>> = batch.iter().map(|m| m.payload.to_vec()).collect();
    for id in batch.ids() {
        q.ack(id).unwrap();
    }
    assert_eq!(q.dequeue_batch_into(100, &mut batch).unwrap(), 5);
    got.extend(batch.iter().map(|m| m.payload.to_vec()));
    let want: Vec<Vec<u8>> = sizes.iter().enumerate().map(|(i, &n)| payload(&format!("f{i}"), n)[..n].to_vec()).collect();
    assert_eq!(got, want);
    assert_eq!(q.dequeue_batch_into(100, &mut batch).unwrap(), 0);
    assert!(batch.is_empty());
}

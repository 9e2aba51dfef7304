//! The log cut at every byte offset of its last records: the open drops
//! exactly the incomplete batch, keeps every complete one, and the queue
//! goes on working.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use fastqueue::format::{HeaderCheck, RecordHeader, FLAG_BATCH_END, RECORD_HEADER_LEN, SEGMENT_HEADER_LEN};
use fastqueue::sim::{CrashMode, SimStorage};
use fastqueue::{Config, FastQueue};

use super::{drain, payload, small_config};

const SEG: &str = "seg-0000000000000001.fq";

struct Rec {
    offset: usize,
    end: usize,
    id: u64,
    batch: u64,
    batch_end: bool,
}

fn records(bytes: &[u8]) -> Vec<Rec> {
    let mut out = Vec::new();
    let mut off = SEGMENT_HEADER_LEN as usize;
    while let HeaderCheck::Valid(h) = RecordHeader::decode(&bytes[off..]) {
        let end = off + h.record_len();
        // Padding is not covered by checksums: a cut inside it loses nothing.
        let data_end = off + RECORD_HEADER_LEN + h.payload_len as usize;
        out.push(Rec { offset: off, end: data_end, id: h.id, batch: h.batch_seq, batch_end: h.flags & FLAG_BATCH_END != 0 });
        off = end;
    }
    out
}

/// Ids a reopen must find when the segment is cut at `cut`: those of
/// batches that end before it.
fn expected(recs: &[Rec], cut: usize) -> BTreeSet<u64> {
    let complete: BTreeSet<u64> =
        recs.iter().filter(|r| r.batch_end && r.end <= cut).map(|r| r.batch).collect();
    recs.iter().filter(|r| complete.contains(&r.batch)).map(|r| r.id).collect()
}

fn check_every_cut(storage: &SimStorage, last_batches: usize) -> usize {
    let bytes = storage.read_file(SEG).unwrap();
    let recs = records(&bytes);
    let batches: Vec<u64> = recs.iter().map(|r| r.batch).collect::<BTreeSet<_>>().into_iter().collect();
    let first_batch = batches[batches.len() - last_batches];
    let from = recs.iter().find(|r| r.batch == first_batch).unwrap().offset;
    let to = recs.last().unwrap().end;
    let mut cuts = 0;
    for cut in from..=to {
        let image = storage.crash_image(CrashMode::KeepUnsynced);
        let mut torn = bytes.clone();
        torn[cut..].fill(0);
        image.write_file(SEG, torn);
        let q = FastQueue::open_with(Arc::new(image.clone()), small_config())
            .unwrap_or_else(|e| panic!("cut at {cut}: reopen failed: {e}"));
        let got: BTreeSet<u64> = drain(&q).iter().map(|m| m.id).collect();
        assert_eq!(got, expected(&recs, cut), "cut at byte {cut}");
        // The queue goes on: a new message, then a reopen finds it too.
        let id = q.enqueue(b"after").unwrap();
        drop(q);
        let q = FastQueue::open_with(Arc::new(image.crash_image(CrashMode::DropUnsynced)), small_config()).unwrap();
        let again: BTreeSet<u64> = drain(&q).iter().map(|m| m.id).collect();
        assert_eq!(again.len(), got.len() + 1, "cut at byte {cut}");
        assert!(again.contains(&id));
        cuts += 1;
    }
    eprintln!("torn tail: {cuts} cut offsets reopened");
    cuts
}

#[test]
fn torn_tail_at_every_byte_of_single_record_batches() {
    let storage = SimStorage::new();
    let q = FastQueue::open_with(Arc::new(storage.clone()), small_config()).unwrap();
    for i in 0..12 {
        q.enqueue(&payload(&format!("r{i}"), 40 + 90 * i)).unwrap();
    }
    // The disk as a crash would leave it (the queue not closed).
    let storage = storage.crash_image(CrashMode::KeepUnsynced);
    drop(q);
    assert!(check_every_cut(&storage, 3) > 2000);
}

#[test]
fn torn_tail_at_every_byte_of_multi_record_batches() {
    let storage = SimStorage::new();
    let cfg = Config { batch_delay: Duration::from_secs(5), ..small_config() };
    let q = Arc::new(FastQueue::open_with(Arc::new(storage.clone()), cfg).unwrap());
    for round in 0..4 {
        let threads: Vec<_> = (0..3)
            .map(|t| {
                let q = q.clone();
                std::thread::spawn(move || q.enqueue(&payload(&format!("{round}-{t}"), 300 + 100 * t)).unwrap())
            })
            .collect();
        while q.stats().enqueued < 3 * (round + 1) {
            std::thread::sleep(Duration::from_millis(1));
        }
        q.flush().unwrap();
        for t in threads {
            t.join().unwrap();
        }
    }
    let storage = storage.crash_image(CrashMode::KeepUnsynced);
    drop(q);
    let recs = records(&storage.read_file(SEG).unwrap());
    assert!(recs.iter().filter(|r| r.batch_end).count() < recs.len(), "batches of one record only");
    check_every_cut(&storage, 2);
}

/// Sectors of the last write reach the disk out of order: a hole in the
/// middle of the last batch, later sectors present.
#[test]
fn torn_tail_with_a_missing_sector_inside_the_last_batch() {
    let storage = SimStorage::new();
    let q = FastQueue::open_with(Arc::new(storage.clone()), small_config()).unwrap();
    for i in 0..4 {
        q.enqueue(&payload(&format!("s{i}"), 3000)).unwrap();
    }
    let storage = storage.crash_image(CrashMode::KeepUnsynced);
    drop(q);
    let bytes = storage.read_file(SEG).unwrap();
    let recs = records(&bytes);
    let last = recs.last().unwrap();
    let mut sector = last.offset.next_multiple_of(512);
    while sector + 512 <= last.end {
        let image = storage.crash_image(CrashMode::KeepUnsynced);
        let mut torn = bytes.clone();
        torn[sector..sector + 512].fill(0);
        image.write_file(SEG, torn);
        let q = FastQueue::open_with(Arc::new(image), small_config()).unwrap();
        let got: Vec<u64> = drain(&q).iter().map(|m| m.id).collect();
        let want: Vec<u64> = recs[..recs.len() - 1].iter().map(|r| r.id).collect();
        assert_eq!(got, want, "hole at {sector}");
        if sector >= last.offset + 64 {
            assert!(q.stats().open.torn_tail.is_some(), "hole at {sector}");
        }
        sector += 512;
    }
}

/// With the pipelined writer two rounds may be unsynced at a crash: a hole
/// in the second-to-last batch, the last one intact, is a torn tail (both
/// dropped, neither was acknowledged); a hole with two intact batches
/// after it cannot come from a crash and is reported.
#[test]
fn a_hole_before_the_last_batch_is_a_tail_two_batches_back_and_damage_three() {
    let storage = SimStorage::new();
    let q = FastQueue::open_with(Arc::new(storage.clone()), small_config()).unwrap();
    for i in 0..6 {
        q.enqueue(&payload(&format!("h{i}"), 1500)).unwrap();
    }
    let storage = storage.crash_image(CrashMode::KeepUnsynced);
    drop(q);
    let bytes = storage.read_file(SEG).unwrap();
    let recs = records(&bytes);
    assert_eq!(recs.len(), 6);
    assert!(recs.iter().all(|r| r.batch_end), "one record per batch expected");
    for (back, torn) in [(2, true), (3, false)] {
        let r = &recs[recs.len() - back];
        let image = storage.crash_image(CrashMode::KeepUnsynced);
        let mut holed = bytes.clone();
        let sector = (r.offset + 600).next_multiple_of(512);
        holed[sector..sector + 512].fill(0);
        image.write_file(SEG, holed);
        let opened = FastQueue::open_with(Arc::new(image), small_config());
        if torn {
            let q = opened.unwrap_or_else(|e| panic!("hole {back} batches back: {e}"));
            let got: Vec<u64> = drain(&q).iter().map(|m| m.id).collect();
            let want: Vec<u64> = recs[..recs.len() - 2].iter().map(|r| r.id).collect();
            assert_eq!(got, want);
            assert_eq!(q.stats().open.torn_tail.unwrap().dropped_records, 1);
        } else {
            let err = opened.err().expect("a hole three batches back opened");
            assert!(matches!(err, fastqueue::Error::Corrupt { offset, .. } if offset == r.offset as u64), "{err}");
        }
    }
}

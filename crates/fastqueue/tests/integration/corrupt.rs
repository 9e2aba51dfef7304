//! Bit flips in the middle of the log are reported with their segment and
//! offset, never skipped; `repair` salvages every other record.

use std::collections::BTreeSet;
use std::sync::Arc;

use fastqueue::format::{HeaderCheck, RecordHeader, DELETE_FLAG_OFFSET, RECORD_HEADER_LEN, SEGMENT_HEADER_LEN};
use fastqueue::sim::{CrashMode, SimStorage};
use fastqueue::{check_storage, repair_storage, Error, FastQueue, ProblemKind, Storage};

use super::{drain, payload, small_config};

struct Rec {
    name: String,
    offset: usize,
    payload_len: usize,
    id: u64,
}

/// A queue over three segments, some messages acknowledged.
fn build() -> (SimStorage, Vec<Rec>, BTreeSet<u64>) {
    let storage = SimStorage::new();
    let q = FastQueue::open_with(Arc::new(storage.clone()), small_config()).unwrap();
    let ids: Vec<u64> = (0..60).map(|i| q.enqueue(&payload(&format!("b{i}"), 100 + 23 * i)).unwrap()).collect();
    let got = q.dequeue_batch(60, None).unwrap();
    assert_eq!(got.len(), 60);
    let acked: Vec<u64> = ids.iter().copied().filter(|id| id % 7 == 0).collect();
    q.ack_many(&acked).unwrap();
    drop(q);
    let mut recs = Vec::new();
    for name in storage.list().unwrap().into_iter().filter(|n| n.starts_with("seg-")) {
        let bytes = storage.read_file(&name).unwrap();
        let mut off = SEGMENT_HEADER_LEN as usize;
        while let HeaderCheck::Valid(h) = RecordHeader::decode(&bytes[off..]) {
            if h.is_message() {
                recs.push(Rec { name: name.clone(), offset: off, payload_len: h.payload_len as usize, id: h.id });
            }
            off += h.record_len();
        }
    }
    assert!(recs.iter().map(|r| &r.name).collect::<BTreeSet<_>>().len() >= 3);
    let live = ids.into_iter().filter(|id| id % 7 != 0).collect();
    (storage, recs, live)
}

fn flip(storage: &SimStorage, name: &str, at: usize, bit: u8) -> SimStorage {
    let image = storage.crash_image(CrashMode::KeepUnsynced);
    let mut bytes = image.read_file(name).unwrap();
    bytes[at] ^= 1 << bit;
    image.write_file(name, bytes);
    image
}

fn ids_after_repair(image: &SimStorage) -> BTreeSet<u64> {
    let report = repair_storage(image).unwrap();
    assert!(!report.mended.is_empty());
    assert!(check_storage(image).unwrap().problems.is_empty());
    let q = FastQueue::open_with(Arc::new(image.clone()), small_config()).unwrap();
    drain(&q).iter().map(|m| m.id).collect()
}

#[test]
fn bit_flips_in_the_middle_are_reported_and_repaired() {
    let (storage, recs, live) = build();
    // Every record but those of the last batches of the log, which may be
    // a torn tail (see the format doc; here one record per batch).
    let candidates = &recs[..recs.len() - fastqueue::format::PIPELINE_DEPTH];
    let mut positions = Vec::new();
    // Every byte of one header, the delete flag included.
    let r = &candidates[5];
    for i in 0..RECORD_HEADER_LEN {
        positions.push((5, r.offset + i, (i % 8) as u8));
    }
    // Payload bytes spread over all records.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..120 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = (x % candidates.len() as u64) as usize;
        let r = &candidates[k];
        let at = r.offset + RECORD_HEADER_LEN + (x >> 20) as usize % r.payload_len;
        positions.push((k, at, (x >> 8) as u8 % 8));
    }
    for (k, at, bit) in positions {
        let r = &candidates[k];
        let image = flip(&storage, &r.name, at, bit);
        let err = FastQueue::open_with(Arc::new(image.clone()), small_config()).err();
        let Some(Error::Corrupt { segment, offset, reason }) = err else {
            panic!("flip at {}:{at} not reported: {err:?}", r.name)
        };
        assert!(segment.ends_with(&r.name) && offset == r.offset as u64, "{segment:?} {offset} {reason}");
        let report = check_storage(&image).unwrap();
        assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
        assert_eq!(report.problems[0].offset, r.offset as u64);
        let flag = at == r.offset + DELETE_FLAG_OFFSET as usize;
        assert_eq!(report.problems[0].kind == ProblemKind::DeleteFlag, flag);
        let got = ids_after_repair(&image);
        let mut want = live.clone();
        if flag {
            // Taken as live: delivered again rather than lost.
            want.insert(r.id);
        } else {
            want.remove(&r.id);
        }
        assert_eq!(got, want, "flip at {}:{at}", r.name);
    }
}

#[test]
fn a_damaged_segment_header_is_reported_and_rewritten() {
    let (storage, recs, live) = build();
    let name = &recs[0].name;
    let image = flip(&storage, name, 30, 2);
    let err = FastQueue::open_with(Arc::new(image.clone()), small_config()).err().unwrap();
    assert!(matches!(&err, Error::Corrupt { offset: 0, .. }), "{err}");
    assert!(err.to_string().contains(name.as_str()));
    assert_eq!(ids_after_repair(&image), live);
}

#[test]
fn real_files_name_the_segment_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let q = FastQueue::open(dir.path(), small_config()).unwrap();
    for i in 0..5 {
        q.enqueue(&payload(&format!("f{i}"), 500)).unwrap();
    }
    drop(q);
    let seg = dir.path().join("seg-0000000000000001.fq");
    let mut bytes = std::fs::read(&seg).unwrap();
    bytes[SEGMENT_HEADER_LEN as usize + 100] ^= 0x10;
    std::fs::write(&seg, bytes).unwrap();
    let err = FastQueue::open(dir.path(), small_config()).err().unwrap();
    assert_eq!(
        err.to_string(),
        format!("fastqueue: {}: offset 4096: payload checksum mismatch", seg.display())
    );
    let report = fastqueue::check(dir.path()).unwrap();
    assert_eq!(report.problems.len(), 1);
    let repaired = fastqueue::repair(dir.path()).unwrap();
    assert_eq!(repaired.quarantined.len(), 1);
    assert!(repaired.quarantined[0].exists());
    let q = FastQueue::open(dir.path(), small_config()).unwrap();
    assert_eq!(drain(&q).len(), 4);
}

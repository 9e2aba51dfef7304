//! Property tests on the crash simulator: random operations, a crash after
//! a random storage step, unsynced writes dropped, kept or torn, reopen,
//! check the promises; then more operations, a second crash, and again.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use fastqueue::sim::{CrashMode, SimStorage};
use fastqueue::FastQueue;
use proptest::prelude::*;

use super::{drain, key_of, payload, small_config};

#[derive(Clone, Debug)]
enum Op {
    Enqueue(usize),
    /// Concurrent enqueues, one thread each: with a slow sync, their
    /// rounds overlap in the pipelined writer.
    Burst(Vec<usize>),
    Dequeue(usize),
    AckOldest,
    /// `ack_many` of every message in flight: their delete flags are
    /// written as spans.
    AckAll,
    NackOldest,
    Flush,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => (1usize..3000).prop_map(Op::Enqueue),
        2 => (1usize..6).prop_map(Op::Dequeue),
        3 => Just(Op::AckOldest),
        1 => Just(Op::NackOldest),
        1 => Just(Op::Flush),
    ]
}

fn pipelined_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        5 => prop::collection::vec(1usize..2500, 2..8).prop_map(Op::Burst),
        1 => (1usize..3000).prop_map(Op::Enqueue),
        2 => (1usize..8).prop_map(Op::Dequeue),
        2 => Just(Op::AckOldest),
        2 => Just(Op::AckAll),
        1 => Just(Op::NackOldest),
        1 => Just(Op::Flush),
    ]
}

fn mode() -> impl Strategy<Value = CrashMode> {
    prop_oneof![
        Just(CrashMode::DropUnsynced),
        Just(CrashMode::KeepUnsynced),
        any::<u64>().prop_map(CrashMode::Random),
    ]
}

/// What the test knows about each message.
#[derive(Default)]
struct Model {
    /// Enqueue returned Ok: id → key. Must come back unless acknowledged.
    stored: BTreeMap<u64, String>,
    /// Enqueue was called but failed (the crash): may come back, once.
    maybe: BTreeSet<String>,
    /// Ack returned Ok: must not come back.
    acked: BTreeSet<u64>,
    /// Ack failed: may or may not come back.
    ack_maybe: BTreeSet<u64>,
    /// Delivered and not yet acknowledged, oldest first.
    in_flight: Vec<u64>,
    counter: usize,
}

impl Model {
    fn run(&mut self, q: &FastQueue, ops: &[Op]) {
        for op in ops {
            match op {
                Op::Enqueue(len) => {
                    let key = format!("k{}", self.counter);
                    self.counter += 1;
                    match q.enqueue(&payload(&key, *len)) {
                        Ok(id) => {
                            self.stored.insert(id, key);
                        }
                        Err(_) => {
                            self.maybe.insert(key);
                        }
                    }
                }
                Op::Burst(lens) => {
                    let keys: Vec<String> = lens
                        .iter()
                        .map(|_| {
                            self.counter += 1;
                            format!("k{}", self.counter - 1)
                        })
                        .collect();
                    let results: Vec<_> = std::thread::scope(|s| {
                        // Arriving over time, so that later ones find a
                        // round being synced.
                        let handles: Vec<_> = keys
                            .iter()
                            .zip(lens)
                            .map(|(key, len)| {
                                std::thread::sleep(Duration::from_micros(150));
                                s.spawn(move || q.enqueue(&payload(key, *len)))
                            })
                            .collect();
                        handles.into_iter().map(|h| h.join().unwrap()).collect()
                    });
                    for (key, result) in keys.into_iter().zip(results) {
                        match result {
                            Ok(id) => {
                                self.stored.insert(id, key);
                            }
                            Err(_) => {
                                self.maybe.insert(key);
                            }
                        }
                    }
                }
                Op::Dequeue(n) => {
                    if let Ok(ms) = q.dequeue_batch(*n, None) {
                        self.in_flight.extend(ms.iter().map(|m| m.id));
                    }
                }
                Op::AckOldest => {
                    if !self.in_flight.is_empty() {
                        let id = self.in_flight.remove(0);
                        if q.ack(id).is_ok() {
                            self.acked.insert(id);
                        } else {
                            self.ack_maybe.insert(id);
                        }
                    }
                }
                Op::AckAll => {
                    let ids = std::mem::take(&mut self.in_flight);
                    let into = if q.ack_many(&ids).is_ok() { &mut self.acked } else { &mut self.ack_maybe };
                    into.extend(ids);
                }
                Op::NackOldest => {
                    if !self.in_flight.is_empty() {
                        let id = self.in_flight.remove(0);
                        let _ = q.nack(id, Duration::ZERO);
                    }
                }
                Op::Flush => {
                    let _ = q.flush();
                }
            }
        }
    }

    /// Reopens `image` and checks every promise; returns the queue.
    fn verify(&mut self, image: SimStorage) -> Result<FastQueue, TestCaseError> {
        let q = FastQueue::open_with(Arc::new(image), small_config())
            .map_err(|e| TestCaseError::fail(format!("reopen failed: {e}")))?;
        let got = drain(&q);
        let mut seen = BTreeSet::new();
        for m in &got {
            prop_assert!(seen.insert(m.id), "message {} delivered twice", m.id);
            let key = key_of(&m.payload);
            prop_assert!(!self.acked.contains(&m.id), "acknowledged message {} came back", m.id);
            match self.stored.get(&m.id) {
                Some(k) => prop_assert_eq!(k, &key, "message {} has another payload", m.id),
                None => {
                    prop_assert!(self.maybe.remove(&key), "message {} ({}) was never enqueued", m.id, key);
                    self.stored.insert(m.id, key);
                }
            }
        }
        for (id, key) in &self.stored {
            if !self.acked.contains(id) && !self.ack_maybe.contains(id) {
                prop_assert!(seen.contains(id), "stored message {id} ({key}) lost");
            }
        }
        // What did not come back is now known: never stored, or deleted.
        for id in std::mem::take(&mut self.ack_maybe) {
            if !seen.contains(&id) {
                self.acked.insert(id);
            }
        }
        self.stored.retain(|id, _| seen.contains(id));
        self.maybe.clear();
        self.in_flight = got.iter().map(|m| m.id).collect();
        Ok(q)
    }
}

fn crash_round(
    model: &mut Model,
    storage: SimStorage,
    ops: &[Op],
    crash_at: u64,
    mode: CrashMode,
) -> Result<SimStorage, TestCaseError> {
    crash_round_with(model, storage, ops, crash_at, mode, Duration::ZERO)
}

fn crash_round_with(
    model: &mut Model,
    storage: SimStorage,
    ops: &[Op],
    crash_at: u64,
    mode: CrashMode,
    sync_delay: Duration,
) -> Result<SimStorage, TestCaseError> {
    storage.set_sync_delay(sync_delay);
    storage.crash_after(storage.steps() + crash_at);
    {
        let q = FastQueue::open_with(Arc::new(storage.clone()), small_config());
        match q {
            Ok(q) => {
                model.in_flight.clear();
                model.run(&q, ops);
            }
            // The crash may come during the open itself.
            Err(_) => prop_assert!(storage.has_crashed()),
        }
    }
    let image = storage.crash_image(mode);
    let q = model.verify(image.clone())?;
    drop(q);
    // The open may have truncated a tail: continue from what it left.
    Ok(image.crash_image(CrashMode::KeepUnsynced))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    #[test]
    fn acknowledged_messages_survive_any_crash(
        ops1 in prop::collection::vec(op(), 1..40),
        ops2 in prop::collection::vec(op(), 1..40),
        crash1 in 1u64..400,
        crash2 in 1u64..400,
        mode1 in mode(),
        mode2 in mode(),
    ) {
        let mut model = Model::default();
        let storage = SimStorage::new();
        let storage = crash_round(&mut model, storage, &ops1, crash1, mode1)?;
        let storage = crash_round(&mut model, storage, &ops2, crash2, mode2)?;
        // A final clean run over what is left.
        crash_round(&mut model, storage, &[Op::Enqueue(10), Op::Dequeue(3), Op::AckOldest], u64::MAX / 2, CrashMode::DropUnsynced)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 250, ..ProptestConfig::default() })]

    /// The same promises with the writer's pipeline at work: bursts of
    /// concurrent enqueues against a slow `fdatasync` (a round is written
    /// while the previous one's sync runs), crashes at any step.
    #[test]
    fn pipelined_writer_keeps_every_promise_at_any_crash(
        ops1 in prop::collection::vec(pipelined_op(), 1..25),
        ops2 in prop::collection::vec(pipelined_op(), 1..25),
        crash1 in 1u64..500,
        crash2 in 1u64..500,
        mode1 in mode(),
        mode2 in mode(),
    ) {
        let slow = Duration::from_micros(300);
        let mut model = Model::default();
        let storage = crash_round_with(&mut model, SimStorage::new(), &ops1, crash1, mode1, slow)?;
        let storage = crash_round_with(&mut model, storage, &ops2, crash2, mode2, slow)?;
        crash_round(&mut model, storage, &[Op::Enqueue(10), Op::Dequeue(3), Op::AckOldest], u64::MAX / 2, CrashMode::DropUnsynced)?;
    }
}

/// The pipeline does overlap rounds (so the property test above tests it),
/// and what a crash in the middle of two overlapping rounds leaves opens
/// cleanly: at every step of such a run.
#[test]
fn overlapping_rounds_crash_at_every_step() {
    let run = |crash_at: Option<u64>| {
        let storage = SimStorage::new();
        storage.set_sync_delay(Duration::from_micros(500));
        if let Some(at) = crash_at {
            storage.crash_after(at);
        }
        let mut model = Model::default();
        let mut pipelined = 0;
        if let Ok(q) = FastQueue::open_with(Arc::new(storage.clone()), super::small_config()) {
            let burst = Op::Burst(vec![300, 900, 40, 1200, 77, 500]);
            model.run(&q, &[burst.clone(), Op::Dequeue(4), Op::AckOldest, burst.clone(), Op::Dequeue(8), Op::AckAll, burst]);
            pipelined = q.stats().pipelined;
        }
        (storage, model, pipelined)
    };
    let (storage, _, pipelined) = run(None);
    assert!(pipelined > 0, "no round overlapped another: the test would not test the pipeline");
    let steps = storage.steps();
    for at in 1..=steps {
        for mode in [CrashMode::DropUnsynced, CrashMode::KeepUnsynced, CrashMode::Random(at)] {
            let (storage, mut model, _) = run(Some(at));
            model.verify(storage.crash_image(mode)).unwrap_or_else(|e| panic!("crash after step {at} ({mode:?}): {e}"));
        }
    }
    eprintln!("pipelined writer: crashes at each of {steps} steps, 3 modes");
}

/// Many threads, a crash at every tenth step of a run, random tearing.
#[test]
fn concurrent_producers_and_consumers_crash_anywhere() {
    let points: Vec<u64> = match std::env::var("FQ_CRASH_AT") {
        Ok(v) => vec![v.parse().unwrap()],
        Err(_) => (5..600).step_by(10).collect(),
    };
    for crash_at in points {
        let storage = SimStorage::new();
        storage.crash_after(crash_at);
        let cfg = fastqueue::Config { spare_segments: 1, ..small_config() };
        let stored = Arc::new(std::sync::Mutex::new(BTreeMap::new()));
        let acked = Arc::new(std::sync::Mutex::new(BTreeSet::new()));
        let acked_ok = Arc::new(std::sync::Mutex::new(BTreeSet::new()));
        if let Ok(q) = FastQueue::open_with(Arc::new(storage.clone()), cfg) {
            let q = Arc::new(q);
            let mut threads = Vec::new();
            for t in 0..4 {
                let (q, stored) = (q.clone(), stored.clone());
                threads.push(std::thread::spawn(move || {
                    for i in 0..60 {
                        let key = format!("{t}-{i}");
                        match q.enqueue(&payload(&key, 200 + 37 * i)) {
                            Ok(id) => {
                                stored.lock().unwrap().insert(id, key);
                            }
                            Err(_) => return,
                        }
                    }
                }));
            }
            let (qc, ackc, acked_ok) = (q.clone(), acked.clone(), acked_ok.clone());
            threads.push(std::thread::spawn(move || loop {
                let Ok(batch) = qc.dequeue_batch(8, Some(Duration::from_millis(20))) else { return };
                if batch.is_empty() {
                    return;
                }
                for m in batch {
                    // Tried counts: a failed ack may still have reached the disk.
                    ackc.lock().unwrap().insert(m.id);
                    if qc.ack(m.id).is_err() {
                        return;
                    }
                    acked_ok.lock().unwrap().insert(m.id);
                }
            }));
            for t in threads {
                t.join().unwrap();
            }
        }
        let image = storage.crash_image(CrashMode::Random(crash_at));
        let q = FastQueue::open_with(Arc::new(image), small_config())
            .unwrap_or_else(|e| panic!("crash at step {crash_at}: reopen failed: {e}"));
        let got: BTreeMap<u64, String> = drain(&q).into_iter().map(|m| (m.id, key_of(&m.payload))).collect();
        let (stored, acked) = (stored.lock().unwrap(), acked.lock().unwrap());
        let acked_ok = acked_ok.lock().unwrap();
        for (id, key) in stored.iter() {
            if acked_ok.contains(id) {
                assert!(!got.contains_key(id), "crash at {crash_at}: acknowledged {id} came back");
            } else if !acked.contains(id) {
                assert_eq!(got.get(id), Some(key), "crash at {crash_at}: {id} lost");
            }
        }
        for (id, key) in &got {
            let (t, i) = key.split_once('-').unwrap();
            assert!(t.parse::<u32>().unwrap() < 4 && i.parse::<u32>().unwrap() < 60, "{id}: {key}");
        }
    }
}


//! The block layer against real elevators: merging, the size limit,
//! merging two requests, plugging, and the request limit.

use super::bio::{Bio, Origin, SINGLE};
use super::*;
use crate::request::Dir;
use crate::sched::{self, Dispatch, Elevator};
use std::collections::BTreeMap;

fn elv(name: &str) -> Box<dyn Elevator> {
    sched::build(name, &BTreeMap::new(), &crate::sched::testutil::ctx()).unwrap().0
}

fn bio(pid: u32, sector: u64, nr: u32, dir: Dir, sync: bool) -> Bio {
    Bio { pid, sector, nr_sectors: nr, dir, sync, origin: Origin::Direct { op: SINGLE } }
}

fn write(pid: u32, sector: u64, nr: u32) -> Bio {
    bio(pid, sector, nr, Dir::Write, false)
}

fn blk() -> BlockLayer {
    BlockLayer::new(&QueueSpec::default()).unwrap()
}

const T: SimTime = SimTime::ZERO;

fn merged(r: Submitted) -> bool {
    matches!(r, Submitted::Merged { .. })
}

/// Dispatch everything and complete it; (sector, sectors, bios) per request.
fn drain(b: &mut BlockLayer, e: &mut dyn Elevator) -> Vec<(u64, u32, usize)> {
    let mut out = Vec::new();
    let mut done = Vec::new();
    while let Dispatch::Request(rq) = e.dispatch(T) {
        b.dispatched(&rq);
        let cur = b.current(rq.id).unwrap();
        assert_eq!(cur, rq, "the elevator hands out the request as merged");
        e.completed(&rq, T);
        done.clear();
        b.complete(rq.id, T, &mut done, &mut *e);
        let bios: u64 = done.iter().map(|d| d.bio.nr_sectors as u64).sum();
        assert_eq!(bios, rq.nr_sectors as u64, "the bios cover the request");
        out.push((rq.sector, rq.nr_sectors, done.len()));
    }
    assert_eq!(b.live_requests(), 0);
    out
}

#[test]
fn back_and_front_merges_join_queued_requests() {
    for name in ["noop", "deadline", "as", "cfq"] {
        let mut b = blk();
        let mut e = elv(name);
        assert!(matches!(b.submit(write(0, 1000, 8), &mut *e, T), Submitted::Inserted(_)));
        assert!(merged(b.submit(write(0, 1008, 8), &mut *e, T)), "{name}: back merge");
        // A front merge through last_merge (every elevator) or its lookup.
        assert!(merged(b.submit(write(0, 992, 8), &mut *e, T)), "{name}: front merge");
        assert_eq!(e.queued(), 1);
        assert_eq!(drain(&mut b, &mut *e), vec![(992, 24, 3)], "{name}");
        assert_eq!(b.allocated(Dir::Write), 0);
    }
}

#[test]
fn a_bio_of_the_other_direction_or_a_sync_bio_into_an_async_request_does_not_merge() {
    let mut b = blk();
    let mut e = elv("deadline");
    b.submit(write(0, 1000, 8), &mut *e, T);
    assert!(matches!(b.submit(bio(0, 1008, 8, Dir::Read, false), &mut *e, T), Submitted::Inserted(_)));
    assert_eq!(e.queued(), 2);
    // CFQ: a read (sync) bio may not join an async write... and an async
    // write bio joins only a request of its own queue.
    let mut b = blk();
    let mut e = elv("cfq");
    b.submit(write(0, 1000, 8), &mut *e, T);
    assert!(matches!(b.submit(bio(0, 1008, 8, Dir::Write, true), &mut *e, T), Submitted::Inserted(_)));
    b.submit(bio(1, 5000, 8, Dir::Read, false), &mut *e, T);
    assert!(matches!(b.submit(bio(2, 5008, 8, Dir::Read, false), &mut *e, T), Submitted::Inserted(_)), "another process's queue");
    assert!(merged(b.submit(bio(1, 5008, 8, Dir::Read, false), &mut *e, T)), "its own queue");
}

#[test]
fn merges_stop_at_max_sectors_and_mark_the_request() {
    let spec = QueueSpec { max_sectors_kb: 8, ..QueueSpec::default() }; // 16 sectors
    let mut b = BlockLayer::new(&spec).unwrap();
    let mut e = elv("deadline");
    b.submit(write(0, 1000, 8), &mut *e, T);
    assert!(merged(b.submit(write(0, 1008, 8), &mut *e, T)));
    assert!(matches!(b.submit(write(0, 1016, 8), &mut *e, T), Submitted::Inserted(_)), "16 + 8 > 16");
    assert!(merged(b.submit(write(0, 1024, 8), &mut *e, T)), "joins [1016, 1024)");
    // [1000, 1016) is REQ_NOMERGE now: a bio in front of it gets its own
    // request even though it would fit no worse.
    assert!(matches!(b.submit(write(0, 992, 8), &mut *e, T), Submitted::Inserted(_)));
    assert_eq!(drain(&mut b, &mut *e), vec![(992, 8, 1), (1000, 16, 2), (1016, 16, 2)]);
}

#[test]
fn a_bio_that_fills_a_gap_merges_the_two_requests() {
    let mut b = blk();
    let mut e = elv("deadline");
    b.submit(write(0, 0, 8), &mut *e, T);
    b.submit(write(0, 16, 8), &mut *e, T);
    assert_eq!(b.allocated(Dir::Write), 2);
    let r = b.submit(write(0, 8, 8), &mut *e, T);
    assert_eq!(r, Submitted::Merged { into: 0, absorbed: Some(1) });
    assert_eq!(e.queued(), 1, "attempt_back_merge joined the requests");
    assert_eq!(b.allocated(Dir::Write), 1, "the absorbed request was freed");
    assert_eq!(drain(&mut b, &mut *e), vec![(0, 24, 3)]);
}

#[test]
fn as_looks_for_front_merges_in_the_wrong_tree() {
    // 2.6.20's as_merge searches sort_list[bio_data_dir(bio)] of AS's
    // sync-indexed trees: a read bio never finds a front merge there. With
    // last_merge pointing elsewhere, the read stays a request of its own;
    // deadline finds it.
    for (name, merged) in [("as", false), ("deadline", true)] {
        let mut b = blk();
        let mut e = elv(name);
        b.submit(bio(0, 1000, 8, Dir::Read, false), &mut *e, T); // last_merge
        b.submit(bio(1, 50_000, 8, Dir::Read, false), &mut *e, T);
        let r = b.submit(bio(1, 49_992, 8, Dir::Read, false), &mut *e, T);
        assert_eq!(self::merged(r), merged, "{name}: {r:?}");
    }
}

#[test]
fn merging_can_be_turned_off() {
    let spec = QueueSpec { merges: false, ..QueueSpec::default() };
    let mut b = BlockLayer::new(&spec).unwrap();
    let mut e = elv("deadline");
    b.submit(write(0, 0, 8), &mut *e, T);
    assert!(matches!(b.submit(write(0, 8, 8), &mut *e, T), Submitted::Inserted(_)));
}

#[test]
fn an_empty_queue_plugs_until_four_requests_wait_or_the_timer_fires() {
    let mut b = blk();
    let mut e = elv("noop");
    b.submit(write(0, 0, 8), &mut *e, SimTime(100));
    assert!(b.plugged());
    assert_eq!(b.fx.timers, vec![(SimTime(3_000_100), KernelTimer::Unplug)]);
    b.submit(write(0, 100, 8), &mut *e, T);
    b.submit(write(0, 200, 8), &mut *e, T);
    assert!(b.plugged() && !b.fx.run_queue);
    b.submit(write(0, 300, 8), &mut *e, T);
    assert!(!b.plugged() && b.fx.run_queue, "unplug_thresh 4");
    // The timer of a removed plug does nothing.
    b.fx.run_queue = false;
    b.unplug_timer(SimTime(3_000_100));
    assert!(!b.fx.run_queue);
    // Timer path, and a sync bio unplugs at once.
    let mut b = blk();
    let mut e = elv("noop");
    b.submit(write(0, 0, 8), &mut *e, T);
    b.unplug_timer(SimTime(3_000_000));
    assert!(!b.plugged() && b.fx.run_queue);
    let mut b = blk();
    let mut e = elv("noop");
    b.submit(bio(0, 0, 8, Dir::Write, true), &mut *e, T);
    assert!(!b.plugged() && b.fx.run_queue, "WRITE_SYNC unplugs");
}

#[test]
fn a_full_request_list_puts_the_submitter_to_sleep_until_a_request_frees() {
    let spec = QueueSpec { nr_requests: 8, ..QueueSpec::default() };
    let mut b = BlockLayer::new(&spec).unwrap();
    let mut e = elv("noop");
    // Process 0 fills writes (it becomes the batcher at the 8th and may
    // go on to 12); process 1 then sleeps.
    for i in 0..12 {
        assert!(matches!(b.submit(write(0, i * 100, 8), &mut *e, T), Submitted::Inserted(_)), "{i}");
    }
    assert_eq!(b.submit(write(0, 5000, 8), &mut *e, T), Submitted::Sleeping, "the hard cap, 3/2 · 8");
    assert_eq!(b.submit(write(1, 9000, 8), &mut *e, T), Submitted::Sleeping);
    assert!(b.parked(1) && b.congested(Dir::Write));
    // Reads are counted apart.
    assert!(matches!(b.submit(bio(2, 7000, 8, Dir::Read, false), &mut *e, T), Submitted::Inserted(_)));
    // Complete requests until the count is below 8: one sleeper wakes.
    let mut done = Vec::new();
    while b.fx.wake.is_empty() {
        let Dispatch::Request(rq) = e.dispatch(T) else { panic!("queued requests") };
        b.dispatched(&rq);
        b.complete(rq.id, T, &mut done, &mut *e);
    }
    assert_eq!(b.fx.wake, vec![(0, Wake::Request)]);
    assert!(b.retry(0, &mut *e, T).is_some(), "woken, it allocates");
    assert!(!b.parked(0) && b.parked(1));
}

//! The request list (`struct request_list`) and its limits, as 2.6.20's
//! block/ll_rw_blk.c has them: `get_request`, `get_request_wait`,
//! `freed_request`, the congestion thresholds and the batching exemption.
//!
//! Requests are counted per data direction (READ/WRITE, not sync/async).
//! - `nr_requests` (128) per direction: an allocation that would reach it
//!   marks the direction full and its allocator a "batcher"; once full,
//!   only batchers and processes the elevator exempts (`may_queue` MUST:
//!   AS's awaited process, CFQ's waiting queue) may allocate; others sleep
//!   (exclusively: one is woken per freed request) until a request of that
//!   direction is freed with the count below `nr_requests`.
//! - A batcher may allocate `BLK_BATCH_REQ` (32) requests, or any number
//!   within `BLK_BATCH_TIME` (20 ms) of becoming one; a process woken
//!   from a sleep becomes one. Nobody goes past 3/2 · `nr_requests`.
//! - Congestion: a direction is congested from `nr_requests − nr/8 + 1`
//!   allocated requests (113 of 128) until it drops below
//!   `nr_requests − nr/8 − nr/16 − 1` (103): `blk_queue_congestion_threshold`.
//!   Every freed request below that mark clears congestion and wakes all
//!   `congestion_wait` sleepers of its direction (`clear_bdi_congested`).
//!   Read-ahead and the flusher skip work while congested.

use super::{Effects, Wake};
use crate::request::{Dir, ProcessId};
use crate::sched::{Elevator, MayQueue};
use crate::time::SimTime;
use std::collections::VecDeque;

/// `BLK_BATCH_REQ`: requests a batching process may allocate.
const BATCH_REQ: u32 = 32;
/// `BLK_BATCH_TIME` = HZ/50: how long a process stays a batcher.
const BATCH_TIME_NS: u64 = 20_000_000;

#[derive(Copy, Clone, Debug, Default)]
struct Batching {
    /// `ioc->nr_batch_requests`.
    left: u32,
    /// `ioc->last_waited`.
    since: SimTime,
}

#[derive(Debug)]
pub struct RequestList {
    nr_requests: u32,
    congestion_on: u32,
    congestion_off: u32,
    /// `rl->count[rw]`.
    count: [u32; 2],
    /// `rl->starved[rw]`.
    starved: [bool; 2],
    /// `blk_queue_full(q, rw)`.
    full: [bool; 2],
    /// `bdi_{read,write}_congested`.
    congested: [bool; 2],
    /// `rl->wait[rw]`: processes asleep for a request, oldest first.
    waiters: [VecDeque<ProcessId>; 2],
    /// `congestion_wqh[rw]`: processes in `congestion_wait`.
    congestion_sleepers: [Vec<ProcessId>; 2],
    batching: Vec<Batching>,
}

impl RequestList {
    pub fn new(nr_requests: u32) -> RequestList {
        // blk_queue_congestion_threshold.
        let nr = nr_requests;
        let on = (nr - nr / 8 + 1).min(nr);
        let off = (nr as i64 - (nr / 8) as i64 - (nr / 16) as i64 - 1).max(1) as u32;
        RequestList {
            nr_requests,
            congestion_on: on,
            congestion_off: off,
            count: [0; 2],
            starved: [false; 2],
            full: [false; 2],
            congested: [false; 2],
            waiters: [VecDeque::new(), VecDeque::new()],
            congestion_sleepers: [Vec::new(), Vec::new()],
            batching: Vec::new(),
        }
    }

    pub fn count(&self, dir: Dir) -> u32 {
        self.count[dir.index()]
    }
    pub fn count_all(&self) -> u32 {
        self.count[0] + self.count[1]
    }
    pub fn congested(&self, dir: Dir) -> bool {
        self.congested[dir.index()]
    }
    /// Allocations `dir` takes until it is congested, the one that marks
    /// it included (`get_request` marks it when `count + 1 >=
    /// congestion_on`); 0 if it is congested.
    pub fn congestion_room(&self, dir: Dir) -> u32 {
        let rw = dir.index();
        if self.congested[rw] {
            0
        } else {
            self.congestion_on.saturating_sub(self.count[rw])
        }
    }

    /// (congestion on, congestion off) marks, for tests and docs.
    pub fn thresholds(&self) -> (u32, u32) {
        (self.congestion_on, self.congestion_off)
    }

    fn batch(&mut self, pid: ProcessId) -> &mut Batching {
        let i = pid as usize;
        if i >= self.batching.len() {
            self.batching.resize(i + 1, Batching::default());
        }
        &mut self.batching[i]
    }

    /// `ioc_batching`.
    fn is_batching(&mut self, pid: ProcessId, now: SimTime) -> bool {
        let b = *self.batch(pid);
        b.left == BATCH_REQ || (b.left > 0 && now < b.since + BATCH_TIME_NS)
    }

    /// `ioc_set_batching`.
    pub fn set_batching(&mut self, pid: ProcessId, now: SimTime) {
        if !self.is_batching(pid, now) {
            *self.batch(pid) = Batching { left: BATCH_REQ, since: now };
        }
    }

    /// `get_request`: may `pid` have a request of direction `dir` now?
    /// Counts it if so.
    pub fn get_request(
        &mut self,
        pid: ProcessId,
        dir: Dir,
        sync: bool,
        elv: &mut dyn Elevator,
        now: SimTime,
        _fx: &mut Effects,
    ) -> bool {
        let rw = dir.index();
        let may_queue = elv.may_queue(pid, dir, sync);
        if may_queue == MayQueue::No {
            if self.count[rw] == 0 {
                self.starved[rw] = true;
            }
            return false;
        }
        // `ioc` is looked up only on the way to a full queue; the batch
        // count below is spent only then (the kernel's ioc is NULL else).
        let mut ioc_known = false;
        if self.count[rw] + 1 >= self.congestion_on {
            if self.count[rw] + 1 >= self.nr_requests {
                ioc_known = true;
                if !self.full[rw] {
                    self.set_batching(pid, now);
                    self.full[rw] = true;
                } else if may_queue != MayQueue::Must && !self.is_batching(pid, now) {
                    return false;
                }
            }
            self.congested[rw] = true;
        }
        if self.count[rw] >= 3 * self.nr_requests / 2 {
            return false;
        }
        self.count[rw] += 1;
        self.starved[rw] = false;
        if ioc_known && self.is_batching(pid, now) {
            self.batch(pid).left -= 1;
        }
        true
    }

    /// `prepare_to_wait_exclusive(&rl->wait[rw])`: `pid` sleeps for a
    /// request of direction `dir`.
    pub fn wait(&mut self, pid: ProcessId, dir: Dir) {
        let q = &mut self.waiters[dir.index()];
        if !q.contains(&pid) {
            q.push_back(pid);
        }
    }

    /// `freed_request`: a request of direction `dir` is gone.
    pub fn freed(&mut self, dir: Dir, now: SimTime, fx: &mut Effects) {
        let rw = dir.index();
        debug_assert!(self.count[rw] > 0, "freed more requests than allocated");
        self.count[rw] = self.count[rw].saturating_sub(1);
        self.freed_dir(rw, now, fx);
        if self.starved[rw ^ 1] {
            self.freed_dir(rw ^ 1, now, fx);
        }
    }

    /// `__freed_request`.
    fn freed_dir(&mut self, rw: usize, _now: SimTime, fx: &mut Effects) {
        if self.count[rw] < self.congestion_off {
            self.congested[rw] = false;
            // clear_bdi_congested wakes every congestion_wait sleeper of
            // this direction.
            // (Checked first: a drain of nothing still sets up and drops
            // its iterator, on every freed request.)
            if !self.congestion_sleepers[rw].is_empty() {
                fx.wake.extend(self.congestion_sleepers[rw].drain(..).map(|p| (p, Wake::Congestion)));
            }
        }
        if self.count[rw] < self.nr_requests {
            if let Some(pid) = self.waiters[rw].pop_front() {
                fx.wake.push((pid, Wake::Request));
            }
            self.full[rw] = false;
        }
    }

    /// `congestion_wait(dir, ..)`: sleep until congestion of `dir` clears.
    pub fn congestion_wait(&mut self, pid: ProcessId, dir: Dir) {
        let q = &mut self.congestion_sleepers[dir.index()];
        if !q.contains(&pid) {
            q.push(pid);
        }
    }

    /// The sleeper's timeout came first: it no longer waits.
    pub fn congestion_cancel(&mut self, pid: ProcessId) {
        for q in &mut self.congestion_sleepers {
            q.retain(|&p| p != pid);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::noop;
    use crate::sched::TunableValues;

    fn noop_elv() -> Box<dyn Elevator> {
        (noop::INFO.build)(&TunableValues::default(), &crate::sched::testutil::ctx())
    }

    #[test]
    fn congestion_marks_are_113_and_103_of_128() {
        assert_eq!(RequestList::new(128).thresholds(), (113, 103));
        assert_eq!(RequestList::new(4).thresholds(), (4, 3));
    }

    #[test]
    fn a_full_direction_makes_others_sleep_and_a_free_wakes_one() {
        let mut rl = RequestList::new(128);
        let mut elv = noop_elv();
        let mut fx = Effects::default();
        let t = SimTime::ZERO;
        // Process 0 fills the write direction: it becomes the batcher at
        // the 128th request and may go on to 192 (3/2 · 128).
        for i in 0..128 {
            assert!(rl.get_request(0, Dir::Write, false, &mut *elv, t, &mut fx), "request {i}");
        }
        assert!(rl.congested(Dir::Write) && !rl.congested(Dir::Read));
        assert!(!rl.get_request(1, Dir::Write, false, &mut *elv, t, &mut fx), "full: process 1 sleeps");
        assert!(rl.get_request(1, Dir::Read, true, &mut *elv, t, &mut fx), "reads have their own 128");
        assert!(rl.get_request(0, Dir::Write, false, &mut *elv, t, &mut fx), "the batcher goes on");
        rl.wait(1, Dir::Write);
        rl.wait(2, Dir::Write);
        // One free with the count back below 128 wakes one sleeper.
        rl.freed(Dir::Write, t, &mut fx);
        rl.freed(Dir::Write, t, &mut fx);
        assert_eq!(fx.wake, vec![(1, Wake::Request)]);
        rl.freed(Dir::Write, t, &mut fx);
        assert_eq!(fx.wake, vec![(1, Wake::Request), (2, Wake::Request)]);
    }

    #[test]
    fn batcher_limits_and_the_hard_cap() {
        let mut rl = RequestList::new(16);
        let mut elv = noop_elv();
        let mut fx = Effects::default();
        let t = SimTime::ZERO;
        for _ in 0..16 {
            assert!(rl.get_request(0, Dir::Write, false, &mut *elv, t, &mut fx));
        }
        // Process 0 set itself batching at the 16th: the cap is 24.
        let mut n = 16;
        while rl.get_request(0, Dir::Write, false, &mut *elv, t, &mut fx) {
            n += 1;
        }
        assert_eq!(n, 24, "3/2 · nr_requests");
        // After 20 ms without 32 requests left, process 0 is no batcher.
        let later = SimTime(21_000_000);
        rl.freed(Dir::Write, later, &mut fx);
        assert!(!rl.get_request(0, Dir::Write, false, &mut *elv, later, &mut fx));
    }

    #[test]
    fn congestion_sleepers_wake_when_the_count_drops_below_the_off_mark() {
        let mut rl = RequestList::new(128);
        let mut elv = noop_elv();
        let mut fx = Effects::default();
        let t = SimTime::ZERO;
        for _ in 0..120 {
            rl.get_request(0, Dir::Write, false, &mut *elv, t, &mut fx);
        }
        rl.congestion_wait(7, Dir::Write);
        rl.congestion_wait(8, Dir::Write);
        rl.congestion_wait(9, Dir::Read);
        while rl.count(Dir::Write) > 103 {
            rl.freed(Dir::Write, t, &mut fx);
            assert!(fx.wake.is_empty(), "still congested at {}", rl.count(Dir::Write));
        }
        rl.freed(Dir::Write, t, &mut fx);
        assert_eq!(fx.wake, vec![(7, Wake::Congestion), (8, Wake::Congestion)]);
        assert!(!rl.congested(Dir::Write));
    }
}

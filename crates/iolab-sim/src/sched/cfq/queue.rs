//! One `struct cfq_queue` of CFQ 2.6.20: the requests of one process (a
//! sync queue) or of every process of one priority (an async queue), kept
//! in a sort tree and a FIFO, with the queue's state flags; plus the
//! request choice (`cfq_choose_req`, `cfq_find_next_rq`), the FIFO check
//! (`cfq_check_fifo`) and the per-priority slice and request budgets
//! (`cfq_prio_to_slice`, `cfq_prio_to_maxrq`). ELEVATORS.md section 4.1.

use crate::request::{ProcessId, Request, RequestId};
use crate::time::SimTime;
use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound::{Excluded, Unbounded};

/// Index of a queue in `Cfq::queues`: the async queue of priority `p` is
/// `p`; the sync queue of process `pid` is `PRIO_LEVELS + pid`.
pub(super) type QueueId = usize;

/// Best-effort priority levels (Linux `IOPRIO_BE_NR`, `CFQ_PRIO_LISTS`).
pub const PRIO_LEVELS: usize = 8;

/// The kernel's indices for per-direction counters: `ASYNC` 0, `SYNC` 1.
pub(super) const ASYNC: usize = 0;
pub(super) const SYNC: usize = 1;

/// Linux `rq_is_sync` ([`Request::is_sync`]): a read is always sync; a
/// write when flagged (REQ_RW_SYNC, the simulator's `sync`).
pub(super) fn rq_is_sync(rq: &Request) -> bool {
    rq.is_sync()
}

/// `cfq_prio_to_slice`: `base + base/5·(4 − prio)` (CFQ_SLICE_SCALE 5).
pub(super) fn prio_to_slice_ns(base_ns: u64, prio: u8) -> u64 {
    let step = (base_ns / 5) as i64;
    (base_ns as i64 + step * (4 - prio as i64)).max(0) as u64
}

/// `cfq_prio_to_maxrq`: `2·(base_rq + base_rq·(7 − prio))`, the requests
/// an async queue may dispatch in one slice (16 at prio 4 with base 2).
pub(super) fn prio_to_maxrq(base_rq: u32, prio: u8) -> u32 {
    2 * (base_rq + base_rq * (PRIO_LEVELS as u32 - 1 - prio as u32))
}

/// What `cfq_choose_req` compares against: the head position (the end of
/// the last request put on the dispatch list) and the back-seek rule.
#[derive(Copy, Clone, Debug)]
pub(super) struct SeekRule {
    pub last_sector: u64,
    /// `back_seek_max` in sectors (the KiB tunable times 2).
    pub back_max: u64,
    pub penalty: u64,
}

/// `cfq_choose_req`: which of two requests to serve next. Sync beats
/// async; then the cost from `last_sector`: `s − last` ahead, `penalty ·
/// (last − s)` at most `back_max` behind, else the request "wraps". A
/// non-wrapped request beats a wrapped one; two wrapped ones go lowest
/// sector first; otherwise the lower cost wins, ties to the higher sector.
pub(super) fn choose_req<'a>(
    rule: &SeekRule,
    rq1: Option<&'a Request>,
    rq2: Option<&'a Request>,
) -> Option<&'a Request> {
    let (r1, r2) = match (rq1, rq2) {
        (None, r) => return r,
        (r, None) => return r,
        (Some(a), Some(b)) if a.id == b.id => return Some(b),
        (Some(a), Some(b)) => (a, b),
    };
    match (rq_is_sync(r1), rq_is_sync(r2)) {
        (true, false) => return Some(r1),
        (false, true) => return Some(r2),
        _ => {}
    }
    let cost = |s: u64| -> Option<u64> {
        if s >= rule.last_sector {
            Some(s - rule.last_sector)
        } else if s + rule.back_max >= rule.last_sector {
            Some((rule.last_sector - s) * rule.penalty)
        } else {
            None // wraps
        }
    };
    let (s1, s2) = (r1.sector, r2.sector);
    let pick_1 = match (cost(s1), cost(s2)) {
        (Some(d1), Some(d2)) => d1 < d2 || (d1 == d2 && s1 >= s2),
        (Some(_), None) => true,
        (None, Some(_)) => false,
        (None, None) => s1 <= s2,
    };
    Some(if pick_1 { r1 } else { r2 })
}

/// A FIFO entry. Requests leave the FIFO lazily: an entry whose request
/// is no longer in the sort tree (dispatched, or displaced as an alias)
/// is dropped when it reaches the head.
#[derive(Copy, Clone, Debug)]
struct FifoEntry {
    arrival: SimTime,
    id: RequestId,
    sector: u64,
}

/// Where a queue is linked among the round-robin lists (`cfq_list`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum RrList {
    /// On no list (Linux: the empty list).
    Off,
    /// `rr_list[prio]`.
    Prio(u8),
    /// `busy_rr`: requests still in flight when it was resorted.
    Busy,
    /// `cur_rr`: the priority level being served.
    Cur,
}

/// `struct cfq_queue`, minus what the simulator does not model (merging,
/// request allocation limits, the RT and idle classes).
#[derive(Debug)]
pub(super) struct CfqQueue {
    /// The owning process of a sync queue; `None` for an async queue
    /// (Linux: `key == CFQ_KEY_ASYNC`).
    pub owner: Option<ProcessId>,
    pub ioprio: u8,
    /// `sort_list`, keyed by first sector (one request per sector: an
    /// alias is put on the dispatch list, as `cfq_add_rq_rb` does).
    pub sort: BTreeMap<u64, Request>,
    fifo: VecDeque<FifoEntry>,
    /// The sector of `next_rq`.
    pub next_rq: Option<u64>,
    /// Requests on the dispatch list or in the driver, `[ASYNC, SYNC]`.
    pub on_dispatch: [u32; 2],
    /// `None` until the first dispatch round of the slice sets it.
    pub slice_end: Option<SimTime>,
    pub list: RrList,
    pub on_rr: bool,
    pub wait_request: bool,
    pub must_dispatch: bool,
    pub fifo_expire: bool,
    pub idle_window: bool,
    pub queue_new: bool,
    /// `must_alloc_slice`: `cfq_may_queue` already let this slice's
    /// process allocate past a full request list once.
    pub must_alloc_slice: bool,
}

impl CfqQueue {
    /// A queue as `cfq_get_queue` makes it: idle window on, marked new.
    pub fn new(owner: Option<ProcessId>, ioprio: u8) -> CfqQueue {
        CfqQueue {
            owner,
            ioprio,
            sort: BTreeMap::new(),
            fifo: VecDeque::new(),
            next_rq: None,
            on_dispatch: [0; 2],
            slice_end: None,
            list: RrList::Off,
            on_rr: false,
            wait_request: false,
            must_dispatch: false,
            fifo_expire: false,
            idle_window: true,
            queue_new: true,
            must_alloc_slice: false,
        }
    }

    /// `cfq_cfqq_class_sync`.
    pub fn class_sync(&self) -> bool {
        self.owner.is_some()
    }

    /// `cfq_cfqq_sync`: a sync queue, or one with sync requests in flight.
    pub fn is_sync(&self) -> bool {
        self.class_sync() || self.on_dispatch[SYNC] > 0
    }

    /// `cfq_cfqq_dispatched`.
    pub fn dispatched(&self) -> u32 {
        self.on_dispatch[ASYNC] + self.on_dispatch[SYNC]
    }

    /// `sort_list` insertion; the caller has already moved any alias out.
    pub fn add_sorted(&mut self, rq: Request) {
        let old = self.sort.insert(rq.sector, rq);
        debug_assert!(old.is_none(), "alias left in the sort tree");
        self.fifo.push_back(FifoEntry { arrival: rq.arrival, id: rq.id, sector: rq.sector });
    }

    /// Take a request out of the sort tree (`cfq_del_rq_rb`; the FIFO
    /// entry goes stale). An empty tree drops every stale FIFO entry.
    pub fn remove_sorted(&mut self, sector: u64) -> Request {
        let rq = self.sort.remove(&sector).expect("request not in its queue");
        if self.sort.is_empty() {
            self.fifo.clear();
        }
        rq
    }

    /// `cfq_check_fifo`: at most one FIFO-expired request per slice. The
    /// `fifo_expire` flag is set when one is found and cleared when the
    /// queue next becomes active. Expired means `now > arrival + expire`.
    pub fn check_fifo(&mut self, now: SimTime, expire_ns: u64) -> Option<u64> {
        if self.fifo_expire {
            return None;
        }
        while let Some(head) = self.fifo.front() {
            if self.sort.get(&head.sector).is_some_and(|r| r.id == head.id) {
                break;
            }
            self.fifo.pop_front();
        }
        let head = self.fifo.front()?;
        if now > head.arrival + expire_ns {
            self.fifo_expire = true;
            return Some(head.sector);
        }
        None
    }

    /// `cfq_find_next_rq`: the request to serve after `last` (still in the
    /// tree): the better of its successor (the first request when there is
    /// none, unless that is `last` itself) and its predecessor.
    pub fn find_next_rq(&self, rule: &SeekRule, last: u64) -> Option<u64> {
        let prev = self.sort.range(..last).next_back().map(|(_, r)| r);
        let next = self
            .sort
            .range((Excluded(last), Unbounded))
            .next()
            .or_else(|| self.sort.iter().next().filter(|(&s, _)| s != last))
            .map(|(_, r)| r);
        choose_req(rule, next, prev).map(|r| r.sector)
    }

    /// A queued request grew (a merge): its tree entry (if it is still in
    /// the tree), FIFO entry and, if it was `next_rq`, that too follow it.
    /// A FIFO emptied while the request was out of the tree (its aliases
    /// dispatched: the tree was empty for a moment) gets the request's
    /// entry back: it is the only request queued then, so the FIFO holds it
    /// alone.
    pub fn replace_sorted(&mut self, old: &Request, new: Request) {
        if old.sector != new.sector {
            self.sort.remove(&old.sector);
            if self.next_rq == Some(old.sector) {
                self.next_rq = Some(new.sector);
            }
            match self.fifo.iter_mut().find(|f| f.id == old.id) {
                Some(f) => f.sector = new.sector,
                None => self.fifo.push_back(FifoEntry { arrival: old.arrival, id: old.id, sector: new.sector }),
            }
        }
        self.sort.insert(new.sector, new);
    }

    /// `cfq_merged_requests`' FIFO rule: if `next` is older, `rq` (now
    /// `merged`, with `next`'s start time) takes its place in the FIFO.
    pub fn take_fifo_place(&mut self, rq: &Request, merged: &Request, next: &Request) {
        let (Some(r), Some(n)) =
            (self.fifo.iter().position(|f| f.id == rq.id), self.fifo.iter().position(|f| f.id == next.id))
        else {
            return;
        };
        if next.arrival < rq.arrival {
            self.fifo[n] = FifoEntry { arrival: next.arrival, id: rq.id, sector: merged.sector };
            self.fifo.remove(r);
        }
    }

    /// The `next_rq` request.
    pub fn next_request(&self) -> Option<&Request> {
        self.next_rq.and_then(|s| self.sort.get(&s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::Dir;

    fn rq(id: u32, sector: u64, sync: bool) -> Request {
        Request {
            id,
            pid: 0,
            sector,
            nr_sectors: 8,
            dir: if sync { Dir::Read } else { Dir::Write },
            sync,
            arrival: SimTime(id as u64 * 1000),
        }
    }

    const RULE: SeekRule = SeekRule { last_sector: 10_000, back_max: 32_768, penalty: 2 };

    fn pick(rule: &SeekRule, a: &Request, b: &Request) -> u32 {
        choose_req(rule, Some(a), Some(b)).unwrap().id
    }

    #[test]
    fn slice_scales_with_priority() {
        let sync = 100_000_000;
        assert_eq!(prio_to_slice_ns(sync, 0), 180_000_000);
        assert_eq!(prio_to_slice_ns(sync, 4), 100_000_000);
        assert_eq!(prio_to_slice_ns(sync, 7), 40_000_000);
        assert_eq!(prio_to_slice_ns(40_000_000, 4), 40_000_000);
        assert_eq!(prio_to_slice_ns(40_000_000, 0), 72_000_000);
    }

    #[test]
    fn async_request_budget_is_four_times_eight_minus_prio() {
        for prio in 0..8u8 {
            assert_eq!(prio_to_maxrq(2, prio), 4 * (8 - prio as u32));
        }
    }

    #[test]
    fn choose_prefers_ahead_then_penalised_back_seek() {
        // 100 ahead costs 100; 60 behind costs 120: ahead wins.
        assert_eq!(pick(&RULE, &rq(1, 10_100, true), &rq(2, 9_940, true)), 1);
        // 40 behind costs 80 < 100 ahead: the back seek wins.
        assert_eq!(pick(&RULE, &rq(1, 10_100, true), &rq(2, 9_960, true)), 2);
        // Equal cost (100 ahead, 50 behind): the higher sector.
        assert_eq!(pick(&RULE, &rq(1, 9_950, true), &rq(2, 10_100, true)), 2);
        assert_eq!(pick(&RULE, &rq(1, 10_100, true), &rq(2, 9_950, true)), 1);
        // The penalty is a tunable: with 1, 60 behind beats 100 ahead.
        let flat = SeekRule { penalty: 1, ..RULE };
        assert_eq!(pick(&flat, &rq(1, 10_100, true), &rq(2, 9_940, true)), 2);
    }

    #[test]
    fn choose_wraps_beyond_back_max() {
        // back_max 32768 sectors (16384 KiB): 40000 behind wraps, so any
        // request ahead wins, however far.
        let rule = SeekRule { last_sector: 50_000, ..RULE };
        let behind = rq(1, 10_000, true); // 40000 behind: wraps
        let ahead = rq(2, 1_000_000, true);
        assert_eq!(pick(&rule, &behind, &ahead), 2);
        assert_eq!(pick(&rule, &ahead, &behind), 2);
        // Exactly back_max behind does not wrap: cost 2·32768 < 950000.
        let edge = rq(3, 50_000 - 32_768, true);
        assert_eq!(pick(&rule, &edge, &ahead), 3);
        // Both wrapped: the lower sector (one long back seek).
        assert_eq!(pick(&rule, &rq(4, 5_000, true), &rq(5, 1_000, true)), 5);
    }

    #[test]
    fn choose_prefers_sync_and_handles_missing() {
        assert_eq!(pick(&RULE, &rq(1, 10_000, false), &rq(2, 900_000, true)), 2);
        let a = rq(1, 5, true);
        assert_eq!(choose_req(&RULE, None, Some(&a)).unwrap().id, 1);
        assert_eq!(choose_req(&RULE, Some(&a), None).unwrap().id, 1);
        assert!(choose_req(&RULE, None, None).is_none());
    }

    #[test]
    fn find_next_takes_successor_predecessor_or_first() {
        let mut q = CfqQueue::new(Some(0), 4);
        for (i, s) in [1_000u64, 9_990, 10_050].into_iter().enumerate() {
            q.add_sorted(rq(i as u32, s, true));
        }
        // After 9990 (head at 10000): successor 10050 costs 50, predecessor
        // 1000 is 9000 behind, cost 18000.
        assert_eq!(q.find_next_rq(&RULE, 9_990), Some(10_050));
        // After the last one the successor wraps to the first (1000),
        // compared with the predecessor 9990 (cost 20): 9990.
        assert_eq!(q.find_next_rq(&RULE, 10_050), Some(9_990));
        // A single request has no next.
        let mut one = CfqQueue::new(Some(0), 4);
        one.add_sorted(rq(7, 42, true));
        assert_eq!(one.find_next_rq(&RULE, 42), None);
    }

    #[test]
    fn fifo_returns_one_expired_request_per_slice() {
        let mut q = CfqQueue::new(Some(0), 4);
        q.add_sorted(rq(1, 500, true)); // arrival 1 µs
        q.add_sorted(rq(2, 100, true)); // arrival 2 µs
        let expire = 125_000_000;
        assert_eq!(q.check_fifo(SimTime(1_000 + expire), expire), None, "not after the deadline");
        assert_eq!(q.check_fifo(SimTime(1_001 + expire), expire), Some(500));
        assert!(q.fifo_expire);
        // Still expired, but the flag holds it off until the next slice.
        q.remove_sorted(500);
        assert_eq!(q.check_fifo(SimTime(10 * expire), expire), None);
        q.fifo_expire = false;
        // The stale head (500, dispatched) is skipped.
        assert_eq!(q.check_fifo(SimTime(10 * expire), expire), Some(100));
    }

    #[test]
    fn removing_the_last_request_clears_the_fifo() {
        let mut q = CfqQueue::new(None, 4);
        q.add_sorted(rq(1, 8, false));
        q.add_sorted(rq(2, 16, false));
        q.remove_sorted(8);
        assert_eq!(q.fifo.len(), 2, "stale entries are dropped lazily");
        q.remove_sorted(16);
        assert!(q.fifo.is_empty());
        assert!(!q.class_sync() && !q.is_sync());
    }
}

//! The dispatch path of CFQ 2.6.20: `cfq_dispatch_requests`,
//! `cfq_select_queue`, `__cfq_dispatch_requests`, `cfq_dispatch_insert`,
//! `cfq_set_active_queue` and `cfq_slice_expired`.

use super::queue::{prio_to_maxrq, prio_to_slice_ns, rq_is_sync, QueueId, ASYNC, SYNC};
use super::Cfq;
use crate::request::Request;
use crate::time::SimTime;

impl Cfq {
    /// The slice is over: `time_after(now, slice_end)`. A slice not yet
    /// started (no round dispatched) is not over.
    pub(super) fn slice_used(&self, id: QueueId, now: SimTime) -> bool {
        self.queues[id].slice_end.is_some_and(|end| now > end)
    }

    /// `cfq_set_active_queue` and `__cfq_set_active_queue`: the slice end
    /// is set by the first round, and the FIFO may be checked again.
    fn set_active_queue(&mut self) -> Option<QueueId> {
        let id = self.rr.pick(&mut self.queues);
        if let Some(id) = id {
            let q = &mut self.queues[id];
            q.slice_end = None;
            q.fifo_expire = false;
            q.must_alloc_slice = false;
        }
        self.active = id;
        id
    }

    /// `cfq_slice_expired` (`__cfq_slice_expired`, not preempted): stop
    /// idling, clear the slice flags, put the queue back on the rr lists.
    pub(super) fn slice_expired(&mut self) {
        let Some(id) = self.active else { return };
        let q = &mut self.queues[id];
        if q.wait_request {
            self.idle_timer = None;
        }
        q.must_dispatch = false;
        q.wait_request = false;
        q.queue_new = false;
        if q.on_rr {
            self.rr.resort(&mut self.queues, id);
        }
        self.active = None;
        self.active_cic = None;
        self.dispatch_slice = 0;
    }

    /// `cfq_select_queue`: keep the active queue while its slice lasts and
    /// it has requests; with none queued, wait for those in flight, or
    /// idle for a sync one; otherwise expire it and take the next.
    fn select_queue(&mut self, now: SimTime) -> Option<QueueId> {
        if let Some(id) = self.active {
            let q = &self.queues[id];
            if q.must_dispatch || !self.slice_used(id, now) {
                if !q.sort.is_empty() {
                    return Some(id);
                }
                if q.dispatched() > 0 {
                    return None;
                }
                if q.class_sync() && self.arm_slice_timer(id, now) {
                    return None;
                }
            }
            self.slice_expired();
        }
        self.set_active_queue()
    }

    /// `cfq_dispatch_requests` (not forced): rounds from successive
    /// queues onto the dispatch list, until a queue repeats or one that
    /// idles is still active. Returns the requests moved.
    pub(super) fn dispatch_requests(&mut self, now: SimTime) -> u32 {
        if self.rr.busy_queues == 0 {
            return 0;
        }
        let mut dispatched = 0;
        let mut prev = None;
        while let Some(id) = self.select_queue(now) {
            if prev == Some(id) {
                break;
            }
            let q = &mut self.queues[id];
            q.must_dispatch = false;
            q.wait_request = false;
            self.idle_timer = None;
            dispatched += self.dispatch_round(id, self.p.quantum, now);
            if self.queues[id].idle_window && self.active.is_some() {
                break;
            }
            prev = Some(id);
        }
        dispatched
    }

    /// `__cfq_dispatch_requests`: up to `max` requests of the active
    /// queue, each the FIFO's expired head (once per slice) or `next_rq`.
    /// The first round starts the slice. An async queue expires once it
    /// has dispatched `cfq_prio_to_maxrq` requests in the slice, and a
    /// queue without an idle window after every round.
    fn dispatch_round(&mut self, id: QueueId, max: u32, now: SimTime) -> u32 {
        let mut n = 0;
        loop {
            let q = &mut self.queues[id];
            let expire = self.p.fifo_expire_ns[q.class_sync() as usize];
            let sector = match q.check_fifo(now, expire) {
                Some(s) => s,
                None => q.next_rq.expect("a busy queue has a next request"),
            };
            let rq = q.sort[&sector];
            self.dispatch_insert(id, rq);
            self.dispatch_slice += 1;
            n += 1;
            if self.active_cic.is_none() {
                self.active_cic = Some(rq.pid);
            }
            if self.queues[id].sort.is_empty() || n >= max {
                break;
            }
        }
        let q = &mut self.queues[id];
        if q.slice_end.is_none() {
            let base = self.p.slice_ns[q.is_sync() as usize];
            q.slice_end = Some(now + prio_to_slice_ns(base, q.ioprio));
        }
        let async_spent =
            !q.is_sync() && self.dispatch_slice >= prio_to_maxrq(self.p.slice_async_rq, q.ioprio);
        if async_spent || !q.idle_window {
            self.slice_expired();
        }
        n
    }

    /// `cfq_dispatch_insert` with `cfq_remove_request`: `next_rq` moves on
    /// first (judged from the head position before this request), then the
    /// request leaves the tree for the sorted dispatch list, whose tail
    /// gives the new head position.
    pub(super) fn dispatch_insert(&mut self, id: QueueId, rq: Request) {
        let rule = self.seek_rule();
        let q = &mut self.queues[id];
        if q.next_rq == Some(rq.sector) {
            q.next_rq = q.find_next_rq(&rule, rq.sector);
        }
        q.remove_sorted(rq.sector);
        self.nr_sorted -= 1;
        q.on_dispatch[if rq_is_sync(&rq) { SYNC } else { ASYNC }] += 1;
        if q.on_rr && q.sort.is_empty() {
            self.rr.del(&mut self.queues, id);
        }
        self.dlist.sort_insert(rq);
        self.last_sector = self.dlist.back().map_or(0, |r| r.end_sector());
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::{sync_queue, Cfq};
    use crate::request::{ProcessId, Request};
    use crate::sched::{Dispatch, Elevator};
    use crate::time::SimTime;

    /// Insert `n` sequential reads of `pid` from `sector`, ids from `id0`.
    fn reads(c: &mut Cfq, pid: ProcessId, id0: u32, sector: u64, n: u32, at: SimTime) {
        for i in 0..n {
            c.insert(read(id0 + i, pid, sector + 8 * i as u64, at), at);
        }
    }

    /// Take and complete one request at `now`.
    fn serve(c: &mut Cfq, now: SimTime) -> Request {
        let rq = take(c, now);
        c.completed(&rq, now);
        rq
    }

    #[test]
    fn a_round_moves_at_most_quantum_requests() {
        let mut c = cfq();
        reads(&mut c, 0, 0, 1_000, 10, ms(0));
        take(&mut c, ms(0));
        assert_eq!(c.dlist.len(), 3, "four moved, one handed out");
        assert_eq!(c.queues[sync_queue(0)].sort.len(), 6);
        for _ in 0..3 {
            take(&mut c, ms(0));
        }
        // The list is empty: the next call runs the next round.
        take(&mut c, ms(0));
        assert_eq!(c.queues[sync_queue(0)].sort.len(), 2);
        assert_eq!(c.dlist.len(), 3);
        assert_eq!(c.queued(), 5);
    }

    #[test]
    fn quantum_is_a_tunable() {
        let mut p = super::super::Params::defaults();
        p.quantum = 1;
        let mut c = Cfq::new(p);
        reads(&mut c, 0, 0, 1_000, 3, ms(0));
        take(&mut c, ms(0));
        assert_eq!(c.dlist.len(), 0);
        assert_eq!(c.queues[sync_queue(0)].sort.len(), 2);
    }

    fn quantum_one() -> Cfq {
        let mut p = super::super::Params::defaults();
        p.quantum = 1;
        Cfq::new(p)
    }

    #[test]
    fn fifo_is_served_once_per_slice() {
        let mut c = quantum_one();
        // All queued at once (short think times keep the idle window on,
        // so the slice lasts): two far up the disk, three near the start.
        c.insert(read(0, 0, 500_000, ms(0)), ms(0));
        c.insert(read(1, 0, 400_000, ms(1)), ms(1));
        reads(&mut c, 0, 10, 1_000, 3, ms(1));
        // At 200 ms all are past fifo_expire_sync (125 ms).
        let first = serve(&mut c, ms(200));
        assert_eq!(first.id, 0, "the FIFO head");
        // The other expired ones wait: next_rq (1000) and the sort order.
        let order: Vec<u32> = (0..4).map(|_| serve(&mut c, ms(201)).id).collect();
        assert_eq!(order, vec![10, 11, 12, 1]);
    }

    #[test]
    fn fifo_is_checked_again_in_the_next_slice() {
        let mut c = quantum_one();
        c.insert(read(0, 0, 900_000, ms(0)), ms(0));
        c.insert(read(1, 0, 800_000, ms(1)), ms(1));
        reads(&mut c, 0, 10, 1_000, 20, ms(1));
        assert_eq!(serve(&mut c, ms(150)).id, 0, "slice 150..250 ms");
        assert_eq!(serve(&mut c, ms(151)).id, 10);
        let rq = take(&mut c, ms(249));
        assert_eq!(rq.id, 11);
        c.completed(&rq, ms(260));
        assert_eq!(c.active, None, "the completion after the slice end expires it");
        assert_eq!(serve(&mut c, ms(261)).id, 1, "new slice: the FIFO head first");
    }

    #[test]
    fn next_request_follows_the_head_with_back_seek_penalty() {
        let mut c = quantum_one();
        // Head at 10008 after the first. Candidates: 10200 ahead (cost
        // 192) and 9900 behind (cost 2·108 = 216): ahead first.
        c.insert(read(0, 0, 10_000, ms(0)), ms(0));
        serve(&mut c, ms(0));
        c.insert(read(1, 0, 10_200, ms(1)), ms(1));
        c.insert(read(2, 0, 9_900, ms(1)), ms(1));
        assert_eq!(serve(&mut c, ms(1)).id, 1);
        assert_eq!(serve(&mut c, ms(1)).id, 2);
    }

    /// After one request ending at 100008, which of a request `behind`
    /// sectors back and one far ahead is served first.
    fn after_back_seek_of(behind: u64) -> u32 {
        let mut c = quantum_one();
        c.insert(read(0, 0, 100_000, ms(0)), ms(0));
        serve(&mut c, ms(0));
        c.insert(read(1, 0, 100_008 - behind, ms(1)), ms(1));
        c.insert(read(2, 0, 5_000_000, ms(1)), ms(1));
        serve(&mut c, ms(1)).id
    }

    #[test]
    fn backward_seeks_beyond_back_max_wrap() {
        // back_seek_max 16384 KiB = 32768 sectors. 40000 behind wraps and
        // loses to a request far ahead; 30000 behind costs 60000 and wins.
        assert_eq!(after_back_seek_of(40_000), 2);
        assert_eq!(after_back_seek_of(30_000), 1);
        assert_eq!(after_back_seek_of(32_768), 1, "exactly back_max behind does not wrap");
    }

    #[test]
    fn sync_slices_last_180_100_40_ms_by_priority() {
        for (prio, slice_ms) in [(0u8, 180u64), (4, 100), (7, 40)] {
            let mut c = cfq();
            c.set_ioprio(0, prio);
            reads(&mut c, 0, 0, 1_000, 2, ms(5));
            take(&mut c, ms(5));
            assert_eq!(c.queues[sync_queue(0)].slice_end, Some(ms(5 + slice_ms)), "prio {prio}");
        }
    }

    #[test]
    fn a_slice_ends_at_the_first_dispatch_after_its_end() {
        let mut c = quantum_one();
        reads(&mut c, 0, 0, 1_000, 8, ms(0));
        assert_eq!(serve(&mut c, ms(0)).pid, 0, "slice 0..100 ms");
        c.insert(read(100, 1, 900_000, ms(0)), ms(0));
        for t in [30, 60, 90] {
            assert_eq!(serve(&mut c, ms(t)).pid, 0);
        }
        assert_eq!(serve(&mut c, ms(100)).pid, 0, "100 ms is not after the end");
        assert_eq!(serve(&mut c, SimTime(100_000_001)).pid, 1);
    }

    /// pid 0 writes 40 requests; once its async queue is active, pid 1
    /// reads. The pids of the first `n` requests served.
    fn async_then_reader(prio: u8, n: usize) -> Vec<u32> {
        let mut c = cfq();
        c.set_ioprio(0, prio);
        for i in 0..40u32 {
            c.insert(write(i, 0, 1_000 + 8 * i as u64, ms(0)), ms(0));
        }
        let mut pids = vec![serve(&mut c, ms(1)).pid];
        c.insert(read(100, 1, 900_000, ms(1)), ms(1));
        pids.extend((1..n).map(|_| serve(&mut c, ms(1)).pid));
        pids
    }

    #[test]
    fn async_queue_expires_after_four_times_eight_minus_prio_requests() {
        let pids = async_then_reader(4, 17);
        assert_eq!(&pids[..16], &[0; 16], "16 writes in four rounds");
        assert_eq!(pids[16], 1);
        let pids = async_then_reader(6, 9);
        assert_eq!(pids, vec![0, 0, 0, 0, 0, 0, 0, 0, 1], "4·(8-6) = 8");
    }

    #[test]
    fn without_an_idle_window_a_queue_expires_after_each_round() {
        let mut c = cfq();
        reads(&mut c, 0, 0, 1_000, 8, ms(0));
        c.queues[sync_queue(0)].idle_window = false;
        take(&mut c, ms(0));
        // The round expired the slice; the loop picked the same queue
        // again and stopped there (no repeat), its new slice unstarted.
        assert_eq!(c.dlist.len(), 3);
        assert_eq!(c.active, Some(sync_queue(0)));
        assert_eq!(c.queues[sync_queue(0)].slice_end, None);
        // With the idle window the slice goes on.
        let mut d = cfq();
        reads(&mut d, 0, 0, 1_000, 8, ms(0));
        take(&mut d, ms(0));
        assert_eq!(d.queues[sync_queue(0)].slice_end, Some(ms(100)));
    }

    #[test]
    fn rounds_of_queues_without_idle_window_share_one_dispatch_call() {
        let mut c = cfq();
        reads(&mut c, 0, 0, 1_000, 2, ms(0));
        reads(&mut c, 1, 10, 500_000, 2, ms(0));
        c.queues[sync_queue(0)].idle_window = false;
        c.queues[sync_queue(1)].idle_window = false;
        take(&mut c, ms(0));
        assert_eq!(c.dlist.len(), 3, "both queues' rounds moved at once");
        assert_eq!(c.queued(), 3);
    }

    #[test]
    fn nothing_queued_means_nothing_to_dispatch() {
        let mut c = cfq();
        assert_eq!(c.dispatch(ms(0)), Dispatch::Nothing);
        assert_eq!(c.queued(), 0);
    }
}

//! Idling in CFQ 2.6.20: `cfq_update_idle_window` (whether a queue may
//! idle at all), `cfq_arm_slice_timer` (how long to wait for the next
//! request of an emptied sync queue) and `cfq_idle_slice_timer` (what to
//! do when the wait ends). This is not AS anticipation: it never looks at
//! other processes' requests, and it is not counted in the Table 1
//! statistics.

use super::ioc::sample_valid;
use super::queue::QueueId;
use super::{Cfq, SEEKY_IDLE_NS};
use crate::time::SimTime;

impl Cfq {
    /// `cfq_update_idle_window`, on each sync request of `pid`: off if the
    /// task exited, `slice_idle` is 0, or the device queues (hw_tag) and
    /// the process is seeky; otherwise, once its think time has valid
    /// samples, on iff `ttime_mean ≤ slice_idle`. Until then it keeps its
    /// value (a new queue starts with it on).
    pub(super) fn update_idle_window(&mut self, id: QueueId, pid: usize) {
        let cic = &self.ioc[pid];
        let q = &mut self.queues[id];
        if cic.exited || self.p.slice_idle_ns == 0 || (self.hw_tag && cic.seeky()) {
            q.idle_window = false;
        } else if sample_valid(cic.ttime_samples) {
            q.idle_window = cic.ttime_mean <= self.p.slice_idle_ns;
        }
    }

    /// `cfq_arm_slice_timer`: the active sync queue is empty; wait for its
    /// process's next request for `slice_idle`, or at most 2 ms if it is
    /// seeky (valid seek samples, mean above 128 Ki sectors). No wait if
    /// idling is off, the queue has no idle window, or the task exited.
    /// Arming again moves the deadline (`mod_timer`).
    ///
    /// The full `slice_idle`, even past the end of the slice: 2.6.20 writes
    /// `sl = min(cfqq->slice_end - 1, cfq_slice_idle)`, which compares an
    /// absolute jiffies value (`slice_end`) with a duration, so the minimum
    /// is `slice_idle` (and `slice_end` 0, a slice not started, wraps to
    /// ULONG_MAX). The timer then finds the slice used and expires it
    /// (`cfq_idle_slice_timer`). Issue 9; ELEVATORS.md 4.1's "min(slice_idle,
    /// remaining)" is what the line was meant to do, not what it does.
    pub(super) fn arm_slice_timer(&mut self, id: QueueId, now: SimTime) -> bool {
        if self.p.slice_idle_ns == 0 || !self.queues[id].idle_window {
            return false;
        }
        let Some(pid) = self.active_cic else { return false };
        let cic = &self.ioc[pid as usize];
        if cic.exited {
            return false;
        }
        let q = &mut self.queues[id];
        q.must_dispatch = true;
        q.wait_request = true;
        let mut sl = self.p.slice_idle_ns;
        if sample_valid(cic.seek_samples) && cic.seeky() {
            sl = sl.min(SEEKY_IDLE_NS);
        }
        self.idle_timer = Some(now + sl);
        true
    }

    /// The engine's timer call: run the idle timer if it is due. A call
    /// for a timer since cancelled or moved later is ignored.
    pub(super) fn timer_due(&mut self, now: SimTime) {
        if let Some(at) = self.idle_timer.filter(|&at| at <= now) {
            self.idle_slice_timer(at);
        }
    }

    /// `cfq_idle_slice_timer`, fired at `at`: the slice is used up →
    /// expire; no other queue has requests → keep waiting (no new timer;
    /// the next request of any queue decides); the queue got a request →
    /// let it dispatch; otherwise → expire.
    fn idle_slice_timer(&mut self, at: SimTime) {
        self.idle_timer = None;
        if let Some(id) = self.active {
            if !self.slice_used(id, at) {
                if self.rr.busy_queues == 0 {
                    return;
                }
                if !self.queues[id].sort.is_empty() {
                    self.queues[id].must_dispatch = true;
                    return;
                }
            }
        }
        self.slice_expired();
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::{sync_queue, Cfq, Params};
    use crate::request::{ProcessId, Request};
    use crate::sched::{Dispatch, Elevator};
    use crate::time::{SimTime, NS_PER_MS};

    /// Serve pid's one request at `at` and complete it `svc_ms` later.
    fn one(c: &mut Cfq, id: u32, pid: ProcessId, sector: u64, at: SimTime, svc_ms: u64) -> Request {
        c.insert(read(id, pid, sector, at), at);
        let rq = take(c, at);
        c.completed(&rq, SimTime(at.0 + svc_ms * NS_PER_MS));
        rq
    }

    /// A sequential reader from `start`: `n` requests, each served in
    /// 1 ms, then `think_ms` of think time; returns the time it ends.
    fn reader(c: &mut Cfq, pid: ProcessId, start: SimTime, n: u32, think_ms: u64) -> SimTime {
        let mut t = start;
        for i in 0..n {
            let rq = one(c, i, pid, 1_000 + 8 * i as u64, t, 1);
            assert_eq!(rq.pid, pid);
            t = SimTime(t.0 + (1 + think_ms) * NS_PER_MS);
        }
        t
    }

    #[test]
    fn idle_window_on_iff_think_time_within_slice_idle() {
        // A steady think x gives a mean of about 256/249·x (the decayed
        // sample count stops at 249), so 8 ms of thinking is just over.
        for (think, on) in [(0u64, true), (5, true), (7, true), (8, false), (10, false), (30, false)] {
            let mut c = cfq();
            reader(&mut c, 0, ms(0), 20, think);
            let mean = c.ioc[0].ttime_mean;
            assert_eq!(mean <= 8 * NS_PER_MS, on, "think {think} ms, mean {mean}");
            assert_eq!(c.queues[sync_queue(0)].idle_window, on, "think {think} ms, mean {mean}");
        }
    }

    #[test]
    fn idle_window_keeps_its_value_until_samples_are_valid() {
        let mut c = cfq();
        // Samples 0 and 16 ms (30 capped at 2·slice_idle): 32, 60, not valid.
        let t = reader(&mut c, 0, ms(0), 2, 30);
        assert!(c.ioc[0].ttime_mean > 8 * NS_PER_MS / 2);
        assert!(c.queues[sync_queue(0)].idle_window);
        reader(&mut c, 0, t, 1, 0);
        assert!(!c.queues[sync_queue(0)].idle_window, "the third sample decides");
    }

    #[test]
    fn idle_window_off_without_slice_idle_or_after_exit() {
        let mut p = Params::defaults();
        p.slice_idle_ns = 0;
        let mut c = Cfq::new(p);
        reader(&mut c, 0, ms(0), 1, 0);
        assert!(!c.queues[sync_queue(0)].idle_window);
        let mut d = cfq();
        d.insert(read(0, 0, 100, ms(0)), ms(0));
        d.exit_process(0, ms(0));
        d.insert(read(1, 0, 108, ms(0)), ms(0));
        assert!(!d.queues[sync_queue(0)].idle_window);
    }

    #[test]
    fn idle_window_off_for_seeky_processes_only_with_hw_tag() {
        for hw_tag in [false, true] {
            let mut c = cfq();
            c.hw_tag = hw_tag;
            for i in 0..5u32 {
                // 100 Mi sectors apart: seeky.
                one(&mut c, i, 0, (i as u64 % 2) * (100 << 20), ms(2 * i as u64), 1);
            }
            assert!(c.ioc[0].seeky());
            assert_eq!(c.queues[sync_queue(0)].idle_window, !hw_tag);
        }
    }

    #[test]
    fn arms_slice_idle_when_the_active_sync_queue_empties() {
        let mut c = cfq();
        let rq = one(&mut c, 0, 0, 1_000, ms(0), 3);
        assert_eq!(rq.pid, 0);
        assert_eq!(c.idle_timer, Some(ms(3 + 8)));
        assert_eq!(c.dispatch(ms(3)), Dispatch::IdleUntil(ms(11)));
        assert!(c.queues[sync_queue(0)].wait_request);
    }

    /// Issue 9: 2.6.20 waits the full `slice_idle` even when the slice
    /// ends sooner (see `arm_slice_timer`); the timer then expires the
    /// used slice.
    #[test]
    fn idle_is_the_full_slice_idle_even_past_the_slice_end() {
        let mut c = cfq();
        c.insert(read(0, 0, 1_000, ms(0)), ms(0));
        let rq = take(&mut c, ms(0)); // slice ends at 100 ms
        c.completed(&rq, ms(95));
        assert_eq!(c.idle_timer, Some(ms(103)), "95 + slice_idle, not the 5 ms left");
        c.insert(read(1, 1, 900_000, ms(96)), ms(96));
        c.timer(ms(103));
        assert_eq!(c.active, None, "the timer finds the slice used: expired");
        assert_eq!(take(&mut c, ms(103)).pid, 1);
    }

    #[test]
    fn seeky_processes_idle_two_ms() {
        let mut c = cfq();
        for i in 0..4u64 {
            // 100 Mi sectors back and forth, 1 ms of think time: the next
            // request cancels each wait.
            one(&mut c, i as u32, 0, (i % 2) * (100 << 20), ms(2 * i), 1);
            let wait = if i >= 2 { 2 } else { 8 };
            assert_eq!(c.idle_timer, Some(ms(2 * i + 1 + wait)), "request {i}");
            assert_eq!(c.ioc[0].seek_samples > 80, i >= 2, "valid from the third sample");
        }
        assert!(c.ioc[0].seeky());
        assert!(c.queues[sync_queue(0)].idle_window, "no hw_tag: seeky keeps the window");
    }

    #[test]
    fn no_idling_while_the_queue_has_requests_in_flight() {
        let mut c = cfq();
        // New queues are linked ahead of the first new one: pid 0 first.
        c.insert(read(2, 1, 900_000, ms(0)), ms(0));
        c.insert(read(0, 0, 1_000, ms(0)), ms(0));
        c.insert(read(1, 0, 1_008, ms(0)), ms(0));
        let a = take(&mut c, ms(0));
        let b = take(&mut c, ms(0));
        assert_eq!((a.pid, b.pid), (0, 0));
        // Queue 0 is empty but has two in the driver: wait for them, no
        // timer, and no other queue is started.
        assert_eq!(c.dispatch(ms(1)), Dispatch::Nothing);
        assert_eq!(c.idle_timer, None);
        c.completed(&a, ms(2));
        c.completed(&b, ms(3));
        assert_eq!(c.dispatch(ms(3)), Dispatch::IdleUntil(ms(11)));
    }

    #[test]
    fn async_queues_never_idle() {
        let mut c = cfq();
        c.insert(write(0, 0, 1_000, ms(0)), ms(0));
        let w = take(&mut c, ms(0));
        c.insert(read(1, 1, 900_000, ms(0)), ms(0));
        c.completed(&w, ms(1));
        assert_eq!(c.idle_timer, None);
        assert_eq!(take(&mut c, ms(1)).pid, 1);
    }

    #[test]
    fn a_request_during_the_wait_is_dispatched_at_once() {
        let mut c = cfq();
        c.insert(read(9, 1, 900_000, ms(0)), ms(0)); // another busy queue
        let first = take(&mut c, ms(0));
        c.completed(&first, ms(1));
        // pid 1's queue is empty now and waits until 9 ms.
        assert_eq!(c.idle_timer, Some(ms(9)));
        c.insert(read(0, 0, 5_000, ms(2)), ms(2)); // another process
        assert_eq!(c.dispatch(ms(2)), Dispatch::IdleUntil(ms(10)), "re-armed: mod_timer");
        c.insert(read(1, 1, 900_008, ms(3)), ms(3)); // its own
        assert_eq!(c.idle_timer, None);
        assert!(c.queues[sync_queue(1)].must_dispatch);
        assert_eq!(take(&mut c, ms(3)).id, 1);
        c.timer(ms(10)); // the cancelled timer: ignored
        assert_eq!(c.active, Some(sync_queue(1)));
    }

    #[test]
    fn timer_expires_the_slice_when_others_wait() {
        let mut c = cfq();
        let rq = one(&mut c, 0, 0, 1_000, ms(0), 1);
        assert_eq!(rq.pid, 0);
        c.insert(read(1, 1, 900_000, ms(2)), ms(2));
        assert_eq!(c.dispatch(ms(2)), Dispatch::IdleUntil(ms(10)));
        c.timer(ms(10));
        assert_eq!(c.active, None);
        assert_eq!(take(&mut c, ms(10)).pid, 1);
    }

    #[test]
    fn timer_keeps_waiting_when_no_other_queue_is_busy() {
        let mut c = cfq();
        one(&mut c, 0, 0, 1_000, ms(0), 1);
        assert_eq!(c.dispatch(ms(1)), Dispatch::IdleUntil(ms(9)));
        c.timer(ms(9));
        assert_eq!(c.active, Some(sync_queue(0)), "still the active queue");
        assert!(c.queues[sync_queue(0)].wait_request);
        assert_eq!(c.dispatch(ms(9)), Dispatch::Nothing, "no new timer");
        // Its next request, however late, is served within the slice.
        c.insert(read(1, 0, 1_008, ms(50)), ms(50));
        assert_eq!(take(&mut c, ms(50)).id, 1);
    }

    #[test]
    fn after_keeping_on_waiting_another_queue_gets_the_disk_after_a_new_wait() {
        let mut c = cfq();
        one(&mut c, 0, 0, 1_000, ms(0), 1);
        c.timer(ms(9)); // keep waiting
        c.insert(read(1, 1, 900_000, ms(30)), ms(30));
        // The select path arms again (must_dispatch keeps the queue).
        assert_eq!(c.dispatch(ms(30)), Dispatch::IdleUntil(ms(38)));
        c.timer(ms(38));
        assert_eq!(take(&mut c, ms(38)).pid, 1);
    }

    #[test]
    fn timer_expires_a_used_slice() {
        let mut c = cfq();
        c.insert(read(0, 0, 1_000, ms(0)), ms(0));
        let rq = take(&mut c, ms(0)); // slice to 100 ms
        c.completed(&rq, ms(99));
        assert_eq!(c.idle_timer, Some(ms(107)));
        // Fires past the slice end: used up, so expired, with nothing
        // else busy; another queue's later request starts a new slice.
        c.timer(ms(107));
        assert_eq!(c.active, None);
        c.insert(read(1, 1, 900_000, ms(120)), ms(120));
        assert_eq!(take(&mut c, ms(120)).pid, 1);
    }

    #[test]
    fn timer_after_the_slice_end_expires_even_with_nothing_else_busy() {
        let mut c = cfq();
        c.insert(read(0, 0, 1_000, ms(0)), ms(0));
        let rq = take(&mut c, ms(0)); // slice to 100 ms
        c.completed(&rq, ms(98));
        // A deadline past the slice end (Linux's own arithmetic allows
        // one; here only a re-arm after the end makes one).
        c.idle_timer = Some(ms(105));
        c.timer(ms(105));
        assert_eq!(c.active, None, "used up: expired, not kept waiting");
    }

    #[test]
    fn timer_lets_a_queued_request_dispatch() {
        let mut c = cfq();
        one(&mut c, 0, 0, 1_000, ms(0), 1);
        // Another busy queue.
        c.insert(read(5, 1, 900_000, ms(2)), ms(2));
        // A request reaches the waiting queue without cancelling the timer
        // (in Linux, one queued between the timer firing and its lock).
        c.insert(read(1, 0, 1_008, ms(3)), ms(3));
        c.idle_timer = Some(ms(9));
        c.queues[sync_queue(0)].must_dispatch = false;
        c.timer(ms(9));
        assert!(c.queues[sync_queue(0)].must_dispatch);
        assert_eq!(take(&mut c, ms(9)).pid, 0);
    }

    #[test]
    fn async_request_of_the_awaited_process_ends_the_wait() {
        let mut c = cfq();
        one(&mut c, 0, 0, 1_000, ms(0), 1);
        c.insert(read(1, 1, 900_000, ms(2)), ms(2));
        c.insert(write(2, 0, 5_000, ms(3)), ms(3));
        assert_eq!(c.idle_timer, None);
        assert_eq!(c.active, None);
    }

    #[test]
    fn no_idling_after_the_task_exits() {
        let mut c = cfq();
        c.insert(read(0, 0, 1_000, ms(0)), ms(0));
        let rq = take(&mut c, ms(0));
        c.ioc[0].exited = true;
        c.completed(&rq, ms(1));
        assert_eq!(c.idle_timer, None);
    }

    #[test]
    fn a_timer_armed_while_the_dispatch_list_drains_is_reported_to_the_engine() {
        let mut c = cfq();
        c.insert(read(2, 1, 500, ms(0)), ms(0));
        c.insert(read(0, 0, 900_000, ms(0)), ms(0));
        c.insert(read(1, 0, 900_008, ms(0)), ms(0));
        c.queues[sync_queue(0)].idle_window = false;
        // One call: pid 0's round (its queue, the newer new one, is linked
        // first), expired for want of an idle window, then pid 1's. The
        // dispatch list is sorted: pid 1's low sector first.
        let first = take(&mut c, ms(0));
        assert_eq!(first.pid, 1);
        assert_eq!(c.dlist.len(), 2);
        assert_eq!(c.active, Some(sync_queue(1)));
        c.completed(&first, ms(1));
        assert_eq!(c.idle_timer, Some(ms(9)), "armed with pid 0's requests still listed");
        // Dispatch hands out a listed request, not IdleUntil: the engine
        // learns of the timer from `armed_timer` and calls `timer` at 9 ms.
        let second = take(&mut c, ms(1));
        assert_eq!(second.pid, 0);
        assert_eq!(c.armed_timer(), Some(ms(9)));
        c.insert(read(3, 2, 70_000, ms(5)), ms(5));
        assert_eq!(c.armed_timer(), Some(ms(9)));
        c.timer(ms(9));
        // Another queue is busy, so pid 1's slice ends at 9 ms.
        assert_eq!(c.armed_timer(), None);
        assert_eq!(c.active, None);
        c.completed(&second, ms(20));
        assert_eq!(take(&mut c, ms(20)).pid, 0);
        // A timer event for a deadline already handled is ignored.
        c.timer(ms(9));
    }
}

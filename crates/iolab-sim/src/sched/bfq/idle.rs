//! Device idling in BFQ: whether to keep the device idle for the
//! in-service queue's next request (`bfq_better_to_idle` and its two
//! reasons), the idle timer (`bfq_arm_slice_timer`,
//! `bfq_idle_slice_timer_body`), and whether the device queues commands
//! (`bfq_update_hw_tag`).

use super::budget::Reason;
use super::queue::QueueId;
use super::{Bfq, HW_QUEUE_SAMPLES, HW_QUEUE_THRESHOLD, MIN_TT_NS};
use crate::time::SimTime;

impl Bfq {
    /// `idling_boosts_thr_without_issues`: idling pays for throughput on
    /// a rotational device without command queueing, or (rotational or
    /// without queueing) for a sequential, I/O-bound queue with a short
    /// think time; never while weight-raised queues are busy.
    pub(super) fn idling_boosts_thr_without_issues(&self, id: QueueId) -> bool {
        let q = &self.queues[id];
        if q.process_refs == 0 {
            return false;
        }
        // hw_tag is -1 (unknown) until detected: counted as queueing.
        let hw_tag = self.hw_tag != 0;
        let rot_without_queueing = !self.nonrot && !hw_tag;
        let seq_and_io_bound = !q.seeky() && q.io_bound && q.has_short_ttime;
        let boosts = rot_without_queueing || ((!self.nonrot || !hw_tag) && seq_and_io_bound);
        boosts && self.wr_busy_queues == 0
    }

    /// `idling_needed_for_service_guarantees`: a weight-raised queue while
    /// others are not raised (or the device holds many other requests),
    /// an asymmetric scenario, or a queue alone.
    pub(super) fn idling_needed_for_service_guarantees(&self, id: QueueId) -> bool {
        let q = &self.queues[id];
        if q.process_refs == 0 {
            return false;
        }
        let busy = self.tot_busy_queues();
        (q.wr_coeff > 1
            && ((self.wr_busy_queues as u32) < busy || self.rq_in_driver >= q.dispatched + 4))
            || self.asymmetric_scenario(Some(id))
            || busy == 1
    }

    /// `bfq_better_to_idle`.
    pub(super) fn better_to_idle(&self, id: QueueId) -> bool {
        let q = &self.queues[id];
        if q.process_refs == 0 {
            return false;
        }
        if self.p.strict_guarantees {
            return true;
        }
        if self.p.slice_idle_ns == 0 || !q.sync || q.class_idle() {
            return false;
        }
        self.idling_boosts_thr_without_issues(id) || self.idling_needed_for_service_guarantees(id)
    }

    /// `bfq_bfqq_must_idle`: empty, and better to idle.
    pub(super) fn must_idle(&self, id: QueueId) -> bool {
        self.queues[id].rqs.is_empty() && self.better_to_idle(id)
    }

    /// `bfq_arm_slice_timer`: wait `slice_idle`, only 2 ms for a seeky
    /// queue in a symmetric scenario, at least 20 ms if weight raised.
    pub(super) fn arm_slice_timer(&mut self, id: QueueId) {
        self.queues[id].wait_request = true;
        let q = &self.queues[id];
        let mut sl = self.p.slice_idle_ns;
        if q.seeky() && q.wr_coeff == 1 && !self.asymmetric_scenario(Some(id)) {
            sl = sl.min(MIN_TT_NS);
        } else if q.wr_coeff > 1 {
            sl = sl.max(20_000_000);
        }
        self.last_idling_start = self.ns();
        self.last_idling_start_jiffies = self.jif();
        self.idle_timer = Some(self.t + sl);
    }

    /// `bfq_idle_slice_timer_body`: the wait ended without a request:
    /// expire (budget timeout, or too idle); with a request queued since,
    /// just let dispatch run.
    pub(super) fn idle_slice_timer_body(&mut self, id: QueueId, now: SimTime) {
        self.t = now;
        self.queues[id].wait_request = false;
        let reason = if self.budget_timed_out(id) {
            Reason::BudgetTimeout
        } else if self.queues[id].queued == [0, 0] {
            Reason::TooIdle
        } else {
            self.schedule_dispatch();
            return;
        };
        self.bfqq_expire(id, true, reason);
        self.schedule_dispatch();
    }

    /// `bfq_update_hw_tag`: once enough samples saw more than 3 requests
    /// available, the device queues commands if it ever held more than 3.
    pub(super) fn update_hw_tag(&mut self) {
        self.max_rq_in_driver = self.max_rq_in_driver.max(self.rq_in_driver);
        if self.hw_tag == 1 {
            return;
        }
        if self.rq_in_driver + self.queued <= HW_QUEUE_THRESHOLD {
            return;
        }
        if let Some(id) = self.in_service {
            let q = &self.queues[id];
            if q.has_short_ttime
                && q.dispatched + q.queued[0] + q.queued[1] < HW_QUEUE_THRESHOLD
                && self.rq_in_driver < HW_QUEUE_THRESHOLD
            {
                return;
            }
        }
        let samples = self.hw_tag_samples;
        self.hw_tag_samples += 1;
        if samples < HW_QUEUE_SAMPLES {
            return;
        }
        self.hw_tag = (self.max_rq_in_driver > HW_QUEUE_THRESHOLD) as i32;
        self.max_rq_in_driver = 0;
        self.hw_tag_samples = 0;
        self.nonrot_with_queueing = self.nonrot && self.hw_tag == 1;
    }
}

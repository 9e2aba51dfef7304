//! Serving a queue and ending its turn: `bfq_select_queue`,
//! `bfq_dispatch_rq_from_bfqq`, `bfq_completed_request`, expiration
//! (`bfq_bfqq_expire`, `__bfq_bfqq_expire`) and the budget feedback
//! (`__bfq_bfqq_recalc_budget`, `bfq_bfqq_is_slow`,
//! `bfq_bfqq_charge_time`).

use super::queue::QueueId;
use super::{Bfq, DEFAULT_MAX_BUDGET, DEFAULT_SLICE_IDLE_NS, MIN_TT_NS, RATE_SHIFT, STATS_MIN_BUDGETS};
use crate::request::Request;
use crate::time::SimTime;

/// `enum bfqq_expiration`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Reason {
    /// The idle timer fired with nothing queued.
    TooIdle,
    BudgetTimeout,
    BudgetExhausted,
    NoMoreRequests,
    Preempted,
}

impl Bfq {
    /// `bfq_max_budget`: the default until enough budgets were assigned.
    pub(super) fn max_budget_now(&self) -> i64 {
        if self.budgets_assigned < STATS_MIN_BUDGETS {
            DEFAULT_MAX_BUDGET
        } else {
            self.max_budget
        }
    }

    /// `bfq_min_budget`.
    pub(super) fn min_budget(&self) -> i64 {
        self.max_budget_now() / 32
    }

    /// `bfq_bfqq_update_budg_for_activation`: a queue that waited without
    /// blocking (its process was thinking) and comes back in time keeps
    /// what was left of its budget; otherwise a fresh one. True = it may
    /// preempt.
    pub(super) fn update_budg_for_activation(&mut self, id: QueueId, arrived_in_time: bool) -> bool {
        let q = &self.queues[id];
        if q.non_blocking_wait_rq && arrived_in_time && q.budget_left() > 0 {
            let left = q.budget_left().min(q.max_budget);
            let e = &mut self.queues[id].e;
            e.budget = left;
            e.service = 0;
            return true;
        }
        let charge = self.next_request(id).map_or(0, |rq| self.serv_to_charge(id, &rq));
        let q = &mut self.queues[id];
        q.e.service = 0;
        q.e.budget = q.max_budget.max(charge);
        q.non_blocking_wait_rq = false;
        false
    }

    /// `bfq_set_budget_timeout`: `timeout_sync` times the weight-raising
    /// factor (1 for soft real-time).
    fn set_budget_timeout(&mut self, id: QueueId) {
        let now_j = self.jif();
        let q = &self.queues[id];
        let coeff =
            if q.wr_cur_max_time == self.p.wr_rt_max_time_j { 1 } else { (q.e.weight / q.e.orig_weight.max(1)) as i64 };
        self.last_budget_start = self.ns();
        self.queues[id].budget_timeout = now_j + self.p.timeout_j * coeff;
    }

    /// `bfq_set_in_service_queue`.
    fn set_in_service_queue(&mut self) -> Option<QueueId> {
        let id = self.get_next_queue();
        if let Some(id) = id {
            let now_j = self.jif();
            self.queues[id].fifo_expire = false;
            self.budgets_assigned = (self.budgets_assigned * 7 + 256) / 8;
            let rt = self.p.wr_rt_max_time_j;
            let q = &mut self.queues[id];
            // A soft real-time queue does not lose raising time while it
            // waited for service past its budget timeout.
            if now_j > q.last_wr_start_finish && q.wr_coeff > 1 && q.wr_cur_max_time == rt && now_j > q.budget_timeout {
                if q.budget_timeout > q.last_wr_start_finish {
                    q.last_wr_start_finish += now_j - q.budget_timeout;
                } else {
                    q.last_wr_start_finish = now_j;
                }
            }
            self.set_budget_timeout(id);
        }
        self.in_service = id;
        self.in_serv_last_pos = 0;
        id
    }

    /// `bfq_bfqq_budget_timeout`.
    pub(super) fn budget_timed_out(&self, id: QueueId) -> bool {
        self.jif() >= self.queues[id].budget_timeout
    }

    /// `bfq_may_expire_for_budg_timeout`: timed out, and not idling with a
    /// third of the budget or less left.
    pub(super) fn may_expire_for_budg_timeout(&self, id: QueueId) -> bool {
        let q = &self.queues[id];
        (!q.wait_request || q.budget_left() >= q.e.budget / 3) && self.budget_timed_out(id)
    }

    /// `bfq_select_queue`: keep the in-service queue while it has budget
    /// for its next request, idle or inject while idling pays, otherwise
    /// expire it and take the next one.
    pub(super) fn select_queue(&mut self, now: SimTime) -> Option<QueueId> {
        self.t = now;
        let mut reason = Reason::BudgetTimeout;
        let mut cur = match self.in_service {
            None => None,
            Some(id) => {
                if self.may_expire_for_budg_timeout(id) && !self.must_idle(id) {
                    self.bfqq_expire(id, false, reason);
                    None
                } else {
                    Some(id)
                }
            }
        };
        loop {
            let id = match cur {
                Some(id) => id,
                None => {
                    // new_queue.
                    cur = self.set_in_service_queue();
                    cur?
                }
            };
            // check_queue.
            if let Some(rq) = self.next_request(id) {
                if self.serv_to_charge(id, &rq) > self.queues[id].budget_left() {
                    reason = Reason::BudgetExhausted;
                } else {
                    if self.queues[id].wait_request {
                        self.queues[id].wait_request = false;
                        self.idle_timer = None;
                    }
                    return Some(id);
                }
            } else if self.queues[id].wait_request || (self.queues[id].dispatched != 0 && self.better_to_idle(id)) {
                return self.choose_while_idling(id);
            } else {
                reason = Reason::NoMoreRequests;
            }
            self.bfqq_expire(id, false, reason);
            cur = None;
        }
    }

    /// `bfq_dispatch_rq_from_bfqq`: charge the service, take the request
    /// out, and expire an idle-class queue after one request if others
    /// are busy.
    pub(super) fn dispatch_rq_from_bfqq(&mut self, id: QueueId, now: SimTime) -> Request {
        self.t = now;
        let slot = self.queues[id].next_rq.expect("a selected queue has a next request");
        let rq = *self.queues[id].rqs.rq(slot);
        let charge = self.serv_to_charge(id, &rq);
        self.bfqq_served(id, charge);
        if self.in_service == Some(id) && self.wait_dispatch {
            self.wait_dispatch = false;
            self.waited_rq = Some(rq.id);
        }
        // bfq_dispatch_remove.
        self.queues[id].dispatched += 1;
        self.update_peak_rate(&rq, id);
        self.remove_request(id, slot);
        if self.in_service != Some(id) {
            return rq;
        }
        self.update_wr_data(id);
        if self.tot_busy_queues() > 1 && self.queues[id].class_idle() {
            self.bfqq_expire(id, false, Reason::BudgetExhausted);
        }
        rq
    }

    /// `bfq_completed_request`.
    pub(super) fn completed_request(&mut self, id: QueueId, now: SimTime) {
        self.t = now;
        let now_ns = self.ns();
        let now_j = self.jif();
        self.update_hw_tag();
        self.rq_in_driver -= 1;
        self.queues[id].dispatched -= 1;
        if self.queues[id].dispatched == 0 && !self.queues[id].busy {
            self.queues[id].budget_timeout = now_j;
            self.weights_tree_remove(id);
        }
        self.queues[id].last_end_request = Some(now_ns);
        // A completion rate far below the dispatch rate ends the peak
        // rate's observation window.
        let delta_us = ((now_ns - self.last_completion).max(0) / 1000) as u64;
        if delta_us > MIN_TT_NS / 1000 && ((self.last_rq_max_size as u64) << RATE_SHIFT) / delta_us < 1 << (RATE_SHIFT - 10) {
            self.update_rate_reset(None);
        }
        self.last_completion = now_ns;
        // A shared queue never becomes a waker: "a false waker will
        // unjustly steal bandwidth to its supposedly woken queue".
        self.last_completed_rq_bfqq = if self.queues[id].coop { None } else { Some(id) };
        let q = &self.queues[id];
        if q.softrt_update && q.dispatched == 0 && q.rqs.is_empty() && q.wr_coeff != self.p.wr_coeff {
            self.queues[id].soft_rt_next_start = self.softrt_next_start(id);
        }
        if self.in_service == Some(id) {
            if self.must_idle(id) {
                if self.queues[id].dispatched == 0 {
                    self.arm_slice_timer(id);
                }
                // Idling (or about to): no dispatch is scheduled.
                return;
            } else if self.may_expire_for_budg_timeout(id) {
                self.bfqq_expire(id, false, Reason::BudgetTimeout);
            } else if self.queues[id].rqs.is_empty()
                && (self.queues[id].dispatched == 0 || !self.better_to_idle(id))
            {
                self.bfqq_expire(id, false, Reason::NoMoreRequests);
            }
        }
        if self.rq_in_driver == 0 {
            self.schedule_dispatch();
        }
    }

    /// `__bfq_bfqq_recalc_budget`: the next budget from how this one
    /// ended (sync, not weight-raised queues); async queues get the
    /// maximum, raised ones twice the minimum.
    fn recalc_budget(&mut self, id: QueueId, reason: Reason) {
        let min_budget = self.min_budget();
        let max = self.max_budget;
        let q = &self.queues[id];
        let mut budget = if q.wr_coeff == 1 { q.max_budget } else { 2 * min_budget };
        if q.sync && q.wr_coeff == 1 {
            budget = match reason {
                // Still requests in flight: the budget was too small to
                // cover the device's latency.
                Reason::TooIdle if q.dispatched > 0 => (budget * 2).min(max),
                Reason::TooIdle if budget > 5 * min_budget => budget - 4 * min_budget,
                Reason::TooIdle => min_budget,
                Reason::BudgetTimeout => (budget * 2).min(max),
                Reason::BudgetExhausted => (budget * 4).min(max),
                Reason::NoMoreRequests => q.e.service.max(min_budget),
                Reason::Preempted => return,
            };
        } else if !q.sync {
            budget = max;
        }
        let mut mb = budget;
        if self.budgets_assigned >= STATS_MIN_BUDGETS && self.p.user_max_budget == 0 {
            mb = mb.min(max);
        }
        self.queues[id].max_budget = mb;
        if let Some(rq) = self.next_request(id) {
            let charge = self.serv_to_charge(id, &rq);
            self.queues[id].e.budget = mb.max(charge);
        }
    }

    /// `bfq_bfqq_is_slow`: a sync queue is slow if, over more than 20 ms,
    /// it used less than half the maximum budget; over a shorter time, if
    /// it is seeky. Also the time it held the device, in ms.
    fn is_slow(&self, id: QueueId, compensate: bool) -> (bool, u64) {
        let q = &self.queues[id];
        let mut slow = q.seeky();
        if !q.sync {
            return (false, 0);
        }
        let end = if compensate { self.last_idling_start } else { self.ns() };
        let delta_us = ((end - self.last_budget_start).max(0) / 1000) as u64;
        if delta_us < 1000 {
            let ms = if self.nonrot { MIN_TT_NS / 1_000_000 } else { DEFAULT_SLICE_IDLE_NS / 1_000_000 };
            return (slow, ms);
        }
        if delta_us > 20_000 {
            slow = q.e.service < self.max_budget / 2;
        }
        (slow, delta_us / 1000)
    }

    #[cfg(test)]
    pub(super) fn is_slow_for_test(&self, id: QueueId) -> (bool, u64) {
        self.is_slow(id, false)
    }

    /// `bfq_bfqq_softrt_next_start`: when the queue could next be soft
    /// real time: its service since it became busy at no more than
    /// `bfq_wr_max_softrt_rate`, and at least slice_idle + 4 jiffies on.
    pub(super) fn softrt_next_start(&self, id: QueueId) -> i64 {
        let q = &self.queues[id];
        let hz = self.hz.hz() as u64;
        let by_rate = q.last_idle_bklogged + (hz * q.service_from_backlogged / self.p.wr_max_softrt_rate) as i64;
        let by_idle = self.jif() + self.hz.from_ns_floor(self.p.slice_idle_ns) as i64 + 4;
        q.soft_rt_next_start.max(by_rate).max(by_idle)
    }

    /// `bfq_bfqq_expire`.
    pub(super) fn bfqq_expire(&mut self, id: QueueId, compensate: bool, reason: Reason) {
        let now_j = self.jif();
        let (slow, delta_ms) = self.is_slow(id, compensate);
        let q = &self.queues[id];
        // Slow queues, and queues timed out with a third of their budget
        // or more left, are charged for the time they held the device.
        if q.wr_coeff == 1 && (slow || (reason == Reason::BudgetTimeout && q.budget_left() >= q.e.budget / 3)) {
            self.charge_time(id, delta_ms);
        }
        if self.p.low_latency && self.queues[id].wr_coeff == 1 {
            self.queues[id].last_wr_start_finish = now_j;
        }
        if self.p.low_latency && self.p.wr_max_softrt_rate > 0 && self.queues[id].rqs.is_empty() {
            if self.queues[id].dispatched == 0 {
                self.queues[id].soft_rt_next_start = self.softrt_next_start(id);
            } else {
                self.queues[id].softrt_update = true;
            }
        }
        self.rqs_injected = false;
        self.wait_dispatch = false;
        self.waited_rq = None;
        self.recalc_budget(id, reason);
        self.expire_inner(id, reason);
        let q = &mut self.queues[id];
        if q.freed {
            return;
        }
        if !q.busy && reason != Reason::BudgetTimeout && reason != Reason::BudgetExhausted {
            q.non_blocking_wait_rq = true;
        } else {
            q.e.service = 0;
        }
    }

    /// `__bfq_bfqq_expire`: an empty queue leaves the busy set (unless
    /// preempted while it needs idling for its guarantees); a queue with
    /// requests is requeued. No queue is in service after.
    pub(super) fn expire_inner(&mut self, id: QueueId, reason: Reason) {
        let now_j = self.jif();
        // A shared queue whose processes no longer work close together
        // is to be split again.
        if self.queues[id].coop && self.queues[id].seeky() {
            self.queues[id].split_coop = true;
        }
        let keep = reason == Reason::Preempted && self.idling_needed_for_service_guarantees(id);
        if self.queues[id].rqs.is_empty() && !keep {
            if self.queues[id].dispatched == 0 {
                self.queues[id].budget_timeout = now_j;
            }
            self.del_bfqq_busy(id, true);
        } else {
            self.requeue_bfqq(id, true);
            // Resort the tree of potential close cooperators.
            if !self.nonrot_with_queueing && !self.queues[id].rqs.is_empty() {
                self.pos_tree_add_move(id);
            }
        }
        self.reset_in_service();
        self.maybe_free(id);
    }
}

//! Weight raising (`low_latency`) and what decides it: a queue that
//! becomes busy after a long idle period is *interactive* and gets
//! `wr_coeff` (30) times its weight for `bfq_wr_duration`; one that
//! issues I/O at a low rate and only after its previous I/O completed is
//! *soft real-time* and gets 30·100 for 300 ms, renewed while it stays
//! so (`bfq_bfqq_handle_idle_busy_switch`,
//! `bfq_update_bfqq_wr_on_rq_arrival`, `bfq_update_wr_data`). Queues
//! created in a large burst (8 within 180 ms of each other: a parallel
//! job starting) get none (`bfq_handle_burst`). A new queue arriving may
//! preempt the in-service one.

use super::budget::Reason;
use super::queue::QueueId;
use super::{Bfq, MAX_SERVICE_FROM_WR, SOFTRT_WEIGHT_FACTOR};

impl Bfq {
    /// `bfq_smallest_from_now`: a jiffy far in the past.
    pub(super) fn smallest_from_now(&self) -> i64 {
        self.jif() - (i64::MAX >> 2)
    }

    /// `msecs_to_jiffies`.
    pub(super) fn ms_to_j(&self, ms: u64) -> i64 {
        self.hz.from_ns_ceil(ms * 1_000_000) as i64
    }

    /// `bfq_wr_duration`: the reference duration scaled by reference
    /// rate / peak rate, between 3 and 25 s.
    pub(super) fn wr_duration(&self) -> i64 {
        if self.p.wr_max_time_j > 0 {
            return self.p.wr_max_time_j;
        }
        let dur = self.rate_dur_prod / self.peak_rate.max(1) as u64;
        dur.clamp(self.ms_to_j(3000) as u64, self.ms_to_j(25000) as u64) as i64
    }

    /// `switch_back_to_interactive_wr`.
    pub(super) fn switch_back_to_interactive_wr(&mut self, id: QueueId) {
        let dur = self.wr_duration();
        let q = &mut self.queues[id];
        q.wr_coeff = self.p.wr_coeff;
        q.wr_cur_max_time = dur;
        q.last_wr_start_finish = q.wr_start_at_switch_to_srt;
    }

    /// `bfq_bfqq_end_wr`.
    pub(super) fn end_wr(&mut self, id: QueueId) {
        let now_j = self.jif();
        let rt = self.p.wr_rt_max_time_j;
        let q = &mut self.queues[id];
        if q.wr_cur_max_time != rt {
            q.soft_rt_next_start = now_j;
        }
        if q.busy {
            self.wr_busy_queues -= 1;
        }
        q.wr_coeff = 1;
        q.wr_cur_max_time = 0;
        q.last_wr_start_finish = now_j;
        q.e.prio_changed = true;
    }

    /// `bfq_reset_burst_list`.
    fn reset_burst_list(&mut self, id: QueueId) {
        for b in std::mem::take(&mut self.burst_list) {
            self.queues[b].in_burst_list = false;
        }
        if self.tot_busy_queues() == 0 {
            self.burst_list.push(id);
            self.queues[id].in_burst_list = true;
            self.burst_size = 1;
        } else {
            self.burst_size = 0;
        }
    }

    /// `bfq_add_to_burst`: the 8th queue makes the burst large, marking
    /// every queue in it.
    fn add_to_burst(&mut self, id: QueueId) {
        self.burst_size += 1;
        if self.burst_size == self.p.large_burst_thresh {
            self.large_burst = true;
            for b in std::mem::take(&mut self.burst_list) {
                self.queues[b].in_large_burst = true;
                self.queues[b].in_burst_list = false;
            }
            self.queues[id].in_large_burst = true;
        } else {
            self.burst_list.push(id);
            self.queues[id].in_burst_list = true;
        }
    }

    /// `bfq_handle_burst`, for a just-created sync queue.
    pub(super) fn handle_burst(&mut self, id: QueueId) {
        let now_j = self.jif();
        let q = &self.queues[id];
        if q.in_burst_list || q.in_large_burst || now_j <= q.split_time + self.ms_to_j(10) {
            return;
        }
        if now_j > self.last_ins_in_burst + self.p.burst_interval_j {
            self.large_burst = false;
            self.reset_burst_list(id);
        } else if self.large_burst {
            self.queues[id].in_large_burst = true;
        } else {
            self.add_to_burst(id);
        }
        self.last_ins_in_burst = now_j;
    }

    /// `bfq_bfqq_idle_for_long_time`: nothing in flight and idle for
    /// `bfq_wr_min_idle_time` (2 s) since its last budget timeout.
    fn idle_for_long_time(&self, id: QueueId) -> bool {
        let q = &self.queues[id];
        q.dispatched == 0 && self.jif() > q.budget_timeout + self.p.wr_min_idle_time_j
    }

    /// `bfq_update_bfqq_wr_on_rq_arrival`.
    fn update_wr_on_rq_arrival(
        &mut self,
        id: QueueId,
        old_wr_coeff: u32,
        wr_or_deserves_wr: bool,
        interactive: bool,
        in_burst: bool,
        soft_rt: bool,
    ) {
        let now_j = self.jif();
        let dur = self.wr_duration();
        let min2 = 2 * self.min_budget();
        let smallest = self.smallest_from_now();
        let (coeff, rt) = (self.p.wr_coeff, self.p.wr_rt_max_time_j);
        let q = &mut self.queues[id];
        if old_wr_coeff == 1 && wr_or_deserves_wr {
            // Start a weight-raising period.
            if interactive {
                q.service_from_wr = 0;
                q.wr_coeff = coeff;
                q.wr_cur_max_time = dur;
            } else {
                q.wr_start_at_switch_to_srt = smallest;
                q.wr_coeff = coeff * SOFTRT_WEIGHT_FACTOR;
                q.wr_cur_max_time = rt;
            }
            // A raised queue starts with a small budget, to be served soon.
            q.e.budget = q.e.budget.min(min2);
        } else if old_wr_coeff > 1 {
            if interactive {
                q.wr_coeff = coeff;
                q.wr_cur_max_time = dur;
            } else if in_burst {
                q.wr_coeff = 1;
            } else if soft_rt {
                if q.wr_cur_max_time != rt {
                    q.wr_start_at_switch_to_srt = q.last_wr_start_finish;
                    q.wr_cur_max_time = rt;
                    q.wr_coeff = coeff * SOFTRT_WEIGHT_FACTOR;
                }
                q.last_wr_start_finish = now_j;
            }
        }
    }

    /// `bfq_bfqq_higher_class_or_weight` (flat hierarchy).
    fn higher_class_or_weight(&self, id: QueueId, in_serv: QueueId) -> bool {
        let (a, b) = (&self.queues[id], &self.queues[in_serv]);
        super::class_idx(a.ioprio_class) < super::class_idx(b.ioprio_class) || a.e.weight > b.e.weight
    }

    /// `bfq_bfqq_handle_idle_busy_switch`: a queue becomes busy. Its
    /// budget, weight raising, burst state; it joins the scheduler and
    /// may preempt the queue in service. Returns "interactive".
    pub(super) fn handle_idle_busy_switch(&mut self, id: QueueId, old_wr_coeff: u32, stably_merged: bool) -> bool {
        let now_j = self.jif();
        let now_ns = self.ns();
        let idle_for_long_time = self.idle_for_long_time(id);
        let q = &self.queues[id];
        let arrived_in_time = match q.last_end_request {
            None => true,
            Some(t) => now_ns <= t + 3 * self.p.slice_idle_ns as i64,
        };
        let in_burst = q.in_large_burst;
        let soft_rt = self.p.wr_max_softrt_rate > 0
            && !q.totally_seeky()
            && !in_burst
            && now_j > q.soft_rt_next_start
            && q.dispatched == 0
            && q.e.new_weight == 40;
        let interactive = !in_burst && idle_for_long_time && q.e.new_weight == 40;
        let wr_or_deserves_wr = self.p.low_latency && (q.wr_coeff > 1 || (q.sync && (q.bic_set || stably_merged) && (interactive || soft_rt)));
        let wants_to_preempt = self.update_budg_for_activation(id, arrived_in_time);
        let ten_s = self.ms_to_j(10_000);
        let q = &mut self.queues[id];
        // A queue idle for over 10 s leaves the burst.
        if !q.just_created && idle_for_long_time && now_j > q.budget_timeout + ten_s {
            q.in_burst_list = false;
            q.in_large_burst = false;
            self.burst_list.retain(|&b| b != id);
        }
        self.queues[id].just_created = false;
        if self.p.low_latency {
            let q = &mut self.queues[id];
            if q.split_time > now_j {
                q.split_time = now_j - self.p.wr_min_idle_time_j - 1;
            }
            if now_j > q.split_time + self.p.wr_min_idle_time_j {
                self.update_wr_on_rq_arrival(id, old_wr_coeff, wr_or_deserves_wr, interactive, in_burst, soft_rt);
                if old_wr_coeff != self.queues[id].wr_coeff {
                    self.queues[id].e.prio_changed = true;
                }
            }
        }
        let q = &mut self.queues[id];
        q.last_idle_bklogged = now_j;
        q.service_from_backlogged = 0;
        q.softrt_update = false;
        self.add_bfqq_busy(id);
        // Preemption of the queue in service.
        if let Some(s) = self.in_service {
            let preempt = (wants_to_preempt && self.queues[id].wr_coeff >= self.queues[s].wr_coeff)
                || self.higher_class_or_weight(id, s)
                || !self.better_to_idle(s);
            if preempt && self.next_queue_may_preempt() {
                self.bfqq_expire(s, false, Reason::Preempted);
            }
        }
        interactive
    }

    /// `bfq_update_wr_data`, for the queue in service at each dispatch:
    /// end or switch its weight raising when its time or service is up.
    pub(super) fn update_wr_data(&mut self, id: QueueId) {
        let now_j = self.jif();
        let rt = self.p.wr_rt_max_time_j;
        if self.queues[id].wr_coeff > 1 {
            let q = &self.queues[id];
            if q.in_large_burst {
                self.end_wr(id);
            } else if now_j > q.last_wr_start_finish + q.wr_cur_max_time {
                if q.wr_cur_max_time != rt || now_j > q.wr_start_at_switch_to_srt + self.wr_duration() {
                    self.end_wr(id);
                } else {
                    self.switch_back_to_interactive_wr(id);
                    self.queues[id].e.prio_changed = true;
                }
            }
            let q = &self.queues[id];
            if q.wr_coeff > 1 && q.wr_cur_max_time != rt && q.service_from_wr > MAX_SERVICE_FROM_WR {
                self.end_wr(id);
            }
        }
        let e = &self.queues[id].e;
        if (e.weight > e.orig_weight) != (self.queues[id].wr_coeff > 1) {
            let st = super::class_idx(self.queues[id].ioprio_class);
            self.update_weight_prio(st, id, false);
        }
    }
}

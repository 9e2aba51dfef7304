//! BFQ's queues and the requests in them: `struct bfq_queue`, creation
//! (`bfq_get_queue`, `bfq_init_bfqq`, `bfq_init_rq`), insertion
//! (`__bfq_insert_request`, `bfq_add_request`, `bfq_rq_enqueued`),
//! removal at dispatch (`bfq_remove_request`), request choice
//! (`bfq_choose_req`, `bfq_find_next_rq`, `bfq_check_fifo`), and the
//! per-queue statistics: think time, seek history, I/O intensity.

use super::wf2q::Entity;
use super::{
    ioprio_to_weight, Bfq, ASYNC_CHARGE_FACTOR, IOPRIO_NR_LEVELS, LONG_AGO, SECT_THR_NONROT, SEEK_THR,
};
use crate::request::{IoClass, ProcessId, Request};
use crate::sched::mq::op_is_sync;
use crate::sched::sortfifo::{Slot, SortFifo};
use crate::time::SimTime;

pub(super) type QueueId = usize;

/// `struct bfq_queue`.
pub(super) struct BfqQueue {
    /// The process of a sync queue; None for an async queue.
    pub owner: Option<ProcessId>,
    pub sync: bool,
    pub ioprio: u8,
    pub ioprio_class: IoClass,
    pub new_ioprio_class: IoClass,
    pub e: Entity,
    /// `sort_list` and `fifo` (one direction).
    pub rqs: SortFifo,
    pub next_rq: Option<Slot>,
    /// `queued[sync]`.
    pub queued: [u32; 2],
    pub max_budget: i64,
    pub budget_timeout: i64,
    pub dispatched: u32,
    // Flags (`enum bfqq_state_flags`).
    pub just_created: bool,
    pub busy: bool,
    pub wait_request: bool,
    pub non_blocking_wait_rq: bool,
    pub fifo_expire: bool,
    pub has_short_ttime: bool,
    pub io_bound: bool,
    pub in_large_burst: bool,
    pub softrt_update: bool,
    // `struct bfq_ttime`.
    /// ns; `None` is "minus infinity" (`now_ns + 1` at creation).
    pub last_end_request: Option<i64>,
    pub ttime_total: u64,
    pub ttime_samples: u64,
    pub ttime_mean: u64,
    pub io_start_time: i64,
    pub tot_idle_time: u64,
    pub seek_history: u32,
    pub last_request_pos: u64,
    pub in_burst_list: bool,
    pub wr_cur_max_time: i64,
    pub soft_rt_next_start: i64,
    pub last_wr_start_finish: i64,
    pub wr_coeff: u32,
    pub last_idle_bklogged: i64,
    pub service_from_backlogged: u64,
    pub service_from_wr: u64,
    pub wr_start_at_switch_to_srt: i64,
    pub split_time: i64,
    pub first_io_time: i64,
    pub waker: Option<QueueId>,
    pub tentative_waker: Option<QueueId>,
    pub num_waker_detections: u32,
    pub waker_detection_started: i64,
    /// `woken_list`: queues this one wakes, most recent first.
    pub woken: Vec<QueueId>,
    pub inject_limit: u32,
    pub decrease_time_jif: i64,
    pub last_serv_time_ns: u64,
    /// The weight it is counted under in `queue_weights_tree`.
    pub weight_counter: Option<u32>,
    /// `entity.allocated`: its requests in BFQ or the device.
    pub allocated: u32,
    /// `bfqq->bic` is set (a process owns it alone).
    pub bic_set: bool,
    /// Process references: 1 for a live process's sync queue, 0 after
    /// the process exited; async queues are shared and keep one.
    pub process_refs: u32,
    /// Freed: never used again.
    pub freed: bool,
    /// `creation_time`, jiffies.
    pub creation_time: i64,
    /// `new_bfqq`: the queue this one's processes are being redirected to.
    pub new_bfqq: Option<QueueId>,
    /// `stable_ref`: processes that scheduled a stable merge with it.
    pub stable_ref: u32,
    /// Its key in the `rq_pos_tree` (its next request's sector when it
    /// was put there), if it is in the tree.
    pub pos_key: Option<u64>,
    /// `BFQQF_coop`: shared by processes merged into it.
    pub coop: bool,
    /// `BFQQF_split_coop`: found seeky while shared: split at its
    /// processes' next requests.
    pub split_coop: bool,
}

/// `BFQ_RQ_SEEKY`: far from the last position (and, on a non-rotational
/// device, small).
pub(super) fn rq_seeky(nonrot: bool, last_pos: u64, rq: &Request) -> bool {
    get_sdist(last_pos, rq) > SEEK_THR && (!nonrot || rq.nr_sectors < SECT_THR_NONROT)
}

/// `get_sdist`.
fn get_sdist(last_pos: u64, rq: &Request) -> u64 {
    if last_pos == 0 {
        0
    } else {
        rq.sector.abs_diff(last_pos)
    }
}

/// `bfq_sample_valid`.
pub(super) fn sample_valid(samples: u64) -> bool {
    samples > 80
}

impl BfqQueue {
    /// `BFQQ_SEEKY`: more than 19 of the last 32 requests were seeky.
    pub fn seeky(&self) -> bool {
        self.seek_history.count_ones() > 19
    }
    /// `BFQQ_TOTALLY_SEEKY`.
    pub fn totally_seeky(&self) -> bool {
        self.seek_history == u32::MAX
    }
    /// `bfq_bfqq_budget_left`.
    pub fn budget_left(&self) -> i64 {
        self.e.budget - self.e.service
    }
    pub fn class_idle(&self) -> bool {
        self.ioprio_class == IoClass::Idle
    }
}

impl Bfq {
    /// `bfq_get_queue` + `bfq_init_bfqq` + `bfq_init_entity`.
    fn new_queue(&mut self, owner: Option<ProcessId>, sync: bool, class: IoClass, level: u8) -> QueueId {
        let now_j = self.jif();
        let now_ns = self.ns();
        // bfq_set_next_ioprio_data: the idle class has level 7.
        let level = if class == IoClass::Idle { IOPRIO_NR_LEVELS as u8 - 1 } else { level };
        let weight = ioprio_to_weight(level);
        let q = BfqQueue {
            owner,
            sync,
            ioprio: level,
            ioprio_class: class,
            new_ioprio_class: class,
            e: Entity::new(weight),
            rqs: SortFifo::default(),
            next_rq: None,
            queued: [0; 2],
            // Tentative: 2/3 of the maximum budget.
            max_budget: (2 * self.max_budget_now()) / 3,
            budget_timeout: self.smallest_from_now(),
            dispatched: 0,
            // Sync queues start as "just created" with a short think time.
            just_created: sync,
            busy: false,
            wait_request: false,
            non_blocking_wait_rq: false,
            fifo_expire: false,
            has_short_ttime: sync && class != IoClass::Idle,
            io_bound: true,
            in_large_burst: false,
            softrt_update: false,
            last_end_request: None,
            ttime_total: 0,
            ttime_samples: 0,
            ttime_mean: 0,
            io_start_time: now_ns,
            tot_idle_time: 0,
            // The first request is almost certainly seeky.
            seek_history: 1,
            last_request_pos: 0,
            in_burst_list: false,
            wr_cur_max_time: 0,
            soft_rt_next_start: now_j,
            last_wr_start_finish: now_j,
            wr_coeff: 1,
            last_idle_bklogged: LONG_AGO,
            service_from_backlogged: 0,
            service_from_wr: 0,
            wr_start_at_switch_to_srt: self.smallest_from_now(),
            split_time: self.smallest_from_now(),
            first_io_time: LONG_AGO,
            waker: None,
            tentative_waker: None,
            num_waker_detections: 0,
            waker_detection_started: LONG_AGO,
            woken: Vec::new(),
            inject_limit: 0,
            decrease_time_jif: LONG_AGO,
            last_serv_time_ns: 0,
            weight_counter: None,
            allocated: 0,
            bic_set: false,
            process_refs: if sync { 1 } else { 2 },
            freed: false,
            creation_time: now_j,
            new_bfqq: None,
            stable_ref: 0,
            pos_key: None,
            coop: false,
            split_coop: false,
        };
        self.queues.push(q);
        self.queues.len() - 1
    }

    /// `bfq_init_rq`: the request's queue, made on first use; counts the
    /// allocation; a just-created queue joins the burst bookkeeping.
    pub(super) fn init_rq(&mut self, rq: &Request, now: SimTime) -> usize {
        self.t = now;
        let sync = op_is_sync(rq);
        let pid = rq.pid;
        let prio = self.bic(pid).ioprio;
        let mut existing = if sync { self.bic(pid).sync_q } else { self.bic(pid).async_q };
        let mut split_waker = None;
        let mut split = false;
        if let Some(id) = existing.filter(|&id| sync && self.queues[id].coop && self.queues[id].split_coop) {
            // "If the queue was seeky for too long, break it apart"
            // (bfq_init_rq → bfq_split_bfqq), unless stably merged.
            if !self.bic(pid).stably_merged {
                split_waker = self.queues[id].waker;
                existing = self.split_bfqq(pid, id);
                split = existing.is_none();
            }
        }
        let id = match existing {
            Some(id) => id,
            None => {
                let id = if sync {
                    self.new_queue(Some(pid), true, prio.class, prio.level)
                } else {
                    // One async queue per class and level (bfq_async_queue_prio).
                    let level = if prio.class == IoClass::Idle { 0 } else { prio.level };
                    match self.async_queues.get(&(prio.class, level)) {
                        Some(&id) => id,
                        None => {
                            let id = self.new_queue(None, false, prio.class, level);
                            self.async_queues.insert((prio.class, level), id);
                            id
                        }
                    }
                };
                if sync && split {
                    // A queue made for a split process (bfq_get_queue with
                    // respawn: no stable-merge check) keeps the shared
                    // queue's waker.
                    if let Some(w) = split_waker {
                        self.queues[id].waker = Some(w);
                        self.queues[w].woken.insert(0, id);
                    }
                    self.bic(pid).sync_q = Some(id);
                    id
                } else if sync {
                    // bfq_get_queue ends with the stable-merge check, which
                    // may hand back the queue merged into at once.
                    let id = self.do_or_sched_stable_merge(id, pid);
                    self.bic(pid).sync_q = Some(id);
                    id
                } else {
                    self.bic(pid).async_q = Some(id);
                    id
                }
            }
        };
        self.queues[id].allocated += 1;
        self.bic(pid).requests += 1;
        if self.queues[id].process_refs == 1 {
            self.queues[id].bic_set = true;
        }
        self.rq_queue.insert(rq.id, id);
        if self.queues[id].just_created && (self.burst_size > 0 || self.tot_busy_queues() == 0) {
            self.handle_burst(id);
        }
        id
    }

    /// `__bfq_insert_request`: a merge that is due moves the request (and,
    /// if its process still uses the old queue, the process) to the
    /// shared queue first.
    pub(super) fn insert_request(&mut self, id: QueueId, rq: Request, now: SimTime) {
        self.t = now;
        let (mut id, mut target) = (id, id);
        if let Some(new) = self.setup_cooperator(id, rq.pid, Some(rq.sector)) {
            let old = id;
            self.queues[new].allocated += 1;
            self.queues[old].allocated -= 1;
            if self.bic(rq.pid).sync_q == Some(old) {
                while id != new {
                    id = self.merge_bfqqs(rq.pid, id);
                }
            }
            self.queues[old].just_created = false;
            self.rq_queue.insert(rq.id, new);
            self.maybe_free(old);
            // As the kernel: the statistics below go to `bfqq`, which is the
            // shared queue only if this process was redirected just now.
            target = new;
        }
        self.update_io_thinktime(id);
        self.update_has_short_ttime(id, rq.pid);
        self.update_io_seektime(id, &rq);
        self.add_request(target, rq);
        self.rq_enqueued(target, &rq);
    }

    /// `bfq_update_io_thinktime`: a sample only when the queue had
    /// nothing queued or in flight; capped at 2·slice_idle.
    fn update_io_thinktime(&mut self, id: QueueId) {
        let now = self.ns();
        let cap = 2 * self.p.slice_idle_ns;
        let q = &mut self.queues[id];
        if q.dispatched > 0 || q.busy {
            return;
        }
        let elapsed = match q.last_end_request {
            // now - (creation + 1) wraps to a huge u64: the cap.
            None => cap,
            Some(t) => ((now - t).max(0) as u64).min(cap),
        };
        q.ttime_samples = (7 * q.ttime_samples + 256) / 8;
        q.ttime_total = (7 * q.ttime_total + 256 * elapsed) / 8;
        q.ttime_mean = (q.ttime_total + 128) / q.ttime_samples;
    }

    /// `bfq_update_has_short_ttime`: short iff the mean think time (once
    /// valid) is at most slice_idle/2, and the process is alive.
    fn update_has_short_ttime(&mut self, id: QueueId, pid: ProcessId) {
        let now_j = self.jif();
        let exited = self.bic(pid).exited;
        let (slice_idle, min_idle) = (self.p.slice_idle_ns, self.p.wr_min_idle_time_j);
        let q = &self.queues[id];
        if !q.sync || q.class_idle() || slice_idle == 0 {
            return;
        }
        if now_j <= q.split_time + min_idle {
            return;
        }
        let short = !(exited || (sample_valid(q.ttime_samples) && q.ttime_mean > slice_idle >> 1));
        let changed = short != q.has_short_ttime;
        self.queues[id].has_short_ttime = short;
        let q = &self.queues[id];
        if changed && q.last_serv_time_ns == 0 && (now_j >= q.decrease_time_jif + self.ms_to_j(100) || !short) {
            self.reset_inject_limit(id);
        }
    }

    /// `bfq_update_io_seektime`: shift in whether this request is seeky;
    /// a soft real-time queue that becomes totally seeky loses it.
    fn update_io_seektime(&mut self, id: QueueId, rq: &Request) {
        let now_j = self.jif();
        let seeky = rq_seeky(self.nonrot, self.queues[id].last_request_pos, rq);
        let q = &mut self.queues[id];
        q.seek_history = (q.seek_history << 1) | seeky as u32;
        if q.wr_coeff > 1 && q.wr_cur_max_time == self.p.wr_rt_max_time_j && q.totally_seeky() {
            if now_j > q.wr_start_at_switch_to_srt + self.wr_duration() {
                self.end_wr(id);
            } else {
                self.switch_back_to_interactive_wr(id);
                self.queues[id].e.prio_changed = true;
            }
        }
    }

    /// `bfq_add_request`.
    fn add_request(&mut self, id: QueueId, rq: Request) {
        let now_ns = self.ns();
        let now_j = self.jif();
        let sync = op_is_sync(&rq);
        let old_wr_coeff = self.queues[id].wr_coeff;
        let mut interactive = false;
        self.queues[id].queued[sync as usize] += 1;
        self.queued += 1;
        let requests = self.bic(rq.pid).requests;
        if self.queues[id].sync && requests <= 1 {
            self.check_waker(id, now_ns);
            if now_j >= self.queues[id].decrease_time_jif + self.ms_to_j(1000) {
                self.reset_inject_limit(id);
            }
            // Measure the service time of this request alone, for the
            // injection limit, when the device is empty (or holds only
            // injected requests).
            let q = &self.queues[id];
            if self.in_service == Some(id)
                && (self.rq_in_driver == 0 || (q.last_serv_time_ns > 0 && self.rqs_injected && self.rq_in_driver > 0))
                && now_j >= q.decrease_time_jif + self.ms_to_j(10)
            {
                self.last_empty_occupied_ns = now_ns;
                self.wait_dispatch = true;
                if self.rq_in_driver == 0 {
                    self.rqs_injected = false;
                }
            }
        }
        if self.queues[id].sync {
            self.update_io_intensity(id, now_ns);
        }
        let fifo_time = SimTime((now_ns as u64).saturating_add(self.p.fifo_expire_ns[sync as usize]));
        let slot = self.queues[id].rqs.add(0, rq, fifo_time);
        let prev = self.queues[id].next_rq;
        let next = self.choose_req(id, prev, Some(slot), self.last_position);
        self.queues[id].next_rq = next;
        if !self.nonrot_with_queueing && prev != next {
            self.pos_tree_add_move(id);
        }
        if !self.queues[id].busy {
            let stably_merged = self.bic(rq.pid).stably_merged;
            interactive = self.handle_idle_busy_switch(id, old_wr_coeff, stably_merged);
        } else {
            let q = &self.queues[id];
            if self.p.low_latency
                && old_wr_coeff == 1
                && !sync
                && now_j > q.last_wr_start_finish + self.p.wr_min_inter_arr_async_j
            {
                let dur = self.wr_duration();
                let q = &mut self.queues[id];
                q.wr_coeff = self.p.wr_coeff;
                q.wr_cur_max_time = dur;
                self.wr_busy_queues += 1;
                q.e.prio_changed = true;
            }
            if prev != self.queues[id].next_rq {
                self.updated_next_req(id);
            }
        }
        let q = &mut self.queues[id];
        if self.p.low_latency && (old_wr_coeff == 1 || q.wr_coeff == 1 || interactive) {
            q.last_wr_start_finish = now_j;
        }
    }

    /// `bfq_update_io_intensity`: I/O bound unless idle more than a fifth
    /// of the time (halved every 200 ms).
    fn update_io_intensity(&mut self, id: QueueId, now_ns: i64) {
        let q = &mut self.queues[id];
        let tot_io_time = (now_ns - q.io_start_time).max(0) as u64;
        if q.rqs.is_empty() && q.dispatched == 0 {
            let last = q.last_end_request.unwrap_or(now_ns);
            q.tot_idle_time += (now_ns - last).max(0) as u64;
        }
        if q.just_created {
            return;
        }
        q.io_bound = q.tot_idle_time * 5 <= tot_io_time;
        if tot_io_time > 200_000_000 {
            q.io_start_time = now_ns - (tot_io_time >> 1) as i64;
            q.tot_idle_time >>= 1;
        }
    }

    /// `bfq_rq_enqueued`: a request for the queue being idled for ends the
    /// wait (unless it is small and more may follow while idling pays).
    fn rq_enqueued(&mut self, id: QueueId, rq: &Request) {
        let now_j = self.jif();
        self.queues[id].last_request_pos = rq.end_sector();
        if self.in_service == Some(id) && self.queues[id].wait_request {
            let q = &self.queues[id];
            let small_req = q.queued[op_is_sync(rq) as usize] == 1 && rq.nr_sectors < 32;
            let budget_timeout = now_j >= q.budget_timeout;
            if small_req && self.idling_boosts_thr_without_issues(id) && !budget_timeout {
                return;
            }
            self.queues[id].wait_request = false;
            self.idle_timer = None;
            if budget_timeout {
                self.bfqq_expire(id, false, super::budget::Reason::BudgetTimeout);
            }
        }
    }

    /// `bfq_choose_req`: the request nearer the head, forward, a backward
    /// seek of up to `back_seek_max` counting `back_seek_penalty` times;
    /// further back wraps and loses.
    pub(super) fn choose_req(&self, id: QueueId, a: Option<Slot>, b: Option<Slot>, last: u64) -> Option<Slot> {
        let (rq1, rq2) = match (a, b) {
            (None, r) => return r,
            (r, None) => return r,
            (Some(x), Some(y)) if x == y => return Some(y),
            (Some(x), Some(y)) => (x, y),
        };
        let rqs = &self.queues[id].rqs;
        let (r1, r2) = (rqs.rq(rq1), rqs.rq(rq2));
        match (op_is_sync(r1), op_is_sync(r2)) {
            (true, false) => return Some(rq1),
            (false, true) => return Some(rq2),
            _ => {}
        }
        let (s1, s2) = (r1.sector, r2.sector);
        let back_max = self.p.back_max * 2;
        let dist = |s: u64| -> Option<u64> {
            if s >= last {
                Some(s - last)
            } else if s + back_max >= last {
                Some((last - s) * self.p.back_penalty)
            } else {
                None
            }
        };
        Some(match (dist(s1), dist(s2)) {
            (Some(d1), Some(d2)) => {
                if d1 < d2 {
                    rq1
                } else if d2 < d1 || s1 < s2 {
                    rq2
                } else {
                    rq1
                }
            }
            (Some(_), None) => rq1,
            (None, Some(_)) => rq2,
            (None, None) => {
                if s1 <= s2 {
                    rq1
                } else {
                    rq2
                }
            }
        })
    }

    /// `bfq_check_fifo`: once per service slot, the oldest request if it
    /// expired (and is not `last`).
    fn check_fifo(&mut self, id: QueueId, last: Slot) -> Option<Slot> {
        let now = self.t;
        let q = &mut self.queues[id];
        if q.fifo_expire {
            return None;
        }
        q.fifo_expire = true;
        let first = q.rqs.fifo_first(0)?;
        if first == last || now < q.rqs.fifo_time(first) {
            return None;
        }
        Some(first)
    }

    /// `bfq_find_next_rq`: after `last` leaves, the expired FIFO head, or
    /// the better of its sector neighbours (wrapping to the lowest).
    fn find_next_rq(&mut self, id: QueueId, last: Slot) -> Option<Slot> {
        if let Some(s) = self.check_fifo(id, last) {
            return Some(s);
        }
        let rqs = &self.queues[id].rqs;
        let prev = rqs.sort_prev(last);
        let next = rqs.sort_next(last).or_else(|| rqs.sort_first(0).filter(|&f| f != last));
        let pos = rqs.rq(last).sector;
        self.choose_req(id, next, prev, pos)
    }

    /// `bfq_serv_to_charge`: sectors, three times over for async queues
    /// (not when weight raised or in an asymmetric scenario).
    pub(super) fn serv_to_charge(&self, id: QueueId, rq: &Request) -> i64 {
        let q = &self.queues[id];
        if q.sync || q.wr_coeff > 1 || self.asymmetric_scenario(Some(id)) {
            rq.nr_sectors as i64
        } else {
            rq.nr_sectors as i64 * ASYNC_CHARGE_FACTOR
        }
    }

    /// The queue's next request.
    pub(super) fn next_request(&self, id: QueueId) -> Option<Request> {
        let q = &self.queues[id];
        q.next_rq.map(|s| *q.rqs.rq(s))
    }

    /// `bfq_updated_next_req`: a queue not in service gets a budget that
    /// fits its new next request, and is requeued.
    pub(super) fn updated_next_req(&mut self, id: QueueId) {
        let Some(rq) = self.next_request(id) else { return };
        if self.in_service == Some(id) {
            return;
        }
        let charge = self.serv_to_charge(id, &rq);
        let q = &mut self.queues[id];
        let new_budget = q.max_budget.max(charge).max(q.e.service);
        if q.e.budget != new_budget {
            q.e.budget = new_budget;
            self.requeue_bfqq(id, false);
        }
    }

    /// `bfq_remove_request` (at dispatch).
    pub(super) fn remove_request(&mut self, id: QueueId, slot: Slot) -> Request {
        if self.queues[id].next_rq == Some(slot) {
            let next = self.find_next_rq(id, slot);
            self.queues[id].next_rq = next;
            self.updated_next_req(id);
        }
        let rq = self.queues[id].rqs.remove(slot);
        let sync = op_is_sync(&rq) as usize;
        self.queues[id].queued[sync] -= 1;
        self.queued -= 1;
        if self.queues[id].rqs.is_empty() {
            self.queues[id].next_rq = None;
            if self.queues[id].busy && self.in_service != Some(id) {
                self.del_bfqq_busy(id, false);
                let e = &mut self.queues[id].e;
                e.budget = 0;
                e.service = 0;
            }
            // Out of the request-position tree, as it is empty.
            self.queues[id].pos_key = None;
        } else if !self.nonrot_with_queueing {
            self.pos_tree_add_move(id);
        }
        rq
    }

    /// `bfq_exit_bfqq`: the process is gone; an in-service queue expires.
    pub(super) fn exit_bfqq(&mut self, id: QueueId, now: SimTime) {
        self.t = now;
        if self.in_service == Some(id) {
            self.expire_inner(id, super::budget::Reason::BudgetTimeout);
            self.schedule_dispatch();
        }
        if self.queues[id].sync {
            // bfq_put_cooperator, then bfq_release_process_ref.
            self.put_cooperator(id);
            self.queues[id].bic_set = false;
            self.release_process_ref(id);
        } else {
            let q = &self.queues[id];
            if q.busy && q.rqs.is_empty() && self.in_service != Some(id) {
                self.del_bfqq_busy(id, false);
            }
            self.maybe_free(id);
        }
    }

    /// `bfq_put_queue` reaching zero: a sync queue with no process, no
    /// request and off the scheduler is freed; those it woke forget it.
    pub(super) fn maybe_free(&mut self, id: QueueId) {
        let q = &self.queues[id];
        if q.freed
            || q.process_refs > 0
            || q.stable_ref > 0
            || q.allocated > 0
            || q.e.on_st_or_in_serv
            || self.in_service == Some(id)
        {
            return;
        }
        self.weights_tree_remove(id);
        self.queues[id].freed = true;
        self.burst_list.retain(|&b| b != id);
        if let Some(w) = self.queues[id].waker.take() {
            self.queues[w].woken.retain(|&x| x != id);
        }
        for x in std::mem::take(&mut self.queues[id].woken) {
            self.queues[x].waker = None;
        }
        if self.last_completed_rq_bfqq == Some(id) {
            self.last_completed_rq_bfqq = None;
        }
        for q in self.queues.iter_mut() {
            if q.tentative_waker == Some(id) {
                q.tentative_waker = None;
            }
        }
    }
}

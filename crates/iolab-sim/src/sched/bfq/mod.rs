//! BFQ, Budget Fair Queueing, as in Linux 6.1.192 `block/bfq-iosched.c`,
//! `bfq-wf2q.c` and `bfq-iosched.h` (ELEVATORS.md section 5).
//!
//! Brief overview. Every process has a sync queue; async requests go to
//! one queue per I/O priority (class and level) shared by all processes.
//! A queue that has requests is *busy* and is scheduled by B-WF2Q+
//! (`wf2q.rs`): it gets a budget in sectors, and the queue with the
//! smallest virtual finish time among the eligible ones is served, one at
//! a time, until its budget is used, its time runs out (`timeout_sync`),
//! or it has no more requests (`budget.rs`). When the in-service sync
//! queue empties, BFQ may keep the device idle for up to `slice_idle`,
//! waiting for its next request, if that boosts throughput or is needed
//! for the service guarantees (`idle.rs`); while idling it may *inject*
//! requests of other queues (`inject.rs`). Budgets adapt to how each
//! queue used the last one; the maximum budget follows the device's peak
//! rate, estimated from dispatches and completions (`peak_rate.rs`).
//! With `low_latency`, queues of processes that start after a long idle
//! period (interactive) or that issue I/O periodically at a low rate (soft
//! real time) are weight raised, unless they started in a burst of queue
//! creations (`wr.rs`). Per-request bookkeeping, think time and
//! seekiness are in `queue.rs`.
//!
//! File order: tunables and constants, state, the hooks, the table entry.
//!
//! Queues of processes started together are merged into one shared queue
//! ("stable merging", `merge.rs`).
//!
//! Left out (docs/schedulers.md says why): cgroups (one root group, as
//! with no `io.bfq.weight` set), merging of queues by position (close
//! cooperators) and splitting, request merging, the at-head dispatch list,
//! REQ_META, the out-of-memory queue and multi-actuator drives.

mod budget;
mod idle;
mod inject;
mod merge;
mod peak_rate;
mod queue;
mod wf2q;
mod wr;

#[cfg(test)]
mod tests;

use super::anticipatory::hz::Hz;
use super::mq::sbitmap::Sbitmap;
use super::mq::{self, op_is_sync, op_is_write, BlkMq, MergeStyle, MqSched, KERNEL_HZ};
use super::{Dispatch, Elevator, MergeKind, SchedContext, SchedulerInfo, Tunable, TunableValues};
use crate::request::{IoClass, IoPrio, ProcessId, Request, RequestId};
use crate::time::SimTime;
use queue::{BfqQueue, QueueId};
use std::collections::{BTreeMap, HashMap};
use wf2q::SchedData;

pub const NAME: &str = "bfq";

// Constants of bfq-iosched.c and bfq-iosched.h (HZ = 250).

/// `bfq_stats_min_budgets`: budgets assigned before statistics count.
const STATS_MIN_BUDGETS: u32 = 194;
/// `bfq_default_max_budget`, sectors.
const DEFAULT_MAX_BUDGET: i64 = 16 * 1024;
/// `bfq_async_charge_factor`.
const ASYNC_CHARGE_FACTOR: i64 = 3;
/// `bfq_timeout` = HZ/8 jiffies (the constant, not the tunable).
const BFQ_TIMEOUT_J: i64 = KERNEL_HZ as i64 / 8;
/// `bfq_slice_idle` default (the constant `bfq_bfqq_is_slow` uses), ns.
const DEFAULT_SLICE_IDLE_NS: u64 = 1_000_000_000 / 125;
/// `BFQ_MIN_TT`: think times below this are immediate, ns.
const MIN_TT_NS: u64 = 2_000_000;
/// `BFQ_HW_QUEUE_THRESHOLD` and `BFQ_HW_QUEUE_SAMPLES`.
const HW_QUEUE_THRESHOLD: u32 = 3;
const HW_QUEUE_SAMPLES: u32 = 32;
/// `BFQQ_SEEK_THR` and `BFQQ_SECT_THR_NONROT`, sectors.
const SEEK_THR: u64 = 8 * 100;
const SECT_THR_NONROT: u32 = 2 * 32;
/// `BFQ_RATE_MIN_SAMPLES`, `BFQ_RATE_MIN_INTERVAL`, `BFQ_RATE_REF_INTERVAL`.
const RATE_MIN_SAMPLES: u32 = 32;
const RATE_MIN_INTERVAL_NS: u64 = 300_000_000;
const RATE_REF_INTERVAL_NS: u64 = 1_000_000_000;
/// `BFQ_RATE_SHIFT`: the peak rate is sectors/µs << 16.
const RATE_SHIFT: u32 = 16;
/// `ref_rate`: reference peak rates, rotational and not.
const REF_RATE: [u64; 2] = [14000, 33000];
/// `ref_wr_duration`: `msecs_to_jiffies(7000)` and `(2500)`.
const REF_WR_DURATION_J: [u64; 2] = [1750, 625];
/// `max_service_from_wr`, sectors.
const MAX_SERVICE_FROM_WR: u64 = 120_000;
/// `BFQ_SOFTRT_WEIGHT_FACTOR`.
const SOFTRT_WEIGHT_FACTOR: u32 = 100;
/// `BFQ_WEIGHT_CONVERSION_COEFF`, `IOPRIO_NR_LEVELS`, `BFQ_MIN_WEIGHT`,
/// `BFQ_MAX_WEIGHT`.
const WEIGHT_CONVERSION_COEFF: u32 = 10;
const IOPRIO_NR_LEVELS: u32 = 8;
/// `BFQ_CL_IDLE_TIMEOUT` = HZ/5.
const CL_IDLE_TIMEOUT_J: i64 = KERNEL_HZ as i64 / 5;
/// A jiffies or ns time that Linux zero-initialises (kzalloc): on a
/// machine that has been up a while, long ago.
const LONG_AGO: i64 = -(1 << 50);

/// `bfq_ioprio_to_weight`: (8 − level) · 10; BE 4 is 40.
pub fn ioprio_to_weight(level: u8) -> u32 {
    (IOPRIO_NR_LEVELS - level as u32) * WEIGHT_CONVERSION_COEFF
}

/// Tunables: `bfq_attrs` (sysfs names and units) and `mq::NR_REQUESTS`.
static TUNABLES: [Tunable; 10] = [
    Tunable {
        name: "fifo_expire_sync",
        unit: "ms",
        min: 1.0,
        max: i32::MAX as f64,
        default: 125.0,
        help: "a sync request is served once it is this old, checked once per slice (NSEC_PER_SEC/8)",
    },
    Tunable {
        name: "fifo_expire_async",
        unit: "ms",
        min: 1.0,
        max: i32::MAX as f64,
        default: 250.0,
        help: "the same for async requests (NSEC_PER_SEC/4)",
    },
    Tunable {
        name: "back_seek_max",
        unit: "KiB",
        min: 0.0,
        max: i32::MAX as f64,
        default: 16384.0,
        help: "longest backward seek still preferred to a wrap",
    },
    Tunable {
        name: "back_seek_penalty",
        unit: "factor",
        min: 1.0,
        max: i32::MAX as f64,
        default: 2.0,
        help: "cost multiplier of a backward seek",
    },
    Tunable {
        name: "slice_idle",
        unit: "ms",
        min: 0.0,
        max: i32::MAX as f64,
        default: 8.0,
        help: "longest idle wait for the in-service queue's next request; 0 disables (NSEC_PER_SEC/125)",
    },
    Tunable {
        name: "max_budget",
        unit: "sectors",
        min: 0.0,
        max: i32::MAX as f64,
        default: 0.0,
        help: "largest budget; 0 = from the peak rate and timeout_sync",
    },
    Tunable {
        name: "timeout_sync",
        unit: "ms",
        min: 1.0,
        max: i32::MAX as f64,
        default: 124.0,
        help: "longest service of a queue per turn (HZ/8: 31 jiffies = 124 ms at HZ=250)",
    },
    Tunable {
        name: "strict_guarantees",
        unit: "bool",
        min: 0.0,
        max: 1.0,
        default: 0.0,
        help: "always idle, one request in the device at a time; raises slice_idle to 8 ms",
    },
    Tunable {
        name: "low_latency",
        unit: "bool",
        min: 0.0,
        max: 1.0,
        default: 1.0,
        help: "weight-raise interactive and soft real-time queues",
    },
    mq::NR_REQUESTS,
];

/// Tunable values and the weight-raising constants `bfq_init_queue`
/// sets, in the units the code uses.
#[derive(Clone, Debug)]
pub(crate) struct Params {
    /// `bfq_fifo_expire[async, sync]`, ns.
    fifo_expire_ns: [u64; 2],
    /// `bfq_back_max`, KiB.
    back_max: u64,
    back_penalty: u64,
    slice_idle_ns: u64,
    /// `bfq_user_max_budget`: 0 = automatic.
    user_max_budget: i64,
    /// `bfq_timeout`, jiffies.
    timeout_j: i64,
    strict_guarantees: bool,
    low_latency: bool,
    /// `bfq_wr_coeff` 30.
    wr_coeff: u32,
    /// `bfq_wr_rt_max_time` = msecs_to_jiffies(300).
    wr_rt_max_time_j: i64,
    /// `bfq_wr_max_time` 0: computed from the peak rate.
    wr_max_time_j: i64,
    /// `bfq_wr_min_idle_time` = msecs_to_jiffies(2000).
    wr_min_idle_time_j: i64,
    /// `bfq_wr_min_inter_arr_async` = msecs_to_jiffies(500).
    wr_min_inter_arr_async_j: i64,
    /// `bfq_wr_max_softrt_rate`, sectors/s.
    wr_max_softrt_rate: u64,
    /// `bfq_large_burst_thresh`.
    large_burst_thresh: u32,
    /// `bfq_burst_interval` = msecs_to_jiffies(180).
    burst_interval_j: i64,
}

impl Params {
    fn from_values(v: &TunableValues, hz: Hz) -> Params {
        let ms_j = |ms: u64| hz.from_ns_ceil(ms * 1_000_000) as i64;
        let strict = v.get("strict_guarantees") != 0.0;
        let mut slice_idle_ns = v.ms_as_ns("slice_idle");
        // bfq_strict_guarantees_store: setting it raises slice_idle to 8 ms.
        if strict && slice_idle_ns < 8_000_000 {
            slice_idle_ns = 8_000_000;
        }
        Params {
            fifo_expire_ns: [v.ms_as_ns("fifo_expire_async"), v.ms_as_ns("fifo_expire_sync")],
            back_max: v.get("back_seek_max") as u64,
            back_penalty: v.get("back_seek_penalty") as u64,
            slice_idle_ns,
            user_max_budget: v.get("max_budget") as i64,
            // bfq_timeout_sync_store: msecs_to_jiffies; the default is HZ/8.
            timeout_j: ms_j(v.get("timeout_sync") as u64),
            strict_guarantees: strict,
            low_latency: v.get("low_latency") != 0.0,
            wr_coeff: 30,
            wr_rt_max_time_j: ms_j(300),
            wr_max_time_j: 0,
            wr_min_idle_time_j: ms_j(2000),
            wr_min_inter_arr_async_j: ms_j(500),
            wr_max_softrt_rate: 7000,
            large_burst_thresh: 8,
            burst_interval_j: ms_j(180),
        }
    }
}

/// What BFQ keeps per process (`struct bfq_io_cq`).
#[derive(Clone, Debug)]
pub(crate) struct Bic {
    ioprio: IoPrio,
    /// `bic->bfqq[1]` (sync) and `bic->bfqq[0]` (async).
    sync_q: Option<QueueId>,
    async_q: Option<QueueId>,
    /// `bic->requests`: requests of the process in BFQ or the device.
    requests: u32,
    exited: bool,
    /// `stable_merge_bfqq`: the queue a stable merge is scheduled with.
    stable_merge: Option<QueueId>,
    /// `stably_merged`.
    stably_merged: bool,
}

/// `struct bfq_data` (one root group, one actuator).
pub struct Bfq {
    p: Params,
    hz: Hz,
    /// The time of the hook being run (Linux reads `jiffies` and
    /// `ktime_get_ns()` where this model reads `t`).
    t: SimTime,
    queues: Vec<BfqQueue>,
    bics: Vec<Bic>,
    /// `async_bfqq[0][level]` (RT), `[1][level]` (BE), `async_idle_bfqq`.
    async_queues: HashMap<(IoClass, u8), QueueId>,
    sd: SchedData,
    /// `queue_weights_tree`: weight → `num_active` of the queues counted.
    weights: BTreeMap<u32, u32>,
    busy_queues: [u32; 3],
    wr_busy_queues: i32,
    /// Requests in the queues' sort lists (`bfqd->queued`).
    queued: u32,
    rq_in_driver: u32,
    nonrot: bool,
    nonrot_with_queueing: bool,
    /// `last_bfqq_created` (one root group), for stable merging.
    last_bfqq_created: Option<QueueId>,
    max_rq_in_driver: u32,
    hw_tag_samples: u32,
    /// -1 until detected, then 0 or 1.
    hw_tag: i32,
    budgets_assigned: u32,
    /// The hrtimer `idle_slice_timer`, when armed.
    idle_timer: Option<SimTime>,
    in_service: Option<QueueId>,
    last_position: u64,
    /// `in_serv_last_pos`: where the in-service queue's last request ended.
    in_serv_last_pos: u64,
    last_completion: i64,
    last_completed_rq_bfqq: Option<QueueId>,
    last_empty_occupied_ns: i64,
    wait_dispatch: bool,
    waited_rq: Option<RequestId>,
    rqs_injected: bool,
    first_dispatch: i64,
    last_dispatch: i64,
    last_budget_start: i64,
    last_idling_start: i64,
    last_idling_start_jiffies: i64,
    peak_rate_samples: u32,
    sequential_samples: u32,
    tot_sectors_dispatched: u64,
    last_rq_max_size: u32,
    delta_from_first: u64,
    /// Sectors/µs << `RATE_SHIFT`.
    peak_rate: u32,
    /// `bfqd->bfq_max_budget`.
    max_budget: i64,
    /// Queues on the active trees, most recently activated first.
    active_list: Vec<QueueId>,
    last_ins_in_burst: i64,
    burst_size: u32,
    large_burst: bool,
    burst_list: Vec<QueueId>,
    rate_dur_prod: u64,
    /// `word_depths[wr busy][sync]` and `full_depth_shift`.
    word_depths: [[u32; 2]; 2],
    full_depth_shift: u32,
    nr_requests: u32,
    /// The queue of each request in BFQ or the device (`RQ_BFQQ`).
    rq_queue: HashMap<RequestId, QueueId>,
    /// `bfq_schedule_dispatch` asked for a queue run.
    kick: bool,
}

impl Bfq {
    pub(crate) fn new(p: Params, nonrot: bool, nr_requests: u32) -> Bfq {
        let hz = Hz::new(KERNEL_HZ);
        let r = nonrot as usize;
        let mut b = Bfq {
            p,
            hz,
            t: SimTime::ZERO,
            queues: Vec::new(),
            bics: Vec::new(),
            async_queues: HashMap::new(),
            sd: SchedData::default(),
            weights: BTreeMap::new(),
            busy_queues: [0; 3],
            wr_busy_queues: 0,
            queued: 0,
            rq_in_driver: 0,
            nonrot,
            // bfq_init_queue: nonrot_with_queueing = blk_queue_nonrot.
            nonrot_with_queueing: nonrot,
            last_bfqq_created: None,
            max_rq_in_driver: 0,
            hw_tag_samples: 0,
            hw_tag: -1,
            budgets_assigned: 0,
            idle_timer: None,
            in_service: None,
            last_position: 0,
            in_serv_last_pos: 0,
            last_completion: LONG_AGO,
            last_completed_rq_bfqq: None,
            last_empty_occupied_ns: LONG_AGO,
            wait_dispatch: false,
            waited_rq: None,
            rqs_injected: false,
            first_dispatch: LONG_AGO,
            last_dispatch: LONG_AGO,
            last_budget_start: LONG_AGO,
            last_idling_start: LONG_AGO,
            last_idling_start_jiffies: LONG_AGO,
            peak_rate_samples: 0,
            sequential_samples: 0,
            tot_sectors_dispatched: 0,
            last_rq_max_size: 0,
            delta_from_first: 0,
            // bfq_init_queue: 2/3 of the reference rate.
            peak_rate: (REF_RATE[r] * 2 / 3) as u32,
            max_budget: DEFAULT_MAX_BUDGET,
            active_list: Vec::new(),
            last_ins_in_burst: LONG_AGO,
            burst_size: 0,
            large_burst: false,
            burst_list: Vec::new(),
            rate_dur_prod: REF_RATE[r] * REF_WR_DURATION_J[r],
            word_depths: [[0; 2]; 2],
            full_depth_shift: 0,
            nr_requests,
            rq_queue: HashMap::new(),
            kick: false,
        };
        b.update_depths(&Sbitmap::new(nr_requests.max(1)));
        b
    }

    /// `jiffies` now.
    fn jif(&self) -> i64 {
        self.hz.jiffies(self.t) as i64
    }

    /// `ktime_get_ns()` now.
    fn ns(&self) -> i64 {
        self.t.ns() as i64
    }

    /// `bfq_schedule_dispatch`: run the hardware queues (from kblockd) if
    /// BFQ holds requests.
    pub(crate) fn schedule_dispatch(&mut self) {
        if self.queued != 0 {
            self.kick = true;
        }
    }

    /// The queue a bio of `bio`'s process and kind would join
    /// (`bfq_bio_merge`: `bfqd->bio_bfqq = bic_to_bfqq(bic, op_is_sync)`).
    fn bio_bfqq(&self, bio: &Request) -> Option<QueueId> {
        let bic = self.bics.get(bio.pid as usize)?;
        if op_is_sync(bio) {
            bic.sync_q
        } else {
            bic.async_q
        }
    }

    /// A queued request's queue and slot.
    fn slot_of(&self, rq: &Request) -> Option<(QueueId, super::sortfifo::Slot)> {
        let &id = self.rq_queue.get(&rq.id)?;
        let slot = self.queues[id].rqs.slot_of(0, rq)?;
        Some((id, slot))
    }

    /// `bfq_tot_busy_queues`.
    fn tot_busy_queues(&self) -> u32 {
        self.busy_queues.iter().sum()
    }

    /// `bfq_update_depths`: the shallow depths of `bfq_limit_depth`, in
    /// bits per word of the scheduler tags.
    fn update_depths(&mut self, tags: &Sbitmap) {
        let depth = tags.bits_per_word();
        self.full_depth_shift = depth.trailing_zeros();
        // No more than 50% of tags for async I/O, 75% for sync writes;
        // about 18% and 37% while weight-raised queues are busy.
        self.word_depths[0][0] = (depth >> 1).max(1);
        self.word_depths[0][1] = ((depth * 3) >> 2).max(1);
        self.word_depths[1][0] = ((depth * 3) >> 4).max(1);
        self.word_depths[1][1] = ((depth * 6) >> 4).max(1);
    }

    /// The process state, made on its first request (`bfq_prepare_request`
    /// → `ioc_find_get_icq`).
    fn bic(&mut self, pid: ProcessId) -> &mut Bic {
        let i = pid as usize;
        while self.bics.len() <= i {
            self.bics.push(Bic {
                ioprio: IoPrio::default(),
                sync_q: None,
                async_q: None,
                requests: 0,
                exited: false,
                stable_merge: None,
                stably_merged: false,
            });
        }
        &mut self.bics[i]
    }

    /// `bfqq_request_over_limit` with the root group only: a queue that
    /// holds its weight's share of `limit` tags or more is throttled.
    fn request_over_limit(&self, id: QueueId, limit: u32) -> bool {
        let q = &self.queues[id];
        if !q.e.on_st_or_in_serv {
            return false;
        }
        // wsum over this class and the higher ones, each scaled by 8
        // (IOPRIO_BE_NR) per class step, as the kernel folds them.
        let mut wsum: u64 = 0;
        for i in 0..=class_idx(q.ioprio_class) {
            wsum = wsum * IOPRIO_NR_LEVELS as u64 + self.sd.st[i].wsum;
        }
        if wsum == 0 {
            return false;
        }
        let share = (limit as u64 * q.e.weight as u64 + wsum / 2) / wsum;
        q.allocated as u64 >= share
    }
}

/// Service tree index of an I/O class (`bfq_class_idx`).
fn class_idx(c: IoClass) -> usize {
    match c {
        IoClass::Rt => 0,
        IoClass::Be => 1,
        IoClass::Idle => 2,
    }
}

impl Elevator for Bfq {
    fn name(&self) -> &'static str {
        NAME
    }

    /// `bfq_insert_request`: `bfq_init_rq` (the queue, its allocation
    /// count, the burst check) then `__bfq_insert_request`.
    fn insert(&mut self, rq: Request, now: SimTime) {
        self.prepare(&rq, now);
        self.insert_prepared(rq, now);
    }

    /// `bfq_dispatch_request` → `__bfq_dispatch_request`.
    fn dispatch(&mut self, now: SimTime) -> Dispatch {
        self.t = now;
        if self.tot_busy_queues() == 0 {
            return Dispatch::Nothing;
        }
        if self.p.strict_guarantees && self.rq_in_driver > 0 {
            return Dispatch::Nothing;
        }
        let Some(id) = self.select_queue(now) else {
            return Dispatch::Nothing;
        };
        let rq = self.dispatch_rq_from_bfqq(id, now);
        self.rq_in_driver += 1;
        Dispatch::Request(rq)
    }

    /// `bfq_finish_requeue_request`: the injection limit if this was the
    /// awaited request, `bfq_completed_request`, and the allocation count.
    fn completed(&mut self, rq: &Request, now: SimTime) {
        self.t = now;
        let Some(id) = self.rq_queue.remove(&rq.id) else { return };
        if self.waited_rq == Some(rq.id) {
            self.update_inject_limit(id, now);
        }
        self.completed_request(id, now);
        self.queues[id].allocated -= 1;
        let bic = self.bic(rq.pid);
        bic.requests = bic.requests.saturating_sub(1);
        self.maybe_free(id);
    }

    /// `bfq_idle_slice_timer`.
    fn timer(&mut self, now: SimTime) {
        self.t = now;
        if self.idle_timer.is_some_and(|t| t <= now) {
            self.idle_timer = None;
            if let Some(id) = self.in_service {
                self.idle_slice_timer_body(id, now);
            }
        }
    }

    fn armed_timer(&self) -> Option<SimTime> {
        self.idle_timer
    }

    /// The task's I/O priority (`bic->ioprio`; BFQ reads it when it makes
    /// the process's queues: `bfq_set_next_ioprio_data`).
    fn set_ioprio(&mut self, pid: ProcessId, prio: IoPrio) {
        self.bic(pid).ioprio = prio;
    }

    /// `bfq_exit_icq`: both of the task's queues lose their process
    /// reference (`bfq_exit_bfqq`), and an in-service one expires.
    fn exit_process(&mut self, pid: ProcessId, now: SimTime) {
        let Some(bic) = self.bics.get_mut(pid as usize) else { return };
        bic.exited = true;
        let (s, a, stable) = (bic.sync_q.take(), bic.async_q.take(), bic.stable_merge.take());
        for id in [s, a].into_iter().flatten() {
            self.exit_bfqq(id, now);
        }
        if let Some(id) = stable {
            self.put_stable_ref(id);
        }
    }

    fn queued(&self) -> usize {
        self.queued as usize
    }

    fn merges(&self) -> bool {
        true
    }

    /// `bfq_request_merge` → `bfq_find_rq_fmerge`: the request of the bio's
    /// queue that starts where the bio ends.
    fn front_merge_candidate(&self, bio: &Request) -> Option<Request> {
        let id = self.bio_bfqq(bio)?;
        let rqs = &self.queues[id].rqs;
        rqs.find(0, bio.end_sector()).map(|s| *rqs.rq(s))
    }

    /// `bfq_allow_bio_merge` without its cooperator merge (see
    /// [`MqSched::allow_bio_merge`]): never a sync bio into an async
    /// request, and only into a request of the queue the bio would join.
    fn allow_merge(&self, rq: &Request, bio: &Request) -> bool {
        if op_is_sync(bio) && !op_is_sync(rq) {
            return false;
        }
        let Some(id) = self.bio_bfqq(bio) else { return false };
        self.rq_queue.get(&rq.id) == Some(&id)
    }

    /// `elv_rb_former_request` in the request's queue.
    fn former_request(&self, rq: &Request) -> Option<Request> {
        let (id, slot) = self.slot_of(rq)?;
        let rqs = &self.queues[id].rqs;
        rqs.sort_prev(slot).map(|s| *rqs.rq(s))
    }

    /// `elv_rb_latter_request` in the request's queue.
    fn latter_request(&self, rq: &Request) -> Option<Request> {
        let (id, slot) = self.slot_of(rq)?;
        let rqs = &self.queues[id].rqs;
        rqs.sort_next(slot).map(|s| *rqs.rq(s))
    }

    /// `bfq_request_merged`: a request that grew at its front to before
    /// its predecessor is re-sorted, and the queue's next request chosen
    /// again between the old one and it (`bfq_choose_req`; a change
    /// refits the budget, `bfq_updated_next_req`).
    fn merged(&mut self, old: &Request, new: &Request, kind: MergeKind) {
        let Some((id, slot)) = self.slot_of(old) else { return };
        let rqs = &self.queues[id].rqs;
        let moved = kind == MergeKind::Front && rqs.sort_prev(slot).is_some_and(|p| new.sector < rqs.rq(p).sector);
        self.queues[id].rqs.update(slot, *new);
        if moved {
            let prev = self.queues[id].next_rq;
            let next = self.choose_req(id, prev, Some(slot), self.last_position);
            self.queues[id].next_rq = next;
            if prev != next {
                self.updated_next_req(id);
                if !self.nonrot_with_queueing {
                    self.pos_tree_add_move(id);
                }
            }
        }
    }

    /// `bfq_requests_merged`: in one queue, `rq` takes the FIFO place and
    /// time of an older `next`, and its place as next request; `next`
    /// leaves BFQ (`bfq_remove_request`) if it was queued (a request
    /// merged at insertion was not).
    fn merged_requests(&mut self, rq: &Request, merged: &Request, next: &Request, now: SimTime) {
        self.t = now;
        let Some((id, r)) = self.slot_of(rq) else { return };
        if let Some((nid, n)) = self.slot_of(next) {
            if nid == id {
                let rqs = &self.queues[id].rqs;
                if rqs.fifo_time(n) < rqs.fifo_time(r) {
                    self.queues[id].rqs.take_fifo_place(r, n);
                }
                if self.queues[id].next_rq == Some(n) {
                    self.queues[id].next_rq = Some(r);
                }
            }
            self.remove_request(nid, n);
        }
        self.queues[id].rqs.update(r, *merged);
    }
}

impl MqSched for Bfq {
    /// `bfq_init_rq`, which `bfq_insert_request` runs before
    /// `blk_mq_sched_try_insert_merge`.
    fn prepare(&mut self, rq: &Request, now: SimTime) {
        self.init_rq(rq, now);
    }

    /// The rest of `bfq_insert_request` (`__bfq_insert_request`).
    fn insert_prepared(&mut self, rq: Request, now: SimTime) {
        let id = self.rq_queue[&rq.id];
        self.insert_request(id, rq, now);
    }

    /// `bfq_finish_requeue_request` of a request never started (it merged
    /// into another): its queue's allocation and its process's count drop
    /// (`bfqq_request_freed`, `bfq_put_queue`).
    fn freed(&mut self, rq: &Request) {
        let Some(id) = self.rq_queue.remove(&rq.id) else { return };
        self.queues[id].allocated -= 1;
        let bic = self.bic(rq.pid);
        bic.requests = bic.requests.saturating_sub(1);
        self.maybe_free(id);
    }

    fn merge_style(&self) -> MergeStyle {
        MergeStyle::Hash
    }

    /// `bfq_depth_updated`: `sbitmap_queue_min_shallow_depth(tags, 1)`.
    fn min_shallow_depth(&self, _tags: &Sbitmap) -> Option<u32> {
        Some(1)
    }

    fn take_kick(&mut self) -> bool {
        std::mem::take(&mut self.kick)
    }

    /// `bfq_allow_bio_merge`: first an early merge of the bio's queue with
    /// a cooperator (`bfq_setup_cooperator` with the bio, then
    /// `bfq_merge_bfqqs` down the chain), then the rule of
    /// [`Elevator::allow_merge`] with the queue the bio now joins.
    fn allow_bio_merge(&mut self, rq: &Request, bio: &Request, now: SimTime) -> bool {
        self.t = now;
        if op_is_sync(bio) && !op_is_sync(rq) {
            return false;
        }
        let Some(mut id) = self.bio_bfqq(bio) else { return false };
        if op_is_sync(bio) {
            if let Some(new) = self.setup_cooperator(id, bio.pid, Some(bio.sector)) {
                while id != new {
                    id = self.merge_bfqqs(bio.pid, id);
                }
            }
        }
        self.rq_queue.get(&rq.id) == Some(&id)
    }

    /// `bfq_limit_depth`: sync reads get the whole depth, async requests
    /// and sync writes a fraction; a queue over its share of the tags
    /// (`bfqq_request_over_limit`) is cut to one bit per word.
    // The test is bfq_limit_depth's `if (!(op_is_sync(opf) && !op_is_write(opf)))`.
    #[allow(clippy::nonminimal_bool)]
    fn limit_depth(&self, rq: &Request, _tags: &Sbitmap) -> Option<u32> {
        let mut limit = self.nr_requests;
        let mut depth = 0;
        if !(op_is_sync(rq) && !op_is_write(rq)) {
            depth = self.word_depths[(self.wr_busy_queues > 0) as usize][op_is_sync(rq) as usize];
            limit = (limit * depth) >> self.full_depth_shift;
        }
        let bic = self.bics.get(rq.pid as usize);
        let queue = bic.and_then(|b| if op_is_sync(rq) { b.sync_q } else { b.async_q });
        if queue.is_some_and(|id| self.request_over_limit(id, limit)) {
            depth = 1;
        }
        (depth > 0).then_some(depth)
    }

    /// `bfq_has_work`.
    fn has_work(&self) -> bool {
        self.queued > 0
    }
}

pub const INFO: SchedulerInfo = SchedulerInfo {
    name: NAME,
    aliases: &["bfq-6.1"],
    summary: "Linux 6.1 BFQ: B-WF2Q+ over per-process queues with sector budgets, idling, weight raising",
    tunables: &TUNABLES,
    build,
    accept: None,
};

fn build(v: &TunableValues, ctx: &SchedContext) -> Box<dyn Elevator> {
    let nr = mq::nr_requests(v, ctx.queue_depth);
    let p = Params::from_values(v, Hz::new(KERNEL_HZ));
    Box::new(BlkMq::new(Bfq::new(p, !ctx.rotational, nr), nr))
}

/// The defaults, for tests.
#[cfg(test)]
pub(crate) fn default_params() -> Params {
    let v = TunableValues(TUNABLES.iter().map(|t| (t.name.to_string(), t.default)).collect());
    Params::from_values(&v, Hz::new(KERNEL_HZ))
}

#[cfg(test)]
pub(crate) fn params_with(given: &[(&str, f64)]) -> Params {
    let given: std::collections::BTreeMap<String, f64> = given.iter().map(|(k, v)| (k.to_string(), *v)).collect();
    let v = super::resolve_tunables(&INFO, &given, "test").unwrap();
    Params::from_values(&v, Hz::new(KERNEL_HZ))
}

//! CFQ, Completely Fair Queueing, as in Linux 2.6.20
//! (`block/cfq-iosched.c`; ELEVATORS.md section 4.1).
//!
//! Brief overview. Each process has a sync queue; async requests go to
//! one queue shared by every process of the same priority. Busy queues
//! take turns from per-priority round-robin lists (`rr.rs`). The active
//! queue owns a time slice (`slice_sync`/`slice_async`, scaled by
//! priority) and moves up to `quantum` requests per round onto the
//! dispatch list (`dlist.rs`), each chosen AS-style from its sort tree
//! unless the FIFO has an expired one (`queue.rs`, `dispatch.rs`). When
//! an active sync queue runs dry, CFQ idles up to `slice_idle` for the
//! process's next request, if its think time and seeks say it is worth
//! it (`idle.rs`, `ioc.rs`).
//!
//! Every process is best-effort priority 4 unless a test sets another
//! with [`Cfq::set_ioprio`]; the simulator has no `ionice`. Merging and
//! the request allocation limit are the block layer's (`crate::blk`);
//! CFQ's parts are here (`cfq_merge`, `cfq_allow_merge`,
//! `cfq_merged_requests`, `cfq_may_queue`). The RT and idle classes and
//! preemption are not modelled (docs/cfq.md says why).
//!
//! File order as mq-deadline: defaults and tunables, state, helpers in
//! the sub-modules, the hooks, then the scheduler table entry.

mod dispatch;
mod dlist;
mod idle;
mod ioc;
mod queue;
mod rr;

use super::{Dispatch, Elevator, MayQueue, MergeKind, SchedContext, SchedulerInfo, Tunable, TunableValues};
use crate::request::{Dir, ProcessId, Request};
use crate::time::SimTime;
use dlist::DispatchList;
use ioc::IoContext;
use queue::{rq_is_sync, CfqQueue, QueueId, SeekRule, ASYNC, PRIO_LEVELS, SYNC};
use rr::RoundRobin;

pub const NAME: &str = "cfq";

/// The default priority of a process: best-effort 4 (`task_nice_ioprio`
/// of nice 0; IOPRIO_NORM).
pub const DEFAULT_IOPRIO: u8 = 4;

/// Tunables with their 2.6.20 sysfs names, units and defaults (HZ=1000;
/// cfq-iosched.c top of file; ELEVATORS.md 4.1). Ranges follow the
/// `STORE_FUNCTION` clamps; the upper bounds stand for UINT_MAX.
pub static TUNABLES: &[Tunable] = &[
    Tunable {
        name: "quantum",
        unit: "requests",
        min: 1.0,
        max: 1e6,
        default: 4.0,
        help: "requests moved to the dispatch list per round (cfq_quantum)",
    },
    Tunable {
        name: "fifo_expire_sync",
        unit: "ms",
        min: 1.0,
        max: 1e6,
        default: 125.0,
        help: "age after which a sync request is served from the FIFO (HZ/8)",
    },
    Tunable {
        name: "fifo_expire_async",
        unit: "ms",
        min: 1.0,
        max: 1e6,
        default: 250.0,
        help: "age after which an async request is served from the FIFO (HZ/4)",
    },
    Tunable {
        name: "back_seek_max",
        unit: "KiB",
        min: 0.0,
        max: 1e9,
        default: 16384.0,
        help: "longest backward seek still preferred to a wrap (cfq_back_max)",
    },
    Tunable {
        name: "back_seek_penalty",
        unit: "factor",
        min: 1.0,
        max: 1e6,
        default: 2.0,
        help: "cost multiplier of a backward seek (cfq_back_penalty)",
    },
    Tunable {
        name: "slice_sync",
        unit: "ms",
        min: 1.0,
        max: 1e6,
        default: 100.0,
        help: "base time slice of a sync queue, at priority 4 (HZ/10)",
    },
    Tunable {
        name: "slice_async",
        unit: "ms",
        min: 1.0,
        max: 1e6,
        default: 40.0,
        help: "base time slice of an async queue, at priority 4 (HZ/25)",
    },
    Tunable {
        name: "slice_async_rq",
        unit: "requests",
        min: 1.0,
        max: 1e6,
        default: 2.0,
        help: "base request budget of an async slice: 2·(b + b·(7-prio))",
    },
    Tunable {
        name: "slice_idle",
        unit: "ms",
        min: 0.0,
        max: 1e6,
        default: 8.0,
        help: "longest idle wait for an emptied sync queue's next request; 0 disables (HZ/125)",
    },
];

pub const INFO: SchedulerInfo = SchedulerInfo {
    name: NAME,
    aliases: &["cfq-2.6.20"],
    summary: "completely fair queueing (Linux 2.6.20): per-process time slices, round robin, idling",
    tunables: TUNABLES,
    build,
    accept: None,
};

fn build(values: &TunableValues, _: &SchedContext) -> Box<dyn Elevator> {
    Box::new(Cfq::new(Params::from_values(values)))
}

/// Seeky processes idle at most this long (`msecs_to_jiffies(2)` in
/// `cfq_arm_slice_timer`).
const SEEKY_IDLE_NS: u64 = 2_000_000;

/// `hw_tag` is set once more than this many requests are in the driver
/// (`cfq_activate_request`).
const HW_TAG_DEPTH: u32 = 4;

/// Tunable values in the units the code uses (ns, sectors, counts).
#[derive(Clone, Debug)]
pub(crate) struct Params {
    quantum: u32,
    /// `cfq_fifo_expire[ASYNC, SYNC]`.
    fifo_expire_ns: [u64; 2],
    /// `cfq_back_max · 2`, sectors.
    back_max_sectors: u64,
    back_penalty: u64,
    /// `cfq_slice[ASYNC, SYNC]`.
    slice_ns: [u64; 2],
    slice_async_rq: u32,
    slice_idle_ns: u64,
}

impl Params {
    fn from_values(v: &TunableValues) -> Params {
        let count = |name: &str| v.get(name).floor() as u64;
        Params {
            quantum: count("quantum") as u32,
            fifo_expire_ns: [v.ms_as_ns("fifo_expire_async"), v.ms_as_ns("fifo_expire_sync")],
            back_max_sectors: count("back_seek_max") * 2,
            back_penalty: count("back_seek_penalty"),
            slice_ns: [v.ms_as_ns("slice_async"), v.ms_as_ns("slice_sync")],
            slice_async_rq: count("slice_async_rq") as u32,
            slice_idle_ns: v.ms_as_ns("slice_idle"),
        }
    }

    /// The defaults of [`TUNABLES`].
    #[cfg(test)]
    pub(crate) fn defaults() -> Params {
        let values = TUNABLES.iter().map(|t| (t.name.to_string(), t.default)).collect();
        Params::from_values(&TunableValues(values))
    }
}

/// `struct cfq_data`.
pub struct Cfq {
    p: Params,
    /// Async queues of priority 0..7 first, then the sync queue of each
    /// process (see [`queue::QueueId`]); grown on demand.
    queues: Vec<CfqQueue>,
    /// Per-process history (`cfq_io_context`), indexed by pid.
    ioc: Vec<IoContext>,
    rr: RoundRobin,
    dlist: DispatchList,
    active: Option<QueueId>,
    /// The process of the first request dispatched in the active slice.
    active_cic: Option<ProcessId>,
    /// Requests dispatched in the active slice.
    dispatch_slice: u32,
    /// End of the last request put on the dispatch list.
    last_sector: u64,
    rq_in_driver: u32,
    hw_tag: bool,
    /// `idle_slice_timer`: when it fires, if pending.
    idle_timer: Option<SimTime>,
    /// Requests in the sort trees.
    nr_sorted: usize,
}

impl Cfq {
    pub(crate) fn new(p: Params) -> Cfq {
        let queues = (0..PRIO_LEVELS).map(|prio| CfqQueue::new(None, prio as u8)).collect();
        Cfq {
            p,
            queues,
            ioc: Vec::new(),
            rr: RoundRobin::default(),
            dlist: DispatchList::default(),
            active: None,
            active_cic: None,
            dispatch_slice: 0,
            last_sector: 0,
            rq_in_driver: 0,
            hw_tag: false,
            idle_timer: None,
            nr_sorted: 0,
        }
    }

    /// Give process `pid` best-effort priority `prio` (0 highest … 7).
    /// Call it before the process's first request: as in Linux, a queue
    /// keeps the priority it was made with here (no `changed_ioprio`).
    pub fn set_ioprio(&mut self, pid: ProcessId, prio: u8) {
        assert!((prio as usize) < PRIO_LEVELS, "best-effort priorities are 0..7");
        self.grow(pid);
        assert!(!self.ioc[pid as usize].seen, "set the priority before the process's first request");
        self.ioc[pid as usize].ioprio = prio;
        self.queues[sync_queue(pid)].ioprio = prio;
    }

    /// Make room for `pid` in the per-process vectors.
    fn grow(&mut self, pid: ProcessId) {
        let n = pid as usize + 1;
        while self.ioc.len() < n {
            let owner = self.ioc.len() as ProcessId;
            self.ioc.push(IoContext::new(DEFAULT_IOPRIO));
            self.queues.push(CfqQueue::new(Some(owner), DEFAULT_IOPRIO));
        }
    }

    /// The queue a request of `pid` goes to (`cfq_queue_pid` and
    /// `cic->cfqq[is_sync]`).
    fn queue_of(&self, pid: ProcessId, sync: bool) -> QueueId {
        if sync {
            sync_queue(pid)
        } else {
            self.ioc[pid as usize].ioprio as QueueId
        }
    }

    fn seek_rule(&self) -> SeekRule {
        SeekRule {
            last_sector: self.last_sector,
            back_max: self.p.back_max_sectors,
            penalty: self.p.back_penalty,
        }
    }

    /// `cfq_add_rq_rb`: an alias (a queued request at the same sector)
    /// goes straight to the dispatch list; link the queue on the rr lists.
    fn add_rq_rb(&mut self, id: QueueId, rq: Request) {
        while let Some(alias) = self.queues[id].sort.get(&rq.sector).copied() {
            self.dispatch_insert(id, alias);
        }
        self.queues[id].add_sorted(rq);
        self.nr_sorted += 1;
        if !self.queues[id].on_rr {
            self.rr.add(&mut self.queues, id);
        }
    }

    /// `cfq_rq_enqueued`: update `next_rq`, the process's history and its
    /// idle window, and end an idle wait the request answers.
    fn rq_enqueued(&mut self, id: QueueId, rq: &Request, now: SimTime) {
        let rule = self.seek_rule();
        let q = &mut self.queues[id];
        q.next_rq = queue::choose_req(&rule, q.next_request(), Some(rq)).map(|r| r.sector);

        let pid = rq.pid as usize;
        if !rq_is_sync(rq) {
            // A process we idle for issued async I/O instead: stop waiting.
            if self.active_cic == Some(rq.pid) && self.idle_timer.take().is_some() {
                self.slice_expired();
            }
            return;
        }
        let cap = 2 * self.p.slice_idle_ns;
        self.ioc[pid].update_thinktime(now, cap);
        self.ioc[pid].update_seektime(rq.sector);
        self.update_idle_window(id, pid);
        self.ioc[pid].last_request_pos = rq.end_sector();

        if self.active == Some(id) && self.queues[id].wait_request {
            // The request we idled for: let it rip, and do not expire the
            // slice on the way (must_dispatch).
            self.queues[id].must_dispatch = true;
            self.idle_timer = None;
        }
        // cfq_should_preempt needs wait_request on a queue that is not
        // active, which slice expiry always clears, or the idle class or
        // metadata requests: it never fires here.
    }

    /// `cfq_activate_request`: the driver takes a request.
    fn activate(&mut self) {
        self.rq_in_driver += 1;
        if !self.hw_tag && self.rq_in_driver > HW_TAG_DEPTH {
            self.hw_tag = true;
        }
    }
}

fn sync_queue(pid: ProcessId) -> QueueId {
    PRIO_LEVELS + pid as usize
}

impl Elevator for Cfq {
    fn name(&self) -> &'static str {
        NAME
    }

    /// `cfq_insert_request` (with `cfq_set_request` making the context and
    /// queue on first use).
    fn insert(&mut self, rq: Request, now: SimTime) {
        let pid = rq.pid;
        self.grow(pid);
        let ioc = &mut self.ioc[pid as usize];
        if !ioc.seen {
            ioc.seen = true;
            ioc.last_end_request = now; // cfq_alloc_io_context
        }
        let sync = rq_is_sync(&rq);
        if !sync {
            ioc.used_async = true;
        }
        let id = self.queue_of(pid, sync);
        self.add_rq_rb(id, rq);
        self.rq_enqueued(id, &rq, now);
    }

    /// `elv_next_request`: the head of the dispatch list, refilled by
    /// `cfq_dispatch_requests` when empty.
    fn dispatch(&mut self, now: SimTime) -> Dispatch {
        if self.dlist.len() == 0 {
            self.dispatch_requests(now);
        }
        if let Some(rq) = self.dlist.pop_front() {
            self.activate();
            return Dispatch::Request(rq);
        }
        match self.idle_timer {
            Some(t) => Dispatch::IdleUntil(t),
            None => Dispatch::Nothing,
        }
    }

    /// `cfq_completed_request`.
    fn completed(&mut self, rq: &Request, now: SimTime) {
        let sync = rq_is_sync(rq);
        let id = self.queue_of(rq.pid, sync);
        self.rq_in_driver -= 1;
        self.queues[id].on_dispatch[if sync { SYNC } else { ASYNC }] -= 1;
        if self.queues[id].dispatched() == 0 && self.queues[id].on_rr {
            self.rr.resort(&mut self.queues, id);
        }
        if sync {
            self.ioc[rq.pid as usize].last_end_request = now;
        }
        if self.active == Some(id) {
            if self.slice_used(id, now) {
                self.slice_expired();
            } else if sync && self.queues[id].sort.is_empty() {
                // 2.6.20 arms here whatever else of the queue is still in
                // the driver; with queue depth 1 nothing is.
                self.arm_slice_timer(id, now);
            }
        }
    }

    /// `cfq_idle_slice_timer`.
    fn timer(&mut self, now: SimTime) {
        self.timer_due(now);
    }

    /// `idle_slice_timer`, armed by `cfq_arm_slice_timer` (`mod_timer`)
    /// and cancelled by `cfq_clear_cfqq_wait_request`/`del_timer`.
    fn armed_timer(&self) -> Option<SimTime> {
        self.idle_timer
    }

    /// `cfq_exit_io_context`: the task is gone; a queue of it that is
    /// active loses its slice (`cfq_exit_cfqq`).
    fn exit_process(&mut self, pid: ProcessId, _now: SimTime) {
        let Some(ioc) = self.ioc.get_mut(pid as usize) else { return };
        if !ioc.seen {
            return;
        }
        ioc.exited = true;
        let async_q = ioc.used_async.then_some(ioc.ioprio as QueueId);
        for id in [async_q, Some(sync_queue(pid))].into_iter().flatten() {
            if self.active == Some(id) {
                self.slice_expired();
            }
        }
    }

    fn queued(&self) -> usize {
        self.nr_sorted + self.dlist.len()
    }

    fn merges(&self) -> bool {
        true
    }

    /// `cfq_merge` -> `cfq_find_rq_fmerge`: the request starting where the
    /// bio ends, in the queue the bio would join (its process's sync queue
    /// for a read or sync bio, its priority's async queue otherwise).
    fn front_merge_candidate(&self, bio: &Request) -> Option<Request> {
        self.ioc.get(bio.pid as usize)?;
        let id = self.queue_of(bio.pid, rq_is_sync(bio));
        self.queues[id].sort.get(&bio.end_sector()).copied()
    }

    /// `cfq_allow_merge`: a sync bio never joins an async request, and a
    /// bio joins only a request of the queue it would go to. Also, the
    /// request must still be in its sort tree (not on the dispatch list).
    fn allow_merge(&self, rq: &Request, bio: &Request) -> bool {
        if rq_is_sync(bio) && !rq_is_sync(rq) {
            return false;
        }
        if self.ioc.get(bio.pid as usize).is_none() || self.ioc.get(rq.pid as usize).is_none() {
            return false;
        }
        let q = self.queue_of(bio.pid, rq_is_sync(bio));
        q == self.queue_of(rq.pid, rq_is_sync(rq)) && self.queues[q].sort.get(&rq.sector).is_some_and(|r| r.id == rq.id)
    }

    /// `elv_rb_former_request` / `elv_rb_latter_request` in the request's
    /// own queue.
    fn former_request(&self, rq: &Request) -> Option<Request> {
        let q = &self.queues[self.queue_of(rq.pid, rq_is_sync(rq))];
        q.sort.range(..rq.sector).next_back().map(|(_, r)| *r)
    }
    fn latter_request(&self, rq: &Request) -> Option<Request> {
        let q = &self.queues[self.queue_of(rq.pid, rq_is_sync(rq))];
        q.sort.range(rq.sector + 1..).next().map(|(_, r)| *r)
    }

    /// `cfq_merged_request`: a front merge re-sorts the request
    /// (`cfq_reposition_rq_rb` -> `cfq_add_rq_rb`, which also offers it as
    /// the next request to serve). `cfq_add_rq_rb`'s alias rule holds here
    /// too: a request already queued at the new start sector goes to the
    /// dispatch list first (without it, the tree kept one of the two and
    /// the other was lost, and the queue stalled with it counted as queued).
    fn merged(&mut self, old: &Request, new: &Request, kind: MergeKind) {
        let rule = self.seek_rule();
        let id = self.queue_of(old.pid, rq_is_sync(old));
        if old.sector != new.sector {
            // elv_rb_del: out of the tree while the aliases are dispatched;
            // replace_sorted then puts it back at its new sector (its FIFO
            // entry and `next_rq` follow it).
            self.queues[id].sort.remove(&old.sector);
            while let Some(alias) = self.queues[id].sort.get(&new.sector).copied() {
                self.dispatch_insert(id, alias);
            }
            let q = &mut self.queues[id];
            q.replace_sorted(old, *new);
            if !q.on_rr {
                self.rr.add(&mut self.queues, id);
            }
        } else {
            self.queues[id].replace_sorted(old, *new);
        }
        if kind == MergeKind::Front {
            let q = &mut self.queues[id];
            q.next_rq = queue::choose_req(&rule, q.next_request(), Some(new)).map(|r| r.sector);
        }
    }

    /// `cfq_merged_requests`: `rq` takes `next`'s FIFO place if `next` is
    /// older; `next` leaves (`cfq_remove_request`: `next_rq` moves on).
    fn merged_requests(&mut self, rq: &Request, merged: &Request, next: &Request, _now: SimTime) {
        let rule = self.seek_rule();
        let id = self.queue_of(rq.pid, rq_is_sync(rq));
        let q = &mut self.queues[id];
        q.take_fifo_place(rq, merged, next);
        if q.next_rq == Some(next.sector) {
            q.next_rq = q.find_next_rq(&rule, next.sector);
        }
        q.remove_sorted(next.sector);
        self.nr_sorted -= 1;
        self.queues[id].replace_sorted(rq, *merged);
    }

    /// `cfq_may_queue`: the queue being waited for (`wait_request`) may
    /// allocate past a full request list, once per slice.
    fn may_queue(&mut self, pid: ProcessId, dir: Dir, sync: bool) -> MayQueue {
        if self.ioc.get(pid as usize).is_none() {
            return MayQueue::May;
        }
        let id = self.queue_of(pid, dir == Dir::Read || sync);
        let q = &mut self.queues[id];
        if q.wait_request && !q.must_alloc_slice {
            q.must_alloc_slice = true;
            return MayQueue::Must;
        }
        MayQueue::May
    }
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Driving CFQ through the trait, as the engine does.
    use super::*;
    use crate::request::Dir;

    pub fn cfq() -> Cfq {
        Cfq::new(Params::defaults())
    }

    pub fn ms(x: u64) -> SimTime {
        SimTime(x * 1_000_000)
    }

    pub fn read(id: u32, pid: ProcessId, sector: u64, at: SimTime) -> Request {
        Request { id, pid, sector, nr_sectors: 8, dir: Dir::Read, sync: true, arrival: at }
    }

    pub fn write(id: u32, pid: ProcessId, sector: u64, at: SimTime) -> Request {
        Request { id, pid, sector, nr_sectors: 8, dir: Dir::Write, sync: false, arrival: at }
    }

    /// Dispatch one request; panic on anything else.
    pub fn take(c: &mut Cfq, now: SimTime) -> Request {
        match c.dispatch(now) {
            Dispatch::Request(rq) => rq,
            other => panic!("expected a request at {now:?}, got {other:?}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;
    use crate::sched::{self, SCHEDULERS};
    use std::collections::BTreeMap;

    #[test]
    fn registered_with_linux_names_and_defaults() {
        let info = sched::find("cfq").unwrap();
        assert!(SCHEDULERS.iter().any(|s| s.name == NAME));
        let names: Vec<_> = info.tunables.iter().map(|t| t.name).collect();
        assert_eq!(
            names,
            [
                "quantum",
                "fifo_expire_sync",
                "fifo_expire_async",
                "back_seek_max",
                "back_seek_penalty",
                "slice_sync",
                "slice_async",
                "slice_async_rq",
                "slice_idle"
            ]
        );
        let p = Params::defaults();
        assert_eq!(p.quantum, 4);
        assert_eq!(p.fifo_expire_ns, [250_000_000, 125_000_000]);
        assert_eq!(p.back_max_sectors, 32_768);
        assert_eq!(p.back_penalty, 2);
        assert_eq!(p.slice_ns, [40_000_000, 100_000_000]);
        assert_eq!(p.slice_async_rq, 2);
        assert_eq!(p.slice_idle_ns, 8_000_000);
        let given = BTreeMap::from([("slice_idle".to_string(), -1.0)]);
        assert!(sched::resolve_tunables(info, &given, "cfq").is_err());
    }

    #[test]
    fn sync_requests_of_a_process_share_its_queue_async_share_by_priority() {
        let mut c = cfq();
        c.set_ioprio(2, 7);
        c.insert(read(0, 0, 100, ms(0)), ms(0));
        c.insert(read(1, 1, 200, ms(0)), ms(0));
        c.insert(write(2, 0, 300, ms(0)), ms(0));
        c.insert(write(3, 1, 400, ms(0)), ms(0));
        c.insert(write(4, 2, 500, ms(0)), ms(0));
        assert_eq!(c.queues[sync_queue(0)].sort.len(), 1);
        assert_eq!(c.queues[sync_queue(1)].sort.len(), 1);
        assert_eq!(c.queues[4].sort.len(), 2, "async prio 4 shared by pids 0 and 1");
        assert_eq!(c.queues[7].sort.len(), 1, "async prio 7");
        assert_eq!(c.rr.busy_queues, 4);
        assert_eq!(c.queued(), 5);
        // A sync write is sync: it goes to the process's own queue.
        let mut w = write(5, 0, 600, ms(0));
        w.sync = true;
        c.insert(w, ms(0));
        assert_eq!(c.queues[sync_queue(0)].sort.len(), 2);
    }

    #[test]
    fn a_front_merge_onto_an_alias_dispatches_the_alias() {
        // Two async writes at 1536, each grown to start at 1408 by a bio
        // merged in front: the second lands on the first's new sector, and
        // cfq_add_rq_rb sends the first to the dispatch list. (The tree used
        // to keep one of them and lose the other: the engine then stopped
        // with "stalled ... 1 requests queued"; found by engine_properties.)
        let mut c = cfq();
        let grown = |r: Request| Request { sector: 1408, nr_sectors: 256, ..r };
        let a = Request { nr_sectors: 128, ..write(0, 0, 1536, ms(0)) };
        c.insert(a, ms(0));
        c.merged(&a, &grown(a), MergeKind::Front);
        let b = Request { nr_sectors: 128, ..write(1, 0, 1536, ms(1)) };
        c.insert(b, ms(1));
        assert_eq!(c.dlist.len(), 0, "different sectors so far: no alias");
        c.merged(&b, &grown(b), MergeKind::Front);
        assert_eq!(c.dlist.len(), 1, "the first request is the alias");
        assert_eq!(c.queued(), 2);
        let first = take(&mut c, ms(1));
        let second = take(&mut c, ms(1));
        assert_eq!((first.id, first.sector, second.id, second.sector), (0, 1408, 1, 1408));
        assert_eq!(c.queued(), 0);
    }

    #[test]
    fn alias_goes_straight_to_the_dispatch_list() {
        let mut c = cfq();
        c.insert(write(0, 0, 800, ms(0)), ms(0));
        c.insert(write(1, 1, 800, ms(1)), ms(1));
        assert_eq!(c.dlist.len(), 1);
        assert_eq!(c.queues[4].sort.len(), 1);
        assert_eq!(c.queued(), 2);
        assert_eq!(take(&mut c, ms(1)).id, 0);
        assert_eq!(take(&mut c, ms(1)).id, 1);
        assert_eq!(c.queued(), 0);
    }

    #[test]
    fn hw_tag_is_set_with_more_than_four_in_the_driver() {
        let mut c = cfq();
        for i in 0..8 {
            c.insert(read(i, 0, 1000 + 8 * i as u64, ms(0)), ms(0));
        }
        for n in 1..=5 {
            take(&mut c, ms(0));
            assert_eq!(c.hw_tag, n > 4, "after {n} in the driver");
        }
        // Depth 1 never sets it: one request in flight at a time.
        let mut d = cfq();
        for i in 0..8 {
            d.insert(read(i, 0, 1000 + 8 * i as u64, ms(0)), ms(0));
        }
        for _ in 0..8 {
            let rq = take(&mut d, ms(1));
            d.completed(&rq, ms(1));
        }
        assert!(!d.hw_tag);
    }

    #[test]
    fn exit_of_the_active_process_ends_its_slice() {
        let mut c = cfq();
        c.insert(read(0, 0, 100, ms(0)), ms(0));
        c.insert(read(1, 1, 9_000, ms(0)), ms(0));
        let rq = take(&mut c, ms(0));
        c.exit_process(rq.pid, ms(1));
        assert_eq!(c.active, None);
        c.completed(&rq, ms(2));
        assert_eq!(take(&mut c, ms(2)).pid, 1 - rq.pid);
        c.exit_process(42, ms(3)); // never seen: nothing to do
    }

    /// Run a workload through the engine with CFQ on the fixed disk.
    fn run_engine(groups: Vec<crate::workload::group::GroupSpec>, depth: u32, fixed_ms: f64) -> (u64, u64) {
        use crate::disk::{self, DeviceOrder, DiskSpec};
        use crate::engine::{self, EngineConfig, RunControl};
        use crate::workload::{self, group::ProcessesSpec, Placement, WorkloadSpec};
        let d = DiskSpec {
            preset: Some("fixed".into()),
            queue_depth: depth,
            device_order: if depth > 1 { DeviceOrder::Sptf } else { DeviceOrder::Fifo },
            fixed_ms: Some(fixed_ms),
            ..DiskSpec::default()
        };
        let disk = disk::build(&d, std::path::Path::new(".")).unwrap();
        let spec = WorkloadSpec::Processes(ProcessesSpec { placement: Placement::Spread, group: groups });
        let built = workload::build(&spec, disk.capacity_sectors()).unwrap();
        let cfg = EngineConfig { queue: Default::default(), vm: Default::default(),
            queue_depth: depth,
            device_order: d.device_order,
            max_time: None,
            max_requests: None,
            seed: 3,
            cpus: None,
        };
        let out = engine::run(disk, Box::new(cfq()), built, &cfg, &RunControl::default()).unwrap();
        (out.collector.inserted, out.collector.completed())
    }

    /// Issue 9: when a process exits, the engine asks the elevator for
    /// work again. CFQ idles for the reader whose request just completed;
    /// the reader then exits, which expires its slice (2.6.20
    /// `cfq_exit_cfqq` → `cfq_schedule_dispatch`), so the other process's
    /// request goes to the disk at once, not when the stale idle timer
    /// fires 8 ms later.
    #[test]
    fn an_exit_restarts_dispatch_at_once() {
        use crate::disk::{self, DiskSpec};
        use crate::engine::{self, EngineConfig, Observer, RunControl};
        use crate::workload::group::{GroupSpec, ProcessesSpec};
        use crate::workload::{self, Placement, WorkloadSpec};
        #[derive(Default)]
        struct Dispatches(Vec<(ProcessId, SimTime)>);
        impl Observer for Dispatches {
            fn dispatched(&mut self, rq: &Request, now: SimTime) {
                self.0.push((rq.pid, now));
            }
        }
        let one = |start_ms| GroupSpec {
            request_kb: 16.0,
            file_mb: 16.0 / 1024.0,
            passes: 1,
            start_ms,
            ..GroupSpec::default()
        };
        let d = DiskSpec { preset: Some("fixed".into()), fixed_ms: Some(5.0), ..DiskSpec::default() };
        let disk = disk::build(&d, std::path::Path::new(".")).unwrap();
        let spec = WorkloadSpec::Processes(ProcessesSpec { placement: Placement::Spread, group: vec![one(0.0), one(1.0)] });
        let built = workload::build(&spec, disk.capacity_sectors()).unwrap();
        let cfg = EngineConfig { queue: Default::default(), vm: Default::default(), queue_depth: 1, device_order: Default::default(), max_time: None, max_requests: None, seed: 1, cpus: None };
        let mut obs = Dispatches::default();
        engine::run_observed(disk, Box::new(cfq()), built, &cfg, &RunControl::default(), &mut obs).unwrap();
        assert_eq!(obs.0, vec![(0, ms(0)), (1, ms(5))]);
    }

    #[test]
    fn runs_to_completion_in_the_engine() {
        use crate::workload::group::{GroupSpec, OpSpec};
        use crate::workload::think::ThinkSpec;
        let g = |count, op, sync, think_ms| GroupSpec {
            count,
            op,
            sync,
            max_outstanding: 4,
            request_kb: 16.0,
            file_mb: 2.0,
            think: ThinkSpec::Exponential { mean_ms: think_ms },
            passes: 1,
            ..GroupSpec::default()
        };
        for depth in [1, 8] {
            for fixed_ms in [0.5, 5.0] {
                let groups = vec![
                    g(3, OpSpec::Read, true, 1.0),
                    g(2, OpSpec::Write, false, 0.1),
                    g(2, OpSpec::Mix, true, 12.0),
                ];
                let (inserted, completed) = run_engine(groups, depth, fixed_ms);
                assert!(inserted > 0);
                assert_eq!(inserted, completed, "depth {depth}, {fixed_ms} ms");
            }
        }
    }
}

//! The blk-mq layer around Linux 6.1's schedulers (block/blk-mq.c,
//! blk-mq-sched.c, blk-mq-tag.c): what mq-deadline, BFQ, Kyber and `none`
//! see of the block layer that 2.6's elevators did not have.
//!
//! - **Request tags.** A request exists only once it holds a tag from the
//!   queue's pool: `nr_requests` scheduler tags with an elevator (default
//!   `2 * min(queue_depth, 128)`, `blk_mq_init_sched`), the driver's
//!   `queue_depth` tags without one. A submitter that finds none sleeps
//!   until a completion frees one (`blk_mq_get_tag`). The elevator's
//!   `limit_depth` may confine some requests to the first bits of each
//!   bitmap word (`shallow_depth`), as mq-deadline's `async_depth`, BFQ's
//!   async/sync-write limits and Kyber's 75% for async requests do.
//! - **`has_work` before `dispatch_request`**, and a rerun of the queue
//!   `BLK_MQ_BUDGET_DELAY` (3 ms) after a dispatch that found work but
//!   returned nothing (`__blk_mq_do_dispatch_sched`).
//!
//! [`BlkMq`] wraps a scheduler written against [`MqSched`] and is the
//! [`Elevator`] the engine drives.
//!
//! Simplified: one CPU and one hardware queue; a freed tag goes at once to
//! the oldest waiter that can use it (sbitmap wakes waiters in batches of
//! up to 8 — `sbq_calc_wake_batch` — and the woken task retries); a
//! process blocked on a tag submits its later requests only once it has
//! one, as a sleeping task would.

pub mod sbitmap;

use super::anticipatory::hz::Hz;
use super::{Dispatch, Elevator, Tunable, TunableValues};
use crate::request::{Dir, IoPrio, ProcessId, Request};
use crate::time::SimTime;
use sbitmap::{Sbitmap, SbitmapQueue};
use std::collections::VecDeque;

/// The tick of Debian's 6.1 kernels (`CONFIG_HZ=250`, ELEVATORS.md 0):
/// mq-deadline's and BFQ's jiffy-valued settings round to 4 ms.
pub const KERNEL_HZ: u32 = 250;

/// `BLKDEV_DEFAULT_RQ` (include/linux/blk-mq.h).
pub const BLKDEV_DEFAULT_RQ: u32 = 128;
/// `BLKDEV_MIN_RQ`: sysfs raises a smaller `nr_requests` to this.
pub const BLKDEV_MIN_RQ: u32 = 4;
/// `MAX_SCHED_RQ` = 16 · `BLKDEV_DEFAULT_RQ` (block/blk-mq-sched.h).
pub const MAX_SCHED_RQ: u32 = 16 * BLKDEV_DEFAULT_RQ;
/// `BLK_MQ_BUDGET_DELAY` (block/blk-mq-sched.c), 3 ms.
pub const BUDGET_DELAY_NS: u64 = 3_000_000;

/// `op_is_sync` (include/linux/blk_types.h): every read, and writes marked
/// REQ_SYNC (O_DIRECT, O_SYNC, fsync'd data: the workload's `sync` flag).
pub fn op_is_sync(rq: &Request) -> bool {
    rq.dir == Dir::Read || rq.sync
}

/// `op_is_write`.
pub fn op_is_write(rq: &Request) -> bool {
    rq.dir == Dir::Write
}

/// The scheduler request pool blk-mq gives an elevator
/// (`blk_mq_init_sched`): twice the smaller of the device's queue depth
/// and 128.
pub fn default_nr_requests(queue_depth: u32) -> u32 {
    2 * queue_depth.min(BLKDEV_DEFAULT_RQ)
}

/// The `nr_requests` tunable every 6.1 scheduler here carries (sysfs
/// `queue/nr_requests`, `blk_mq_update_nr_requests`).
pub const NR_REQUESTS: Tunable = Tunable {
    name: "nr_requests",
    unit: "requests",
    min: 0.0,
    max: MAX_SCHED_RQ as f64,
    default: 0.0,
    help: "scheduler tags (queue/nr_requests); 0 = blk-mq's default 2*min(queue_depth, 128); below 4 counts as 4",
};

/// `nr_requests` from the tunable: 0 is blk-mq's default; sysfs raises
/// values under `BLKDEV_MIN_RQ` (`queue_requests_store`).
pub fn nr_requests(v: &TunableValues, queue_depth: u32) -> u32 {
    match v.get("nr_requests") as u32 {
        0 => default_nr_requests(queue_depth),
        n => n.max(BLKDEV_MIN_RQ),
    }
}

/// Where an elevator lets bios merge into the requests it holds (its
/// `elevator_mq_ops.bio_merge`, `request_merge` and insert merging).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MergeStyle {
    /// No elevator merges (`none`: its requests go straight to the driver,
    /// so its software queue, which `blk_bio_list_merge` would search, is
    /// empty): only the task's plug merges.
    Plug,
    /// `blk_mq_sched_try_merge` (mq-deadline's `dd_bio_merge`, BFQ's
    /// `bfq_bio_merge`): `elv_merge` over `q->last_merge`, the back-merge
    /// hash and the elevator's front-merge lookup (`request_merge`), then
    /// the grown request with its neighbour (`attempt_back_merge`,
    /// `attempt_front_merge`); a request merges at insertion too
    /// (`blk_mq_sched_try_insert_merge`).
    Hash,
    /// `blk_bio_list_merge` over a list the elevator names (Kyber's
    /// `kyber_bio_merge`: the software queue's list of the bio's domain),
    /// newest first, at most 8 looked at; no insert merging.
    List,
}

/// What an mq elevator adds to the [`Elevator`] hooks (`elevator_mq_ops`).
pub trait MqSched: Elevator {
    /// `limit_depth`, at tag allocation: the shallow depth (usable bits per
    /// word of `tags`) for this request, or None for no limit.
    fn limit_depth(&self, _rq: &Request, _tags: &Sbitmap) -> Option<u32> {
        None
    }
    /// `has_work`: is there something `dispatch` could hand out?
    fn has_work(&self) -> bool {
        self.queued() > 0
    }
    /// `depth_updated`: the `min_shallow_depth` the elevator gives the
    /// scheduler tags (`sbitmap_queue_min_shallow_depth`), which sets
    /// their wake batch; None leaves it unlimited.
    fn min_shallow_depth(&self, _tags: &Sbitmap) -> Option<u32> {
        None
    }
    /// How bios merge into this elevator's requests.
    fn merge_style(&self) -> MergeStyle {
        MergeStyle::Plug
    }
    /// For [`MergeStyle::List`]: the requests `blk_bio_list_merge` walks
    /// for `bio`, newest first.
    fn bio_merge_list(&self, _bio: &Request, _out: &mut Vec<Request>) {}
    /// The part of `insert_requests` before `blk_mq_sched_try_insert_merge`
    /// (mq-deadline counts the request inserted, BFQ finds its queue:
    /// `bfq_init_rq`). With [`MqSched::insert_prepared`] it is
    /// [`Elevator::insert`].
    fn prepare(&mut self, _rq: &Request, _now: SimTime) {}
    /// The rest of `insert_requests` for a request that did not merge.
    fn insert_prepared(&mut self, rq: Request, now: SimTime) {
        self.insert(rq, now)
    }
    /// A request prepared or queued here was freed without being
    /// dispatched: it merged into another (`blk_mq_free_request` →
    /// `finish_request` of a request not started).
    fn freed(&mut self, _rq: &Request) {}
    /// Whether the elevator asked for a queue run since last asked
    /// (BFQ's `bfq_schedule_dispatch`, Kyber's `kyber_domain_wake`).
    fn take_kick(&mut self) -> bool {
        false
    }
    /// `allow_merge` as blk-mq calls it (`elv_bio_merge_ok`,
    /// `blk_mq_sched_allow_merge`), which may change the elevator (BFQ
    /// merges cooperating queues there). Default: [`Elevator::allow_merge`].
    fn allow_bio_merge(&mut self, rq: &Request, bio: &Request, _now: SimTime) -> bool {
        self.allow_merge(rq, bio)
    }
}

/// One queue run's result (`__blk_mq_sched_dispatch_requests`): the
/// requests given to the driver (`queue_rq`) and every request taken from
/// the elevator, including those left on the dispatch list for want of a
/// driver tag.
#[derive(Debug, Default)]
pub struct MqRun {
    pub to_driver: Vec<Request>,
    pub pulled: Vec<Request>,
}

/// What the block layer's blk-mq path and the engine ask of [`BlkMq`]
/// (`crate::blk` and `crate::engine` hold the elevator as `dyn Elevator`;
/// [`Elevator::as_mq`] reaches this).
pub trait MqOps {
    /// `__blk_mq_get_tag` with the elevator's `limit_depth`: a scheduler
    /// tag (a driver tag for `none`) for `rq`, or None.
    fn get_tag(&mut self, rq: &Request) -> Option<u32>;
    /// A tag for a flush: no `limit_depth` (`__blk_mq_alloc_requests`).
    fn get_flush_tag(&mut self, rq: &Request) -> Option<u32>;
    /// `blk_insert_flush` for a device with a write cache: the flush goes
    /// to the head of the dispatch list, bypassing the elevator, and the
    /// queue runs (`blk_mq_run_hw_queues(q, false)` from the requeue work).
    fn insert_flush(&mut self, rq: Request);
    /// `sbitmap_prepare_to_wait`: `pid` sleeps for a tag.
    fn prepare_to_wait(&mut self, pid: ProcessId);
    /// `sbitmap_finish_wait`: `pid` runs again.
    fn finish_wait(&mut self, pid: ProcessId);
    /// `blk_mq_put_tag` → `sbitmap_queue_clear`: the tasks it wakes go to
    /// `woken`.
    fn put_tag(&mut self, tag: u32, woken: &mut Vec<ProcessId>);
    fn merge_style(&self) -> MergeStyle;
    fn bio_merge_list(&self, bio: &Request, out: &mut Vec<Request>);
    fn prepare(&mut self, rq: &Request, now: SimTime);
    fn insert_prepared(&mut self, rq: Request, now: SimTime);
    fn freed(&mut self, rq: &Request);
    /// [`MqSched::allow_bio_merge`].
    fn allow_bio_merge(&mut self, rq: &Request, bio: &Request, now: SimTime) -> bool;
    /// `blk_mq_run_hw_queue`: a run is due (`async_run`: from kblockd, which
    /// absorbs a pending delayed run: `kblockd_mod_delayed_work_on` with
    /// no delay).
    fn run_hw_queue(&mut self, async_run: bool);
    /// Carry out a due run. Does nothing if none is due.
    fn run(&mut self, now: SimTime, out: &mut MqRun);
    /// The driver: `depth` driver tags, and whether it has a dispatch
    /// budget (`.get_budget`: SCSI) or not (virtio-blk, NVMe).
    fn set_driver(&mut self, depth: u32, budget: bool);
    /// Scheduler tags in use (tests, checks).
    fn tags_in_use(&self) -> u32;
}

/// `BLK_MQ_DISPATCH_BUSY_EWMA_WEIGHT`, `BLK_MQ_DISPATCH_BUSY_EWMA_FACTOR`.
const DISPATCH_BUSY_EWMA_WEIGHT: u32 = 8;
const DISPATCH_BUSY_EWMA_FACTOR: u32 = 4;

/// The hardware queue (`blk_mq_hw_ctx`, one) around an [`MqSched`]: its
/// scheduler tags and sleepers, the dispatch list, SCHED_RESTART, the
/// delayed run, and the driver tags.
pub struct BlkMq<S: MqSched> {
    inner: S,
    tags: SbitmapQueue,
    /// Driver tags (`queue_depth`) and those held by requests given to the
    /// driver or pulled with one.
    driver_depth: u32,
    in_driver: u32,
    /// The driver has `.get_budget` (SCSI): the elevator is asked only
    /// when the device has room.
    budget: bool,
    /// `hctx->dispatch`: requests taken from the elevator that found no
    /// driver tag, served first at the next run.
    dispatch: VecDeque<Request>,
    /// `BLK_MQ_S_SCHED_RESTART`: the next freed request runs the queue.
    restart: bool,
    /// `hctx->dispatch_busy` (an EWMA).
    dispatch_busy: u32,
    /// A run is due (`blk_mq_run_hw_queue` was called), and whether by
    /// kblockd.
    run_due: bool,
    run_async: bool,
    /// The delayed run (`hctx->run_work` armed by
    /// `blk_mq_delay_run_hw_queues`), if pending.
    rerun_at: Option<SimTime>,
    hz: Hz,
}

impl<S: MqSched> BlkMq<S> {
    pub fn new(inner: S, nr_requests: u32) -> BlkMq<S> {
        let mut tags = SbitmapQueue::new(nr_requests.max(1));
        if let Some(d) = inner.min_shallow_depth(&tags.sb) {
            tags.set_min_shallow_depth(d);
        }
        BlkMq {
            inner,
            tags,
            driver_depth: 1,
            in_driver: 0,
            budget: false,
            dispatch: VecDeque::new(),
            restart: false,
            dispatch_busy: 0,
            run_due: false,
            run_async: false,
            rerun_at: None,
            hz: Hz::new(KERNEL_HZ),
        }
    }

    pub fn inner(&self) -> &S {
        &self.inner
    }

    pub fn inner_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    pub fn nr_requests(&self) -> u32 {
        self.tags.sb.depth()
    }

    /// The scheduler tags' wake batch.
    pub fn wake_batch(&self) -> u32 {
        self.tags.wake_batch()
    }

    /// An elevator kick (`bfq_schedule_dispatch`, Kyber's token wake)
    /// runs the queue from kblockd.
    fn note_kick(&mut self) {
        if self.inner.take_kick() {
            self.run_hw_queue(true);
        }
    }

    /// `blk_mq_update_dispatch_busy`.
    fn update_dispatch_busy(&mut self, busy: bool) {
        let mut ewma = self.dispatch_busy;
        if ewma == 0 && !busy {
            return;
        }
        ewma *= DISPATCH_BUSY_EWMA_WEIGHT - 1;
        if busy {
            ewma += 1 << DISPATCH_BUSY_EWMA_FACTOR;
        }
        self.dispatch_busy = ewma / DISPATCH_BUSY_EWMA_WEIGHT;
    }

    /// `blk_mq_get_driver_tag`: one of the driver's `queue_depth` tags.
    fn get_driver_tag(&mut self) -> bool {
        if self.in_driver < self.driver_depth {
            self.in_driver += 1;
            true
        } else {
            false
        }
    }

    /// `blk_mq_dispatch_rq_list` for requests holding a driver tag (the
    /// first `tagged` of `list`) and the rest: each goes to the driver if
    /// it has or gets a driver tag; the first that finds none stops the
    /// list, which goes back on the dispatch list with SCHED_RESTART set
    /// (`blk_mq_prep_dispatch_rq` → `blk_mq_mark_tag_wait`). True if all
    /// went and some did.
    fn dispatch_rq_list(&mut self, mut list: VecDeque<Request>, mut tagged: usize, out: &mut MqRun) -> bool {
        if list.is_empty() {
            return false;
        }
        let mut queued = 0;
        while let Some(&rq) = list.front() {
            if tagged == 0 && !self.get_driver_tag() {
                self.restart = true;
                break;
            }
            tagged = tagged.saturating_sub(1);
            list.pop_front();
            out.to_driver.push(rq);
            queued += 1;
        }
        if !list.is_empty() {
            // The rest waits on hctx->dispatch; SCHED_RESTART is set, so
            // the next freed request runs the queue (no run now).
            self.dispatch.extend(list);
            self.update_dispatch_busy(true);
            return false;
        }
        self.update_dispatch_busy(false);
        queued != 0
    }

    /// `__blk_mq_do_dispatch_sched`: take requests from the elevator while
    /// it has work, up to `max_dispatch`, stopping after the first that
    /// finds no driver tag (so one request more than the device takes
    /// leaves the elevator, unless the driver has a budget); work but no
    /// request arms the delayed run. True if it dispatched and may do more.
    fn do_dispatch_sched(&mut self, now: SimTime, out: &mut MqRun) -> bool {
        let max_dispatch = if self.dispatch_busy > 0 { 1 } else { self.tags.sb.depth() };
        let mut list = VecDeque::new();
        let mut tagged = 0;
        let mut run_queue = false;
        while list.len() < max_dispatch as usize {
            if !self.inner.has_work() || !self.dispatch.is_empty() {
                break;
            }
            // blk_mq_get_dispatch_budget: SCSI's fails while the device
            // is full (and its completion reruns the queue).
            if self.budget && self.in_driver + tagged >= self.driver_depth {
                self.restart = true;
                break;
            }
            let rq = match self.inner.dispatch(now) {
                Dispatch::Request(rq) => rq,
                Dispatch::Nothing | Dispatch::IdleUntil(_) => {
                    run_queue = true;
                    break;
                }
            };
            out.pulled.push(rq);
            list.push_back(rq);
            if self.in_driver + tagged >= self.driver_depth {
                // No driver tag: stop taking requests.
                break;
            }
            tagged += 1;
        }
        if list.is_empty() {
            if run_queue {
                self.delay_run_hw_queues(now);
            }
            return false;
        }
        // The tagged ones hold their driver tags from here.
        self.in_driver += tagged;
        self.dispatch_rq_list(list, tagged as usize, out)
    }

    /// `blk_mq_delay_run_hw_queues(q, BLK_MQ_BUDGET_DELAY)`: a run in
    /// `msecs_to_jiffies(3)` = 1 jiffy at HZ=250, i.e. at the next tick;
    /// a run already pending is left alone (6.1.192: "If there is already
    /// a run_work pending, leave the pending delay untouched").
    fn delay_run_hw_queues(&mut self, now: SimTime) {
        if self.rerun_at.is_some() {
            return;
        }
        let j = self.hz.jiffies(now) + self.hz.from_ns_ceil(BUDGET_DELAY_NS);
        self.rerun_at = Some(SimTime(j * self.hz.jiffy_ns()));
    }

    /// `blk_mq_hctx_has_pending`.
    fn has_pending(&self) -> bool {
        !self.dispatch.is_empty() || self.inner.has_work()
    }
}

impl<S: MqSched> MqOps for BlkMq<S> {
    fn get_tag(&mut self, rq: &Request) -> Option<u32> {
        let shallow = self.inner.limit_depth(rq, &self.tags.sb);
        self.tags.sb.get(shallow)
    }

    fn get_flush_tag(&mut self, _rq: &Request) -> Option<u32> {
        self.tags.sb.get(None)
    }

    fn insert_flush(&mut self, rq: Request) {
        self.dispatch.push_front(rq);
        self.run_hw_queue(false);
    }

    fn prepare_to_wait(&mut self, pid: ProcessId) {
        self.tags.prepare_to_wait(pid);
    }

    fn finish_wait(&mut self, pid: ProcessId) {
        self.tags.finish_wait(pid);
    }

    fn put_tag(&mut self, tag: u32, woken: &mut Vec<ProcessId>) {
        self.tags.clear(tag, woken);
    }

    fn merge_style(&self) -> MergeStyle {
        self.inner.merge_style()
    }

    fn bio_merge_list(&self, bio: &Request, out: &mut Vec<Request>) {
        self.inner.bio_merge_list(bio, out);
    }

    fn prepare(&mut self, rq: &Request, now: SimTime) {
        self.inner.prepare(rq, now);
    }

    fn insert_prepared(&mut self, rq: Request, now: SimTime) {
        self.inner.insert_prepared(rq, now);
        self.note_kick();
    }

    fn freed(&mut self, rq: &Request) {
        self.inner.freed(rq);
    }

    fn allow_bio_merge(&mut self, rq: &Request, bio: &Request, now: SimTime) -> bool {
        self.inner.allow_bio_merge(rq, bio, now)
    }

    fn run_hw_queue(&mut self, async_run: bool) {
        self.run_due = true;
        self.run_async |= async_run;
    }

    /// `__blk_mq_sched_dispatch_requests` (and `blk_mq_do_dispatch_sched`'s
    /// loop): the dispatch list first, and the elevator only if all of it
    /// went.
    fn run(&mut self, now: SimTime, out: &mut MqRun) {
        if !self.run_due {
            return;
        }
        self.run_due = false;
        if !self.has_pending() {
            // blk_mq_run_hw_queue does nothing without pending work.
            self.run_async = false;
            return;
        }
        if std::mem::take(&mut self.run_async) {
            // mod_delayed_work with no delay: the pending delayed run is
            // this one.
            self.rerun_at = None;
        }
        if !self.dispatch.is_empty() {
            self.restart = true;
            let list = std::mem::take(&mut self.dispatch);
            if !self.dispatch_rq_list(list, 0, out) {
                return;
            }
        }
        while self.do_dispatch_sched(now, out) {}
    }

    fn set_driver(&mut self, depth: u32, budget: bool) {
        self.driver_depth = depth.max(1);
        self.budget = budget;
    }

    fn tags_in_use(&self) -> u32 {
        self.tags.sb.weight()
    }
}

impl<S: MqSched> Elevator for BlkMq<S> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    /// A request that already holds a tag reaches the elevator
    /// (`blk_mq_sched_insert_request` with a run).
    fn insert(&mut self, rq: Request, now: SimTime) {
        self.inner.insert(rq, now);
        self.note_kick();
        self.run_hw_queue(true);
    }

    /// One request for a free driver slot, as a queue run with a budget
    /// gives it: the dispatch list's head, else the elevator's choice if
    /// it has work; work but no request arms the delayed run. (The engine
    /// runs the queue through [`MqOps::run`]; this is for callers that
    /// hand the elevator one slot at a time.)
    fn dispatch(&mut self, now: SimTime) -> Dispatch {
        if let Some(rq) = self.dispatch.pop_front() {
            return Dispatch::Request(rq);
        }
        if !self.inner.has_work() {
            return Dispatch::Nothing;
        }
        let d = self.inner.dispatch(now);
        if d == Dispatch::Nothing {
            self.delay_run_hw_queues(now);
        }
        d
    }

    /// `finish_request` (`completed_request` first), the driver tag back,
    /// and `blk_mq_sched_restart`: SCHED_RESTART runs the queue (the
    /// scheduler tag goes back from the block layer, which holds it).
    fn completed(&mut self, rq: &Request, now: SimTime) {
        // A flush never was the elevator's.
        if rq.nr_sectors > 0 {
            self.inner.completed(rq, now);
        }
        self.in_driver = self.in_driver.saturating_sub(1);
        self.note_kick();
        if std::mem::take(&mut self.restart) {
            self.run_hw_queue(true);
        }
    }

    fn timer(&mut self, now: SimTime) {
        if self.rerun_at.is_some_and(|t| t <= now) {
            // blk_mq_run_work_fn: the delayed run.
            self.rerun_at = None;
            self.run_due = true;
        }
        if self.inner.armed_timer().is_some_and(|t| t <= now) {
            self.inner.timer(now);
            self.note_kick();
        }
    }

    fn armed_timer(&self) -> Option<SimTime> {
        match (self.inner.armed_timer(), self.rerun_at) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn set_ioprio(&mut self, pid: ProcessId, prio: IoPrio) {
        self.inner.set_ioprio(pid, prio);
    }

    fn exit_process(&mut self, pid: ProcessId, now: SimTime) {
        self.inner.exit_process(pid, now);
        self.note_kick();
    }

    /// Requests the elevator holds and those on the dispatch list.
    fn queued(&self) -> usize {
        self.inner.queued() + self.dispatch.len()
    }

    forward_to_inner!();

    fn as_mq(&mut self) -> Option<&mut dyn MqOps> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testutil::{ctx, ms, read, write};

    /// A FIFO that hands out nothing while `stalled`.
    struct Fifo {
        q: VecDeque<Request>,
        stalled: bool,
    }
    impl Fifo {
        fn new() -> Fifo {
            Fifo { q: VecDeque::new(), stalled: false }
        }
    }
    impl Elevator for Fifo {
        fn name(&self) -> &'static str {
            "fifo-test"
        }
        fn insert(&mut self, rq: Request, _now: SimTime) {
            self.q.push_back(rq);
        }
        fn dispatch(&mut self, _now: SimTime) -> Dispatch {
            if self.stalled {
                return Dispatch::Nothing;
            }
            self.q.pop_front().map_or(Dispatch::Nothing, Dispatch::Request)
        }
        fn queued(&self) -> usize {
            self.q.len()
        }
    }
    impl MqSched for Fifo {}

    fn hw(depth: u32, budget: bool) -> BlkMq<Fifo> {
        let mut m = BlkMq::new(Fifo::new(), 8);
        m.set_driver(depth, budget);
        m
    }

    fn run(m: &mut BlkMq<Fifo>, now: SimTime) -> (Vec<u32>, Vec<u32>) {
        let mut out = MqRun::default();
        m.run(now, &mut out);
        (out.to_driver.iter().map(|r| r.id).collect(), out.pulled.iter().map(|r| r.id).collect())
    }

    #[test]
    fn defaults_follow_blk_mq_init_sched() {
        assert_eq!(default_nr_requests(1), 2);
        assert_eq!(default_nr_requests(32), 64);
        assert_eq!(default_nr_requests(1024), 256);
        let v = |n: f64| TunableValues([("nr_requests".to_string(), n)].into());
        assert_eq!(nr_requests(&v(0.0), 32), 64);
        assert_eq!(nr_requests(&v(2.0), 32), 4, "sysfs raises it to BLKDEV_MIN_RQ");
        assert_eq!(nr_requests(&v(100.0), 32), 100);
        assert!(op_is_sync(&read(0, 0, 0)));
        assert!(!op_is_sync(&write(0, 0, 0)));
        assert!(op_is_sync(&Request { sync: true, ..write(0, 0, 0) }));
    }

    /// `sbq_calc_wake_batch` with each elevator's `min_shallow_depth`
    /// (`dd_depth_updated`, `bfq_depth_updated`: 1; `kyber_depth_updated`:
    /// its async depth; none: unlimited): at queue depth 32, mq-deadline and
    /// BFQ wake 1, Kyber 6 and none 4 sleepers per batch; at depth 1 all 1.
    #[test]
    fn wake_batches_are_one_for_mq_deadline_and_bfq_six_for_kyber_four_for_none() {
        let batch = |name: &str, qd: u32| {
            let mut c = ctx();
            c.queue_depth = qd;
            let (mut e, _) = crate::sched::build(name, &Default::default(), &c).unwrap();
            let m = e.as_mq().unwrap();
            // Fill the tags, put one task to sleep, and count the frees
            // until it wakes.
            let mut tags = Vec::new();
            while let Some(t) = m.get_tag(&read(0, 0, 0)) {
                tags.push(t);
            }
            for pid in 0..8 {
                m.prepare_to_wait(pid);
            }
            let mut woken = Vec::new();
            let mut frees = 0;
            while woken.is_empty() {
                m.put_tag(tags.pop().unwrap(), &mut woken);
                frees += 1;
            }
            // Eight sleepers are one per wait queue, and a batch wakes from
            // one queue (wake_up_nr): one task, however large the batch.
            assert_eq!(woken.len(), 1, "{name}");
            frees
        };
        for (name, want) in [("mq-deadline", 1), ("bfq", 1), ("kyber", 6), ("none", 4)] {
            assert_eq!(batch(name, 32), want, "{name} at depth 32");
            assert_eq!(batch(name, 1), 1, "{name} at depth 1");
        }
    }

    /// `sbitmap_queue_wake_up`: completions count only while someone
    /// sleeps; a batch wakes the first wait queue with sleepers from
    /// `wake_index` on, and sleepers spread over the queues round robin.
    #[test]
    fn sleepers_wake_a_batch_at_a_time_from_round_robin_wait_queues() {
        let mut q = SbitmapQueue::new(32); // 8 bits per word: batch 4
        assert_eq!(q.wake_batch(), 4);
        for _ in 0..32 {
            q.sb.get(None).unwrap();
        }
        let mut woken = Vec::new();
        q.clear(0, &mut woken); // nobody asleep: not counted
        q.sb.get(None).unwrap();
        for pid in 10..20 {
            q.prepare_to_wait(pid); // ws 0..8, then 10 and 11 share ws 0 and 1 with 18, 19
        }
        for t in 1..4 {
            q.clear(t, &mut woken);
        }
        assert!(woken.is_empty(), "three frees of a batch of four wake nobody");
        q.clear(4, &mut woken);
        assert_eq!(woken, vec![10, 18], "the fourth wakes wait queue 0: its two sleepers");
        woken.clear();
        for t in 5..9 {
            q.clear(t, &mut woken);
        }
        assert_eq!(woken, vec![11, 19], "then wait queue 1");
        assert_eq!(q.ws_active(), 10, "woken tasks count until they run");
        q.finish_wait(10);
        assert_eq!((q.ws_active(), q.sleeping()), (9, 6));
    }

    /// A woken task is not handed the freed tag: whoever asks first gets it.
    #[test]
    fn a_freed_tag_goes_to_whoever_asks_first() {
        let mut m = hw(1, false);
        let tags: Vec<_> = (0..8).map(|_| m.get_tag(&read(0, 0, 0)).unwrap()).collect();
        m.prepare_to_wait(7);
        let mut woken = Vec::new();
        m.put_tag(tags[3], &mut woken);
        assert_eq!(woken, vec![7]);
        assert_eq!(m.get_tag(&read(1, 1, 0)), Some(tags[3]), "a running submitter takes it");
        m.finish_wait(7);
        assert_eq!(m.get_tag(&read(2, 7, 0)), None, "the woken task finds none and sleeps again");
    }

    /// `__blk_mq_do_dispatch_sched` without a budget (virtio-blk, NVMe):
    /// the run takes one request more than the driver has tags for and
    /// leaves it on the dispatch list, with SCHED_RESTART set; the next
    /// completion runs the queue, which serves the dispatch list first and
    /// again takes one more.
    #[test]
    fn a_run_takes_one_request_beyond_the_driver_tags_without_a_budget() {
        let mut m = hw(1, false);
        for i in 0..4 {
            m.insert(read(i, i, 0), ms(0));
        }
        assert_eq!(run(&mut m, ms(0)), (vec![0], vec![0, 1]));
        assert_eq!((m.inner().queued(), m.queued()), (2, 3), "1 waits on the dispatch list");
        assert_eq!(run(&mut m, ms(0)), (vec![], vec![]), "no run is due");
        m.insert(read(9, 9, 0), ms(0));
        assert_eq!(run(&mut m, ms(0)), (vec![], vec![]), "the dispatch list has no driver tag: the elevator is not asked");
        m.completed(&read(0, 0, 0), ms(1));
        assert_eq!(run(&mut m, ms(1)), (vec![1], vec![2]), "SCHED_RESTART: 1 goes, 2 is taken");
    }

    /// `blk_insert_flush`: a flush bypasses the elevator to the head of the
    /// dispatch list, ahead of a request taken beyond the driver tags, and
    /// its completion is not the elevator's.
    #[test]
    fn a_flush_goes_to_the_head_of_the_dispatch_list() {
        let mut m = hw(1, false);
        for i in 0..3 {
            m.insert(read(i, i, 0), ms(0));
        }
        assert_eq!(run(&mut m, ms(0)), (vec![0], vec![0, 1]));
        let flush = Request { nr_sectors: 0, ..write(7, 7, 0) };
        m.insert_flush(flush);
        assert_eq!(run(&mut m, ms(0)), (vec![], vec![]), "no driver tag yet");
        m.completed(&read(0, 0, 0), ms(1));
        assert_eq!(run(&mut m, ms(1)), (vec![7], vec![]), "the flush first, then the dispatch list stays");
        m.completed(&flush, ms(2));
        assert_eq!(run(&mut m, ms(2)), (vec![1], vec![2]));
        assert_eq!(m.inner().queued(), 0);
    }

    /// With a budget (SCSI) the elevator is asked only when the device has
    /// room; a full device marks the restart.
    #[test]
    fn with_a_budget_the_elevator_is_asked_only_with_room() {
        let mut m = hw(1, true);
        for i in 0..3 {
            m.insert(read(i, i, 0), ms(0));
        }
        assert_eq!(run(&mut m, ms(0)), (vec![0], vec![0]));
        m.completed(&read(0, 0, 0), ms(1));
        assert_eq!(run(&mut m, ms(1)), (vec![1], vec![1]));
    }

    /// No request parked and nothing kicked: a completion does not run the
    /// queue (blk-mq has no run per completion; SCHED_RESTART was not set).
    #[test]
    fn a_completion_without_sched_restart_runs_nothing() {
        let mut m = hw(2, false);
        m.insert(read(0, 0, 0), ms(0));
        assert_eq!(run(&mut m, ms(0)), (vec![0], vec![0]));
        m.inner_mut().stalled = true;
        m.insert(read(1, 1, 0), ms(0));
        assert_eq!(run(&mut m, ms(0)), (vec![], vec![]), "work but no request");
        m.inner_mut().stalled = false;
        m.completed(&read(0, 0, 0), ms(1));
        assert_eq!(run(&mut m, ms(1)), (vec![], vec![]), "the completion runs nothing");
        // The delayed run does, at the next tick (HZ=250: 4 ms).
        assert_eq!(m.armed_timer(), Some(ms(4)));
        m.timer(ms(4));
        assert_eq!(run(&mut m, ms(4)), (vec![1], vec![1]));
    }

    /// `blk_mq_delay_run_hw_queues(q, BLK_MQ_BUDGET_DELAY)`: 3 ms is one
    /// jiffy at HZ=250, so the run comes at the next tick; a run already
    /// pending is left alone (6.1.192); a run from kblockd in between takes
    /// its place (`kblockd_mod_delayed_work_on` with no delay).
    #[test]
    fn work_without_a_request_reruns_at_the_next_tick_and_a_pending_rerun_stays() {
        let mut m = hw(1, false);
        m.inner_mut().stalled = true;
        m.insert(read(0, 0, 0), ms(1));
        assert_eq!(run(&mut m, ms(1)), (vec![], vec![]));
        assert_eq!(m.armed_timer(), Some(ms(4)), "the tick after 1 ms");
        m.run_hw_queue(false);
        assert_eq!(run(&mut m, ms(2)), (vec![], vec![]));
        assert_eq!(m.armed_timer(), Some(ms(4)), "left alone, not pushed back to 8 ms");
        m.run_hw_queue(true);
        let _ = run(&mut m, ms(5));
        assert_eq!(m.armed_timer(), Some(ms(8)), "the kblockd run took the pending one's place; it found nothing and armed anew");
        m.timer(ms(8));
        m.inner_mut().stalled = false;
        assert_eq!(run(&mut m, ms(8)), (vec![0], vec![0]));
        assert_eq!(m.armed_timer(), None);
    }
}

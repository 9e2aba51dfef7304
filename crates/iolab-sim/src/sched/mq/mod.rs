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

use super::{AnticipationStats, Dispatch, Elevator, Tunable, TunableValues};
use crate::request::{Dir, IoPrio, ProcessId, Request, RequestId};
use crate::time::SimTime;
use sbitmap::Sbitmap;
use std::collections::{HashMap, HashSet, VecDeque};

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
}

/// A request waiting for a tag.
struct Waiting {
    rq: Request,
}

/// Tags, waiters and queue reruns around an [`MqSched`].
pub struct BlkMq<S: MqSched> {
    inner: S,
    tags: Sbitmap,
    /// Tag held by each request in the scheduler or the device.
    held: HashMap<RequestId, u32>,
    /// Processes asleep in tag allocation, oldest first, each with the
    /// request it is allocating.
    waiters: VecDeque<Waiting>,
    /// The pids in `waiters` (a process sleeps there with one request at
    /// most): whether a submitter is asleep, without a walk over them.
    waiting_pids: HashSet<ProcessId>,
    /// Requests a sleeping process has yet to submit, per pid.
    later: HashMap<ProcessId, VecDeque<Request>>,
    /// The delayed queue run (`blk_mq_delay_run_hw_queues`), if pending.
    rerun_at: Option<SimTime>,
    /// Tests: wake by trying every sleeper, without the shortcuts, to
    /// check that the shortcuts change nothing.
    #[cfg(test)]
    try_every_sleeper: bool,
}

impl<S: MqSched> BlkMq<S> {
    pub fn new(inner: S, nr_requests: u32) -> BlkMq<S> {
        BlkMq {
            inner,
            tags: Sbitmap::new(nr_requests.max(1)),
            held: HashMap::new(),
            waiters: VecDeque::new(),
            waiting_pids: HashSet::new(),
            later: HashMap::new(),
            rerun_at: None,
            #[cfg(test)]
            try_every_sleeper: false,
        }
    }

    pub fn inner(&self) -> &S {
        &self.inner
    }

    pub fn inner_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    pub fn nr_requests(&self) -> u32 {
        self.tags.depth()
    }

    /// Requests waiting for a tag, including those not yet submitted.
    pub fn waiting(&self) -> usize {
        self.waiters.len() + self.later.values().map(VecDeque::len).sum::<usize>()
    }

    /// `blk_mq_get_tag` without sleeping: the request gets a tag and
    /// reaches the elevator, or None. `fails` is the largest depth per
    /// word that a get already failed with since the map last lost a bit:
    /// a get whose depth is not above it fails too (gets search every
    /// word whole, from the hint and wrapping, so failing does not depend
    /// on the hint), and is skipped; a failed get only resets the hint.
    fn try_admit(&mut self, rq: Request, now: SimTime, fails: &mut u32) -> Option<Request> {
        let shallow = self.inner.limit_depth(&rq, &self.tags);
        let depth = shallow.unwrap_or(u32::MAX);
        if depth <= *fails {
            self.tags.note_failed_get();
            return Some(rq);
        }
        match self.tags.get(shallow) {
            Some(tag) => {
                self.held.insert(rq.id, tag);
                self.inner.insert(rq, now);
                None
            }
            None => {
                *fails = depth;
                Some(rq)
            }
        }
    }

    /// Wake waiters while tags allow: each oldest waiter that now gets a
    /// tag submits its request, then its later ones until one finds no
    /// tag (it sleeps again, at the back).
    fn wake(&mut self, now: SimTime) {
        // No bit is freed while waking (gets only set bits), so a depth
        // that failed keeps failing for the whole loop; a full map fails
        // every depth (u32::MAX: unlimited).
        let shortcuts = self.shortcuts();
        let full = |tags: &Sbitmap| if shortcuts && tags.is_full() { u32::MAX } else { 0 };
        let mut fails = full(&self.tags);
        let mut i = 0;
        while i < self.waiters.len() {
            if fails == u32::MAX {
                // Every waiter left would try and fail, and a failed get
                // leaves only its hint reset: done in one step (a deep
                // queue has hundreds of sleepers, one freed tag each time).
                self.tags.note_failed_get();
                break;
            }
            if !shortcuts {
                fails = 0;
            }
            let rq = self.waiters[i].rq;
            if self.try_admit(rq, now, &mut fails).is_some() {
                i += 1;
                continue;
            }
            self.waiters.remove(i);
            self.waiting_pids.remove(&rq.pid);
            self.submit_later(rq.pid, now, &mut fails);
            fails = fails.max(full(&self.tags));
        }
    }

    /// Whether `wake` takes its shortcuts: always, but for the test that
    /// compares it with trying every sleeper.
    #[inline]
    fn shortcuts(&self) -> bool {
        #[cfg(test)]
        return !self.try_every_sleeper;
        #[cfg(not(test))]
        true
    }

    /// The submitter of `rq` sleeps in tag allocation, at the back.
    fn sleep(&mut self, rq: Request) {
        let new = self.waiting_pids.insert(rq.pid);
        debug_assert!(new, "process {} asleep twice", rq.pid);
        self.waiters.push_back(Waiting { rq });
    }

    /// The process runs again and submits the requests it held back.
    fn submit_later(&mut self, pid: ProcessId, now: SimTime, fails: &mut u32) {
        while let Some(next) = self.later.get_mut(&pid).and_then(VecDeque::pop_front) {
            if let Some(back) = self.try_admit(next, now, fails) {
                self.sleep(back);
                break;
            }
        }
        if self.later.get(&pid).is_some_and(VecDeque::is_empty) {
            self.later.remove(&pid);
        }
    }
}

impl<S: MqSched> Elevator for BlkMq<S> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    /// `blk_mq_submit_bio` → `blk_mq_get_new_requests` (tag, with the
    /// elevator's `limit_depth`) → `insert_requests`.
    fn insert(&mut self, rq: Request, now: SimTime) {
        let asleep = self.later.contains_key(&rq.pid) || self.waiting_pids.contains(&rq.pid);
        if asleep {
            self.later.entry(rq.pid).or_default().push_back(rq);
        } else if let Some(rq) = self.try_admit(rq, now, &mut 0) {
            self.sleep(rq);
        }
    }

    /// `__blk_mq_do_dispatch_sched`: ask only if `has_work`; work but no
    /// request arms the 3 ms rerun.
    fn dispatch(&mut self, now: SimTime) -> Dispatch {
        if !self.inner.has_work() {
            return Dispatch::Nothing;
        }
        let d = self.inner.dispatch(now);
        if d == Dispatch::Nothing {
            // kblockd_mod_delayed_work_on: a pending run is pushed back.
            self.rerun_at = Some(now + BUDGET_DELAY_NS);
        }
        d
    }

    /// `completed_request`, then the tag goes back (`blk_mq_free_request`
    /// → `blk_mq_put_tag`) and sleeping submitters wake.
    fn completed(&mut self, rq: &Request, now: SimTime) {
        self.inner.completed(rq, now);
        if let Some(tag) = self.held.remove(&rq.id) {
            self.tags.clear(tag);
        }
        self.wake(now);
    }

    fn timer(&mut self, now: SimTime) {
        if self.rerun_at.is_some_and(|t| t <= now) {
            self.rerun_at = None;
        }
        if self.inner.armed_timer().is_some_and(|t| t <= now) {
            self.inner.timer(now);
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
    }

    fn queued(&self) -> usize {
        self.inner.queued() + self.waiting()
    }

    fn anticipation(&self) -> Option<AnticipationStats> {
        self.inner.anticipation()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testutil::{ms, read, write};
    use proptest::prelude::*;

    proptest! {
        /// The wake's shortcuts (stop when full, skip depths that failed)
        /// admit the same requests in the same order with the same tags
        /// as trying every sleeper.
        #[test]
        fn wake_shortcuts_change_nothing(
            nr in 4u32..48,
            ops in proptest::collection::vec((0u8..3, 0u32..12), 1..400),
        ) {
            let mut fast = BlkMq::new(Fifo::mixed(), nr);
            let mut slow = BlkMq::new(Fifo::mixed(), nr);
            slow.try_every_sleeper = true;
            let (mut next_id, mut out): (RequestId, Vec<Request>) = (0, Vec::new());
            for (k, (op, pid)) in ops.into_iter().enumerate() {
                let now = ms(k as u64);
                match op {
                    0 => {
                        let rq = if next_id % 3 == 0 { write(next_id, pid, u64::from(next_id) * 8) } else { read(next_id, pid, u64::from(next_id) * 8) };
                        next_id += 1;
                        fast.insert(rq, now);
                        slow.insert(rq, now);
                    }
                    1 => {
                        let (a, b) = (fast.dispatch(now), slow.dispatch(now));
                        prop_assert_eq!(a, b);
                        if let Dispatch::Request(rq) = a {
                            out.push(rq);
                        }
                    }
                    _ => {
                        if !out.is_empty() {
                            let rq = out.remove(pid as usize % out.len());
                            fast.completed(&rq, now);
                            slow.completed(&rq, now);
                        }
                    }
                }
                prop_assert_eq!(&fast.held, &slow.held);
                prop_assert_eq!(fast.tags.weight(), slow.tags.weight());
                prop_assert_eq!(fast.waiting(), slow.waiting());
                // The hints agree: the next get, plain or shallow, would
                // take the same bit.
                for depth in [None, Some(1), Some(2), Some(3)] {
                    prop_assert_eq!(fast.tags.clone().get(depth), slow.tags.clone().get(depth));
                }
            }
        }
    }

    /// A FIFO (that dispatches nothing while stalled, `.1`) whose
    /// `limit_depth` is `.2`.
    struct Fifo(VecDeque<Request>, bool, fn(&Request) -> Option<u32>);
    impl Fifo {
        /// Writes limited to 1 bit per word.
        fn new(stalled: bool) -> Fifo {
            Fifo(VecDeque::new(), stalled, |rq| op_is_write(rq).then_some(1))
        }
        /// A limit that varies per request (by id), as BFQ's does per
        /// queue: none, or 1 to 4 bits per word.
        fn mixed() -> Fifo {
            Fifo(VecDeque::new(), false, |rq| (rq.id % 5 != 0).then_some(rq.id % 4 + 1))
        }
    }
    impl Elevator for Fifo {
        fn name(&self) -> &'static str {
            "fifo-test"
        }
        fn insert(&mut self, rq: Request, _now: SimTime) {
            self.0.push_back(rq);
        }
        fn dispatch(&mut self, _now: SimTime) -> Dispatch {
            if self.1 {
                return Dispatch::Nothing;
            }
            self.0.pop_front().map_or(Dispatch::Nothing, Dispatch::Request)
        }
        fn queued(&self) -> usize {
            self.0.len()
        }
    }
    impl MqSched for Fifo {
        fn limit_depth(&self, rq: &Request, _tags: &Sbitmap) -> Option<u32> {
            (self.2)(rq)
        }
    }

    fn take(m: &mut BlkMq<Fifo>) -> Request {
        match m.dispatch(ms(0)) {
            Dispatch::Request(rq) => rq,
            d => panic!("{d:?}"),
        }
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

    #[test]
    fn a_submitter_without_a_tag_sleeps_until_a_completion() {
        let mut m = BlkMq::new(Fifo::new(false), 2);
        m.insert(read(0, 0, 0), ms(0));
        m.insert(read(1, 1, 8), ms(0));
        m.insert(read(2, 2, 16), ms(0)); // no tag: asleep
        assert_eq!((m.inner().queued(), m.waiting(), m.queued()), (2, 1, 3));
        let a = take(&mut m);
        m.completed(&a, ms(1));
        // The freed tag went to pid 2, whose request reached the elevator.
        assert_eq!((m.inner().queued(), m.waiting()), (2, 0));
    }

    #[test]
    fn a_sleeping_process_submits_its_next_request_only_after_waking() {
        let mut m = BlkMq::new(Fifo::new(false), 2);
        m.insert(read(0, 0, 0), ms(0));
        m.insert(read(1, 0, 8), ms(0));
        m.insert(write(2, 1, 100), ms(0)); // pid 1 asleep
        m.insert(write(3, 1, 108), ms(0)); // not submitted yet
        m.insert(read(4, 2, 200), ms(0)); // pid 2 asleep behind pid 1
        assert_eq!(m.waiting(), 3);
        let a = take(&mut m);
        m.completed(&a, ms(1));
        // Pid 1 woke with the tag, and its next request went to the back.
        let ids: Vec<_> = m.waiters.iter().map(|w| w.rq.id).collect();
        assert_eq!(ids, vec![4, 3]);
        assert!(m.later.is_empty());
    }

    #[test]
    fn a_woken_process_submits_all_it_held_back_while_tags_last() {
        let mut m = BlkMq::new(Fifo::new(false), 4);
        for i in 0..4 {
            m.insert(read(i, 0, 8 * i as u64), ms(0));
        }
        for i in 4..7 {
            m.insert(read(i, 1, 1000 + 8 * i as u64), ms(0)); // 4 asleep, 5 and 6 held back
        }
        assert_eq!((m.waiters.len(), m.waiting()), (1, 3));
        // Two completions free two tags: 4 gets one, 5 the other, 6 sleeps.
        for _ in 0..2 {
            let rq = take(&mut m);
            m.completed(&rq, ms(1));
        }
        let ids: Vec<_> = m.waiters.iter().map(|w| w.rq.id).collect();
        assert_eq!((ids, m.later.len()), (vec![6], 0));
        // Its next request queues behind it, not past it.
        m.insert(read(7, 1, 5000), ms(2));
        assert_eq!(m.later[&1].len(), 1);
    }

    #[test]
    fn limited_requests_wait_while_unlimited_ones_get_the_rest() {
        // 4 tags: shift 0, 4 words of 1 bit; writes may use 1 bit per word
        // → all 4. Make it 8 tags: shift 1, 4 words of 2: writes get 4.
        let mut m = BlkMq::new(Fifo::new(false), 8);
        for i in 0..6 {
            m.insert(write(i, i, 1000 * i as u64), ms(0));
        }
        assert_eq!((m.inner().queued(), m.waiting()), (4, 2), "writes hold at most 4 of 8");
        m.insert(read(10, 10, 0), ms(0));
        assert_eq!(m.inner().queued(), 5, "a read still gets a tag");
    }

    #[test]
    fn work_without_a_request_reruns_the_queue_after_3_ms() {
        let mut m = BlkMq::new(Fifo::new(true), 4);
        assert_eq!(m.dispatch(ms(0)), Dispatch::Nothing);
        assert_eq!(m.armed_timer(), None, "no work: no rerun");
        m.insert(read(0, 0, 0), ms(1));
        assert_eq!(m.dispatch(ms(1)), Dispatch::Nothing);
        assert_eq!(m.armed_timer(), Some(ms(4)));
        assert_eq!(m.dispatch(ms(2)), Dispatch::Nothing);
        assert_eq!(m.armed_timer(), Some(ms(5)), "mod_delayed_work pushes it back");
        m.timer(ms(5));
        assert_eq!(m.armed_timer(), None);
    }
}

//! The anticipation core: Linux 2.6.20 AS (`block/as-iosched.c`) with its
//! two policy decisions factored out (see `policy`). Requests are sorted
//! per direction (sync/async) and served in batches; during a sync batch
//! the core may hold the device idle, waiting for the process whose request
//! just completed, as the policy decides.

use super::batch::Batch;
use super::choose::prefer_first;
use super::hz::{Hz, PAPER_HZ};
use super::io_context::IoHistory;
use super::policy::{AnticPolicy, AnticStatus, Moment, PolicyCtx};
use super::wait::{Antic, Outcome};
use super::{ASYNC, SYNC};
use crate::cost::PositionCost;
use crate::request::{Dir, ProcessId, Request};
use crate::sched::sortfifo::{Slot, SortFifo};
use crate::sched::{AnticipationStats, Dispatch, Elevator, MayQueue, MergeKind, SchedContext, Tunable, TunableValues};
use crate::time::SimTime;
use std::sync::Arc;

// Defaults, in ms as sysfs shows them (2.6.20 at HZ=1000: read_expire
// HZ/8, write_expire HZ/4, read_batch_expire HZ/2, write_batch_expire
// HZ/8, antic_expire HZ/150 -- the paper's 6 ms).
const READ_EXPIRE_MS: f64 = 125.0;
const WRITE_EXPIRE_MS: f64 = 250.0;
const READ_BATCH_EXPIRE_MS: f64 = 500.0;
const WRITE_BATCH_EXPIRE_MS: f64 = 125.0;
const ANTIC_EXPIRE_MS: f64 = 6.0;

/// The core's settings (the tunables, in ns, and the jiffy clock).
#[derive(Copy, Clone, Debug)]
pub struct Config {
    /// `fifo_expire[2]`: read_expire, write_expire.
    pub fifo_expire_ns: [u64; 2],
    /// `batch_expire[2]`: read_batch_expire, write_batch_expire.
    pub batch_expire_ns: [u64; 2],
    /// 0 disables anticipation.
    pub antic_expire_ns: u64,
    pub hz: Hz,
    /// Merges see the bio's own sync class only: the front-merge lookup
    /// searches its tree instead of 2.6.20's `sort_list[bio_data_dir(bio)]`
    /// and a bio joins only a request of its class (2.6.20's AS allowed
    /// any); kernel/'s module has the same switch (`as_request_merge`,
    /// `as_allow_merge`).
    pub merge_by_class: bool,
}

impl Config {
    /// From the values of [`CORE_TUNABLES`], with the paper's HZ.
    pub fn from_values(v: &TunableValues) -> Config {
        Config {
            fifo_expire_ns: [v.ms_as_ns("read_expire"), v.ms_as_ns("write_expire")],
            batch_expire_ns: [v.ms_as_ns("read_batch_expire"), v.ms_as_ns("write_batch_expire")],
            antic_expire_ns: v.ms_as_ns("antic_expire"),
            hz: Hz::new(PAPER_HZ),
            merge_by_class: v.get("merge_by_class") != 0.0,
        }
    }
}

/// The anticipatory core, built with a policy.
pub struct AnticCore<P> {
    policy: P,
    st: State,
}

/// Everything but the policy (`struct as_data`), split off so the policy
/// can be handed a view of it.
struct State {
    cfg: Config,
    cost: Arc<dyn PositionCost>,
    q: SortFifo,
    /// Next request in elevator order, per direction (`next_rq[2]`).
    next_rq: [Option<Slot>; 2],
    /// End of the last dispatched request, per direction.
    last_sector: [u64; 2],
    /// Last time each FIFO was checked (`last_check_fifo[2]`).
    last_check_fifo: [SimTime; 2],
    batch: Batch,
    /// Requests dispatched and not yet completed.
    nr_dispatched: u32,
    antic: Antic,
    hist: IoHistory,
}

impl<P: AnticPolicy> AnticCore<P> {
    pub fn new(policy: P, cfg: Config, ctx: &SchedContext) -> AnticCore<P> {
        let st = State {
            cfg,
            cost: ctx.position_cost.clone(),
            q: SortFifo::with_ties_in_arrival_order(),
            next_rq: [None; 2],
            last_sector: [0; 2],
            last_check_fifo: [SimTime::ZERO; 2],
            batch: Batch::new(cfg.batch_expire_ns, cfg.hz),
            nr_dispatched: 0,
            antic: Antic::default(),
            hist: IoHistory::new(cfg.hz),
        };
        AnticCore { policy, st }
    }

    /// The per-process statistics (for reports and tests).
    pub fn history(&self) -> &IoHistory {
        &self.st.hist
    }

    /// as_can_break_anticipation: steps 1 and 2 here, the rest in the
    /// policy. Only asked while there is a target.
    fn can_break(&mut self, rq: Option<&Request>, now: SimTime, at: Moment) -> bool {
        let target = self.st.antic.target.expect("anticipation needs a target");
        // 1. The awaited process's own request.
        if rq.is_some_and(|r| r.pid == target) {
            return true;
        }
        let mut ctx = self.st.ctx(now, target);
        // 2. The wait has run out; the timer just has not fired yet.
        if ctx.ioc_finished && now.since(ctx.antic_start) >= self.policy.wait_ns(&ctx) {
            return true;
        }
        self.policy.can_break(&mut ctx, rq, at)
    }

    /// as_can_anticipate: worth waiting instead of serving `rq`?
    fn can_anticipate(&mut self, rq: Option<Slot>, now: SimTime) -> bool {
        if self.st.antic.target.is_none() || self.st.antic.status == AnticStatus::Finished {
            return false;
        }
        let rq = rq.map(|s| *self.st.q.rq(s));
        !self.can_break(rq.as_ref(), now, Moment::Dispatch)
    }

    /// Decision (b) for the current target.
    fn wait_ns(&mut self, now: SimTime) -> u64 {
        match self.st.antic.target {
            Some(t) => self.policy.wait_ns(&self.st.ctx(now, t)),
            None => self.st.cfg.antic_expire_ns,
        }
    }

    /// as_antic_waitreq, and what dispatch answers while waiting.
    fn anticipate(&mut self, now: SimTime) -> Dispatch {
        let wait = self.wait_ns(now);
        self.st.antic.waitreq(now, wait, &mut self.st.hist);
        self.st.idle_answer()
    }

    /// as_antic_timeout.
    fn timeout(&mut self, now: SimTime) {
        self.st.antic.timeout(now, &mut self.st.hist);
    }

    /// The part of as_dispatch_request before the FIFO override: continue
    /// the batch, anticipate, or pick a direction. Returns the request to
    /// serve and whether it came from the FIFO already, or an idle answer.
    fn select(
        &mut self,
        now: SimTime,
        reads: bool,
        writes: bool,
    ) -> Result<(Slot, bool), Dispatch> {
        if !(reads && writes && self.st.batch.expired(now)) {
            // The batch goes on (or one direction is empty).
            let rq = self.st.next_rq[self.st.batch.dir];
            if self.st.batch.dir == SYNC && self.st.cfg.antic_expire_ns > 0 {
                if self.st.fifo_expired(SYNC, now) {
                    return Ok((self.st.fifo_head(SYNC), true));
                }
                if self.can_anticipate(rq, now) {
                    return Err(self.anticipate(now));
                }
            }
            if let Some(slot) = rq {
                if reads && !writes {
                    self.st.batch.extend_reads(now);
                }
                return Ok((slot, false));
            }
        }
        // No batch running: choose a direction. After a read batch, writes
        // get their turn; otherwise reads start from their oldest request.
        let b = &mut self.st.batch;
        if reads && !(writes && b.dir == SYNC) {
            b.to_sync();
            self.st.last_check_fifo[SYNC] = now;
            return Ok((self.st.fifo_head(SYNC), false));
        }
        b.to_async();
        Ok((self.st.next_rq[ASYNC].expect("writes are queued"), false))
    }
}

impl State {
    fn ctx(&mut self, now: SimTime, target: ProcessId) -> PolicyCtx<'_> {
        PolicyCtx {
            now,
            hz: self.cfg.hz,
            antic_expire_ns: self.cfg.antic_expire_ns,
            target,
            status: self.antic.status,
            ioc_finished: self.antic.ioc_finished,
            antic_start: self.antic.start,
            last_sector: self.last_sector[self.batch.dir],
            cost: &*self.cost,
            hist: &mut self.hist,
        }
    }

    fn idle_answer(&self) -> Dispatch {
        match self.antic.status {
            AnticStatus::WaitNext => Dispatch::IdleUntil(self.antic.deadline),
            _ => Dispatch::Nothing,
        }
    }

    fn fifo_head(&self, dir: usize) -> Slot {
        self.q.fifo_first(dir).expect("direction has requests")
    }

    /// as_choose_req on two optional queued requests of direction `dir`.
    fn choose_req(&self, dir: usize, a: Option<Slot>, b: Option<Slot>) -> Option<Slot> {
        match (a, b) {
            (None, b) => b,
            (a, None) => a,
            (Some(a), Some(b)) if a == b => Some(b),
            (Some(a), Some(b)) => {
                let (s1, s2) = (self.q.rq(a).sector, self.q.rq(b).sector);
                Some(if prefer_first(self.last_sector[dir], s1, s2) { a } else { b })
            }
        }
    }

    /// as_find_next_rq: the better of the sort successor of `slot` (the
    /// lowest request if none: the sweep wraps) and its predecessor.
    fn find_next_rq(&self, slot: Slot) -> Option<Slot> {
        let dir = self.q.rq(slot).sync_index();
        let (prev, next) = self.q.sort_neighbours(slot);
        let next = next.or_else(|| self.q.sort_first(dir).filter(|&f| f != slot));
        self.choose_req(dir, next, prev)
    }

    /// as_fifo_expired: has the oldest request of `dir` expired? Checked at
    /// most once per `fifo_expire[dir]`, so that a pile of expired requests
    /// does not turn into a seek storm.
    fn fifo_expired(&mut self, dir: usize, now: SimTime) -> bool {
        if now.since(self.last_check_fifo[dir]) < self.cfg.fifo_expire_ns[dir] {
            return false;
        }
        self.last_check_fifo[dir] = now;
        self.q.fifo_first(dir).is_some_and(|s| now > self.q.fifo_time(s))
    }

    /// as_move_to_dispatch: the request leaves the scheduler. A sync
    /// request's owner becomes the process to anticipate; an async one
    /// clears it and counts against the write batch.
    fn move_to_dispatch(&mut self, slot: Slot, now: SimTime) -> Request {
        // Only a forced dispatch could find a wait running: "anything else".
        self.antic.stop(now, Outcome::Failure, &mut self.hist);
        self.antic.status = AnticStatus::Off;
        let rq = *self.q.rq(slot);
        let dir = rq.sync_index();
        self.last_sector[dir] = rq.end_sector();
        if dir == SYNC {
            self.antic.target = Some(rq.pid);
        } else {
            self.antic.target = None;
            self.batch.wrote();
        }
        self.antic.ioc_finished = false;
        self.next_rq[dir] = self.find_next_rq(slot);
        // as_remove_queued_request.
        let aic = self.hist.get_mut(rq.pid);
        aic.nr_queued = aic.nr_queued.saturating_sub(1);
        self.q.remove(slot);
        self.nr_dispatched += 1;
        rq
    }
}

impl<P: AnticPolicy> Elevator for AnticCore<P> {
    fn name(&self) -> &'static str {
        self.policy.name()
    }

    /// as_add_request + as_update_rq: history first (so the think-time
    /// rule does not see `rq` itself as queued), then the tree and FIFO,
    /// then `next_rq`, then: does `rq` end a wait?
    fn insert(&mut self, rq: Request, now: SimTime) {
        let dir = rq.sync_index();
        let st = &mut self.st;
        if let Some(sample) = st.hist.update_iohist(rq.pid, &rq, now) {
            self.policy.on_sample(rq.pid, &sample);
        }
        st.hist.get_mut(rq.pid).nr_queued += 1;
        let slot = st.q.add(dir, rq, now + st.cfg.fifo_expire_ns[dir]);
        st.next_rq[dir] = st.choose_req(dir, Some(slot), st.next_rq[dir]);
        if st.antic.is_waiting() && self.can_break(Some(&rq), now, Moment::Arrival) {
            self.st.antic.stop(now, Outcome::Success, &mut self.st.hist);
        }
    }

    /// as_dispatch_request.
    fn dispatch(&mut self, now: SimTime) -> Dispatch {
        // The wait ran out and the engine asks before delivering the timer
        // (events at the same instant): run the timer first.
        if self.st.antic.status == AnticStatus::WaitNext && now >= self.st.antic.deadline {
            self.timeout(now);
        }
        let reads = !self.st.q.fifo_empty(SYNC);
        let writes = !self.st.q.fifo_empty(ASYNC);
        self.st.batch.note_idle(reads, writes);
        if !(reads || writes) {
            return Dispatch::Nothing;
        }
        if self.st.antic.is_waiting() {
            return self.st.idle_answer();
        }
        if self.st.batch.changed {
            return Dispatch::Nothing;
        }
        let (mut slot, from_fifo) = match self.select(now, reads, writes) {
            Ok(pick) => pick,
            Err(idle) => return idle,
        };
        // An expired request of the batch's direction goes first.
        let dir = self.st.batch.dir;
        if !from_fifo && self.st.fifo_expired(dir, now) {
            slot = self.st.fifo_head(dir);
        }
        if !self.st.batch.may_start(now, self.st.nr_dispatched) {
            return Dispatch::Nothing;
        }
        Dispatch::Request(self.st.move_to_dispatch(slot, now))
    }

    /// as_completed_request (+ as_put_io_context).
    fn completed(&mut self, rq: &Request, now: SimTime) {
        let st = &mut self.st;
        st.batch.completed(rq.sync_index(), st.nr_dispatched, now);
        debug_assert!(st.nr_dispatched > 0, "completion of an undispatched request");
        st.nr_dispatched = st.nr_dispatched.saturating_sub(1);
        if st.antic.target == Some(rq.pid) {
            // The awaited process's request is done: its think time, and
            // any wait for its next request, start now.
            st.antic.start = now;
            st.antic.ioc_finished = true;
            if st.antic.status == AnticStatus::WaitReq {
                let wait = self.wait_ns(now);
                self.st.antic.waitnext(now, wait);
            }
        }
        if rq.is_sync() {
            self.st.hist.completed_sync(rq.pid, now);
        }
    }

    /// The antic timer. Stale calls (the wait already ended, or a later
    /// wait is running) are ignored.
    fn timer(&mut self, now: SimTime) {
        if self.st.antic.status == AnticStatus::WaitNext && now >= self.st.antic.deadline {
            self.timeout(now);
        }
    }

    /// exit_as_io_context: the process no longer runs. A wait for it is
    /// not ended here; the break rules and exit_prob decide.
    fn exit_process(&mut self, pid: ProcessId, _now: SimTime) {
        self.st.hist.exit(pid);
    }

    fn queued(&self) -> usize {
        self.st.q.len()
    }

    fn anticipation(&self) -> Option<AnticipationStats> {
        Some(self.st.antic.stats())
    }

    fn merges(&self) -> bool {
        true
    }

    /// as_merge: `elv_rb_find(&ad->sort_list[bio_data_dir(bio)], ..)`.
    /// AS's trees are indexed by REQ_SYNC (1) / REQ_ASYNC (0), so 2.6.20
    /// looks for a read bio's front merge in the async tree and for a
    /// write bio's in the sync tree; the block layer then refuses a
    /// candidate of the other data direction. In effect only a write bio
    /// front-merges here, into a sync write. With `merge_by_class` the
    /// bio's own class is searched.
    fn front_merge_candidate(&self, bio: &Request) -> Option<Request> {
        let tree = match bio.dir {
            _ if self.st.cfg.merge_by_class => bio.sync_index(),
            Dir::Read => ASYNC,
            Dir::Write => SYNC,
        };
        self.st.q.find(tree, bio.end_sector()).map(|s| *self.st.q.rq(s))
    }

    /// 2.6.20's AS has no elevator_allow_merge_fn (elv_rq_merge_ok checks
    /// the data direction only): a sync write bio may join an async
    /// request and the other way round. With `merge_by_class` a bio joins
    /// only a request of its own class (the module's as_allow_merge).
    fn allow_merge(&self, rq: &Request, bio: &Request) -> bool {
        !self.st.cfg.merge_by_class || rq.is_sync() == bio.is_sync()
    }

    /// elv_rb_former_request / elv_rb_latter_request in the request's tree.
    fn former_request(&self, rq: &Request) -> Option<Request> {
        let slot = self.st.q.slot_of(rq.sync_index(), rq)?;
        self.st.q.sort_prev(slot).map(|s| *self.st.q.rq(s))
    }
    fn latter_request(&self, rq: &Request) -> Option<Request> {
        let slot = self.st.q.slot_of(rq.sync_index(), rq)?;
        self.st.q.sort_next(slot).map(|s| *self.st.q.rq(s))
    }

    /// as_merged_request: the grown request, re-sorted after a front merge.
    /// `next_rq` is left as it is (2.6.20: "we currently don't bother").
    fn merged(&mut self, old: &Request, new: &Request, _kind: MergeKind) {
        if let Some(slot) = self.st.q.slot_of(old.sync_index(), old) {
            self.st.q.update(slot, *new);
        }
    }

    /// as_merged_requests: `rq` takes `next`'s FIFO place and expiry if
    /// `next` expires first; `next` leaves (as_remove_queued_request: its
    /// owner's `nr_queued` drops, `next_rq` moves on), and its owner's
    /// context is put (as_put_io_context: a sync `next` sets IORUNNING and
    /// `last_end_request` to now, as a completion would).
    fn merged_requests(&mut self, rq: &Request, merged: &Request, next: &Request, now: SimTime) {
        let st = &mut self.st;
        let dir = rq.sync_index();
        let (Some(r), Some(n)) = (st.q.slot_of(dir, rq), st.q.slot_of(next.sync_index(), next)) else {
            debug_assert!(false, "merged requests must be queued");
            return;
        };
        if st.q.fifo_time(n) < st.q.fifo_time(r) {
            st.q.take_fifo_place(r, n);
        }
        let aic = st.hist.get_mut(next.pid);
        aic.nr_queued = aic.nr_queued.saturating_sub(1);
        let ndir = next.sync_index();
        if st.next_rq[ndir] == Some(n) {
            st.next_rq[ndir] = st.find_next_rq(n);
        }
        st.q.remove(n);
        st.q.update(r, *merged);
        if next.is_sync() {
            st.hist.completed_sync(next.pid, now);
        }
    }

    /// as_may_queue: the process AS is waiting for may always allocate.
    fn may_queue(&mut self, pid: ProcessId, _dir: Dir, _sync: bool) -> MayQueue {
        if self.st.antic.is_waiting() && self.st.antic.target == Some(pid) {
            MayQueue::Must
        } else {
            MayQueue::May
        }
    }
}

/// The core's tunables, with Linux's names and sysfs units. A policy's
/// scheduler entry lists these first, then its own.
pub const CORE_TUNABLES: [Tunable; 6] = [
    Tunable::ms("read_expire", READ_EXPIRE_MS, "a sync request is served once it is this old"),
    Tunable::ms("write_expire", WRITE_EXPIRE_MS, "an async request is served once it is this old"),
    Tunable::ms("read_batch_expire", READ_BATCH_EXPIRE_MS, "sync batch length when writes wait"),
    Tunable::ms("write_batch_expire", WRITE_BATCH_EXPIRE_MS, "target length of an async batch"),
    // Linux takes any int; a wait of more than 0.6 s is no longer
    // anticipation (docs/spec.md shows this bound).
    Tunable::ms("antic_expire", ANTIC_EXPIRE_MS, "longest wait for the last reader; 0: off")
        .with_max(600.0),
    Tunable {
        name: "merge_by_class",
        unit: "bool",
        min: 0.0,
        max: 1.0,
        default: 0.0,
        help: "1: a bio meets only requests of its own sync class (front-merge lookup, allow_merge); 0: as 2.6.20's AS",
    },
];

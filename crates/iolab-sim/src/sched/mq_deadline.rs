//! mq-deadline, as in Linux 6.1.192 `block/mq-deadline.c`
//! (ELEVATORS.md 3.2).
//!
//! Brief overview. Three priority levels (RT, BE, IDLE: the request's I/O
//! class; `ioprio_class_to_prio`), each with a sort tree and a FIFO per
//! data direction (read/write) and a "next request" per direction. The
//! batch state is shared by the levels: the direction of the last
//! dispatch (`last_dir`), the requests dispatched in this batch
//! (`batching`), and how often reads were chosen over waiting writes
//! (`starved`). Dispatch serves the highest level that has requests, but
//! first, when two or more levels have requests queued or in flight, any
//! BE or IDLE request older than `prio_aging_expire`. Within a level
//! (`__dd_dispatch_request`): continue the batch in `last_dir` while a
//! next request exists and fewer than `fifo_batch` went; else reads,
//! unless writes wait and reads have been chosen `writes_starved` times;
//! in that direction the FIFO head if it has expired or there is no next
//! request, else the next request.
//!
//! Differences from 2.6.20's deadline (`deadline.rs`): a batch is a count
//! of requests, not ended by a non-sequential one; expiry is
//! `time_after_eq` (at the deadline, not after); next_rq is kept per
//! direction; the priority levels and aging; `async_depth`.
//!
//! Times are jiffies at HZ = 250, as Debian's 6.1 kernel is built:
//! `read_expire` = 500 ms is 125 jiffies, and a request expires at the
//! first tick at or after its insertion tick + 125.
//!
//! Merging: the block layer's blk-mq path (`crate::blk::mq`) merges bios
//! and requests; mq-deadline gives it `dd_request_merge` (a front merge
//! with the request of the bio's level and direction that starts where
//! the bio ends, if `front_merges`), `dd_request_merged` (a front-merged
//! request is re-sorted), `dd_merged_requests` (the survivor takes the
//! earlier FIFO place and time; the other leaves) and the sort tree's
//! neighbours (`elv_rb_former_request`, `elv_rb_latter_request`).
//!
//! Not modelled: the at-head dispatch lists (nothing reaches them in the
//! simulator: its devices never requeue, there is no passthrough, and a
//! flush goes to the hardware queue's dispatch list past the elevator,
//! `blk/mq.rs`), and zoned-device write locking.

use super::anticipatory::hz::Hz;
use super::mq::sbitmap::Sbitmap;
use super::mq::{self, op_is_sync, op_is_write, BlkMq, MergeStyle, MqSched, KERNEL_HZ};
use super::sortfifo::{Slot, SortFifo};
use super::{Dispatch, Elevator, MergeKind, SchedContext, SchedulerInfo, Tunable, TunableValues};
use crate::request::{IoClass, IoPrio, ProcessId, Request};
use crate::time::SimTime;

pub const NAME: &str = "mq-deadline";

const READ: usize = 0;
const WRITE: usize = 1;

/// `enum dd_prio`.
const RT_PRIO: usize = 0;
const BE_PRIO: usize = 1;
const IDLE_PRIO: usize = 2;
const PRIO_COUNT: usize = 3;

/// `ioprio_class_to_prio` (class NONE is best effort: see `IoPrio`).
fn class_to_prio(p: IoPrio) -> usize {
    match p.class {
        IoClass::Rt => RT_PRIO,
        IoClass::Be => BE_PRIO,
        IoClass::Idle => IDLE_PRIO,
    }
}

/// `struct dd_per_prio`: requests of one level, with its statistics.
#[derive(Default)]
struct PerPrio {
    q: SortFifo,
    next_rq: [Option<Slot>; 2],
    inserted: u32,
    dispatched: u32,
    completed: u32,
}

impl PerPrio {
    /// `deadline_latter_request`.
    fn latter(&self, slot: Slot) -> Option<Slot> {
        self.q.sort_next(slot)
    }

    /// `deadline_remove_request` → `deadline_del_rq_rb`: a removed next
    /// request is replaced by its successor.
    fn remove(&mut self, slot: Slot) -> Request {
        let dir = self.q.rq(slot).dir.index();
        if self.next_rq[dir] == Some(slot) {
            self.next_rq[dir] = self.latter(slot);
        }
        self.q.remove(slot)
    }

    /// `dd_queued`: inserted − completed (in flight counts).
    fn queued(&self) -> u32 {
        self.inserted.wrapping_sub(self.completed)
    }
}

/// `struct deadline_data`.
pub struct MqDeadline {
    per_prio: [PerPrio; PRIO_COUNT],
    last_dir: usize,
    batching: u32,
    starved: u32,
    /// `fifo_expire[dir]`, jiffies.
    fifo_expire: [u64; 2],
    fifo_batch: u32,
    writes_starved: u32,
    /// `async_depth`, requests (0 until set from `nr_requests`).
    async_depth: u32,
    front_merges: bool,
    nr_requests: u32,
    /// `prio_aging_expire`, jiffies.
    prio_aging_expire: u64,
    hz: Hz,
    /// Each process's level.
    prio_of: Vec<u8>,
}

impl MqDeadline {
    /// `nr_requests` is the pool in use; `init_nr_requests` the one blk-mq
    /// gave the elevator when it was switched to (`blk_mq_init_sched`).
    pub fn new(v: &TunableValues, nr_requests: u32, init_nr_requests: u32) -> MqDeadline {
        let hz = Hz::new(KERNEL_HZ);
        // STORE_JIFFIES: msecs_to_jiffies rounds up.
        let j = |name: &str| hz.from_ns_ceil(v.ms_as_ns(name));
        let async_depth = match v.get("async_depth") as u32 {
            // dd_depth_updated: async_depth = q->nr_requests. It runs at the
            // switch (dd_init_hctx) with blk_mq_init_sched's pool, and again
            // when sysfs changes nr_requests, but blk_mq_update_nr_requests
            // calls it before it stores the new value: async_depth keeps the
            // pool of the switch (6.1.192).
            0 => init_nr_requests,
            n => n,
        };
        MqDeadline {
            per_prio: Default::default(),
            // dd_init_sched: last_dir = DD_WRITE.
            last_dir: WRITE,
            batching: 0,
            starved: 0,
            fifo_expire: [j("read_expire"), j("write_expire")],
            fifo_batch: v.get("fifo_batch") as u32,
            writes_starved: v.get("writes_starved") as u32,
            async_depth,
            front_merges: v.get("front_merges") != 0.0,
            nr_requests,
            prio_aging_expire: j("prio_aging_expire"),
            hz,
            prio_of: Vec::new(),
        }
    }

    fn prio(&self, pid: ProcessId) -> usize {
        self.prio_of.get(pid as usize).map_or(BE_PRIO, |&p| p as usize)
    }

    /// `deadline_check_fifo`: `time_after_eq(jiffies, fifo_time)`.
    fn check_fifo(&self, prio: usize, dir: usize, now: SimTime) -> bool {
        let pp = &self.per_prio[prio];
        pp.q.fifo_first(dir).is_some_and(|s| now >= pp.q.fifo_time(s))
    }

    /// `started_after`: the request was inserted after `latest_start`
    /// (jiffies): `fifo_time - fifo_expire[dir] > latest_start`.
    fn started_after(&self, prio: usize, slot: Slot, latest_start: i64) -> bool {
        let pp = &self.per_prio[prio];
        let dir = pp.q.rq(slot).dir.index();
        let fifo_j = self.hz.jiffies(pp.q.fifo_time(slot)) as i64;
        fifo_j - self.fifo_expire[dir] as i64 > latest_start
    }

    /// `__dd_dispatch_request` for one level, for requests inserted no
    /// later than `latest_start` (jiffies).
    fn dispatch_prio(&mut self, prio: usize, now: SimTime, latest_start: i64) -> Option<Request> {
        let mut rq = self.per_prio[prio].next_rq[self.last_dir];
        let in_batch = rq.is_some() && self.batching < self.fifo_batch;
        if !in_batch {
            // Not running a batch: choose the direction.
            let pp = &self.per_prio[prio];
            let data_dir = if !pp.q.fifo_empty(READ) {
                // deadline_fifo_request(WRITE) is the FIFO head (no zones).
                let writes = !pp.q.fifo_empty(WRITE);
                if writes && self.bump_starved() {
                    self.starved = 0;
                    WRITE
                } else {
                    READ
                }
            } else if !pp.q.fifo_empty(WRITE) {
                self.starved = 0;
                WRITE
            } else {
                return None;
            };
            let next = self.per_prio[prio].next_rq[data_dir];
            rq = if self.check_fifo(prio, data_dir, now) || next.is_none() {
                // Expired, other direction last, or past the last sector:
                // start again from the oldest request.
                self.per_prio[prio].q.fifo_first(data_dir)
            } else {
                next
            };
            rq?;
            self.last_dir = data_dir;
            self.batching = 0;
        }
        let slot = rq.expect("a request was chosen");
        if self.started_after(prio, slot, latest_start) {
            return None;
        }
        self.batching = self.batching.wrapping_add(1);
        // deadline_move_request.
        let pp = &mut self.per_prio[prio];
        let dir = pp.q.rq(slot).dir.index();
        pp.next_rq[dir] = pp.latter(slot);
        let rq = pp.remove(slot);
        pp.dispatched = pp.dispatched.wrapping_add(1);
        Some(rq)
    }

    /// `dd->starved++ >= dd->writes_starved`.
    fn bump_starved(&mut self) -> bool {
        let before = self.starved;
        self.starved = self.starved.wrapping_add(1);
        before >= self.writes_starved
    }

    /// `dd_dispatch_prio_aged_requests`.
    fn dispatch_aged(&mut self, now: SimTime) -> Option<Request> {
        let busy = self.per_prio.iter().filter(|p| p.queued() > 0).count();
        if busy < 2 {
            return None;
        }
        let latest = self.hz.jiffies(now) as i64 - self.prio_aging_expire as i64;
        (BE_PRIO..PRIO_COUNT).find_map(|prio| self.dispatch_prio(prio, now, latest))
    }

    /// `dd_to_word_depth`: `async_depth` as bits per sbitmap word.
    fn word_depth(&self, tags: &Sbitmap) -> u32 {
        let nrr = self.nr_requests.max(1) as u64;
        let bpw = tags.bits_per_word() as u64;
        (self.async_depth as u64 * bpw).div_ceil(nrr) as u32
    }
}

impl Elevator for MqDeadline {
    fn name(&self) -> &'static str {
        NAME
    }

    /// `dd_insert_request`: counted, then into the level's tree and FIFO
    /// tail, expiring `fifo_expire[dir]` jiffies from now.
    fn insert(&mut self, rq: Request, now: SimTime) {
        self.prepare(&rq, now);
        self.insert_prepared(rq, now);
    }

    /// `dd_dispatch_request`: aged requests first, then RT, BE, IDLE,
    /// stopping at the first level that gives a request or still has
    /// requests queued or in flight.
    fn dispatch(&mut self, now: SimTime) -> Dispatch {
        if let Some(rq) = self.dispatch_aged(now) {
            return Dispatch::Request(rq);
        }
        let now_j = self.hz.jiffies(now) as i64;
        for prio in 0..PRIO_COUNT {
            if let Some(rq) = self.dispatch_prio(prio, now, now_j) {
                return Dispatch::Request(rq);
            }
            if self.per_prio[prio].queued() > 0 {
                break;
            }
        }
        Dispatch::Nothing
    }

    /// `dd_finish_request`: the level's completed count.
    fn completed(&mut self, rq: &Request, _now: SimTime) {
        let pp = &mut self.per_prio[self.prio(rq.pid)];
        pp.completed = pp.completed.wrapping_add(1);
    }

    fn set_ioprio(&mut self, pid: ProcessId, prio: IoPrio) {
        let i = pid as usize;
        if self.prio_of.len() <= i {
            self.prio_of.resize(i + 1, BE_PRIO as u8);
        }
        self.prio_of[i] = class_to_prio(prio) as u8;
    }

    fn queued(&self) -> usize {
        self.per_prio.iter().map(|p| p.q.len()).sum()
    }

    fn merges(&self) -> bool {
        true
    }

    /// `dd_request_merge`: with `front_merges`, the request of the bio's
    /// level (its task's I/O class) and data direction that starts where
    /// the bio ends (`elv_rb_find`).
    fn front_merge_candidate(&self, bio: &Request) -> Option<Request> {
        if !self.front_merges {
            return None;
        }
        let pp = &self.per_prio[self.prio(bio.pid)];
        pp.q.find(bio.dir.index(), bio.end_sector()).map(|s| *pp.q.rq(s))
    }

    /// `elv_rb_former_request`.
    fn former_request(&self, rq: &Request) -> Option<Request> {
        let pp = &self.per_prio[self.prio(rq.pid)];
        let slot = pp.q.slot_of(rq.dir.index(), rq)?;
        pp.q.sort_prev(slot).map(|s| *pp.q.rq(s))
    }

    /// `elv_rb_latter_request`.
    fn latter_request(&self, rq: &Request) -> Option<Request> {
        let pp = &self.per_prio[self.prio(rq.pid)];
        let slot = pp.q.slot_of(rq.dir.index(), rq)?;
        pp.q.sort_next(slot).map(|s| *pp.q.rq(s))
    }

    /// `dd_request_merged`: the grown request, re-sorted if it grew at its
    /// front.
    fn merged(&mut self, old: &Request, new: &Request, _kind: MergeKind) {
        let pp = &mut self.per_prio[self.prio(old.pid)];
        if let Some(slot) = pp.q.slot_of(old.dir.index(), old) {
            pp.q.update(slot, *new);
        }
    }

    /// `dd_merged_requests`: if `next` expires first, `rq` takes its FIFO
    /// place and time; `next` leaves (`deadline_remove_request`: a next
    /// request that was `next` moves on). `next` may be a request merged
    /// at insertion, which the levels never held.
    fn merged_requests(&mut self, rq: &Request, merged: &Request, next: &Request, _now: SimTime) {
        let pp = &mut self.per_prio[self.prio(rq.pid)];
        let dir = rq.dir.index();
        let Some(r) = pp.q.slot_of(dir, rq) else {
            debug_assert!(false, "the survivor of a merge is queued");
            return;
        };
        if let Some(n) = pp.q.slot_of(dir, next) {
            if pp.q.fifo_time(n) < pp.q.fifo_time(r) {
                pp.q.take_fifo_place(r, n);
            }
            pp.remove(n);
        }
        pp.q.update(r, *merged);
    }
}

impl MqSched for MqDeadline {
    /// The count half of `dd_insert_request` (`stats.inserted`), before
    /// `blk_mq_sched_try_insert_merge`.
    fn prepare(&mut self, rq: &Request, _now: SimTime) {
        let pp = &mut self.per_prio[self.prio(rq.pid)];
        pp.inserted = pp.inserted.wrapping_add(1);
    }

    /// The rest of `dd_insert_request`.
    fn insert_prepared(&mut self, rq: Request, now: SimTime) {
        let prio = self.prio(rq.pid);
        let dir = rq.dir.index();
        let expire_j = self.hz.jiffies(now) + self.fifo_expire[dir];
        let fifo_time = SimTime(expire_j.saturating_mul(self.hz.jiffy_ns()));
        self.per_prio[prio].q.add(dir, rq, fifo_time);
    }

    /// `dd_finish_request` of a request freed unstarted (merged): it counts
    /// as completed, so its level is not left busy.
    fn freed(&mut self, rq: &Request) {
        let pp = &mut self.per_prio[self.prio(rq.pid)];
        pp.completed = pp.completed.wrapping_add(1);
    }

    fn merge_style(&self) -> MergeStyle {
        MergeStyle::Hash
    }

    /// `dd_depth_updated`: `sbitmap_queue_min_shallow_depth(tags, 1)`, so
    /// the tags wake one sleeper per freed tag.
    fn min_shallow_depth(&self, _tags: &Sbitmap) -> Option<u32> {
        Some(1)
    }

    /// `dd_limit_depth`: sync reads are not throttled; everything else
    /// gets `async_depth` scaled to bits per word.
    fn limit_depth(&self, rq: &Request, tags: &Sbitmap) -> Option<u32> {
        if op_is_sync(rq) && !op_is_write(rq) {
            return None;
        }
        Some(self.word_depth(tags))
    }

    /// `dd_has_work`: any level has a request in its FIFOs.
    fn has_work(&self) -> bool {
        self.queued() > 0
    }
}

/// Tunables with their 6.1 sysfs names (`deadline_attrs`), units and
/// defaults (top of mq-deadline.c); ranges as `STORE_INT`/`STORE_JIFFIES`.
static TUNABLES: [Tunable; 8] = [
    Tunable::ms("read_expire", 500.0, "a read is served once it is this old (HZ/2)"),
    Tunable::ms("write_expire", 5000.0, "a write is served once it is this old (5*HZ)"),
    Tunable {
        name: "writes_starved",
        unit: "batches",
        // Linux accepts negative values, which the unsigned comparison
        // turns into "never"; the simulator asks for 0 or more.
        min: 0.0,
        max: i32::MAX as f64,
        default: 2.0,
        help: "times reads may be chosen over waiting writes",
    },
    Tunable {
        name: "front_merges",
        unit: "bool",
        min: 0.0,
        max: 1.0,
        default: 1.0,
        help: "look for front merges in the sort tree (dd_request_merge)",
    },
    Tunable {
        name: "async_depth",
        unit: "requests",
        min: 0.0,
        max: i32::MAX as f64,
        default: 0.0,
        help: "scheduler tags that writes and async requests may hold; 0 = nr_requests (the kernel's default)",
    },
    Tunable {
        name: "fifo_batch",
        unit: "requests",
        min: 0.0,
        max: i32::MAX as f64,
        default: 16.0,
        help: "requests dispatched in one direction before choosing again",
    },
    Tunable::ms(
        "prio_aging_expire",
        10_000.0,
        "a BE or IDLE request this old goes before higher levels (10*HZ)",
    ),
    mq::NR_REQUESTS,
];

pub const INFO: SchedulerInfo = SchedulerInfo {
    name: NAME,
    aliases: &["mq-deadline-6.1"],
    summary: "Linux 6.1 mq-deadline: priority levels, sector-sorted batches, FIFO expiry, write starvation limit",
    tunables: &TUNABLES,
    build,
    accept: None,
};

fn build(v: &TunableValues, ctx: &SchedContext) -> Box<dyn Elevator> {
    let nr = mq::nr_requests(v, ctx.queue_depth);
    let init = mq::default_nr_requests(ctx.queue_depth);
    Box::new(BlkMq::new(MqDeadline::new(v, nr, init), nr))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::request::IoClass;
    use crate::sched::resolve_tunables;
    use crate::sched::testutil::{ms, read, take, write, LEN};
    use std::collections::BTreeMap;

    fn dd(given: &[(&str, f64)]) -> MqDeadline {
        let given: BTreeMap<String, f64> = given.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        MqDeadline::new(&resolve_tunables(&INFO, &given, "test").unwrap(), 64, 64)
    }

    fn prio(d: &mut MqDeadline, pid: u32, class: IoClass) {
        d.set_ioprio(pid, IoPrio { class, level: if class == IoClass::Idle { 0 } else { 4 } });
    }

    #[test]
    fn defaults_are_6_1s_in_jiffies_at_hz_250() {
        let d = dd(&[]);
        assert_eq!(d.fifo_expire, [125, 1250]);
        assert_eq!(d.prio_aging_expire, 2500);
        assert_eq!((d.fifo_batch, d.writes_starved, d.last_dir), (16, 2, WRITE));
        assert_eq!(d.async_depth, 64, "dd_depth_updated: async_depth = nr_requests");
        // msecs_to_jiffies rounds up: 10 ms is 3 jiffies (12 ms).
        assert_eq!(dd(&[("read_expire", 10.0)]).fifo_expire[READ], 3);
        assert_eq!(crate::sched::find("mq-deadline").unwrap().name, NAME);
    }

    #[test]
    fn the_first_dispatch_takes_the_oldest_read_then_batches_by_sector() {
        let mut d = dd(&[]);
        for (id, s) in [(0, 500u64), (1, 100), (2, 300)] {
            d.insert(read(id, 0, s), ms(0));
        }
        // last_dir is WRITE with no next request: choose reads; no next
        // read request: the FIFO head (the oldest), not the lowest sector.
        assert_eq!(take(&mut d, ms(1)), 0);
        assert_eq!((d.last_dir, d.batching), (READ, 1));
        // next_rq[READ] is the successor of 500: none. Choose again: FIFO.
        assert_eq!(take(&mut d, ms(1)), 1);
        // Now the batch goes on in sector order from 100.
        assert_eq!(take(&mut d, ms(1)), 2);
        assert_eq!(d.dispatch(ms(1)), Dispatch::Nothing);
    }

    #[test]
    fn a_batch_is_a_count_and_a_gap_does_not_end_it() {
        let mut d = dd(&[("fifo_batch", 3.0)]);
        d.insert(read(0, 0, 0), ms(0));
        for (id, s) in [(1, 5000u64), (2, 90_000), (3, 900_000), (4, 9_000_000)] {
            d.insert(read(id, 0, s), ms(0));
        }
        d.insert(write(9, 1, 10), ms(0));
        // FIFO head, then next_rq in sector order regardless of gaps.
        let b: Vec<_> = (0..3).map(|_| take(&mut d, ms(1))).collect();
        assert_eq!(b, vec![0, 1, 2]);
        assert_eq!(d.batching, 3);
        // The first choice counted one starvation of the write; the batch
        // is full: choose again (starved 1 → 2): reads, next_rq goes on.
        assert_eq!(take(&mut d, ms(1)), 3);
        assert_eq!((d.starved, d.batching), (2, 1));
    }

    #[test]
    fn writes_go_after_writes_starved_choices_of_reads() {
        let mut d = dd(&[("fifo_batch", 1.0)]);
        for i in 0..4u32 {
            d.insert(read(i, 0, 1000 * (i as u64 + 1)), ms(0));
        }
        d.insert(write(10, 1, 10), ms(0));
        // Choices: starved 0 → reads, 1 → reads, 2 ≥ 2 → writes.
        assert_eq!([take(&mut d, ms(1)), take(&mut d, ms(1))], [0, 1]);
        assert_eq!(take(&mut d, ms(1)), 10);
        assert_eq!((d.starved, d.last_dir), (0, WRITE));
        assert_eq!(take(&mut d, ms(1)), 2);
    }

    #[test]
    fn an_expired_fifo_head_is_taken_at_its_deadline_tick() {
        let mut d = dd(&[("fifo_batch", 1.0)]);
        d.insert(read(0, 0, 9000), ms(1)); // tick 0: expires at tick 125
        d.insert(read(1, 0, 100), ms(10));
        d.insert(read(2, 0, 108), ms(10));
        d.insert(read(3, 0, 116), ms(10));
        assert_eq!(take(&mut d, ms(20)), 0, "the FIFO head first (no next request)");
        // Expiry timing: an old request behind the batch's position.
        let mut d = dd(&[("fifo_batch", 1.0)]);
        d.insert(read(0, 0, 5000), ms(0));
        d.insert(read(1, 0, 100), ms(2)); // tick 0: expires at tick 125
        d.insert(read(2, 0, 5008), ms(2));
        d.insert(read(3, 0, 5016), ms(2));
        assert_eq!(take(&mut d, ms(3)), 0);
        assert_eq!(take(&mut d, ms(4)), 2, "next_rq, read 1 not expired");
        d.insert(read(4, 0, 5024), ms(10));
        assert_eq!(take(&mut d, ms(499)), 3, "tick 124: read 1 not expired");
        // Read 1 expires at tick 125 = 500 ms (time_after_eq), not 500 ms
        // after its insertion at 2 ms.
        assert_eq!(take(&mut d, ms(500)), 1);
        assert_eq!(take(&mut d, ms(500)), 4);
    }

    #[test]
    fn higher_levels_go_first_and_a_busy_level_blocks_the_lower_ones() {
        let mut d = dd(&[]);
        prio(&mut d, 0, IoClass::Rt);
        prio(&mut d, 2, IoClass::Idle);
        d.insert(read(0, 2, 100), ms(0)); // idle
        d.insert(read(1, 1, 200), ms(0)); // be
        d.insert(read(2, 0, 300), ms(0)); // rt
        assert_eq!(take(&mut d, ms(1)), 2);
        // RT has one in flight and nothing queued: BE still waits.
        assert_eq!(d.dispatch(ms(1)), Dispatch::Nothing);
        d.completed(&read(2, 0, 300), ms(2));
        assert_eq!(take(&mut d, ms(2)), 1);
        assert_eq!(d.dispatch(ms(2)), Dispatch::Nothing, "BE in flight blocks IDLE");
        d.completed(&read(1, 1, 200), ms(3));
        assert_eq!(take(&mut d, ms(3)), 0);
    }

    #[test]
    fn aged_lower_level_requests_jump_the_queue() {
        let mut d = dd(&[("prio_aging_expire", 100.0)]);
        prio(&mut d, 0, IoClass::Rt);
        d.insert(read(0, 1, 100), ms(0)); // BE, tick 0
        for i in 1..40u32 {
            d.insert(read(i, 0, 1000 + i as u64 * LEN as u64), ms(0));
        }
        // RT first while the BE request is young.
        assert_eq!(take(&mut d, ms(50)), 1);
        // prio_aging_expire 100 ms = 25 ticks: at tick 25 the BE request
        // (tick 0) is not yet older (started_after: 0 > 25 - 25 is false
        // → it qualifies at tick 25).
        assert_eq!(take(&mut d, ms(96)), 2, "tick 24: not aged");
        assert_eq!(take(&mut d, ms(100)), 0, "tick 25: aged");
    }

    /// `dd_merged_requests`: the survivor takes the earlier FIFO time and
    /// place of the request it absorbs; that one leaves the level (and a
    /// next request that was it moves on); `dd_request_merge` finds front
    /// merges in the bio's level only.
    #[test]
    fn a_merged_request_keeps_the_earlier_fifo_time() {
        let mut d = dd(&[("fifo_batch", 1.0)]);
        d.insert(read(1, 0, 1008), ms(0)); // expires at tick 125
        d.insert(read(2, 0, 5000), ms(100)); // tick 25 → 150
        d.insert(read(0, 0, 1000), ms(400)); // tick 100 → 225
        let (rq0, rq1) = (read(0, 0, 1000), read(1, 0, 1008));
        let merged = Request { nr_sectors: 16, ..rq0 };
        d.merged_requests(&rq0, &merged, &rq1, ms(400));
        assert_eq!(d.queued(), 2);
        let pp = &d.per_prio[BE_PRIO];
        let first = pp.q.fifo_first(READ).unwrap();
        assert_eq!(*pp.q.rq(first), merged, "first in the FIFO, in 1's place");
        assert_eq!(pp.q.fifo_time(first), ms(500), "1's expiry (tick 125)");
        assert_eq!(take(&mut d, ms(500)), 0, "expired at 1's time");
        // Front merges: the request of the bio's own level.
        prio(&mut d, 5, IoClass::Rt);
        let bio_rt = Request { pid: 5, ..read(9, 5, 4992) };
        assert_eq!(d.front_merge_candidate(&bio_rt), None);
        let bio_be = Request { pid: 3, ..read(9, 3, 4992) };
        assert_eq!(d.front_merge_candidate(&bio_be).map(|r| r.id), Some(2));
        assert_eq!(dd(&[("front_merges", 0.0)]).front_merge_candidate(&bio_be), None);
    }

    /// `blk_mq_update_nr_requests` calls `dd_depth_updated` before it
    /// stores the new `nr_requests`: raised through sysfs after the switch
    /// (as the testbed does), `async_depth` stays the switch's pool, 2 at
    /// queue depth 1, so writes get one tag per word: 4 of 64.
    #[test]
    fn async_depth_keeps_the_pool_of_the_switch() {
        let mut c = crate::sched::testutil::ctx();
        c.queue_depth = 1;
        let given: BTreeMap<String, f64> = [("nr_requests".to_string(), 64.0)].into();
        let (mut e, _) = crate::sched::build(NAME, &given, &c).unwrap();
        let m = e.as_mq().unwrap();
        let mut writes = 0;
        while m.get_tag(&write(0, 0, 0)).is_some() {
            writes += 1;
        }
        assert_eq!(writes, 4);
        assert!(m.get_tag(&read(0, 0, 0)).is_some(), "sync reads are not limited");
        let d = MqDeadline::new(&resolve_tunables(&INFO, &given, "test").unwrap(), 64, 2);
        assert_eq!(d.async_depth, 2);
    }

    #[test]
    fn async_depth_limits_writes_and_async_requests_only() {
        let d = dd(&[("async_depth", 16.0)]);
        let tags = Sbitmap::new(64); // shift 4: 4 words of 16
        assert_eq!(d.limit_depth(&read(0, 0, 0), &tags), None);
        assert_eq!(d.limit_depth(&write(1, 0, 0), &tags), Some(4));
        let sync_write = Request { sync: true, ..write(2, 0, 0) };
        assert_eq!(d.limit_depth(&sync_write, &tags), Some(4), "writes are limited even when sync");
        // The default (nr_requests) is no limit at all: a whole word.
        assert_eq!(dd(&[]).limit_depth(&write(1, 0, 0), &tags), Some(16));
    }

    #[test]
    fn runs_in_the_engine_on_an_ssd_and_a_disk() {
        use crate::experiment::{self, Format};
        let spec = |preset: &str, qd: u32| {
            format!(
                "[disk]\npreset = \"{preset}\"\nqueue_depth = {qd}\n[[scheduler]]\nname = \"mq-deadline\"\n\
                 [workload]\nkind = \"processes\"\n[[workload.group]]\ncount = 3\nfile_mb = 2\nrequest_kb = 16\npasses = 1\n\
                 [[workload.group]]\ncount = 2\nop = \"write\"\nsync = false\nfile_mb = 2\npasses = 1\nioprio = \"idle\"\n"
            )
        };
        for (preset, qd) in [("hp97560", 1), ("ssd", 32)] {
            let e = experiment::parse(&spec(preset, qd), "t.toml", Format::Toml, &[]).unwrap();
            let r = e.run_job(experiment::Job { scheduler: 0, seed: 1 }, &Default::default()).unwrap();
            assert_eq!(r.requests.inserted, r.requests.completed, "{preset}");
            assert!(r.requests.completed > 0);
        }
    }
}

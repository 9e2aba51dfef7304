//! The block layer of Linux 2.6.20, between whoever moves data (a process
//! doing direct I/O, the page cache) and the elevator: `__make_request`
//! and the request list of `block/ll_rw_blk.c`, and the generic half of
//! `block/elevator.c` (the merge hash, `last_merge`, `elv_insert`).
//!
//! Brief overview. A [`Bio`] is one contiguous run of sectors to move. It
//! is submitted with [`BlockLayer::submit`] and either joins a queued
//! request that it touches (`merge`: a back merge when the request ends
//! where the bio starts, a front merge when it starts where the bio ends,
//! up to the queue's `max_sectors`), or becomes a request of its own. A
//! new request must first be allocated from the request list, which holds
//! `nr_requests` per data direction (`limits`); when the list is full the
//! submitter sleeps until a request is freed, unless the elevator exempts
//! it. A request added to an empty queue plugs the queue (`plug`): the
//! device is not started until `unplug_thresh` requests wait, `unplug_delay`
//! passes, or someone needs the I/O now (a sync bio, a process that waits
//! for its data). A request keeps the list of its bios, and when the device
//! completes it, each bio's origin is told ([`BlockLayer::complete`]).
//!
//! What the block layer asks of the engine (run the queue, arm a kernel
//! timer, wake a process) it writes into [`Effects`], which the engine
//! drains after each call. Files: `bio` (bios and the bio store), `merge`
//! (`elv_merge`, `attempt_merge`, the merge hash), `plug` (plugging),
//! `limits` (the request list: `get_request`, `freed_request`, congestion),
//! `rqhash` (the merge hash's table).

pub mod bio;
pub mod limits;
pub mod merge;
pub mod mq;
pub mod plug;
mod rqhash;

use self::bio::{Bio, BioStore, NIL};
use self::limits::RequestList;
use self::plug::Plug;
use self::rqhash::RqHash;
use crate::error::{Error, Result};
use crate::request::{IoPrio, ProcessId, Request, RequestId, SECTOR_BYTES};
use crate::sched::Elevator;
use crate::time::{ms_to_ns, SimTime};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// A one-multiply hasher (as rustc's FxHasher) for the block layer's
/// integer keys, which no user picks adversarially: hashing sits on the
/// path of every request.
#[derive(Default, Clone, Copy)]
pub(crate) struct IntHasher(u64);

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(b as u64);
        }
    }
    fn write_u64(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
    fn write_u32(&mut self, x: u32) {
        self.write_u64(x as u64);
    }
}

pub(crate) type IntMap<K, V> = HashMap<K, V, BuildHasherDefault<IntHasher>>;

/// The `[queue]` table of an experiment spec: the request queue's
/// settings, with 2.6.20's defaults and sysfs names
/// (`/sys/block/<dev>/queue/`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QueueSpec {
    /// Requests per data direction before submitters sleep
    /// (`BLKDEV_MAX_RQ`, include/linux/blkdev.h).
    pub nr_requests: u32,
    /// Largest request, KiB (`BLK_DEF_MAX_SECTORS` 1024 sectors, the
    /// default `blk_queue_max_sectors` gives a driver whose hardware allows
    /// more, as SCSI's `sd` and libata do).
    pub max_sectors_kb: u32,
    /// Requests waiting in a plugged queue that unplug it
    /// (`q->unplug_thresh = 4`, blk_queue_make_request).
    pub unplug_thresh: u32,
    /// How long a plugged queue waits at most
    /// (`q->unplug_delay = 3 ms`, blk_queue_make_request).
    pub unplug_delay_ms: f64,
    /// Merge bios into queued requests. 2.6.20 always merges; `false`
    /// is what the later `nomerges` sysfs file does (for replaying traces
    /// recorded below the merge point).
    pub merges: bool,
    /// The most read-ahead reads at once, KiB (`read_ahead_kb`; 2.6.20's
    /// `VM_MAX_READAHEAD`). Buffered reads only.
    pub read_ahead_kb: u32,
    /// The 6.1 elevators' path: the driver has a dispatch budget
    /// (`.get_budget`, as SCSI disks do), so blk-mq asks the elevator only
    /// when the device has room. Off (the default) is virtio-blk's and
    /// NVMe's case: no budget, so a queue run takes one request more from
    /// the elevator than the device has driver tags for, and leaves it on
    /// the dispatch list (`__blk_mq_do_dispatch_sched`).
    #[serde(skip_serializing_if = "is_false")]
    pub driver_budget: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl Default for QueueSpec {
    fn default() -> Self {
        QueueSpec {
            nr_requests: 128,
            max_sectors_kb: 512,
            unplug_thresh: 4,
            unplug_delay_ms: 3.0,
            merges: true,
            read_ahead_kb: VM_MAX_READAHEAD_KB,
            driver_budget: false,
        }
    }
}

/// `VM_MAX_READAHEAD`, KiB (include/linux/mm.h, 2.6.20): the queue's
/// default `read_ahead_kb`. `blk_queue_make_request` sets the queue's
/// `backing_dev_info.ra_pages` from it; the page cache's read-ahead reads
/// the queue's value, never the constant.
pub const VM_MAX_READAHEAD_KB: u32 = 128;

/// `BLKDEV_MIN_RQ`: `queue_requests_store` raises a smaller nr_requests.
const MIN_NR_REQUESTS: u32 = 4;

impl QueueSpec {
    /// Check the values; errors name the field (`queue.nr_requests`).
    pub fn validate(&self) -> Result<()> {
        if self.nr_requests < MIN_NR_REQUESTS || self.nr_requests > 1 << 20 {
            return Err(Error::invalid(
                "queue.nr_requests",
                format!("must be within [{MIN_NR_REQUESTS}, {}], got {}", 1 << 20, self.nr_requests),
            ));
        }
        if self.max_sectors_kb < 4 || self.max_sectors_kb > 32 * 1024 {
            return Err(Error::invalid(
                "queue.max_sectors_kb",
                format!("must be within [4, 32768] (one page at least), got {}", self.max_sectors_kb),
            ));
        }
        if self.read_ahead_kb > 64 * 1024 {
            return Err(Error::invalid(
                "queue.read_ahead_kb",
                format!("must be at most 65536, got {}", self.read_ahead_kb),
            ));
        }
        if self.unplug_thresh == 0 {
            return Err(Error::invalid("queue.unplug_thresh", "must be at least 1"));
        }
        if !(self.unplug_delay_ms.is_finite() && (0.0..=1000.0).contains(&self.unplug_delay_ms)) {
            return Err(Error::invalid(
                "queue.unplug_delay_ms",
                format!("must be within [0, 1000] ms, got {}", self.unplug_delay_ms),
            ));
        }
        Ok(())
    }

    /// Largest request in sectors.
    pub fn max_sectors(&self) -> u32 {
        (self.max_sectors_kb as u64 * 1024 / SECTOR_BYTES) as u32
    }
}

/// A kernel timer the engine arms on the block layer's or the page
/// cache's behalf, and hands back when it fires.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum KernelTimer {
    /// `q->unplug_timer` (blk_plug_device).
    Unplug,
    /// The flusher's next look at dirty memory (pdflush, wb_timer).
    Flusher,
    /// A process's timed sleep (congestion_wait) ends, unless it was
    /// woken before; `token` tells this sleep from later ones.
    Sleep { pid: ProcessId, token: u32 },
}

/// Why a process sleeping in the kernel is woken: a process is woken
/// only for what it sleeps for.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Wake {
    /// A request was freed (`get_request_wait`).
    Request,
    /// A page it waits for is up to date (`lock_page`).
    Page,
    /// Its `congestion_wait` ended (congestion cleared, or the timeout).
    Congestion,
    /// The flusher has work.
    Flusher,
}

/// What the block layer and the page cache ask of the engine. Drained by
/// the engine after each call into them; the vectors keep their capacity.
#[derive(Debug, Default)]
pub struct Effects {
    /// Run the queue: ask the elevator for requests (the driver's
    /// request_fn, called from an unplug).
    pub run_queue: bool,
    /// Timers to arm.
    pub timers: Vec<(SimTime, KernelTimer)>,
    /// Processes whose kernel sleep ended, and why.
    pub wake: Vec<(ProcessId, Wake)>,
    /// Requests merged into another outside a bio's submission (the
    /// blk-mq path's insert merges): (survivor, gone).
    pub absorbed: Vec<(RequestId, RequestId)>,
}

/// What became of a submitted bio.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Submitted {
    /// It became a new request, now in the elevator.
    Inserted(Request),
    /// It joined the queued request `into`; if that then merged with its
    /// neighbour, the neighbour `absorbed` is gone (freed, never
    /// dispatched).
    Merged { into: RequestId, absorbed: Option<RequestId> },
    /// The request list is full: the submitter sleeps, and the bio waits
    /// in the block layer until [`BlockLayer::retry`] finds a request.
    Sleeping,
}

/// A request the block layer knows: queued in the elevator or in the
/// device, with its bios.
#[derive(Copy, Clone, Debug)]
struct Entry {
    /// The request as it is now.
    rq: Request,
    /// The copy the elevator holds (differs from `rq` only between a merge
    /// and the elevator hearing of it).
    elv: Request,
    first_bio: u32,
    last_bio: u32,
    /// In the elevator (false once dispatched).
    queued: bool,
    /// `REQ_NOMERGE`: a merge was refused for size; never merge again.
    nomerge: bool,
    /// The blk-mq path: the request's tag (scheduler tag with an elevator,
    /// driver tag for `none`); [`NO_TAG`] on the 2.6.20 path.
    tag: u32,
}

/// `BLK_MQ_NO_TAG`.
const NO_TAG: u32 = u32::MAX;

/// Requests by id. Ids are handed out in order and mostly retire in order,
/// so a ring indexed by `id - base` finds one without hashing.
#[derive(Debug, Default)]
struct Table {
    base: RequestId,
    slots: VecDeque<Option<Entry>>,
}

impl Table {
    fn insert(&mut self, e: Entry) {
        debug_assert_eq!(e.rq.id, self.base + self.slots.len() as RequestId);
        self.slots.push_back(Some(e));
    }
    fn get(&self, id: RequestId) -> Option<&Entry> {
        self.slots.get(id.checked_sub(self.base)? as usize)?.as_ref()
    }
    fn get_mut(&mut self, id: RequestId) -> Option<&mut Entry> {
        self.slots.get_mut(id.checked_sub(self.base)? as usize)?.as_mut()
    }
    fn remove(&mut self, id: RequestId) -> Option<Entry> {
        let e = self.slots.get_mut(id.checked_sub(self.base)? as usize)?.take();
        while let Some(None) = self.slots.front() {
            self.slots.pop_front();
            self.base += 1;
        }
        e
    }
    fn live(&self) -> usize {
        self.slots.iter().filter(|s| s.is_some()).count()
    }
}

/// The request queue (`request_queue_t`) below the elevator.
pub struct BlockLayer {
    spec: QueueSpec,
    max_sectors: u32,
    unplug_delay_ns: u64,
    next_id: RequestId,
    table: Table,
    bios: BioStore,
    /// `elv_rqhash`: queued requests by end sector (back-merge lookup).
    hash: RqHash,
    /// `q->last_merge`: the one-hit merge cache.
    last_merge: Option<RequestId>,
    plug: Plug,
    rl: RequestList,
    /// Bios waiting for a request, one per sleeping submitter.
    parked: IntMap<ProcessId, (Bio, SimTime)>,
    /// Requests handed to the device and not completed (`q->in_flight`).
    in_flight: u32,
    pub fx: Effects,
    /// The blk-mq path (`mq.rs`) instead of 2.6.20's.
    mq: bool,
    /// Each task's plug (blk-mq path).
    plugs: IntMap<ProcessId, mq::TaskPlug>,
    /// Each task's I/O priority (blk-mq path: merges need equal ones).
    ioprio: Vec<IoPrio>,
    scratch_rqs: Vec<Request>,
    scratch_pids: Vec<ProcessId>,
}

/// A bio's completion, as the block layer hands it back.
#[derive(Copy, Clone, Debug)]
pub struct Done {
    pub bio: Bio,
    /// When the bio was submitted (its latency starts here).
    pub submitted: SimTime,
    /// The request that carried it.
    pub request: RequestId,
}

impl BlockLayer {
    pub fn new(spec: &QueueSpec) -> Result<BlockLayer> {
        spec.validate()?;
        Ok(BlockLayer {
            spec: spec.clone(),
            max_sectors: spec.max_sectors(),
            unplug_delay_ns: ms_to_ns(spec.unplug_delay_ms).max(1),
            next_id: 0,
            table: Table::default(),
            bios: BioStore::default(),
            hash: RqHash::default(),
            last_merge: None,
            plug: Plug::default(),
            rl: RequestList::new(spec.nr_requests),
            parked: IntMap::default(),
            in_flight: 0,
            fx: Effects::default(),
            mq: false,
            plugs: IntMap::default(),
            ioprio: Vec::new(),
            scratch_rqs: Vec::new(),
            scratch_pids: Vec::new(),
        })
    }

    /// Largest request, in sectors: the most a caller may put in one bio.
    pub fn max_sectors(&self) -> u32 {
        self.max_sectors
    }

    /// The queue is plugged: inserts do not start the device. (The
    /// blk-mq path has no queue plug, only per-task plugs.)
    pub fn plugged(&self) -> bool {
        self.plug.plugged
    }

    /// Write congestion (`bdi_write_congested`) or read congestion. The
    /// blk-mq path has none: 6.1 has no request list to congest (a
    /// submitter waits for a tag instead) and no bdi congestion flags.
    pub fn congested(&self, dir: crate::request::Dir) -> bool {
        !self.mq && self.rl.congested(dir)
    }

    /// Requests a direction may still allocate before it is congested
    /// (0 if it is).
    pub fn congestion_room(&self, dir: crate::request::Dir) -> u32 {
        if self.mq {
            u32::MAX
        } else {
            self.rl.congestion_room(dir)
        }
    }

    /// Requests allocated in a data direction (`q->rq.count[rw]`).
    pub fn allocated(&self, dir: crate::request::Dir) -> u32 {
        self.rl.count(dir)
    }

    /// `__make_request`: merge `bio` into a queued request or give it a
    /// request of its own and insert that into the elevator. A sync bio
    /// unplugs the queue at the end (`if (sync) __generic_unplug_device`).
    pub fn submit(&mut self, bio: Bio, elv: &mut dyn Elevator, now: SimTime) -> Submitted {
        debug_assert!(bio.nr_sectors >= 1 && bio.nr_sectors <= self.max_sectors, "bio larger than max_sectors");
        if self.mq {
            return self.mq_submit(bio, elv, now);
        }
        if self.spec.merges && elv.merges() && elv.queued() > 0 {
            if let Some((into, absorbed)) = self.merge(&bio, elv, now) {
                if bio.sync {
                    self.unplug();
                }
                return Submitted::Merged { into, absorbed };
            }
        }
        if !self.rl.get_request(bio.pid, bio.dir, bio.sync, elv, now, &mut self.fx) {
            // get_request_wait: unplug, then sleep until a request frees.
            self.unplug();
            self.rl.wait(bio.pid, bio.dir);
            let clash = self.parked.insert(bio.pid, (bio, now));
            debug_assert!(clash.is_none(), "process {} parked twice", bio.pid);
            return Submitted::Sleeping;
        }
        let rq = self.add_request(bio, now, elv, now);
        if bio.sync {
            self.unplug();
        }
        Submitted::Inserted(rq)
    }

    /// A process woken from a request-list sleep tries again
    /// (`get_request_wait`'s loop: it is now a batcher). `Some` with the
    /// new request if it got one (the process then goes on), `None` if it
    /// sleeps again.
    pub fn retry(&mut self, pid: ProcessId, elv: &mut dyn Elevator, now: SimTime) -> Option<Request> {
        if self.mq {
            return self.mq_retry(pid, elv, now);
        }
        let &(bio, submitted) = self.parked.get(&pid)?;
        self.rl.set_batching(pid, now);
        if !self.rl.get_request(pid, bio.dir, bio.sync, elv, now, &mut self.fx) {
            self.unplug();
            self.rl.wait(pid, bio.dir);
            return None;
        }
        self.parked.remove(&pid);
        let rq = self.add_request(bio, submitted, elv, now);
        if bio.sync {
            self.unplug();
        }
        Some(rq)
    }

    /// `pid` has a bio waiting for a request.
    pub fn parked(&self, pid: ProcessId) -> bool {
        self.parked.contains_key(&pid)
    }

    /// A new request made of `bio` alone, entered in the request table (the
    /// request both paths allocate: `get_request` in 2.6.20, a tag's
    /// request in blk-mq). `queued`: in the elevator's keeping at once.
    /// Always inlined into its two callers: once per request, and left to
    /// itself the compiler kept it out of line in some builds (noop on the
    /// closed C3323A load: about 20 instructions per request more).
    #[inline(always)]
    fn new_entry(&mut self, bio: Bio, submitted: SimTime, queued: bool, tag: u32) -> Request {
        let rq = bio.as_request(self.next_id, submitted);
        self.next_id += 1;
        let b = self.bios.push(bio, submitted);
        self.table.insert(Entry { rq, elv: rq, first_bio: b, last_bio: b, queued, nomerge: false, tag });
        rq
    }

    /// A request of its own for `bio` (allocated already): plug an empty
    /// queue, insert into the elevator (`add_request` -> `elv_insert`),
    /// unplug if enough requests now wait.
    fn add_request(&mut self, bio: Bio, submitted: SimTime, elv: &mut dyn Elevator, now: SimTime) -> Request {
        let rq = self.new_entry(bio, submitted, true, NO_TAG);
        let id = rq.id;
        if elv.queued() == 0 {
            self.plug.plug(now, self.unplug_delay_ns, &mut self.fx);
        }
        if self.spec.merges && elv.merges() {
            self.hash_add(&rq);
            self.last_merge.get_or_insert(id);
        }
        elv.insert(rq, now);
        // elv_insert: a plugged queue with enough requests waiting goes.
        let waiting = self.rl.count_all().saturating_sub(self.in_flight);
        if self.plug.plugged && waiting >= self.spec.unplug_thresh {
            self.unplug();
        }
        rq
    }

    /// `__generic_unplug_device`: remove the plug and run the queue.
    pub fn unplug(&mut self) {
        if self.mq {
            return;
        }
        if self.plug.unplug() {
            self.fx.run_queue = true;
        }
    }

    /// `blk_run_queue` from the driver or an elevator's kblockd kick: the
    /// plug goes, whoever runs the queue next runs it.
    pub fn remove_plug(&mut self) {
        self.plug.unplug();
    }

    /// The unplug timer fired (`blk_unplug_timeout` -> kblockd ->
    /// `generic_unplug_device`).
    pub fn unplug_timer(&mut self, now: SimTime) {
        if self.plug.timer_due(now) {
            self.unplug();
        }
    }

    /// The elevator handed `rq` to the device: it can no longer be merged
    /// into (`elv_dispatch_add_tail`: `last_merge`, `elv_rqhash_del`).
    pub fn dispatched(&mut self, rq: &Request) {
        if let Some(e) = self.table.get_mut(rq.id) {
            e.queued = false;
            let r = e.rq;
            self.hash_del(&r);
            if self.last_merge == Some(rq.id) {
                self.last_merge = None;
            }
        }
        self.in_flight += 1;
    }

    /// The request as it is now (after merges), for the device.
    pub fn current(&self, id: RequestId) -> Option<Request> {
        self.table.get(id).map(|e| e.rq)
    }

    /// The device completed request `id`: free it (`blk_put_request` ->
    /// `freed_request`) and hand back its bios, in order, in `out`.
    /// On the blk-mq path the request's tag goes back (`blk_mq_free_request`
    /// → `blk_mq_put_tag`), which may wake tasks sleeping for one.
    pub fn complete(&mut self, id: RequestId, now: SimTime, out: &mut Vec<Done>, elv: &mut dyn Elevator) {
        let Some(e) = self.table.remove(id) else {
            debug_assert!(false, "completion of unknown request {id}");
            return;
        };
        self.in_flight = self.in_flight.saturating_sub(1);
        let mut b = e.first_bio;
        while b != NIL {
            let (bio, submitted, next) = self.bios.take(b);
            out.push(Done { bio, submitted, request: id });
            b = next;
        }
        if self.mq {
            let mut woken = std::mem::take(&mut self.scratch_pids);
            woken.clear();
            if let Some(m) = elv.as_mq() {
                m.put_tag(e.tag, &mut woken);
            }
            for &pid in &woken {
                self.fx.wake.push((pid, Wake::Request));
            }
            self.scratch_pids = woken;
        } else {
            self.rl.freed(e.rq.dir, now, &mut self.fx);
        }
    }

    /// Requests known (queued or in the device), for tests and checks.
    pub fn live_requests(&self) -> usize {
        self.table.live()
    }

    /// Put a process to sleep in `congestion_wait(dir)` until congestion
    /// in that direction clears (a request of it is freed below the
    /// congestion-off mark); the caller arms the timeout.
    pub fn congestion_wait(&mut self, pid: ProcessId, dir: crate::request::Dir) {
        self.rl.congestion_wait(pid, dir);
    }

    /// Forget a congestion sleeper (its timeout woke it first).
    pub fn congestion_cancel(&mut self, pid: ProcessId) {
        self.rl.congestion_cancel(pid);
    }
}

#[cfg(test)]
mod tests;

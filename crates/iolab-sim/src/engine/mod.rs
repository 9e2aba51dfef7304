//! The discrete-event engine: processes → scheduler → device → completions.
//!
//! Events are ordered by `(time, seq)`: `seq` is a counter stamped when an
//! event is scheduled, so events at the same nanosecond come out first-in,
//! first-out and a run never depends on heap internals (the same rule as
//! nexosim's priority queue), except that timers come last at their
//! instant (see [`Event`]). There are three kinds of event: a process
//! wakes up (start, end of a think), the device completes a request, and
//! a scheduler timer fires. A scheduler arms a timer in two ways: by
//! answering a dispatch with [`Dispatch::IdleUntil`] (anticipation), or by
//! reporting one through [`Elevator::armed_timer`], which the engine reads
//! after every call into the scheduler.
//!
//! The device holds up to `queue_depth` requests. A disk serves them one
//! at a time, in its own queue's order; a device with internal parallelism
//! (an SSD) has up to [`Disk::max_in_service`] in service at once.
//!
//! Order of work on a completion, as in Linux: the elevator hears of it
//! (`completed_request`), the device is refilled (the queue is run from the
//! completion path), and only then does the issuing process wake up and
//! submit its next request. That ordering is what makes deceptive idleness
//! visible: a work-conserving scheduler has already moved the head away
//! when the next sequential request arrives.
//!
//! On the 6.1 elevators' blk-mq path the queue runs when their hardware
//! queue says so (an insert, SCHED_RESTART at a completion, an elevator's
//! kick, the delayed run: `sched::mq`), and at a completion the tasks woken
//! for a freed tag try for it before the completed request's owner goes on.
//!
//! Between a process and the elevator sits the block layer ([`crate::blk`]:
//! merging, plugging, the request limit; 6.1's blk-mq path for the 6.1
//! elevators); a process's direct I/O goes through it as bios, and so does
//! the page cache's I/O. The kernel side of
//! a process (its bios waiting to be submitted, its sleeps in the block
//! layer or the page cache) is in `engine/kernel.rs`.

use crate::blk::{BlockLayer, Done, KernelTimer, QueueSpec, Wake};
use crate::pagecache::{PageCache, VmSpec};
use crate::disk::{DeviceOrder, Disk};
use crate::error::{Error, Result};
use crate::metrics::Collector;
use crate::request::{ProcessId, Request, RequestId};
use crate::rng::SimRng;
use crate::sched::{Dispatch, Elevator, SchedContext};
use crate::time::SimTime;
use crate::workload::{BuiltWorkload, Process, Step};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// How a run is stopped from outside and how it reports progress. Shared
/// with the thread that shows a progress bar and handles Ctrl-C.
#[derive(Debug, Default)]
pub struct RunControl {
    /// Set to stop the run at the next check.
    pub cancel: AtomicBool,
    /// Requests completed so far (updated every few thousand events).
    pub completed: AtomicU64,
}

/// Events between two looks at the cancel flag and two progress updates.
const CHECK_EVERY: u64 = 1 << 14;

pub mod cpu;
mod kernel;

/// Events at one instant beyond which a run is stuck: a loop of zero-time
/// steps (a 0 ns service or think) would otherwise never advance the clock.
/// Far above what a real instant holds (every process starting at once is
/// a few events per process, and processes are at most 65,536).
const MAX_EVENTS_AT_ONE_INSTANT: u64 = 1 << 24;

/// Device and stopping parameters of one run.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    pub queue_depth: u32,
    pub device_order: DeviceOrder,
    /// The request queue between processes and the elevator.
    pub queue: QueueSpec,
    /// Memory and write-back, for buffered I/O.
    pub vm: VmSpec,
    /// Stop at this simulated time.
    pub max_time: Option<SimTime>,
    /// Stop after this many completions.
    pub max_requests: Option<u64>,
    pub seed: u64,
    /// CPUs the processes' `cpu` time runs on (`[host] cpus`); `None`:
    /// one per process.
    pub cpus: Option<u32>,
}

/// Hooks for tests and tracing; all optional. In blktrace's terms:
/// `queued` is Q (a bio reaches the block layer; its request id is 0),
/// `inserted` is I (it became a request), `merged` is M/F, `dispatched`
/// is D and `completed` is C.
pub trait Observer {
    fn queued(&mut self, _bio: &Request, _now: SimTime) {}
    fn inserted(&mut self, _rq: &Request, _now: SimTime) {}
    /// A bio joined queued request `rq` (shown as it is now); if that made
    /// it join the queued request `absorbed` too, that one is gone.
    fn merged(&mut self, _rq: &Request, _absorbed: Option<RequestId>, _now: SimTime) {}
    fn dispatched(&mut self, _rq: &Request, _now: SimTime) {}
    fn completed(&mut self, _rq: &Request, _now: SimTime) {}
}

/// An observer that does nothing (compiled away).
pub struct NoObserver;
impl Observer for NoObserver {}

/// What the engine hands back to the experiment layer.
pub struct Outcome {
    pub end: SimTime,
    /// Service time already charged to the device past `end`.
    pub overhang_ns: u64,
    pub collector: Collector,
    pub events: u64,
    pub classes: Vec<String>,
    pub process_names: Vec<String>,
    /// The scheduler's anticipation accounting at the end of the run.
    pub anticipation: Option<crate::sched::AnticipationStats>,
    /// Each process's phase timings (processes that keep them).
    pub timings: Vec<(ProcessId, crate::workload::process::PhaseTiming)>,
    /// The page cache's counters, for runs with buffered I/O.
    pub cache: Option<crate::pagecache::CacheReport>,
    /// The CPUs' figures, for runs with `[host] cpus`.
    pub cpu: Option<cpu::CpuReport>,
    /// The elevator's own trace messages (those it was asked to keep,
    /// `Elevator::keep_messages`) and how many were dropped.
    pub messages: (Vec<(SimTime, String)>, u64),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Wake(ProcessId),
    DiskDone(RequestId),
    Timer,
    /// A block-layer or page-cache timer.
    Kernel(KernelTimer),
    /// A process's sleep in the kernel ended.
    KernelWake(ProcessId, Wake),
}

/// Ordered by time, then timers after everything else at the same
/// instant, then scheduling order. A timer set for t therefore covers the
/// whole of [start, t]: a request that arrives exactly at t is seen before
/// the wait is declared failed (the order of two events at one nanosecond is
/// otherwise arbitrary, and a wait bounded by a measured think time — the
/// 95% heuristic, WPCAS — ends exactly when such a request arrives).
///
/// `order` packs the last two keys into one word: the timer flag in the
/// top bit, the scheduling counter below (2^63 events are beyond any run),
/// so the heap compares two words, not three fields.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Event {
    time: SimTime,
    order: u64,
    kind: Kind,
}

/// The top bit of [`Event::order`]: a timer.
const TIMER_LAST: u64 = 1 << 63;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum ProcState {
    /// Not started yet, or thinking: a Wake event is pending.
    Sleeping,
    /// Waiting for one of its requests.
    Blocked,
    /// Asleep in the kernel (for a request, a page, or congestion); the
    /// kernel wakes it.
    Kernel,
    /// Waiting at a barrier for the other parties.
    Barrier,
    Exited,
}

struct Engine<'o, O: Observer> {
    now: SimTime,
    seq: u64,
    heap: BinaryHeap<Reverse<Event>>,
    sched: Box<dyn Elevator>,
    disk: Box<dyn Disk>,
    capacity: u64,
    procs: Vec<Box<dyn Process>>,
    state: Vec<ProcState>,
    rngs: Vec<SimRng>,
    depth: usize,
    /// Requests the device serves at once (1 for a disk).
    parallel: usize,
    order: DeviceOrder,
    device_queue: Vec<Request>,
    /// Requests in service and when each completes.
    in_service: Vec<(Request, SimTime)>,
    /// The deadline of the last `Dispatch::IdleUntil`, while pending.
    timer_armed: Option<SimTime>,
    blk: BlockLayer,
    /// Each process's kernel side (bios to submit, split operations, what
    /// it sleeps for).
    kio: kernel::KernelIo,
    /// The page cache, for workloads with buffered I/O.
    cache: Option<PageCache>,
    /// The CPUs processes compute on, when fewer than the processes.
    cpus: Option<cpu::CpuPool>,
    /// Processes that have not exited.
    live: usize,
    /// Buffered I/O's copy time per page, ns.
    copy_ns_per_page: u64,
    /// Processes waiting at each barrier (group, key).
    barriers: std::collections::BTreeMap<(u32, u32), Vec<ProcessId>>,
    /// Scratch for completed bios.
    done: Vec<Done>,
    /// The scheduler's own timer ([`Elevator::armed_timer`]), as last seen.
    elv_timer: Option<SimTime>,
    /// The instant a timer last fired: not armed again at that instant.
    fired_at: Option<SimTime>,
    /// The last process event or completion.
    last_work: SimTime,
    /// Scratch for a blk-mq queue run.
    mq_run: crate::sched::mq::MqRun,
    metrics: Collector,
    obs: &'o mut O,
}

/// What an elevator is built with on `disk` driven at `queue_depth`: the
/// model's cost function and the queue's flags, never the drive itself.
/// The engine joins the two, so neither the elevators nor the disk models
/// import the other.
pub fn sched_context(disk: &dyn Disk, queue_depth: u32) -> SchedContext {
    SchedContext { position_cost: disk.position_cost(), queue_depth, rotational: disk.rotational() }
}

/// Run one simulation to its end.
pub fn run(
    disk: Box<dyn Disk>,
    sched: Box<dyn Elevator>,
    workload: BuiltWorkload,
    cfg: &EngineConfig,
    control: &RunControl,
) -> Result<Outcome> {
    run_observed(disk, sched, workload, cfg, control, &mut NoObserver)
}

/// [`run`] with an observer that sees every insert, dispatch and completion.
pub fn run_observed<O: Observer>(
    disk: Box<dyn Disk>,
    sched: Box<dyn Elevator>,
    workload: BuiltWorkload,
    cfg: &EngineConfig,
    control: &RunControl,
    obs: &mut O,
) -> Result<Outcome> {
    if cfg.queue_depth == 0 {
        return Err(Error::invalid("disk.queue_depth", "must be at least 1"));
    }
    let BuiltWorkload { mut classes, processes, page_cache } = workload;
    let n = processes.len();
    let mut process_class: Vec<u32> = processes.iter().map(|p| p.process.class()).collect();
    let mut process_names: Vec<String> = processes.iter().map(|p| p.name.clone()).collect();
    // The flusher (pdflush) is a kernel thread with a process id of its
    // own after the workload's, and a class of its own.
    let cache = if page_cache {
        process_class.push(classes.len() as u32);
        classes.push(kernel::FLUSHER_NAME.into());
        process_names.push(kernel::FLUSHER_NAME.into());
        let blk_max = crate::blk::QueueSpec::max_sectors(&cfg.queue);
        Some(PageCache::new(&cfg.vm, cfg.queue.read_ahead_kb, blk_max, n as ProcessId)?)
    } else {
        None
    };
    let threads = n + page_cache as usize;
    let mut e = Engine {
        now: SimTime::ZERO,
        seq: 0,
        heap: BinaryHeap::with_capacity(n + 8),
        capacity: disk.capacity_sectors(),
        sched,
        disk,
        procs: Vec::with_capacity(n),
        state: vec![ProcState::Sleeping; threads],
        rngs: (0..n as u64).map(|i| SimRng::for_stream(cfg.seed, i + 1)).collect(),
        depth: cfg.queue_depth as usize,
        parallel: 1,
        order: cfg.device_order,
        device_queue: Vec::with_capacity(cfg.queue_depth as usize),
        in_service: Vec::new(),
        timer_armed: None,
        blk: BlockLayer::new(&cfg.queue)?,
        kio: kernel::KernelIo::new(threads),
        cache,
        cpus: cfg.cpus.map(cpu::CpuPool::new),
        live: n,
        copy_ns_per_page: crate::time::ms_to_ns(cfg.vm.copy_us_per_page / 1000.0),
        barriers: std::collections::BTreeMap::new(),
        done: Vec::new(),
        elv_timer: None,
        fired_at: None,
        last_work: SimTime::ZERO,
        mq_run: Default::default(),
        metrics: Collector::new(process_class, classes.len()),
        obs,
    };
    e.parallel = e.disk.max_in_service().clamp(1, e.depth);
    // A 6.1 elevator takes the blk-mq path: its driver has queue_depth tags.
    if let Some(m) = e.sched.as_mq() {
        m.set_driver(cfg.queue_depth, cfg.queue.driver_budget);
        e.blk.set_mq(true);
    }
    for (pid, entry) in processes.into_iter().enumerate() {
        e.schedule(entry.start, Kind::Wake(pid as ProcessId));
        e.sched.set_ioprio(pid as ProcessId, entry.process.ioprio());
        e.blk.set_ioprio(pid as ProcessId, entry.process.ioprio());
        e.procs.push(entry.process);
    }
    e.start_flusher();
    e.sync_timer();
    let mut events = 0u64;
    let mut at_this_instant = 0u64;
    let mut end = None;
    while let Some(Reverse(ev)) = e.heap.pop() {
        if let Some(limit) = cfg.max_time {
            if ev.time > limit {
                end = Some(limit);
                break;
            }
        }
        debug_assert!(ev.time >= e.now, "time went backwards");
        if ev.time == e.now {
            at_this_instant += 1;
            if at_this_instant > MAX_EVENTS_AT_ONE_INSTANT {
                return Err(Error::invalid(
                    "run",
                    format!(
                        "the simulated clock stopped at {:?}: {MAX_EVENTS_AT_ONE_INSTANT} events without time passing \
                         (a zero service or think time?)",
                        e.now
                    ),
                ));
            }
        } else {
            at_this_instant = 0;
        }
        e.now = ev.time;
        events += 1;
        if events.is_multiple_of(CHECK_EVERY) {
            control.completed.store(e.metrics.completed, Ordering::Relaxed);
            if control.cancel.load(Ordering::Relaxed) {
                return Err(Error::Interrupted);
            }
        }
        match ev.kind {
            Kind::Wake(pid) => {
                e.last_work = e.now;
                e.run_process(pid)?
            }
            Kind::DiskDone(id) => {
                e.last_work = e.now;
                e.complete(id)?
            }
            Kind::Timer => {
                let idle = e.timer_armed == Some(ev.time);
                let own = e.elv_timer == Some(ev.time);
                if idle || own {
                    e.timer_armed = e.timer_armed.filter(|_| !idle);
                    e.elv_timer = e.elv_timer.filter(|_| !own);
                    e.fired_at = Some(ev.time);
                    e.sched.timer(e.now);
                    // The elevator's kick (kblockd) runs the queue and
                    // removes a plug (blk_start_queueing).
                    e.blk.remove_plug();
                    e.fill();
                }
            }
            Kind::Kernel(t) => e.kernel_timer(t)?,
            Kind::KernelWake(pid, why) => e.kernel_wake(pid, why)?,
        }
        if cfg.max_requests.is_some_and(|m| e.metrics.completed >= m) {
            end = Some(e.now);
            break;
        }
    }
    control.completed.store(e.metrics.completed, Ordering::Relaxed);
    let end = match end {
        Some(t) => t,
        None => {
            // The event queue ran dry: every process exited, so the
            // scheduler must have handed out everything it was given.
            if e.sched.queued() > 0 {
                return Err(Error::invalid(
                    "scheduler",
                    format!(
                        "'{}' stalled at {:?} with {} requests queued and no timer armed",
                        e.sched.name(),
                        e.now,
                        e.sched.queued()
                    ),
                ));
            }
            // A scheduler timer that fired after the last request and the
            // last process (Kyber's statistics window, BFQ's idle wait for
            // a process that has exited) is not part of the run.
            e.last_work
        }
    };
    let overhang_ns = e.in_service.iter().map(|(_, done)| done.since(end)).max().unwrap_or(0);
    let anticipation = e.sched.anticipation();
    let timings = e
        .procs
        .iter()
        .enumerate()
        .flat_map(|(pid, p)| p.timings().iter().map(move |t| (pid as ProcessId, *t)))
        .collect();
    let cache = e.cache.as_ref().map(|c| c.report());
    let cpu = e.cpus.as_ref().map(|c| c.report());
    let messages = e.sched.take_messages();
    Ok(Outcome { end, overhang_ns, collector: e.metrics, events, classes, process_names, anticipation, timings, cache, cpu, messages })
}

impl<O: Observer> Engine<'_, O> {
    fn schedule(&mut self, time: SimTime, kind: Kind) {
        self.seq += 1;
        let order = if kind == Kind::Timer { TIMER_LAST | self.seq } else { self.seq };
        self.heap.push(Reverse(Event { time, order, kind }));
    }

    /// Let a runnable process act until it thinks, blocks or exits.
    fn run_process(&mut self, pid: ProcessId) -> Result<()> {
        let p = pid as usize;
        // Buffered calls done at this instant without a copy time: the one
        // step that goes on without an event, so the event loop's bound on
        // an instant does not see it.
        let mut instant_calls: u64 = 0;
        loop {
            match self.procs[p].next(self.now, &mut self.rngs[p]) {
                step @ (Step::Issue(op) | Step::IssueThenWait(op)) => {
                    if op.is_flush() && !self.blk.is_mq() {
                        // 2.6.20's block-device fsync sends no flush
                        // (blkdev_fsync → sync_blockdev): it is done.
                        let view = Request { id: 0, pid, sector: 0, nr_sectors: 0, dir: op.dir, sync: true, arrival: self.now };
                        self.procs[p].completed(&view, self.now);
                        continue;
                    }
                    if (op.nr_sectors == 0 && !op.is_flush()) || op.sector + op.nr_sectors as u64 > self.capacity {
                        return Err(Error::invalid(
                            "workload",
                            format!(
                                "process {pid} asked for sectors {}+{} beyond the disk's {}",
                                op.sector, op.nr_sectors, self.capacity
                            ),
                        ));
                    }
                    if !self.submit_direct(pid, op, matches!(step, Step::IssueThenWait(_))) {
                        self.state[p] = ProcState::Kernel;
                        return Ok(());
                    }
                    // Nothing reaches the process between its submit and
                    // its next step (completions come as later events).
                    if matches!(step, Step::IssueThenWait(_)) {
                        self.state[p] = ProcState::Blocked;
                        return Ok(());
                    }
                }
                Step::Think(ns) => {
                    self.state[p] = ProcState::Sleeping;
                    self.schedule(self.now + ns, Kind::Wake(pid));
                    return Ok(());
                }
                Step::Compute { cpu, sleep } => {
                    // On a CPU of its own unless the run has fewer
                    // (engine::cpu): then after the bursts before it.
                    let ran = match self.cpus.as_mut() {
                        Some(pool) => pool.run(self.now, cpu),
                        None => self.now + cpu,
                    };
                    self.state[p] = ProcState::Sleeping;
                    self.schedule(ran + sleep, Kind::Wake(pid));
                    return Ok(());
                }
                Step::File(op) => {
                    if !self.start_file_op(pid, op)? {
                        self.state[p] = ProcState::Kernel;
                        return Ok(());
                    }
                    if let Some(ns) = self.copy_time(&op) {
                        self.state[p] = ProcState::Sleeping;
                        self.schedule(self.now + ns, Kind::Wake(pid));
                        return Ok(());
                    }
                    instant_calls += 1;
                    if instant_calls > MAX_EVENTS_AT_ONE_INSTANT {
                        return Err(Error::invalid(
                            "vm.copy_us_per_page",
                            format!(
                                "process {pid} made {MAX_EVENTS_AT_ONE_INSTANT} buffered calls at {:?} without time \
                                 passing: with a copy time of 0 a call the page cache serves takes no time; give the \
                                 process a think time, or the copy a time above 0",
                                self.now
                            ),
                        ));
                    }
                }
                Step::Wait => {
                    self.state[p] = ProcState::Blocked;
                    return Ok(());
                }
                Step::Barrier { group, key, parties } => {
                    let waiting = self.barriers.entry((group, key)).or_default();
                    waiting.push(pid);
                    if waiting.len() < parties as usize {
                        self.state[p] = ProcState::Barrier;
                        return Ok(());
                    }
                    // The last to arrive releases the others and goes on.
                    for other in self.barriers.remove(&(group, key)).unwrap_or_default() {
                        if other != pid {
                            self.state[other as usize] = ProcState::Sleeping;
                            self.schedule(self.now, Kind::Wake(other));
                        }
                    }
                }
                Step::Exit => {
                    self.live -= 1;
                    self.state[p] = ProcState::Exited;
                    self.sched.exit_process(pid, self.now);
                    // The elevator may have work for the disk now (2.6.20's
                    // cfq_exit_cfqq expires the exiting process's slice and
                    // schedules a dispatch: cfq_schedule_dispatch, whose
                    // kblockd work removes any plug and runs the queue).
                    self.blk.remove_plug();
                    self.fill();
                    self.sync_timer();
                    return Ok(());
                }
            }
        }
    }

    /// Ask the scheduler for requests while the device has room. Called
    /// two or three times per request, mostly with the device already
    /// full: that case is checked here, inlined, without the call.
    #[inline(always)]
    fn fill(&mut self) {
        if self.blk.is_mq() {
            self.mq_fill();
            return;
        }
        if self.device_queue.len() + self.in_service.len() < self.depth {
            self.fill_device();
        } else {
            self.sync_timer();
        }
    }

    fn fill_device(&mut self) {
        while self.device_queue.len() + self.in_service.len() < self.depth {
            match self.sched.dispatch(self.now) {
                Dispatch::Request(rq) => {
                    self.metrics.dispatched += 1;
                    self.blk.dispatched(&rq);
                    self.obs.dispatched(&rq, self.now);
                    self.device_queue.push(rq);
                    self.start_service();
                }
                Dispatch::IdleUntil(t) => {
                    let t = t.max(self.now);
                    if self.timer_armed != Some(t) {
                        self.timer_armed = Some(t);
                        self.schedule(t, Kind::Timer);
                    }
                    break;
                }
                Dispatch::Nothing => break,
            }
        }
        self.sync_timer();
    }

    /// The blk-mq path: carry out a queue run if one is due (the hardware
    /// queue decides: an insert, SCHED_RESTART at a completion, an
    /// elevator's kick, the delayed run); the requests it gives the driver
    /// go to the device, and every request it took from the elevator stops
    /// being mergeable.
    fn mq_fill(&mut self) {
        let mut run = std::mem::take(&mut self.mq_run);
        run.to_driver.clear();
        run.pulled.clear();
        if let Some(m) = self.sched.as_mq() {
            m.run(self.now, &mut run);
        }
        for rq in &run.pulled {
            self.blk.mq_pulled(rq);
        }
        for &rq in &run.to_driver {
            self.metrics.dispatched += 1;
            self.blk.dispatched(&rq);
            self.obs.dispatched(&rq, self.now);
            self.device_queue.push(rq);
            self.start_service();
        }
        debug_assert!(self.device_queue.len() + self.in_service.len() <= self.depth, "more requests than driver tags");
        self.mq_run = run;
        self.sync_timer();
    }

    /// Schedule the scheduler's own timer if it moved. A timer reported
    /// for the instant one just fired at is not armed again (that would
    /// loop); earlier instants are moved up to now.
    fn sync_timer(&mut self) {
        let t = self.sched.armed_timer().map(|t| t.max(self.now));
        if t != self.elv_timer {
            self.elv_timer = t.filter(|&t| Some(t) != self.fired_at || t > self.now);
            if let Some(t) = self.elv_timer {
                self.schedule(t, Kind::Timer);
            }
        }
    }

    /// Start requests of the device's own queue while it has a free unit.
    fn start_service(&mut self) {
        while self.in_service.len() < self.parallel && !self.device_queue.is_empty() {
            self.start_one();
        }
    }

    /// Start the next request of the device's own queue.
    fn start_one(&mut self) {
        let idx = match self.order {
            DeviceOrder::Fifo => 0,
            DeviceOrder::Sptf => {
                let (disk, now) = (&self.disk, self.now);
                // Ties go to the oldest (lowest index): min_by_key keeps the first.
                (0..self.device_queue.len())
                    .min_by_key(|&i| disk.positioning_ns(&self.device_queue[i], now))
                    .unwrap_or(0)
            }
        };
        // The last (at queue depth 1 the only) request by pop: `remove`
        // calls memmove even to move nothing.
        let rq = if idx + 1 == self.device_queue.len() {
            self.device_queue.pop().expect("a queued request")
        } else {
            self.device_queue.remove(idx)
        };
        // A flush (blk-mq path) is the drive's cache flush.
        let s = if rq.nr_sectors == 0 { self.disk.flush(self.now) } else { self.disk.service(&rq, self.now) };
        self.metrics.service_started(&s, self.now);
        let done = self.now + s.total_ns;
        self.in_service.push((rq, done));
        self.schedule(done, Kind::DiskDone(rq.id));
    }

    fn complete(&mut self, id: RequestId) -> Result<()> {
        let Some(i) = self.in_service.iter().position(|(rq, _)| rq.id == id) else {
            return Err(Error::invalid("engine", "completion without a request in service"));
        };
        let (rq, _) = self.in_service.swap_remove(i);
        self.metrics.request_completed();
        self.obs.completed(&rq, self.now);
        self.sched.completed(&rq, self.now);
        self.start_service();
        let mut done = std::mem::take(&mut self.done);
        done.clear();
        self.blk.complete(rq.id, self.now, &mut done, &mut *self.sched);
        // The driver's completion path runs the queue (blk_run_queue; on
        // the blk-mq path only through SCHED_RESTART or an elevator's kick).
        self.blk.remove_plug();
        self.fill();
        if self.blk.is_mq() {
            // Tasks woken by the freed tag are inside blk_mq_get_tag and
            // try again first; the completed request's owner must return
            // to user space and make its next call (bio_done schedules it).
            self.apply_effects();
        }
        for d in &done {
            self.bio_done(d)?;
        }
        self.done = done;
        self.apply_effects();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::{self, DiskSpec};
    use crate::workload::group::{GroupSpec, ProcessesSpec};
    use crate::workload::{self, Placement, WorkloadSpec};
    use std::collections::VecDeque;

    /// Holds every request until its own timer, 5 ms after the insert,
    /// reported through `armed_timer` only (never `IdleUntil`).
    struct Delay {
        held: VecDeque<(Request, SimTime)>,
        ready: VecDeque<Request>,
        timer_calls: Vec<SimTime>,
    }

    impl Elevator for Delay {
        fn name(&self) -> &'static str {
            "delay"
        }
        fn insert(&mut self, rq: Request, now: SimTime) {
            self.held.push_back((rq, now + 5_000_000));
        }
        fn dispatch(&mut self, _now: SimTime) -> Dispatch {
            self.ready.pop_front().map_or(Dispatch::Nothing, Dispatch::Request)
        }
        fn timer(&mut self, now: SimTime) {
            self.timer_calls.push(now);
            while self.held.front().is_some_and(|&(_, t)| t <= now) {
                let (rq, _) = self.held.pop_front().unwrap();
                self.ready.push_back(rq);
            }
        }
        fn armed_timer(&self) -> Option<SimTime> {
            self.held.front().map(|&(_, t)| t)
        }
        fn queued(&self) -> usize {
            self.held.len() + self.ready.len()
        }
    }

    #[derive(Default)]
    struct Log {
        inserted: Vec<SimTime>,
        dispatched: Vec<SimTime>,
        in_service: usize,
        max_in_service: usize,
    }

    impl Observer for Log {
        fn inserted(&mut self, _rq: &Request, now: SimTime) {
            self.inserted.push(now);
        }
        fn dispatched(&mut self, _rq: &Request, now: SimTime) {
            self.dispatched.push(now);
            self.in_service += 1;
            self.max_in_service = self.max_in_service.max(self.in_service);
        }
        fn completed(&mut self, _rq: &Request, _now: SimTime) {
            self.in_service -= 1;
        }
    }

    fn readers(count: u32, file_mb: f64) -> WorkloadSpec {
        WorkloadSpec::Processes(ProcessesSpec {
            placement: Placement::Spread,
            group: vec![GroupSpec { count, file_mb, request_kb: 4.0, passes: 1, ..GroupSpec::default() }],
        })
    }

    fn run_with(d: DiskSpec, sched: Box<dyn Elevator>, w: &WorkloadSpec, log: &mut Log) -> Outcome {
        let disk = disk::build(&d, std::path::Path::new(".")).unwrap();
        let built = workload::build(w, disk.capacity_sectors()).unwrap();
        let cfg = EngineConfig {
            queue: Default::default(),
            vm: Default::default(),
            queue_depth: d.queue_depth,
            device_order: d.device_order,
            max_time: None,
            max_requests: None,
            seed: 1,
            cpus: None,
        };
        run_observed(disk, sched, built, &cfg, &RunControl::default(), log).unwrap()
    }

    #[test]
    fn a_timer_reported_by_armed_timer_fires_at_its_instant() {
        let d = DiskSpec { preset: Some("fixed".into()), fixed_ms: Some(1.0), ..DiskSpec::default() };
        let sched = Box::new(Delay { held: VecDeque::new(), ready: VecDeque::new(), timer_calls: Vec::new() });
        let mut log = Log::default();
        let out = run_with(d, sched, &readers(1, 0.0625), &mut log);
        // 16 requests of 4 KiB, each held 5 ms then served in 1 ms.
        assert_eq!(out.collector.completed(), 16);
        for (ins, disp) in log.inserted.iter().zip(&log.dispatched) {
            assert_eq!(disp.ns() - ins.ns(), 5_000_000, "dispatched exactly at the timer");
        }
        assert_eq!(out.end, SimTime(16 * 6_000_000));
    }

    /// A FIFO that arms a timer 100 ms after each completion, as Kyber
    /// pulls its statistics timer.
    struct LateTimer {
        fifo: VecDeque<Request>,
        timer: Option<SimTime>,
    }

    impl Elevator for LateTimer {
        fn name(&self) -> &'static str {
            "late-timer"
        }
        fn insert(&mut self, rq: Request, _now: SimTime) {
            self.fifo.push_back(rq);
        }
        fn dispatch(&mut self, _now: SimTime) -> Dispatch {
            self.fifo.pop_front().map_or(Dispatch::Nothing, Dispatch::Request)
        }
        fn completed(&mut self, _rq: &Request, now: SimTime) {
            self.timer = Some(now + 100_000_000);
        }
        fn timer(&mut self, _now: SimTime) {
            self.timer = None;
        }
        fn armed_timer(&self) -> Option<SimTime> {
            self.timer
        }
        fn queued(&self) -> usize {
            self.fifo.len()
        }
    }

    #[test]
    fn a_timer_after_the_last_request_does_not_lengthen_the_run() {
        let d = DiskSpec { preset: Some("fixed".into()), fixed_ms: Some(1.0), ..DiskSpec::default() };
        let sched = Box::new(LateTimer { fifo: VecDeque::new(), timer: None });
        let out = run_with(d, sched, &readers(1, 0.0625), &mut Log::default());
        assert_eq!(out.end, SimTime(16_000_000), "16 requests of 1 ms, not 116 ms");
    }

    #[test]
    fn an_ssd_serves_requests_in_parallel_up_to_the_queue_depth() {
        let d = DiskSpec { preset: Some("ssd".into()), queue_depth: 8, ..DiskSpec::default() };
        let mut log = Log::default();
        let sched = crate::sched::build("noop", &Default::default(), &crate::sched::SchedContext::new(Arc::new(NoCost)))
            .unwrap()
            .0;
        let out = run_with(d.clone(), sched, &readers(16, 1.0), &mut log);
        assert_eq!(log.max_in_service, 8);
        assert_eq!(out.collector.completed(), 16 * 256);
        // A disk at the same depth keeps one in service, the rest queued.
        let hdd = DiskSpec { preset: Some("fixed".into()), queue_depth: 8, ..DiskSpec::default() };
        let mut log2 = Log::default();
        let sched = crate::sched::build("noop", &Default::default(), &crate::sched::SchedContext::new(Arc::new(NoCost)))
            .unwrap()
            .0;
        let out2 = run_with(hdd, sched, &readers(4, 0.0625), &mut log2);
        assert_eq!(log2.max_in_service, 4, "dispatched: in the device's queue, not all in service");
        assert!(out.collector.completed() > 0 && out2.collector.completed() > 0);
    }

    #[test]
    fn busy_time_counts_overlapping_service_once() {
        let mut c = Collector::new(vec![0], 1);
        let s = |ns| crate::disk::Service { total_ns: ns, ..Default::default() };
        c.service_started(&s(10), SimTime(0));
        c.service_started(&s(10), SimTime(5));
        c.service_started(&s(2), SimTime(6));
        c.service_started(&s(5), SimTime(30));
        let h = crate::metrics::RunHeader { scheduler: "x".into(), tunables: Default::default(), seed: 1 };
        let r = c.finish(SimTime(40), 0, h, &["c".into()], &["p".into()], None);
        assert_eq!(r.disk.busy_ms * 1e6, 20.0, "[0, 15) and [30, 35)");
    }

    struct NoCost;
    impl crate::cost::PositionCost for NoCost {
        fn seek_ns(&self, _: u64, _: u64) -> u64 {
            0
        }
        fn mean_rotation_ns(&self) -> u64 {
            0
        }
    }
    use std::sync::Arc;
}

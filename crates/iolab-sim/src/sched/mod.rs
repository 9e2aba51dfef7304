//! I/O schedulers ("elevators") behind one trait that mirrors Linux's
//! `struct elevator_mq_ops` (block/elevator.h, 6.1).
//!
//! Brief overview: the engine calls [`Elevator::insert`] when a process
//! submits a request (Linux: `insert_requests`), [`Elevator::dispatch`]
//! whenever the device can take one (`dispatch_request`), and
//! [`Elevator::completed`] when the device finishes one
//! (`completed_request`). A scheduler that wants to hold the device idle
//! (anticipation) returns [`Dispatch::IdleUntil`]; the engine then calls
//! [`Elevator::timer`] at that instant, unless an insert or completion comes
//! first, and asks for a dispatch again. A scheduler that keeps timers of
//! its own, as Linux's do with `timer_list` and `hrtimer` (CFQ's idle
//! slice, BFQ's idle timer, Kyber's statistics window), reports the next
//! one through [`Elevator::armed_timer`]: the engine looks after every hook
//! and calls [`Elevator::timer`] when that instant comes.
//!
//! Schedulers are registered in one table ([`SCHEDULERS`]) keyed by name;
//! their tunables are declared as data ([`Tunable`]) with Linux's names,
//! units (as sysfs shows them), ranges and defaults.

use crate::cost::PositionCost;
use crate::error::{Error, Result};
use crate::request::{Dir, IoPrio, ProcessId, Request};
use crate::time::SimTime;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::Arc;

#[macro_use]
mod forward;

pub mod anticipatory;
pub mod bfq;
pub mod cfq;
pub mod deadline;
pub mod kblockd;
pub mod kernel;
pub mod kyber;
pub mod mq;
pub mod mq_deadline;
pub mod none;
pub mod noop;
pub mod sortfifo;
#[cfg(test)]
pub(crate) mod testutil;

/// What a scheduler answers when asked for a request.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Dispatch {
    /// Send this request to the device now.
    Request(Request),
    /// Keep the device idle (anticipate) until this instant, then call
    /// [`Elevator::timer`]. An insert or completion before then re-asks.
    IdleUntil(SimTime),
    /// Nothing to dispatch now; ask again on the next insert or completion.
    Nothing,
}

/// The elevator interface. Hooks are Required or Optional, as in fio's
/// `skeleton_external.c`; optional ones have default bodies.
pub trait Elevator: Send {
    /// Required. The scheduler's registered name.
    fn name(&self) -> &'static str;

    /// Required. A process submitted `rq` at `now`
    /// (Linux: `blk_mq_sched_insert_request` -> `insert_requests`).
    fn insert(&mut self, rq: Request, now: SimTime);

    /// Required. The device can take a request
    /// (Linux: `blk_mq_run_hw_queue` -> `dispatch_request`).
    fn dispatch(&mut self, now: SimTime) -> Dispatch;

    /// Optional. The device finished `rq` (Linux: `completed_request`).
    fn completed(&mut self, _rq: &Request, _now: SimTime) {}

    /// Optional. The instant returned in [`Dispatch::IdleUntil`] or by
    /// [`Elevator::armed_timer`] arrived (Linux: the scheduler's timer or
    /// hrtimer callback). It must disarm or move a timer that is due.
    fn timer(&mut self, _now: SimTime) {}

    /// Optional. When the scheduler's own timer fires, if one is armed
    /// (Linux: `mod_timer`/`hrtimer_start` arm it, `del_timer`/
    /// `hrtimer_try_to_cancel` disarm it). The engine asks after every
    /// hook and calls [`Elevator::timer`] at that instant, after the other
    /// events of the same nanosecond.
    fn armed_timer(&self) -> Option<SimTime> {
        None
    }

    /// Optional. Process `pid` runs with I/O priority `prio` (Linux: the
    /// task's `io_context`, set by `ioprio_set`). Called before the
    /// process's first request.
    fn set_ioprio(&mut self, _pid: ProcessId, _prio: IoPrio) {}

    /// Optional. A process exited (Linux: `exit_icq`).
    fn exit_process(&mut self, _pid: ProcessId, _now: SimTime) {}

    /// Required. Requests held by the scheduler, not yet dispatched.
    fn queued(&self) -> usize;

    /// Optional. Anticipation accounting, for schedulers that anticipate.
    fn anticipation(&self) -> Option<AnticipationStats> {
        None
    }

    /// Optional. Keep the elevator's own trace messages (Linux:
    /// `blk_add_trace_msg` while blktrace runs) from now on, up to
    /// `max_lines`; only the module's C (`kernel:NAME`) writes any.
    fn keep_messages(&mut self, _max_lines: u32) {}

    /// Optional. The messages kept, oldest first, with their times, and
    /// how many were dropped past the limit.
    fn take_messages(&mut self) -> (Vec<(SimTime, String)>, u64) {
        (Vec::new(), 0)
    }

    // Merging (2.6.20's elevator_merge_fn, elevator_merged_fn,
    // elevator_merge_req_fn, elevator_allow_merge_fn and the former/latter
    // lookups). The block layer (`crate::blk`) decides merges and keeps
    // the merge hash; an elevator that returns `true` from `merges` must
    // implement `merged` and `merged_requests`, since it keeps its own
    // copies of the requests. One that does not (the default) is never
    // merged into: every bio becomes a request of its own.

    /// Optional. Whether the elevator takes merges (default: no).
    fn merges(&self) -> bool {
        false
    }

    /// Optional. `elevator_merge_fn`: a queued request that `bio` (a
    /// request-shaped view of the bio: its owner, extent, direction and
    /// sync flag) may be front-merged into, as the elevator's own lookup
    /// finds it (a request starting where `bio` ends). None: no candidate.
    fn front_merge_candidate(&self, _bio: &Request) -> Option<Request> {
        None
    }

    /// Optional. `elevator_allow_merge_fn`, plus: `rq` is still in the
    /// elevator's sort structures (a request moved to a dispatch list of
    /// the elevator's own left the merge hash in 2.6.20:
    /// `elv_dispatch_sort` -> `elv_rqhash_del`).
    fn allow_merge(&self, _rq: &Request, _bio: &Request) -> bool {
        true
    }

    /// Optional. `elevator_former_req_fn` / `elevator_latter_req_fn`: the
    /// queued request before / after `rq` in the elevator's order, the
    /// candidates for merging two requests after a bio joined `rq`.
    fn former_request(&self, _rq: &Request) -> Option<Request> {
        None
    }
    fn latter_request(&self, _rq: &Request) -> Option<Request> {
        None
    }

    /// Required if `merges`. `elevator_merged_fn`: the queued request
    /// `old` took a bio at its front or back and is now `new` (same id).
    fn merged(&mut self, _old: &Request, _new: &Request, _kind: MergeKind) {}

    /// Required if `merges`. `elevator_merge_req_fn`: the queued request
    /// `next` was appended to `rq` (which became `merged`, same id as `rq`)
    /// and leaves the elevator without being dispatched.
    fn merged_requests(&mut self, _rq: &Request, _merged: &Request, _next: &Request, _now: SimTime) {}

    /// Optional. `elevator_may_queue_fn`: may process `pid` allocate a
    /// request of direction `dir` (`sync` = its REQ_RW_SYNC flag) when the
    /// request list is full? (AS and CFQ exempt the process they wait for.)
    fn may_queue(&mut self, _pid: ProcessId, _dir: Dir, _sync: bool) -> MayQueue {
        MayQueue::May
    }

    /// Optional. A Linux 6.1 elevator's blk-mq hardware queue (tags, the
    /// dispatch list, queue runs: `mq::BlkMq`), which the block layer's
    /// blk-mq path drives; None for the 2.6.20 elevators.
    fn as_mq(&mut self) -> Option<&mut dyn mq::MqOps> {
        None
    }
}

/// Where a bio joined a queued request (`ELEVATOR_BACK_MERGE`,
/// `ELEVATOR_FRONT_MERGE`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MergeKind {
    Back,
    Front,
}

/// `ELV_MQUEUE_*`: the elevator's say on allocating a request when the
/// request list is full.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MayQueue {
    /// `ELV_MQUEUE_MAY`: the usual limits apply.
    May,
    /// `ELV_MQUEUE_NO`: refuse.
    No,
    /// `ELV_MQUEUE_MUST`: allocate even past `nr_requests` (up to the
    /// hard limit of 3/2 of it).
    Must,
}

/// The Table 1 accounting of the WPCAS paper (DESIGN.md), shared by AS,
/// the 95% heuristic and WPCAS. A-T = A-S + A-F holds by construction:
/// every started anticipation ends exactly once, as a success or a failure.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AnticipationStats {
    /// A-T: anticipations started.
    pub started: u64,
    /// A-S: ended by the arrival of a request worth breaking for.
    pub succeeded: u64,
    /// A-F: ended by the timer or anything else.
    pub failed: u64,
    /// A-ST: total time spent waiting in successful anticipations.
    pub success_wait_ns: u64,
    /// A-FT: total time spent waiting in failed anticipations.
    pub failure_wait_ns: u64,
    /// The successful waits by length: bin i counts the waits in
    /// [i, i + 1) x [`WAIT_BIN_NS`], the last bin every longer one (the
    /// module's `antic_success_wait_bins`, kernel/as-iosched.h), so that
    /// the two homes' distributions compare, not only their means.
    pub success_wait_bins: [u64; WAIT_BINS],
}

/// The module's AS_WAIT_BINS and AS_WAIT_BIN_NS (kernel/as-iosched.h): 32
/// bins of 250 us span 8 ms, past the default antic_expire of 6 ms.
pub const WAIT_BINS: usize = 32;
pub const WAIT_BIN_NS: u64 = 250_000;

impl AnticipationStats {
    /// Every counter zero (a `const` for the io contexts' initializer).
    pub const ZERO: AnticipationStats = AnticipationStats {
        started: 0,
        succeeded: 0,
        failed: 0,
        success_wait_ns: 0,
        failure_wait_ns: 0,
        success_wait_bins: [0; WAIT_BINS],
    };

    /// Count a successful wait of `waited` ns into its bin.
    pub fn bin_success(&mut self, waited: u64) {
        self.success_wait_bins[((waited / WAIT_BIN_NS) as usize).min(WAIT_BINS - 1)] += 1;
    }

    /// Deceptive idleness = A-FT / A-T, in ms.
    pub fn deceptive_idleness_ms(&self) -> f64 {
        ratio_ms(self.failure_wait_ns, self.started)
    }
    /// Mean success wait = A-ST / A-S, in ms.
    pub fn mean_success_wait_ms(&self) -> f64 {
        ratio_ms(self.success_wait_ns, self.succeeded)
    }
}

fn ratio_ms(total_ns: u64, count: u64) -> f64 {
    if count == 0 {
        0.0
    } else {
        total_ns as f64 / count as f64 / 1e6
    }
}

/// A tunable, declared as data like the `STORE_INT(fn, ptr, MIN, MAX)`
/// entries of Linux's elevators. `unit` is the unit sysfs shows.
#[derive(Copy, Clone, Debug, Serialize)]
pub struct Tunable {
    pub name: &'static str,
    pub unit: &'static str,
    pub min: f64,
    pub max: f64,
    pub default: f64,
    pub help: &'static str,
}

impl Tunable {
    /// A duration in ms, 0 up to `INT_MAX` as the 2.6.20 elevators accept
    /// (`STORE_FUNCTION(.., 0, INT_MAX)`, then `msecs_to_jiffies`).
    pub const fn ms(name: &'static str, default: f64, help: &'static str) -> Tunable {
        Tunable { name, unit: "ms", min: 0.0, max: i32::MAX as f64, default, help }
    }
    /// The same tunable with a tighter upper bound.
    pub const fn with_max(self, max: f64) -> Tunable {
        Tunable { max, ..self }
    }

    /// True if the tunable counts things (requests, batches, samples, a
    /// flag) or is an integer in the kernel (`cfq_back_max` in KiB,
    /// `cfq_back_penalty`): it takes whole numbers only, as the kernel's
    /// `STORE_FUNCTION` parses them with `simple_strtoul`. Durations in ms
    /// may be fractional in the simulator.
    pub fn whole(&self) -> bool {
        matches!(self.unit, "requests" | "batches" | "bool" | "samples" | "anticipations" | "KiB" | "factor")
    }
}

/// What a scheduler is built with besides its tunables.
#[derive(Clone)]
pub struct SchedContext {
    /// Positioning-cost estimates from the disk model of the experiment
    /// (DESIGN.md: schedulers never reach into the disk's state).
    pub position_cost: Arc<dyn PositionCost>,
    /// Requests the device takes at once (the tag set's `queue_depth`);
    /// blk-mq sizes the scheduler's request pool from it.
    pub queue_depth: u32,
    /// The device is rotational (`blk_queue_nonrot` is false).
    pub rotational: bool,
}

impl SchedContext {
    /// A context for a rotational device of queue depth 1.
    pub fn new(position_cost: Arc<dyn PositionCost>) -> SchedContext {
        SchedContext { position_cost, queue_depth: 1, rotational: true }
    }
}

/// Tunable values after validation: every declared tunable has a value.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TunableValues(pub BTreeMap<String, f64>);

impl TunableValues {
    /// The value of a declared tunable. Panics on a name the scheduler did
    /// not declare: that is a bug in the scheduler, not a user error.
    pub fn get(&self, name: &str) -> f64 {
        match self.0.get(name) {
            Some(v) => *v,
            None => panic!("tunable '{name}' was not declared"),
        }
    }
    /// A duration tunable given in ms, as nanoseconds.
    pub fn ms_as_ns(&self, name: &str) -> u64 {
        crate::time::ms_to_ns(self.get(name))
    }
}

/// An elevator's own check of given tunables (`SchedulerInfo::accept`):
/// the values, the field path that prefixes errors.
pub type AcceptFn = fn(&BTreeMap<String, f64>, &str) -> Result<TunableValues>;

/// One entry of the scheduler table.
pub struct SchedulerInfo {
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub summary: &'static str,
    pub tunables: &'static [Tunable],
    pub build: fn(&TunableValues, &SchedContext) -> Box<dyn Elevator>,
    /// How given tunable values are taken. None: checked against the
    /// declared ranges ([`resolve_tunables`]). Some: by the elevator itself
    /// (a kernel module's elevator: its sysfs store functions parse and
    /// clamp them, and what it refuses is an error naming the field).
    pub accept: Option<AcceptFn>,
}

/// Every scheduler the simulator knows, keyed by name.
pub static SCHEDULERS: &[SchedulerInfo] = &[
    noop::INFO,
    deadline::INFO,
    cfq::INFO,
    anticipatory::AS_INFO,
    anticipatory::AS95_INFO,
    anticipatory::WPCAS_INFO,
    none::INFO,
    mq_deadline::INFO,
    kyber::INFO,
    bfq::INFO,
    kernel::AS_INFO,
    kernel::WPCAS_INFO,
];

/// Every scheduler: the table, then the elevators of kernel/'s modules it
/// does not list (a researcher's own, `kernel:NAME`; docs/elevator-howto.md).
pub fn all() -> Vec<&'static SchedulerInfo> {
    SCHEDULERS.iter().chain(kernel::other_infos()).collect()
}

/// Look a scheduler up by name or alias.
pub fn find(name: &str) -> Result<&'static SchedulerInfo> {
    let lower = name.to_ascii_lowercase();
    let found = SCHEDULERS.iter().find(|s| s.name == lower || s.aliases.contains(&lower.as_str()));
    // The kernel/ modules are looked at only for a name the table lacks.
    if let Some(s) = found.or_else(|| kernel::other_infos().find(|s| s.name == lower || s.aliases.contains(&lower.as_str()))) {
        return Ok(s);
    }
    let names: Vec<&str> = all().iter().map(|s| s.name).collect();
    let err = Error::unknown("scheduler", name, &names);
    let missing = kernel::unavailable();
    if lower.starts_with("kernel:") && !missing.is_empty() {
        return Err(Error::invalid("scheduler", format!("{err}; kernel/ modules left out: {}", missing.join("; "))));
    }
    Err(err)
}

/// Check user-given tunables against the declaration and fill in defaults.
/// `field` prefixes error messages (e.g. `scheduler[1]`).
pub fn resolve_tunables(
    info: &SchedulerInfo,
    given: &BTreeMap<String, f64>,
    field: &str,
) -> Result<TunableValues> {
    if let Some(accept) = info.accept {
        return accept(given, field);
    }
    let mut values = BTreeMap::new();
    for t in info.tunables {
        values.insert(t.name.to_string(), t.default);
    }
    for (name, &v) in given {
        let Some(t) = info.tunables.iter().find(|t| t.name == name) else {
            let names: Vec<&str> = info.tunables.iter().map(|t| t.name).collect();
            return Err(Error::invalid(
                format!("{field}.{name}"),
                format!(
                    "'{}' has no tunable '{name}'; its tunables are: {}",
                    info.name,
                    if names.is_empty() { "(none)".into() } else { names.join(", ") }
                ),
            ));
        };
        if !v.is_finite() || v < t.min || v > t.max {
            return Err(Error::invalid(
                format!("{field}.{name}"),
                format!("{} is outside [{}, {}] {}", crate::limits::show(v), t.min, t.max, t.unit),
            ));
        }
        if t.whole() && v.fract() != 0.0 {
            return Err(Error::invalid(
                format!("{field}.{name}"),
                format!("{v} is not a whole number, which '{name}' ({}) takes", t.unit),
            ));
        }
        values.insert(name.clone(), v);
    }
    Ok(TunableValues(values))
}

/// Build a scheduler by name with the given tunables.
pub fn build(
    name: &str,
    given: &BTreeMap<String, f64>,
    ctx: &SchedContext,
) -> Result<(Box<dyn Elevator>, TunableValues)> {
    let info = find(name)?;
    let values = resolve_tunables(info, given, name)?;
    Ok(((info.build)(&values, ctx), values))
}

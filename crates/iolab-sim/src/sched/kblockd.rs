//! kblockd's queue runs: the block layer asks for a queue run and
//! kblockd's worker carries it out some time later (`[host] queue_run_us`).
//!
//! On Linux 6.1 nearly every run of a queue with an elevator is
//! asynchronous: an insertion (`blk_mq_submit_bio` →
//! `blk_mq_sched_insert_request(rq, false, true, true)`, the last `true`
//! being `async`), the elevator's own kick at a completion or at its
//! timer (the module's `blk_mq_run_hw_queues(q, true)` in
//! kernel/as-core.c and kernel/as-wait.c) and SCHED_RESTART
//! (`__blk_mq_sched_restart` → `blk_mq_run_hw_queue(hctx, true)`) all
//! queue `hctx->run_work` on kblockd. The elevator hears of the insertion
//! or completion at once, but is asked for a request (`dispatch_request`,
//! where an anticipating elevator decides to wait) only when the worker
//! runs. In the one-vCPU QEMU guest of `iolab kernel compare --icount`
//! that is 0.5–0.75 ms later (docs/kernel.md, "What the elevators
//! decided"): every one of the module's fresh decisions was the worker's.
//! The simulator otherwise asks the elevator at the instant itself.
//!
//! The model wraps the elevator: its hooks go through unchanged and at once;
//! a dispatch is let through only while a run is going on. A hook that
//! asks for a run draws its delay from the measured values of its cause
//! (equally likely, µs; none given: the run is at once) and the worker's
//! work item, if already queued, keeps the earlier instant (`queue_work`
//! on pending work does nothing; `mod_delayed_work` with no delay runs it
//! at once). A run goes on, within its instant, while the elevator hands
//! out requests and the device has room, as `blk_mq_do_dispatch_sched`
//! loops until the elevator has nothing.
//! Only elevators on the simulator's request-function path are wrapped;
//! [`crate::sched::mq::BlkMq`] models its own runs.

use super::{Dispatch, Elevator, MayQueue};
use crate::error::{Error, Result};
use crate::request::{Dir, IoPrio, ProcessId, Request};
use crate::rng::SimRng;
use crate::time::SimTime;
use serde::{Deserialize, Serialize};

/// The largest delay accepted, in µs (as `[disk] host_overhead_us`): a
/// second per run is no longer a worker's latency.
pub const MAX_US: f64 = 1e6;
/// The most values one cause may list: 100 quantiles are what `iolab
/// kernel compare` gives; a list is searched by index, so the bound is
/// only on the spec's size.
pub const MAX_VALUES: usize = 100_000;
/// The random stream of the draws: the processes take streams 1..=n
/// (engine), so the draws never move theirs.
const STREAM: u64 = u64::MAX;

/// `[host.queue_run_us]`: when after it is asked kblockd's worker runs
/// the queue, by cause, as equally likely values in µs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct QueueRunSpec {
    /// After an insertion (a process's request reached the elevator).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub insert: Vec<f64>,
    /// After a completion (the elevator's kick, SCHED_RESTART).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub completion: Vec<f64>,
    /// After the elevator's own timer fired (an anticipation's expiry).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub timer: Vec<f64>,
}

impl QueueRunSpec {
    pub fn is_empty(&self) -> bool {
        self.insert.is_empty() && self.completion.is_empty() && self.timer.is_empty()
    }

    /// Check the table; errors name the field and the value.
    pub fn check(&self) -> Result<()> {
        for (name, values) in [("insert", &self.insert), ("completion", &self.completion), ("timer", &self.timer)] {
            let field = format!("host.queue_run_us.{name}");
            if values.len() > MAX_VALUES {
                return Err(Error::invalid(&field, format!("{} values; at most {MAX_VALUES}", values.len())));
            }
            if let Some((i, v)) = values.iter().enumerate().find(|(_, v)| !(v.is_finite() && (0.0..=MAX_US).contains(*v))) {
                return Err(Error::invalid(format!("{field}[{i}]"), format!("{v} is outside [0, {MAX_US}] µs")));
            }
        }
        Ok(())
    }
}

/// A cause's delays in ns.
struct Delays(Vec<u64>);

impl Delays {
    fn new(us: &[f64]) -> Delays {
        Delays(us.iter().map(|v| (v * 1e3).round() as u64).collect())
    }

    fn draw(&self, rng: &mut SimRng) -> u64 {
        match self.0.len() {
            0 => 0,
            1 => self.0[0],
            n => self.0[rng.below(n as u64) as usize],
        }
    }
}

/// An elevator whose dispatches wait for kblockd's runs.
pub struct Kblockd {
    inner: Box<dyn Elevator>,
    insert: Delays,
    completion: Delays,
    timer: Delays,
    rng: SimRng,
    /// The worker's run is queued for this instant.
    pending: Option<SimTime>,
    /// A run is going on at this instant (until the elevator has nothing).
    running: Option<SimTime>,
    /// The inner elevator's last answer asked to be woken then
    /// ([`Dispatch::IdleUntil`]).
    idle_until: Option<SimTime>,
    runs: u64,
}

impl Kblockd {
    /// `inner` behind kblockd's runs, the draws seeded by the run's seed.
    pub fn wrap(inner: Box<dyn Elevator>, spec: &QueueRunSpec, seed: u64) -> Result<Box<dyn Elevator>> {
        spec.check()?;
        let mut inner = inner;
        if inner.as_mq().is_some() {
            return Err(Error::invalid(
                "host.queue_run_us",
                format!(
                    "'{}' is one of the simulator's blk-mq elevators, whose queue runs (sched::mq) take no \
                     measured delay yet; the delays apply to the request-function elevators (as, wpcas, as95, \
                     the kernel: modules, noop, deadline, cfq)",
                    inner.name()
                ),
            ));
        }
        Ok(Box::new(Kblockd {
            inner,
            insert: Delays::new(&spec.insert),
            completion: Delays::new(&spec.completion),
            timer: Delays::new(&spec.timer),
            rng: SimRng::for_stream(seed, STREAM),
            pending: None,
            running: None,
            idle_until: None,
            runs: 0,
        }))
    }

    /// A hook asked for a run: at once, or queued on the worker.
    fn ask(&mut self, cause: Cause, now: SimTime) {
        let delays = match cause {
            Cause::Insert => &self.insert,
            Cause::Completion => &self.completion,
            Cause::Timer => &self.timer,
        };
        let d = delays.draw(&mut self.rng);
        if d == 0 {
            self.start(now);
            return;
        }
        let at = now + d;
        self.pending = Some(self.pending.filter(|&p| p >= now).map_or(at, |p| p.min(at)));
    }

    fn start(&mut self, now: SimTime) {
        if self.running != Some(now) {
            self.runs += 1;
        }
        self.running = Some(now);
        // The worker's queued run is this one (it finds the work done).
        self.pending = self.pending.filter(|&p| p > now);
    }
}

#[derive(Copy, Clone)]
enum Cause {
    Insert,
    Completion,
    Timer,
}

impl Elevator for Kblockd {
    fn name(&self) -> &'static str {
        self.inner.name()
    }

    fn insert(&mut self, rq: Request, now: SimTime) {
        self.inner.insert(rq, now);
        self.ask(Cause::Insert, now);
    }

    fn dispatch(&mut self, now: SimTime) -> Dispatch {
        if self.pending.is_some_and(|p| p <= now) {
            self.start(now);
        }
        if self.running != Some(now) {
            // No run: the worker's, if queued, comes at its instant
            // (armed_timer).
            return Dispatch::Nothing;
        }
        let d = self.inner.dispatch(now);
        self.idle_until = match d {
            Dispatch::IdleUntil(t) => Some(t),
            _ => None,
        };
        if !matches!(d, Dispatch::Request(_)) {
            // The run is over (blk_mq_do_dispatch_sched stops when the
            // elevator has nothing): what comes later asks for another.
            self.running = None;
        }
        d
    }

    fn completed(&mut self, rq: &Request, now: SimTime) {
        self.inner.completed(rq, now);
        self.ask(Cause::Completion, now);
    }

    /// The worker's run, when its instant comes; and the inner elevator's
    /// timer (its own, or the instant it asked to be woken at), whose
    /// handler kicks the queue.
    fn timer(&mut self, now: SimTime) {
        // The worker runs whether or not the device has room: a run that
        // finds it full ends without a request and is not carried forward.
        if self.pending.is_some_and(|p| p <= now) {
            self.start(now);
        }
        let due = self.idle_until.is_some_and(|t| t <= now) || self.inner.armed_timer().is_some_and(|t| t <= now);
        if due {
            self.idle_until = None;
            self.inner.timer(now);
            self.ask(Cause::Timer, now);
        }
    }

    fn armed_timer(&self) -> Option<SimTime> {
        match (self.inner.armed_timer(), self.pending) {
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
        self.inner.queued()
    }

    forward_to_inner!();

    fn may_queue(&mut self, pid: ProcessId, dir: Dir, sync: bool) -> MayQueue {
        self.inner.may_queue(pid, dir, sync)
    }
}

#[cfg(test)]
mod tests;

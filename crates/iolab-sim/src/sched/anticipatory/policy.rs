//! The two decisions that make AS, the 95% heuristic and WPCAS three
//! schedulers on one anticipation core (DESIGN.md):
//! (a) whether to wait for the process whose request just completed, and
//!     whether to stop waiting when another request arrives
//!     ([`AnticPolicy::can_break`]);
//! (b) for how long to wait ([`AnticPolicy::wait_ns`]).
//!
//! The core owns everything else: batches, FIFO expiry, the per-process
//! statistics, the OFF/WAIT_REQ/WAIT_NEXT/FINISHED state machine, the timer
//! and the Table 1 accounting. Before asking a policy, the core applies
//! the two rules every anticipation scheme shares, the first two steps of
//! Linux's as_can_break_anticipation:
//! 1. a request from the awaited process ends the wait;
//! 2. a wait that has lasted [`AnticPolicy::wait_ns`] ends.
//!
//! A new policy is a type implementing [`AnticPolicy`] plus a
//! `SchedulerInfo` entry whose build function returns
//! `AnticCore::new(policy, Config::from_values(v), ctx)`, listing
//! `CORE_TUNABLES` before its own.

use super::hz::Hz;
use super::io_context::{IoContext, IoHistory, IoSample};
use crate::cost::PositionCost;
use crate::request::{ProcessId, Request};
use crate::time::SimTime;

/// Linux's `enum anticipation_status`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AnticStatus {
    /// Not anticipating (normal operation).
    Off,
    /// Waiting for the awaited process's last request to complete; no timer.
    WaitReq,
    /// Its request completed; the timer runs until the wait's end.
    WaitNext,
    /// A candidate arrived or the timer fired: do not anticipate again
    /// until a request has been dispatched.
    Finished,
}

/// Where a break decision is asked from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Moment {
    /// as_dispatch_request -> as_can_anticipate: `rq` is the request the
    /// dispatch would serve instead of waiting (None if the sync direction
    /// is empty). Breaking means "do not start waiting".
    Dispatch,
    /// as_add_request -> as_update_rq, while waiting: `rq` just arrived.
    /// Breaking ends the wait (a success in the Table 1 accounting).
    Arrival,
}

/// What a policy may look at (and, for history, update) when it decides.
pub struct PolicyCtx<'a> {
    pub now: SimTime,
    pub hz: Hz,
    /// The `antic_expire` tunable, in ns.
    pub antic_expire_ns: u64,
    /// Every process's statistics and the queue-wide priors. Mutable: AS
    /// feeds a cooperating process's close request into the awaited
    /// process's history, and updates the exit probabilities.
    pub hist: &'a mut IoHistory,
    /// The awaited process: owner of the last dispatched sync request.
    pub target: ProcessId,
    pub status: AnticStatus,
    /// The target's last dispatched request has completed.
    pub ioc_finished: bool,
    /// When it completed (`antic_start`).
    pub antic_start: SimTime,
    /// `last_sector[batch_data_dir]`: where the last request of the
    /// current batch direction ended, the best guess at the head position.
    pub last_sector: u64,
    /// Positioning-cost estimates from the experiment's disk model.
    pub cost: &'a dyn PositionCost,
}

impl PolicyCtx<'_> {
    /// The awaited process's statistics, including its own anticipation
    /// record (`antic`: started, succeeded, failed, wait totals).
    pub fn target_ioc(&self) -> &IoContext {
        self.hist.get(self.target)
    }
    /// `antic_expire` as Linux stores it: msecs_to_jiffies of the sysfs ms.
    pub fn antic_expire_jiffies(&self) -> u64 {
        self.hz.from_ns_ceil(self.antic_expire_ns)
    }
}

/// An anticipation policy: the two decisions, plus an optional observer.
pub trait AnticPolicy: Send + 'static {
    /// The scheduler's registered name.
    fn name(&self) -> &'static str;

    /// Decision (a). Should `rq` be served rather than waiting for
    /// `ctx.target`? Asked at dispatch (start waiting or not) and on each
    /// arrival while waiting (stop waiting or not). Steps 1 and 2 of the
    /// break order (the target's own request; the wait has run out) were
    /// already applied by the core.
    fn can_break(&mut self, ctx: &mut PolicyCtx<'_>, rq: Option<&Request>, at: Moment) -> bool;

    /// Decision (b). How long to wait for `ctx.target`, in ns, counted
    /// from the completion of its last request (`antic_start`).
    fn wait_ns(&self, ctx: &PolicyCtx<'_>) -> u64;

    /// Optional. The core folded a sync request of `pid` into its history
    /// (as_update_iohist on enqueue); `sample` is what was measured.
    fn on_sample(&mut self, _pid: ProcessId, _sample: &IoSample) {}
}

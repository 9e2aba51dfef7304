//! The anticipatory scheduler family: one anticipation core (batches,
//! FIFO expiry, per-process statistics, the wait state machine, the
//! Table 1 accounting) built with a policy that makes the two decisions in
//! which AS, the 95% heuristic and WPCAS differ (DESIGN.md).
//!
//! Files: `core` (the elevator hooks, as_dispatch_request and friends),
//! `wait` (OFF/WAIT_REQ/WAIT_NEXT/FINISHED and the accounting), `batch`
//! (read/write batches, update_write_batch), `choose` (as_choose_req),
//! `io_context` (per-process think time and seek statistics), `hz`
//! (jiffies where Linux's behaviour depends on them), `policy` (the policy
//! trait), `as_policy` (Linux 2.6.20's rules).

pub mod as_policy;
pub mod batch;
pub mod choose;
pub mod core;
pub mod hz;
pub mod io_context;
pub mod policy;
pub mod wait;

#[cfg(test)]
mod tests;

use self::as_policy::AsPolicy;
use self::core::{AnticCore, Config, CORE_TUNABLES};
use super::{Elevator, SchedContext, SchedulerInfo, TunableValues};

/// AS's "read" direction: sync requests (index as `Request::sync_index`).
pub const SYNC: usize = 0;
/// AS's "write" direction: async requests.
pub const ASYNC: usize = 1;

/// Linux 2.6.20 AS, registered as `as` (its 2.6 name is "anticipatory").
pub const AS_INFO: SchedulerInfo = SchedulerInfo {
    name: as_policy::NAME,
    aliases: &["anticipatory"],
    summary:
        "Linux 2.6.20 anticipatory scheduler: deadline-style batches that idle for the last reader",
    tunables: &CORE_TUNABLES,
    build: build_as,
};

fn build_as(v: &TunableValues, ctx: &SchedContext) -> Box<dyn Elevator> {
    Box::new(AnticCore::new(AsPolicy, Config::from_values(v), ctx))
}

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

pub mod as95_policy;
pub mod as_policy;
pub mod batch;
pub mod choose;
pub mod core;
pub mod hz;
pub mod io_context;
pub mod policy;
pub mod think_history;
pub mod wait;
pub mod wpcas_policy;

#[cfg(test)]
mod tests;

use self::as95_policy::{As95Policy, AS95_TUNABLES};
use self::as_policy::AsPolicy;
use self::wpcas_policy::{WpcasPolicy, WPCAS_TUNABLES};
use self::core::{AnticCore, Config, CORE_TUNABLES};
use super::{Elevator, SchedContext, SchedulerInfo, Tunable, TunableValues};

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
    accept: None,
};

fn build_as(v: &TunableValues, ctx: &SchedContext) -> Box<dyn Elevator> {
    Box::new(AnticCore::new(AsPolicy, Config::from_values(v), ctx))
}

/// Core tunables followed by a policy's own.
const fn with_core<const N: usize, const M: usize>(own: [Tunable; N]) -> [Tunable; M] {
    let mut out = [CORE_TUNABLES[0]; M];
    let mut i = 0;
    while i < CORE_TUNABLES.len() {
        out[i] = CORE_TUNABLES[i];
        i += 1;
    }
    while i < M {
        out[i] = own[i - CORE_TUNABLES.len()];
        i += 1;
    }
    out
}

static WPCAS_ALL: [Tunable; 19] = with_core(WPCAS_TUNABLES);
static AS95_ALL: [Tunable; 10] = with_core(AS95_TUNABLES);

/// WPCAS: AS with process classification and service-time evaluation.
pub const WPCAS_INFO: SchedulerInfo = SchedulerInfo {
    name: wpcas_policy::NAME,
    aliases: &[],
    summary: "AS + per-process anticipation periods (PC) and a service-time test (STE), Chen et al.",
    tunables: &WPCAS_ALL,
    build: build_wpcas,
    accept: None,
};

fn build_wpcas(v: &TunableValues, ctx: &SchedContext) -> Box<dyn Elevator> {
    Box::new(AnticCore::new(WpcasPolicy::new(wpcas_policy::Params::from_values(v, ctx.position_cost.module_seek())), Config::from_values(v), ctx))
}

/// The 95% heuristic of Iyer & Druschel on the anticipation core.
pub const AS95_INFO: SchedulerInfo = SchedulerInfo {
    name: as95_policy::NAME,
    aliases: &["95", "95%"],
    summary: "Iyer & Druschel's 95% heuristic: wait up to the p95 think time when the benefit exceeds the cost",
    tunables: &AS95_ALL,
    build: build_as95,
    accept: None,
};

fn build_as95(v: &TunableValues, ctx: &SchedContext) -> Box<dyn Elevator> {
    Box::new(AnticCore::new(As95Policy::new(as95_policy::Params::from_values(v)), Config::from_values(v), ctx))
}

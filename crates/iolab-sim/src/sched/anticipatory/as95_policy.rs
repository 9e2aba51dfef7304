//! The 95% heuristic of Iyer & Druschel ("Anticipatory scheduling: a disk
//! scheduling framework to overcome deceptive idleness in synchronous I/O",
//! SOSP 2001), on the anticipation core.
//!
//! What rests on the paper (ELEVATORS.md section 2; only the abstract of its
//! tech report was verified): per-process think-time statistics kept as a
//! distribution; the wait for a process is bounded by the 95th percentile
//! of its think time; the scheduler waits only when the expected benefit of
//! waiting exceeds its expected cost, the benefit being the positioning
//! time of the best pending request minus the expected positioning time of
//! the process's next request (from its seek history and a disk model), the
//! cost the expected think time.
//!
//! Our reading (not verified against the paper):
//! * the distribution is the last `hist_len` think times (AS's samples);
//! * the percentile is nearest-rank over those samples;
//! * expected cost = mean over samples of min(think, p95): the idle time a
//!   wait costs, a failed wait costing the full p95;
//! * positioning times are seek times from the disk model (rotation is the
//!   same expectation on both sides and cancels); the process's next request
//!   is expected at its mean seek distance ahead of the head;
//! * with nothing queued there is nothing to lose: wait;
//! * below `min_samples` think times a process is judged by AS's rule;
//! * AS's breaks on the target's own or queued request, on a close request
//!   of a cooperating process while waiting, and on an exited target stay.

use super::as_policy::break_unless_worth_waiting;
use super::io_context::IoSample;
use super::policy::{AnticPolicy, Moment, PolicyCtx};
use super::think_history::{ThinkHistory, HIST_LEN, MAX_WAIT_MS};
use crate::request::{ProcessId, Request};
use crate::sched::{Tunable, TunableValues};

pub const NAME: &str = "as95";

pub const AS95_TUNABLES: [Tunable; 4] = [
    HIST_LEN,
    Tunable { name: "percentile", unit: "%", min: 1.0, max: 100.0, default: 95.0,
              help: "the wait is at most this percentile of the think time" },
    Tunable { name: "min_samples", unit: "samples", min: 0.0, max: 1e6, default: 4.0,
              help: "below this, a process is judged by AS's rule" },
    MAX_WAIT_MS,
];

#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Params {
    pub hist_len: usize,
    pub percentile: f64,
    pub min_samples: usize,
    pub max_wait_ns: u64,
}

impl Params {
    pub fn from_values(v: &TunableValues) -> Params {
        Params {
            hist_len: v.get("hist_len") as usize,
            percentile: v.get("percentile"),
            min_samples: v.get("min_samples") as usize,
            max_wait_ns: v.ms_as_ns("max_wait_ms"),
        }
    }
}

/// A process's think-time summary, recomputed per sample.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ThinkSummary {
    pub samples: usize,
    /// The percentile think time (the wait bound), in ns.
    pub bound_ns: u64,
    /// Mean of min(think, bound): the expected cost of a wait, in ns.
    pub expected_wait_ns: u64,
}

pub struct As95Policy {
    p: Params,
    history: ThinkHistory,
    summaries: Vec<ThinkSummary>,
    scratch: Vec<u64>,
}

impl As95Policy {
    pub fn new(p: Params) -> As95Policy {
        As95Policy { p, history: ThinkHistory::new(p.hist_len), summaries: Vec::new(), scratch: Vec::new() }
    }

    /// Nearest-rank percentile and expected capped wait of `samples`.
    pub fn summarize(samples: &[u64], percentile: f64, scratch: &mut Vec<u64>) -> ThinkSummary {
        if samples.is_empty() {
            return ThinkSummary::default();
        }
        scratch.clear();
        scratch.extend_from_slice(samples);
        let n = scratch.len();
        let rank = ((percentile / 100.0 * n as f64).ceil() as usize).clamp(1, n);
        let (_, &mut bound, _) = scratch.select_nth_unstable(rank - 1);
        let capped: u128 = samples.iter().map(|&s| s.min(bound) as u128).sum();
        ThinkSummary { samples: n, bound_ns: bound, expected_wait_ns: (capped / n as u128) as u64 }
    }

    fn summary(&self, pid: ProcessId) -> ThinkSummary {
        self.summaries.get(pid as usize).copied().unwrap_or_default()
    }

    /// Benefit of waiting minus its cost, in ns (None if nothing is queued).
    pub fn net_benefit_ns(&self, ctx: &PolicyCtx<'_>, candidate: Option<&Request>) -> Option<i128> {
        let s = candidate?;
        let ioc = ctx.target_ioc();
        let head = ctx.last_sector;
        let (best_pending, expected_next) = ctx.cost.seeks_from(head, s.sector, head.saturating_add(ioc.seek.mean));
        let (best_pending, expected_next) = (best_pending as i128, expected_next as i128);
        Some(best_pending - expected_next - self.summary(ctx.target).expected_wait_ns as i128)
    }
}

impl AnticPolicy for As95Policy {
    fn name(&self) -> &'static str {
        NAME
    }

    fn can_break(&mut self, ctx: &mut PolicyCtx<'_>, rq: Option<&Request>, at: Moment) -> bool {
        let experienced = self.summary(ctx.target).samples >= self.p.min_samples;
        break_unless_worth_waiting(ctx, rq, at, experienced, |ctx, rq| self.net_benefit_ns(ctx, rq).map(|n| n > 0))
    }

    fn wait_ns(&self, ctx: &PolicyCtx<'_>) -> u64 {
        let s = self.summary(ctx.target);
        if s.samples < self.p.min_samples {
            ctx.antic_expire_ns
        } else {
            s.bound_ns.min(self.p.max_wait_ns)
        }
    }

    fn on_sample(&mut self, pid: ProcessId, sample: &IoSample) {
        self.history.push(pid, sample.think_ns);
        let i = pid as usize;
        if i >= self.summaries.len() {
            self.summaries.resize(i + 1, ThinkSummary::default());
        }
        self.summaries[i] = Self::summarize(self.history.samples(pid), self.p.percentile, &mut self.scratch);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::anticipatory::io_context::IoHistory;
    use crate::sched::testutil::{hist, policy_ctx, read, LinearCost};
    use crate::time::{SimTime, NS_PER_MS};

    const T: ProcessId = 0;
    const HEAD: u64 = 1_000_000;

    fn params() -> Params {
        Params { hist_len: 32, percentile: 95.0, min_samples: 4, max_wait_ns: 20 * NS_PER_MS }
    }

    fn policy_with(thinks_ms: &[u64]) -> As95Policy {
        let mut p = As95Policy::new(params());
        for &t in thinks_ms {
            p.on_sample(T, &IoSample { think_ns: t * NS_PER_MS, think_jiffies: 0, seek_sectors: 0 });
        }
        p
    }

    fn history(seek_mean: u64) -> IoHistory {
        let mut h = hist();
        h.update_iohist(T, &read(0, T, HEAD - 8), SimTime::ZERO);
        h.get_mut(T).seek.mean = seek_mean;
        h
    }

    #[test]
    fn nearest_rank_percentile_and_expected_wait() {
        let samples: Vec<u64> = (1..=20).map(|x| x * NS_PER_MS).collect();
        let s = As95Policy::summarize(&samples, 95.0, &mut Vec::new());
        assert_eq!(s.bound_ns, 19 * NS_PER_MS);
        // mean of min(x, 19) over 1..=20 = (190 + 19) / 20 = 10.45 ms
        assert_eq!(s.expected_wait_ns, 10_450_000);
        assert_eq!(As95Policy::summarize(&[], 95.0, &mut Vec::new()), ThinkSummary::default());
    }

    #[test]
    fn waits_at_most_the_percentile_capped() {
        let cost = LinearCost;
        let mut h = history(8);
        let ctx = policy_ctx(&mut h, T, HEAD, &cost);
        assert_eq!(policy_with(&[1, 2, 3, 4, 5]).wait_ns(&ctx), 5 * NS_PER_MS);
        assert_eq!(policy_with(&[30, 40, 50, 60]).wait_ns(&ctx), 20 * NS_PER_MS);
        // Too few samples: AS's antic_expire.
        assert_eq!(policy_with(&[1, 2]).wait_ns(&ctx), 6 * NS_PER_MS);
    }

    #[test]
    fn waits_only_when_benefit_exceeds_cost() {
        let cost = LinearCost;
        let mut p = policy_with(&[1, 1, 1, 1]); // expected wait 1 ms
        let mut h = history(8);
        let mut ctx = policy_ctx(&mut h, T, HEAD, &cost);
        // Best pending 10 ms away vs next expected 8 µs away: benefit 9.99 ms > 1 ms.
        assert!(!p.can_break(&mut ctx, Some(&read(9, 1, HEAD + 10_000)), Moment::Dispatch));
        // 0.5 ms away: benefit 0.49 ms < 1 ms: serve it.
        assert!(p.can_break(&mut ctx, Some(&read(9, 1, HEAD + 500)), Moment::Dispatch));
        // Nothing queued: wait.
        assert!(!p.can_break(&mut ctx, None, Moment::Dispatch));
        assert_eq!(p.net_benefit_ns(&ctx, Some(&read(9, 1, HEAD + 10_000))), Some(10_000_000 - 8_000 - 1_000_000));
    }
}

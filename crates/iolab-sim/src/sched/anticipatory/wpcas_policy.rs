//! WPCAS (Chen, Yao, Cai, Sun: "Improved anticipatory scheduling algorithm
//! based on workload characteristic and service time evaluation", section
//! 3): AS plus two modules, with the choices DESIGN.md fixes where the paper
//! is open. Every choice is a tunable.
//!
//! * Process classification (PC, section 3.1, equations 3-6): over the
//!   last `hist_len` think times, a histogram of [0, 20) ms in 1 ms bins;
//!   the densest window of `window_ms` consecutive bins is [a, b]; p_ab is
//!   the share of all samples in it (samples of 20 ms or more count in the
//!   denominator). If p_ab >= `gamma` the anticipation period P is b (the
//!   integer upper edge, so the wait covers the dense region), otherwise
//!   P = T_as, the process's mean successful wait (`antic_expire` until it
//!   has one). P is capped at `max_wait_ms` (20 ms, the range the paper
//!   assumes). Ties between windows go to the earliest (the shorter wait).
//! * Service-time evaluation (STE, section 3.2, equation 12): wait for the
//!   process whose request just completed iff
//!   Δ = p_s·(T_seek(S_s) − T_seek(S_a) − T_as) − p_f·P > 0, where S_s is the
//!   request the elevator would serve instead (`next_rq` of the sync
//!   direction), S_a = S_i + a_seek_dist (the head moves forward in an
//!   elevator, so the nearer candidate in its direction), a_seek_dist is the
//!   process's mean seek distance (AS's decayed mean: the paper's plain mean
//!   of definition 7 is not kept by AS), T_seek comes from the experiment's
//!   disk model, and p_s, p_f are the process's own anticipation success and
//!   failure rates. With nothing queued there is nothing to lose: wait.
//! * Start-up (the paper is silent; issue 9): with fewer than `min_samples`
//!   finished anticipations of its own, a process is judged by AS's rule
//!   (its mean think time against `antic_expire`); once STE judges it and
//!   it has no finished anticipation yet, p_s is `prior_ps`. The defaults
//!   (`min_samples` 4, `prior_ps` 0) make WPCAS start as AS does, and a
//!   process AS never waits for then never gathers the history STE needs;
//!   `min_samples = 0, prior_ps = 1` lets STE wait for a process from its
//!   first request. docs/paper-wpcas.md shows both readings.
//!
//! Kept from AS (our reading: the paper changes only these two decisions):
//! the break on the target's own request, on a queued request of the
//! target, on a close request of a cooperating process while waiting, and
//! on an exited target. At dispatch STE replaces AS's closeness test, which
//! the paper names as what it improves on ("in AS, if |S_s − S_i| <
//! a_seek_dist the queued request is served at once").

use super::as_policy::break_unless_worth_waiting;
use super::io_context::IoContext;
use super::policy::{AnticPolicy, Moment, PolicyCtx};
use super::think_history::{ThinkHistory, HIST_LEN, MAX_WAIT_MS};
use crate::request::{ProcessId, Request};
use crate::sched::{Tunable, TunableValues};
use crate::time::{ms_to_ns, NS_PER_MS};

pub const NAME: &str = "wpcas";

/// The paper assumes think times within [0, 20] ms (section 3.1).
const HIST_RANGE_MS: usize = 20;

/// WPCAS's own tunables (DESIGN.md defaults), then the module's seek
/// model (kernel/wpcas.h: the HP 97560 of the preset by default) and the
/// switch that makes STE use it instead of the disk model's cost.
pub const WPCAS_TUNABLES: [Tunable; 13] = [
    HIST_LEN,
    Tunable { name: "window_ms", unit: "ms", min: 1.0, max: 20.0, default: 2.0,
              help: "width of the densest-window search (whole ms)" },
    Tunable { name: "gamma", unit: "", min: 0.0, max: 1.0, default: 0.5,
              help: "p_ab at or above which P = b, else P = T_as" },
    Tunable { name: "min_samples", unit: "anticipations", min: 0.0, max: 1e6, default: 4.0,
              help: "below this, a process is judged by AS's rule" },
    MAX_WAIT_MS,
    Tunable { name: "prior_ps", unit: "", min: 0.0, max: 1.0, default: 0.0,
              help: "p_s taken for a process with no finished anticipation (the paper does not say)" },
    Tunable { name: "seek_model", unit: "bool", min: 0.0, max: 1.0, default: 0.0,
              help: "1: STE's seek times from the seek_* curve, in the module's integer arithmetic (kernel:wpcas); 0: from the disk model" },
    Tunable { name: "seek_cyl_sectors", unit: "sectors", min: 0.0, max: 4294967296.0, default: 0.0,
              help: "seek_model 1: sectors per cylinder; 0: every seek_* from the disk model's curve (its mean cylinder), as iolab kernel compare sets the module" },
    Tunable { name: "seek_linear_cyl", unit: "cylinders", min: 0.0, max: 2147483648.0, default: 384.0,
              help: "seek_model 1: from this many cylinders on, the curve is linear" },
    Tunable { name: "seek_sqrt_a_ns", unit: "ns", min: 0.0, max: 1e10, default: 3240000.0,
              help: "seek_model 1: seek(d) = a + b*sqrt(d) below seek_linear_cyl: a" },
    Tunable { name: "seek_sqrt_b_ns", unit: "ns", min: 0.0, max: 1e9, default: 400000.0,
              help: "seek_model 1: seek(d) = a + b*sqrt(d) below seek_linear_cyl: b" },
    Tunable { name: "seek_lin_a_ns", unit: "ns", min: 0.0, max: 1e10, default: 8000000.0,
              help: "seek_model 1: seek(d) = a + b*d from seek_linear_cyl on: a" },
    Tunable { name: "seek_lin_b_ps", unit: "ps", min: 0.0, max: 1e9, default: 8000000.0,
              help: "seek_model 1: seek(d) = a + b*d from seek_linear_cyl on: b, ps per cylinder" },
];

/// The module's seek model (kernel/wpcas-policy.c, wpcas_seek_ns): a
/// two-piece curve over one cylinder size, in integers, the square root in
/// 16.16 fixed point, so that it gives the module's numbers to the ns.
pub use crate::cost::ModuleSeekCurve as ModuleSeek;

impl ModuleSeek {
    /// The module's defaults (kernel/wpcas.h): the HP 97560 of the preset.
    pub const MODULE_DEFAULT: ModuleSeek = ModuleSeek {
        cyl_sectors: 19 * 72,
        linear_cyl: 384,
        sqrt_a_ns: 3_240_000,
        sqrt_b_ns: 400_000,
        lin_a_ns: 8_000_000,
        lin_b_ps: 8_000_000,
    };

    pub fn seek_ns(&self, from: u64, to: u64) -> u64 {
        let d = (from / self.cyl_sectors).abs_diff(to / self.cyl_sectors);
        if d == 0 {
            0
        } else if d < self.linear_cyl {
            // (d << 32).isqrt() is sqrt(d) in 16.16 fixed point.
            self.sqrt_a_ns + ((self.sqrt_b_ns * (d << 32).isqrt()) >> 16)
        } else {
            // Past 2^32 cylinders the curve is flat (and the product fits).
            self.lin_a_ns + self.lin_b_ps * d.min(1 << 32) / 1000
        }
    }

    /// The curve `v`'s seek_* tunables give, or, with `seek_cyl_sectors`
    /// 0, the disk model's (`disk`, what the experiment's drive gives as
    /// [`crate::cost::PositionCost::module_seek`]); a drive with no such
    /// curve leaves the module's defaults.
    pub fn from_values(v: &TunableValues, disk: Option<ModuleSeek>) -> ModuleSeek {
        if v.get("seek_cyl_sectors") == 0.0 {
            return disk.unwrap_or(ModuleSeek::MODULE_DEFAULT);
        }
        ModuleSeek {
            cyl_sectors: v.get("seek_cyl_sectors") as u64,
            linear_cyl: v.get("seek_linear_cyl") as u64,
            sqrt_a_ns: v.get("seek_sqrt_a_ns") as u64,
            sqrt_b_ns: v.get("seek_sqrt_b_ns") as u64,
            lin_a_ns: v.get("seek_lin_a_ns") as u64,
            lin_b_ps: v.get("seek_lin_b_ps") as u64,
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Params {
    pub hist_len: usize,
    pub window_ms: usize,
    pub gamma: f64,
    pub min_samples: u64,
    pub max_wait_ns: u64,
    /// p_s before a process has a finished anticipation of its own.
    pub prior_ps: f64,
    /// STE with the module's seek model and arithmetic (None: the disk
    /// model's cost, in floating point).
    pub module_seek: Option<ModuleSeek>,
}

impl Params {
    /// `disk`: the experiment's drive's curve for the module's seek model
    /// (`seek_model` 1 with `seek_cyl_sectors` 0).
    pub fn from_values(v: &TunableValues, disk: Option<ModuleSeek>) -> Params {
        Params {
            hist_len: v.get("hist_len") as usize,
            window_ms: (v.get("window_ms").round() as usize).clamp(1, HIST_RANGE_MS),
            gamma: v.get("gamma"),
            min_samples: v.get("min_samples") as u64,
            max_wait_ns: v.ms_as_ns("max_wait_ms"),
            prior_ps: v.get("prior_ps"),
            module_seek: (v.get("seek_model") != 0.0).then(|| ModuleSeek::from_values(v, disk)),
        }
    }
}

/// The outcome of process classification for one process.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Class {
    /// The densest window [a, b], in whole ms.
    pub a_ms: usize,
    pub b_ms: usize,
    /// Share of all samples inside it.
    pub p_ab: f64,
}

/// Samples per whole ms of think time below HIST_RANGE_MS.
type Bins = [u32; HIST_RANGE_MS];

pub struct WpcasPolicy {
    p: Params,
    history: ThinkHistory,
    /// Each process's history binned, kept up to date as samples enter and
    /// leave its ring: PC runs on every sample, and binning the whole ring
    /// each time (32 samples by default) cost more than the window search.
    bins: Vec<Bins>,
    /// PC's result per process, recomputed when a sample arrives.
    classes: Vec<Option<Class>>,
}

/// The bin of a think time, if it is below HIST_RANGE_MS.
fn bin_of(think_ns: u64) -> Option<usize> {
    let ms = (think_ns / NS_PER_MS) as usize;
    (ms < HIST_RANGE_MS).then_some(ms)
}

impl WpcasPolicy {
    pub fn new(p: Params) -> WpcasPolicy {
        WpcasPolicy { p, history: ThinkHistory::new(p.hist_len), bins: Vec::new(), classes: Vec::new() }
    }

    /// PC's densest window over `samples` (None without samples).
    pub fn classify(samples: &[u64], window_ms: usize) -> Option<Class> {
        let mut bins = [0u32; HIST_RANGE_MS];
        for &s in samples {
            if let Some(b) = bin_of(s) {
                bins[b] += 1;
            }
        }
        Self::classify_bins(&bins, samples.len(), window_ms)
    }

    /// [`WpcasPolicy::classify`] from the samples' bins and their number.
    fn classify_bins(bins: &Bins, samples: usize, window_ms: usize) -> Option<Class> {
        if samples == 0 {
            return None;
        }
        let w = window_ms.clamp(1, HIST_RANGE_MS);
        // The windows' counts by a sliding sum (this runs on every sample).
        let (mut best_a, mut best) = (0, 0u32);
        let mut n: u32 = bins[..w].iter().sum();
        for a in 0..=HIST_RANGE_MS - w {
            if a > 0 {
                n = n - bins[a - 1] + bins[a + w - 1];
            }
            if n > best {
                (best_a, best) = (a, n);
            }
        }
        Some(Class { a_ms: best_a, b_ms: best_a + w, p_ab: best as f64 / samples as f64 })
    }

    /// PC: the anticipation period P of a process, in ns.
    pub fn period_ns(&self, pid: ProcessId, ioc: &IoContext, antic_expire_ns: u64) -> u64 {
        let dense = self.classes.get(pid as usize).copied().flatten().filter(|c| c.p_ab >= self.p.gamma);
        let p = match dense {
            Some(c) => c.b_ms as u64 * NS_PER_MS,
            None => mean_success_wait_ns(ioc).unwrap_or(antic_expire_ns),
        };
        p.min(self.p.max_wait_ns)
    }

    /// STE's Δ (equation 12), in ns; None if there is no queued request to
    /// compare with.
    pub fn delta_ns(&self, ctx: &PolicyCtx<'_>, candidate: Option<&Request>) -> Option<f64> {
        let s = candidate?;
        let ioc = ctx.target_ioc();
        let (ok, failed) = (ioc.antic.succeeded as f64, ioc.antic.failed as f64);
        let p_s = if ok + failed > 0.0 { ok / (ok + failed) } else { self.p.prior_ps };
        let p_f = 1.0 - p_s;
        let t_as = mean_success_wait_ns(ioc).unwrap_or(0) as f64;
        let period = self.period_ns(ctx.target, ioc, ctx.antic_expire_ns) as f64;
        let head = ctx.last_sector;
        let (t_s, t_a) = ctx.cost.seeks_from(head, s.sector, head.saturating_add(ioc.seek.mean));
        let (t_s, t_a) = (t_s as f64, t_a as f64);
        Some(p_s * (t_s - t_a - t_as) - p_f * period)
    }

    /// STE as the module decides it (wpcas_worth_waiting): Δ > 0 in
    /// integers, n·Δ = ok·(T_s − T_a − T_as) − failed·P with n finished
    /// anticipations, or with p_s = prior_ps in thousandths when n = 0.
    pub fn module_worth_waiting(&self, m: &ModuleSeek, ctx: &PolicyCtx<'_>, candidate: &Request) -> bool {
        let ioc = ctx.target_ioc();
        let (mut ok, mut failed) = (ioc.antic.succeeded, ioc.antic.failed);
        if ok + failed == 0 {
            ok = (self.p.prior_ps * 1000.0).round() as u64;
            failed = 1000 - ok;
        }
        while ok + failed > 1 << 30 {
            ok >>= 1;
            failed >>= 1;
        }
        let head = ctx.last_sector;
        let t_s = m.seek_ns(head, candidate.sector) as i128;
        let t_a = m.seek_ns(head, head.saturating_add(ioc.seek.mean)) as i128;
        // The module bounds the gain to ±2^32 ns so that its 64-bit products
        // cannot overflow (a larger gain decides nothing a smaller would not).
        let gain = (t_s - t_a - mean_success_wait_ns(ioc).unwrap_or(0) as i128).clamp(-(1 << 32), 1 << 32);
        let period = self.period_ns(ctx.target, ioc, ctx.antic_expire_ns) as i128;
        ok as i128 * gain > failed as i128 * period
    }

    fn experienced(&self, ioc: &IoContext) -> bool {
        ioc.antic.succeeded + ioc.antic.failed >= self.p.min_samples
    }
}

/// T_as: the process's own mean successful wait.
fn mean_success_wait_ns(ioc: &IoContext) -> Option<u64> {
    (ioc.antic.succeeded > 0).then(|| ioc.antic.success_wait_ns / ioc.antic.succeeded)
}

impl AnticPolicy for WpcasPolicy {
    fn name(&self) -> &'static str {
        NAME
    }

    fn can_break(&mut self, ctx: &mut PolicyCtx<'_>, rq: Option<&Request>, at: Moment) -> bool {
        let experienced = self.experienced(ctx.target_ioc());
        break_unless_worth_waiting(ctx, rq, at, experienced, |ctx, rq| match self.p.module_seek {
            Some(m) => rq.map(|r| self.module_worth_waiting(&m, ctx, r)),
            None => self.delta_ns(ctx, rq).map(|d| d > 0.0),
        })
    }

    fn wait_ns(&self, ctx: &PolicyCtx<'_>) -> u64 {
        if !self.experienced(ctx.target_ioc()) && self.history.samples(ctx.target).is_empty() {
            return ctx.antic_expire_ns;
        }
        self.period_ns(ctx.target, ctx.target_ioc(), ctx.antic_expire_ns)
    }

    fn on_sample(&mut self, pid: ProcessId, sample: &super::io_context::IoSample) {
        let replaced = self.history.push(pid, sample.think_ns);
        let i = pid as usize;
        if i >= self.classes.len() {
            self.classes.resize(i + 1, None);
            self.bins.resize(i + 1, [0; HIST_RANGE_MS]);
        }
        let bins = &mut self.bins[i];
        if let Some(b) = bin_of(sample.think_ns) {
            bins[b] += 1;
        }
        if let Some(b) = replaced.and_then(bin_of) {
            bins[b] -= 1;
        }
        self.classes[i] = Self::classify_bins(bins, self.history.samples(pid).len(), self.p.window_ms);
    }
}

/// The default parameters as a value, for tests and callers outside a spec.
pub fn default_params() -> Params {
    Params {
        hist_len: WPCAS_TUNABLES[0].default as usize,
        window_ms: WPCAS_TUNABLES[1].default as usize,
        gamma: WPCAS_TUNABLES[2].default,
        min_samples: WPCAS_TUNABLES[3].default as u64,
        max_wait_ns: ms_to_ns(WPCAS_TUNABLES[4].default),
        prior_ps: WPCAS_TUNABLES[5].default,
        module_seek: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::anticipatory::io_context::IoSample;
    use crate::sched::testutil::{hist, policy_ctx, read, LinearCost};
    use crate::sched::AnticipationStats;

    const T: ProcessId = 0;
    const HEAD: u64 = 1_000_000;

    fn ms_f(x: f64) -> u64 {
        (x * NS_PER_MS as f64) as u64
    }

    fn sample(ns: u64) -> IoSample {
        IoSample { think_ns: ns, think_jiffies: 0, seek_sectors: 0 }
    }

    /// A policy that has seen these think times (ms) from process T.
    fn policy_with(thinks_ms: &[f64]) -> WpcasPolicy {
        let mut p = WpcasPolicy::new(default_params());
        for &t in thinks_ms {
            p.on_sample(T, &sample(ms_f(t)));
        }
        p
    }

    /// A history where T has this anticipation record and mean seek.
    fn history(succeeded: u64, failed: u64, success_wait_ms: u64, seek_mean: u64) -> IoHistory {
        let mut h = hist();
        h.update_iohist(T, &read(0, T, HEAD - 8), SimTime::ZERO);
        let ioc = h.get_mut(T);
        ioc.antic = AnticipationStats {
            started: succeeded + failed,
            succeeded,
            failed,
            success_wait_ns: success_wait_ms * NS_PER_MS,
            ..AnticipationStats::ZERO
        };
        ioc.seek.mean = seek_mean;
        ioc.seek.samples = 84;
        ioc.ttime.samples = 84;
        ioc.ttime.mean = 1;
        h
    }

    use crate::sched::anticipatory::io_context::IoHistory;
    use crate::time::SimTime;

    /// The bins kept across samples give what binning the ring anew gives,
    /// as samples enter and leave it (short rings, thinks in and beyond
    /// the 20 ms range, two processes interleaved).
    #[test]
    fn pc_from_kept_bins_is_pc_from_the_ring() {
        for hist_len in [1, 3, 32] {
            let mut p = WpcasPolicy::new(Params { hist_len, ..default_params() });
            let mut r = 0x2545_f491_4f6c_dd1du64;
            for _ in 0..2_000 {
                r ^= r << 13;
                r ^= r >> 7;
                r ^= r << 17;
                let pid = (r & 1) as ProcessId;
                p.on_sample(pid, &sample((r >> 8) % ms_f(26.0)));
                let want = WpcasPolicy::classify(p.history.samples(pid), p.p.window_ms);
                assert_eq!(p.classes[pid as usize], want);
            }
        }
    }

    #[test]
    fn pc_finds_the_densest_window_and_its_share() {
        let c = WpcasPolicy::classify(&[ms_f(5.2), ms_f(5.8), ms_f(6.1), ms_f(6.5), ms_f(0.5), ms_f(15.0)], 2).unwrap();
        assert_eq!((c.a_ms, c.b_ms), (5, 7));
        assert!((c.p_ab - 4.0 / 6.0).abs() < 1e-12);
        // Ties go to the earliest window: the shorter wait.
        let c = WpcasPolicy::classify(&[ms_f(1.5), ms_f(9.5)], 1).unwrap();
        assert_eq!((c.a_ms, c.b_ms), (1, 2));
        assert!(WpcasPolicy::classify(&[], 2).is_none());
    }

    #[test]
    fn pc_counts_long_thinks_in_the_denominator() {
        let c = WpcasPolicy::classify(&[ms_f(1.0), ms_f(25.0), ms_f(30.0), ms_f(400.0)], 2).unwrap();
        assert_eq!(c.a_ms, 0);
        assert!((c.p_ab - 0.25).abs() < 1e-12);
    }

    #[test]
    fn pc_period_is_b_when_dense_else_t_as_else_antic_expire() {
        let h = history(3, 1, 6, 8); // T_as = 2 ms
        let ioc = *h.get(T);
        // Dense at [0, 2): P = b = 2 ms.
        let p = policy_with(&[0.2, 0.3, 0.4, 0.9]);
        assert_eq!(p.period_ns(T, &ioc, ms_f(6.0)), ms_f(2.0));
        // Spread out: p_ab = 0.25 < gamma → T_as = 6 ms / 3 = 2 ms.
        let p = policy_with(&[1.0, 5.0, 9.0, 13.0]);
        assert_eq!(p.period_ns(T, &ioc, ms_f(6.0)), ms_f(2.0));
        // No successes yet: antic_expire.
        let fresh = *history(0, 2, 0, 8).get(T);
        assert_eq!(p.period_ns(T, &fresh, ms_f(6.0)), ms_f(6.0));
        // p_ab exactly gamma counts as dense (p_ab >= gamma).
        let p = policy_with(&[3.5, 4.5, 11.0, 17.0]);
        assert_eq!(p.period_ns(T, &ioc, ms_f(6.0)), ms_f(5.0));
    }

    #[test]
    fn pc_period_is_capped() {
        let mut p = policy_with(&[18.5, 18.6, 18.7]);
        p.p.max_wait_ns = ms_f(15.0);
        let ioc = *history(3, 1, 6, 8).get(T);
        assert_eq!(p.period_ns(T, &ioc, ms_f(6.0)), ms_f(15.0));
    }

    #[test]
    fn ste_delta_follows_equation_12() {
        // p_s = 3/4, p_f = 1/4, T_as = 1 ms, P = 2 ms (dense at [0, 2)),
        // S_s 10,000 sectors away (10 ms), S_a 8 sectors ahead (8 µs).
        let mut h = history(3, 1, 3, 8);
        let p = policy_with(&[0.1, 0.2, 0.3, 0.4]);
        let cost = LinearCost;
        let ctx = policy_ctx(&mut h, T, HEAD, &cost);
        let far = read(9, 1, HEAD + 10_000);
        let d = p.delta_ns(&ctx, Some(&far)).unwrap();
        let expect = 0.75 * (10_000_000.0 - 8_000.0 - 1_000_000.0) - 0.25 * 2_000_000.0;
        assert!((d - expect).abs() < 1.0, "{d} vs {expect}");
        assert!(p.delta_ns(&ctx, None).is_none());
    }

    #[test]
    fn ste_waits_for_a_far_queue_and_serves_a_near_one() {
        let cost = LinearCost;
        let mut p = policy_with(&[0.1, 0.2, 0.3, 0.4]);
        let mut h = history(3, 1, 3, 8);
        let far = read(9, 1, HEAD + 10_000);
        let near = read(9, 1, HEAD + 16);
        let mut ctx = policy_ctx(&mut h, T, HEAD, &cost);
        assert!(!p.can_break(&mut ctx, Some(&far), Moment::Dispatch), "Δ > 0: anticipate");
        assert!(p.can_break(&mut ctx, Some(&near), Moment::Dispatch), "Δ < 0: serve the queue");
        // Nothing queued: nothing to lose.
        assert!(!p.can_break(&mut ctx, None, Moment::Dispatch));
    }

    #[test]
    fn few_anticipations_fall_back_to_as_rule() {
        let cost = LinearCost;
        let mut p = policy_with(&[0.1, 0.2]);
        // Three finished anticipations < min_samples (4); a long think time
        // (AS's step 7) breaks although STE would wait for the far request.
        let mut h = history(2, 1, 3, 8);
        h.get_mut(T).ttime.mean = 50;
        let far = read(9, 1, HEAD + 10_000);
        let mut ctx = policy_ctx(&mut h, T, HEAD, &cost);
        assert!(p.can_break(&mut ctx, Some(&far), Moment::Dispatch));
        // With four, STE decides: wait.
        let mut h = history(3, 1, 3, 8);
        h.get_mut(T).ttime.mean = 50;
        let mut ctx = policy_ctx(&mut h, T, HEAD, &cost);
        assert!(!p.can_break(&mut ctx, Some(&far), Moment::Dispatch));
    }

    #[test]
    fn arrival_keeps_as_cooperation_rule() {
        let cost = LinearCost;
        let mut p = policy_with(&[0.1, 0.2, 0.3, 0.4]);
        let mut h = history(3, 1, 3, 8);
        let mut ctx = policy_ctx(&mut h, T, HEAD, &cost);
        // A close sync request from another process ends the wait...
        assert!(p.can_break(&mut ctx, Some(&read(9, 1, HEAD + 16)), Moment::Arrival));
        // ...a far one does not.
        assert!(!p.can_break(&mut ctx, Some(&read(9, 1, HEAD + 10_000_000)), Moment::Arrival));
    }

    /// Issue 9: the start-up reading. With no finished anticipation, p_s
    /// is `prior_ps`: 0 (the default) gives Δ = −P < 0, never wait; 1 gives
    /// Δ = T_seek(S_s) − T_seek(S_a) > 0 for a far queue: wait.
    #[test]
    fn start_up_uses_the_prior_for_p_s() {
        let cost = LinearCost;
        let far = read(9, 1, HEAD + 10_000);
        for (prior, waits) in [(0.0, false), (1.0, true)] {
            let mut p = WpcasPolicy::new(Params { min_samples: 0, prior_ps: prior, ..default_params() });
            let mut h = history(0, 0, 0, 8);
            let mut ctx = policy_ctx(&mut h, T, HEAD, &cost);
            let d = p.delta_ns(&ctx, Some(&far)).unwrap();
            assert_eq!(d > 0.0, waits, "prior {prior}: Δ = {d}");
            assert_eq!(!p.can_break(&mut ctx, Some(&far), Moment::Dispatch), waits, "prior {prior}");
        }
        // Once it has a record, the record decides, whatever the prior.
        let p = WpcasPolicy::new(Params { min_samples: 0, prior_ps: 1.0, ..default_params() });
        let mut h = history(0, 3, 0, 8);
        let ctx = policy_ctx(&mut h, T, HEAD, &cost);
        assert!(p.delta_ns(&ctx, Some(&far)).unwrap() < 0.0, "p_s = 0 from 3 failures");
    }

    #[test]
    fn wait_is_the_period() {
        let cost = LinearCost;
        let p = policy_with(&[4.1, 4.2, 4.3, 4.4]);
        let mut h = history(3, 1, 3, 8);
        let ctx = policy_ctx(&mut h, T, HEAD, &cost);
        assert_eq!(p.wait_ns(&ctx), ms_f(5.0));
    }
}

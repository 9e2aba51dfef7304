//! Linux 2.6.20 AS's policy (ELEVATORS.md 1.5): steps 3 to 8 of
//! as_can_break_anticipation, with as_close_req, and a fixed wait of
//! `antic_expire`. Steps 1 and 2 are the core's (see `policy`).

use super::io_context::{event, non_event, IoContext, FP_ONE};
use super::policy::{AnticPolicy, AnticStatus, Moment, PolicyCtx};
use crate::request::Request;

pub const NAME: &str = "as";

/// as_close_req's base window, in sectors (4 MiB).
const CLOSE_WINDOW: u64 = 8192;
/// The window widens with the wait only up to this many ms.
const CLOSE_MAX_DELAY_MS: u64 = 20;
/// Half, in 1/256: the exit probabilities' thresholds.
const HALF: u64 = FP_ONE / 2;

/// The anticipatory scheduler of Linux 2.6.20.
#[derive(Copy, Clone, Debug, Default)]
pub struct AsPolicy;

impl AnticPolicy for AsPolicy {
    fn name(&self) -> &'static str {
        NAME
    }

    /// as_can_break_anticipation, from step 3 on.
    fn can_break(&mut self, ctx: &mut PolicyCtx<'_>, rq: Option<&Request>, _at: Moment) -> bool {
        cooperation_breaks(ctx, rq) || thinks_too_long(ctx)
    }

    /// AS waits `antic_expire` for everyone.
    fn wait_ns(&self, ctx: &PolicyCtx<'_>) -> u64 {
        ctx.antic_expire_ns
    }
}

/// Steps 3 to 6 of as_can_break_anticipation: the target has more
/// requests queued, a cooperating process sent a close sync request (fed
/// into the target's history), or the target exited and exited processes
/// are usually not rescued. The 95% heuristic and WPCAS keep these steps
/// and replace step 7.
pub fn cooperation_breaks(ctx: &mut PolicyCtx<'_>, rq: Option<&Request>) -> bool {
    // 3. No io context: wait. Every simulated process has one (the
    //    context is created on its first request), so this never fires.
    target_has_queued(ctx) || close_cooperator(ctx, rq) || exited_unrescued(ctx)
}

/// Step 4: the target has more requests queued (or dispatched, always 0
/// here, see io_context).
pub fn target_has_queued(ctx: &PolicyCtx<'_>) -> bool {
    ctx.target_ioc().nr_queued > 0
}

/// Step 5: a close sync request from another, cooperating, process. It
/// becomes part of the target's history, and if the target has exited this
/// is the "rescued by a cooperating request" case.
pub fn close_cooperator(ctx: &mut PolicyCtx<'_>, rq: Option<&Request>) -> bool {
    let aic = *ctx.target_ioc();
    let Some(rq) = rq.filter(|r| r.is_sync() && close_req(ctx, &aic, r)) else {
        return false;
    };
    let p = &mut ctx.hist.priors;
    if !aic.running {
        if aic.ttime.samples == 0 {
            p.exit_prob = event(p.exit_prob);
        }
        p.exit_no_coop = non_event(p.exit_no_coop);
    }
    ctx.hist.update_iohist(ctx.target, rq, ctx.now);
    true
}

/// Step 6: the target has exited; break if exited processes are usually
/// not rescued by cooperating requests.
pub fn exited_unrescued(ctx: &mut PolicyCtx<'_>) -> bool {
    let aic = *ctx.target_ioc();
    if aic.running {
        return false;
    }
    let p = &mut ctx.hist.priors;
    if aic.ttime.samples == 0 {
        p.exit_prob = event(p.exit_prob);
    }
    p.exit_no_coop > HALF
}

/// The decision shape the 95% heuristic and WPCAS share: on an arrival,
/// AS's cooperation steps; at dispatch, break for a queued or exited target,
/// use AS's rule (steps 5 and 7) while the process is not `experienced`
/// enough for the policy's own test, and otherwise wait iff `worth_waiting`
/// says so (None: nothing is queued, so there is nothing to lose by waiting).
pub fn break_unless_worth_waiting(
    ctx: &mut PolicyCtx<'_>,
    rq: Option<&Request>,
    at: super::policy::Moment,
    experienced: bool,
    worth_waiting: impl FnOnce(&PolicyCtx<'_>, Option<&Request>) -> Option<bool>,
) -> bool {
    if at == super::policy::Moment::Arrival {
        return cooperation_breaks(ctx, rq);
    }
    if target_has_queued(ctx) || exited_unrescued(ctx) {
        return true;
    }
    if !experienced {
        return cooperation_breaks(ctx, rq) || thinks_too_long(ctx);
    }
    !worth_waiting(ctx, rq).unwrap_or(true)
}

/// Step 7 of as_can_break_anticipation: the target thinks longer than
/// `antic_expire` between requests (judged by the priors for a process with
/// no history, which may also just have exited). Step 8: otherwise wait.
pub fn thinks_too_long(ctx: &PolicyCtx<'_>) -> bool {
    let aic = ctx.target_ioc();
    let antic_expire = ctx.antic_expire_jiffies();
    let p = &ctx.hist.priors;
    if aic.ttime.samples == 0 {
        p.new_ttime_mean > antic_expire || p.exit_prob * p.exit_no_coop > HALF * FP_ONE
    } else {
        aic.ttime.mean > antic_expire
    }
}

/// as_close_req: is `rq` near where the target's next request is expected?
///
/// The window is 8192 sectors ahead (half that behind) of `last_sector`,
/// doubling for every ms the wait has lasted. Linux compares that delay,
/// in ms, with `antic_expire` in *jiffies*: at HZ=1000 they agree; at
/// HZ=250 the delay is 0 or at least 4 ms > 1 jiffy, so the window never
/// widens and any delay counts as close. A request within the target's
/// mean seek distance is close too.
pub fn close_req(ctx: &PolicyCtx<'_>, aic: &IoContext, rq: &Request) -> bool {
    let delay_ms = if ctx.status == AnticStatus::Off || !ctx.ioc_finished {
        0
    } else {
        ctx.hz.to_ms(ctx.hz.elapsed(ctx.antic_start, ctx.now))
    };
    let delta = if delay_ms == 0 {
        CLOSE_WINDOW
    } else if delay_ms <= CLOSE_MAX_DELAY_MS && delay_ms <= ctx.antic_expire_jiffies() {
        CLOSE_WINDOW << delay_ms
    } else {
        return true;
    };
    let (last, next) = (ctx.last_sector, rq.sector);
    if last <= next + delta / 2 && next <= last + delta {
        return true;
    }
    let mean = if aic.seek.samples == 0 { ctx.hist.priors.new_seek_mean } else { aic.seek.mean };
    mean > next.abs_diff(last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::anticipatory::hz::{Hz, PAPER_HZ};
    use crate::sched::anticipatory::io_context::IoHistory;
    use crate::sched::testutil::{hist, ms, read, write, NoCost};
    use crate::time::SimTime;

    const TARGET: u32 = 0;
    const OTHER: u32 = 1;
    const LAST: u64 = 1_000_000;

    /// A target with a short think time (2 jiffies) and a small mean seek
    /// (8 sectors), whose request ended at LAST and completed at 10 ms;
    /// the wait (WAIT_NEXT) has lasted `waited_ms`.
    fn setup() -> IoHistory {
        let mut h = hist();
        for i in 0..4 {
            h.update_iohist(TARGET, &read(i, TARGET, LAST - 8), ms(0));
        }
        let t = h.get_mut(TARGET);
        t.ttime.samples = 84;
        t.ttime.mean = 2;
        h
    }

    fn ctx<'a>(h: &'a mut IoHistory, waited_ms: u64) -> PolicyCtx<'a> {
        PolicyCtx {
            now: SimTime(ms(10).ns() + ms(waited_ms).ns()),
            hz: Hz::new(PAPER_HZ),
            antic_expire_ns: ms(6).ns(),
            hist: h,
            target: TARGET,
            status: AnticStatus::WaitNext,
            ioc_finished: true,
            antic_start: ms(10),
            last_sector: LAST,
            cost: &NoCost,
        }
    }

    fn brk(h: &mut IoHistory, rq: Option<&Request>) -> bool {
        AsPolicy.can_break(&mut ctx(h, 0), rq, Moment::Arrival)
    }

    const FAR: u64 = LAST + 10_000_000;

    #[test]
    fn step4_target_has_queued_requests_breaks_before_close_req_feeds_history() {
        let mut h = setup();
        h.get_mut(TARGET).nr_queued = 1;
        let seek_before = h.get(TARGET).seek;
        assert!(brk(&mut h, Some(&read(9, OTHER, LAST))));
        assert_eq!(h.get(TARGET).seek, seek_before); // step 5 not reached
    }

    #[test]
    fn step5_close_sync_request_breaks_and_joins_the_targets_history() {
        let mut h = setup();
        let before = h.get(TARGET).seek.samples;
        assert!(brk(&mut h, Some(&read(9, OTHER, LAST + 100))));
        assert!(h.get(TARGET).seek.samples > before);
        assert_eq!(h.get(TARGET).last_request_pos, LAST + 100 + 8);
        // An async request, however close, is not a cooperating read.
        assert!(!brk(&mut h, Some(&write(10, OTHER, LAST))));
    }

    #[test]
    fn step5_rescues_an_exited_target_before_step6_would_break() {
        let mut h = setup();
        h.exit(TARGET);
        h.priors.exit_no_coop = 200; // step 6 alone would break
        assert!(brk(&mut h, Some(&read(9, OTHER, LAST))));
        // A cooperating request: exit_no_coop non-event; the target has
        // samples, so exit_prob is untouched.
        assert_eq!((h.priors.exit_no_coop, h.priors.exit_prob), (175, 0));
    }

    #[test]
    fn step6_exited_target_breaks_if_usually_not_rescued() {
        let mut h = setup();
        h.exit(TARGET);
        h.priors.exit_no_coop = 129;
        // Short think time: step 7 alone would wait.
        assert!(brk(&mut h, Some(&read(9, OTHER, FAR))));
        h.priors.exit_no_coop = 128;
        assert!(!brk(&mut h, Some(&read(9, OTHER, FAR))));
        // With no samples, each check is also an exit_prob event.
        let mut h = hist();
        h.exit(TARGET);
        assert!(!brk(&mut h, Some(&read(9, OTHER, FAR))));
        assert_eq!(h.priors.exit_prob, 32);
    }

    #[test]
    fn step7_long_think_time_breaks() {
        let mut h = setup();
        h.get_mut(TARGET).ttime.mean = 6; // = antic_expire: wait
        assert!(!brk(&mut h, Some(&read(9, OTHER, FAR))));
        h.get_mut(TARGET).ttime.mean = 7;
        assert!(brk(&mut h, Some(&read(9, OTHER, FAR))));
        // Breaking for think time happens with no candidate at all.
        assert!(brk(&mut h, None));
    }

    #[test]
    fn step7_a_new_process_is_judged_by_the_priors() {
        let mut h = hist();
        assert!(!brk(&mut h, None)); // priors 0: wait
        h.priors.new_ttime_mean = 7;
        assert!(brk(&mut h, None));
        h.priors.new_ttime_mean = 0;
        h.priors.exit_prob = 129;
        h.priors.exit_no_coop = 256; // 129*256 > 128*256
        assert!(brk(&mut h, None));
        h.priors.exit_prob = 128;
        assert!(!brk(&mut h, None));
    }

    #[test]
    fn step8_otherwise_wait() {
        let mut h = setup();
        assert!(!brk(&mut h, Some(&read(9, OTHER, FAR))));
        assert!(!brk(&mut h, None));
    }

    #[test]
    fn close_window_is_8192_ahead_4096_behind_without_delay() {
        let mut h = hist();
        let aic = IoContext::NEW;
        let c = ctx(&mut h, 0);
        let close = |s| close_req(&c, &aic, &read(9, OTHER, s));
        assert!(close(LAST + 8192) && !close(LAST + 8193));
        assert!(close(LAST - 4096) && !close(LAST - 4097));
    }

    #[test]
    fn close_window_doubles_per_ms_of_waiting_up_to_antic_expire() {
        let mut h = hist();
        let aic = IoContext::NEW;
        for waited in 1..=6 {
            let c = ctx(&mut h, waited);
            let ahead = 8192 << waited;
            assert!(close_req(&c, &aic, &read(9, OTHER, LAST + ahead)));
            assert!(!close_req(&c, &aic, &read(9, OTHER, LAST + ahead + 1)));
        }
        // Past antic_expire (6 jiffies = 6 ms) anything is close.
        let c = ctx(&mut h, 7);
        assert!(close_req(&c, &aic, &read(9, OTHER, u64::MAX / 4)));
        // Not waiting (OFF) or the target's request still in flight: no
        // delay, the base window.
        let mut c = ctx(&mut h, 3);
        c.status = AnticStatus::Off;
        assert!(!close_req(&c, &aic, &read(9, OTHER, LAST + 8193)));
        c.status = AnticStatus::WaitNext;
        c.ioc_finished = false;
        assert!(!close_req(&c, &aic, &read(9, OTHER, LAST + 8193)));
    }

    #[test]
    fn close_delay_is_ms_compared_with_jiffies() {
        // HZ=250: antic_expire 6 ms is 2 jiffies; one jiffy of waiting is
        // a delay of 4 ms > 2, so any request is close.
        let mut h = hist();
        let aic = IoContext::NEW;
        let mut c = ctx(&mut h, 4);
        c.hz = Hz::new(250);
        assert!(close_req(&c, &aic, &read(9, OTHER, u64::MAX / 4)));
    }

    #[test]
    fn close_if_nearer_than_the_mean_seek_or_the_prior() {
        let mut h = setup();
        h.get_mut(TARGET).seek.mean = 20_000;
        let aic = *h.get(TARGET);
        let c = ctx(&mut h, 0);
        assert!(close_req(&c, &aic, &read(9, OTHER, LAST + 19_999)));
        assert!(!close_req(&c, &aic, &read(9, OTHER, LAST + 20_000)));
        let mut h = hist();
        h.priors.new_seek_mean = 50_000;
        let c = ctx(&mut h, 0);
        assert!(close_req(&c, &IoContext::NEW, &read(9, OTHER, LAST - 49_999)));
    }
}

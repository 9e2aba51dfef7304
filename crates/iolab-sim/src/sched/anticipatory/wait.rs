//! The anticipation state machine (ELEVATORS.md 1.3) and the Table 1
//! accounting (DESIGN.md).
//!
//! Accounting. An anticipation *starts* when dispatch decides to wait
//! (OFF -> WAIT_REQ or WAIT_NEXT, as_antic_waitreq). It *succeeds* when an
//! arriving request ends it (as_update_rq -> as_antic_stop: the break test
//! said yes, for whichever step), and *fails* when the timer ends it
//! (as_antic_timeout) or anything else does. Every start ends once, so
//! A-T = A-S + A-F; an anticipation still running is left out of the
//! report until it ends, so the identity holds at every observation.
//!
//! Wait time counts from entering WAIT_NEXT to the end: the time the disk
//! sits idle for the awaited process. Time in WAIT_REQ is not counted: the
//! awaited process's own request is still being served then (this only
//! happens when the device queue is deeper than 1), so an anticipation
//! that ends in WAIT_REQ waited 0 ns.

use super::io_context::{event, IoHistory};
use super::policy::AnticStatus;
use crate::request::ProcessId;
use crate::sched::AnticipationStats;
use crate::time::SimTime;

/// How an anticipation ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Success,
    Failure,
}

/// The wait fields of `as_data`, plus the accounting.
#[derive(Clone, Debug)]
pub struct Antic {
    pub status: AnticStatus,
    /// `antic_start`: when the target's last request completed.
    pub start: SimTime,
    /// `io_context`: the owner of the last dispatched sync request.
    pub target: Option<ProcessId>,
    /// `ioc_finished`: that request has completed.
    pub ioc_finished: bool,
    /// Timer expiry while in WAIT_NEXT.
    pub deadline: SimTime,
    /// When WAIT_NEXT was entered (start of the counted wait).
    idle_from: SimTime,
    stats: AnticipationStats,
}

impl Default for Antic {
    fn default() -> Self {
        Antic {
            status: AnticStatus::Off,
            start: SimTime::ZERO,
            target: None,
            ioc_finished: false,
            deadline: SimTime::NEVER,
            idle_from: SimTime::ZERO,
            stats: AnticipationStats::default(),
        }
    }
}

impl Antic {
    pub fn is_waiting(&self) -> bool {
        matches!(self.status, AnticStatus::WaitReq | AnticStatus::WaitNext)
    }

    /// as_antic_waitreq: start anticipating. With the target's request
    /// already complete, go straight to WAIT_NEXT; else wait for it.
    /// `wait_ns` is the policy's wait length for the target.
    pub fn waitreq(&mut self, now: SimTime, wait_ns: u64, hist: &mut IoHistory) {
        debug_assert_ne!(self.status, AnticStatus::Finished);
        if self.status != AnticStatus::Off {
            return;
        }
        self.stats.started += 1;
        if let Some(t) = self.target {
            hist.get_mut(t).antic.started += 1;
        }
        if self.target.is_none() || self.ioc_finished {
            self.waitnext(now, wait_ns);
        } else {
            self.status = AnticStatus::WaitReq;
        }
    }

    /// as_antic_waitnext: arm the timer for `antic_start + wait`.
    pub fn waitnext(&mut self, now: SimTime, wait_ns: u64) {
        debug_assert!(matches!(self.status, AnticStatus::Off | AnticStatus::WaitReq));
        self.deadline = self.start + wait_ns;
        self.status = AnticStatus::WaitNext;
        self.idle_from = now;
    }

    /// as_antic_stop: end a wait (delete the timer, FINISHED; the engine's
    /// next dispatch is Linux's kblockd kick). No-op unless waiting.
    pub fn stop(&mut self, now: SimTime, outcome: Outcome, hist: &mut IoHistory) {
        if self.is_waiting() {
            self.record(now, outcome, hist);
            self.status = AnticStatus::Finished;
        }
    }

    /// as_antic_timeout: the wait ran out. A target with no history that
    /// was waited on in vain counts as an exit event; an exited target
    /// that no cooperating request rescued counts for exit_no_coop.
    pub fn timeout(&mut self, now: SimTime, hist: &mut IoHistory) {
        if !self.is_waiting() {
            return;
        }
        self.record(now, Outcome::Failure, hist);
        self.status = AnticStatus::Finished;
        if let Some(t) = self.target {
            let aic = *hist.get(t);
            let p = &mut hist.priors;
            if aic.ttime.samples == 0 {
                p.exit_prob = event(p.exit_prob);
            }
            if !aic.running {
                p.exit_no_coop = event(p.exit_no_coop);
            }
        }
    }

    /// The accounting as reported: ended anticipations only.
    pub fn stats(&self) -> AnticipationStats {
        let mut s = self.stats;
        if self.is_waiting() {
            s.started -= 1;
        }
        s
    }

    fn record(&mut self, now: SimTime, outcome: Outcome, hist: &mut IoHistory) {
        let waited = match self.status {
            AnticStatus::WaitNext => now.since(self.idle_from),
            _ => 0,
        };
        tally(&mut self.stats, outcome, waited);
        if let Some(t) = self.target {
            tally(&mut hist.get_mut(t).antic, outcome, waited);
        }
    }
}

fn tally(s: &mut AnticipationStats, outcome: Outcome, waited: u64) {
    match outcome {
        Outcome::Success => {
            s.succeeded += 1;
            s.success_wait_ns += waited;
            s.bin_success(waited);
        }
        Outcome::Failure => {
            s.failed += 1;
            s.failure_wait_ns += waited;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testutil::{hist, ms};
    use crate::sched::{WAIT_BINS, WAIT_BIN_NS};

    #[test]
    fn waitreq_goes_to_wait_next_once_the_target_finished() {
        let mut h = hist();
        let mut a =
            Antic { target: Some(3), start: ms(10), ioc_finished: true, ..Antic::default() };
        a.waitreq(ms(12), ms(6).ns(), &mut h);
        assert_eq!(a.status, AnticStatus::WaitNext);
        assert_eq!(a.deadline, ms(16)); // from antic_start, not from now
        let mut a = Antic { target: Some(3), ..Antic::default() };
        a.waitreq(ms(12), ms(6).ns(), &mut h);
        assert_eq!(a.status, AnticStatus::WaitReq);
        assert_eq!(a.stats().started, 0); // in progress: not reported yet
        assert_eq!(h.get(3).antic.started, 2);
    }

    #[test]
    fn timeout_finishes_counts_a_failure_and_updates_exit_probabilities() {
        let mut h = hist();
        h.exit(3);
        let mut a =
            Antic { target: Some(3), start: ms(10), ioc_finished: true, ..Antic::default() };
        a.waitreq(ms(11), ms(6).ns(), &mut h);
        a.timeout(ms(16), &mut h);
        assert_eq!(a.status, AnticStatus::Finished);
        let s = a.stats();
        assert_eq!((s.started, s.failed, s.failure_wait_ns), (1, 1, ms(5).ns()));
        assert_eq!((h.priors.exit_prob, h.priors.exit_no_coop), (32, 32));
        assert_eq!(h.get(3).antic.failure_wait_ns, ms(5).ns());
        // A stale timer is a no-op.
        a.timeout(ms(20), &mut h);
        assert_eq!(a.stats().failed, 1);
    }

    #[test]
    fn stop_counts_a_success_and_wait_req_time_is_not_waiting() {
        let mut h = hist();
        let mut a = Antic { target: Some(1), ..Antic::default() };
        a.waitreq(ms(1), ms(6).ns(), &mut h);
        a.stop(ms(3), Outcome::Success, &mut h); // still in WAIT_REQ
        let s = a.stats();
        assert_eq!((s.started, s.succeeded, s.success_wait_ns), (1, 1, 0));
        assert_eq!(a.status, AnticStatus::Finished);
        a.stop(ms(4), Outcome::Failure, &mut h); // not waiting: no-op
        assert_eq!(a.stats().failed, 0);
        assert_eq!(s.success_wait_bins[0], 1, "a 0 ns wait is in the first bin");
    }

    #[test]
    fn successful_waits_are_binned_by_length_and_failures_are_not() {
        let mut s = AnticipationStats::ZERO;
        for waited in [0, WAIT_BIN_NS - 1, WAIT_BIN_NS, 3 * WAIT_BIN_NS + 7, ms(7).ns(), ms(500).ns()] {
            tally(&mut s, Outcome::Success, waited);
        }
        tally(&mut s, Outcome::Failure, ms(5).ns());
        let mut want = [0; WAIT_BINS];
        want[0] = 2;
        want[1] = 1;
        want[3] = 1;
        want[28] = 1; // 7 ms
        want[WAIT_BINS - 1] = 1; // past 8 ms: the last bin
        assert_eq!(s.success_wait_bins, want);
        assert_eq!(s.success_wait_bins.iter().sum::<u64>(), s.succeeded);
    }
}

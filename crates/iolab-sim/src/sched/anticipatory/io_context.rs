//! Per-process I/O history (Linux 2.6.20 `struct as_io_context`) and the
//! queue-wide priors of `struct as_data`, with their fixed-point decay
//! (ELEVATORS.md 1.2 and 1.4). Processes are kept in a Vec indexed by pid
//! (pids are dense from 0).
//!
//! Linux also counts a process's `nr_dispatched`: requests on the dispatch
//! list that the driver has not started yet (as_activate_request drops
//! it). The engine hands a dispatched request to the device at once, so
//! that count is back to 0 before any hook runs; it is left out, and
//! "queued or dispatched" reads as "queued".

use super::hz::Hz;
use crate::request::{ProcessId, Request};
use crate::sched::AnticipationStats;
use crate::time::SimTime;

/// Fixed point: 256 is 1.0.
pub const FP_ONE: u64 = 256;
/// Seek samples are clamped to `4·mean + this` for a new process (while
/// the sample weight is at most 60: the first three samples)...
const SEEK_SLACK_NEW: u64 = 2 * 1024 * 1024;
/// ...and to `4·mean + this` afterwards (128 Ki sectors = 64 MiB).
const SEEK_SLACK: u64 = 2 * 1024 * 64;
const SEEK_NEW_WEIGHT: u64 = 60;

/// One step of the decaying average: `(7·old + new) / 8`.
pub fn decay(old: u64, new: u64) -> u64 {
    (7 * old + new) / 8
}
/// A probability (in 1/256) after an event: `(7p + 256) / 8`.
pub fn event(p: u64) -> u64 {
    decay(p, FP_ONE)
}
/// A probability after a non-event: `7p / 8`.
pub fn non_event(p: u64) -> u64 {
    decay(p, 0)
}

/// A bias-corrected EWMA with α = 1/8: `samples` and `total` both decay,
/// so `total / samples` is the mean even after few samples.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Ewma {
    /// Sample weight: 0, 32, 60, 84, ... towards 256.
    pub samples: u64,
    pub total: u64,
    pub mean: u64,
}

impl Ewma {
    fn push(&mut self, x: u64) {
        self.samples = decay(self.samples, FP_ONE);
        self.total = decay(self.total, FP_ONE * x);
    }
}

/// One process's state (`as_io_context`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct IoContext {
    /// AS_TASK_RUNNING: the process has not exited.
    pub running: bool,
    /// AS_TASK_IOSTARTED: it has queued sync I/O.
    pub io_started: bool,
    /// AS_TASK_IORUNNING: some of its sync I/O has completed.
    pub io_running: bool,
    /// Requests in the scheduler, not yet dispatched.
    pub nr_queued: u32,
    /// When its last sync request completed.
    pub last_end_request: SimTime,
    /// Think time, in jiffies.
    pub ttime: Ewma,
    /// End sector of its last sync request.
    pub last_request_pos: u64,
    /// Seek distance, in sectors.
    pub seek: Ewma,
    /// Its own anticipation record: the Table 1 counts for waits on it,
    /// for policies that judge a process by how waiting for it went
    /// (`started` includes a wait still running).
    pub antic: AnticipationStats,
}

impl IoContext {
    /// alloc_as_io_context: running, no history.
    pub const NEW: IoContext = IoContext {
        running: true,
        io_started: false,
        io_running: false,
        nr_queued: 0,
        last_end_request: SimTime::ZERO,
        ttime: Ewma { samples: 0, total: 0, mean: 0 },
        last_request_pos: 0,
        seek: Ewma { samples: 0, total: 0, mean: 0 },
        antic: AnticipationStats::ZERO,
    };
}

/// Queue-wide statistics of `as_data`: what a process without history is
/// expected to do, and how often waited-on processes exit.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Priors {
    pub new_ttime_total: u64,
    /// Mean first think time of new processes, in jiffies.
    pub new_ttime_mean: u64,
    pub new_seek_total: u64,
    /// Mean first seek distance of new processes, in sectors.
    pub new_seek_mean: u64,
    /// Probability (1/256) that a waited-on process has exited.
    pub exit_prob: u64,
    /// Probability (1/256) that an exited process is not rescued by a
    /// cooperating process's request.
    pub exit_no_coop: u64,
}

/// What as_update_iohist measured for one sync request, for policies that
/// keep their own history (the 95% heuristic's distribution, WPCAS's PC).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct IoSample {
    /// Time since the process's last sync completion, in ns, or 0 where
    /// AS samples 0 (not IORUNNING, or requests still queued).
    pub think_ns: u64,
    /// The think-time sample AS used, in jiffies (capped).
    pub think_jiffies: u64,
    /// Distance from the end of its previous sync request, in sectors
    /// (before AS's clamping).
    pub seek_sectors: u64,
}

/// Every process's history plus the priors.
pub struct IoHistory {
    procs: Vec<IoContext>,
    pub priors: Priors,
    hz: Hz,
}

impl IoHistory {
    pub fn new(hz: Hz) -> IoHistory {
        IoHistory { procs: Vec::new(), priors: Priors::default(), hz }
    }

    pub fn get(&self, pid: ProcessId) -> &IoContext {
        self.procs.get(pid as usize).unwrap_or(&IoContext::NEW)
    }

    /// The process's context, created on first use (as_get_io_context).
    pub fn get_mut(&mut self, pid: ProcessId) -> &mut IoContext {
        let i = pid as usize;
        if i >= self.procs.len() {
            self.procs.resize(i + 1, IoContext::NEW);
        }
        &mut self.procs[i]
    }

    /// as_update_iohist: fold a sync request into `pid`'s think-time and
    /// seek history. Called on enqueue (before `nr_queued` counts `rq`),
    /// and by AS for a cooperating process's close request.
    ///
    /// Always inlined into those two callers: it runs for nearly every
    /// request, often twice, and inline the call itself goes and so does
    /// the sample the cooperator's update ignores (AS on the closed C3323A
    /// load: about 40 instructions per request fewer).
    #[inline(always)]
    pub fn update_iohist(
        &mut self,
        pid: ProcessId,
        rq: &Request,
        now: SimTime,
    ) -> Option<IoSample> {
        if !rq.is_sync() {
            return None;
        }
        let hz = self.hz;
        // The context is looked up once for the whole update (this runs
        // for nearly every request, AS's cooperator check adds a second
        // call): the think-time and seek steps take it and the priors
        // directly.
        let i = pid as usize;
        if i >= self.procs.len() {
            self.procs.resize(i + 1, IoContext::NEW);
        }
        let (aic, priors) = (&mut self.procs[i], &mut self.priors);
        let mut sample = None;
        if aic.io_running || aic.io_started {
            let (mut think_ns, mut think_j) = (0, 0);
            if aic.io_running && aic.nr_queued == 0 {
                think_ns = now.since(aic.last_end_request);
                think_j = hz.elapsed(aic.last_end_request, now).min(hz.max_thinktime() - 1);
            }
            let seek = rq.sector.abs_diff(aic.last_request_pos);
            update_thinktime(aic, priors, think_j);
            update_seekdist(aic, priors, seek);
            sample = Some(IoSample { think_ns, think_jiffies: think_j, seek_sectors: seek });
        }
        aic.last_request_pos = rq.end_sector();
        aic.io_started = true;
        sample
    }

    /// as_put_io_context for a completed sync request: the process now has
    /// I/O running, and its think time starts now.
    pub fn completed_sync(&mut self, pid: ProcessId, now: SimTime) {
        let aic = self.get_mut(pid);
        aic.io_running = true;
        aic.last_end_request = now;
    }

    /// exit_as_io_context.
    pub fn exit(&mut self, pid: ProcessId) {
        self.get_mut(pid).running = false;
    }
}

/// as_update_thinktime: a process's first sample also feeds the prior
/// and counts as a non-event for exit_prob (it did not exit).
fn update_thinktime(aic: &mut IoContext, p: &mut Priors, ttime: u64) {
    let t = &mut aic.ttime;
    if t.samples == 0 {
        p.new_ttime_mean = feed_prior(&mut p.new_ttime_total, ttime);
        p.exit_prob = non_event(p.exit_prob);
    }
    t.push(ttime);
    t.mean = (t.total + FP_ONE / 2) / t.samples;
}

/// as_update_seekdist: the prior sees the raw distance; the process's
/// own history sees it clamped, so one far seek cannot swamp it.
fn update_seekdist(aic: &mut IoContext, p: &mut Priors, sdist: u64) {
    let s = &mut aic.seek;
    if s.samples == 0 {
        p.new_seek_mean = feed_prior(&mut p.new_seek_total, sdist);
    }
    let slack = if s.samples <= SEEK_NEW_WEIGHT { SEEK_SLACK_NEW } else { SEEK_SLACK };
    s.push(sdist.min(s.mean * 4 + slack));
    s.mean = (s.total + s.samples / 2) / s.samples;
}

/// A prior's update: its total decays without a sample weight, so its mean
/// is simply total/256 (no bias correction, as in Linux).
fn feed_prior(total: &mut u64, x: u64) -> u64 {
    *total = decay(*total, FP_ONE * x);
    *total / FP_ONE
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testutil::{hist, ms, read, write};

    #[test]
    fn sample_weight_decays_32_60_84_towards_256() {
        let mut e = Ewma::default();
        let mut seen = vec![];
        for _ in 0..6 {
            e.push(0);
            seen.push(e.samples);
        }
        assert_eq!(seen, [32, 60, 84, 105, 123, 139]);
        for _ in 0..100 {
            e.push(0);
        }
        assert_eq!(e.samples, 249); // integer fixed point stalls below 256
    }

    #[test]
    fn probabilities_move_by_an_eighth() {
        assert_eq!(event(0), 32);
        assert_eq!(event(32), 60);
        assert_eq!(non_event(60), 52);
    }

    #[test]
    fn think_mean_is_bias_corrected_and_rounded() {
        let mut h = hist();
        h.get_mut(0).io_running = true; // pretend I/O completed at 0
        h.update_iohist(0, &read(0, 0, 0), ms(5)); // think 5 jiffies
        let t = h.get(0).ttime;
        // (160+128)/32 = 9: the +128 is a half only at full weight (256),
        // so Linux's early think-time means are biased upwards.
        assert_eq!((t.samples, t.total, t.mean), (32, 160, 9));
        h.completed_sync(0, ms(10));
        h.update_iohist(0, &read(1, 0, 0), ms(12)); // think 2
        let t = h.get(0).ttime;
        // total = (7*160 + 256*2)/8 = 204; mean = (204+128)/60 = 5
        assert_eq!((t.samples, t.total, t.mean), (60, 204, 5));
    }

    #[test]
    fn think_sample_is_zero_unless_io_running_with_nothing_queued() {
        let mut h = hist();
        // First sync request: neither IOSTARTED nor IORUNNING: no sample.
        assert_eq!(h.update_iohist(0, &read(0, 0, 0), ms(3)), None);
        assert!(h.get(0).io_started);
        // IOSTARTED but not IORUNNING: a sample of 0.
        let s = h.update_iohist(0, &read(1, 0, 8), ms(9)).unwrap();
        assert_eq!((s.think_ns, s.think_jiffies), (0, 0));
        // IORUNNING but a request still queued: 0 again.
        h.completed_sync(0, ms(10));
        h.get_mut(0).nr_queued = 1;
        assert_eq!(h.update_iohist(0, &read(2, 0, 16), ms(14)).unwrap().think_jiffies, 0);
        // IORUNNING, nothing queued: the time since the completion...
        h.get_mut(0).nr_queued = 0;
        let s = h.update_iohist(0, &read(3, 0, 24), ms(14)).unwrap();
        assert_eq!((s.think_ns, s.think_jiffies), (ms(4).ns(), 4));
        // ...capped at MAX_THINKTIME-1 jiffies.
        let s = h.update_iohist(0, &read(4, 0, 32), ms(500)).unwrap();
        assert_eq!((s.think_ns, s.think_jiffies), (ms(490).ns(), 19));
        // Async requests are not history.
        assert_eq!(h.update_iohist(0, &write(5, 0, 0), ms(600)), None);
    }

    #[test]
    fn the_first_sample_feeds_the_priors_and_exit_prob() {
        let mut h = hist();
        h.priors.exit_prob = 64;
        h.update_iohist(0, &read(0, 0, 1000), ms(0));
        h.completed_sync(0, ms(1));
        // First sample: think 3 jiffies, seek |5000 - 1008| sectors.
        h.update_iohist(0, &read(1, 0, 5000), ms(4));
        let p = h.priors;
        assert_eq!((p.new_ttime_total, p.new_ttime_mean), (96, 0)); // 256*3/8
        assert_eq!((p.new_seek_total, p.new_seek_mean), (127744, 499));
        assert_eq!(p.exit_prob, 56);
        // Later samples leave the priors alone.
        h.update_iohist(0, &read(2, 0, 9000), ms(5));
        assert_eq!(h.priors, p);
    }

    #[test]
    fn seek_samples_are_clamped() {
        let mut h = hist();
        h.update_iohist(0, &read(0, 0, 0), ms(0)); // position 8
        let far = 1 << 30;
        // First three samples (weight 0, 32, 60): 4*mean + 2 Mi.
        h.update_iohist(0, &read(1, 0, far), ms(0));
        assert_eq!(h.get(0).seek.total, 256 * (2 << 20) / 8);
        assert_eq!(h.get(0).seek.mean, 2 << 20);
        // The prior saw that first sample unclamped.
        assert_eq!(h.priors.new_seek_mean, (far - 8) / 8);
        // The fourth (weight 84 > 60): 4*mean + 128 Ki.
        let mut h = hist();
        h.update_iohist(0, &read(0, 0, 0), ms(0));
        for i in 1..4 {
            h.update_iohist(0, &read(i, 0, 0), ms(0)); // seek 8 each
        }
        assert_eq!((h.get(0).seek.samples, h.get(0).seek.mean), (84, 8));
        let before = h.get(0).seek.total;
        h.update_iohist(0, &read(9, 0, far), ms(0));
        let clamp = 4 * 8 + 128 * 1024;
        assert_eq!(h.get(0).seek.total, (7 * before + 256 * clamp) / 8);
    }
}

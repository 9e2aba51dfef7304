//! Per-process history, `struct cfq_io_context` of CFQ 2.6.20: think time
//! and seek distance as the AS decaying averages (ELEVATORS.md 1.4), which
//! `cfq_update_idle_window` and `cfq_arm_slice_timer` read.

use crate::time::SimTime;

/// `sample_valid`: more than 80 (in units of 1/256) of decayed samples,
/// i.e. from the third sample on (32, 60, 84, …).
pub(super) fn sample_valid(samples: u64) -> bool {
    samples > 80
}

/// `CIC_SEEKY`: a mean seek distance above 128 Ki sectors (64 MiB).
pub(super) const SEEKY_SECTORS: u64 = 128 * 1024;

/// One step of the decay shared by the think-time and seek statistics:
/// `S = (7S + 256)/8`, `T = (7T + 256·x)/8`.
fn decay(samples: &mut u64, total: &mut u64, x: u64) {
    *samples = (7 * *samples + 256) / 8;
    *total = (7 * *total + 256 * x) / 8;
}

/// `struct cfq_io_context` (one per process here: one device).
#[derive(Clone, Debug)]
pub(super) struct IoContext {
    /// A request of this process has been seen (the context exists).
    pub seen: bool,
    /// The process exited (Linux: `cic->ioc->task == NULL`).
    pub exited: bool,
    /// Best-effort priority 0..7 (4: nice 0 with no ioprio set).
    pub ioprio: u8,
    /// It holds a reference to the async queue of its priority.
    pub used_async: bool,
    /// When its last sync request completed (set when the context is made).
    pub last_end_request: SimTime,
    pub ttime_samples: u64,
    pub ttime_total: u64,
    /// Mean think time, ns.
    pub ttime_mean: u64,
    /// End of its last sync request, for the next seek distance.
    pub last_request_pos: u64,
    pub seek_samples: u64,
    pub seek_total: u64,
    /// Mean seek distance, sectors.
    pub seek_mean: u64,
}

impl IoContext {
    pub fn new(ioprio: u8) -> IoContext {
        IoContext {
            seen: false,
            exited: false,
            ioprio,
            used_async: false,
            last_end_request: SimTime::ZERO,
            ttime_samples: 0,
            ttime_total: 0,
            ttime_mean: 0,
            last_request_pos: 0,
            seek_samples: 0,
            seek_total: 0,
            seek_mean: 0,
        }
    }

    /// `cfq_update_io_thinktime`: the sample is the time since the last
    /// sync completion, capped at `2·slice_idle` (`cap_ns`). Unlike AS,
    /// CFQ 2.6.20 takes it even while the process has requests queued.
    pub fn update_thinktime(&mut self, now: SimTime, cap_ns: u64) {
        let ttime = now.since(self.last_end_request).min(cap_ns);
        decay(&mut self.ttime_samples, &mut self.ttime_total, ttime);
        self.ttime_mean = (self.ttime_total + 128) / self.ttime_samples;
    }

    /// `cfq_update_io_seektime`: the distance from the end of the previous
    /// sync request, clamped to `4·mean + 1 GiB` while `S ≤ 60` and to
    /// `4·mean + 64 MiB` after; mean = `(T + S/2)/S`.
    pub fn update_seektime(&mut self, sector: u64) {
        let mut sdist = sector.abs_diff(self.last_request_pos);
        let slack = if self.seek_samples <= 60 { 2 * 1024 * 1024 } else { 2 * 1024 * 64 };
        sdist = sdist.min(self.seek_mean * 4 + slack);
        decay(&mut self.seek_samples, &mut self.seek_total, sdist);
        self.seek_mean = (self.seek_total + self.seek_samples / 2) / self.seek_samples;
    }

    /// `CIC_SEEKY` (without the sample check, as `cfq_update_idle_window`
    /// uses it).
    pub fn seeky(&self) -> bool {
        self.seek_mean > SEEKY_SECTORS
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_MS;

    #[test]
    fn samples_become_valid_at_the_third() {
        let mut c = IoContext::new(4);
        let mut seen = vec![];
        for i in 1..=3 {
            c.update_thinktime(SimTime(i), 16 * NS_PER_MS);
            seen.push(c.ttime_samples);
        }
        assert_eq!(seen, vec![32, 60, 84]);
        assert!(!sample_valid(60) && sample_valid(84));
    }

    #[test]
    fn think_time_is_capped_at_twice_slice_idle_and_decays() {
        let mut c = IoContext::new(4);
        let cap = 16 * NS_PER_MS;
        // A 100 ms think counts as 16 ms.
        c.last_end_request = SimTime::ZERO;
        c.update_thinktime(SimTime(100 * NS_PER_MS), cap);
        assert_eq!(c.ttime_mean, (256 * cap / 8 + 128) / 32);
        // Many zero samples pull the mean down towards 0.
        for _ in 0..60 {
            c.last_end_request = SimTime(500 * NS_PER_MS);
            c.update_thinktime(SimTime(500 * NS_PER_MS), cap);
        }
        assert!(c.ttime_mean < NS_PER_MS / 100, "mean {}", c.ttime_mean);
    }

    #[test]
    fn steady_think_time_settles_slightly_above_itself() {
        // Integer decay: S stops at 249, not 256 ((7·249 + 256)/8 = 249),
        // while T reaches 256·t, so the mean settles at 256/249 of t.
        let mut c = IoContext::new(4);
        let t = 3 * NS_PER_MS;
        for k in 0..200u64 {
            c.last_end_request = SimTime(k * 10 * NS_PER_MS);
            c.update_thinktime(SimTime(k * 10 * NS_PER_MS + t), 16 * NS_PER_MS);
        }
        assert_eq!(c.ttime_samples, 249);
        assert!(c.ttime_mean.abs_diff(t * 256 / 249) <= 2, "mean {}", c.ttime_mean);
    }

    #[test]
    fn seek_distance_is_clamped_and_averaged() {
        let mut c = IoContext::new(4);
        // First distance 10 Gi sectors clamps to 0·4 + 2 Mi.
        c.update_seektime(10 << 30);
        assert_eq!(c.seek_mean, 2 * 1024 * 1024);
        assert!(c.seeky());
        // Sequential from there: distance 0 each time.
        for _ in 0..100 {
            c.last_request_pos = 4096;
            c.update_seektime(4096);
        }
        assert!(!c.seeky());
        assert_eq!(c.seek_mean, 0);
    }
}

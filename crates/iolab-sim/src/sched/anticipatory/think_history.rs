//! The last N think times of every process, for the policies that look at
//! a process's think-time *distribution* rather than AS's mean: the 95%
//! heuristic (its percentile) and WPCAS (its densest region).
//!
//! Samples are the ones AS itself takes on each sync request
//! (`as_update_iohist`: time since the process's last sync completion, 0
//! while it still had requests queued), in ns and uncapped. WPCAS's authors
//! hooked exactly there (the paper's section 4.3).

use crate::request::ProcessId;
use crate::sched::Tunable;

/// The history length tunable shared by the policies that keep one.
pub const HIST_LEN: Tunable = Tunable {
    name: "hist_len",
    unit: "samples",
    min: 1.0,
    max: 4096.0,
    default: 32.0,
    help: "think times kept per process",
};

/// The cap on a policy's wait (the paper's [0, 20] ms think-time range).
pub const MAX_WAIT_MS: Tunable = Tunable {
    name: "max_wait_ms",
    unit: "ms",
    min: 0.0,
    max: 1000.0,
    default: 20.0,
    help: "cap on the wait",
};

/// A ring of the last `capacity` samples per process.
#[derive(Clone, Debug)]
pub struct ThinkHistory {
    capacity: usize,
    rings: Vec<Ring>,
}

#[derive(Clone, Debug, Default)]
struct Ring {
    samples: Vec<u64>,
    next: usize,
}

impl ThinkHistory {
    pub fn new(capacity: usize) -> ThinkHistory {
        ThinkHistory { capacity: capacity.max(1), rings: Vec::new() }
    }

    /// Record one think time of `pid`; returns the sample it replaced, if
    /// the ring was full (for a policy that keeps counts over the ring).
    pub fn push(&mut self, pid: ProcessId, think_ns: u64) -> Option<u64> {
        let i = pid as usize;
        if i >= self.rings.len() {
            self.rings.resize_with(i + 1, Ring::default);
        }
        let r = &mut self.rings[i];
        let old = if r.samples.len() < self.capacity {
            r.samples.push(think_ns);
            None
        } else {
            Some(std::mem::replace(&mut r.samples[r.next], think_ns))
        };
        r.next = (r.next + 1) % self.capacity;
        old
    }

    /// The samples of `pid`, in no particular order.
    pub fn samples(&self, pid: ProcessId) -> &[u64] {
        self.rings.get(pid as usize).map_or(&[], |r| &r.samples)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_last_capacity_samples() {
        let mut h = ThinkHistory::new(3);
        let replaced: Vec<_> = (1..=5).map(|x| h.push(2, x)).collect();
        assert_eq!(replaced, [None, None, None, Some(1), Some(2)]);
        let mut s = h.samples(2).to_vec();
        s.sort();
        assert_eq!(s, [3, 4, 5]);
        assert!(h.samples(0).is_empty() && h.samples(9).is_empty());
    }
}

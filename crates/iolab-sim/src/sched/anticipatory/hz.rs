//! Jiffies, where AS's behaviour depends on them.
//!
//! The simulator keeps time in ns. Linux 2.6.20 keeps AS's times in
//! jiffies (1/HZ s), and three of its rules depend on that unit, so only
//! those go through this clock:
//! - think-time samples are whole jiffies, capped at MAX_THINKTIME-1, and
//!   their mean is compared with `antic_expire` in jiffies
//!   (as_update_iohist, as_can_break_anticipation);
//! - as_close_req turns the time since the wait began into ms and compares
//!   it with `antic_expire` in jiffies (the same number only at HZ=1000);
//! - the initial write batch is `write_batch_expire` in jiffies / 10.
//!
//! Jiffies are counted like Linux's global counter: the jiffy of an
//! instant is `t / (1 s / HZ)`, so an interval spans as many jiffies as
//! tick boundaries it crosses. Timers and expiry checks (antic timer, FIFO
//! and batch expiry) stay in ns: the simulator has no timer wheel, so it
//! fires them exactly rather than on the next tick.

use crate::time::{SimTime, NS_PER_MS, NS_PER_S};

/// The HZ the paper's numbers imply: `antic_expire` = HZ/150 = 6 jiffies
/// is 6 ms only at HZ=1000 (at the 2.6 default HZ=250 it is 1 jiffy = 4 ms;
/// ELEVATORS.md 1.1).
pub const PAPER_HZ: u32 = 1000;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Hz {
    hz: u32,
    jiffy_ns: u64,
    /// MAX_THINKTIME, kept rather than divided out for every think-time
    /// sample.
    max_thinktime: u64,
}

impl Hz {
    pub const fn new(hz: u32) -> Hz {
        Hz { hz, jiffy_ns: NS_PER_S / hz as u64, max_thinktime: hz as u64 / 50 }
    }
    pub fn hz(self) -> u32 {
        self.hz
    }
    /// Nanoseconds per jiffy.
    pub fn jiffy_ns(self) -> u64 {
        self.jiffy_ns
    }
    /// The value of `jiffies` at instant `t`.
    pub fn jiffies(self, t: SimTime) -> u64 {
        t.ns() / self.jiffy_ns
    }
    /// `jiffies - then` at `now`: ticks crossed between the two instants.
    pub fn elapsed(self, then: SimTime, now: SimTime) -> u64 {
        self.jiffies(now).saturating_sub(self.jiffies(then))
    }
    /// `msecs_to_jiffies`: a duration rounded up to whole jiffies.
    pub fn from_ns_ceil(self, ns: u64) -> u64 {
        ns.div_ceil(self.jiffy_ns)
    }
    /// `nsecs_to_jiffies`: a duration rounded down to whole jiffies.
    pub fn from_ns_floor(self, ns: u64) -> u64 {
        ns / self.jiffy_ns
    }
    /// Jiffies to ms as `(j * 1000) / HZ` (as_close_req's `delay`).
    pub fn to_ms(self, jiffies: u64) -> u64 {
        jiffies * (NS_PER_S / NS_PER_MS) / self.hz as u64
    }
    /// MAX_THINKTIME = HZ/50 (20 ms): think-time samples stay below it.
    pub fn max_thinktime(self) -> u64 {
        self.max_thinktime
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sched::testutil::ms;

    #[test]
    fn jiffies_count_tick_crossings() {
        let hz = Hz::new(250); // 4 ms jiffies
        assert_eq!(hz.jiffies(ms(9)), 2);
        assert_eq!(hz.elapsed(ms(3), ms(5)), 1); // crosses the 4 ms tick
        assert_eq!(hz.elapsed(ms(4), ms(7)), 0);
        assert_eq!(hz.to_ms(1), 4);
        assert_eq!(hz.from_ns_ceil(ms(6).ns()), 2); // 6 ms -> 2 jiffies
        assert_eq!(Hz::new(PAPER_HZ).from_ns_ceil(ms(6).ns()), 6);
        assert_eq!(Hz::new(PAPER_HZ).max_thinktime(), 20);
    }
}

//! Simulated time: integer nanoseconds since the start of a run.
//!
//! Every instant inside the simulator is a [`SimTime`]; every duration is a
//! plain `u64` whose name ends in `_ns`. Integer time keeps runs exactly
//! reproducible: no rounding differs between machines or compilers.

use serde::Serialize;
use std::fmt;
use std::ops::{Add, AddAssign};

/// Nanoseconds per microsecond, millisecond and second.
pub const NS_PER_US: u64 = 1_000;
pub const NS_PER_MS: u64 = 1_000_000;
pub const NS_PER_S: u64 = 1_000_000_000;

/// An instant of simulated time, in nanoseconds since the run started.
#[derive(Copy, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct SimTime(pub u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const NEVER: SimTime = SimTime(u64::MAX);

    pub fn ns(self) -> u64 {
        self.0
    }
    pub fn from_ms_f64(ms: f64) -> SimTime {
        SimTime(ms_to_ns(ms))
    }
    pub fn as_ms_f64(self) -> f64 {
        self.0 as f64 / NS_PER_MS as f64
    }
    /// Nanoseconds from `earlier` to `self`, or 0 if `earlier` is later.
    pub fn since(self, earlier: SimTime) -> u64 {
        self.0.saturating_sub(earlier.0)
    }
}

impl Add<u64> for SimTime {
    type Output = SimTime;
    fn add(self, ns: u64) -> SimTime {
        SimTime(self.0.saturating_add(ns))
    }
}

impl AddAssign<u64> for SimTime {
    fn add_assign(&mut self, ns: u64) {
        self.0 = self.0.saturating_add(ns);
    }
}

impl fmt::Debug for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}ms", self.as_ms_f64())
    }
}

/// Milliseconds (as a user writes them in a spec) to whole nanoseconds.
pub fn ms_to_ns(ms: f64) -> u64 {
    (ms * NS_PER_MS as f64).round().max(0.0) as u64
}

/// Nanoseconds to milliseconds, for reports.
pub fn ns_to_ms(ns: u64) -> f64 {
    ns as f64 / NS_PER_MS as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_round_trip() {
        assert_eq!(ms_to_ns(6.0), 6 * NS_PER_MS);
        assert_eq!(SimTime::from_ms_f64(0.5).ns(), 500_000);
        assert_eq!(SimTime(3 * NS_PER_MS).as_ms_f64(), 3.0);
        assert_eq!(SimTime(5).since(SimTime(9)), 0);
        assert_eq!(SimTime::NEVER + 10, SimTime::NEVER);
    }
}

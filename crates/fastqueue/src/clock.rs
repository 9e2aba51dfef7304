//! The queue's clock: wall-clock time in ns since the Unix epoch, used for
//! enqueue times, retry due times and visibility deadlines. The real one
//! is [`SystemClock`]; tests (and programs that simulate time) pass a
//! [`ManualClock`] to [`crate::FastQueue::open_with_clock`] and move it by
//! hand, so that a visibility timeout or a retry delay can be tested
//! without sleeping.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of wall-clock time.
pub trait Clock: Send + Sync {
    /// Now, in ns since the Unix epoch.
    fn now_ns(&self) -> u64;
}

/// The system's clock (`CLOCK_REALTIME`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ns(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    }
}

/// A clock that stands still until [`ManualClock::advance`] moves it.
#[derive(Debug)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    /// A clock showing `start_ns`.
    pub fn new(start_ns: u64) -> ManualClock {
        ManualClock(AtomicU64::new(start_ns))
    }

    /// Moves the clock forward.
    pub fn advance(&self, by: std::time::Duration) {
        self.0.fetch_add(by.as_nanos() as u64, Ordering::SeqCst);
    }
}

impl Default for ManualClock {
    /// Starts at the system's current time, so that stored timestamps look
    /// plausible.
    fn default() -> ManualClock {
        ManualClock::new(SystemClock.now_ns())
    }
}

impl Clock for ManualClock {
    fn now_ns(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

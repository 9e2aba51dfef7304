//! Counters of a running emulator, and the distribution of its timing
//! error (reply instant minus the model's completion instant).

use crate::log::Record;
use crate::model::Op;
use hdrhistogram::Histogram;
use serde::Serialize;
use std::sync::Mutex;

/// A snapshot of the counters.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Stats {
    /// Connections that entered the transmission phase.
    pub connections: u64,
    /// Requests answered (including refused ones).
    pub requests: u64,
    pub reads: u64,
    pub writes: u64,
    pub flushes: u64,
    pub trims: u64,
    pub write_zeroes: u64,
    /// Requests answered with an error.
    pub errors: u64,
    /// Replies the client was gone for, or dropped for not reading.
    pub unsent: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    /// Sum of the model's service times, ns.
    pub busy_ns: u64,
    /// Model time of the last completion, ns.
    pub last_complete_ns: u64,
    /// Timing error of the requests the model served without error:
    /// `reply_ns - complete_ns`, ns.
    pub late: Lateness,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Lateness {
    pub count: u64,
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
}

pub(crate) struct Shared {
    inner: Mutex<(Stats, Histogram<u64>)>,
}

impl Default for Shared {
    fn default() -> Self {
        // 1 ns to 1 hour at 3 significant digits.
        let h = Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid bounds");
        Shared {
            inner: Mutex::new((Stats::default(), h)),
        }
    }
}

impl Shared {
    pub fn connected(&self) {
        self.inner.lock().unwrap().0.connections += 1;
    }

    pub fn record(&self, r: &Record, op: Option<Op>, sent: bool) {
        let mut g = self.inner.lock().unwrap();
        let (s, h) = &mut *g;
        s.requests += 1;
        s.unsent += !sent as u64;
        if r.error.is_some() {
            s.errors += 1;
            return;
        }
        match op {
            Some(Op::Read) => {
                s.reads += 1;
                s.bytes_read += r.length;
            }
            Some(Op::Write) => {
                s.writes += 1;
                s.bytes_written += r.length;
            }
            Some(Op::Flush) => s.flushes += 1,
            Some(Op::Trim) => s.trims += 1,
            Some(Op::WriteZeroes) => s.write_zeroes += 1,
            None => {}
        }
        s.busy_ns += r.service.total_ns;
        s.last_complete_ns = r.complete_ns;
        h.saturating_record(r.reply_ns.saturating_sub(r.complete_ns).max(1));
    }

    /// Replies that had been queued for a client that was then dropped.
    pub fn unsent(&self, n: u64) {
        self.inner.lock().unwrap().0.unsent += n;
    }

    pub fn snapshot(&self) -> Stats {
        let g = self.inner.lock().unwrap();
        let (s, h) = &*g;
        let mut out = s.clone();
        if !h.is_empty() {
            out.late = Lateness {
                count: h.len(),
                mean_ns: h.mean(),
                p50_ns: h.value_at_quantile(0.5),
                p90_ns: h.value_at_quantile(0.9),
                p99_ns: h.value_at_quantile(0.99),
                max_ns: h.max(),
            };
        }
        out
    }
}

//! What the simulator can run: bounds on counts, times and rates that a
//! spec must stay within. Each bound exists so that a spec out of reach
//! gets one clear error, naming the field and the bound, before anything
//! runs: not an allocation failure that aborts the process, a loop that
//! never advances the clock, or a value silently clamped.
//!
//! This module holds the bounds and the checks of one value; the checks
//! of a whole spec against them are the experiment's (`experiment::bounds`).
//!
//! The bounds are far above what an experiment needs (the WPCAS paper's
//! largest run has 80 processes and 5 repetitions), and each says why it
//! is where it is.

use crate::error::{Error, Result};
use crate::time::{ms_to_ns, NS_PER_S};

/// Seeds (repetitions) of one spec. Each seed is a run per scheduler; ten
/// thousand is beyond any confidence interval's need.
pub const MAX_SEEDS: u64 = 10_000;

/// Elevator messages kept per run (`run.elevator_messages`): each is a
/// line of at most 128 characters (blktrace's BLK_TN_MAX_MSG), so a run
/// keeps at most about 140 MB of them.
pub const MAX_ELEVATOR_MESSAGES: u32 = 1_000_000;

/// Jobs (scheduler configurations × seeds) of one spec or sweep: each
/// job's result is kept until the report is written.
pub const MAX_JOBS: u64 = 100_000;

/// Simulated processes of one workload. Each has its own state and
/// latency record; 65,536 is 16 times the 4,096 the benchmarks use.
pub const MAX_PROCESSES: u64 = 65_536;

/// The simulated-time horizon, in seconds: 10^9 s (31.7 years). Time is
/// kept in u64 nanoseconds (584 years); staying well below leaves room for
/// sums of times without saturating.
pub const MAX_SIM_S: f64 = 1e9;

/// The same horizon in nanoseconds.
pub const MAX_SIM_NS: u64 = 1_000_000_000 * NS_PER_S;

/// Files of a file-system workload (web, Postmark): each has its record
/// in the layout; ten million is a thousand times Postmark's default pool.
pub const MAX_FILES: u64 = 10_000_000;

/// Requests the device holds at once: SCSI's tagged queue is 256 deep,
/// NVMe's up to 65,536.
pub const MAX_QUEUE_DEPTH: u32 = 65_536;

/// A number for a message: plain when it reads well (30, 0.5), else in
/// scientific notation (1e300, 1e-7) rather than hundreds of digits.
pub fn show(x: f64) -> String {
    let a = x.abs();
    if x != 0.0 && x.is_finite() && !(1e-4..1e15).contains(&a) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}

/// Check a process count against [`MAX_PROCESSES`]; `field` names it.
pub fn check_processes(field: &str, n: u64) -> Result<()> {
    if n > MAX_PROCESSES {
        return Err(Error::invalid(
            field,
            format!("{n} processes is more than the simulator runs ({MAX_PROCESSES} at most)"),
        ));
    }
    Ok(())
}

/// A time in seconds within (0, horizon].
pub fn check_seconds(field: &str, s: f64) -> Result<()> {
    if !(s.is_finite() && s > 0.0) {
        return Err(Error::invalid(field, format!("must be a positive number of seconds, got {}", show(s))));
    }
    if s > MAX_SIM_S {
        return Err(Error::invalid(
            field,
            format!("{} s is beyond the simulated-time horizon of {MAX_SIM_S:e} s (31.7 years)", show(s)),
        ));
    }
    Ok(())
}

/// A time in ms within [0, horizon] (`positive`: and at least 1 ns).
pub fn check_ms(field: &str, ms: f64, positive: bool) -> Result<()> {
    if !(ms.is_finite() && ms >= 0.0) {
        return Err(Error::invalid(field, format!("expected a non-negative number of ms, got {}", show(ms))));
    }
    if ms > MAX_SIM_S * 1e3 {
        return Err(Error::invalid(
            field,
            format!("{} ms is beyond the simulated-time horizon of {:e} ms (31.7 years)", show(ms), MAX_SIM_S * 1e3),
        ));
    }
    if positive && ms_to_ns(ms) == 0 {
        return Err(Error::invalid(
            field,
            format!("{} ms rounds to 0 ns, and time must advance; the least is 0.000001 ms (1 ns)", show(ms)),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_beyond_the_horizon_or_below_a_nanosecond() {
        assert!(check_seconds("d", 1e9).is_ok());
        let e = check_seconds("run.duration_s", 1e300).unwrap_err().to_string();
        assert!(e.starts_with("run.duration_s: 1e300 s is beyond") && e.contains("1e9 s"), "{e}");
        assert!(check_seconds("d", f64::NAN).is_err() && check_seconds("d", 0.0).is_err());
        let e = check_ms("disk.fixed_ms", 1e-7, true).unwrap_err().to_string();
        assert!(e.contains("rounds to 0 ns") && e.contains("0.000001 ms"), "{e}");
        assert!(check_ms("t", 0.0, false).is_ok() && check_ms("t", 1e-6, true).is_ok());
        assert!(check_ms("t", -1.0, false).is_err() && check_ms("t", 1e13, false).is_err());
    }

    #[test]
    fn process_counts() {
        assert!(check_processes("w", MAX_PROCESSES).is_ok());
        let e = check_processes("workload.processes", 4_000_000_000).unwrap_err().to_string();
        assert_eq!(e, "workload.processes: 4000000000 processes is more than the simulator runs (65536 at most)");
    }
}

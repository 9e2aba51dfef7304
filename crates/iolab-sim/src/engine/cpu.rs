//! The machine's CPUs, when a run has fewer than its processes
//! (`[host] cpus`).
//!
//! A process's `cpu` time per operation ([`crate::workload::Step::Compute`])
//! is otherwise a delay of its own. On a guest with one vCPU (the QEMU
//! guest of `iolab kernel compare --icount`, `-smp 1`) every process's
//! completion path, wake-up and next submission run on the same CPU, so
//! one process's time per request grows when another's runs at the same
//! moment: docs/kernel.md measured p50 1.72 ms per request beyond the
//! think time with four processes on the guest, against 1.00 ms alone.
//!
//! The model: each burst runs, whole and at once, on the CPU that frees
//! first, from when it is ready or when that CPU frees, whichever is later
//! (first come, first served, no preemption). Linux shares a CPU rather
//! than queueing on it (CFS; a woken process may preempt the running one),
//! so this is the simplest of the orders one CPU can serve bursts in, not
//! the scheduler's; docs/kernel.md says what it gives against the guest.

use crate::error::{Error, Result};
pub use crate::metrics::CpuReport;
use crate::time::SimTime;
use serde::{Deserialize, Serialize};

/// The most CPUs a run may name: beyond a few hundred no run has fewer
/// CPUs than processes that matter, and the pool is scanned per burst.
pub const MAX_CPUS: u32 = 4096;

/// The `[host]` table of a spec.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct HostSpec {
    /// CPUs the processes' `cpu` time runs on; absent, each process has
    /// its own (the `cpu` time is a delay, as a think time is).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<u32>,
    /// When kblockd's worker runs the queue after it is asked
    /// (`[host.queue_run_us]`, sched::kblockd); empty: at once.
    #[serde(skip_serializing_if = "crate::sched::kblockd::QueueRunSpec::is_empty")]
    pub queue_run_us: crate::sched::kblockd::QueueRunSpec,
}

impl HostSpec {
    /// Check the table; errors name the field.
    pub fn check(&self) -> Result<()> {
        self.queue_run_us.check()?;
        match self.cpus {
            Some(n) if n == 0 || n > MAX_CPUS => Err(Error::invalid(
                "host.cpus",
                format!("must be from 1 to {MAX_CPUS}, got {n}"),
            )),
            _ => Ok(()),
        }
    }
}

/// CPUs, each free from some instant on.
#[derive(Clone, Debug)]
pub struct CpuPool {
    free_at: Vec<SimTime>,
    /// Time bursts waited for a CPU, and CPU time served, in ns.
    waited_ns: u64,
    busy_ns: u64,
    bursts: u64,
}

impl CpuPool {
    pub fn new(cpus: u32) -> CpuPool {
        CpuPool {
            free_at: vec![SimTime::ZERO; cpus.max(1) as usize],
            waited_ns: 0,
            busy_ns: 0,
            bursts: 0,
        }
    }

    /// Run a burst of `ns` ready at `now`; returns when it ends.
    pub fn run(&mut self, now: SimTime, ns: u64) -> SimTime {
        // The CPU that frees first (the lowest index among equals, so a
        // run is the same on every machine).
        let (i, free) = self
            .free_at
            .iter()
            .copied()
            .enumerate()
            .min_by_key(|&(i, t)| (t, i))
            .expect("a CPU");
        let start = free.max(now);
        let end = start + ns;
        self.free_at[i] = end;
        self.waited_ns += start.since(now);
        self.busy_ns += ns;
        self.bursts += 1;
        end
    }

    /// What the run's bursts did: counted, waited and served.
    pub fn report(&self) -> CpuReport {
        CpuReport {
            cpus: self.free_at.len() as u32,
            bursts: self.bursts,
            busy_ms: self.busy_ns as f64 / 1e6,
            mean_wait_us: if self.bursts == 0 {
                0.0
            } else {
                self.waited_ns as f64 / self.bursts as f64 / 1e3
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_cpu_serves_bursts_in_turn_and_a_free_one_at_once() {
        let mut one = CpuPool::new(1);
        assert_eq!(one.run(SimTime(0), 1000), SimTime(1000));
        assert_eq!(
            one.run(SimTime(400), 1000),
            SimTime(2000),
            "waits 600 ns for the CPU"
        );
        assert_eq!(
            one.run(SimTime(5000), 10),
            SimTime(5010),
            "the CPU is idle: at once"
        );
        let r = one.report();
        assert_eq!((r.bursts, r.busy_ms), (3, 2010.0 / 1e6));
        assert!((r.mean_wait_us - 0.2).abs() < 1e-9, "{r:?}");
        let mut two = CpuPool::new(2);
        assert_eq!(two.run(SimTime(0), 1000), SimTime(1000));
        assert_eq!(
            two.run(SimTime(400), 1000),
            SimTime(1400),
            "the second CPU is free"
        );
        assert_eq!(
            two.run(SimTime(500), 1000),
            SimTime(2000),
            "the first frees first"
        );
    }

    #[test]
    fn cpus_out_of_range_are_refused_with_the_limit() {
        assert!(HostSpec { cpus: Some(1), ..Default::default() }.check().is_ok());
        assert!(HostSpec::default().check().is_ok());
        for n in [0, MAX_CPUS + 1] {
            let e = HostSpec { cpus: Some(n), ..Default::default() }.check().unwrap_err().to_string();
            assert!(e.contains("host.cpus") && e.contains("4096"), "{e}");
        }
    }
}

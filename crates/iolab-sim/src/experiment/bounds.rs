//! A whole spec against the simulator's bounds ([`crate::limits`]): what no
//! single component checks (seeds × schedulers, the device queue, the
//! file and process counts of a workload).

use super::Spec;
use crate::error::{Error, Result};
use crate::limits::{check_ms, check_processes, check_seconds, MAX_FILES, MAX_JOBS, MAX_QUEUE_DEPTH, MAX_SEEDS};
use crate::workload::WorkloadSpec;

/// The processes a workload spec makes, where the spec alone says.
pub fn process_count(w: &WorkloadSpec) -> Option<u64> {
    match w {
        WorkloadSpec::Iozone(s) => Some(s.processes as u64),
        WorkloadSpec::Processes(s) => Some(s.group.iter().map(|g| g.count as u64).sum()),
        WorkloadSpec::Postmark(s) => Some(s.processes as u64),
        WorkloadSpec::Web(s) => Some(s.workers as u64),
        // One per stream of the trace: known once it is read.
        WorkloadSpec::Trace(_) => None,
    }
}

/// Everything a spec must stay within that no single component checks.
pub fn check(spec: &Spec) -> Result<()> {
    let run = &spec.run;
    if let Some(d) = run.duration_s {
        check_seconds("run.duration_s", d)?;
    }
    let seeds = match &run.seeds {
        Some(s) => s.len() as u64,
        None => run.repetitions as u64,
    };
    if seeds > MAX_SEEDS {
        let field = if run.seeds.is_some() { "run.seeds" } else { "run.repetitions" };
        return Err(Error::invalid(field, format!("{seeds} seeds is more than {MAX_SEEDS}, the most one spec runs")));
    }
    if run.seeds.is_none() && run.seed.checked_add(seeds.saturating_sub(1)).is_none() {
        return Err(Error::invalid("run.seed", "seed + repetitions - 1 must fit in 64 bits"));
    }
    let jobs = seeds * spec.schedulers.len() as u64;
    if jobs > MAX_JOBS {
        return Err(Error::invalid(
            "run",
            format!(
                "{} scheduler(s) × {seeds} seed(s) = {jobs} runs, more than {MAX_JOBS}, the most one spec runs",
                spec.schedulers.len()
            ),
        ));
    }
    if spec.disk.queue_depth > MAX_QUEUE_DEPTH {
        return Err(Error::invalid(
            "disk.queue_depth",
            format!("{} is more than {MAX_QUEUE_DEPTH}, the deepest device queue (NVMe)", spec.disk.queue_depth),
        ));
    }
    if let Some(ms) = spec.disk.fixed_ms {
        check_ms("disk.fixed_ms", ms, true)?;
    }
    let files = match &spec.workload {
        WorkloadSpec::Web(w) => Some(w.files as u64),
        WorkloadSpec::Postmark(p) => Some(p.files as u64),
        _ => None,
    };
    if let Some(n) = files.filter(|&n| n > MAX_FILES) {
        return Err(Error::invalid("workload.files", format!("{n} files is more than {MAX_FILES}, the most a file-system workload holds")));
    }
    if let Some(n) = process_count(&spec.workload) {
        let field = match &spec.workload {
            WorkloadSpec::Processes(_) => "workload.group",
            WorkloadSpec::Web(_) => "workload.workers",
            _ => "workload.processes",
        };
        check_processes(field, n)?;
    }
    Ok(())
}

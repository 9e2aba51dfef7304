//! Validation of a disk model against a drive measured one request at a
//! time (DiskSim's `valid/*.trace`, see `trace::disksim_validation`).
//!
//! The replay issues each request when the previous one has completed in
//! the model plus the trace's idle delay, as DiskSim does, and compares
//! the distribution of the simulated access times with the measured one.
//!
//! The demerit figure is Ruemmler & Wilkes's ("An Introduction to Disk
//! Drive Modeling", 1994): the root mean square of the horizontal
//! distance between the measured and the simulated cumulative
//! distribution functions of access time,
//!
//!   demerit = sqrt( ∫₀¹ (Fm⁻¹(q) − Fs⁻¹(q))² dq )   in ms,
//!
//! where F⁻¹ is the quantile function of each sample (the inverse of its
//! empirical CDF, a step function). With n measured and n simulated
//! values sorted ascending this is sqrt(Σ (m₍ᵢ₎ − s₍ᵢ₎)² / n); samples of
//! different sizes are integrated over the union of their steps. It is
//! also reported as a percentage of the measured mean.

use crate::disk::{CacheOutcome, Disk};
use crate::error::Result;
use crate::request::{Dir, Request};
use crate::time::SimTime;
use crate::trace::disksim_validation::{self as vt, Outcome, Record};
use serde::Serialize;
use std::path::Path;

/// Summary of a sample of access times, in ms.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Stats {
    pub mean_ms: f64,
    /// Population standard deviation.
    pub sd_ms: f64,
    /// Nearest-rank percentiles.
    pub p10_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
}

/// Measured against simulated for one kind of request (`R Hit`, `W Trip`...).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ClassRow {
    /// Direction and the drive's outcome, as in the trace.
    pub class: String,
    pub count: usize,
    pub measured_mean_ms: f64,
    pub simulated_mean_ms: f64,
    /// How the model's cache served these requests.
    pub model_hits: usize,
    pub model_partial_hits: usize,
    pub model_misses: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub disk: String,
    pub trace: String,
    pub requests: usize,
    pub measured: Stats,
    pub simulated: Stats,
    pub demerit_ms: f64,
    pub demerit_percent_of_mean: f64,
    pub classes: Vec<ClassRow>,
}

/// Replays `trace` against `disk` one request at a time; returns the
/// model's service of each request.
pub fn replay(disk: &mut dyn Disk, trace: &[Record]) -> Vec<crate::disk::Service> {
    let mut out = Vec::with_capacity(trace.len());
    let mut now = SimTime::ZERO;
    for (i, r) in trace.iter().enumerate() {
        let rq = Request {
            id: i as u32,
            pid: 0,
            sector: r.lbn,
            nr_sectors: r.blocks,
            dir: if r.write { Dir::Write } else { Dir::Read },
            sync: true,
            arrival: now,
        };
        let s = disk.service(&rq, now);
        now += s.total_ns + (r.delay_us * 1e3).round() as u64;
        out.push(s);
    }
    out
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Statistics of a sample (sorted in place).
pub fn stats(v: &mut [f64]) -> Stats {
    v.sort_by(f64::total_cmp);
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    Stats {
        mean_ms: mean,
        sd_ms: var.sqrt(),
        p10_ms: percentile(v, 10.0),
        p50_ms: percentile(v, 50.0),
        p90_ms: percentile(v, 90.0),
        p99_ms: percentile(v, 99.0),
    }
}

/// RMS horizontal distance between the empirical CDFs of two sorted
/// samples (see the module comment).
pub fn demerit(a: &[f64], b: &[f64]) -> f64 {
    let (na, nb) = (a.len(), b.len());
    if na == 0 || nb == 0 {
        return f64::NAN;
    }
    // Walk the union of the quantile steps i/na and j/nb.
    let (mut i, mut j, mut q, mut sum) = (0usize, 0usize, 0.0f64, 0.0f64);
    while i < na && j < nb {
        let qa = (i + 1) as f64 / na as f64;
        let qb = (j + 1) as f64 / nb as f64;
        let next = qa.min(qb);
        let d = a[i] - b[j];
        sum += d * d * (next - q);
        q = next;
        if qa <= next {
            i += 1;
        }
        if qb <= next {
            j += 1;
        }
    }
    sum.sqrt()
}

/// Replays `trace` against `disk` and compares.
pub fn validate(disk: &mut dyn Disk, trace: &[Record], trace_name: &str) -> Report {
    let services = replay(disk, trace);
    let mut measured: Vec<f64> = trace.iter().map(|r| r.access_us / 1e3).collect();
    let mut simulated: Vec<f64> = services.iter().map(|s| s.total_ns as f64 / 1e6).collect();
    let mut classes = Vec::new();
    for write in [false, true] {
        for outcome in [Outcome::Hit, Outcome::Miss, Outcome::Doub, Outcome::Trip] {
            let idx: Vec<usize> =
                (0..trace.len()).filter(|&i| trace[i].write == write && trace[i].outcome == outcome).collect();
            if idx.is_empty() {
                continue;
            }
            let n = idx.len() as f64;
            let count = |c: CacheOutcome| idx.iter().filter(|&&i| services[i].cache == c).count();
            classes.push(ClassRow {
                class: format!("{} {}", if write { "W" } else { "R" }, outcome.name()),
                count: idx.len(),
                measured_mean_ms: idx.iter().map(|&i| measured[i]).sum::<f64>() / n,
                simulated_mean_ms: idx.iter().map(|&i| simulated[i]).sum::<f64>() / n,
                model_hits: count(CacheOutcome::Hit),
                model_partial_hits: count(CacheOutcome::Partial),
                model_misses: count(CacheOutcome::Miss),
            });
        }
    }
    let m = stats(&mut measured);
    let s = stats(&mut simulated);
    let d = demerit(&measured, &simulated);
    Report {
        disk: disk.describe(),
        trace: trace_name.to_string(),
        requests: trace.len(),
        demerit_percent_of_mean: 100.0 * d / m.mean_ms,
        measured: m,
        simulated: s,
        demerit_ms: d,
        classes,
    }
}

/// Loads a DiskSim parameter file and a validation trace, and compares.
pub fn validate_files(diskspecs: &Path, trace: &Path) -> Result<Report> {
    let mut disk = crate::disk::hdd::Hdd::new(crate::disk::diskspecs::load(diskspecs)?)?;
    let records = vt::read(trace)?;
    Ok(validate(&mut disk, &records, &trace.display().to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demerit_of_identical_and_shifted_samples() {
        let a = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(demerit(&a, &a), 0.0);
        let b = [1.5, 2.5, 3.5, 4.5];
        assert!((demerit(&a, &b) - 0.5).abs() < 1e-12);
        // Unequal sizes: [1, 3] against [1, 1, 3, 3] is the same CDF.
        assert!(demerit(&[1.0, 3.0], &[1.0, 1.0, 3.0, 3.0]).abs() < 1e-12);
        // One step off over a quarter of the mass: sqrt(0.25 · 4) = 1.
        assert!((demerit(&[0.0, 0.0, 0.0, 2.0], &[0.0, 0.0, 0.0, 4.0]) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
        let s = stats(&mut v);
        assert_eq!((s.p10_ms, s.p50_ms, s.p90_ms, s.p99_ms), (10.0, 50.0, 90.0, 99.0));
        assert!((s.mean_ms - 50.5).abs() < 1e-12);
    }
}

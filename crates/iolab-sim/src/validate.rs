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

/// DiskSim's distribution of access times ("Physical access time" and
/// "Trace access time" in its `statdefs`: 1750 buckets, scale 1000, start
/// 0, step 1, grow 1): bucket boundaries in µs, each 1% wider than the
/// last, from 0 to about 2 s.
fn disksim_bucket_starts() -> Vec<i64> {
    const BUCKETS: usize = 1750;
    let mut starts = Vec::with_capacity(BUCKETS);
    let mut v: i64 = 0;
    for _ in 0..BUCKETS {
        starts.push(v);
        v += 1 + (v.abs() * 1) / 100;
    }
    starts
}

/// The cumulative distribution DiskSim prints for a sample (ms): points
/// (bucket boundary in ms, fraction of values below it, to 6 decimals),
/// up to the first that reaches 1. Values are truncated to whole µs and
/// counted in the bucket whose upper boundary they are below
/// (`disksim_stat.c`, `stat_update`).
fn disksim_cdf(values: &[f64], starts: &[i64]) -> Vec<(f64, f64)> {
    let mut counts = vec![0u64; starts.len()];
    let top = starts.len() - 2;
    for &v in values {
        let us = (v * 1000.0) as i64;
        let i = if us < 0 {
            0
        } else if us >= starts[top] {
            starts.len() - 1
        } else {
            // First k with us < starts[k + 1]: the bucket is k + 1.
            starts[1..].partition_point(|&s| s <= us) + 1
        };
        counts[i] += 1;
    }
    let n = values.len() as f64;
    let mut out = Vec::new();
    let mut dist = 0.0f64;
    for (i, &c) in counts.iter().enumerate() {
        dist += c as f64 / n;
        let y = (dist * 1e6).round() / 1e6;
        out.push((starts[i] as f64 / 1000.0, y));
        if y >= 1.0 {
            break;
        }
    }
    out
}

/// The demerit figure exactly as DiskSim 4.0's validation computes it
/// (`runvalid` with its `rms` program): both samples are binned into
/// DiskSim's access-time distribution (1% wide buckets), each CDF is
/// interpolated linearly between bucket boundaries, and the RMS of the
/// horizontal distance is taken at quantiles 0.0001, 0.0002, ... 1.
pub fn disksim_demerit(measured: &[f64], simulated: &[f64]) -> f64 {
    if measured.is_empty() || simulated.is_empty() {
        return f64::NAN;
    }
    let starts = disksim_bucket_starts();
    let a = disksim_cdf(measured, &starts);
    let b = disksim_cdf(simulated, &starts);
    // The horizontal position of quantile `q` on a CDF polyline.
    fn at(line: &[(f64, f64)], i: &mut usize, q: f64) -> f64 {
        while *i < line.len() - 1 && line[*i].1 < q {
            *i += 1;
        }
        if *i == 0 {
            return line[0].0;
        }
        let (x0, y0) = line[*i - 1];
        let (x1, y1) = line[*i];
        if y1 == y0 {
            return x1;
        }
        x0 + (q - y0) / (y1 - y0) * (x1 - x0)
    }
    let (mut i, mut j, mut sum, mut count) = (0usize, 0usize, 0.0f64, 0u32);
    let mut q = 0.0001f64;
    while q <= 1.0 {
        let d = at(&a, &mut i, q) - at(&b, &mut j, q);
        sum += d * d;
        count += 1;
        q += 0.0001;
    }
    (sum / count as f64).sqrt()
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

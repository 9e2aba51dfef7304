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
//! distribution functions of access time. Two versions are reported:
//!
//! - [`disksim_demerit`], the headline, computed exactly as DiskSim 4.0's
//!   validation does (its `rms` program over its printed distributions):
//!   both samples binned into 1750 buckets each 1% wider than the last,
//!   the CDFs interpolated linearly between bucket boundaries, the RMS
//!   taken over quantiles 0.0001, 0.0002, ... 1. This is the figure to set
//!   beside DiskSim's own.
//! - [`demerit`], the exact version on the raw samples:
//!   sqrt( ∫₀¹ (Fm⁻¹(q) − Fs⁻¹(q))² dq ) with F⁻¹ each sample's quantile
//!   function (a step function); with n values each, sorted,
//!   sqrt(Σ (m₍ᵢ₎ − s₍ᵢ₎)² / n).

use crate::disk::diskspecs::{self, BuildReport};
use crate::disk::hdd::Hdd;
use crate::disk::{CacheOutcome, Disk};
use crate::error::{Error, Result};
use crate::request::{Dir, Request};
use crate::time::SimTime;
use crate::trace::disksim_validation::{self as vt, Outcome, Record};
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};

/// DiskSim 4.0's own demerit on each drive of its validation suite, by
/// the name of the drive's `disksim_disk` block: measured by building
/// DiskSim 4.0 from its public sources and running its `runvalid` (they
/// round to the figures the script expects and that
/// `data/disksim/README.md` quotes).
pub const DISKSIM_DEMERITS: &[(&str, f64)] = &[
    ("HP_C2247A_validate", 0.089932),
    ("HP_C3323A_validate", 0.305712),
    ("HP_C2490A_validate", 0.253831),
    ("DEC_RZ26_validate", 0.340575),
    ("SEAGATE_ST32171W", 0.347863),
    ("SEAGATE_ST34501N_validate", 0.318228),
    ("SEAGATE_ST39102LW_validate", 0.107098),
    ("QUANTUM_QM39100TD-SW", 0.378078),
    ("QUANTUM_TORNADO_validate", 0.267525),
    ("IBM_DNES-309170W_validate", 0.136072),
];

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

/// How the model's buffer served the trace's requests.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CacheCounts {
    pub read_hits: usize,
    pub read_partial_hits: usize,
    pub read_misses: usize,
    /// Writes completed once in the buffer (write-back).
    pub writes_buffered: usize,
    pub writes_to_media: usize,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    /// The parameter file given.
    pub diskspecs: String,
    pub disk: String,
    /// The `disksim_disk` block's name.
    pub disk_name: String,
    /// What was built from which file.
    pub build: BuildReport,
    pub trace: String,
    pub requests: usize,
    pub measured: Stats,
    pub simulated: Stats,
    /// DiskSim's figure (see the module comment), in ms.
    pub demerit_ms: f64,
    pub demerit_percent_of_mean: f64,
    /// The exact figure on the raw samples, in ms.
    pub demerit_exact_ms: f64,
    /// DiskSim 4.0's own demerit on this drive, when it is one of its
    /// validation suite's.
    pub disksim_demerit_ms: Option<f64>,
    pub cache: CacheCounts,
    pub classes: Vec<ClassRow>,
    /// Whether zero-latency access was honoured (see `disk::diskspecs`).
    pub zero_latency: bool,
    /// Set only when a sample had more distinct times than a bounded
    /// memory holds: the times were rounded to this many ns, and every
    /// figure above is to that precision (see [`Sample`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rounded_to_ns: Option<u64>,
}

/// Validation choices.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// Honour "Immediate buffer read/write" (zero-latency access).
    pub zero_latency: bool,
    /// Also write one CSV row per request here.
    pub per_request: Option<PathBuf>,
}

/// Replays `trace` against `disk` one request at a time; returns the
/// model's service of each request.
pub fn replay(disk: &mut dyn Disk, trace: &[Record]) -> Vec<crate::disk::Service> {
    let mut out = Vec::with_capacity(trace.len());
    let mut now = SimTime::ZERO;
    for (i, r) in trace.iter().enumerate() {
        let s = disk.service(&request(i, r, now), now);
        now += s.total_ns + (r.delay_us * 1e3).round() as u64;
        out.push(s);
    }
    out
}

fn request(i: usize, r: &Record, now: SimTime) -> Request {
    Request {
        id: i as u32,
        pid: 0,
        sector: r.lbn,
        nr_sectors: r.blocks,
        dir: if r.write { Dir::Write } else { Dir::Read },
        sync: true,
        arrival: now,
    }
}

/// A sample of access times kept as its distinct values, ascending, each
/// with how many times it occurs: all that the statistics, the quantiles and
/// both demerits need, exactly (the sorted sample is each value repeated
/// its count of times, so every figure is computed over the same values in
/// the same order as from a sorted array of all of them, bit for bit). Its
/// size is the number of distinct values, bounded by the trace's precision
/// and the model's range of times rather than by the number of requests:
/// 10 ns steps of measured time and whole ns of simulated time, within a
/// few tens of ms (the C2247A trace repeated to 10^6 requests has 9,985
/// and 14,095). Values arrive in batches that are sorted and merged in.
///
/// So that memory stays bounded whatever the trace, a sample that would
/// hold more than [`MAX_DISTINCT`] distinct values is rounded to a grid of
/// whole ns, coarsened until it fits: its figures are then approximate
/// (to the grid), and [`Sample::grid_ns`] says so.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    values: Vec<f64>,
    counts: Vec<u64>,
    pending: Vec<f64>,
    pending_counts: Vec<u64>,
    n: usize,
    /// 0 while the values are exact; else each value is rounded to a
    /// multiple of this many ns.
    grid_ns: u64,
}

/// Distinct values a sample holds at most (16 bytes each, 2 MiB).
pub const MAX_DISTINCT: usize = 1 << 17;

/// `v` (ms) rounded to a multiple of `grid_ns` ns; monotone, so a sorted
/// sample stays sorted.
fn to_grid(v: f64, grid_ns: u64) -> f64 {
    let g = grid_ns as f64;
    (v * 1e6 / g).round() * g / 1e6
}

/// Values held unsorted before a merge: large enough that merges are rare,
/// small beside the distinct values.
const PENDING: usize = 1 << 14;

impl Sample {
    pub fn new() -> Self {
        Sample::default()
    }

    /// A sample of the given values.
    pub fn of(values: &[f64]) -> Self {
        let mut s = Sample::new();
        for &v in values {
            s.push(v);
        }
        s.merge();
        s
    }

    pub fn push(&mut self, v: f64) {
        self.pending.push(if self.grid_ns == 0 { v } else { to_grid(v, self.grid_ns) });
        self.n += 1;
        if self.pending.len() >= PENDING {
            self.merge();
        }
    }

    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// Distinct values held.
    pub fn distinct(&self) -> usize {
        self.values.len()
    }

    /// The grid the values were rounded to (ns), None while exact.
    pub fn grid_ns(&self) -> Option<u64> {
        (self.grid_ns > 0).then_some(self.grid_ns)
    }

    /// Rounds the values to a grid twice as coarse (16 ns at first) and
    /// merges those that become equal.
    fn coarsen(&mut self) {
        self.grid_ns = if self.grid_ns == 0 { 16 } else { self.grid_ns * 2 };
        let (mut w, g) = (0usize, self.grid_ns);
        for r in 0..self.values.len() {
            let v = to_grid(self.values[r], g);
            if w > 0 && self.values[w - 1].total_cmp(&v).is_eq() {
                self.counts[w - 1] += self.counts[r];
            } else {
                self.values[w] = v;
                self.counts[w] = self.counts[r];
                w += 1;
            }
        }
        self.values.truncate(w);
        self.counts.truncate(w);
    }

    /// Merges the pending values into the distinct ones, in place (no
    /// second copy of the sample, and no allocation but the amortised
    /// growth of its vectors). Values equal under `total_cmp` have the same
    /// bits, so one of them stands for all.
    fn merge(&mut self) {
        if self.pending.is_empty() {
            return;
        }
        self.pending.sort_unstable_by(f64::total_cmp);
        // The pending values as runs, at the front of `pending`, with
        // their counts in `pending_counts`.
        let mut k = 0usize;
        self.pending_counts.clear();
        for j in 0..self.pending.len() {
            let v = self.pending[j];
            if k > 0 && self.pending[k - 1].total_cmp(&v).is_eq() {
                self.pending_counts[k - 1] += 1;
            } else {
                self.pending[k] = v;
                self.pending_counts.push(1);
                k += 1;
            }
        }
        // Merge from the back into the room made at the end.
        let old = self.values.len();
        self.values.resize(old + k, 0.0);
        self.counts.resize(old + k, 0);
        let (mut i, mut j, mut w) = (old, k, old + k);
        while j > 0 {
            let pv = self.pending[j - 1];
            if i > 0 && self.values[i - 1].total_cmp(&pv).is_gt() {
                self.values[w - 1] = self.values[i - 1];
                self.counts[w - 1] = self.counts[i - 1];
                i -= 1;
            } else if i > 0 && self.values[i - 1].total_cmp(&pv).is_eq() {
                self.values[w - 1] = pv;
                self.counts[w - 1] = self.counts[i - 1] + self.pending_counts[j - 1];
                i -= 1;
                j -= 1;
            } else {
                self.values[w - 1] = pv;
                self.counts[w - 1] = self.pending_counts[j - 1];
                j -= 1;
            }
            w -= 1;
        }
        // What is left of the old values is in place below `i` = `w`
        // unless equal values merged: then close the gap.
        if w > i {
            let len = old + k;
            self.values.copy_within(w..len, i);
            self.counts.copy_within(w..len, i);
            self.values.truncate(len - (w - i));
            self.counts.truncate(len - (w - i));
        }
        self.pending.clear();
        while self.values.len() > MAX_DISTINCT {
            self.coarsen();
        }
    }

    /// The distinct values, ascending, with their counts (after a merge).
    fn runs(&self) -> impl Iterator<Item = (f64, u64)> + '_ {
        debug_assert!(self.pending.is_empty());
        self.values.iter().copied().zip(self.counts.iter().copied())
    }

    /// The sorted sample, value by value.
    fn sorted(&self) -> impl Iterator<Item = f64> + '_ {
        self.runs().flat_map(|(v, c)| std::iter::repeat_n(v, c as usize))
    }

    /// The `rank`-th smallest value (from 1).
    fn nth(&self, rank: usize) -> f64 {
        let mut seen = 0u64;
        for (v, c) in self.runs() {
            seen += c;
            if seen >= rank as u64 {
                return v;
            }
        }
        f64::NAN
    }

    /// Nearest-rank percentile.
    fn percentile(&self, p: f64) -> f64 {
        let rank = ((p / 100.0) * self.n as f64).ceil() as usize;
        self.nth(rank.clamp(1, self.n))
    }
}

/// Statistics of a sample.
pub fn stats(v: &mut Sample) -> Stats {
    v.merge();
    let n = v.n as f64;
    // Summed in ascending order, value by value, as over a sorted array.
    let mean = v.sorted().sum::<f64>() / n;
    let var = v.sorted().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    Stats {
        mean_ms: mean,
        sd_ms: var.sqrt(),
        p10_ms: v.percentile(10.0),
        p50_ms: v.percentile(50.0),
        p90_ms: v.percentile(90.0),
        p99_ms: v.percentile(99.0),
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
        v += 1 + v.abs() / 100;
    }
    starts
}

/// The cumulative distribution DiskSim prints for a sample (ms): points
/// (bucket boundary in ms, fraction of values below it, to 6 decimals),
/// up to the first that reaches 1. Values are truncated to whole µs and
/// counted in the bucket whose upper boundary they are below
/// (`disksim_stat.c`, `stat_update`).
fn disksim_cdf(values: &Sample, starts: &[i64]) -> Vec<(f64, f64)> {
    let mut counts = vec![0u64; starts.len()];
    let top = starts.len() - 2;
    for (v, c) in values.runs() {
        let us = (v * 1000.0) as i64;
        let i = if us < 0 {
            0
        } else if us >= starts[top] {
            starts.len() - 1
        } else {
            // First k with us < starts[k + 1]: the bucket is k + 1.
            starts[1..].partition_point(|&s| s <= us) + 1
        };
        counts[i] += c;
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
/// (see the module comment), in ms.
pub fn disksim_demerit(measured: &Sample, simulated: &Sample) -> f64 {
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

/// RMS horizontal distance between the empirical CDFs of two samples (see
/// the module comment), in their unit.
pub fn demerit(a: &Sample, b: &Sample) -> f64 {
    let (na, nb) = (a.len(), b.len());
    if na == 0 || nb == 0 {
        return f64::NAN;
    }
    let (mut ai, mut bi) = (a.sorted(), b.sorted());
    let (mut av, mut bv) = (ai.next().unwrap_or(f64::NAN), bi.next().unwrap_or(f64::NAN));
    // Walk the union of the quantile steps i/na and j/nb.
    let (mut i, mut j, mut q, mut sum) = (0usize, 0usize, 0.0f64, 0.0f64);
    while i < na && j < nb {
        let qa = (i + 1) as f64 / na as f64;
        let qb = (j + 1) as f64 / nb as f64;
        let next = qa.min(qb);
        let d = av - bv;
        sum += d * d * (next - q);
        q = next;
        if qa <= next {
            i += 1;
            av = ai.next().unwrap_or(f64::NAN);
        }
        if qb <= next {
            j += 1;
            bv = bi.next().unwrap_or(f64::NAN);
        }
    }
    sum.sqrt()
}

/// Per-class accumulator.
#[derive(Default, Clone)]
struct Acc {
    count: usize,
    measured: f64,
    simulated: f64,
    hits: usize,
    partial: usize,
    misses: usize,
}

/// What a replay gives: the measured and simulated times of the requests
/// (ms), the model's cache outcomes, and the per-class rows.
type Replayed = (Sample, Sample, CacheCounts, Vec<ClassRow>);

/// Replays a validation trace (read line by line) against `disk`, named
/// `disk_name`, and compares. Requests beyond the disk are errors naming
/// the trace line.
pub fn validate_reader(
    disk: &mut dyn Disk,
    trace: impl std::io::BufRead,
    trace_name: &str,
    per_request: Option<&mut dyn Write>,
) -> Result<Replayed> {
    let cap = disk.capacity_sectors();
    let mut measured = Sample::new();
    let mut simulated = Sample::new();
    let mut cache = CacheCounts::default();
    let mut acc: [[Acc; 4]; 2] = Default::default();
    let mut now = SimTime::ZERO;
    let mut out = per_request;
    if let Some(w) = out.as_deref_mut() {
        writeln!(w, "index,dir,outcome,lbn,blocks,measured_ms,simulated_ms,model_cache")
            .map_err(|e| Error::Spec { file: "per-request CSV".into(), message: e.to_string() })?;
    }
    let mut reader = vt::RecordReader::new(trace, trace_name);
    let mut i = 0usize;
    while let Some(r) = reader.next_record()? {
        if r.lbn >= cap || r.blocks as u64 > cap - r.lbn {
            return Err(Error::Line {
                file: trace_name.to_string(),
                line: r.line,
                message: format!(
                    "LBN {} + {} blocks ends past the disk's {cap} sectors ({})",
                    r.lbn,
                    r.blocks,
                    disk.describe()
                ),
            });
        }
        let s = disk.service(&request(i, &r, now), now);
        now += s.total_ns + (r.delay_us * 1e3).round() as u64;
        let (m, t) = (r.access_us / 1e3, s.total_ns as f64 / 1e6);
        measured.push(m);
        simulated.push(t);
        match (r.write, s.cache) {
            (false, CacheOutcome::Hit) => cache.read_hits += 1,
            (false, CacheOutcome::Partial) => cache.read_partial_hits += 1,
            (false, CacheOutcome::Miss) => cache.read_misses += 1,
            (true, CacheOutcome::Miss) => cache.writes_to_media += 1,
            (true, _) => cache.writes_buffered += 1,
        }
        let a = &mut acc[r.write as usize][r.outcome as usize];
        a.count += 1;
        a.measured += m;
        a.simulated += t;
        match s.cache {
            CacheOutcome::Hit => a.hits += 1,
            CacheOutcome::Partial => a.partial += 1,
            CacheOutcome::Miss => a.misses += 1,
        }
        if let Some(w) = out.as_deref_mut() {
            let c = match s.cache {
                CacheOutcome::Hit => "hit",
                CacheOutcome::Partial => "partial",
                CacheOutcome::Miss => "miss",
            };
            writeln!(w, "{i},{},{},{},{},{m:.6},{t:.6},{c}", if r.write { "W" } else { "R" }, r.outcome.name(), r.lbn, r.blocks)
                .map_err(|e| Error::Spec { file: "per-request CSV".into(), message: e.to_string() })?;
        }
        i += 1;
    }
    if measured.is_empty() {
        return Err(Error::Spec { file: trace_name.to_string(), message: "the trace has no requests".into() });
    }
    let mut classes = Vec::new();
    for (w, row) in acc.iter().enumerate() {
        for outcome in [Outcome::Hit, Outcome::Miss, Outcome::Doub, Outcome::Trip] {
            let a = &row[outcome as usize];
            if a.count == 0 {
                continue;
            }
            let n = a.count as f64;
            classes.push(ClassRow {
                class: format!("{} {}", if w == 1 { "W" } else { "R" }, outcome.name()),
                count: a.count,
                measured_mean_ms: a.measured / n,
                simulated_mean_ms: a.simulated / n,
                model_hits: a.hits,
                model_partial_hits: a.partial,
                model_misses: a.misses,
            });
        }
    }
    Ok((measured, simulated, cache, classes))
}

/// Loads a DiskSim parameter file and a validation trace, and compares.
pub fn validate_files(diskspecs: &Path, trace: &Path, opts: &Options) -> Result<Report> {
    let dopts = diskspecs::Options { zero_latency: opts.zero_latency };
    let (params, build) = diskspecs::load_with_report(diskspecs, &dopts)?;
    let disk_name = params.name.clone();
    let mut disk = Hdd::new(params)?;
    // Read as it is replayed: the trace is never held whole.
    let file = crate::input::open_text_file(trace, vt::MAX_TRACE_FILE)?;
    let trace_name = trace.display().to_string();
    let mut csv = match &opts.per_request {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p).map_err(|e| Error::Io { path: p.clone(), source: e })?,
        )),
        None => None,
    };
    let (mut measured, mut simulated, cache, classes) = validate_reader(
        &mut disk,
        std::io::BufReader::with_capacity(1 << 16, file),
        &trace_name,
        csv.as_mut().map(|w| w as &mut dyn Write),
    )?;
    if let (Some(mut w), Some(p)) = (csv, &opts.per_request) {
        w.flush().map_err(|e| Error::Io { path: p.clone(), source: e })?;
    }
    let m = stats(&mut measured);
    let s = stats(&mut simulated);
    let d = disksim_demerit(&measured, &simulated);
    let exact = demerit(&measured, &simulated);
    Ok(Report {
        diskspecs: diskspecs.display().to_string(),
        disk: disk.describe(),
        disksim_demerit_ms: DISKSIM_DEMERITS.iter().find(|(n, _)| *n == disk_name).map(|x| x.1),
        disk_name,
        build,
        trace: trace_name,
        requests: measured.len(),
        demerit_percent_of_mean: 100.0 * d / m.mean_ms,
        measured: m,
        simulated: s,
        demerit_ms: d,
        demerit_exact_ms: exact,
        cache,
        classes,
        zero_latency: opts.zero_latency,
        rounded_to_ns: measured.grid_ns().max(simulated.grid_ns()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demerit_of_identical_and_shifted_samples() {
        let a = [1.0, 2.0, 3.0, 4.0];
        let d = |a: &[f64], b: &[f64]| demerit(&Sample::of(a), &Sample::of(b));
        assert_eq!(d(&a, &a), 0.0);
        let b = [1.5, 2.5, 3.5, 4.5];
        assert!((d(&a, &b) - 0.5).abs() < 1e-12);
        // Unequal sizes: [1, 3] against [1, 1, 3, 3] is the same CDF.
        assert!(d(&[1.0, 3.0], &[1.0, 1.0, 3.0, 3.0]).abs() < 1e-12);
        // One step off over a quarter of the mass: sqrt(0.25 · 4) = 1.
        assert!((d(&[0.0, 0.0, 0.0, 2.0], &[0.0, 0.0, 0.0, 4.0]) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn disksim_demerit_bins_like_disksim() {
        // DiskSim's buckets: 0, 1, 2, ... µs, widening by 1% from 100 µs.
        let s = disksim_bucket_starts();
        assert_eq!(&s[..3], &[0, 1, 2]);
        assert_eq!((s[100], s[101], s[102]), (100, 102, 104));
        // Identical samples: 0. A sample shifted by 1 ms, values spread over
        // 10..20 ms: close to 1 (the 1% buckets blur it a little).
        let a: Vec<f64> = (0..1000).map(|i| 10.0 + i as f64 / 100.0).collect();
        let dd = |a: &[f64], b: &[f64]| disksim_demerit(&Sample::of(a), &Sample::of(b));
        assert_eq!(dd(&a, &a), 0.0);
        let b: Vec<f64> = a.iter().map(|x| x + 1.0).collect();
        let d = dd(&a, &b);
        assert!((d - 1.0).abs() < 0.02, "{d}");
        // Values within one bucket are one point of the CDF: two samples
        // that differ only inside buckets have demerit 0.
        assert_eq!(dd(&[15.0001, 15.0002], &[15.0002, 15.0001]), 0.0);
    }

    /// The figures of the old way, from sorted arrays of every value, to
    /// check the sample's against bit for bit.
    fn stats_of_sorted(v: &mut [f64]) -> Stats {
        v.sort_by(f64::total_cmp);
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
        let pct = |p: f64| v[(((p / 100.0) * n).ceil() as usize).clamp(1, v.len()) - 1];
        Stats { mean_ms: mean, sd_ms: var.sqrt(), p10_ms: pct(10.0), p50_ms: pct(50.0), p90_ms: pct(90.0), p99_ms: pct(99.0) }
    }

    fn demerit_of_sorted(a: &[f64], b: &[f64]) -> f64 {
        let (na, nb) = (a.len(), b.len());
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

    #[test]
    fn the_sample_gives_the_sorted_arrays_figures_bit_for_bit() {
        // Values with many repeats and many distinct ones, in an order far
        // from sorted, over several merges.
        let mut rng = crate::rng::SimRng::new(7);
        for n in [1usize, 2, 3, 1000, 3 * PENDING + 17] {
            let mut a: Vec<f64> = (0..n).map(|_| (rng.below(40_000) as f64) / 1e3).collect();
            let mut b: Vec<f64> = (0..n + n / 3).map(|_| rng.below(30_000_000) as f64 / 1e6).collect();
            let (mut sa, mut sb) = (Sample::of(&a), Sample::of(&b));
            assert_eq!(sa.len(), a.len());
            let (ta, tb) = (stats(&mut sa), stats(&mut sb));
            let (oa, ob) = (stats_of_sorted(&mut a), stats_of_sorted(&mut b));
            for (x, y) in [(ta, oa), (tb, ob)] {
                assert_eq!(x.mean_ms.to_bits(), y.mean_ms.to_bits(), "{n}");
                assert_eq!(x.sd_ms.to_bits(), y.sd_ms.to_bits(), "{n}");
                assert_eq!((x.p10_ms, x.p50_ms, x.p90_ms, x.p99_ms), (y.p10_ms, y.p50_ms, y.p90_ms, y.p99_ms));
            }
            assert_eq!(demerit(&sa, &sb).to_bits(), demerit_of_sorted(&a, &b).to_bits(), "{n}");
            assert!(sa.distinct() <= 40_000);
        }
    }

    #[test]
    fn a_sample_of_too_many_distinct_times_is_rounded_and_bounded() {
        // 3 · MAX_DISTINCT different times between 0 and ~40 ms: held on a
        // grid, within the bound, every value counted, the figures close.
        let n = 3 * MAX_DISTINCT;
        let mut v: Vec<f64> = (0..n).map(|i| ((i * 7919) % n) as f64 * 40.0 / n as f64).collect();
        let mut s = Sample::of(&v);
        assert!(s.distinct() <= MAX_DISTINCT, "{}", s.distinct());
        assert_eq!(s.len(), n);
        let g = s.grid_ns().expect("rounded");
        let (a, b) = (stats(&mut s), stats_of_sorted(&mut v));
        let tol = g as f64 / 1e6;
        assert!((a.mean_ms - b.mean_ms).abs() <= tol && (a.p50_ms - b.p50_ms).abs() <= tol, "{a:?} {b:?} grid {g}");
        // Few distinct values: exact, no grid.
        assert_eq!(Sample::of(&[1.0, 2.0, 1.0]).grid_ns(), None);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<f64> = (1..=100).rev().map(f64::from).collect();
        let s = stats(&mut Sample::of(&v));
        assert_eq!((s.p10_ms, s.p50_ms, s.p90_ms, s.p99_ms), (10.0, 50.0, 90.0, 99.0));
        assert!((s.mean_ms - 50.5).abs() < 1e-12);
    }
}

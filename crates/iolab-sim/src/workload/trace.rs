//! Trace replay (`kind = "trace"`): the requests of a block trace (see
//! `crate::trace` for the formats), issued by one process per stream (pid,
//! disk, ASU or device, as the format has it) or by a single process.
//!
//! - `mode = "open"`: each request is issued at its recorded time (divided
//!   by `speed`), whether or not earlier ones have completed: the trace's
//!   own arrival pattern, as a replay tool like `btreplay` does it.
//! - `mode = "closed"`: a stream issues its next request only after the
//!   previous one completed, and no earlier than the recorded gap after the
//!   previous issue; so a slower disk stretches the stream, as it would
//!   have slowed the process that made it. Every request is waited for,
//!   writes included.
//!
//! Sectors beyond the simulated disk are an error naming the line, unless
//! `fit = "wrap"` (modulo the disk) or `fit = "scale"` (positions scaled
//! so the trace's highest sector lands at the disk's end).
//!
//! A relative `file` in a spec file is relative to the spec's directory
//! (the experiment resolves it before building the workload).

use super::{BuiltWorkload, IoOp, Process, ProcessEntry, Step};
use crate::error::{Error, Result};
use crate::limits::MAX_SIM_NS;
use crate::request::Request;
use crate::rng::SimRng;
use crate::time::SimTime;
use crate::trace::{self, ParseOptions, ReadControl, Trace, TraceFormat};
use std::sync::atomic::{AtomicBool, AtomicU64};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReplayMode {
    #[default]
    Open,
    Closed,
}

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fit {
    #[default]
    Error,
    Wrap,
    Scale,
}

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Streams {
    /// One process (and class) per stream key.
    #[default]
    Each,
    /// Every request from one process.
    One,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    pub file: String,
    pub format: TraceFormat,
    #[serde(default)]
    pub mode: ReplayMode,
    /// Time scale: 2 replays twice as fast.
    #[serde(default = "one")]
    pub speed: f64,
    #[serde(default)]
    pub fit: Fit,
    #[serde(default)]
    pub streams: Streams,
    /// Replay only the first this many requests of the file (the file is
    /// read no further; they are then replayed in time order).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_records: Option<u64>,
    /// blkparse: the action taken as the issue (`Q` or `D`).
    #[serde(default = "queue_action")]
    pub blkparse_action: String,
    /// Each request is issued later than recorded by a delay drawn
    /// uniformly from [0, jitter_ms) ms with the run's seed: the timing
    /// noise between two runs of the same program, so that seeds give
    /// different interleavings. 0 (default): a replay is the same on
    /// every seed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub jitter_ms: f64,
}

fn is_zero(v: &f64) -> bool {
    *v == 0.0
}

/// The largest jitter: a minute is far beyond timing noise.
const MAX_JITTER_MS: f64 = 60_000.0;

fn one() -> f64 {
    1.0
}

/// The slowest and fastest replay: a million times either way turns a
/// trace's microseconds into seconds or its hours into milliseconds;
/// beyond that the times are no longer the trace's.
const MIN_SPEED: f64 = 1e-6;
const MAX_SPEED: f64 = 1e6;

fn queue_action() -> String {
    "Q".into()
}

/// One request to replay at `time_ns` after the start.
#[derive(Copy, Clone, Debug)]
struct Timed {
    time_ns: u64,
    op: IoOp,
}

pub struct ReplayProcess {
    class: u32,
    mode: ReplayMode,
    records: Vec<Timed>,
    next: usize,
    in_flight: u32,
    /// When the previous request was issued in the simulation (closed).
    last_issue: SimTime,
    /// `jitter_ms` in ns (0: none).
    jitter_ns: u64,
    /// The delay drawn for record `next`, drawn once when first asked.
    drawn: Option<u64>,
}

impl Process for ReplayProcess {
    fn class(&self) -> u32 {
        self.class
    }

    fn next(&mut self, now: SimTime, rng: &mut SimRng) -> Step {
        let Some(r) = self.records.get(self.next).copied() else {
            return if self.in_flight > 0 { Step::Wait } else { Step::Exit };
        };
        if self.mode == ReplayMode::Closed && self.in_flight > 0 {
            return Step::Wait;
        }
        let jitter = self.jitter_ns;
        let delay = *self.drawn.get_or_insert_with(|| if jitter == 0 { 0 } else { rng.below(jitter) });
        let recorded = match self.mode {
            ReplayMode::Closed if self.next > 0 => {
                self.last_issue + (r.time_ns - self.records[self.next - 1].time_ns)
            }
            _ => SimTime(r.time_ns),
        };
        let due = recorded + delay;
        if due > now {
            return Step::Think(due.since(now));
        }
        self.drawn = None;
        self.next += 1;
        self.in_flight += 1;
        self.last_issue = now;
        Step::Issue(r.op)
    }

    fn completed(&mut self, _rq: &Request, _now: SimTime) {
        self.in_flight -= 1;
    }
}

/// What a stream key is called in class names.
fn stream_word(format: TraceFormat) -> &'static str {
    match format {
        TraceFormat::Blkparse | TraceFormat::Fiu => "pid",
        TraceFormat::Msr => "disk",
        TraceFormat::Spc => "asu",
        TraceFormat::Disksim => "dev",
    }
}

pub fn build(spec: &TraceSpec, capacity: u64) -> Result<BuiltWorkload> {
    let (bytes, cancel) = (AtomicU64::new(0), AtomicBool::new(false));
    let trace = load(spec, ReadControl { bytes: &bytes, cancel: &cancel })?;
    replay(spec, &trace, capacity)
}

/// Reads the trace file a spec names (up to its `max_records`): done once
/// per experiment, which replays it in every job.
pub fn load(spec: &TraceSpec, ctl: ReadControl) -> Result<Trace> {
    check(spec)?;
    if spec.max_records == Some(0) {
        return Err(Error::invalid("workload.max_records", "must be at least 1"));
    }
    let opts = ParseOptions { blkparse_action: spec.blkparse_action.clone(), max_records: spec.max_records };
    trace::read_file_with(Path::new(&spec.file), spec.format, &opts, ctl)
}

/// The replay's own fields (the file's are checked as it is read).
fn check(spec: &TraceSpec) -> Result<()> {
    if !(spec.speed.is_finite() && (MIN_SPEED..=MAX_SPEED).contains(&spec.speed)) {
        return Err(Error::invalid(
            "workload.speed",
            format!("must be within [{MIN_SPEED:e}, {MAX_SPEED:e}] (a time scale), got {}", crate::limits::show(spec.speed)),
        ));
    }
    if !(spec.jitter_ms.is_finite() && (0.0..=MAX_JITTER_MS).contains(&spec.jitter_ms)) {
        return Err(Error::invalid(
            "workload.jitter_ms",
            format!("must be within [0, {MAX_JITTER_MS}] ms, got {}", crate::limits::show(spec.jitter_ms)),
        ));
    }
    Ok(())
}

/// The processes that replay a parsed trace.
pub fn replay(spec: &TraceSpec, trace: &Trace, capacity: u64) -> Result<BuiltWorkload> {
    check(spec)?;
    let top = trace.records.iter().map(|r| r.sector + r.nr_sectors as u64).max().unwrap_or(0);
    let mut by_stream: BTreeMap<u32, Vec<Timed>> = BTreeMap::new();
    for r in &trace.records {
        let n = r.nr_sectors as u64;
        let at = |m: &str| Error::Line { file: trace.name.clone(), line: r.line as usize, message: m.to_string() };
        if n > capacity {
            return Err(at(&format!("a request of {n} sectors is larger than the disk ({capacity} sectors)")));
        }
        let sector = match spec.fit {
            _ if r.sector + n <= capacity => r.sector,
            Fit::Error => {
                return Err(at(&format!(
                    "sectors {}+{n} are beyond the disk's {capacity}; set fit = \"wrap\" or \"scale\"",
                    r.sector
                )))
            }
            Fit::Wrap => r.sector % (capacity - n + 1),
            Fit::Scale => ((r.sector as u128 * capacity as u128 / top as u128) as u64).min(capacity - n),
        };
        let op = IoOp { sector, nr_sectors: r.nr_sectors, dir: r.dir, sync: r.sync };
        let key = if spec.streams == Streams::One { 0 } else { r.stream };
        let time_ns = (r.time_ns as f64 / spec.speed).round();
        if time_ns > MAX_SIM_NS as f64 {
            return Err(at(&format!(
                "at speed {} this request comes {:e} s after the first, beyond the simulated-time horizon of {:e} s",
                spec.speed,
                time_ns / 1e9,
                MAX_SIM_NS as f64 / 1e9
            )));
        }
        let time_ns = time_ns as u64;
        by_stream.entry(key).or_default().push(Timed { time_ns, op });
    }
    let mut classes = Vec::with_capacity(by_stream.len());
    let mut processes = Vec::with_capacity(by_stream.len());
    for (i, (key, records)) in by_stream.into_iter().enumerate() {
        let name = match spec.streams {
            Streams::One => "trace".to_string(),
            Streams::Each => format!("{}.{key}", stream_word(spec.format)),
        };
        let p = ReplayProcess {
            class: i as u32,
            mode: spec.mode,
            records,
            next: 0,
            in_flight: 0,
            last_issue: SimTime::ZERO,
            jitter_ns: crate::time::ms_to_ns(spec.jitter_ms),
            drawn: None,
        };
        classes.push(name.clone());
        processes.push(ProcessEntry { name, start: SimTime::ZERO, process: Box::new(p) as Box<dyn Process> });
    }
    Ok(BuiltWorkload { classes, processes, page_cache: false })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::{self, DiskSpec};
    use crate::engine::{self, EngineConfig, Observer, RunControl};

    fn spec(file: &str, format: TraceFormat) -> TraceSpec {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/traces/");
        TraceSpec {
            file: format!("{dir}{file}"),
            format,
            mode: ReplayMode::Open,
            speed: 1.0,
            fit: Fit::Error,
            streams: Streams::Each,
            max_records: None,
            blkparse_action: "Q".into(),
            jitter_ms: 0.0,
        }
    }

    /// Issue times of every request, by process.
    #[derive(Default)]
    struct Issues(Vec<(u32, SimTime, u64)>);
    impl Observer for Issues {
        fn queued(&mut self, rq: &Request, now: SimTime) {
            self.0.push((rq.pid, now, rq.sector));
        }
    }

    fn run(s: &TraceSpec, fixed_ms: f64) -> (Issues, SimTime) {
        run_seed(s, fixed_ms, 1)
    }

    fn run_seed(s: &TraceSpec, fixed_ms: f64, seed: u64) -> (Issues, SimTime) {
        let d = DiskSpec { preset: Some("fixed".into()), fixed_ms: Some(fixed_ms), ..DiskSpec::default() };
        let disk = disk::build(&d, Path::new(".")).unwrap();
        let built = build(s, disk.capacity_sectors()).unwrap();
        let ctx = crate::sched::SchedContext::new(disk.position_cost());
        let (elevator, _) = crate::sched::build("noop", &BTreeMap::new(), &ctx).unwrap();
        let cfg =
            EngineConfig { queue: Default::default(), vm: Default::default(), queue_depth: 1, device_order: d.device_order, max_time: None, max_requests: None, seed, cpus: None };
        let mut seen = Issues::default();
        let out = engine::run_observed(disk, elevator, built, &cfg, &RunControl::default(), &mut seen).unwrap();
        (seen, out.end)
    }

    #[test]
    fn open_loop_issues_at_the_recorded_times() {
        let s = spec("sample.fiu.txt", TraceFormat::Fiu);
        let t = trace::read_file(Path::new(&s.file), s.format, &ParseOptions::default()).unwrap();
        let (seen, _) = run(&s, 50.0); // a slow disk does not delay issues
        let mut want: Vec<u64> = t.records.iter().map(|r| r.time_ns).collect();
        let mut got: Vec<u64> = seen.0.iter().map(|x| x.1 .0).collect();
        want.sort_unstable();
        got.sort_unstable();
        assert_eq!(got, want);
        let w = build(&s, 1 << 31).unwrap();
        assert_eq!(w.classes, ["pid.1201", "pid.1202"]);
    }

    #[test]
    fn jitter_delays_each_issue_by_a_seeded_amount_below_it() {
        let mut s = spec("sample.fiu.txt", TraceFormat::Fiu);
        let t = trace::read_file(Path::new(&s.file), s.format, &ParseOptions::default()).unwrap();
        let times = |seen: &Issues| {
            let mut v: Vec<(u64, u64)> = seen.0.iter().map(|x| (x.2, x.1 .0)).collect();
            v.sort_unstable();
            v
        };
        // Without jitter, every seed replays the same times.
        assert_eq!(times(&run_seed(&s, 0.5, 1).0), times(&run_seed(&s, 0.5, 2).0));
        s.jitter_ms = 2.0;
        let a = times(&run_seed(&s, 0.5, 1).0);
        let b = times(&run_seed(&s, 0.5, 2).0);
        assert_ne!(a, b, "two seeds jitter differently");
        assert_eq!(a, times(&run_seed(&s, 0.5, 1).0), "one seed jitters the same way twice");
        let mut recorded: Vec<(u64, u64)> = t.records.iter().map(|r| (r.sector, r.time_ns)).collect();
        recorded.sort_unstable();
        for ((sector, want), (got_sector, got)) in recorded.iter().zip(&a) {
            assert_eq!(sector, got_sector);
            assert!(*got >= *want && *got < want + 2_000_000, "issued at {got}, recorded {want}");
        }
        let err = build(&TraceSpec { jitter_ms: -1.0, ..s }, 1 << 31).err().unwrap().to_string();
        assert!(err.contains("workload.jitter_ms"), "{err}");
    }

    #[test]
    fn closed_loop_waits_for_each_request() {
        // The smallest gap between two issues of one stream.
        let min_gap = |seen: &Issues| {
            let mut last: BTreeMap<u32, SimTime> = BTreeMap::new();
            seen.0.iter().filter_map(|&(pid, t, _)| last.insert(pid, t).map(|p| t.since(p))).min().unwrap()
        };
        let mut s = spec("sample.disksim.ascii", TraceFormat::Disksim);
        let (open, _) = run(&s, 20.0);
        assert!(min_gap(&open) < 20_000_000, "open loop issues while a request is in flight");
        s.mode = ReplayMode::Closed;
        let (closed, _) = run(&s, 20.0);
        assert!(min_gap(&closed) >= 20_000_000, "closed loop waits for each 20 ms request");
        s.streams = Streams::One;
        s.speed = 2.0;
        assert_eq!(build(&s, 1 << 31).unwrap().classes, ["trace"]);
    }

    #[test]
    fn sectors_beyond_the_disk() {
        let s = spec("sample.spc.csv", TraceFormat::Spc);
        let err = build(&s, 100_000).err().unwrap().to_string();
        assert!(err.contains("sample.spc.csv:") && err.contains("fit = \"wrap\""), "{err}");
        for fit in [Fit::Wrap, Fit::Scale] {
            let w = build(&TraceSpec { fit, ..s.clone() }, 100_000).unwrap();
            assert!(!w.processes.is_empty());
        }
        let err = build(&TraceSpec { speed: 0.0, ..s.clone() }, 1 << 31).err().unwrap().to_string();
        assert!(err.starts_with("workload.speed"), "{err}");
        let err = build(&TraceSpec { file: "/nonexistent/t.csv".into(), ..s }, 1 << 31).err().unwrap().to_string();
        assert!(err.starts_with("/nonexistent/t.csv"), "{err}");
    }
}

//! What a run measured: throughput, latency distributions (overall, per
//! class, per process), seeks, disk busy time and anticipation accounting.
//!
//! Latencies are recorded in ns in HdrHistogram-style buckets (3
//! significant digits, [`crate::histogram`]), so percentiles are exact to
//! 0.1% at any scale, and each histogram holds only the buckets it has
//! used. MB means 10^6 bytes.

use crate::disk::{CacheOutcome, Service};
use crate::request::{Dir, Request};
use crate::sched::{AnticipationStats, WAIT_BIN_NS};
use crate::time::{ns_to_ms, SimTime};
use crate::histogram::Histogram;
use serde::Serialize;
use std::collections::BTreeMap;

/// Latency and volume of one set of requests.
#[derive(Clone)]
struct Tally {
    hist: Histogram,
    sum_ns: u128,
    bytes: u64,
}

impl Tally {
    fn new() -> Tally {
        Tally { hist: Histogram::new(), sum_ns: 0, bytes: 0 }
    }
    fn record(&mut self, latency_ns: u64, bytes: u64) {
        self.hist.record(latency_ns);
        self.sum_ns += latency_ns as u128;
        self.bytes += bytes;
    }
    /// The tally of everything in `parts` (exact: counts, sums and
    /// histogram buckets add up).
    fn sum<'a>(parts: impl IntoIterator<Item = &'a Tally> + Clone) -> Tally {
        Tally {
            hist: Histogram::sum(parts.clone().into_iter().map(|t| &t.hist)),
            sum_ns: parts.clone().into_iter().map(|t| t.sum_ns).sum(),
            bytes: parts.into_iter().map(|t| t.bytes).sum(),
        }
    }
    fn summary(&self) -> LatencySummary {
        let n = self.hist.len();
        if n == 0 {
            return LatencySummary::default();
        }
        let q = |p: f64| ns_to_ms(self.hist.value_at_quantile(p));
        LatencySummary {
            mean: self.sum_ns as f64 / n as f64 / 1e6,
            p50: q(0.50),
            p95: q(0.95),
            p99: q(0.99),
            max: ns_to_ms(self.hist.max()),
        }
    }
    fn group(&self, name: &str, processes: u32, elapsed_ns: u64, calls: &Tally) -> GroupResult {
        let n = self.hist.len();
        GroupResult {
            name: name.to_string(),
            processes,
            requests: n,
            throughput_mb_s: rate(self.bytes as f64 / 1e6, elapsed_ns),
            iops: rate(n as f64, elapsed_ns),
            latency_ms: self.summary(),
            buffered: calls.buffered(elapsed_ns),
        }
    }
    /// As buffered calls: `None` when there were none.
    fn buffered(&self, elapsed_ns: u64) -> Option<BufferedResult> {
        let n = self.hist.len();
        (n > 0).then(|| BufferedResult {
            calls: n,
            calls_per_s: rate(n as f64, elapsed_ns),
            throughput_mb_s: rate(self.bytes as f64 / 1e6, elapsed_ns),
            latency_ms: self.summary(),
        })
    }
}

fn rate(amount: f64, elapsed_ns: u64) -> f64 {
    if elapsed_ns == 0 {
        0.0
    } else {
        amount / (elapsed_ns as f64 / 1e9)
    }
}

/// Collects measurements during a run. Called by the engine only.
///
/// A completion is recorded once, in its process's tally for its data
/// direction; the overall, per-class, per-process and read-only figures
/// are sums of those, made at the end ([`Collector::finish`]). Sums of
/// tallies are exact, so this gives the numbers recording each completion
/// into every set would give, for a quarter of the work per completion.
pub struct Collector {
    /// Per process, reads (0) and writes (1).
    per_process: Vec<[Tally; 2]>,
    /// Per process, its buffered read(2)/write(2) calls: they are served
    /// by the page cache and are not disk requests.
    calls: Vec<Tally>,
    process_class: Vec<u32>,
    classes: usize,
    read_bytes: u64,
    write_bytes: u64,
    pub(crate) inserted: u64,
    /// Bios that joined a queued request instead of making one.
    pub(crate) merged: u64,
    /// Queued requests that joined another (`attempt_merge`).
    pub(crate) absorbed: u64,
    pub(crate) dispatched: u64,
    pub(crate) completed: u64,
    busy_ns: u64,
    /// End of the latest service interval counted in `busy_ns`.
    busy_until: SimTime,
    seek_cylinders: u64,
    seek_ns: u64,
    seeks: u64,
    cache_hits: u64,
    cache_partial: u64,
}

impl Collector {
    pub fn new(process_class: Vec<u32>, classes: usize) -> Collector {
        Collector {
            per_process: vec![[Tally::new(), Tally::new()]; process_class.len()],
            calls: vec![Tally::new(); process_class.len()],
            classes,
            process_class,
            read_bytes: 0,
            write_bytes: 0,
            inserted: 0,
            merged: 0,
            absorbed: 0,
            dispatched: 0,
            completed: 0,
            busy_ns: 0,
            busy_until: SimTime::ZERO,
            seek_cylinders: 0,
            seek_ns: 0,
            seeks: 0,
            cache_hits: 0,
            cache_partial: 0,
        }
    }

    /// Requests completed so far.
    pub fn completed(&self) -> u64 {
        self.completed
    }

    /// The device started serving a request at `now`. Busy time is the
    /// union of service intervals, so a device serving several requests at
    /// once (an SSD) is busy at most 100% of the time.
    pub fn service_started(&mut self, s: &Service, now: SimTime) {
        let done = now + s.total_ns;
        self.busy_ns += done.since(now.max(self.busy_until));
        self.busy_until = self.busy_until.max(done);
        self.seek_ns += s.seek_ns;
        self.seek_cylinders += s.seek_cylinders;
        self.seeks += (s.seek_cylinders > 0) as u64;
        match s.cache {
            CacheOutcome::Hit => self.cache_hits += 1,
            CacheOutcome::Partial => self.cache_partial += 1,
            CacheOutcome::Miss => {}
        }
    }

    /// The device completed a request at `now`.
    pub fn request_completed(&mut self) {
        self.completed += 1;
    }

    /// One bio of a completed request: its owner waited from its
    /// submission (`rq.arrival`) to `now`. Latency and volume are counted
    /// per bio, what each process asked for; a request carries one bio
    /// unless bios were merged into it.
    pub fn bio_completed(&mut self, rq: &Request, now: SimTime) {
        let latency = now.since(rq.arrival);
        let bytes = rq.bytes();
        let d = match rq.dir {
            Dir::Read => {
                self.read_bytes += bytes;
                0
            }
            Dir::Write => {
                self.write_bytes += bytes;
                1
            }
        };
        self.per_process[rq.pid as usize][d].record(latency, bytes);
    }

    /// A buffered call of `pid` for `bytes` returned after `latency_ns`
    /// (from the call to its return, the copy included).
    pub fn buffered_call(&mut self, pid: crate::request::ProcessId, bytes: u64, latency_ns: u64) {
        self.calls[pid as usize].record(latency_ns, bytes);
    }

    /// Busy time already committed beyond `end` (a request in service when
    /// the run stopped) is not counted.
    pub fn finish(&self, end: SimTime, overhang_ns: u64, header: RunHeader, classes: &[String], process_names: &[String], antic: Option<AnticipationStats>) -> RunResult {
        let elapsed = end.ns();
        let busy = self.busy_ns.saturating_sub(overhang_ns).min(elapsed);
        let mut class_sizes = vec![0u32; classes.len()];
        for &c in &self.process_class {
            class_sizes[c as usize] += 1;
        }
        let a = antic.unwrap_or_default();
        let all = || self.per_process.iter().flatten();
        let overall = Tally::sum(all());
        let reads = Tally::sum(self.per_process.iter().map(|p| &p[0]));
        let mut members = vec![Vec::new(); classes.len()];
        for (p, &c) in self.process_class.iter().enumerate() {
            members[c as usize].push(p);
        }
        let class = |c: usize| Tally::sum(members[c].iter().flat_map(|&p| &self.per_process[p]));
        let class_calls = |c: usize| Tally::sum(members[c].iter().map(|&p| &self.calls[p]));
        debug_assert_eq!(classes.len(), self.classes);
        RunResult {
            scheduler: header.scheduler,
            tunables: header.tunables,
            seed: header.seed,
            elapsed_ms: ns_to_ms(elapsed),
            requests: RequestCounts {
                inserted: self.inserted,
                merged: self.merged,
                absorbed: self.absorbed,
                dispatched: self.dispatched,
                completed: self.completed,
                unfinished: self.inserted - self.absorbed - self.completed,
            },
            throughput_mb_s: rate((self.read_bytes + self.write_bytes) as f64 / 1e6, elapsed),
            read_mb_s: rate(self.read_bytes as f64 / 1e6, elapsed),
            write_mb_s: rate(self.write_bytes as f64 / 1e6, elapsed),
            iops: rate(self.completed as f64, elapsed),
            latency_ms: overall.summary(),
            read_latency_ms: reads.summary(),
            buffered: Tally::sum(&self.calls).buffered(elapsed),
            seek: SeekSummary {
                seeks: self.seeks,
                mean_cylinders: if self.dispatched == 0 { 0.0 } else { self.seek_cylinders as f64 / self.dispatched as f64 },
                mean_seek_ms: if self.dispatched == 0 { 0.0 } else { ns_to_ms(self.seek_ns) / self.dispatched as f64 },
            },
            disk: DiskSummary {
                busy_ms: ns_to_ms(busy),
                idle_ms: ns_to_ms(elapsed - busy),
                utilization: if elapsed == 0 { 0.0 } else { busy as f64 / elapsed as f64 },
                cache_hits: self.cache_hits,
                cache_partial_hits: self.cache_partial,
            },
            anticipates: antic.is_some(),
            anticipation: AnticipationSummary {
                started: a.started,
                succeeded: a.succeeded,
                failed: a.failed,
                success_wait_ms: ns_to_ms(a.success_wait_ns),
                failure_wait_ms: ns_to_ms(a.failure_wait_ns),
                deceptive_idleness_ms: a.deceptive_idleness_ms(),
                mean_success_wait_ms: a.mean_success_wait_ms(),
                success_wait_bin_ms: ns_to_ms(WAIT_BIN_NS),
                success_wait_bins: a.success_wait_bins.to_vec(),
            },
            per_class: classes
                .iter()
                .enumerate()
                .map(|(i, name)| class(i).group(name, class_sizes[i], elapsed, &class_calls(i)))
                .collect(),
            per_process: process_names
                .iter()
                .enumerate()
                .map(|(i, name)| Tally::sum(&self.per_process[i]).group(name, 1, elapsed, &self.calls[i]))
                .collect(),
            phases: Vec::new(),
            page_cache: None,
            cpu: None,
            elevator_messages: Vec::new(),
            elevator_messages_dropped: 0,
        }
    }
}

/// Identity of a run, carried into its result.
pub struct RunHeader {
    pub scheduler: String,
    pub tunables: BTreeMap<String, f64>,
    pub seed: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub max: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct GroupResult {
    pub name: String,
    pub processes: u32,
    pub requests: u64,
    pub throughput_mb_s: f64,
    pub iops: f64,
    pub latency_ms: LatencySummary,
    /// Its buffered calls (groups that made any).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffered: Option<BufferedResult>,
}

/// Buffered `read(2)`/`write(2)` calls: what the processes asked of the
/// page cache, whatever reached the disk. A call that finds its pages
/// cached (or dirties them under the limits) costs only its copy time
/// (`vm.copy_us_per_page`); the requests it causes, if any, are counted
/// with the disk requests (read-ahead, `readpage`, write-back).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BufferedResult {
    /// Calls that had their pages during the run (each is counted then,
    /// with its copy time: a process's last copy may end after the run).
    pub calls: u64,
    pub calls_per_s: f64,
    /// Bytes the calls asked for, per second (MB = 10^6 bytes).
    pub throughput_mb_s: f64,
    /// From the call to its return, the copy included.
    pub latency_ms: LatencySummary,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RequestCounts {
    /// Requests made (one per bio that did not merge).
    pub inserted: u64,
    /// Bios merged into a queued request.
    pub merged: u64,
    /// Queued requests merged into another.
    pub absorbed: u64,
    pub dispatched: u64,
    pub completed: u64,
    /// Still queued or in service when the run stopped.
    pub unfinished: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SeekSummary {
    /// Requests that moved the arm.
    pub seeks: u64,
    /// Cylinders moved per dispatched request.
    pub mean_cylinders: f64,
    /// Seek time per dispatched request.
    pub mean_seek_ms: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct DiskSummary {
    pub busy_ms: f64,
    pub idle_ms: f64,
    pub utilization: f64,
    pub cache_hits: u64,
    pub cache_partial_hits: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AnticipationSummary {
    /// A-T
    pub started: u64,
    /// A-S
    pub succeeded: u64,
    /// A-F
    pub failed: u64,
    /// A-ST
    pub success_wait_ms: f64,
    /// A-FT
    pub failure_wait_ms: f64,
    /// A-FT / A-T
    pub deceptive_idleness_ms: f64,
    /// A-ST / A-S
    pub mean_success_wait_ms: f64,
    /// The width of a bin of `success_wait_bins`.
    pub success_wait_bin_ms: f64,
    /// The successful waits by length (the module's
    /// `antic_success_wait_bins`): the last bin holds every longer wait.
    pub success_wait_bins: Vec<u64>,
}

/// One phase (IOzone test) over all the processes that ran it, as IOzone
/// reports a throughput-mode test (`-t`): "Children see throughput" is the
/// sum of each process's own rate (its bytes over its own time in the
/// phase); "Parent sees throughput" is all the bytes over the time from
/// the first process's start to the last one's end. MB/s (10^6 bytes).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PhaseResult {
    pub phase: String,
    pub processes: u32,
    pub bytes: u64,
    pub children_mb_s: f64,
    pub parent_mb_s: f64,
    pub min_process_mb_s: f64,
    pub max_process_mb_s: f64,
    /// From the first start to the last end.
    pub elapsed_ms: f64,
}

/// IOzone-style results of per-process phase timings, phases in the order
/// they first appear.
pub fn phase_results(timings: &[(crate::request::ProcessId, crate::workload::process::PhaseTiming)]) -> Vec<PhaseResult> {
    let mut names: Vec<&'static str> = Vec::new();
    for (_, t) in timings {
        if !names.contains(&t.phase) {
            names.push(t.phase);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let ts: Vec<_> = timings.iter().filter(|(_, t)| t.phase == name).map(|(_, t)| t).collect();
            let rate = |bytes: u64, ns: u64| if ns == 0 { 0.0 } else { bytes as f64 / 1e6 / (ns as f64 / 1e9) };
            let own: Vec<f64> = ts.iter().map(|t| rate(t.bytes, t.end.since(t.start))).collect();
            let start = ts.iter().map(|t| t.start).min().unwrap_or_default();
            let end = ts.iter().map(|t| t.end).max().unwrap_or_default();
            let bytes = ts.iter().map(|t| t.bytes).sum();
            PhaseResult {
                phase: name.to_string(),
                processes: ts.len() as u32,
                bytes,
                children_mb_s: own.iter().sum(),
                parent_mb_s: rate(bytes, end.since(start)),
                min_process_mb_s: own.iter().copied().fold(f64::INFINITY, f64::min),
                max_process_mb_s: own.iter().copied().fold(0.0, f64::max),
                elapsed_ms: ns_to_ms(end.since(start)),
            }
        })
        .collect()
}

/// The result of one scheduler on one seed.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunResult {
    pub scheduler: String,
    pub tunables: BTreeMap<String, f64>,
    pub seed: u64,
    pub elapsed_ms: f64,
    pub requests: RequestCounts,
    pub throughput_mb_s: f64,
    pub read_mb_s: f64,
    pub write_mb_s: f64,
    pub iops: f64,
    pub latency_ms: LatencySummary,
    /// Reads only (all zero when the run completed no read).
    pub read_latency_ms: LatencySummary,
    /// Buffered calls (runs that made any): they are not in the figures
    /// above, which count disk requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub buffered: Option<BufferedResult>,
    pub seek: SeekSummary,
    pub disk: DiskSummary,
    /// False for schedulers that never anticipate (their counts are zero).
    pub anticipates: bool,
    pub anticipation: AnticipationSummary,
    pub per_class: Vec<GroupResult>,
    pub per_process: Vec<GroupResult>,
    /// Per phase, IOzone-style (workloads with phases: IOzone).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub phases: Vec<PhaseResult>,
    /// The page cache (runs with buffered I/O).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_cache: Option<crate::pagecache::CacheReport>,
    /// The CPUs the processes' `cpu` time ran on (runs with `[host] cpus`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuReport>,
    /// The elevator's own trace messages (runs with `run.elevator_messages`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub elevator_messages: Vec<ElevatorMessage>,
    /// Messages past `run.elevator_messages`, counted, not kept.
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub elevator_messages_dropped: u64,
}

fn is_zero_u64(v: &u64) -> bool {
    *v == 0
}

/// One line an elevator wrote into blktrace (`blk_add_trace_msg`), at the
/// simulated time of the hook that wrote it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ElevatorMessage {
    pub t_ns: u64,
    pub text: String,
}

/// The CPUs' figures in a run's result (`[host] cpus`, engine::cpu).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CpuReport {
    pub cpus: u32,
    pub bursts: u64,
    pub busy_ms: f64,
    /// Mean time a burst waited for a CPU.
    pub mean_wait_us: f64,
}

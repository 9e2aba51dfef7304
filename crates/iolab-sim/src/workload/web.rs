//! A web server reading static files: Zipf popularity, and "hot news"
//! bursts that cool (the WPCAS paper's explanation of its section 4.5).
//!
//! The document tree (`files` files in `directories` directories under one
//! document root) is laid out once, when the workload is built, by the
//! ext2-like layout of `fs_layout`: directory by directory, as copying a
//! site onto a fresh file system would. Sizes and the popularity order come
//! from `layout_seed`, so every scheduler and run seed sees the same tree.
//!
//! Requests are an open-loop stream (`arrivals`: a Poisson base rate plus
//! bursts that decay exponentially) into a listen queue of `backlog`
//! entries (Apache's default ListenBacklog is 511; arrivals beyond it are
//! dropped and counted). `workers` server processes take requests from the
//! queue in turn; a worker reads the requested file synchronously (its inode
//! block first when the inode is not in the shared inode cache, then the
//! data in readahead-sized requests), spends `cpu` (sending the response),
//! and takes the next request, or sleeps until the next arrival. So the
//! think time of a worker is short while a burst keeps the queue full and
//! long when traffic is cool: the dynamic behaviour WPCAS's process
//! classification is meant to follow.
//!
//! A request that is not part of a burst picks a file by Zipf popularity
//! (exponent `zipf_exponent`; Breslau et al., "Web Caching and Zipf-like
//! Distributions", INFOCOM 1999, measured 0.64–0.83) over a fixed random
//! ranking of the files. A burst picks a hot set when it starts:
//! `hot_files` consecutive files of one directory (a story and its images,
//! published together, hence adjacent on disk); its requests pick uniformly
//! within that set.
//!
//! Left out: the page cache (a real server would serve hot files from
//! memory; the WPCAS paper measured with direct I/O), dentry lookups,
//! logging writes, keep-alive, and network time beyond `cpu`.

use super::arrivals::{Arrival, ArrivalSpec, Arrivals, MAX_BURSTS};
use super::fileops::{IoMode, OpQueue};
use super::fs_layout::{FsLayout, FsSpec, Geometry};
use super::inode_cache::InodeCache;
use super::think::{ThinkSpec, ThinkTime};
use super::{BuiltWorkload, Process, ProcessEntry, Step};
use crate::error::{Error, Result};
use crate::limits;
use crate::request::{Dir, Request};
use crate::rng::SimRng;
use crate::time::{SimTime, NS_PER_S};
use rand::Rng;
use rand_distr::{Distribution, LogNormal, Pareto, Zipf};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

/// File sizes of the document tree.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "dist", rename_all = "lowercase", deny_unknown_fields)]
pub enum SizeSpec {
    Fixed {
        bytes: u64,
    },
    /// Uniform in [min_bytes, max_bytes].
    Uniform {
        min_bytes: u64,
        max_bytes: u64,
    },
    /// A lognormal body with a Pareto tail (SURGE's model of web files).
    Surge(SurgeSpec),
}

/// SURGE's file-size model (Barford & Crovella, "Generating Representative
/// Web Workloads for Network and Server Performance Evaluation",
/// SIGMETRICS 1998): lognormal body (μ = 9.357, σ = 1.318 in ln bytes),
/// Pareto tail (k = 133 KB, α = 1.1). The tail's share is our reading of
/// the paper (about 7%), not checked against it here; the cap keeps one
/// file from filling a small disk.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SurgeSpec {
    pub body_mu: f64,
    pub body_sigma: f64,
    pub tail_fraction: f64,
    pub tail_min_bytes: f64,
    pub tail_alpha: f64,
    pub max_bytes: u64,
}

impl Default for SurgeSpec {
    fn default() -> Self {
        SurgeSpec {
            body_mu: 9.357,
            body_sigma: 1.318,
            tail_fraction: 0.07,
            tail_min_bytes: 133_000.0,
            tail_alpha: 1.1,
            max_bytes: 2 << 20,
        }
    }
}

#[derive(Clone, Debug)]
enum Sizes {
    Fixed(u64),
    Uniform(u64, u64),
    Surge { body: LogNormal<f64>, tail: Pareto<f64>, tail_fraction: f64, max: u64 },
}

impl Sizes {
    fn new(spec: &SizeSpec, field: &str) -> Result<Sizes> {
        let err = |f: &str, m: &str| Error::invalid(format!("{field}.{f}"), m.to_string());
        let bad = |f: &str, m: &str| Err(err(f, m));
        Ok(match spec {
            SizeSpec::Fixed { bytes: 0 } => return bad("bytes", "must be at least 1"),
            SizeSpec::Fixed { bytes } => Sizes::Fixed(*bytes),
            SizeSpec::Uniform { min_bytes, max_bytes } => {
                if *min_bytes == 0 {
                    return bad("min_bytes", "must be at least 1");
                }
                if max_bytes < min_bytes {
                    return bad("max_bytes", "must be at least min_bytes");
                }
                Sizes::Uniform(*min_bytes, *max_bytes)
            }
            SizeSpec::Surge(s) => {
                let body =
                    LogNormal::new(s.body_mu, s.body_sigma).map_err(|_| err("body_sigma", "must be non-negative"))?;
                let tail = Pareto::new(s.tail_min_bytes, s.tail_alpha)
                    .map_err(|_| err("tail_alpha", "tail_min_bytes and tail_alpha must be positive"))?;
                if !(0.0..=1.0).contains(&s.tail_fraction) {
                    return bad("tail_fraction", "must be within [0, 1]");
                }
                if s.max_bytes == 0 {
                    return bad("max_bytes", "must be at least 1");
                }
                Sizes::Surge { body, tail, tail_fraction: s.tail_fraction, max: s.max_bytes }
            }
        })
    }

    fn draw(&self, rng: &mut SimRng) -> u64 {
        match *self {
            Sizes::Fixed(b) => b,
            Sizes::Uniform(lo, hi) => lo + rng.below(hi - lo + 1),
            Sizes::Surge { body, tail, tail_fraction, max } => {
                let x = if rng.unit() < tail_fraction { tail.sample(rng.raw()) } else { body.sample(rng.raw()) };
                (x.round() as u64).clamp(1, max)
            }
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WebSpec {
    /// Server processes taking requests from the queue (one class, "web").
    pub workers: u32,
    pub files: u32,
    pub directories: u32,
    pub size: SizeSpec,
    pub zipf_exponent: f64,
    pub arrivals: ArrivalSpec,
    /// Files in a burst's hot set.
    pub hot_files: u32,
    /// Requests arrive during this long; the workers then finish the queue.
    pub duration_s: f64,
    /// Time a worker spends on a request besides its disk reads.
    pub cpu: ThinkSpec,
    pub backlog: u32,
    /// Inodes cached (shared by the workers).
    pub inode_cache: u32,
    /// Seed of the document tree (sizes, popularity order).
    pub layout_seed: u64,
    pub fs: FsSpec,
}

impl Default for WebSpec {
    fn default() -> Self {
        WebSpec {
            workers: 8,
            files: 10_000,
            directories: 100,
            size: SizeSpec::Surge(SurgeSpec::default()),
            zipf_exponent: 0.8,
            arrivals: ArrivalSpec::default(),
            hot_files: 8,
            duration_s: 120.0,
            cpu: ThinkSpec::Exponential { mean_ms: 0.5 },
            backlog: 511,
            inode_cache: 2048,
            layout_seed: 1,
            fs: FsSpec::default(),
        }
    }
}

/// Counters of the request stream (tests).
#[derive(Copy, Clone, Debug, Default)]
pub struct WebStats {
    pub arrived: u64,
    pub hot: u64,
    pub dropped: u64,
    pub served: u64,
}

enum Take {
    Serve { file: u32, cached: bool },
    Sleep(SimTime),
    Done,
}

/// State the workers share: the arrival stream and listen queue, the
/// popularity ranking and hot sets, the inode cache.
struct Shared {
    /// Seeded from the first worker to ask (worker 0, at time 0).
    rng: Option<SimRng>,
    arrivals: Arrivals,
    pending: Option<Arrival>,
    queue: VecDeque<u32>,
    backlog: usize,
    zipf: Zipf<f64>,
    by_rank: Vec<u32>,
    /// (first file, files) of each directory.
    dir_files: Vec<(u32, u32)>,
    hot_files: u32,
    /// Hot set of the burst in each slot: (burst, first file, files).
    hot: [Option<(u64, u32, u32)>; MAX_BURSTS],
    cache: InodeCache,
    stats: WebStats,
}

impl Shared {
    /// The file an arrival asks for.
    fn choose(&mut self, a: Arrival, rng: &mut SimRng) -> u32 {
        let Some(seq) = a.burst else {
            let rank = self.zipf.sample(rng.raw()) as usize;
            return self.by_rank[rank.clamp(1, self.by_rank.len()) - 1];
        };
        let slot = (seq % MAX_BURSTS as u64) as usize;
        let (_, first, n) = match self.hot[slot] {
            Some(h) if h.0 == seq => h,
            _ => {
                let (start, len) = self.dir_files[rng.below(self.dir_files.len() as u64) as usize];
                let n = self.hot_files.min(len);
                let h = (seq, start + rng.below((len - n + 1) as u64) as u32, n);
                self.hot[slot] = Some(h);
                h
            }
        };
        self.stats.hot += 1;
        first + rng.below(n as u64) as u32
    }

    /// Queue every arrival due by `now`, then hand out the oldest.
    fn take(&mut self, fs: &FsLayout, now: SimTime, rng: &mut SimRng) -> Take {
        let mut r = self.rng.take().unwrap_or_else(|| SimRng::new(rng.raw().gen()));
        loop {
            if self.pending.is_none() {
                self.pending = self.arrivals.next(&mut r);
            }
            match self.pending {
                Some(a) if a.time <= now => {
                    self.pending = None;
                    let file = self.choose(a, &mut r);
                    self.stats.arrived += 1;
                    if self.queue.len() >= self.backlog {
                        self.stats.dropped += 1;
                    } else {
                        self.queue.push_back(file);
                    }
                }
                _ => break,
            }
        }
        self.rng = Some(r);
        if let Some(file) = self.queue.pop_front() {
            self.stats.served += 1;
            let ino = fs.file(file).ino;
            let cached = self.cache.lookup(ino);
            if !cached {
                self.cache.insert(ino);
            }
            return Take::Serve { file, cached };
        }
        match self.pending {
            Some(a) => Take::Sleep(a.time),
            None => Take::Done,
        }
    }
}

pub struct WebWorker {
    shared: Arc<Mutex<Shared>>,
    fs: Arc<FsLayout>,
    cpu: ThinkTime,
    cpu_due: bool,
    max_sectors: u32,
    q: OpQueue,
}

impl Process for WebWorker {
    fn class(&self) -> u32 {
        0
    }

    fn next(&mut self, now: SimTime, rng: &mut SimRng) -> Step {
        loop {
            if let Some(step) = self.q.poll() {
                return step;
            }
            if std::mem::take(&mut self.cpu_due) {
                let ns = self.cpu.draw(rng);
                if ns > 0 {
                    return Step::Think(ns);
                }
            }
            self.q.start();
            let take = self.shared.lock().expect("a worker panicked").take(&self.fs, now, rng);
            match take {
                Take::Serve { file, cached } => {
                    let f = self.fs.file(file);
                    if !cached {
                        self.q.block(self.fs.inode_sector(f.ino), Dir::Read, true);
                    }
                    let range = (0, f.size_bytes);
                    self.q.data(&self.fs, file, range, IoMode::Buffered, 0, Dir::Read, true, self.max_sectors);
                    self.cpu_due = true;
                }
                Take::Sleep(t) => return Step::Think(t.since(now).max(1)),
                Take::Done => return Step::Exit,
            }
        }
    }

    fn completed(&mut self, rq: &Request, _now: SimTime) {
        self.q.completed(rq);
    }
}

/// The document tree.
struct DocTree {
    fs: FsLayout,
    /// (first file, files) of each directory.
    dir_files: Vec<(u32, u32)>,
    /// File ids from the most to the least popular.
    by_rank: Vec<u32>,
}

fn lay_out(spec: &WebSpec, capacity: u64) -> Result<DocTree> {
    let sizes = Sizes::new(&spec.size, "workload.size")?;
    let geo = Geometry::new(&spec.fs, capacity, "workload.fs")?;
    let groups = geo.groups;
    let mut fs = FsLayout::new(geo, 0, groups);
    let mut rng = SimRng::new(spec.layout_seed);
    let (files, dirs) = (spec.files, spec.directories);
    let full = |what: &str| {
        Error::invalid("workload.files", format!("the document tree does not fit the disk ({what} ran out)"))
    };
    let root = fs.mkdir(None).map_err(|_| full("directories"))?;
    let mut dir_files = Vec::with_capacity(dirs as usize);
    let mut next = 0u32;
    for d in 0..dirs {
        let dir = fs.mkdir(Some(root)).map_err(|_| full("space for directories"))?;
        let end = ((d as u64 + 1) * files as u64 / dirs as u64) as u32;
        dir_files.push((next, end - next));
        for _ in next..end {
            fs.create(dir, sizes.draw(&mut rng)).map_err(|_| full("space for files"))?;
        }
        next = end;
    }
    let mut by_rank: Vec<u32> = (0..files).collect();
    for i in (1..by_rank.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        by_rank.swap(i, j);
    }
    Ok(DocTree { fs, dir_files, by_rank })
}

fn shared(spec: &WebSpec, capacity: u64) -> Result<(Arc<FsLayout>, Shared)> {
    let field = |f: &str| format!("workload.{f}");
    if spec.files == 0 {
        return Err(Error::invalid(field("files"), "must be at least 1"));
    }
    if spec.directories == 0 || spec.directories > spec.files {
        return Err(Error::invalid(field("directories"), "must be within [1, files]"));
    }
    if spec.hot_files == 0 {
        return Err(Error::invalid(field("hot_files"), "must be at least 1"));
    }
    // A hot set is adjacent files of one directory; the smallest holds
    // files / directories (rounded down).
    let per_dir = spec.files / spec.directories;
    if spec.hot_files > per_dir {
        return Err(Error::invalid(
            field("hot_files"),
            format!(
                "{} files do not fit one directory: {} files in {} directories give {per_dir} per directory",
                spec.hot_files, spec.files, spec.directories
            ),
        ));
    }
    if spec.backlog == 0 {
        return Err(Error::invalid(field("backlog"), "must be at least 1"));
    }
    limits::check_seconds(&field("duration_s"), spec.duration_s)?;
    let zipf = Zipf::new(spec.files as u64, spec.zipf_exponent)
        .ok()
        .filter(|_| spec.zipf_exponent.is_finite())
        .ok_or_else(|| Error::invalid(field("zipf_exponent"), "must be a non-negative number"))?;
    let end = SimTime((spec.duration_s * NS_PER_S as f64).round() as u64);
    let arrivals = Arrivals::new(&spec.arrivals, SimTime::ZERO, end, "workload.arrivals")?;
    let DocTree { fs, dir_files, by_rank } = lay_out(spec, capacity)?;
    let shared = Shared {
        rng: None,
        arrivals,
        pending: None,
        // Grown as the queue fills: a large backlog costs only what it holds.
        queue: VecDeque::with_capacity((spec.backlog as usize).min(4096)),
        backlog: spec.backlog as usize,
        zipf,
        by_rank,
        dir_files,
        hot_files: spec.hot_files,
        hot: [None; MAX_BURSTS],
        cache: InodeCache::new(spec.inode_cache),
        stats: WebStats::default(),
    };
    Ok((Arc::new(fs), shared))
}

pub fn build(spec: &WebSpec, capacity: u64) -> Result<BuiltWorkload> {
    if spec.workers == 0 {
        return Err(Error::invalid("workload.workers", "must be at least 1"));
    }
    let cpu = ThinkTime::from_spec(&spec.cpu, "workload.cpu")?;
    let (fs, shared) = shared(spec, capacity)?;
    let shared = Arc::new(Mutex::new(shared));
    let processes = (0..spec.workers)
        .map(|i| ProcessEntry {
            name: format!("web.{i}"),
            start: SimTime::ZERO,
            process: Box::new(WebWorker {
                shared: Arc::clone(&shared),
                fs: Arc::clone(&fs),
                cpu: cpu.clone(),
                cpu_due: false,
                max_sectors: spec.fs.max_request_sectors(),
                q: OpQueue::new(1),
            }) as Box<dyn Process>,
        })
        .collect();
    Ok(BuiltWorkload { classes: vec!["web".into()], processes, page_cache: false })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::{self, DiskSpec};
    use crate::engine::{self, EngineConfig, Observer, RunControl};
    use std::collections::BTreeMap;

    fn small() -> WebSpec {
        WebSpec { files: 2000, directories: 20, ..WebSpec::default() }
    }

    /// Every arrival of a spec's stream as (time, file, from a burst).
    fn stream(spec: &WebSpec, seed: u64) -> (Shared, Vec<(SimTime, u32, bool)>) {
        let (_, mut sh) = shared(spec, 1 << 22).unwrap();
        let mut rng = SimRng::new(seed);
        let mut out = Vec::new();
        while let Some(a) = sh.arrivals.next(&mut rng) {
            out.push((a.time, sh.choose(a, &mut rng), a.burst.is_some()));
        }
        (sh, out)
    }

    #[test]
    fn tree_fits_and_sizes_stay_in_bounds() {
        let DocTree { fs, by_rank, .. } = lay_out(&small(), 1 << 22).unwrap();
        fs.check();
        assert!(fs.files().iter().all(|f| f.live && (1..=2 << 20).contains(&f.size_bytes)));
        let mean = fs.files().iter().map(|f| f.size_bytes).sum::<u64>() as f64 / 2000.0;
        assert!((15_000.0..80_000.0).contains(&mean), "mean size {mean}");
        let mut sorted = by_rank.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..2000).collect::<Vec<u32>>(), "a permutation");
        let spec = WebSpec { size: SizeSpec::Uniform { min_bytes: 100, max_bytes: 300 }, ..small() };
        let fs = lay_out(&spec, 1 << 22).unwrap().fs;
        assert!(fs.files().iter().all(|f| (100..=300).contains(&f.size_bytes)));
        let err = build(&WebSpec { files: 100_000, ..WebSpec::default() }, 1 << 20).err().unwrap();
        assert!(err.to_string().starts_with("workload.files"), "{err}");
        let err = build(&WebSpec { size: SizeSpec::Uniform { min_bytes: 5, max_bytes: 1 }, ..small() }, 1 << 22)
            .err()
            .unwrap();
        assert!(err.to_string().starts_with("workload.size.max_bytes"), "{err}");
    }

    #[test]
    fn zipf_ranks_set_the_popularity() {
        let arrivals = ArrivalSpec { rate_per_s: 2000.0, burst_every_s: 0.0, ..ArrivalSpec::default() };
        let spec = WebSpec { zipf_exponent: 1.0, arrivals, duration_s: 100.0, ..small() };
        let (sh, v) = stream(&spec, 9);
        let mut count = vec![0u64; 2000];
        v.iter().for_each(|a| count[a.1 as usize] += 1);
        let by_rank: Vec<u64> = sh.by_rank.iter().map(|&f| count[f as usize]).collect();
        let n = v.len() as f64;
        // P(rank r) = r^-1 / H(2000); H(2000) ≈ 8.178.
        let h: f64 = (1..=2000).map(|r| 1.0 / r as f64).sum();
        for r in [1usize, 2, 5, 50] {
            let expect = n / (r as f64 * h);
            assert!(
                (by_rank[r - 1] as f64 - expect).abs() < 5.0 * expect.sqrt() + 1.0,
                "rank {r}: {} vs {expect}",
                by_rank[r - 1]
            );
        }
    }

    #[test]
    fn a_burst_raises_its_hot_set_share_then_cools() {
        let arrivals = ArrivalSpec {
            rate_per_s: 50.0,
            burst_times_s: vec![10.0],
            burst_peak_per_s: 500.0,
            burst_cool_s: 2.0,
            ..ArrivalSpec::default()
        };
        let spec = WebSpec { arrivals, duration_s: 40.0, ..small() };
        let (sh, v) = stream(&spec, 4);
        let (_, first, n) = sh.hot[0].expect("the burst drew a hot set");
        let hot = |f: u32| (first..first + n).contains(&f);
        let share = |lo: f64, hi: f64| {
            let w: Vec<_> = v
                .iter()
                .filter(|a| a.0 >= SimTime::from_ms_f64(lo * 1e3) && a.0 < SimTime::from_ms_f64(hi * 1e3))
                .collect();
            w.iter().filter(|a| hot(a.1)).count() as f64 / w.len() as f64
        };
        let (before, during, after) = (share(0.0, 10.0), share(10.0, 12.0), share(30.0, 40.0));
        assert!(before < 0.05 && after < 0.05, "before {before}, after {after}");
        assert!(during > 0.8, "during {during}");
        assert!(v.iter().filter(|a| a.2).all(|a| hot(a.1)));
    }

    /// Per-worker gaps between one request's completion and the next issue.
    #[derive(Default)]
    struct Gaps {
        last_done: BTreeMap<u32, SimTime>,
        gaps: Vec<(SimTime, u64)>,
    }
    impl Observer for Gaps {
        fn queued(&mut self, rq: &Request, now: SimTime) {
            if let Some(t) = self.last_done.remove(&rq.pid) {
                self.gaps.push((now, now.since(t)));
            }
        }
        fn completed(&mut self, rq: &Request, now: SimTime) {
            self.last_done.insert(rq.pid, now);
        }
    }

    #[test]
    fn bursts_show_in_worker_think_times() {
        let arrivals = ArrivalSpec {
            rate_per_s: 10.0,
            burst_times_s: vec![10.0],
            burst_peak_per_s: 1000.0,
            burst_cool_s: 2.0,
            ..ArrivalSpec::default()
        };
        let spec = WebSpec { workers: 4, arrivals, duration_s: 30.0, cpu: ThinkSpec::Constant { ms: 0.2 }, ..small() };
        let d = DiskSpec { preset: Some("fixed".into()), fixed_ms: Some(2.0), ..DiskSpec::default() };
        let disk = disk::build(&d, std::path::Path::new(".")).unwrap();
        let ctx = crate::sched::SchedContext::new(disk.position_cost());
        let (elevator, _) = crate::sched::build("noop", &BTreeMap::new(), &ctx).unwrap();
        let built = build(&spec, disk.capacity_sectors()).unwrap();
        let cfg =
            EngineConfig { queue: Default::default(), vm: Default::default(), queue_depth: 1, device_order: d.device_order, max_time: None, max_requests: None, seed: 3, cpus: None };
        let mut gaps = Gaps::default();
        engine::run_observed(disk, elevator, built, &cfg, &RunControl::default(), &mut gaps).unwrap();
        let long = |lo: f64, hi: f64| {
            let g: Vec<u64> = gaps
                .gaps
                .iter()
                .filter(|x| x.0 >= SimTime::from_ms_f64(lo * 1e3) && x.0 < SimTime::from_ms_f64(hi * 1e3))
                .map(|x| x.1)
                .collect();
            assert!(g.len() > 20, "{} gaps in [{lo}, {hi}) s", g.len());
            g.iter().filter(|&&ns| ns >= 5_000_000).count() as f64 / g.len() as f64
        };
        // Within a file's requests there is no gap; between files, a worker
        // waits for the next request only when the queue is empty.
        let (hot, cool) = (long(10.0, 11.0), long(20.0, 30.0));
        assert!(hot < 0.05, "share of gaps over 5 ms in the burst: {hot}");
        assert!(cool > 0.3, "share of gaps over 5 ms when cool: {cool}");
    }

    #[test]
    fn workers_share_one_stream_and_stop() {
        let spec = WebSpec { duration_s: 5.0, ..small() };
        let w = build(&spec, 1 << 22).unwrap();
        assert_eq!((w.classes.len(), w.processes.len()), (1, 8));
        assert!(build(&WebSpec { workers: 0, ..small() }, 1 << 22)
            .err()
            .unwrap()
            .to_string()
            .starts_with("workload.workers"));
        assert!(build(&WebSpec { zipf_exponent: -1.0, ..small() }, 1 << 22).is_err());
    }
}

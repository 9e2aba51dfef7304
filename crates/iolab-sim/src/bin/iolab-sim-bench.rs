//! `make bench`: simulated requests per second of wall time, for each
//! scheduler on workloads of one million requests, side by side in one run.
//! Figures, not assertions: see docs/bench.md.
//!
//! Also iolab's own replay of DiskSim's validation trace (HP C2247A,
//! `data/disksim/`), repeated until it has served at least N requests: the
//! disk model alone, parsed trace in memory; this binary never runs DiskSim
//! (`scripts/bench_commands.py` and `scripts/disksim_closed.py` do).
//!
//! The last workload is issue 12's "closed random load on DiskSim's HP
//! C3323A" (`data/disksim/hp_c3323a.parv`), whatever `--disk` says: 8
//! processes, each waiting for its 4 KiB random read and issuing the next at
//! once, over the whole disk. `scripts/disksim_closed.py` runs DiskSim 4.0's
//! own synthetic generator on the same load, interleaved with this binary, so
//! that the two can be compared on one machine in one run.
//!
//! Usage: iolab-sim-bench [--requests N] [--disk PRESET] [--workload K] [SCHEDULER ... | replay]
//!
//! `--workload K` runs the K-th workload (from 1) alone, so that a profile
//! can be divided by that workload's requests.
//!
//! With no names: every scheduler, then the replay. With names: those
//! schedulers only, and the replay only if `replay` is among them (so a
//! profile of one scheduler is that scheduler's alone).

use iolab_sim::disk::{self, DiskSpec};
use iolab_sim::engine::{self, EngineConfig, RunControl};
use iolab_sim::sched::{self, SchedContext};
use iolab_sim::workload::group::{GroupSpec, ProcessesSpec};
use iolab_sim::workload::pattern::Pattern;
use iolab_sim::workload::think::ThinkSpec;
use iolab_sim::workload::{self, Placement, WorkloadSpec};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The bench's workloads: name, spec, and the drive when it is not `--disk`'s.
fn workloads() -> Vec<(&'static str, WorkloadSpec, Option<DiskSpec>)> {
    let g = |pattern, think_ms: f64| {
        WorkloadSpec::Processes(ProcessesSpec {
            placement: Placement::Spread,
            group: vec![GroupSpec {
                count: 16,
                pattern,
                request_kb: 4.0,
                file_mb: 64.0,
                think: ThinkSpec::Exponential { mean_ms: think_ms },
                ..GroupSpec::default()
            }],
        })
    };
    // Closed: each of 8 processes waits for its O_DIRECT 4 KiB random read
    // and issues the next at once (no think time), all over the whole disk
    // as DiskSim's generators draw (a file of its own per process would make
    // FIFO service cycle through 8 neighbouring regions: shorter seeks). The
    // C3323A has 2,056,008 sectors; 1,003 MiB is all but 1,864 of them.
    let closed = WorkloadSpec::Processes(ProcessesSpec {
        placement: Placement::Shared,
        group: vec![GroupSpec {
            count: 8,
            pattern: Pattern::Random,
            request_kb: 4.0,
            file_mb: 1003.0,
            ..GroupSpec::default()
        }],
    });
    let c3323a = DiskSpec { preset: None, diskspecs: Some(disksim_data().join("hp_c3323a.parv").to_string_lossy().into_owned()), ..DiskSpec::default() };
    vec![
        ("16 sequential readers, think 1 ms", g(Pattern::Sequential, 1.0), None),
        ("16 random readers, think 2 ms", g(Pattern::Random, 2.0), None),
        ("8 closed random readers, C3323A", closed, Some(c3323a)),
    ]
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut requests = 1_000_000u64;
    let mut disk_name = String::from("hp97560");
    let mut names = Vec::new();
    let mut only: Option<usize> = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--requests" => requests = args.next().and_then(|v| v.parse().ok()).expect("--requests N"),
            "--disk" => disk_name = args.next().expect("--disk PRESET"),
            "--workload" => only = args.next().and_then(|v| v.parse().ok()).filter(|&k| k >= 1).map(|k: usize| k - 1),
            _ => names.push(a),
        }
    }
    let all = names.is_empty();
    let replay = all || names.iter().any(|n| n == "replay");
    names.retain(|n| n != "replay");
    if all {
        names = sched::all().iter().map(|s| s.name.to_string()).collect();
    }
    let spec = DiskSpec { preset: Some(disk_name.clone()), ..DiskSpec::default() };
    if let Err(e) = disk::build(&spec, Path::new(".")) {
        eprintln!("iolab-sim-bench: {e}");
        std::process::exit(2);
    }
    println!("simulator speed: {requests} requests per run on disk '{disk_name}', one core, release build");
    println!("{:<38} {:<19} {:>12} {:>10} {:>14}", "workload", "scheduler", "requests/s", "wall s", "simulated s");
    for (k, (wname, w, own_disk)) in workloads().into_iter().enumerate() {
        if only.is_some_and(|o| o != k) {
            continue;
        }
        let spec = own_disk.unwrap_or_else(|| spec.clone());
        if let Err(e) = disk::build(&spec, Path::new(".")) {
            eprintln!("iolab-sim-bench: {wname} skipped: {e}");
            continue;
        }
        for name in &names {
            let disk = disk::build(&spec, Path::new(".")).expect("checked above");
            let built = workload::build(&w, disk.capacity_sectors()).expect("bench workload builds");
            let ctx = SchedContext::new(disk.position_cost());
            let (elevator, _) = match sched::build(name, &BTreeMap::new(), &ctx) {
                Ok(x) => x,
                Err(e) => {
                    eprintln!("iolab-sim-bench: {e}");
                    std::process::exit(2);
                }
            };
            let cfg = EngineConfig { queue: Default::default(), vm: Default::default(),
                queue_depth: 1,
                device_order: Default::default(),
                max_time: None,
                max_requests: Some(requests),
                seed: 1,
                cpus: None,
            };
            let t0 = Instant::now();
            let out = engine::run(disk, elevator, built, &cfg, &RunControl::default()).expect("bench run");
            let wall = t0.elapsed().as_secs_f64();
            let done = out.collector.completed();
            println!(
                "{:<38} {:<19} {:>12.0} {:>10.3} {:>14.1}",
                wname,
                name,
                done as f64 / wall,
                wall,
                out.end.as_ms_f64() / 1000.0
            );
        }
    }
    if replay {
        bench_validation(requests);
    }
}

/// Requests per second of the validation replay (one request at a time,
/// no scheduler): the disk model's own speed.
fn bench_validation(requests: u64) {
    let data = disksim_data();
    let specs = data.join("hp_c2247a.parv");
    let trace_path = data.join("hp_c2247a.trace");
    let spec = DiskSpec { preset: None, diskspecs: Some(specs.to_string_lossy().into_owned()), ..DiskSpec::default() };
    let (mut disk, trace) = match (disk::build(&spec, Path::new(".")), iolab_sim::trace::disksim_validation::read(&trace_path)) {
        (Ok(d), Ok(t)) => (d, t),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("iolab-sim-bench: validation replay skipped: {e}");
            return;
        }
    };
    let rounds = requests.div_ceil(trace.len() as u64).max(1);
    let t0 = Instant::now();
    let mut served = 0u64;
    for _ in 0..rounds {
        served += iolab_sim::validate::replay(disk.as_mut(), &trace).len() as u64;
    }
    let wall = t0.elapsed().as_secs_f64();
    println!("{:<38} {:<19} {:>12.0} {:>10.3} {:>14}", "iolab disk model, C2247A trace replay", "-", served as f64 / wall, wall, "-");
}

/// `data/disksim/` of the source tree the binary was built from.
fn disksim_data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/disksim")
}

//! Engine properties, run against every registered scheduler and every
//! disk preset: each request completes exactly once, time never goes
//! backwards, and a spec and seed give identical results.

use iolab_sim::disk::{self, DiskSpec};
use iolab_sim::engine::{self, EngineConfig, Observer, RunControl};
use iolab_sim::experiment::{self, Format};
use iolab_sim::request::Request;
use iolab_sim::sched::{self, SCHEDULERS};
use iolab_sim::time::SimTime;
use iolab_sim::engine::Outcome;
use iolab_sim::sched::SchedulerInfo;
use iolab_sim::workload::arrivals::ArrivalSpec;
use iolab_sim::workload::fileops::IoMode;
use iolab_sim::workload::group::{GroupSpec, OpSpec, ProcessesSpec};
use iolab_sim::workload::pattern::Pattern;
use iolab_sim::workload::postmark::PostmarkSpec;
use iolab_sim::trace::TraceFormat;
use iolab_sim::workload::think::ThinkSpec;
use iolab_sim::workload::trace::{Fit, ReplayMode, Streams, TraceSpec};
use iolab_sim::workload::web::WebSpec;
use iolab_sim::workload::{self, Placement, WorkloadSpec};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::Path;

/// Checks request-level invariants as the run goes.
#[derive(Default)]
struct Checker {
    last_time: SimTime,
    inserted: BTreeMap<u32, Request>,
    dispatched: BTreeMap<u32, SimTime>,
    completed: BTreeMap<u32, SimTime>,
}

impl Checker {
    fn tick(&mut self, now: SimTime) {
        assert!(now >= self.last_time, "time went backwards: {:?} after {:?}", now, self.last_time);
        self.last_time = now;
    }
}

impl Observer for Checker {
    fn inserted(&mut self, rq: &Request, now: SimTime) {
        self.tick(now);
        assert!(self.inserted.insert(rq.id, *rq).is_none(), "request {} inserted twice", rq.id);
    }
    fn merged(&mut self, rq: &Request, absorbed: Option<u32>, now: SimTime) {
        self.tick(now);
        assert!(!self.dispatched.contains_key(&rq.id), "merged into request {} after its dispatch", rq.id);
        let before = self.inserted.insert(rq.id, *rq).expect("merged into a request never inserted");
        assert!(rq.nr_sectors > before.nr_sectors, "a merge grows the request");
        if let Some(gone) = absorbed {
            assert!(!self.dispatched.contains_key(&gone), "absorbed request {gone} was dispatched");
            assert!(self.inserted.remove(&gone).is_some(), "absorbed request {gone} never inserted");
        }
    }
    fn dispatched(&mut self, rq: &Request, now: SimTime) {
        self.tick(now);
        assert_eq!(self.inserted.get(&rq.id), Some(rq), "dispatched a request that was not inserted, or altered it");
        assert!(self.dispatched.insert(rq.id, now).is_none(), "request {} dispatched twice", rq.id);
    }
    fn completed(&mut self, rq: &Request, now: SimTime) {
        self.tick(now);
        assert!(self.dispatched.contains_key(&rq.id), "request {} completed before dispatch", rq.id);
        assert!(self.completed.insert(rq.id, now).is_none(), "request {} completed twice", rq.id);
    }
}

fn group(count: u32, pattern: Pattern, op: OpSpec, sync: bool, kb: f64, think_ms: f64, passes: u32) -> GroupSpec {
    GroupSpec {
        count,
        pattern,
        op,
        sync,
        max_outstanding: 4,
        request_kb: kb,
        file_mb: 1.0,
        think: ThinkSpec::Exponential { mean_ms: think_ms },
        passes,
        ..GroupSpec::default()
    }
}

fn disks() -> Vec<DiskSpec> {
    disk::PRESETS
        .iter()
        .map(|(name, _)| DiskSpec { preset: Some(name.to_string()), ..DiskSpec::default() })
        .chain(std::iter::once(DiskSpec {
            preset: Some("fixed".into()),
            queue_depth: 4,
            device_order: disk::DeviceOrder::Sptf,
            ..DiskSpec::default()
        }))
        .collect()
}

fn arb_group() -> impl Strategy<Value = GroupSpec> {
    (
        1u32..4,
        prop_oneof![Just(Pattern::Sequential), Just(Pattern::Random), Just(Pattern::Strided), Just(Pattern::Backward)],
        prop_oneof![Just(OpSpec::Read), Just(OpSpec::Write), Just(OpSpec::Mix)],
        any::<bool>(),
        prop_oneof![Just(4.0), Just(16.0), Just(64.0)],
        0.01f64..8.0,
        1u32..3,
        any::<bool>(),
    )
        .prop_map(|(c, p, o, s, kb, t, passes, direct)| GroupSpec { direct, ..group(c, p, o, s, kb, t, passes) })
}

/// Run `spec` on one disk and scheduler to its end, checking as it goes.
fn run_checked(spec: &WorkloadSpec, d: &DiskSpec, info: &SchedulerInfo, seed: u64) -> (Checker, Outcome) {
    let disk = disk::build(d, Path::new(".")).unwrap();
    let built = workload::build(spec, disk.capacity_sectors()).unwrap();
    let ctx = engine::sched_context(&*disk, d.queue_depth);
    let (elevator, _) = sched::build(info.name, &BTreeMap::new(), &ctx).unwrap();
    let cfg =
        EngineConfig { queue: Default::default(), vm: Default::default(), queue_depth: d.queue_depth, device_order: d.device_order, max_time: None, max_requests: None, seed, cpus: None };
    let mut check = Checker::default();
    let out = engine::run_observed(disk, elevator, built, &cfg, &RunControl::default(), &mut check)
        .unwrap_or_else(|e| panic!("{} on {:?}: {e}", info.name, d.preset));
    (check, out)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn every_request_completes_exactly_once(groups in prop::collection::vec(arb_group(), 1..4), seed in 0u64..1000) {
        // A small buffered writer may leave all its data dirty in memory.
        let io_expected = groups.iter().any(|g| g.direct || g.op == OpSpec::Read);
        let spec = WorkloadSpec::Processes(ProcessesSpec { placement: Placement::Spread, group: groups });
        for d in disks() {
            for info in SCHEDULERS {
                let (check, out) = run_checked(&spec, &d, info, seed);
                prop_assert_eq!(check.inserted.len(), check.completed.len(), "{}: not every request completed", info.name);
                prop_assert!(!check.inserted.is_empty() || !io_expected);
                prop_assert_eq!(out.collector.completed() as usize, check.completed.len());
                if let Some(a) = out.anticipation {
                    prop_assert_eq!(a.started, a.succeeded + a.failed, "{}: A-T != A-S + A-F", info.name);
                }
            }
        }
    }
}

/// Small file-system workloads: Postmark (buffered, and direct with
/// synchronous metadata and bursty pacing) and the web server; and the
/// replay of a sample trace, open and closed loop.
fn fs_and_trace_workloads() -> Vec<WorkloadSpec> {
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/traces/sample.blkparse.txt");
    let replay = |mode| TraceSpec {
        file: sample.into(),
        format: TraceFormat::Blkparse,
        mode,
        speed: 4.0,
        fit: Fit::Error,
        streams: Streams::Each,
        max_records: None,
        blkparse_action: "Q".into(),
        jitter_ms: 0.0,
    };
    let bursty = ArrivalSpec {
        rate_per_s: 100.0,
        burst_every_s: 0.5,
        burst_peak_per_s: 1000.0,
        burst_cool_s: 0.1,
        ..ArrivalSpec::default()
    };
    vec![
        WorkloadSpec::Postmark(PostmarkSpec {
            processes: 2,
            files: 60,
            transactions: 300,
            subdirectories: 3,
            max_outstanding: 4,
            inode_cache: 16,
            ..PostmarkSpec::default()
        }),
        WorkloadSpec::Postmark(PostmarkSpec {
            files: 30,
            transactions: 200,
            io: IoMode::Direct,
            read_block_bytes: 4096,
            write_block_bytes: 4096,
            sync_metadata: true,
            pacing: Some(bursty.clone()),
            ..PostmarkSpec::default()
        }),
        WorkloadSpec::Web(WebSpec {
            workers: 3,
            files: 300,
            directories: 10,
            duration_s: 1.5,
            arrivals: bursty,
            backlog: 20,
            inode_cache: 32,
            ..WebSpec::default()
        }),
        WorkloadSpec::Trace(replay(ReplayMode::Open)),
        WorkloadSpec::Trace(replay(ReplayMode::Closed)),
    ]
}

#[test]
fn file_system_and_trace_workloads_complete_on_every_scheduler() {
    for (i, spec) in fs_and_trace_workloads().iter().enumerate() {
        for d in disks() {
            for info in SCHEDULERS {
                let (check, out) = run_checked(spec, &d, info, 5 + i as u64);
                assert!(!check.inserted.is_empty());
                assert_eq!(check.inserted.len(), check.completed.len(), "{}: not every request completed", info.name);
                assert_eq!(out.collector.completed() as usize, check.completed.len());
                if let Some(a) = out.anticipation {
                    assert_eq!(a.started, a.succeeded + a.failed, "{}: A-T != A-S + A-F", info.name);
                }
            }
        }
    }
}

#[test]
fn file_system_workloads_are_deterministic() {
    let spec = SPEC.replace(
        "kind = \"processes\"\n[[workload.group]]\ncount = 3\npattern = \"random\"\nop = \"mix\"\nthink = { dist = \"exponential\", mean_ms = 2 }\npasses = 1\n",
        "kind = \"web\"\nworkers = 3\nfiles = 200\ndirectories = 5\nduration_s = 2\narrivals = { rate_per_s = 50, burst_times_s = [0.5], burst_peak_per_s = 300, burst_cool_s = 0.3 }\n",
    );
    assert!(spec.contains("kind = \"web\""));
    assert_eq!(run_all(&spec), run_all(&spec));
    assert_ne!(run_all(&spec), run_all(&spec.replace("seed = 7", "seed = 8")));
    let pm = spec.replace("kind = \"web\"\nworkers = 3\nfiles = 200\ndirectories = 5\nduration_s = 2\n", "kind = \"postmark\"\nfiles = 50\ntransactions = 100\n")
        .replace("arrivals = {", "pacing = {");
    assert!(pm.contains("kind = \"postmark\""));
    assert_eq!(run_all(&pm), run_all(&pm));
}

const SPEC: &str = r#"
name = "determinism"
[disk]
preset = "fixed"
fixed_ms = 3
[[scheduler]]
name = "noop"
[workload]
kind = "processes"
[[workload.group]]
count = 3
pattern = "random"
op = "mix"
think = { dist = "exponential", mean_ms = 2 }
passes = 1
[run]
seed = 7
repetitions = 2
"#;

fn run_all(text: &str) -> String {
    let exp = experiment::parse(text, "test.toml", Format::Toml, &[]).unwrap();
    let results: Vec<_> = exp.jobs().into_iter().map(|j| exp.run_job(j, &RunControl::default()).unwrap()).collect();
    serde_json::to_string(&results).unwrap()
}

#[test]
fn same_spec_and_seed_give_identical_bytes() {
    let a = run_all(SPEC);
    let b = run_all(SPEC);
    assert_eq!(a, b);
    // A different seed changes the result (the random pattern is used).
    let c = run_all(&SPEC.replace("seed = 7", "seed = 8"));
    assert_ne!(a, c);
}

#[test]
fn spec_errors_name_line_or_field() {
    let err = experiment::parse("[disk]\npreset = 3\n", "x.toml", Format::Toml, &[]).unwrap_err().to_string();
    assert!(err.starts_with("x.toml:2: field `disk.preset`: invalid type"), "{err}");
    let bad = SPEC.replace("count = 3", "count = 0");
    let err = experiment::parse(&bad, "x.toml", Format::Toml, &[]).unwrap_err().to_string();
    assert!(err.contains("workload.group[0].count"), "{err}");
    let err = experiment::parse(SPEC, "x.toml", Format::Toml, &[("noop.quantum".into(), "4".into())])
        .unwrap_err()
        .to_string();
    assert!(err.contains("no tunable 'quantum'"), "{err}");
    let err = experiment::parse(&SPEC.replace("\"noop\"", "\"elevatorx\""), "x.toml", Format::Toml, &[])
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown scheduler 'elevatorx'") && err.contains("noop"), "{err}");
}

#[test]
fn overrides_apply_to_workload_and_run() {
    let exp = experiment::parse(
        SPEC,
        "x.toml",
        Format::Toml,
        &[("workload.group".into(), r#"[{"count": 2, "passes": 1}]"#.into()), ("run.repetitions".into(), "3".into())],
    )
    .unwrap();
    assert_eq!(exp.jobs().len(), 3);
}

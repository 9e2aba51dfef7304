//! Issue 9: the simulated kernel around the elevator, through the engine.
//! The sync rule (every read is sync, and O_DIRECT writes are WRITE_SYNC),
//! merging and the request limit in the block layer, read-ahead windows
//! and write-back in the page cache.

use iolab_sim::blk::QueueSpec;
use iolab_sim::disk::{self, DiskSpec};
use iolab_sim::engine::{self, EngineConfig, Observer, Outcome, RunControl};
use iolab_sim::pagecache::VmSpec;
use iolab_sim::request::{Dir, Request};
use iolab_sim::sched::{self, SchedContext};
use iolab_sim::time::SimTime;
use iolab_sim::workload::group::{GroupSpec, OpSpec, ProcessesSpec};
use iolab_sim::workload::iozone::{IozoneMode, IozoneSpec};
use iolab_sim::workload::pattern::Pattern;
use iolab_sim::workload::think::ThinkSpec;
use iolab_sim::workload::{self, Placement, WorkloadSpec};
use std::collections::BTreeMap;
use std::path::Path;

/// Every request as the elevator got it, and the largest number queued.
#[derive(Default)]
struct Seen {
    inserted: Vec<Request>,
    merged: u64,
    queued_now: i64,
    queued_max: i64,
}

impl Observer for Seen {
    fn inserted(&mut self, rq: &Request, _now: SimTime) {
        self.inserted.push(*rq);
        self.queued_now += 1;
        self.queued_max = self.queued_max.max(self.queued_now);
    }
    fn merged(&mut self, _rq: &Request, absorbed: Option<u32>, _now: SimTime) {
        self.merged += 1;
        self.queued_now -= absorbed.is_some() as i64;
    }
    fn dispatched(&mut self, _rq: &Request, _now: SimTime) {
        self.queued_now -= 1;
    }
}

fn run(spec: &WorkloadSpec, disk_name: &str, sched_name: &str, queue: QueueSpec, vm: VmSpec, max_s: f64) -> (Seen, Outcome) {
    let d = DiskSpec { preset: Some(disk_name.into()), ..DiskSpec::default() };
    let disk = disk::build(&d, Path::new(".")).unwrap();
    let built = workload::build(spec, disk.capacity_sectors()).unwrap();
    let ctx = SchedContext::new(disk.position_cost());
    let (e, _) = sched::build(sched_name, &BTreeMap::new(), &ctx).unwrap();
    let cfg = EngineConfig {
        queue,
        vm,
        queue_depth: 1,
        device_order: Default::default(),
        max_time: Some(SimTime::from_ms_f64(max_s * 1e3)),
        max_requests: None,
        seed: 1,
        cpus: None,
    };
    let mut seen = Seen::default();
    let out = engine::run_observed(disk, e, built, &cfg, &RunControl::default(), &mut seen).unwrap();
    (seen, out)
}

fn readers(count: u32, direct: bool, sync: bool, max_outstanding: u32) -> WorkloadSpec {
    WorkloadSpec::Processes(ProcessesSpec {
        placement: Placement::Spread,
        group: vec![GroupSpec {
            count,
            request_kb: 16.0,
            file_mb: 64.0,
            direct,
            sync,
            max_outstanding,
            passes: 1,
            ..GroupSpec::default()
        }],
    })
}

fn mb_s(out: &Outcome) -> f64 {
    out.collector.finish(out.end, out.overhang_ns, header(), &out.classes, &out.process_names, None).throughput_mb_s
}

fn header() -> iolab_sim::metrics::RunHeader {
    iolab_sim::metrics::RunHeader { scheduler: "x".into(), tunables: BTreeMap::new(), seed: 1 }
}

/// Reads issued without the sync flag (two in flight per reader) are sync
/// to AS: it anticipates for them, and the readers get far more out of
/// the disk than without anticipation.
#[test]
fn unflagged_reads_are_anticipated() {
    let spec = readers(4, true, false, 2);
    let (_, as_out) = run(&spec, "modern7200", "as", QueueSpec::default(), VmSpec::default(), 10.0);
    let (_, dl_out) = run(&spec, "modern7200", "deadline", QueueSpec::default(), VmSpec::default(), 10.0);
    let a = as_out.anticipation.unwrap();
    assert!(a.started > 0, "AS anticipates for unflagged reads: {a:?}");
    assert!(mb_s(&as_out) > 5.0 * mb_s(&dl_out), "AS {} MB/s, deadline {}", mb_s(&as_out), mb_s(&dl_out));
}

/// O_DIRECT writes reach the elevator as WRITE_SYNC (2.6.20
/// fs/direct-io.c), reads without the flag; both are sync.
#[test]
fn iozone_direct_writes_are_write_sync() {
    let spec = WorkloadSpec::Iozone(IozoneSpec { processes: 2, file_kb: 64.0, ..IozoneSpec::default() });
    let (seen, _) = run(&spec, "hp97560", "as", QueueSpec::default(), VmSpec::default(), 60.0);
    let writes: Vec<_> = seen.inserted.iter().filter(|r| r.dir == Dir::Write).collect();
    assert!(!writes.is_empty() && writes.iter().all(|r| r.sync && r.is_sync()));
    assert!(seen.inserted.iter().all(|r| r.is_sync()));
}

/// Sequential async writes queue up behind each other and merge: fewer,
/// larger requests, none above max_sectors, every byte written once.
#[test]
fn adjacent_async_writes_merge_up_to_max_sectors() {
    let spec = WorkloadSpec::Processes(ProcessesSpec {
        placement: Placement::Spread,
        group: vec![GroupSpec {
            count: 2,
            op: OpSpec::Write,
            sync: false,
            max_outstanding: 64,
            request_kb: 4.0,
            file_mb: 8.0,
            passes: 1,
            ..GroupSpec::default()
        }],
    });
    let q = QueueSpec { max_sectors_kb: 64, ..QueueSpec::default() };
    let (seen, out) = run(&spec, "hp97560", "deadline", q.clone(), VmSpec::default(), 600.0);
    let r = out.collector.finish(out.end, out.overhang_ns, header(), &out.classes, &out.process_names, None);
    assert!(seen.merged > 1000, "merged {}", seen.merged);
    assert!(r.requests.completed < 4096, "{} requests for 4096 bios", r.requests.completed);
    assert_eq!(r.write_mb_s * r.elapsed_ms / 1e3, 16.0 * 1.048576, "16 MiB written");
    let (no, _) = run(&spec, "hp97560", "deadline", QueueSpec { merges: false, ..q }, VmSpec::default(), 600.0);
    assert_eq!(no.merged, 0);
    assert_eq!(no.inserted.len(), 4096);
}

/// An async writer with more in flight than `nr_requests` allows sleeps
/// for a request: the elevator never holds more than the limit (plus the
/// batcher's allowance, up to 3/2 of it).
#[test]
fn the_request_limit_bounds_the_queue() {
    let spec = WorkloadSpec::Processes(ProcessesSpec {
        placement: Placement::Spread,
        group: vec![GroupSpec {
            count: 1,
            pattern: Pattern::Random,
            op: OpSpec::Write,
            sync: false,
            max_outstanding: 1000,
            request_kb: 4.0,
            file_mb: 64.0,
            passes: 1,
            ..GroupSpec::default()
        }],
    });
    let q = QueueSpec { nr_requests: 32, ..QueueSpec::default() };
    let (seen, _) = run(&spec, "hp97560", "noop", q, VmSpec::default(), 5.0);
    assert!(seen.queued_max <= 48, "queued at most {}", seen.queued_max);
    assert!(seen.queued_max >= 32, "the limit was reached: {}", seen.queued_max);
    let (seen, _) = run(&spec, "hp97560", "noop", QueueSpec::default(), VmSpec::default(), 5.0);
    assert!(seen.queued_max > 128 && seen.queued_max <= 192, "default 128: {}", seen.queued_max);
}

/// Buffered sequential readers: the disk sees 2.6.20's read-ahead windows
/// (the first 32 KiB for 16 KiB reads, then up to 128 KiB), not the
/// application's 16 KiB records.
#[test]
fn buffered_readers_reach_the_disk_as_read_ahead_windows() {
    let spec = readers(2, false, true, 1);
    let (seen, out) = run(&spec, "hp97560", "as", QueueSpec::default(), VmSpec::default(), 30.0);
    let reads: Vec<_> = seen.inserted.iter().filter(|r| r.dir == Dir::Read).collect();
    for pid in 0..2 {
        let mine: Vec<u32> = reads.iter().filter(|r| r.pid == pid).map(|r| r.nr_sectors).collect();
        assert_eq!(mine[0], 64, "the first window: 32 KiB");
        assert_eq!(mine[1], 128, "then 64 KiB");
        assert!(mine[2..].iter().all(|&n| n == 256), "then 128 KiB each: {mine:?}");
    }
    let c = out.cache.unwrap();
    assert!(c.stats.readahead_pages > 1000 && c.stats.readpage_pages == 0);
}

/// Buffered writers: pdflush writes dirty data back in large requests of
/// its own once above the background mark; the writers are not throttled
/// below the dirty limit.
#[test]
fn buffered_writers_are_written_back_by_pdflush() {
    let spec = WorkloadSpec::Processes(ProcessesSpec {
        placement: Placement::Spread,
        group: vec![GroupSpec {
            count: 1,
            op: OpSpec::Write,
            direct: false,
            request_kb: 64.0,
            file_mb: 40.0,
            passes: 1,
            think: ThinkSpec::Constant { ms: 1.0 },
            ..GroupSpec::default()
        }],
    });
    let vm = VmSpec { memory_mb: 128, ..VmSpec::default() }; // background 12.8 MiB, limit 51 MiB
    let (seen, out) = run(&spec, "hp97560", "cfq", QueueSpec::default(), vm, 120.0);
    let flusher = out.process_names.iter().position(|n| n == "pdflush").unwrap() as u32;
    assert!(!seen.inserted.is_empty());
    assert!(seen.inserted.iter().all(|r| r.pid == flusher && r.dir == Dir::Write && !r.is_sync()));
    assert!(seen.inserted.iter().any(|r| r.nr_sectors == 1024), "max-size write-back requests");
    let c = out.cache.unwrap();
    assert_eq!(c.stats.throttled, 0);
    let written = c.stats.written_back as f64;
    assert!(written > (40.0 - 12.8 - 2.0) * 256.0, "written back down to the background mark: {written}");
}

/// A buffered reader of a file IOzone has just written finds it in the
/// page cache: IOzone without -I measures memory, not the disk.
#[test]
fn iozone_without_direct_reads_from_the_cache() {
    let spec = WorkloadSpec::Iozone(IozoneSpec {
        processes: 2,
        direct: false,
        mode: IozoneMode::Sequential,
        ..IozoneSpec::default()
    });
    let (seen, out) = run(&spec, "hp97560", "as", QueueSpec::default(), VmSpec::default(), 60.0);
    assert!(seen.inserted.iter().all(|r| r.dir == Dir::Write), "no disk reads");
    let phases: Vec<String> = out.timings.iter().map(|(_, t)| t.phase.to_string()).collect();
    assert_eq!(phases.iter().filter(|p| p.as_str() == "re-read").count(), 2);
}

/// Buffered calls served by the page cache are counted as calls, apart
/// from the disk requests: a writer rewriting a 1 MiB file in 8 KiB calls
/// with no think time only copies (2 pages at `copy_us_per_page` = 2 µs
/// each), reaches the disk through pdflush alone, and its class shows no
/// request but every call.
#[test]
fn buffered_calls_are_counted_apart_from_disk_requests() {
    let spec = WorkloadSpec::Processes(ProcessesSpec {
        placement: Placement::Spread,
        group: vec![GroupSpec {
            count: 1,
            op: OpSpec::Write,
            direct: false,
            request_kb: 8.0,
            file_mb: 1.0,
            think: ThinkSpec::Constant { ms: 0.0 },
            ..GroupSpec::default()
        }],
    });
    let (seen, out) = run(&spec, "hp97560", "noop", QueueSpec::default(), VmSpec::default(), 0.05);
    let header = iolab_sim::metrics::RunHeader { scheduler: "noop".into(), tunables: BTreeMap::new(), seed: 1 };
    let r = out.collector.finish(out.end, out.overhang_ns, header, &out.classes, &out.process_names, out.anticipation);
    assert!(seen.inserted.iter().all(|rq| out.process_names[rq.pid as usize] == "pdflush"));
    let writer = &r.per_class[0];
    assert_eq!(writer.requests, 0, "no disk request of its own");
    let calls = writer.buffered.as_ref().expect("its calls");
    // A 4 µs call begins every 4 µs from 0 to 50 ms included (each is
    // counted once it has its pages, its copy time with it).
    assert_eq!(calls.calls, 12_501);
    assert!((calls.latency_ms.mean - 0.004).abs() < 1e-9, "{:?}", calls.latency_ms);
    let mb_s = calls.calls as f64 * 8192.0 / 0.05 / 1e6;
    assert!((calls.throughput_mb_s - mb_s).abs() < 1e-6 * mb_s);
    assert_eq!(r.buffered.as_ref().map(|b| b.calls), Some(calls.calls), "the run's total");
    assert!(r.per_class.iter().filter(|c| c.name != writer.name).all(|c| c.buffered.is_none()));
}

/// Issue 25: the 6.1 elevators merge through the blk-mq path. Two writers
/// keep 16 sequential 4 KiB writes each in flight at queue depth 1: with
/// blk-mq's default 2 tags one request is in the device and one taken
/// beyond it (no budget: virtio-blk), so no bio finds a queued request to
/// join, as in 6.1; with 64 tags (the testbed's nr_requests) they merge.
#[test]
fn blk_mq_elevators_merge_async_writes_when_tags_allow() {
    let spec = WorkloadSpec::Processes(ProcessesSpec {
        placement: Placement::Spread,
        group: vec![GroupSpec {
            count: 2,
            op: OpSpec::Write,
            sync: false,
            max_outstanding: 16,
            request_kb: 4.0,
            file_mb: 64.0,
            ..GroupSpec::default()
        }],
    });
    // nr_requests 0: blk-mq's default, 2 · min(queue_depth, 128).
    let merged = |name: &str, nr: f64| {
        let d = DiskSpec { preset: Some("modern7200".into()), ..DiskSpec::default() };
        let disk = disk::build(&d, Path::new(".")).unwrap();
        let built = workload::build(&spec, disk.capacity_sectors()).unwrap();
        let ctx = SchedContext::new(disk.position_cost());
        let given: BTreeMap<String, f64> = if name == "none" { BTreeMap::new() } else { [("nr_requests".into(), nr)].into() };
        let (e, _) = sched::build(name, &given, &ctx).unwrap();
        let cfg = EngineConfig {
            queue: QueueSpec::default(),
            vm: VmSpec::default(),
            queue_depth: 1,
            device_order: Default::default(),
            max_time: Some(SimTime::from_ms_f64(500.0)),
            max_requests: None,
            seed: 1,
            cpus: None,
        };
        let mut seen = Seen::default();
        engine::run_observed(disk, e, built, &cfg, &RunControl::default(), &mut seen).unwrap();
        seen.merged
    };
    for name in ["mq-deadline", "bfq", "kyber"] {
        assert_eq!(merged(name, 0.0), 0, "{name}: 2 tags, nothing queued to merge into");
        assert!(merged(name, 64.0) > 100, "{name}: 64 tags");
    }
    assert_eq!(merged("none", 0.0), 0, "none: one driver tag");
}

/// `fsync = true` on the blk-mq path: a flush after each write, which
/// bypasses the elevator; 2.6.20's block-device fsync sends none.
#[test]
fn an_fsync_writer_flushes_on_the_blk_mq_path_only() {
    let spec = WorkloadSpec::Processes(ProcessesSpec {
        placement: Placement::Spread,
        group: vec![GroupSpec {
            op: OpSpec::Write,
            fsync: true,
            request_kb: 4.0,
            file_mb: 1.0,
            passes: 1,
            ..GroupSpec::default()
        }],
    });
    for (name, flushes) in [("mq-deadline", 256), ("deadline", 0)] {
        let (seen, out) = run(&spec, "modern7200", name, QueueSpec::default(), VmSpec::default(), 60.0);
        let f = seen.inserted.iter().filter(|r| r.nr_sectors == 0).count();
        assert_eq!(f, flushes, "{name}");
        assert_eq!(out.collector.completed() as usize, 256 + flushes, "{name}");
    }
}

//! Deadline and AS never let a request wait past its FIFO deadline by more
//! than one batch (ELEVATORS.md 1.6, 3.1).
//!
//! Under overload no scheduler meets every deadline: expired requests queue
//! behind one another. What the FIFO rule promises is that an *expired
//! request at the head of its FIFO* is served soon: within one batch. On a
//! device whose every request takes S = 5 ms, with synchronous readers and
//! asynchronous writers competing (more than the device can serve), we
//! track each direction's FIFO head and measure, at every dispatch, how long
//! the head has been both at the head and past its deadline (arrival +
//! read_expire or write_expire), and bound the worst case:
//! * deadline: the batch in progress when the deadline passes runs out
//!   (at most `fifo_batch` requests), and then the expired head is served,
//!   unless the other direction has been starved `writes_starved` times and
//!   gets one batch first, and the request in flight completes:
//!   overshoot <= (2 * fifo_batch + 1) * S;
//! * AS: the FIFO is looked at only once per `fifo_expire` (the rate
//!   limit, up to one more expire period), the batch in progress runs to
//!   its `batch_expire`, one anticipation may run (`antic_expire`), and the
//!   switch waits for the request in flight: overshoot <= fifo_expire +
//!   max(batch_expire) + antic_expire + 2 S.

use iolab_sim::blk::QueueSpec;
use iolab_sim::disk::{self, DiskSpec};
use iolab_sim::engine::{self, EngineConfig, Observer, RunControl};
use iolab_sim::request::Request;
use iolab_sim::sched::{self, SchedContext};
use iolab_sim::time::{SimTime, NS_PER_MS};
use iolab_sim::workload::group::{GroupSpec, OpSpec, ProcessesSpec};
use iolab_sim::workload::pattern::Pattern;
use iolab_sim::workload::think::ThinkSpec;
use iolab_sim::workload::{self, Placement, WorkloadSpec};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const S: u64 = 5 * NS_PER_MS;

struct Overshoot {
    expire_ns: [u64; 2],
    by_sync: bool,
    /// Queued requests per direction, oldest first: (arrival, id).
    fifo: [BTreeSet<(SimTime, u32)>; 2],
    /// When the current head of each FIFO became the head.
    head_since: [SimTime; 2],
    worst_ns: u64,
    dispatched: u64,
}

impl Overshoot {
    fn dir(&self, rq: &Request) -> usize {
        if self.by_sync {
            rq.sync_index()
        } else {
            rq.dir.index()
        }
    }

    /// How long the head of `d` has been expired while at the head.
    fn head_overdue(&self, d: usize, now: SimTime) -> u64 {
        match self.fifo[d].first() {
            Some(&(arrival, _)) => now.since((arrival + self.expire_ns[d]).max(self.head_since[d])),
            None => 0,
        }
    }
}

impl Observer for Overshoot {
    fn inserted(&mut self, rq: &Request, now: SimTime) {
        let d = self.dir(rq);
        if self.fifo[d].is_empty() {
            self.head_since[d] = now;
        }
        self.fifo[d].insert((rq.arrival, rq.id));
    }
    fn dispatched(&mut self, rq: &Request, now: SimTime) {
        for d in 0..2 {
            self.worst_ns = self.worst_ns.max(self.head_overdue(d, now));
        }
        let d = self.dir(rq);
        let was_head = self.fifo[d].first() == Some(&(rq.arrival, rq.id));
        self.fifo[d].remove(&(rq.arrival, rq.id));
        if was_head {
            self.head_since[d] = now;
        }
        self.dispatched += 1;
    }
}

fn workload(seed_groups: u32) -> WorkloadSpec {
    let reader = GroupSpec {
        name: Some("reader".into()),
        count: 6 + seed_groups,
        pattern: Pattern::Random,
        op: OpSpec::Read,
        request_kb: 4.0,
        file_mb: 64.0,
        think: ThinkSpec::Exponential { mean_ms: 2.0 },
        stop_ms: Some(20_000.0),
        ..GroupSpec::default()
    };
    let writer = GroupSpec {
        name: Some("writer".into()),
        count: 3,
        pattern: Pattern::Sequential,
        op: OpSpec::Write,
        sync: false,
        max_outstanding: 32,
        request_kb: 64.0,
        file_mb: 64.0,
        think: ThinkSpec::Constant { ms: 0.5 },
        stop_ms: Some(20_000.0),
        ..GroupSpec::default()
    };
    let mixed = GroupSpec {
        name: Some("mixed".into()),
        count: 3,
        pattern: Pattern::Sequential,
        op: OpSpec::Mix,
        think: ThinkSpec::Uniform { min_ms: 0.0, max_ms: 8.0 },
        stop_ms: Some(20_000.0),
        ..GroupSpec::default()
    };
    WorkloadSpec::Processes(ProcessesSpec { placement: Placement::Spread, group: vec![reader, writer, mixed] })
}

fn worst(name: &str, expire_ms: [u64; 2], by_sync: bool, seed: u64) -> (u64, u64) {
    let spec = DiskSpec { preset: Some("fixed".into()), ..DiskSpec::default() };
    let disk = disk::build(&spec, Path::new(".")).unwrap();
    let built = workload::build(&workload(seed as u32 % 3), disk.capacity_sectors()).unwrap();
    let ctx = SchedContext::new(disk.position_cost());
    let (e, _) = sched::build(name, &BTreeMap::new(), &ctx).unwrap();
    // Merging off: the test follows each request from insert to dispatch.
    let queue = QueueSpec { merges: false, ..QueueSpec::default() };
    let cfg = EngineConfig { queue, vm: Default::default(),
        queue_depth: 1,
        device_order: Default::default(),
        max_time: Some(SimTime(25_000 * NS_PER_MS)),
        max_requests: None,
        seed,
        cpus: None,
    };
    let mut o = Overshoot {
        expire_ns: [expire_ms[0] * NS_PER_MS, expire_ms[1] * NS_PER_MS],
        by_sync,
        fifo: [BTreeSet::new(), BTreeSet::new()],
        head_since: [SimTime::ZERO; 2],
        worst_ns: 0,
        dispatched: 0,
    };
    engine::run_observed(disk, e, built, &cfg, &RunControl::default(), &mut o).unwrap();
    assert!(o.dispatched > 3000, "{name}: the load is too light to test anything");
    (o.worst_ns, o.dispatched)
}

#[test]
fn deadline_overshoot_is_at_most_one_batch_after_a_starved_one() {
    let bound = (2 * 16 + 1) * S;
    for seed in 1..=4 {
        let (w, _) = worst("deadline", [500, 5000], false, seed);
        assert!(w <= bound, "seed {seed}: an expired FIFO head waited {} ms", w / NS_PER_MS);
        assert!(w > 0, "seed {seed}: no request expired; the test load is too light");
    }
}

#[test]
fn as_overshoot_is_bounded_by_one_batch() {
    // read_expire 125, write_expire 250, batch expiry 500/125, antic 6 ms.
    for seed in 1..=4 {
        let (w, _) = worst("as", [125, 250], true, seed);
        let bound = (250 + 500 + 6) * NS_PER_MS + 2 * S;
        assert!(w <= bound, "seed {seed}: an expired FIFO head waited {} ms", w / NS_PER_MS);
        assert!(w > 0, "seed {seed}: no request expired; the test load is too light");
    }
}

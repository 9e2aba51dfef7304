//! The standard simulated process: it works through a list of phases, each
//! a pass (or several) over its file region with one access pattern.
//!
//! Each phase does its I/O one of two ways:
//! - direct (`O_DIRECT`, the default): block requests of one record each,
//!   bypassing the page cache. A synchronous phase is closed-loop: it
//!   issues one request, waits for it, thinks, and issues the next. An
//!   asynchronous one issues without waiting, up to `max_outstanding`
//!   requests in flight, and thinks between issues (AIO-style; for writes
//!   the block layer treats them as async, for reads as sync: a read is
//!   always sync to the schedulers).
//! - buffered: `read(2)`/`write(2)` of one record through the page cache
//!   (read-ahead, dirty pages and write-back, `crate::pagecache`); the
//!   process is blocked in each call until it returns.
//!
//! `cpu` is CPU time spent per operation before the next (the work around
//! the I/O; IOzone itself has next to none), drawn like a think time and
//! spent before it: on a CPU of the process's own, unless the run has
//! fewer CPUs (`[host] cpus`), where it waits for one. Processes that run
//! the same phases together (IOzone's throughput mode) can meet at a
//! barrier at the end of each phase, so
//! that every phase starts at once for all of them; each phase's start,
//! end and bytes are kept for IOzone-style throughput (`timings`).

use super::pattern::{record_index, Pattern};
use super::think::ThinkTime;
use super::{IoOp, Process, Step};
use crate::fileop::{FileOp, PAGE_BYTES, PAGE_SECTORS};
use crate::request::{Dir, IoPrio, Request, SECTOR_BYTES};
use crate::rng::SimRng;
use crate::time::SimTime;
use serde::Serialize;

/// What a phase does to each record.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum OpKind {
    Read,
    Write,
    /// Read with this probability, else write.
    Mix { read_fraction: f64 },
}

/// One phase of a process's life.
#[derive(Clone, Debug)]
pub struct Phase {
    /// The phase's name in results (IOzone's test names).
    pub name: &'static str,
    pub pattern: Pattern,
    pub op: OpKind,
    /// Direct I/O (true) or buffered through the page cache.
    pub direct: bool,
    /// Direct I/O only: synchronous (closed loop) or asynchronous.
    pub sync: bool,
    /// Direct I/O only: the requests' sync flag (`REQ_SYNC`), whether the
    /// process waits for them or not.
    pub rq_sync: bool,
    /// Direct writes only: each write is followed by a cache flush that
    /// the process waits for too (`fsync(2)` → `blkdev_issue_flush`).
    pub fsync: bool,
    /// Requests in flight at most (asynchronous direct phases).
    pub max_outstanding: u32,
    pub record_sectors: u32,
    /// Stride in records (strided pattern only).
    pub stride_records: u64,
    /// Operations in this phase; `None` = until the process stops.
    pub ops: Option<u64>,
    pub think: ThinkTime,
    /// CPU time per operation, spent before the think time.
    pub cpu: ThinkTime,
}

/// When a phase of one process started and ended, and what it moved.
#[derive(Copy, Clone, Debug, PartialEq, Serialize)]
pub struct PhaseTiming {
    pub phase: &'static str,
    pub start: SimTime,
    pub end: SimTime,
    pub bytes: u64,
}

/// A meeting point at the end of every phase for `parties` processes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Barrier {
    /// Told apart from other barriers of the run.
    pub group: u32,
    pub parties: u32,
}

/// What a phase's fixed parameters give each of its requests, worked out
/// once per process (`ThinkTime::is_zero` and the division are a few
/// dozen instructions on every request otherwise).
#[derive(Copy, Clone, Debug)]
struct Derived {
    /// It thinks or computes between operations.
    pauses: bool,
    /// Records in the region (at least 1: a smaller region is one record).
    records: u64,
}

/// A process that runs [`Phase`]s over a contiguous file region.
pub struct PatternProcess {
    class: u32,
    region_start: u64,
    region_sectors: u64,
    stop: SimTime,
    phases: Vec<Phase>,
    /// Per phase, what its fixed parameters give every request.
    derived: Vec<Derived>,
    phase: usize,
    /// Operations issued in the current phase.
    done: u64,
    outstanding: u32,
    /// A think is due before the next issue.
    think_due: bool,
    barrier: Option<Barrier>,
    /// The barrier at the end of the current phase was passed.
    met: bool,
    timings: Vec<PhaseTiming>,
    /// The current phase's start, and bytes so far.
    phase_start: Option<SimTime>,
    phase_bytes: u64,
    /// Its I/O priority (`ionice`).
    pub ioprio: IoPrio,
    /// A flush is due before the next operation (an fsync phase's write
    /// completed).
    flush_due: bool,
}

impl PatternProcess {
    /// The region should hold at least one record of every phase (a
    /// smaller region is used as one record).
    pub fn new(class: u32, region_start: u64, region_sectors: u64, stop: SimTime, phases: Vec<Phase>) -> Self {
        let derived = phases
            .iter()
            .map(|p| Derived {
                pauses: !p.think.is_zero() || !p.cpu.is_zero(),
                records: (region_sectors / p.record_sectors.max(1) as u64).max(1),
            })
            .collect();
        PatternProcess {
            class,
            region_start,
            region_sectors,
            stop,
            phases,
            derived,
            phase: 0,
            done: 0,
            outstanding: 0,
            think_due: false,
            barrier: None,
            met: false,
            timings: Vec::new(),
            phase_start: None,
            phase_bytes: 0,
            ioprio: IoPrio::default(),
            flush_due: false,
        }
    }

    /// Meet the other processes of `barrier` at the end of every phase.
    pub fn with_barrier(mut self, barrier: Barrier) -> Self {
        self.barrier = Some(barrier);
        self
    }

    /// The current phase, moving on when one is finished; `Err(step)`
    /// when the process must wait at the barrier first.
    fn current(&mut self, now: SimTime) -> Result<Option<usize>, Step> {
        while let Some(p) = self.phases.get(self.phase) {
            // A phase ends when its last request completes (IOzone runs its
            // tests one after the other).
            if p.ops.is_some_and(|n| self.done >= n) && self.outstanding == 0 && !self.flush_due {
                if let Some(start) = self.phase_start.take() {
                    let name = p.name;
                    self.timings.push(PhaseTiming { phase: name, start, end: now, bytes: self.phase_bytes });
                    self.phase_bytes = 0;
                }
                if let (Some(b), false) = (self.barrier, self.met) {
                    self.met = true;
                    return Err(Step::Barrier { group: b.group, key: self.phase as u32, parties: b.parties });
                }
                self.met = false;
                self.phase += 1;
                self.done = 0;
                self.think_due = false;
            } else {
                return Ok(Some(self.phase));
            }
        }
        Ok(None)
    }

    /// Each phase's start, end and bytes, in order.
    pub fn timings(&self) -> &[PhaseTiming] {
        &self.timings
    }
}

impl Process for PatternProcess {
    fn class(&self) -> u32 {
        self.class
    }

    fn ioprio(&self) -> IoPrio {
        self.ioprio
    }

    fn next(&mut self, now: SimTime, rng: &mut SimRng) -> Step {
        let stopped = now >= self.stop;
        let pi = match self.current(now) {
            Ok(Some(pi)) => pi,
            Ok(None) => return if self.outstanding > 0 { Step::Wait } else { Step::Exit },
            Err(step) => return step,
        };
        let p = &self.phases[pi];
        let (outstanding, done) = (self.outstanding, self.done);
        if self.flush_due {
            if outstanding > 0 {
                return Step::Wait;
            }
            // fsync after the write: the flush, waited for, before anything
            // else (a think, the next write, the end).
            self.flush_due = false;
            self.outstanding += 1;
            return Step::IssueThenWait(IoOp::flush());
        }
        if stopped || p.ops.is_some_and(|n| done >= n) {
            return if outstanding > 0 { Step::Wait } else { Step::Exit };
        }
        // Blocked first, then think: a synchronous process thinks after
        // its request completes, not while it is in flight.
        let limit = if p.direct && !p.sync { p.max_outstanding.max(1) } else { 1 };
        if outstanding >= limit {
            return Step::Wait;
        }
        if self.think_due {
            // think first, then cpu: the order of the draws every result
            // so far was made with
            let sleep = p.think.draw(rng);
            let cpu = p.cpu.draw(rng);
            self.think_due = false;
            if cpu > 0 {
                return Step::Compute { cpu, sleep };
            }
            if sleep > 0 {
                return Step::Think(sleep);
            }
        }
        let rec = p.record_sectors as u64;
        let fixed = self.derived[pi];
        let idx = record_index(p.pattern, done, fixed.records, p.stride_records, rng);
        let dir = match p.op {
            OpKind::Read => Dir::Read,
            OpKind::Write => Dir::Write,
            OpKind::Mix { read_fraction } => {
                if rng.unit() < read_fraction {
                    Dir::Read
                } else {
                    Dir::Write
                }
            }
        };
        self.phase_start.get_or_insert(now);
        self.phase_bytes += rec * SECTOR_BYTES;
        self.done += 1;
        self.think_due = fixed.pauses;
        if !p.direct {
            // read(2) / write(2) of the record through the page cache.
            let (from, to) = (idx * rec * SECTOR_BYTES, (idx + 1) * rec * SECTOR_BYTES);
            let page = from / PAGE_BYTES;
            let end = to.div_ceil(PAGE_BYTES);
            let partial = from % PAGE_BYTES != 0 || to % PAGE_BYTES != 0;
            let sectors = p.record_sectors;
            return Step::File(FileOp { file: 0, page, pages: (end - page) as u32, dir, partial, sectors });
        }
        let op = IoOp { sector: self.region_start + idx * rec, nr_sectors: p.record_sectors, dir, sync: p.rq_sync };
        self.outstanding += 1;
        self.flush_due = p.fsync && dir == Dir::Write;
        // Asked again at once, the checks above would answer Wait: the
        // same instant (not stopped), and `current` moves on only with
        // nothing outstanding.
        if self.outstanding >= limit || p.ops.is_some_and(|n| self.done >= n) {
            Step::IssueThenWait(op)
        } else {
            Step::Issue(op)
        }
    }

    fn completed(&mut self, _rq: &Request, _now: SimTime) {
        self.outstanding -= 1;
    }

    /// The process's one file is its region.
    fn file_sector(&self, _file: u32, page: u64) -> u64 {
        self.region_start + page * PAGE_SECTORS
    }

    fn file_pages(&self, _file: u32) -> u64 {
        self.region_sectors.div_ceil(PAGE_SECTORS)
    }

    fn timings(&self) -> &[PhaseTiming] {
        &self.timings
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_MS;

    fn phase(sync: bool, max_outstanding: u32) -> Phase {
        Phase {
            name: "test",
            pattern: Pattern::Sequential,
            op: OpKind::Read,
            direct: true,
            sync,
            rq_sync: sync,
            fsync: false,
            max_outstanding,
            record_sectors: 8,
            stride_records: 1,
            ops: Some(3),
            think: ThinkTime::Constant(NS_PER_MS),
            cpu: ThinkTime::Constant(0),
        }
    }

    fn rq(sector: u64) -> Request {
        Request { id: 0, pid: 0, sector, nr_sectors: 8, dir: Dir::Read, sync: true, arrival: SimTime::ZERO }
    }

    #[test]
    fn sync_process_thinks_after_completion_not_during_io() {
        let mut rng = SimRng::new(1);
        let mut p = PatternProcess::new(0, 100, 64, SimTime::NEVER, vec![phase(true, 1)]);
        let t = SimTime::ZERO;
        assert!(matches!(p.next(t, &mut rng), Step::IssueThenWait(IoOp { sector: 100, .. })));
        assert_eq!(p.next(t, &mut rng), Step::Wait);
        p.completed(&rq(100), t);
        assert_eq!(p.next(t, &mut rng), Step::Think(NS_PER_MS));
        assert!(matches!(p.next(t, &mut rng), Step::IssueThenWait(IoOp { sector: 108, .. })));
    }

    /// `fsync = true`: each write is followed by a flush, waited for,
    /// before the think and the next write.
    #[test]
    fn an_fsync_phase_flushes_after_each_write_before_thinking() {
        let mut rng = SimRng::new(1);
        let mut ph = phase(true, 1);
        ph.op = OpKind::Write;
        ph.fsync = true;
        ph.ops = Some(2);
        let mut p = PatternProcess::new(0, 100, 64, SimTime::NEVER, vec![ph]);
        let t = SimTime::ZERO;
        assert!(matches!(p.next(t, &mut rng), Step::IssueThenWait(IoOp { sector: 100, nr_sectors: 8, .. })));
        assert_eq!(p.next(t, &mut rng), Step::Wait);
        p.completed(&rq(100), t);
        assert_eq!(p.next(t, &mut rng), Step::IssueThenWait(IoOp::flush()));
        assert_eq!(p.next(t, &mut rng), Step::Wait);
        p.completed(&rq(0), t);
        assert_eq!(p.next(t, &mut rng), Step::Think(NS_PER_MS));
        assert!(matches!(p.next(t, &mut rng), Step::IssueThenWait(IoOp { sector: 108, .. })));
        p.completed(&rq(108), t);
        assert_eq!(p.next(t, &mut rng), Step::IssueThenWait(IoOp::flush()), "the last write too");
        p.completed(&rq(0), t);
        assert_eq!(p.next(t, &mut rng), Step::Exit);
    }

    #[test]
    fn async_writer_thinks_between_issues_up_to_its_bound_then_exits() {
        let mut rng = SimRng::new(1);
        let mut ph = phase(false, 2);
        ph.op = OpKind::Write;
        let mut p = PatternProcess::new(0, 0, 64, SimTime::NEVER, vec![ph]);
        let t = SimTime::ZERO;
        assert!(matches!(p.next(t, &mut rng), Step::Issue(_)));
        assert_eq!(p.next(t, &mut rng), Step::Think(NS_PER_MS));
        assert!(matches!(p.next(t, &mut rng), Step::IssueThenWait(_)));
        assert_eq!(p.next(t, &mut rng), Step::Wait); // two in flight
        p.completed(&rq(0), t);
        assert_eq!(p.next(t, &mut rng), Step::Think(NS_PER_MS));
        assert!(matches!(p.next(t, &mut rng), Step::IssueThenWait(_)));
        assert_eq!(p.next(t, &mut rng), Step::Wait); // 3 ops issued: phase done, 2 in flight
        p.completed(&rq(0), t);
        p.completed(&rq(0), t);
        assert_eq!(p.next(t, &mut rng), Step::Exit);
    }

    #[test]
    fn buffered_phases_issue_file_operations_and_cpu_adds_to_think() {
        let mut rng = SimRng::new(1);
        let mut ph = phase(true, 1);
        ph.direct = false;
        ph.record_sectors = 16; // 8 KiB: two pages
        ph.cpu = ThinkTime::Constant(5_000);
        let mut p = PatternProcess::new(0, 800, 64, SimTime::NEVER, vec![ph]);
        let t = SimTime::ZERO;
        let op = FileOp { file: 0, page: 0, pages: 2, dir: Dir::Read, partial: false, sectors: 16 };
        assert_eq!(p.next(t, &mut rng), Step::File(op));
        assert_eq!(p.next(t, &mut rng), Step::Compute { cpu: 5_000, sleep: NS_PER_MS }, "no wait: the call has returned");
        assert_eq!(p.next(t, &mut rng), Step::File(FileOp { page: 2, ..op }));
        assert_eq!((p.file_sector(0, 3), p.file_pages(0)), (800 + 24, 8));
    }

    #[test]
    fn barrier_at_each_phase_end_and_phase_timings() {
        let mut rng = SimRng::new(1);
        let mut ph = phase(true, 1);
        ph.think = ThinkTime::Constant(0);
        ph.ops = Some(1);
        let b = Barrier { group: 7, parties: 3 };
        let mut p = PatternProcess::new(0, 0, 64, SimTime::NEVER, vec![ph.clone(), ph]).with_barrier(b);
        assert!(matches!(p.next(SimTime(10), &mut rng), Step::IssueThenWait(_)));
        p.completed(&rq(0), SimTime(30));
        assert_eq!(p.next(SimTime(30), &mut rng), Step::Barrier { group: 7, key: 0, parties: 3 });
        assert!(matches!(p.next(SimTime(50), &mut rng), Step::IssueThenWait(_)), "released: the next phase");
        p.completed(&rq(0), SimTime(90));
        assert_eq!(p.next(SimTime(90), &mut rng), Step::Barrier { group: 7, key: 1, parties: 3 });
        assert_eq!(p.next(SimTime(95), &mut rng), Step::Exit);
        let t: Vec<(u64, u64, u64)> = p.timings().iter().map(|x| (x.start.0, x.end.0, x.bytes)).collect();
        assert_eq!(t, [(10, 30, 4096), (50, 90, 4096)]);
    }

    mod issue_then_wait {
        use super::*;
        use proptest::prelude::*;

        fn phase_strategy() -> impl Strategy<Value = Phase> {
            (any::<bool>(), 1u32..4, prop::option::of(1u64..6), 0u64..3, prop::sample::select(vec![
                Pattern::Sequential,
                Pattern::Random,
                Pattern::Strided,
                Pattern::Backward,
            ]))
                .prop_map(|(sync, max_outstanding, ops, think_ms, pattern)| Phase {
                    pattern,
                    ops,
                    think: ThinkTime::Constant(think_ms * NS_PER_MS),
                    ..phase(sync, max_outstanding)
                })
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(300))]
            /// `IssueThenWait` is exactly an issue after which asking
            /// again at the same instant answers `Wait` (what the engine
            /// did before the step existed): asked again after each
            /// issue, the process answers `Wait` after that step and
            /// never after a plain `Issue`.
            #[test]
            fn says_wait_exactly_when_asking_again_would(
                phases in prop::collection::vec(phase_strategy(), 1..4),
                stop_ms in prop::option::of(1u64..40),
                completions in prop::collection::vec(0u64..3, 64),
                seed in any::<u64>(),
            ) {
                let stop = stop_ms.map_or(SimTime::NEVER, |ms| SimTime(ms * NS_PER_MS));
                let mut p = PatternProcess::new(0, 0, 256, stop, phases);
                let (mut rng, mut now, mut in_flight) = (SimRng::new(seed), SimTime::ZERO, 0u32);
                let mut completions = completions.into_iter().cycle();
                for _ in 0..400 {
                    let step = p.next(now, &mut rng);
                    match step {
                        Step::Issue(_) | Step::IssueThenWait(_) => {
                            in_flight += 1;
                            let waits = matches!(step, Step::IssueThenWait(_));
                            // Ask again at once, as the engine used to.
                            let again = p.next(now, &mut rng);
                            prop_assert_eq!(again == Step::Wait, waits, "{:?} then {:?}", step, again);
                            match again {
                                Step::Issue(_) | Step::IssueThenWait(_) => in_flight += 1,
                                Step::Think(ns) => now += ns,
                                Step::Compute { cpu, sleep } => now += cpu + sleep,
                                Step::Exit => break,
                                _ => {}
                            }
                        }
                        Step::Think(ns) => now += ns,
                        Step::Compute { cpu, sleep } => now += cpu + sleep,
                        Step::Wait => {
                            // Blocked: its oldest request completes.
                            prop_assert!(in_flight > 0, "waits with nothing in flight");
                            now += 100_000;
                            p.completed(&rq(0), now);
                            in_flight -= 1;
                            continue;
                        }
                        Step::Exit => break,
                        Step::File(_) | Step::Barrier { .. } => prop_assert!(false, "{:?}", step),
                    }
                    // Some of the requests in flight complete a moment later.
                    now += 100_000;
                    for _ in 0..completions.next().unwrap_or(0).min(in_flight as u64) {
                        p.completed(&rq(0), now);
                        in_flight -= 1;
                    }
                }
            }
        }
    }
}

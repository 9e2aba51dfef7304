//! The standard simulated process: it works through a list of phases, each
//! a pass (or several) over its file region with one access pattern.
//!
//! A synchronous process is closed-loop: it issues one request, waits for
//! it, thinks, and issues the next. An asynchronous one models write-back:
//! it issues without waiting, up to `max_outstanding` requests in flight,
//! and thinks between issues.

use super::pattern::{record_index, Pattern};
use super::think::ThinkTime;
use super::{IoOp, Process, Step};
use crate::request::{Dir, IoPrio, Request};
use crate::rng::SimRng;
use crate::time::SimTime;

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
    pub pattern: Pattern,
    pub op: OpKind,
    /// Synchronous (closed loop) or asynchronous (write-back).
    pub sync: bool,
    /// Requests in flight at most (1 for synchronous phases).
    pub max_outstanding: u32,
    pub record_sectors: u32,
    /// Stride in records (strided pattern only).
    pub stride_records: u64,
    /// Operations in this phase; `None` = until the process stops.
    pub ops: Option<u64>,
    pub think: ThinkTime,
}

/// A process that runs [`Phase`]s over a contiguous file region.
pub struct PatternProcess {
    class: u32,
    region_start: u64,
    region_sectors: u64,
    stop: SimTime,
    phases: Vec<Phase>,
    phase: usize,
    /// Operations issued in the current phase.
    done: u64,
    outstanding: u32,
    /// A think is due before the next issue.
    think_due: bool,
    /// Its I/O priority (`ionice`).
    pub ioprio: IoPrio,
}

impl PatternProcess {
    /// The region should hold at least one record of every phase (a
    /// smaller region is used as one record).
    pub fn new(class: u32, region_start: u64, region_sectors: u64, stop: SimTime, phases: Vec<Phase>) -> Self {
        PatternProcess {
            class,
            region_start,
            region_sectors,
            stop,
            phases,
            phase: 0,
            done: 0,
            outstanding: 0,
            think_due: false,
            ioprio: IoPrio::default(),
        }
    }

    /// Index of the phase in progress, moving on when one is finished.
    fn current(&mut self) -> Option<usize> {
        while let Some(p) = self.phases.get(self.phase) {
            // A phase ends when its last request completes (IOzone runs its
            // tests one after the other).
            if p.ops.is_some_and(|n| self.done >= n) && self.outstanding == 0 {
                self.phase += 1;
                self.done = 0;
                self.think_due = false;
            } else {
                return Some(self.phase);
            }
        }
        None
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
        let Some(pi) = self.current() else {
            return if self.outstanding > 0 { Step::Wait } else { Step::Exit };
        };
        let p = &self.phases[pi];
        let (outstanding, done) = (self.outstanding, self.done);
        if stopped || p.ops.is_some_and(|n| done >= n) {
            return if outstanding > 0 { Step::Wait } else { Step::Exit };
        }
        // Blocked first, then think: a synchronous process thinks after
        // its request completes, not while it is in flight.
        let limit = if p.sync { 1 } else { p.max_outstanding.max(1) };
        if outstanding >= limit {
            return Step::Wait;
        }
        if self.think_due && !p.think.is_zero() {
            let ns = p.think.draw(rng);
            self.think_due = false;
            if ns > 0 {
                return Step::Think(ns);
            }
        }
        let rec = p.record_sectors as u64;
        let records = (self.region_sectors / rec).max(1);
        let idx = record_index(p.pattern, done, records, p.stride_records, rng);
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
        let op = IoOp { sector: self.region_start + idx * rec, nr_sectors: p.record_sectors, dir, sync: p.sync };
        self.done += 1;
        self.outstanding += 1;
        self.think_due = true;
        Step::Issue(op)
    }

    fn completed(&mut self, _rq: &Request, _now: SimTime) {
        self.outstanding -= 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::NS_PER_MS;

    fn phase(sync: bool, max_outstanding: u32) -> Phase {
        Phase {
            pattern: Pattern::Sequential,
            op: OpKind::Read,
            sync,
            max_outstanding,
            record_sectors: 8,
            stride_records: 1,
            ops: Some(3),
            think: ThinkTime::Constant(NS_PER_MS),
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
        assert!(matches!(p.next(t, &mut rng), Step::Issue(IoOp { sector: 100, .. })));
        assert_eq!(p.next(t, &mut rng), Step::Wait);
        p.completed(&rq(100), t);
        assert_eq!(p.next(t, &mut rng), Step::Think(NS_PER_MS));
        assert!(matches!(p.next(t, &mut rng), Step::Issue(IoOp { sector: 108, .. })));
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
        assert!(matches!(p.next(t, &mut rng), Step::Issue(_)));
        assert_eq!(p.next(t, &mut rng), Step::Wait); // two in flight
        p.completed(&rq(0), t);
        assert_eq!(p.next(t, &mut rng), Step::Think(NS_PER_MS));
        assert!(matches!(p.next(t, &mut rng), Step::Issue(_)));
        assert_eq!(p.next(t, &mut rng), Step::Wait); // 3 ops issued: phase done, 2 in flight
        p.completed(&rq(0), t);
        p.completed(&rq(0), t);
        assert_eq!(p.next(t, &mut rng), Step::Exit);
    }
}

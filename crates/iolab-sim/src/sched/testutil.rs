//! Helpers for the schedulers' unit tests: build requests and a cost
//! function without an engine or a disk.

use super::anticipatory::hz::{Hz, PAPER_HZ};
use super::anticipatory::io_context::IoHistory;
use super::{Dispatch, Elevator, SchedContext};
use crate::cost::PositionCost;
use crate::request::{Dir, ProcessId, Request, RequestId};
use crate::time::{SimTime, NS_PER_MS};
use std::sync::Arc;

/// Length of every test request, in sectors (4 KiB).
pub const LEN: u32 = 8;

/// A synchronous read of `LEN` sectors at `sector`.
pub fn read(id: RequestId, pid: ProcessId, sector: u64) -> Request {
    Request { id, pid, sector, nr_sectors: LEN, dir: Dir::Read, sync: true, arrival: SimTime::ZERO }
}

/// An asynchronous (buffered) write of `LEN` sectors at `sector`.
pub fn write(id: RequestId, pid: ProcessId, sector: u64) -> Request {
    Request { dir: Dir::Write, sync: false, ..read(id, pid, sector) }
}

pub fn ms(x: u64) -> SimTime {
    SimTime(x * NS_PER_MS)
}

/// An empty AS history at the paper's HZ.
pub fn hist() -> IoHistory {
    IoHistory::new(Hz::new(PAPER_HZ))
}

pub struct NoCost;

impl PositionCost for NoCost {
    fn seek_ns(&self, _: u64, _: u64) -> u64 {
        0
    }
    fn mean_rotation_ns(&self) -> u64 {
        0
    }
}

pub fn ctx() -> SchedContext {
    SchedContext::new(Arc::new(NoCost))
}

/// Dispatch and expect a request; returns its id.
pub fn take(e: &mut dyn Elevator, now: SimTime) -> RequestId {
    match e.dispatch(now) {
        Dispatch::Request(rq) => rq.id,
        other => panic!("expected a request at {now:?}, got {other:?}"),
    }
}

/// Seek time proportional to distance: 1 µs per sector, so tests can
/// compute service-time estimates by hand.
pub struct LinearCost;

impl PositionCost for LinearCost {
    fn seek_ns(&self, from: u64, to: u64) -> u64 {
        from.abs_diff(to) * 1_000
    }
    fn mean_rotation_ns(&self) -> u64 {
        0
    }
}

/// A policy context for `target` waiting (WAIT_NEXT since 10 ms) with the
/// head at `last_sector`, over `h`, with `antic_expire` 6 ms.
pub fn policy_ctx<'a>(
    h: &'a mut IoHistory,
    target: ProcessId,
    last_sector: u64,
    cost: &'a dyn PositionCost,
) -> super::anticipatory::policy::PolicyCtx<'a> {
    use super::anticipatory::policy::{AnticStatus, PolicyCtx};
    PolicyCtx {
        now: ms(10),
        hz: Hz::new(PAPER_HZ),
        antic_expire_ns: ms(6).ns(),
        hist: h,
        target,
        status: AnticStatus::WaitNext,
        ioc_finished: true,
        antic_start: ms(10),
        last_sector,
        cost,
    }
}

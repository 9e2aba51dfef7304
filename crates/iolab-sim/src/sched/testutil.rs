//! Helpers for the schedulers' unit tests: build requests and a cost
//! function without an engine or a disk.

use super::anticipatory::hz::{Hz, PAPER_HZ};
use super::anticipatory::io_context::IoHistory;
use super::{Dispatch, Elevator, SchedContext};
use crate::disk::PositionCost;
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
    SchedContext { position_cost: Arc::new(NoCost) }
}

/// Dispatch and expect a request; returns its id.
pub fn take(e: &mut dyn Elevator, now: SimTime) -> RequestId {
    match e.dispatch(now) {
        Dispatch::Request(rq) => rq.id,
        other => panic!("expected a request at {now:?}, got {other:?}"),
    }
}

//! Block requests as the scheduling layer sees them.

use crate::time::SimTime;
use serde::Serialize;

/// Bytes per sector: the simulator's unit of position and size.
pub const SECTOR_BYTES: u64 = 512;

/// Index of a request within one run (dense, from 0).
pub type RequestId = u32;
/// Identifier of a simulated process (its I/O context), dense from 0.
pub type ProcessId = u32;

/// Data direction.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Dir {
    Read,
    Write,
}

impl Dir {
    pub fn index(self) -> usize {
        match self {
            Dir::Read => 0,
            Dir::Write => 1,
        }
    }
}

/// One block request. Small and `Copy`: schedulers keep their own copies in
/// their sort trees and FIFOs, exactly as Linux elevators keep `struct
/// request` pointers, and hand one back on dispatch.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub id: RequestId,
    /// The process (I/O context) that issued it.
    pub pid: ProcessId,
    /// First sector (512-byte units).
    pub sector: u64,
    /// Length in sectors (at least 1).
    pub nr_sectors: u32,
    pub dir: Dir,
    /// Synchronous: the issuer waits for it (reads, O_SYNC writes). AS and
    /// CFQ treat sync requests as "reads" (ELEVATORS.md 1.1).
    pub sync: bool,
    /// When it was inserted into the scheduler.
    pub arrival: SimTime,
}

impl Request {
    /// First sector after the request.
    pub fn end_sector(&self) -> u64 {
        self.sector + self.nr_sectors as u64
    }
    pub fn bytes(&self) -> u64 {
        self.nr_sectors as u64 * SECTOR_BYTES
    }
    /// AS and CFQ's notion of direction: sync (index 0) or async (index 1).
    pub fn sync_index(&self) -> usize {
        if self.sync {
            0
        } else {
            1
        }
    }
}

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
    /// The issuer's sync flag (Linux `REQ_RW_SYNC`, set from `BIO_RW_SYNC`:
    /// O_DIRECT and O_SYNC writes, `WRITE_SYNC`). Whether the schedulers
    /// treat a request as sync is [`Request::is_sync`], not this flag: a
    /// read is sync whatever the flag says.
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
    /// Linux 2.6.20 `rq_is_sync` (include/linux/blkdev.h): every read, and
    /// a write flagged `REQ_RW_SYNC`. This is what AS and CFQ call "sync"
    /// (AS's "read" direction, CFQ's per-process queue, the think-time and
    /// seek history); the issuer's own `sync` flag only decides it for
    /// writes.
    pub fn is_sync(&self) -> bool {
        self.dir == Dir::Read || self.sync
    }
    /// AS's notion of direction (`rq_is_sync` as an index): sync (index 0)
    /// or async (index 1).
    pub fn sync_index(&self) -> usize {
        if self.is_sync() {
            0
        } else {
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rq(dir: Dir, sync: bool) -> Request {
        Request { id: 0, pid: 0, sector: 0, nr_sectors: 8, dir, sync, arrival: SimTime::ZERO }
    }

    /// Issue 9: `rq_is_sync` is "every read, plus writes flagged sync",
    /// not the issuer's flag alone.
    #[test]
    fn rq_is_sync_is_every_read_plus_flagged_writes() {
        assert!(rq(Dir::Read, true).is_sync());
        assert!(rq(Dir::Read, false).is_sync(), "a read is sync whatever its flag");
        assert!(rq(Dir::Write, true).is_sync(), "WRITE_SYNC (O_DIRECT, O_SYNC)");
        assert!(!rq(Dir::Write, false).is_sync(), "write-back");
        assert_eq!(rq(Dir::Read, false).sync_index(), 0);
        assert_eq!(rq(Dir::Write, false).sync_index(), 1);
    }
}

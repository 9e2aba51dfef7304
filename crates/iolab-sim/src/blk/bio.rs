//! Bios (`struct bio`): one contiguous run of sectors someone wants moved,
//! and who to tell when it is done. A request holds one or more bios,
//! linked in disk order (`rq->bio` .. `rq->biotail`); they live in a store
//! with a free list, so steady-state submission allocates nothing.

use crate::request::{Dir, ProcessId, Request};
use crate::time::SimTime;

/// End of a bio list.
pub const NIL: u32 = u32::MAX;

/// Who gets told when a bio completes.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A process's direct I/O (or any block-level request a workload
    /// issues itself). `op` numbers the process's operation when it was
    /// split into several bios; `SINGLE` when it is one bio.
    Direct { op: u32 },
    /// The page cache: pages `page .. page + pages` of cache file `file`
    /// (read-ahead or a page read, or write-back).
    Cache { file: u32, page: u32, pages: u32 },
}

/// `Origin::Direct { op: SINGLE }`: an operation that is one bio.
pub const SINGLE: u32 = u32::MAX;

/// A bio: the submitter (its I/O context), the sectors, the direction and
/// `BIO_RW_SYNC`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Bio {
    pub pid: ProcessId,
    pub sector: u64,
    pub nr_sectors: u32,
    pub dir: Dir,
    /// `BIO_RW_SYNC` (O_DIRECT writes are `WRITE_SYNC` in 2.6.20's
    /// fs/direct-io.c; reads are plain `READ`).
    pub sync: bool,
    pub origin: Origin,
}

impl Bio {
    pub fn end_sector(&self) -> u64 {
        self.sector + self.nr_sectors as u64
    }

    /// The bio seen as a request (id 0), for the elevator's merge hooks
    /// and for a process's completion callback.
    pub fn as_request(&self, id: u32, arrival: SimTime) -> Request {
        Request {
            id,
            pid: self.pid,
            sector: self.sector,
            nr_sectors: self.nr_sectors,
            dir: self.dir,
            sync: self.sync,
            arrival,
        }
    }
}

#[derive(Copy, Clone, Debug)]
struct Slot {
    bio: Bio,
    submitted: SimTime,
    next: u32,
}

/// Bios in flight, linked into their requests' lists.
#[derive(Debug, Default)]
pub struct BioStore {
    slots: Vec<Slot>,
    free: Vec<u32>,
}

impl BioStore {
    /// Store a bio (not linked to anything yet); returns its index.
    pub fn push(&mut self, bio: Bio, submitted: SimTime) -> u32 {
        let slot = Slot { bio, submitted, next: NIL };
        match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = slot;
                i
            }
            None => {
                self.slots.push(slot);
                (self.slots.len() - 1) as u32
            }
        }
    }

    /// Link `b` after `a` (`a` was the tail of its list).
    pub fn link(&mut self, a: u32, b: u32) {
        self.slots[a as usize].next = b;
    }

    pub fn next(&self, b: u32) -> u32 {
        self.slots[b as usize].next
    }

    /// Take a bio out of the store: its content and the next in its list.
    pub fn take(&mut self, b: u32) -> (Bio, SimTime, u32) {
        let s = self.slots[b as usize];
        self.free.push(b);
        (s.bio, s.submitted, s.next)
    }

    /// Bios stored (tests).
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

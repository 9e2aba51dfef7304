//! Turning one file operation into block requests, and issuing them.
//!
//! A file-system workload (Postmark, web) decides what a file operation
//! touches and pushes the requests here, in order; [`OpQueue::poll`] then
//! hands them to the engine one at a time. A synchronous request (a read, a
//! metadata write under `sync_metadata`, any direct-I/O request) blocks the
//! process until it completes; an asynchronous one (write-back) is issued
//! without waiting, up to `max_async` in flight (beyond that the process
//! waits, as a writer throttled by the kernel's dirty-page limit does).
//!
//! The request list is kept between operations, so steady-state issuing
//! allocates nothing.

use super::fs_layout::{FsLayout, BLOCK_BYTES, BLOCK_SECTORS};
use super::{IoOp, Step};
use crate::fileop::FileOp;
use crate::request::{Dir, Request};
use serde::{Deserialize, Serialize};

/// How file data reaches the disk.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IoMode {
    /// Through the page cache: whole blocks, one request per contiguous run
    /// (up to the largest request size); reads are synchronous, data writes
    /// are write-back (asynchronous).
    #[default]
    Buffered,
    /// `O_DIRECT`: each application read or write of `*_block_bytes` is its
    /// own synchronous request, rounded out to whole sectors.
    Direct,
}

/// The pseudo-file of a process's page cache that stands for the block
/// device (the buffer cache of 2.6: metadata blocks, and with buffered I/O
/// the file data too, by disk block): page `p` is disk block `p`.
pub const BDEV_FILE: u32 = u32::MAX;

#[derive(Clone, Debug)]
pub struct OpQueue {
    ops: Vec<IoOp>,
    /// Per op: through the page cache (a `Step::File` on `BDEV_FILE`)
    /// rather than a request.
    cached: Vec<bool>,
    next: usize,
    sync_pending: bool,
    async_in_flight: u32,
    max_async: u32,
    /// Route write-back and buffered data through the page cache.
    through_cache: bool,
}

impl OpQueue {
    pub fn new(max_async: u32) -> OpQueue {
        OpQueue {
            ops: Vec::with_capacity(64),
            cached: Vec::with_capacity(64),
            next: 0,
            sync_pending: false,
            async_in_flight: 0,
            max_async: max_async.max(1),
            through_cache: false,
        }
    }

    /// Asynchronous writes (write-back) and buffered data go through the
    /// page cache as operations on [`BDEV_FILE`]: a write dirties the
    /// blocks for pdflush to write back, a read finds them cached or waits
    /// for them. Synchronous requests (direct I/O, `sync_metadata`) stay
    /// requests of the process.
    pub fn through_page_cache(mut self) -> OpQueue {
        self.through_cache = true;
        self
    }

    fn push(&mut self, op: IoOp, cached: bool) {
        self.ops.push(op);
        self.cached.push(cached);
    }

    /// The step that continues the current operation, or `None` when all
    /// its requests are issued and no synchronous one is outstanding.
    pub fn poll(&mut self) -> Option<Step> {
        if self.sync_pending {
            return Some(Step::Wait);
        }
        let op = *self.ops.get(self.next)?;
        if self.cached[self.next] {
            self.next += 1;
            let page = op.sector / BLOCK_SECTORS;
            let pages = (op.sector + op.nr_sectors as u64).div_ceil(BLOCK_SECTORS) - page;
            let sectors = op.nr_sectors;
            return Some(Step::File(FileOp { file: BDEV_FILE, page, pages: pages as u32, dir: op.dir, partial: false, sectors }));
        }
        if !op.sync && self.async_in_flight >= self.max_async {
            return Some(Step::Wait);
        }
        self.next += 1;
        if op.sync {
            self.sync_pending = true;
        } else {
            self.async_in_flight += 1;
        }
        Some(Step::Issue(op))
    }

    /// Begin a new operation (the previous one must be fully issued).
    pub fn start(&mut self) {
        debug_assert!(self.next == self.ops.len() && !self.sync_pending);
        self.ops.clear();
        self.cached.clear();
        self.next = 0;
    }

    /// Nothing in flight: the process may exit.
    pub fn drained(&self) -> bool {
        !self.sync_pending && self.async_in_flight == 0 && self.next == self.ops.len()
    }

    /// One of this process's requests completed.
    pub fn completed(&mut self, rq: &Request) {
        if rq.sync {
            self.sync_pending = false;
        } else {
            self.async_in_flight -= 1;
        }
    }

    /// A whole-block metadata request (inode-table or directory block).
    /// Through the page cache, an asynchronous write dirties the block and
    /// a read looks in the cache first (`sb_bread`).
    pub fn block(&mut self, sector: u64, dir: Dir, sync: bool) {
        let cached = self.through_cache && (dir == Dir::Read || !sync);
        self.push(IoOp { sector, nr_sectors: BLOCK_SECTORS as u32, dir, sync }, cached);
    }

    /// Data requests for bytes `start .. end` of file `id`.
    /// Buffered: whole blocks, one request per contiguous run up to
    /// `max_sectors`. Direct: one request per `chunk` bytes, synchronous.
    #[allow(clippy::too_many_arguments)]
    pub fn data(
        &mut self,
        fs: &FsLayout,
        id: u32,
        (start, end): (u64, u64),
        mode: IoMode,
        chunk: u64,
        dir: Dir,
        sync: bool,
        max_sectors: u32,
    ) {
        if start >= end {
            return;
        }
        let mut runs = Vec::new();
        match mode {
            IoMode::Buffered => {
                let (s, e) = (start / BLOCK_BYTES * BLOCK_BYTES, end.div_ceil(BLOCK_BYTES) * BLOCK_BYTES);
                fs.map(id, s, e, max_sectors, |sector, nr_sectors| runs.push(IoOp { sector, nr_sectors, dir, sync }));
                let cached = self.through_cache;
                runs.into_iter().for_each(|op| self.push(op, cached));
            }
            IoMode::Direct => {
                let mut at = start;
                while at < end {
                    let to = (at + chunk).min(end);
                    fs.map(id, at, to, max_sectors, |sector, nr_sectors| {
                        runs.push(IoOp { sector, nr_sectors, dir, sync: true })
                    });
                    at = to;
                }
                runs.into_iter().for_each(|op| self.push(op, false));
            }
        }
    }

    /// The requests of the current operation (tests).
    #[cfg(test)]
    pub(crate) fn pending(&self) -> &[IoOp] {
        &self.ops[self.next..]
    }
}

/// The request the engine would make of `op` (tests drive processes
/// without an engine).
#[cfg(test)]
pub(crate) fn request_for(op: IoOp, now: crate::time::SimTime) -> Request {
    Request { id: 0, pid: 0, sector: op.sector, nr_sectors: op.nr_sectors, dir: op.dir, sync: op.sync, arrival: now }
}

#[cfg(test)]
mod tests {
    use super::super::fs_layout::{FsSpec, Geometry};
    use super::*;
    use crate::time::SimTime;

    fn rq(op: IoOp) -> Request {
        request_for(op, SimTime::ZERO)
    }

    #[test]
    fn sync_blocks_async_is_throttled() {
        let mut q = OpQueue::new(2);
        q.start();
        for s in 0..3 {
            q.block(s * 8, Dir::Write, false);
        }
        q.block(100, Dir::Read, true);
        let a = q.poll();
        let b = q.poll();
        assert!(matches!((a, b), (Some(Step::Issue(_)), Some(Step::Issue(_)))));
        assert_eq!(q.poll(), Some(Step::Wait), "two writes in flight: throttled");
        let Some(Step::Issue(first)) = a else { unreachable!() };
        q.completed(&rq(first));
        let Some(Step::Issue(_)) = q.poll() else { panic!("third write") };
        let Some(Step::Issue(read)) = q.poll() else { panic!("the read") };
        assert!(read.sync);
        assert_eq!(q.poll(), Some(Step::Wait));
        q.completed(&rq(read));
        assert_eq!(q.poll(), None);
        assert!(!q.drained(), "writes still in flight");
    }

    /// Issue and complete everything pending (start() wants the previous
    /// operation fully issued).
    fn run_out(q: &mut OpQueue) {
        while let Some(step) = q.poll() {
            match step {
                Step::Issue(op) => q.completed(&rq(op)),
                other => panic!("only requests were queued, not {other:?}"),
            }
        }
    }

    #[test]
    fn buffered_and_direct_data() {
        let geo = Geometry::new(&FsSpec::default(), 1 << 22, "fs").unwrap();
        let mut fs = FsLayout::new(geo, 0, 2);
        let d = fs.mkdir(None).unwrap();
        let f = fs.create(d, 9000).unwrap().file;
        let base = fs.file(f).extents[0].block * 8;
        let mut q = OpQueue::new(4);
        q.data(&fs, f, (0, 9000), IoMode::Buffered, 512, Dir::Read, true, 256);
        assert_eq!(q.pending(), [IoOp { sector: base, nr_sectors: 24, dir: Dir::Read, sync: true }]);
        run_out(&mut q);
        q.start();
        // An append of 100 bytes at 9000 rewrites the partly filled block.
        q.data(&fs, f, (9000, 9100), IoMode::Buffered, 512, Dir::Write, false, 256);
        assert_eq!(q.pending(), [IoOp { sector: base + 16, nr_sectors: 8, dir: Dir::Write, sync: false }]);
        run_out(&mut q);
        q.start();
        q.data(&fs, f, (0, 1500), IoMode::Direct, 512, Dir::Write, false, 256);
        let s: Vec<(u64, u32, bool)> = q.pending().iter().map(|o| (o.sector - base, o.nr_sectors, o.sync)).collect();
        assert_eq!(s, [(0, 1, true), (1, 1, true), (2, 1, true)]);
    }
}

//! The kernel side of the engine's processes: turning a process's direct
//! I/O into bios for the block layer; running its buffered operations
//! through the page cache; sleeping when the block layer or the page cache
//! says so (for a request, a page, or congestion) and waking on their word;
//! the flusher thread; and carrying out what the block layer asks of the
//! engine ([`crate::blk::Effects`]: run the queue, arm timers, wake
//! processes).
//!
//! Direct I/O, as 2.6.20's fs/direct-io.c does it: an operation larger
//! than the queue's `max_sectors` is cut into bios of at most that size,
//! all submitted before the process waits; the process hears of the
//! operation once, when its last bio completes. After submitting, the
//! queue is unplugged (`blk_run_address_space`), so direct I/O never waits
//! on a plug.

use super::{Engine, Kind, Observer, ProcState};
use crate::blk::bio::{Bio, Origin, SINGLE};
use crate::blk::{Done, KernelTimer, Submitted, Wake};
use crate::error::{Error, Result};
use crate::fileop::FileOp;
use crate::pagecache::{FileMap, Step as CacheStep};
use crate::request::{ProcessId, Request, SECTOR_BYTES};
use crate::time::SimTime;
use crate::workload::{IoOp, Process};
use std::collections::VecDeque;

/// The flusher's name in results (2.6.20's pdflush).
pub(super) const FLUSHER_NAME: &str = "pdflush";

/// The processes' files, for the page cache.
struct ProcMap<'a>(&'a [Box<dyn Process>]);

impl FileMap for ProcMap<'_> {
    fn sector(&self, pid: ProcessId, file: u32, page: u64) -> u64 {
        self.0[pid as usize].file_sector(file, page)
    }
    fn pages(&self, pid: ProcessId, file: u32) -> u64 {
        self.0[pid as usize].file_pages(file)
    }
}

/// A direct operation cut into several bios.
#[derive(Copy, Clone, Debug)]
struct SplitOp {
    /// The operation as the process issued it (its completion callback).
    rq: Request,
    /// Bios not yet completed.
    left: u32,
}

/// Per-process kernel state.
pub(super) struct KernelIo {
    /// Bios a process still has to submit (it sleeps in between).
    queue: Vec<VecDeque<Bio>>,
    split: Vec<Option<SplitOp>>,
    free_split: Vec<u32>,
    /// What a process asleep in the kernel waits for.
    waits: Vec<Option<Wake>>,
    /// The buffered operation a process is in (for its copy time), and
    /// when the call began.
    file_op: Vec<Option<(FileOp, SimTime)>>,
}

impl KernelIo {
    pub fn new(processes: usize) -> KernelIo {
        KernelIo {
            queue: (0..processes).map(|_| VecDeque::new()).collect(),
            split: Vec::new(),
            free_split: Vec::new(),
            waits: vec![None; processes],
            file_op: vec![None; processes],
        }
    }

    fn new_split(&mut self, op: SplitOp) -> u32 {
        match self.free_split.pop() {
            Some(i) => {
                self.split[i as usize] = Some(op);
                i
            }
            None => {
                self.split.push(Some(op));
                (self.split.len() - 1) as u32
            }
        }
    }
}

impl<O: Observer> Engine<'_, O> {
    /// A process issued a direct operation. True if it was submitted whole
    /// (the process goes on); false if it sleeps for a request.
    pub(super) fn submit_direct(&mut self, pid: ProcessId, op: IoOp, waits: bool) -> bool {
        let max = self.blk.max_sectors();
        let p = pid as usize;
        // 6.1 plugs a write(2) to the block device (blkdev_write_iter) and a
        // direct I/O of several bios (__blkdev_direct_IO), not a one-bio
        // read (the blk-mq path only; 2.6.20 unplugs the queue instead).
        let plugged = (op.dir == crate::request::Dir::Write && !op.is_flush()) || op.nr_sectors > max;
        if plugged {
            self.blk.start_plug(pid);
        }
        let all = self.submit_direct_bios(pid, op, max, p);
        if all && plugged {
            self.end_plug(pid, waits);
        }
        self.unplug_or_wait(pid, all)
    }

    /// The bios of a direct operation; true if all were submitted.
    fn submit_direct_bios(&mut self, pid: ProcessId, op: IoOp, max: u32, p: usize) -> bool {
        if op.nr_sectors <= max {
            // The common case, one bio: submitted without queueing it.
            let bio = Bio {
                pid,
                sector: op.sector,
                nr_sectors: op.nr_sectors,
                dir: op.dir,
                sync: op.sync,
                origin: Origin::Direct { op: SINGLE },
            };
            return self.submit_bio(bio);
        } else {
            let rq = Request {
                id: 0,
                pid,
                sector: op.sector,
                nr_sectors: op.nr_sectors,
                dir: op.dir,
                sync: op.sync,
                arrival: self.now,
            };
            let pieces = op.nr_sectors.div_ceil(max);
            let idx = self.kio.new_split(SplitOp { rq, left: pieces });
            let mut at = op.sector;
            let end = op.sector + op.nr_sectors as u64;
            while at < end {
                let n = (end - at).min(max as u64) as u32;
                let bio =
                    Bio { pid, sector: at, nr_sectors: n, dir: op.dir, sync: op.sync, origin: Origin::Direct { op: idx } };
                self.kio.queue[p].push_back(bio);
                at += n as u64;
            }
        }
        self.submit_queued(pid)
    }

    /// The end of a plugged call (blk-mq path): a task that now waits for
    /// its I/O flushes the plug as it sleeps (`blk_flush_plug(plug, true)`:
    /// the queue runs from kblockd); one that goes on flushes it at
    /// `blk_finish_plug` (the queue runs at once).
    fn end_plug(&mut self, pid: ProcessId, waits: bool) {
        if waits {
            self.blk.sleep_flush(pid, &mut *self.sched, self.now);
        }
        self.blk.finish_plug(pid, &mut *self.sched, self.now);
    }

    /// After a process has handed the block layer its direct I/O: if every
    /// bio went in, unplug (blk_run_address_space: direct I/O does not wait
    /// on a plug); if the request list was full, the process sleeps until a
    /// request frees. Then the effects are applied. Returns `all`.
    #[inline(always)]
    fn unplug_or_wait(&mut self, pid: ProcessId, all: bool) -> bool {
        if all {
            self.blk.unplug();
        } else {
            self.kio.waits[pid as usize] = Some(Wake::Request);
        }
        self.apply_effects();
        all
    }

    /// Submit the process's queued bios in order; false if it had to
    /// sleep for a request (the rest wait for its wake).
    fn submit_queued(&mut self, pid: ProcessId) -> bool {
        let p = pid as usize;
        while let Some(bio) = self.kio.queue[p].pop_front() {
            if !self.submit_bio(bio) {
                return false;
            }
        }
        true
    }

    /// Submit one bio; false if its submitter sleeps for a request (the
    /// block layer keeps the bio).
    fn submit_bio(&mut self, bio: Bio) -> bool {
        self.obs.queued(&bio.as_request(0, self.now), self.now);
        match self.blk.submit(bio, &mut *self.sched, self.now) {
            Submitted::Inserted(rq) => {
                self.metrics.inserted += 1;
                self.obs.inserted(&rq, self.now);
            }
            Submitted::Merged { into, absorbed } => {
                self.metrics.merged += 1;
                self.metrics.absorbed += absorbed.is_some() as u64;
                if let Some(rq) = self.blk.current(into) {
                    self.obs.merged(&rq, absorbed, self.now);
                }
            }
            Submitted::Sleeping => return false,
        }
        true
    }

    /// Run the queue, arm timers and wake processes as the block layer
    /// asked. The queue is run whenever it is not plugged: after an insert
    /// that stands for the elevators' own kicks (AS's `as_antic_stop` and
    /// CFQ's `blk_start_queueing` when the awaited request arrives); asking
    /// an elevator that has nothing to hand out changes nothing.
    ///
    /// Nearly always there is no timer and no wake (twice per request):
    /// that case is inlined into the callers.
    #[inline(always)]
    pub(super) fn apply_effects(&mut self) {
        let fx = &mut self.blk.fx;
        fx.run_queue = false;
        if !fx.absorbed.is_empty() {
            self.note_absorbed();
        }
        let fx = &mut self.blk.fx;
        if fx.timers.is_empty() && fx.wake.is_empty() {
            if !self.blk.plugged() {
                self.fill();
            }
            return;
        }
        self.apply_timers_and_wakes();
    }

    /// Requests merged into another at insertion (blk-mq path).
    fn note_absorbed(&mut self) {
        let absorbed = std::mem::take(&mut self.blk.fx.absorbed);
        for &(into, gone) in &absorbed {
            self.metrics.absorbed += 1;
            if let Some(rq) = self.blk.current(into) {
                self.obs.merged(&rq, Some(gone), self.now);
            }
        }
        let mut absorbed = absorbed;
        absorbed.clear();
        self.blk.fx.absorbed = absorbed;
    }

    fn apply_timers_and_wakes(&mut self) {
        let fx = &mut self.blk.fx;
        let mut timers = std::mem::take(&mut fx.timers);
        let mut wake = std::mem::take(&mut fx.wake);
        for (at, t) in timers.drain(..) {
            // An unplug timer whose plug is already gone is del_timer'd.
            if t == KernelTimer::Unplug && !self.blk.plugged() {
                continue;
            }
            self.schedule(at, Kind::Kernel(t));
        }
        for (pid, why) in wake.drain(..) {
            self.schedule(self.now, Kind::KernelWake(pid, why));
        }
        self.blk.fx.timers = timers;
        self.blk.fx.wake = wake;
        if !self.blk.plugged() {
            self.fill();
        }
    }

    /// A kernel timer fired.
    pub(super) fn kernel_timer(&mut self, t: KernelTimer) -> Result<()> {
        match t {
            KernelTimer::Unplug => self.blk.unplug_timer(self.now),
            KernelTimer::Flusher => {
                // Once every process has exited, the run ends: no more
                // periodic write-back (dirty pages left are reported).
                if self.live > 0 {
                    if let Some(c) = self.cache.as_mut() {
                        c.flusher_timer(&mut self.blk, self.now);
                    }
                }
            }
            KernelTimer::Sleep { pid, token } => {
                if let Some(c) = self.cache.as_mut() {
                    c.sleep_timer(pid, token, &mut self.blk);
                }
            }
        }
        self.apply_effects();
        Ok(())
    }

    /// Arm the flusher's first periodic write-back and put it to sleep
    /// until it has work.
    pub(super) fn start_flusher(&mut self) {
        let Some(c) = self.cache.as_ref() else { return };
        let f = c.flusher_pid() as usize;
        self.state[f] = ProcState::Kernel;
        self.kio.waits[f] = Some(Wake::Flusher);
        if let Some(at) = c.first_timer() {
            self.schedule(at, Kind::Kernel(KernelTimer::Flusher));
        }
    }

    /// A process issued a buffered operation. True if it completed at once
    /// (the process goes on after its copy time); false if it sleeps.
    pub(super) fn start_file_op(&mut self, pid: ProcessId, op: FileOp) -> Result<bool> {
        let Some(cache) = self.cache.as_mut() else {
            return Err(Error::invalid(
                "workload",
                format!("process {pid} did buffered I/O in a workload built without the page cache"),
            ));
        };
        cache.start(pid, op, &ProcMap(&self.procs));
        self.kio.file_op[pid as usize] = Some((op, self.now));
        // 6.1 plugs read-ahead (read_pages) and write-back (wb_writeback).
        self.blk.start_plug(pid);
        let done = self.cache_continue(pid);
        if done {
            self.file_call_returns(pid);
        }
        Ok(done)
    }

    /// `pid`'s buffered call has its pages: it returns after copying them
    /// (its copy time, which the caller schedules). Counted now, with the
    /// latency it will have when it returns.
    fn file_call_returns(&mut self, pid: ProcessId) -> FileOp {
        let (op, start) = self.kio.file_op[pid as usize].take().expect("a buffered operation");
        let latency = self.now.since(start) + self.copy_time(&op).unwrap_or(0);
        self.metrics.buffered_call(pid, op.sectors as u64 * SECTOR_BYTES, latency);
        op
    }

    /// The time a finished buffered operation spends copying its pages
    /// between the cache and the process (`vm.copy_us_per_page`).
    pub(super) fn copy_time(&self, op: &FileOp) -> Option<u64> {
        let ns = self.copy_ns_per_page * op.pages as u64;
        (ns > 0).then_some(ns)
    }

    /// Carry `pid`'s buffered operation (or the flusher's pass) as far as
    /// it goes: submit its bios, step the page cache. True when the
    /// operation is done; false when `pid` sleeps (what for is in
    /// `kio.waits`).
    fn cache_continue(&mut self, pid: ProcessId) -> bool {
        let p = pid as usize;
        loop {
            if !self.submit_queued(pid) {
                self.kio.waits[p] = Some(Wake::Request);
                self.apply_effects();
                return false;
            }
            let cache = self.cache.as_mut().expect("buffered I/O without a page cache");
            let step = cache.step(pid, &ProcMap(&self.procs), &mut self.blk, self.now);
            self.kio.queue[p].extend(cache.out.drain(..));
            let flusher = pid == cache.flusher_pid();
            match step {
                CacheStep::Submit => continue,
                CacheStep::Done => {
                    if !self.submit_queued(pid) {
                        self.kio.waits[p] = Some(Wake::Request);
                        self.apply_effects();
                        return false;
                    }
                    self.blk.finish_plug(pid, &mut *self.sched, self.now);
                    if flusher {
                        self.kio.waits[p] = Some(Wake::Flusher);
                    }
                    self.apply_effects();
                    return true;
                }
                CacheStep::WaitPage => {
                    if !self.submit_queued(pid) {
                        self.kio.waits[p] = Some(Wake::Request);
                        self.apply_effects();
                        return false;
                    }
                    // lock_page -> sync_page: the reader unplugs the queue
                    // (6.1: the task's plug is flushed as it sleeps).
                    self.blk.unplug();
                    self.blk.sleep_flush(pid, &mut *self.sched, self.now);
                    self.kio.waits[p] = Some(Wake::Page);
                    self.apply_effects();
                    return false;
                }
                CacheStep::Sleep => {
                    debug_assert!(self.kio.queue[p].is_empty());
                    self.blk.sleep_flush(pid, &mut *self.sched, self.now);
                    self.kio.waits[p] = Some(Wake::Congestion);
                    self.apply_effects();
                    return false;
                }
            }
        }
    }

    /// A process's kernel sleep ended: finish what it was doing, then let
    /// it run. A wake for something else than what it sleeps for is stale.
    pub(super) fn kernel_wake(&mut self, pid: ProcessId, why: Wake) -> Result<()> {
        let p = pid as usize;
        if self.state[p] != ProcState::Kernel || self.kio.waits[p] != Some(why) {
            return Ok(());
        }
        self.kio.waits[p] = None;
        match why {
            Wake::Request => match self.blk.retry(pid, &mut *self.sched, self.now) {
                Some(rq) => {
                    self.metrics.inserted += 1;
                    self.obs.inserted(&rq, self.now);
                }
                None => {
                    self.kio.waits[p] = Some(Wake::Request);
                    self.apply_effects();
                    return Ok(());
                }
            },
            Wake::Congestion => {
                if let Some(c) = self.cache.as_mut() {
                    c.woken(pid, &mut self.blk);
                }
            }
            Wake::Page | Wake::Flusher => {}
        }
        let in_cache = self.kio.file_op[p].is_some() || self.cache.as_ref().is_some_and(|c| c.flusher_pid() == pid);
        if in_cache {
            if why == Wake::Flusher {
                self.blk.start_plug(pid);
            }
            if !self.cache_continue(pid) {
                return Ok(());
            }
            if self.cache.as_ref().is_some_and(|c| c.flusher_pid() == pid) {
                return Ok(());
            }
            let op = self.file_call_returns(pid);
            self.state[p] = ProcState::Sleeping;
            return match self.copy_time(&op) {
                Some(ns) => {
                    self.schedule(self.now + ns, Kind::Wake(pid));
                    Ok(())
                }
                None => self.run_process(pid),
            };
        }
        let all = self.submit_queued(pid);
        if all {
            self.blk.finish_plug(pid, &mut *self.sched, self.now);
        }
        if !self.unplug_or_wait(pid, all) {
            return Ok(());
        }
        self.state[p] = ProcState::Sleeping;
        self.run_process(pid)
    }

    /// One bio of a completed request: account it and tell its origin.
    pub(super) fn bio_done(&mut self, d: &Done) -> Result<()> {
        let bio = d.bio;
        let view = bio.as_request(d.request, d.submitted);
        // A flush moves no data and has no place in the read or write
        // latencies (fio reports fsync apart).
        if bio.nr_sectors > 0 {
            self.metrics.bio_completed(&view, self.now);
        }
        match bio.origin {
            Origin::Direct { op } => {
                let rq = if op == SINGLE {
                    view
                } else {
                    let s = self.kio.split[op as usize].as_mut().expect("a split operation in flight");
                    s.left -= 1;
                    if s.left > 0 {
                        return Ok(());
                    }
                    let rq = s.rq;
                    self.kio.split[op as usize] = None;
                    self.kio.free_split.push(op);
                    rq
                };
                let p = bio.pid as usize;
                self.procs[p].completed(&rq, self.now);
                if self.state[p] == ProcState::Blocked {
                    if self.blk.is_mq() {
                        // It runs after the tasks woken for a tag (complete).
                        self.state[p] = ProcState::Sleeping;
                        self.schedule(self.now, Kind::Wake(bio.pid));
                    } else {
                        self.run_process(bio.pid)?;
                    }
                }
            }
            Origin::Cache { file, page, pages } => {
                if let Some(c) = self.cache.as_mut() {
                    c.io_done(file, page, pages, bio.dir, &mut self.blk);
                }
            }
        }
        Ok(())
    }
}

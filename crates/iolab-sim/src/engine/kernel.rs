//! The kernel side of the engine's processes: turning a process's direct
//! I/O into bios for the block layer, sleeping when the block layer says
//! so, and waking on its word; and carrying out what the block layer asks
//! of the engine ([`crate::blk::Effects`]: run the queue, arm timers,
//! wake processes).
//!
//! Direct I/O, as 2.6.20's fs/direct-io.c does it: an operation larger
//! than the queue's `max_sectors` is cut into bios of at most that size,
//! all submitted before the process waits; the process hears of the
//! operation once, when its last bio completes. After submitting, the
//! queue is unplugged (`blk_run_address_space`), so direct I/O never waits
//! on a plug.

use super::{Engine, Kind, Observer, ProcState};
use crate::blk::bio::{Bio, Origin, SINGLE};
use crate::blk::{Done, KernelTimer, Submitted};
use crate::error::Result;
use crate::request::{ProcessId, Request};
use crate::workload::IoOp;
use std::collections::VecDeque;

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
}

impl KernelIo {
    pub fn new(processes: usize) -> KernelIo {
        KernelIo { queue: (0..processes).map(|_| VecDeque::new()).collect(), split: Vec::new(), free_split: Vec::new() }
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
    pub(super) fn submit_direct(&mut self, pid: ProcessId, op: IoOp) -> bool {
        let max = self.blk.max_sectors();
        let p = pid as usize;
        if op.nr_sectors <= max {
            let bio = Bio {
                pid,
                sector: op.sector,
                nr_sectors: op.nr_sectors,
                dir: op.dir,
                sync: op.sync,
                origin: Origin::Direct { op: SINGLE },
            };
            self.kio.queue[p].push_back(bio);
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
        let all = self.submit_queued(pid);
        if all {
            // blk_run_address_space: direct I/O does not wait on a plug.
            self.blk.unplug();
        }
        self.apply_effects();
        all
    }

    /// Submit the process's queued bios in order; false if it had to
    /// sleep for a request (the rest wait for its wake).
    fn submit_queued(&mut self, pid: ProcessId) -> bool {
        let p = pid as usize;
        while let Some(bio) = self.kio.queue[p].pop_front() {
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
        }
        true
    }

    /// Run the queue, arm timers and wake processes as the block layer
    /// asked. The queue is run whenever it is not plugged: after an insert
    /// that stands for the elevators' own kicks (AS's `as_antic_stop` and
    /// CFQ's `blk_start_queueing` when the awaited request arrives); asking
    /// an elevator that has nothing to hand out changes nothing.
    pub(super) fn apply_effects(&mut self) {
        let fx = &mut self.blk.fx;
        fx.run_queue = false;
        let mut timers = std::mem::take(&mut fx.timers);
        let mut wake = std::mem::take(&mut fx.wake);
        for (at, t) in timers.drain(..) {
            // An unplug timer whose plug is already gone is del_timer'd.
            if t == KernelTimer::Unplug && !self.blk.plugged() {
                continue;
            }
            self.schedule(at, Kind::Kernel(t));
        }
        for pid in wake.drain(..) {
            self.schedule(self.now, Kind::KernelWake(pid));
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
            KernelTimer::Flusher | KernelTimer::Sleep { .. } => {}
        }
        self.apply_effects();
        Ok(())
    }

    /// A process's kernel sleep ended: finish what it was doing, then let
    /// it run.
    pub(super) fn kernel_wake(&mut self, pid: ProcessId) -> Result<()> {
        let p = pid as usize;
        if self.state[p] != ProcState::Kernel {
            return Ok(());
        }
        if self.blk.parked(pid) {
            match self.blk.retry(pid, &mut *self.sched, self.now) {
                Some(rq) => {
                    self.metrics.inserted += 1;
                    self.obs.inserted(&rq, self.now);
                }
                None => {
                    self.apply_effects();
                    return Ok(());
                }
            }
        }
        let all = self.submit_queued(pid);
        if all {
            self.blk.unplug();
        }
        self.apply_effects();
        if !all {
            return Ok(());
        }
        self.state[p] = ProcState::Sleeping;
        self.run_process(pid)
    }

    /// One bio of a completed request: account it and tell its origin.
    pub(super) fn bio_done(&mut self, d: &Done) -> Result<()> {
        let bio = d.bio;
        let view = bio.as_request(d.request, d.submitted);
        self.metrics.bio_completed(&view, self.now);
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
                    self.run_process(bio.pid)?;
                }
            }
            Origin::Cache { .. } => {}
        }
        Ok(())
    }
}

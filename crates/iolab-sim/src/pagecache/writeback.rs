//! Write-back of dirty pages as Linux 2.6.20 does it (mm/page-writeback.c:
//! `get_dirty_limits`, `balance_dirty_pages`,
//! `balance_dirty_pages_ratelimited_nr`, `background_writeout`,
//! `wb_kupdate`, `writeback_set_ratelimit`; fs/fs-writeback.c
//! `writeback_inodes`; fs/mpage.c `mpage_writepages`).
//!
//! Thresholds, as shares of memory: pdflush starts writing back in the
//! background above `dirty_background_ratio` (10%) dirty and goes on until
//! below it; a process dirtying pages above `vm_dirty_ratio` (40%, capped at
//! half the unmapped memory, which here is all of it) dirty-or-under-write-
//! back writes 1.5 · `ratelimit_pages` (48) pages back itself, and sleeps in
//! `congestion_wait(WRITE, HZ/10)` until it has or memory is below the
//! limit. A writer looks at this every `ratelimit_pages` dirtied pages
//! (memory/32 pages, within [16, 1024]; 8 while the limit is exceeded).
//! Every `dirty_writeback_centisecs` (5 s) pdflush also writes every file
//! dirtied more than `dirty_expire_centisecs` (30 s) ago (`wb_kupdate`).
//!
//! How pages are written (`writeback_inodes` -> `mpage_writepages`): files
//! in the order they became dirty; in each, dirty pages from where the last
//! write-back of the file stopped (`writeback_index`, wrapping), in runs
//! of pages contiguous on the disk, one bio each (at most `max_sectors`);
//! `MAX_WRITEBACK_PAGES` (1024) per pass. The flusher's passes are
//! non-blocking: they stop when the queue is write-congested (counting the
//! requests the pass has built and not yet submitted) and sleep 100 ms or
//! until congestion clears. A throttled writer's pass blocks instead (it
//! may sleep for a request in the block layer).
//!
//! Simplified: one pdflush thread does both the background and the
//! periodic write-back (2.6.20 keeps 2 to 8 and runs `wb_kupdate` on
//! another if one is free; here a periodic pass due while the thread is
//! busy is retried a second later, `wb_timer_fn`'s fallback); a file
//! written back in part goes to the end of the dirty list, stamped dirty
//! now unless the pass was the periodic one.

use super::{FileMap, PageCache, Step, DIRTY, PAGE_SECTORS, WRITEBACK};
use crate::blk::bio::{Bio, Origin};
use crate::blk::{BlockLayer, KernelTimer, Wake};
use crate::request::{Dir, ProcessId};
use crate::time::{SimTime, NS_PER_MS, NS_PER_S};

/// `congestion_wait(WRITE, HZ/10)`.
pub const CONGESTION_WAIT_NS: u64 = 100 * NS_PER_MS;
/// `MAX_WRITEBACK_PAGES`.
pub const MAX_WRITEBACK_PAGES: u64 = 1024;
/// `wb_timer_fn`'s retry when pdflush is busy, and `wb_kupdate`'s
/// shortest gap.
const RETRY_NS: u64 = NS_PER_S;

/// The thresholds of `get_dirty_limits`, in pages.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct VmLimits {
    pub background: u64,
    pub dirty: u64,
    /// `ratelimit_pages` (`writeback_set_ratelimit`, one CPU).
    pub ratelimit_pages: u64,
}

impl VmLimits {
    pub fn new(vm: &super::VmSpec, total_pages: u64) -> VmLimits {
        // No mapped or anonymous memory is modelled: unmapped_ratio = 100.
        let unmapped_ratio = 100;
        let mut dirty_ratio = vm.dirty_ratio.min(unmapped_ratio / 2);
        if dirty_ratio < 5 {
            dirty_ratio = 5;
        }
        let mut background_ratio = vm.dirty_background_ratio;
        if background_ratio >= dirty_ratio {
            background_ratio = dirty_ratio / 2;
        }
        VmLimits {
            background: background_ratio as u64 * total_pages / 100,
            dirty: dirty_ratio as u64 * total_pages / 100,
            ratelimit_pages: (total_pages / 32).clamp(16, 4096 * 1024 / super::PAGE_BYTES),
        }
    }

    /// Pages dirtied between two looks at the limits.
    pub fn ratelimit(&self, dirty_exceeded: bool) -> u64 {
        if dirty_exceeded {
            8
        } else {
            self.ratelimit_pages
        }
    }

    /// `sync_writeback_pages`: what a throttled writer writes itself.
    pub fn sync_writeback_pages(&self) -> u64 {
        32 + 32 / 2
    }
}

/// Where a throttled writer is in `balance_dirty_pages`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Balance {
    pages_written: u64,
    /// 0: look at the limits; 1: its write-back was submitted, look again;
    /// 2: back from `congestion_wait`.
    stage: u8,
}

/// The flusher's current work.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Task {
    Idle,
    /// `background_writeout`: `min_pages` still owed.
    Background { min_pages: i64, stage: Stage },
    /// `wb_kupdate`: files dirtied before `oldest`; the pass began at
    /// `start`.
    Kupdate { oldest: SimTime, start: SimTime, stage: Stage },
}

/// Where a flusher pass is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Stage {
    /// Write the next chunk.
    Write,
    /// The chunk's bios were submitted; it wrote `short` less than a full
    /// chunk and met congestion or not.
    Written { short: bool, congested: bool },
    /// Back from `congestion_wait`; the chunk before met congestion or not.
    Slept { congested: bool },
}

/// The pdflush thread.
#[derive(Debug)]
pub struct Flusher {
    pub pid: ProcessId,
    period_ns: Option<u64>,
    expire_ns: u64,
    task: Task,
    /// `dirty_exceeded`.
    pub dirty_exceeded: bool,
    /// The process charged with the write-back bios being built.
    pub(crate) submitter: ProcessId,
    /// Largest bio, in sectors (the queue's `max_sectors`).
    pub(crate) max_sectors: u32,
}

impl Flusher {
    pub fn new(pid: ProcessId, vm: &super::VmSpec) -> Flusher {
        let centi = |c: u32| c as u64 * 10 * NS_PER_MS;
        Flusher {
            pid,
            period_ns: (vm.dirty_writeback_centisecs > 0).then(|| centi(vm.dirty_writeback_centisecs)),
            expire_ns: centi(vm.dirty_expire_centisecs),
            task: Task::Idle,
            dirty_exceeded: false,
            submitter: pid,
            max_sectors: 1024,
        }
    }

    pub fn period_ns(&self) -> Option<u64> {
        self.period_ns
    }

    /// `writeback_in_progress`.
    pub fn busy(&self) -> bool {
        self.task != Task::Idle
    }
}

/// The outcome of one `writeback_inodes` pass.
struct Pass {
    written: u64,
    congested: bool,
}

impl PageCache {
    /// Set the largest bio (the block layer's `max_sectors`).
    pub fn set_max_sectors(&mut self, max: u32) {
        self.flusher.max_sectors = max;
    }

    /// One stage of `balance_dirty_pages` for a writer; `None` when it is
    /// done and the write goes on.
    pub(super) fn balance_step(
        &mut self,
        pid: ProcessId,
        b: &mut Balance,
        map: &dyn FileMap,
        blk: &mut BlockLayer,
        now: SimTime,
    ) -> Option<Step> {
        let over = |c: &PageCache| c.nr_dirty + c.nr_writeback > c.limits.dirty;
        match b.stage {
            0 | 2 => {
                if !over(self) {
                    return self.balance_done(blk);
                }
                self.flusher.dirty_exceeded = true;
                if self.nr_dirty > 0 {
                    let want = self.limits.sync_writeback_pages();
                    let pass = self.writeback_inodes(pid, want, false, None, map, blk, now);
                    b.pages_written += pass.written;
                    b.stage = 1;
                    return Some(Step::Submit);
                }
                b.stage = 2;
                self.stats.throttled += 1;
                self.congestion_wait(pid, blk, now);
                Some(Step::Sleep)
            }
            _ => {
                if !over(self) || b.pages_written >= self.limits.sync_writeback_pages() {
                    return self.balance_done(blk);
                }
                b.stage = 2;
                self.stats.throttled += 1;
                self.congestion_wait(pid, blk, now);
                Some(Step::Sleep)
            }
        }
    }

    /// The end of `balance_dirty_pages`: clear `dirty_exceeded` when below
    /// the limit, and wake pdflush if above the background mark and it is
    /// not writing already.
    fn balance_done(&mut self, blk: &mut BlockLayer) -> Option<Step> {
        if self.nr_dirty + self.nr_writeback <= self.limits.dirty {
            self.flusher.dirty_exceeded = false;
        }
        if !self.flusher.busy() && self.nr_dirty > self.limits.background {
            self.flusher.task = Task::Background { min_pages: 0, stage: Stage::Write };
            blk.fx.wake.push((self.flusher.pid, Wake::Flusher));
        }
        None
    }

    /// The periodic flush timer (`wb_timer_fn`) fired.
    pub fn flusher_timer(&mut self, blk: &mut BlockLayer, now: SimTime) {
        if self.flusher.busy() {
            blk.fx.timers.push((now + RETRY_NS, KernelTimer::Flusher));
            return;
        }
        let oldest = SimTime(now.ns().saturating_sub(self.flusher.expire_ns));
        self.flusher.task = Task::Kupdate { oldest, start: now, stage: Stage::Write };
        blk.fx.wake.push((self.flusher.pid, Wake::Flusher));
    }

    /// One stage of the flusher's current pass.
    pub(super) fn flusher_step(&mut self, map: &dyn FileMap, blk: &mut BlockLayer, now: SimTime) -> Step {
        let pid = self.flusher.pid;
        loop {
            match self.flusher.task {
                Task::Idle => return Step::Done,
                Task::Background { min_pages, stage } => match stage {
                    Stage::Write => {
                        if self.nr_dirty < self.limits.background && min_pages <= 0 {
                            self.flusher.task = Task::Idle;
                            return Step::Done;
                        }
                        let pass = self.writeback_inodes(pid, MAX_WRITEBACK_PAGES, true, None, map, blk, now);
                        let short = pass.written < MAX_WRITEBACK_PAGES;
                        let stage = Stage::Written { short, congested: pass.congested };
                        self.flusher.task = Task::Background { min_pages: min_pages - pass.written as i64, stage };
                        return Step::Submit;
                    }
                    Stage::Written { short, congested } => {
                        if !short {
                            self.flusher.task = Task::Background { min_pages, stage: Stage::Write };
                            continue;
                        }
                        self.flusher.task = Task::Background { min_pages, stage: Stage::Slept { congested } };
                        self.congestion_wait(pid, blk, now);
                        return Step::Sleep;
                    }
                    Stage::Slept { congested } => {
                        self.flusher.task = if congested {
                            Task::Background { min_pages, stage: Stage::Write }
                        } else {
                            Task::Idle
                        };
                    }
                },
                Task::Kupdate { oldest, start, stage } => match stage {
                    Stage::Write => {
                        let pass = self.writeback_inodes(pid, MAX_WRITEBACK_PAGES, true, Some(oldest), map, blk, now);
                        let short = pass.written < MAX_WRITEBACK_PAGES;
                        let stage = Stage::Written { short, congested: pass.congested };
                        self.flusher.task = Task::Kupdate { oldest, start, stage };
                        return Step::Submit;
                    }
                    Stage::Written { short, congested } => {
                        if !short {
                            self.flusher.task = Task::Kupdate { oldest, start, stage: Stage::Write };
                        } else if congested {
                            self.flusher.task = Task::Kupdate { oldest, start, stage: Stage::Slept { congested } };
                            self.congestion_wait(pid, blk, now);
                            return Step::Sleep;
                        } else {
                            self.kupdate_done(start, blk, now);
                        }
                    }
                    Stage::Slept { .. } => {
                        self.flusher.task = Task::Kupdate { oldest, start, stage: Stage::Write };
                    }
                },
            }
        }
    }

    /// The end of a `wb_kupdate` pass: the next one is a period after this
    /// one began, and at least a second from now.
    fn kupdate_done(&mut self, start: SimTime, blk: &mut BlockLayer, now: SimTime) {
        self.flusher.task = Task::Idle;
        if let Some(p) = self.flusher.period_ns {
            let next = (start + p).max(now + RETRY_NS);
            blk.fx.timers.push((next, KernelTimer::Flusher));
        }
    }

    /// `writeback_inodes` with `nr_to_write` pages: files in dirtying order
    /// (only those dirtied before `older_than`, if given); pages of each
    /// from its `writeback_index`. Non-blocking passes stop at write
    /// congestion. The bios go to `out`, charged to `pid`.
    // The kernel passes these in a `struct writeback_control`; here they are
    // the call's arguments, named as the kernel names the fields.
    #[allow(clippy::too_many_arguments)]
    fn writeback_inodes(
        &mut self,
        pid: ProcessId,
        nr_to_write: u64,
        nonblocking: bool,
        older_than: Option<SimTime>,
        map: &dyn FileMap,
        blk: &BlockLayer,
        now: SimTime,
    ) -> Pass {
        self.flusher.submitter = pid;
        let mut pass = Pass { written: 0, congested: false };
        // Requests this pass may add before the queue is write-congested.
        let room = blk.congestion_room(Dir::Write);
        let mut bios = 0u32;
        let mut visited = 0;
        let files = self.dirty_files.len();
        while pass.written < nr_to_write && visited < files {
            let Some(&file) = self.dirty_files.front() else { break };
            visited += 1;
            let f = &self.files[file as usize];
            if older_than.is_some_and(|t| f.dirtied_when.is_some_and(|d| d > t)) {
                break;
            }
            if nonblocking && bios >= room {
                pass.congested = true;
                break;
            }
            let left = nr_to_write - pass.written;
            let budget = if nonblocking { room - bios } else { u32::MAX };
            let (written, built, congested) = self.write_file(file, left, budget, map);
            pass.written += written;
            bios += built;
            let f = &mut self.files[file as usize];
            self.dirty_files.pop_front();
            if f.dirty > 0 {
                // Written in part: to the end of the list.
                if older_than.is_none() {
                    f.dirtied_when = Some(now);
                }
                self.dirty_files.push_back(file);
            } else {
                f.dirtied_when = None;
            }
            if congested {
                pass.congested = true;
                break;
            }
        }
        self.stats.written_back += pass.written;
        pass
    }

    /// `mpage_writepages` of one file: up to `nr` dirty pages from its
    /// `writeback_index` (wrapping once), in bios of contiguous pages, at
    /// most `max_bios` bios. (written pages, bios, stopped for the bios).
    fn write_file(&mut self, file: u32, nr: u64, max_bios: u32, map: &dyn FileMap) -> (u64, u32, bool) {
        let (owner, fnum) = (self.files[file as usize].owner, self.files[file as usize].file);
        let submitter = self.flusher.submitter;
        let max_pages = (self.flusher.max_sectors as u64 / PAGE_SECTORS).max(1) as u32;
        let mut written = 0;
        let mut bios = 0u32;
        let mut run: Option<(u64, u32)> = None; // (first page, pages)
        let start = self.files[file as usize].writeback_index;
        let mut index = start;
        let mut wrapped = false;
        let mut stopped = false;
        loop {
            let f = &self.files[file as usize];
            let next = f.next_dirty(index);
            let Some(p) = next.filter(|&p| !wrapped || p < start) else {
                if !wrapped && start > 0 {
                    wrapped = true;
                    index = 0;
                    continue;
                }
                break;
            };
            if written >= nr {
                break;
            }
            // Extend the run if the page is the next one, on disk too.
            let joins = |first: u64, n: u32| {
                first + n as u64 == p
                    && n < max_pages
                    && map.sector(owner, fnum, first) + n as u64 * PAGE_SECTORS == map.sector(owner, fnum, p)
            };
            match run {
                Some((first, n)) if joins(first, n) => run = Some((first, n + 1)),
                _ => {
                    if let Some(r) = run.take() {
                        if bios >= max_bios {
                            stopped = true;
                            break;
                        }
                        self.out.push(wb_bio(submitter, owner, fnum, file, r, map));
                        bios += 1;
                    }
                    if bios >= max_bios {
                        stopped = true;
                        break;
                    }
                    run = Some((p, 1));
                }
            }
            let f = &mut self.files[file as usize];
            f.clear(p, DIRTY);
            f.set(p, WRITEBACK);
            f.dirty -= 1;
            self.nr_dirty -= 1;
            self.nr_writeback += 1;
            written += 1;
            index = p + 1;
        }
        if let Some(r) = run.take() {
            self.out.push(wb_bio(submitter, owner, fnum, file, r, map));
            bios += 1;
        }
        self.files[file as usize].writeback_index = index;
        (written, bios, stopped)
    }
}

/// The bio for a run of `pages` pages of a file from `first`.
fn wb_bio(
    submitter: ProcessId,
    owner: ProcessId,
    fnum: u32,
    file: u32,
    (first, pages): (u64, u32),
    map: &dyn FileMap,
) -> Bio {
    Bio {
        pid: submitter,
        sector: map.sector(owner, fnum, first),
        nr_sectors: pages * PAGE_SECTORS as u32,
        dir: Dir::Write,
        sync: false,
        origin: Origin::Cache { file, page: first as u32, pages },
    }
}

//! The page cache of Linux 2.6.20 for buffered file I/O: reads through
//! on-demand read-ahead (`readahead`), writes into dirty pages that a
//! flusher and throttled writers write back (`writeback`).
//!
//! Brief overview. A process doing buffered I/O issues a [`FileOp`] (read
//! or write whole pages of one of its files; the process maps file pages
//! to sectors, [`FileMap`]). The engine hands it to [`PageCache::start`]
//! and then calls [`PageCache::step`] until the operation is done; a step
//! may leave bios in [`PageCache::out`] for the engine to submit through
//! the block layer, or put the process to sleep (on a page whose read is
//! in flight, or in `congestion_wait`). When a bio completes the engine
//! calls [`PageCache::io_done`], which marks the pages and wakes whoever
//! waits for them. The flusher (pdflush) is a kernel thread of its own
//! process id; it writes dirty pages back in the background and every
//! `dirty_writeback_centisecs` (see `writeback`).
//!
//! The read path is `do_generic_mapping_read` (mm/filemap.c): page by
//! page, calling read-ahead whenever the reader reaches the page read-ahead
//! told it to come back at; a page not in the cache is read by itself
//! (`readpage`, after `handle_ra_miss`); a page whose read is in flight is
//! waited for, and waiting unplugs the queue (`sync_page`). The write path
//! is `generic_file_buffered_write`: each page becomes dirty (a partial
//! page of existing data not in the cache is read first, as
//! `prepare_write` does), and every `ratelimit` dirtied pages the writer
//! runs `balance_dirty_pages`.
//!
//! Memory: `memory_mb` of RAM, of which 7/8 can hold cached pages (the rest
//! stands for the kernel and the processes); a new page evicts the least
//! recently used clean page (CLOCK, second chance). Dirty and locked pages
//! are never evicted; the dirty limits keep them far below the cache size.
//! Left out: mmap, `O_SYNC`, fsync, truncation I/O, shared files between
//! processes, and `mark_page_accessed`'s two LRU lists.

pub mod readahead;
pub mod writeback;

use self::readahead::{RaIo, RaState};
use self::writeback::{Balance, Flusher, VmLimits};
use crate::blk::bio::{Bio, Origin};
use crate::blk::{BlockLayer, KernelTimer, Wake};
use crate::error::{Error, Result};
use crate::fileop::{FileOp, PAGE_BYTES, PAGE_SECTORS};
use crate::request::{Dir, ProcessId};
use crate::time::SimTime;
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};


/// The `[vm]` table of an experiment spec: memory and the write-back
/// tunables of `/proc/sys/vm`, with 2.6.20's defaults (mm/page-writeback.c).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VmSpec {
    /// RAM of the simulated machine, MiB (the paper does not give its).
    pub memory_mb: u32,
    /// `dirty_background_ratio`: pdflush starts writing back at this % of
    /// memory dirty.
    pub dirty_background_ratio: u32,
    /// `vm_dirty_ratio`: a writer must write back itself above this %.
    pub dirty_ratio: u32,
    /// `dirty_expire_centisecs` (`dirty_expire_interval` = 30 s): data
    /// older than this is written by the periodic flush.
    pub dirty_expire_centisecs: u32,
    /// `dirty_writeback_centisecs` (`dirty_writeback_interval` = 5 s): the
    /// period of that flush (`wb_kupdate`); 0 turns it off.
    pub dirty_writeback_centisecs: u32,
    /// CPU time a buffered read or write spends per page copying between
    /// the cache and the process, µs (an assumption: about 2 GB/s of
    /// memory copy; 0 makes cache hits free).
    pub copy_us_per_page: f64,
}

impl Default for VmSpec {
    fn default() -> Self {
        VmSpec {
            memory_mb: 512,
            dirty_background_ratio: 10,
            dirty_ratio: 40,
            dirty_expire_centisecs: 3000,
            dirty_writeback_centisecs: 500,
            copy_us_per_page: 2.0,
        }
    }
}

impl VmSpec {
    pub fn validate(&self) -> Result<()> {
        if !(16..=1 << 20).contains(&self.memory_mb) {
            return Err(Error::invalid("vm.memory_mb", format!("must be within [16, 1048576], got {}", self.memory_mb)));
        }
        for (name, v) in [("dirty_background_ratio", self.dirty_background_ratio), ("dirty_ratio", self.dirty_ratio)] {
            if v > 100 {
                return Err(Error::invalid(format!("vm.{name}"), format!("is a percentage, got {v}")));
            }
        }
        if !(self.copy_us_per_page.is_finite() && (0.0..=1e6).contains(&self.copy_us_per_page)) {
            return Err(Error::invalid("vm.copy_us_per_page", format!("must be within [0, 1e6] µs, got {}", self.copy_us_per_page)));
        }
        if self.dirty_expire_centisecs > 360_000 || self.dirty_writeback_centisecs > 360_000 {
            return Err(Error::invalid("vm", "dirty_*_centisecs must be at most 360000 (an hour)"));
        }
        Ok(())
    }
}

/// How a process's files lie on the disk.
pub trait FileMap {
    /// The first sector of page `page` of `pid`'s file `file`.
    fn sector(&self, pid: ProcessId, file: u32, page: u64) -> u64;
    /// The size of that file in pages (its end for read-ahead).
    fn pages(&self, pid: ProcessId, file: u32) -> u64;
}

/// What a step of a buffered operation came to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// The operation is complete: the process goes on.
    Done,
    /// Bios wait in `out`: submit them (a process may sleep for a
    /// request meanwhile), then step again.
    Submit,
    /// The process waits for a page's read (`lock_page`): the queue is to
    /// be unplugged (`sync_page`), and `io_done` wakes it.
    WaitPage,
    /// The process sleeps (`congestion_wait`) until woken or its timer.
    Sleep,
}

// Page state bits.
const PRESENT: u8 = 1;
const UPTODATE: u8 = 2;
/// Locked for a read in flight.
const LOCKED: u8 = 4;
const DIRTY: u8 = 8;
const WRITEBACK: u8 = 16;
/// Used since CLOCK's hand last passed.
const REFERENCED: u8 = 32;

/// One cached file (`struct address_space` + the `struct file`'s
/// read-ahead state).
#[derive(Debug)]
pub(crate) struct CachedFile {
    pub owner: ProcessId,
    pub file: u32,
    pub size_pages: u64,
    state: Vec<u8>,
    ra: RaState,
    pub dirty: u64,
    /// When the file first became dirty (`inode->dirtied_when`).
    pub dirtied_when: Option<SimTime>,
    /// Where range-cyclic write-back goes on (`mapping->writeback_index`).
    pub writeback_index: u64,
    /// (process, page) waiting for a page's read.
    waiters: Vec<(ProcessId, u64)>,
}

impl CachedFile {
    fn state(&self, page: u64) -> u8 {
        self.state.get(page as usize).copied().unwrap_or(0)
    }
    fn set(&mut self, page: u64, bits: u8) {
        let i = page as usize;
        if i >= self.state.len() {
            self.state.resize(i + 1, 0);
        }
        self.state[i] |= bits;
    }
    fn clear(&mut self, page: u64, bits: u8) {
        if let Some(s) = self.state.get_mut(page as usize) {
            *s &= !bits;
        }
    }
    /// The next dirty page at or after `from`.
    pub(crate) fn next_dirty(&self, from: u64) -> Option<u64> {
        let start = (from as usize).min(self.state.len());
        self.state[start..].iter().position(|s| s & DIRTY != 0).map(|i| (start + i) as u64)
    }
}

/// What a process is doing in the page cache.
#[derive(Copy, Clone, Debug)]
enum Op {
    /// `do_generic_mapping_read`: the next page to copy, the end, and the
    /// page at which to call read-ahead again.
    Read { file: u32, index: u64, end: u64, next_index: u64, started: bool },
    /// `generic_file_buffered_write`, and the `balance_dirty_pages` it
    /// may be in.
    Write { file: u32, index: u64, end: u64, first: u64, partial: bool, balance: Option<Balance> },
}

/// The page cache.
pub struct PageCache {
    read_ahead_kb: u32,
    limits: VmLimits,
    capacity: u64,
    files: Vec<CachedFile>,
    by_key: HashMap<(ProcessId, u32), u32>,
    /// CLOCK over cached pages: (file, page).
    clock: VecDeque<(u32, u64)>,
    pub(crate) nr_pages: u64,
    pub(crate) nr_dirty: u64,
    pub(crate) nr_writeback: u64,
    /// Files with dirty pages, in the order they became dirty (`s_dirty`).
    pub(crate) dirty_files: VecDeque<u32>,
    ops: Vec<Option<Op>>,
    /// Pages each process dirtied since it last balanced (per-CPU
    /// `ratelimits`, one CPU).
    dirtied_since_balance: u64,
    pub(crate) flusher: Flusher,
    /// Each process's current sleep (`congestion_wait`) token.
    sleep_token: Vec<u32>,
    /// Bios to submit, for the engine.
    pub out: Vec<Bio>,
    /// Page reads that found the page evicted after read-ahead
    /// (`handle_ra_miss`), and evictions.
    pub stats: CacheStats,
}

/// The page cache at the end of a run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CacheReport {
    #[serde(flatten)]
    pub stats: CacheStats,
    pub cached_pages: u64,
    /// Dirty data not written back when the run ended.
    pub dirty_pages_left: u64,
    pub writeback_pages_left: u64,
    /// The write-back thresholds, pages.
    pub background_limit_pages: u64,
    pub dirty_limit_pages: u64,
}

/// Counters for reports and tests.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CacheStats {
    /// Pages a read found up to date in the cache.
    pub hits: u64,
    /// Pages a read had to wait for (read-ahead in flight or a page read).
    pub waits: u64,
    /// Pages read by read-ahead (`__do_page_cache_readahead`).
    pub readahead_pages: u64,
    /// Pages read one by one after a miss (`readpage`).
    pub readpage_pages: u64,
    /// Pages written back.
    pub written_back: u64,
    /// Clean pages evicted.
    pub evicted: u64,
    /// Writers sent to `congestion_wait` by `balance_dirty_pages`.
    pub throttled: u64,
}

impl PageCache {
    /// `flusher` is the process id the flusher thread's I/O is charged to.
    pub fn new(vm: &VmSpec, read_ahead_kb: u32, max_sectors: u32, flusher: ProcessId) -> Result<PageCache> {
        vm.validate()?;
        let total_pages = vm.memory_mb as u64 * (1024 * 1024 / PAGE_BYTES);
        let mut flusher = Flusher::new(flusher, vm);
        flusher.max_sectors = max_sectors;
        Ok(PageCache {
            read_ahead_kb,
            limits: VmLimits::new(vm, total_pages),
            capacity: total_pages - total_pages / 8,
            files: Vec::new(),
            by_key: HashMap::new(),
            clock: VecDeque::new(),
            nr_pages: 0,
            nr_dirty: 0,
            nr_writeback: 0,
            dirty_files: VecDeque::new(),
            ops: Vec::new(),
            dirtied_since_balance: 0,
            flusher,
            sleep_token: Vec::new(),
            out: Vec::new(),
            stats: CacheStats::default(),
        })
    }

    /// The flusher's process id.
    pub fn flusher_pid(&self) -> ProcessId {
        self.flusher.pid
    }

    /// The first flusher timer (the engine arms it at the start).
    pub fn first_timer(&self) -> Option<SimTime> {
        self.flusher.period_ns().map(|p| SimTime::ZERO + p)
    }

    fn file_index(&mut self, pid: ProcessId, file: u32, map: &dyn FileMap) -> u32 {
        if let Some(&i) = self.by_key.get(&(pid, file)) {
            return i;
        }
        let i = self.files.len() as u32;
        self.files.push(CachedFile {
            owner: pid,
            file,
            size_pages: map.pages(pid, file),
            state: Vec::new(),
            ra: RaState::new(self.read_ahead_kb),
            dirty: 0,
            dirtied_when: None,
            writeback_index: 0,
            waiters: Vec::new(),
        });
        self.by_key.insert((pid, file), i);
        i
    }

    fn slot(&mut self, pid: ProcessId) -> &mut Option<Op> {
        let i = pid as usize;
        if i >= self.ops.len() {
            self.ops.resize(i + 1, None);
        }
        &mut self.ops[i]
    }

    /// `pid` is in the middle of a buffered operation (or is the flusher).
    pub fn busy(&self, pid: ProcessId) -> bool {
        pid == self.flusher.pid || self.ops.get(pid as usize).is_some_and(|o| o.is_some())
    }

    /// Begin a buffered operation for `pid` (it must have none going).
    pub fn start(&mut self, pid: ProcessId, op: FileOp, map: &dyn FileMap) {
        let f = self.file_index(pid, op.file, map);
        let end = op.page + op.pages as u64;
        let new = match op.dir {
            Dir::Read => Op::Read { file: f, index: op.page, end, next_index: op.page, started: false },
            Dir::Write => {
                Op::Write { file: f, index: op.page, end, first: op.page, partial: op.partial, balance: None }
            }
        };
        let slot = self.slot(pid);
        debug_assert!(slot.is_none(), "process {pid} started a second buffered operation");
        *slot = Some(new);
    }

    /// Carry `pid`'s operation on as far as it goes now.
    pub fn step(&mut self, pid: ProcessId, map: &dyn FileMap, blk: &mut BlockLayer, now: SimTime) -> Step {
        if pid == self.flusher.pid {
            return self.flusher_step(map, blk, now);
        }
        let Some(op) = self.ops.get(pid as usize).copied().flatten() else {
            return Step::Done;
        };
        let (next, step) = match op {
            Op::Read { .. } => self.read_step(pid, op, map, blk),
            Op::Write { .. } => self.write_step(pid, op, map, blk, now),
        };
        self.ops[pid as usize] = if step == Step::Done { None } else { Some(next) };
        step
    }

    /// `do_generic_mapping_read`, from where the reader is.
    fn read_step(&mut self, pid: ProcessId, op: Op, map: &dyn FileMap, blk: &mut BlockLayer) -> (Op, Step) {
        let Op::Read { file, mut index, end, mut next_index, mut started } = op else { unreachable!() };
        let size = self.files[file as usize].size_pages;
        let end = end.min(size);
        while index < end {
            if index == next_index && !started {
                let mut ra = self.files[file as usize].ra;
                let mut io = RaReader { cache: self, file, map, blk };
                next_index = ra.readahead(&mut io, index, end - index);
                self.files[file as usize].ra = ra;
            }
            started = false;
            let s = self.files[file as usize].state(index);
            if s & PRESENT == 0 {
                // A miss: read-ahead did not bring it (or it was evicted).
                self.files[file as usize].ra.miss();
                self.read_pages(file, index, 1, map, false);
                self.stats.readpage_pages += 1;
            }
            let s = self.files[file as usize].state(index);
            if s & UPTODATE == 0 {
                self.stats.waits += 1;
                self.add_waiter(file, pid, index);
                // Resumed, the page is checked again; read-ahead is not
                // called a second time for it.
                let again = Op::Read { file, index, end, next_index, started: index == next_index };
                return (again, Step::WaitPage);
            }
            self.stats.hits += 1;
            self.files[file as usize].set(index, REFERENCED);
            index += 1;
        }
        (Op::Read { file, index, end, next_index, started: false }, Step::Done)
    }

    /// `generic_file_buffered_write`, from where the writer is.
    fn write_step(
        &mut self,
        pid: ProcessId,
        op: Op,
        map: &dyn FileMap,
        blk: &mut BlockLayer,
        now: SimTime,
    ) -> (Op, Step) {
        let Op::Write { file, mut index, end, first, partial, mut balance } = op else { unreachable!() };
        loop {
            if let Some(b) = balance.as_mut() {
                match self.balance_step(pid, b, map, blk, now) {
                    Some(step) => {
                        return (Op::Write { file, index, end, first, partial, balance }, step);
                    }
                    None => balance = None,
                }
            }
            if index >= end {
                return (Op::Write { file, index, end, first, partial, balance: None }, Step::Done);
            }
            let f = &self.files[file as usize];
            let s = f.state(index);
            let edge = partial && (index == first || index + 1 == end);
            if s & UPTODATE == 0 && edge && index < f.size_pages {
                // prepare_write: a partly written page of existing data
                // is read first.
                if s & PRESENT == 0 {
                    self.read_pages(file, index, 1, map, false);
                    self.stats.readpage_pages += 1;
                }
                self.add_waiter(file, pid, index);
                return (Op::Write { file, index, end, first, partial, balance }, Step::WaitPage);
            }
            if s & PRESENT == 0 {
                self.add_page(file, index, PRESENT | UPTODATE);
            }
            self.set_dirty(file, index, now);
            let f = &mut self.files[file as usize];
            f.set(index, UPTODATE | REFERENCED);
            if index >= f.size_pages {
                f.size_pages = index + 1;
            }
            index += 1;
            // balance_dirty_pages_ratelimited.
            self.dirtied_since_balance += 1;
            if self.dirtied_since_balance >= self.limits.ratelimit(self.flusher.dirty_exceeded) {
                self.dirtied_since_balance = 0;
                balance = Some(Balance::default());
            }
        }
    }

    fn add_waiter(&mut self, file: u32, pid: ProcessId, page: u64) {
        let w = &mut self.files[file as usize].waiters;
        if !w.contains(&(pid, page)) {
            w.push((pid, page));
        }
    }

    /// A page becomes dirty (`set_page_dirty`): the file joins the dirty
    /// list if it was clean (`__mark_inode_dirty` sets `dirtied_when`).
    fn set_dirty(&mut self, file: u32, page: u64, now: SimTime) {
        let f = &mut self.files[file as usize];
        if f.state(page) & DIRTY != 0 {
            return;
        }
        f.set(page, DIRTY);
        f.dirty += 1;
        self.nr_dirty += 1;
        if f.dirtied_when.is_none() {
            f.dirtied_when = Some(now);
            self.dirty_files.push_back(file);
        }
    }

    /// Put pages `page .. page + nr` of `file` that are not cached into
    /// the cache, locked, and queue reads for them: one bio per run of
    /// pages contiguous on the disk, at most `max` sectors each
    /// (`mpage_readpages`). Returns how many pages it started.
    fn read_pages(&mut self, file: u32, page: u64, nr: u64, map: &dyn FileMap, _readahead: bool) -> u64 {
        let (owner, fnum, size) = {
            let f = &self.files[file as usize];
            (f.owner, f.file, f.size_pages)
        };
        let end = (page + nr).min(size);
        let mut started = 0;
        let mut run: Option<(u64, u64, u32)> = None; // (first page, first sector, pages)
        for p in page..end {
            if self.files[file as usize].state(p) & PRESENT != 0 {
                self.flush_run(&mut run, file, owner, Dir::Read);
                continue;
            }
            self.add_page(file, p, PRESENT | LOCKED);
            started += 1;
            let sector = map.sector(owner, fnum, p);
            run = match run {
                Some((fp, fs, n)) if fs + n as u64 * PAGE_SECTORS == sector && self.fits(n + 1) => Some((fp, fs, n + 1)),
                other => {
                    let mut other = other;
                    self.flush_run(&mut other, file, owner, Dir::Read);
                    Some((p, sector, 1))
                }
            };
        }
        self.flush_run(&mut run, file, owner, Dir::Read);
        started
    }

    /// Whether a bio of `pages` pages fits a request.
    fn fits(&self, pages: u32) -> bool {
        pages as u64 * PAGE_SECTORS <= self.max_bio_sectors()
    }

    fn max_bio_sectors(&self) -> u64 {
        self.flusher.max_sectors as u64
    }

    /// Turn a run of pages into a bio in `out`.
    fn flush_run(&mut self, run: &mut Option<(u64, u64, u32)>, file: u32, owner: ProcessId, dir: Dir) {
        if let Some((page, sector, pages)) = run.take() {
            let pid = if dir == Dir::Write { self.writer_pid(owner) } else { owner };
            self.out.push(Bio {
                pid,
                sector,
                nr_sectors: pages * PAGE_SECTORS as u32,
                dir,
                sync: false,
                origin: Origin::Cache { file, page: page as u32, pages },
            });
        }
    }

    /// Who is charged with write-back I/O being built now.
    fn writer_pid(&self, _owner: ProcessId) -> ProcessId {
        self.flusher.submitter
    }

    /// Add a page to the cache, evicting a clean one if it is full.
    fn add_page(&mut self, file: u32, page: u64, bits: u8) {
        if self.nr_pages >= self.capacity {
            self.evict_one();
        }
        self.files[file as usize].set(page, bits);
        self.nr_pages += 1;
        self.clock.push_back((file, page));
    }

    /// CLOCK: the first page without its referenced bit that is clean and
    /// unlocked goes; referenced ones lose the bit and go round again.
    fn evict_one(&mut self) {
        let mut looked = 0;
        let limit = 2 * self.clock.len() + 1;
        while let Some((file, page)) = self.clock.pop_front() {
            looked += 1;
            let f = &mut self.files[file as usize];
            let s = f.state(page);
            if s & PRESENT == 0 {
                continue; // stale entry
            }
            if s & (DIRTY | WRITEBACK | LOCKED) != 0 || s & REFERENCED != 0 {
                f.clear(page, REFERENCED);
                self.clock.push_back((file, page));
                if looked > limit {
                    return; // nothing evictable: the cache overflows a little
                }
                continue;
            }
            f.clear(page, PRESENT | UPTODATE);
            self.nr_pages -= 1;
            self.stats.evicted += 1;
            return;
        }
    }

    /// A bio of the page cache completed.
    pub fn io_done(&mut self, file: u32, page: u32, pages: u32, dir: Dir, blk: &mut BlockLayer) {
        let f = &mut self.files[file as usize];
        for p in page as u64..page as u64 + pages as u64 {
            match dir {
                Dir::Read => {
                    f.clear(p, LOCKED);
                    f.set(p, UPTODATE);
                }
                Dir::Write => {
                    if f.state(p) & WRITEBACK != 0 {
                        f.clear(p, WRITEBACK);
                        self.nr_writeback -= 1;
                    }
                }
            }
        }
        if dir == Dir::Read && !f.waiters.is_empty() {
            let (lo, hi) = (page as u64, page as u64 + pages as u64);
            let before = blk.fx.wake.len();
            f.waiters.retain(|&(pid, p)| {
                if (lo..hi).contains(&p) {
                    blk.fx.wake.push((pid, Wake::Page));
                    false
                } else {
                    true
                }
            });
            debug_assert!(blk.fx.wake.len() >= before);
        }
    }

    /// Put `pid` to sleep in `congestion_wait(WRITE, HZ/10)`.
    fn congestion_wait(&mut self, pid: ProcessId, blk: &mut BlockLayer, now: SimTime) {
        let i = pid as usize;
        if i >= self.sleep_token.len() {
            self.sleep_token.resize(i + 1, 0);
        }
        self.sleep_token[i] += 1;
        blk.congestion_wait(pid, Dir::Write);
        let token = self.sleep_token[i];
        blk.fx.timers.push((now + writeback::CONGESTION_WAIT_NS, KernelTimer::Sleep { pid, token }));
    }

    /// A sleep's timer fired: if it is the current sleep, it ends.
    pub fn sleep_timer(&mut self, pid: ProcessId, token: u32, blk: &mut BlockLayer) {
        if self.sleep_token.get(pid as usize) == Some(&token) {
            self.sleep_token[pid as usize] += 1;
            blk.congestion_cancel(pid);
            blk.fx.wake.push((pid, Wake::Congestion));
        }
    }

    /// `pid` was woken: whatever timer its sleep had is stale now.
    pub fn woken(&mut self, pid: ProcessId, blk: &mut BlockLayer) {
        if let Some(t) = self.sleep_token.get_mut(pid as usize) {
            *t += 1;
        }
        blk.congestion_cancel(pid);
    }

    /// The counters and what is left dirty, for the run's result.
    pub fn report(&self) -> CacheReport {
        CacheReport {
            stats: self.stats,
            cached_pages: self.nr_pages,
            dirty_pages_left: self.nr_dirty,
            writeback_pages_left: self.nr_writeback,
            background_limit_pages: self.limits.background,
            dirty_limit_pages: self.limits.dirty,
        }
    }

    /// Pages cached, dirty, under write-back (tests, reports).
    pub fn counts(&self) -> (u64, u64, u64) {
        (self.nr_pages, self.nr_dirty, self.nr_writeback)
    }

    /// The page state bits of a page (tests).
    #[cfg(test)]
    pub(crate) fn page_state(&self, pid: ProcessId, file: u32, page: u64) -> u8 {
        self.by_key.get(&(pid, file)).map_or(0, |&i| self.files[i as usize].state(page))
    }
}

/// Read-ahead's view of one file of the cache.
struct RaReader<'a> {
    cache: &'a mut PageCache,
    file: u32,
    map: &'a dyn FileMap,
    blk: &'a BlockLayer,
}

impl RaIo for RaReader<'_> {
    fn read_pages(&mut self, offset: u64, nr: u64) -> u64 {
        let n = self.cache.read_pages(self.file, offset, nr, self.map, true);
        self.cache.stats.readahead_pages += n;
        n
    }
    fn read_congested(&self) -> bool {
        self.blk.congested(Dir::Read)
    }
}

#[cfg(test)]
mod tests;

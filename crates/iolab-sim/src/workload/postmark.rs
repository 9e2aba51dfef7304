//! Postmark (Katcher, "PostMark: A New File System Benchmark", NetApp
//! TR 3022, 1997), mapped to disk blocks through the ext2-like layout of
//! `fs_layout`.
//!
//! Postmark 1.5x (checked against the 1.51 source): `set number` files
//! (default 500) of sizes uniform in [`set size` low, high) (500 B and
//! 10,000 B), made in one directory, or spread at random over `set
//! subdirectories` directories when that is more than 1 (default 0). Three
//! phases: create the pool; run `set transactions` (500) transactions, each
//! first a read or an append of a random live file (read with chance
//! `bias read`/10, default 5; -1 = neither), then a create or a delete of a
//! random live file (create with chance `bias create`/10, default 5; -1 =
//! neither); delete every remaining file. A read reads the whole file in
//! `set read` blocks (512 B); an append adds 1 ..= (high − size) bytes in
//! `set write` blocks (512 B), nothing if the file is already at the high
//! bound; the file table holds at most 2 × `number` files (further creates
//! do nothing); the transactions stop early if no file is left.
//! Postmark's `set buffering` (C stdio or plain read/write) goes through the
//! page cache either way, so it does not change what reaches the disk and
//! is not modelled; `io = "direct"` models the paper's "direct I/O" claim.
//!
//! Block requests per file operation (what ext2 would write, see
//! `fileops` for sync/async):
//! - create: data blocks, the new inode's inode-table block, the directory
//!   block with the new entry (and the directory's inode if it grew). The
//!   data goes first, as ext3's ordered mode would have it.
//! - delete: the inode block (read first if the inode is not cached: the
//!   kernel needs the block list to free it), the directory block.
//! - read: the inode block if not cached, then the data, synchronously.
//! - append: the inode block if not cached, the data from the partly filled
//!   last block on, the inode block (new size and block list).
//!
//! Each of `processes` instances is an independent Postmark run in its own
//! top-level directory, with its own share of the block groups (ext2's
//! Orlov allocator spreads top-level directories over groups) and its own
//! inode cache; each instance is its own class, as IOzone's processes are.

use super::arrivals::{ArrivalSpec, Arrivals};
use super::fileops::{IoMode, OpQueue};
use super::fs_layout::{FsLayout, FsSpec, Geometry, BLOCK_BYTES, BLOCK_SECTORS};
use super::inode_cache::InodeCache;
use super::think::{ThinkSpec, ThinkTime};
use super::{BuiltWorkload, Process, ProcessEntry, Step};
use crate::error::{Error, Result};
use crate::request::{Dir, Request};
use crate::rng::SimRng;
use crate::time::SimTime;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PostmarkSpec {
    /// Independent Postmark instances (Postmark itself is one process).
    pub processes: u32,
    /// `set number`: files in the initial pool.
    pub files: u32,
    /// `set size`: file sizes are uniform in [min, max).
    pub size_min_bytes: u64,
    pub size_max_bytes: u64,
    /// `set transactions`.
    pub transactions: u32,
    /// `set subdirectories` (0 or 1: none).
    pub subdirectories: u32,
    /// `set read` / `set write`: application block sizes (they reach the
    /// disk only with `io = "direct"`).
    pub read_block_bytes: u32,
    pub write_block_bytes: u32,
    /// `set bias read` / `set bias create`: 0–10 (chance out of 10), -1 off.
    pub read_bias: i32,
    pub create_bias: i32,
    pub io: IoMode,
    /// Inode and directory writes synchronous (`mount -o sync`/`dirsync`)
    /// instead of written back asynchronously (ext2's default).
    pub sync_metadata: bool,
    /// Asynchronous writes in flight at most before the process waits.
    pub max_outstanding: u32,
    /// Inodes each instance keeps cached.
    pub inode_cache: u32,
    /// Time between transactions (Postmark has none).
    pub think: ThinkSpec,
    /// CPU time after each request the process waited for, before its
    /// next one (the system-call and copying work between two requests).
    pub cpu: ThinkSpec,
    /// Transactions start as this arrival stream instead (open loop, hot
    /// news bursts; see `arrivals`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pacing: Option<ArrivalSpec>,
    /// Run the create phase with I/O (false: the pool exists at start).
    pub create_phase: bool,
    /// Run the final delete phase.
    pub delete_phase: bool,
    pub fs: FsSpec,
}

impl Default for PostmarkSpec {
    /// Postmark 1.5's defaults.
    fn default() -> Self {
        PostmarkSpec {
            processes: 1,
            files: 500,
            size_min_bytes: 500,
            size_max_bytes: 10_000,
            transactions: 500,
            subdirectories: 0,
            read_block_bytes: 512,
            write_block_bytes: 512,
            read_bias: 5,
            create_bias: 5,
            io: IoMode::Buffered,
            sync_metadata: false,
            max_outstanding: 32,
            inode_cache: 128,
            think: ThinkSpec::default(),
            cpu: ThinkSpec::default(),
            pacing: None,
            create_phase: true,
            delete_phase: true,
            fs: FsSpec::default(),
        }
    }
}

impl PostmarkSpec {
    /// The WPCAS paper's web-server load (section 4.5). The paper gives no
    /// Postmark parameters; these are ours, and docs/workloads.md says why.
    ///
    /// Closed loop (Postmark runs transactions back to back), so the
    /// scheduler decides the throughput. The paper explains WPCAS's gain by
    /// hot news that draws dense I/O and later cools; each instance's pause
    /// between transactions is drawn from a hot/cold mixture: 70% short
    /// (0.1-1.3 ms) and 30% long (10-40 ms). An open-loop, paced version
    /// (`pacing`) is kept for users, but below saturation its throughput
    /// is the offered load whatever the scheduler, so it cannot test a
    /// throughput claim.
    pub fn web() -> PostmarkSpec {
        PostmarkSpec {
            processes: 8,
            files: 2000,
            transactions: 100_000,
            subdirectories: 10,
            read_bias: 9,
            create_phase: false,
            delete_phase: false,
            think: ThinkSpec::Samples { ms: vec![0.1, 0.3, 0.5, 0.7, 0.9, 1.1, 1.3, 10.0, 20.0, 40.0] },
            pacing: None,
            ..PostmarkSpec::default()
        }
    }
}

/// The validated numbers one instance runs with.
#[derive(Clone, Debug)]
struct Config {
    files: u32,
    size_min: u64,
    size_max: u64,
    transactions: u32,
    subdirs: u32,
    read_block: u64,
    write_block: u64,
    read_bias: i32,
    create_bias: i32,
    io: IoMode,
    sync_meta: bool,
    max_sectors: u32,
    create_phase: bool,
    delete_phase: bool,
}

/// What an instance did, for tests and checks.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub created: u64,
    pub deleted: u64,
    pub read: u64,
    pub appended: u64,
    /// Appends to a file already at the high bound (no I/O, as Postmark).
    pub append_full: u64,
    /// Creates with the file table full (no I/O, as Postmark).
    pub create_full: u64,
    pub no_space: u64,
    pub transactions: u64,
    /// Files deleted by the final delete phase.
    pub deleted_at_end: u64,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Stage {
    Setup,
    Create(u32),
    /// Transactions done, and which half of the next is due.
    Transact(u32, Half),
    /// Next file-table slot to look at.
    Delete(u32),
    End,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Half {
    Start,
    ReadAppend,
    CreateDelete,
}

pub struct PostmarkProcess {
    class: u32,
    cfg: Config,
    think: ThinkTime,
    cpu: ThinkTime,
    /// A request it waited for completed: CPU time is due.
    cpu_due: bool,
    pacing: Option<ArrivalSpec>,
    arrivals: Option<Arrivals>,
    next_arrival: Option<SimTime>,
    fs: FsLayout,
    dirs: Vec<u32>,
    /// Live file ids, and each id's index in `live` (NONE if not live).
    live: Vec<u32>,
    live_pos: Vec<u32>,
    cache: InodeCache,
    q: OpQueue,
    stage: Stage,
    counts: Counts,
}

const NONE: u32 = u32::MAX;

fn bias(field: &str, v: i32) -> Result<i32> {
    if (-1..=10).contains(&v) {
        Ok(v)
    } else {
        Err(Error::invalid(field, format!("must be within [-1, 10] (chance out of 10; -1 = off), got {v}")))
    }
}

fn config(spec: &PostmarkSpec) -> Result<Config> {
    let positive = |field: &str, v: u64| {
        if v == 0 {
            Err(Error::invalid(format!("workload.{field}"), "must be at least 1"))
        } else {
            Ok(v)
        }
    };
    positive("processes", spec.processes as u64)?;
    positive("files", spec.files as u64)?;
    positive("size_min_bytes", spec.size_min_bytes)?;
    if spec.size_max_bytes < spec.size_min_bytes || spec.size_max_bytes > 1 << 30 {
        return Err(Error::invalid("workload.size_max_bytes", "must be within [size_min_bytes, 1 GiB]"));
    }
    positive("read_block_bytes", spec.read_block_bytes as u64)?;
    positive("write_block_bytes", spec.write_block_bytes as u64)?;
    positive("max_outstanding", spec.max_outstanding as u64)?;
    Ok(Config {
        files: spec.files,
        size_min: spec.size_min_bytes,
        size_max: spec.size_max_bytes,
        transactions: spec.transactions,
        subdirs: if spec.subdirectories > 1 { spec.subdirectories } else { 0 },
        read_block: spec.read_block_bytes as u64,
        write_block: spec.write_block_bytes as u64,
        read_bias: bias("workload.read_bias", spec.read_bias)?,
        create_bias: bias("workload.create_bias", spec.create_bias)?,
        io: spec.io,
        sync_meta: spec.sync_metadata,
        max_sectors: spec.fs.max_request_sectors(),
        create_phase: spec.create_phase,
        delete_phase: spec.delete_phase,
    })
}

pub fn build(spec: &PostmarkSpec, capacity: u64) -> Result<BuiltWorkload> {
    let cfg = config(spec)?;
    let think = ThinkTime::from_spec(&spec.think, "workload.think")?;
    let cpu = ThinkTime::from_spec(&spec.cpu, "workload.cpu")?;
    if let Some(p) = &spec.pacing {
        Arrivals::new(p, SimTime::ZERO, SimTime::NEVER, "workload.pacing")?;
    }
    let geo = Geometry::new(&spec.fs, capacity, "workload.fs")?;
    let n = spec.processes;
    if geo.groups < n {
        return Err(Error::invalid(
            "workload.processes",
            format!("each instance needs a block group of its own; the file system has {}", geo.groups),
        ));
    }
    let mut processes = Vec::with_capacity(n as usize);
    for i in 0..n {
        let first = (i as u64 * geo.groups as u64 / n as u64) as u32;
        let count = ((i as u64 + 1) * geo.groups as u64 / n as u64) as u32 - first;
        let fs = FsLayout::new(geo.clone(), first, count);
        // The file table holds 2 × files; each file at most size_max; one
        // directory block per entries-per-block entries, plus one each.
        let most = 2 * cfg.files as u64;
        let dirs = cfg.subdirs as u64 + 1;
        let blocks = most * cfg.size_max.div_ceil(BLOCK_BYTES) + most / geo.dirents_per_block as u64 + 2 * dirs;
        if blocks > fs.free_blocks() || most + dirs > fs.free_inodes() {
            return Err(Error::invalid(
                "workload.files",
                format!(
                    "{} files of up to {} bytes may not fit an instance's {} MiB of block groups",
                    most,
                    cfg.size_max,
                    (fs.free_blocks() * BLOCK_BYTES) >> 20
                ),
            ));
        }
        let mut p = PostmarkProcess::new(
            i,
            cfg.clone(),
            think.clone(),
            spec.pacing.clone(),
            fs,
            spec.inode_cache,
            spec.max_outstanding,
        );
        p.cpu = cpu.clone();
        processes.push(ProcessEntry { name: format!("postmark.{i}"), start: SimTime::ZERO, process: Box::new(p) });
    }
    let classes = (0..n).map(|i| format!("postmark.{i}")).collect();
    // Write-back (of metadata, and of data without direct I/O) goes
    // through the page cache, written by pdflush.
    let page_cache = !(cfg.io == IoMode::Direct && cfg.sync_meta);
    Ok(BuiltWorkload { classes, processes, page_cache })
}

impl PostmarkProcess {
    #[allow(clippy::too_many_arguments)]
    fn new(
        class: u32,
        cfg: Config,
        think: ThinkTime,
        pacing: Option<ArrivalSpec>,
        fs: FsLayout,
        inode_cache: u32,
        max_outstanding: u32,
    ) -> PostmarkProcess {
        let most = 2 * cfg.files as usize;
        PostmarkProcess {
            class,
            cfg,
            think,
            cpu: ThinkTime::Constant(0),
            cpu_due: false,
            pacing,
            arrivals: None,
            next_arrival: None,
            fs,
            dirs: Vec::new(),
            live: Vec::with_capacity(most),
            live_pos: Vec::with_capacity(most),
            cache: InodeCache::new(inode_cache),
            q: OpQueue::new(max_outstanding).through_page_cache(),
            stage: Stage::Setup,
            counts: Counts::default(),
        }
    }

    #[cfg(test)]
    pub(crate) fn counts(&self) -> Counts {
        self.counts
    }

    fn setup(&mut self, rng: &mut SimRng) {
        // Directories are made before the timed run, as Postmark does, and
        // without I/O here.
        let root = self.fs.mkdir(None).expect("checked at build");
        self.dirs.push(root);
        for _ in 0..self.cfg.subdirs {
            let d = self.fs.mkdir(Some(root)).expect("checked at build");
            self.dirs.push(d);
        }
        if self.cfg.subdirs > 0 {
            self.dirs.remove(0); // files go in the subdirectories only
        }
        if !self.cfg.create_phase {
            for _ in 0..self.cfg.files {
                self.create(rng, false);
            }
        }
    }

    fn add_live(&mut self, id: u32) {
        if self.live_pos.len() <= id as usize {
            self.live_pos.resize(id as usize + 1, NONE);
        }
        self.live_pos[id as usize] = self.live.len() as u32;
        self.live.push(id);
    }

    fn remove_live(&mut self, id: u32) {
        let pos = self.live_pos[id as usize] as usize;
        self.live.swap_remove(pos);
        if let Some(&moved) = self.live.get(pos) {
            self.live_pos[moved as usize] = pos as u32;
        }
        self.live_pos[id as usize] = NONE;
    }

    fn pick_live(&self, rng: &mut SimRng) -> u32 {
        self.live[rng.below(self.live.len() as u64) as usize]
    }

    /// The inode block, read first if the inode is not cached.
    fn open(&mut self, ino: u64) {
        if !self.cache.lookup(ino) {
            self.q.block(self.fs.inode_sector(ino), Dir::Read, true);
            self.cache.insert(ino);
        }
    }

    fn create(&mut self, rng: &mut SimRng, with_io: bool) {
        if self.live.len() >= 2 * self.cfg.files as usize {
            self.counts.create_full += 1;
            return;
        }
        let dir = self.dirs[rng.below(self.dirs.len() as u64) as usize];
        let span = self.cfg.size_max - self.cfg.size_min;
        let size = self.cfg.size_min + if span > 0 { rng.below(span) } else { 0 };
        let Ok(c) = self.fs.create(dir, size) else {
            self.counts.no_space += 1;
            return;
        };
        self.add_live(c.file);
        self.counts.created += 1;
        if !with_io {
            return;
        }
        let meta_sync = self.cfg.sync_meta;
        let data_sync = self.cfg.io == IoMode::Direct;
        let (cfg, fs, q) = (&self.cfg, &self.fs, &mut self.q);
        q.data(fs, c.file, (0, size), cfg.io, cfg.write_block, Dir::Write, data_sync, cfg.max_sectors);
        let f = fs.file(c.file);
        q.block(fs.inode_sector(f.ino), Dir::Write, meta_sync);
        q.block(f.dirent_block * BLOCK_SECTORS, Dir::Write, meta_sync);
        if c.dir_grew {
            q.block(fs.dir_inode_sector(f.dir), Dir::Write, meta_sync);
        }
        self.cache.insert(f.ino);
    }

    fn delete(&mut self, id: u32) {
        let f = self.fs.file(id);
        let (ino, dirent) = (f.ino, f.dirent_block);
        self.open(ino);
        let sync = self.cfg.sync_meta;
        self.q.block(dirent * BLOCK_SECTORS, Dir::Write, sync);
        self.q.block(self.fs.inode_sector(ino), Dir::Write, sync);
        self.cache.remove(ino);
        self.fs.delete(id);
        self.remove_live(id);
        self.counts.deleted += 1;
    }

    fn read(&mut self, id: u32) {
        let (ino, size) = (self.fs.file(id).ino, self.fs.file(id).size_bytes);
        self.open(ino);
        let (cfg, fs) = (&self.cfg, &self.fs);
        self.q.data(fs, id, (0, size), cfg.io, cfg.read_block, Dir::Read, true, cfg.max_sectors);
        self.counts.read += 1;
    }

    fn append(&mut self, id: u32, rng: &mut SimRng) {
        let (ino, size) = (self.fs.file(id).ino, self.fs.file(id).size_bytes);
        if size >= self.cfg.size_max {
            self.counts.append_full += 1;
            return;
        }
        let bytes = rng.below(self.cfg.size_max - size) + 1;
        if self.fs.append(id, bytes).is_err() {
            self.counts.no_space += 1;
            return;
        }
        self.open(ino);
        let data_sync = self.cfg.io == IoMode::Direct;
        let (cfg, fs) = (&self.cfg, &self.fs);
        self.q.data(fs, id, (size, size + bytes), cfg.io, cfg.write_block, Dir::Write, data_sync, cfg.max_sectors);
        self.q.block(fs.inode_sector(ino), Dir::Write, cfg.sync_meta);
        self.counts.appended += 1;
    }

    /// One step of the transaction phase; `Some` to return it at once.
    fn transact(&mut self, done: u32, half: Half, now: SimTime, rng: &mut SimRng) -> Option<Step> {
        if done >= self.cfg.transactions || self.live.is_empty() {
            self.stage = Stage::Delete(0);
            return None;
        }
        match half {
            Half::Start => {
                self.stage = Stage::Transact(done, Half::ReadAppend);
                return self.pace(done, now, rng);
            }
            Half::ReadAppend => {
                if self.cfg.read_bias != -1 {
                    let read = (rng.below(10) as i32) < self.cfg.read_bias;
                    let id = self.pick_live(rng);
                    if read {
                        self.read(id);
                    } else {
                        self.append(id, rng);
                    }
                }
                self.stage = Stage::Transact(done, Half::CreateDelete);
            }
            Half::CreateDelete => {
                if self.cfg.create_bias != -1 {
                    if (rng.below(10) as i32) < self.cfg.create_bias {
                        self.create(rng, true);
                    } else {
                        let id = self.pick_live(rng);
                        self.delete(id);
                    }
                }
                self.counts.transactions += 1;
                self.stage = Stage::Transact(done + 1, Half::Start);
            }
        }
        None
    }

    /// Wait before transaction `done`: until its arrival (pacing), or a
    /// think time after the previous one.
    fn pace(&mut self, done: u32, now: SimTime, rng: &mut SimRng) -> Option<Step> {
        if let Some(spec) = &self.pacing {
            let a = self.arrivals.get_or_insert_with(|| {
                Arrivals::new(spec, now, SimTime::NEVER, "workload.pacing").expect("checked at build")
            });
            let due = match self.next_arrival.take() {
                Some(t) => t,
                None => a.next(rng).map_or(now, |x| x.time),
            };
            // Draw the following arrival now: a backlog forms when
            // transactions take longer than the gaps.
            self.next_arrival = a.next(rng).map(|x| x.time);
            return (due > now).then(|| Step::Think(due.since(now)));
        }
        if done > 0 && !self.think.is_zero() {
            let ns = self.think.draw(rng);
            return (ns > 0).then_some(Step::Think(ns));
        }
        None
    }

    /// Start the next file operation; `Some` to return that step at once.
    fn advance(&mut self, now: SimTime, rng: &mut SimRng) -> Option<Step> {
        self.q.start();
        match self.stage {
            Stage::Setup => {
                self.setup(rng);
                self.stage = if self.cfg.create_phase { Stage::Create(0) } else { Stage::Transact(0, Half::Start) };
            }
            Stage::Create(i) if i < self.cfg.files => {
                self.create(rng, true);
                self.stage = Stage::Create(i + 1);
            }
            Stage::Create(_) => self.stage = Stage::Transact(0, Half::Start),
            Stage::Transact(done, half) => return self.transact(done, half, now, rng),
            Stage::Delete(slot) => {
                let files = self.fs.files();
                let next = files.iter().skip(slot as usize).position(|f| f.live).map(|p| slot as usize + p);
                match next.filter(|_| self.cfg.delete_phase) {
                    Some(id) => {
                        self.delete(id as u32);
                        self.counts.deleted_at_end += 1;
                        self.stage = Stage::Delete(id as u32 + 1);
                    }
                    None => self.stage = Stage::End,
                }
            }
            Stage::End => return Some(if self.q.drained() { Step::Exit } else { Step::Wait }),
        }
        None
    }

    /// Which phase the process is in (tests).
    #[cfg(test)]
    fn phase(&self) -> u8 {
        match self.stage {
            Stage::Setup | Stage::Create(_) => 1,
            Stage::Transact(..) => 2,
            Stage::Delete(_) | Stage::End => 3,
        }
    }
}

impl Process for PostmarkProcess {
    fn class(&self) -> u32 {
        self.class
    }

    fn next(&mut self, now: SimTime, rng: &mut SimRng) -> Step {
        if std::mem::take(&mut self.cpu_due) {
            let ns = self.cpu.draw(rng);
            if ns > 0 {
                return Step::Think(ns);
            }
        }
        loop {
            if let Some(step) = self.q.poll() {
                return step;
            }
            if let Some(step) = self.advance(now, rng) {
                return step;
            }
        }
    }

    fn completed(&mut self, rq: &Request, _now: SimTime) {
        self.q.completed(rq);
        self.cpu_due |= rq.sync && !self.cpu.is_zero();
    }

    /// Only the block-device pseudo-file: page `p` is disk block `p`.
    fn file_sector(&self, _file: u32, page: u64) -> u64 {
        page * BLOCK_SECTORS
    }

    fn file_pages(&self, _file: u32) -> u64 {
        self.fs.geometry().total_blocks
    }
}

#[cfg(test)]
mod tests {
    use super::super::fileops::request_for;
    use super::super::IoOp;
    use super::*;

    /// Run a process to its end with instant completions: the end time
    /// and (phase, request) for every request.
    fn run(p: &mut PostmarkProcess, seed: u64) -> (SimTime, Vec<(u8, IoOp)>) {
        let (mut rng, mut now) = (SimRng::new(seed), SimTime::ZERO);
        let mut ops = Vec::new();
        loop {
            match p.next(now, &mut rng) {
                Step::Issue(op) | Step::IssueThenWait(op) => {
                    ops.push((p.phase(), op));
                    p.completed(&request_for(op, now), now);
                }
                Step::Think(ns) => now += ns,
                Step::Compute { .. } => panic!("Postmark thinks, it has no cpu time"),
                Step::Wait => panic!("waiting with nothing in flight"),
                // Through the page cache: seen here as the blocks it names
                // (a read is sync, a write is write-back).
                Step::File(op) => ops.push((
                    p.phase(),
                    IoOp {
                        sector: op.page * BLOCK_SECTORS,
                        nr_sectors: op.pages * BLOCK_SECTORS as u32,
                        dir: op.dir,
                        sync: op.dir == Dir::Read,
                    },
                )),
                Step::Barrier { .. } => panic!("Postmark has no barrier"),
                Step::Exit => break,
            }
        }
        p.fs.check();
        (now, ops)
    }

    /// One instance of `spec` on a 2 GiB file system, run to its end.
    fn drive(spec: &PostmarkSpec, seed: u64) -> (PostmarkProcess, Vec<(u8, IoOp)>) {
        let cfg = config(spec).unwrap();
        let geo = Geometry::new(&spec.fs, 1 << 22, "fs").unwrap();
        let fs = FsLayout::new(geo.clone(), 0, geo.groups);
        let think = ThinkTime::from_spec(&spec.think, "t").unwrap();
        let mut p =
            PostmarkProcess::new(0, cfg, think, spec.pacing.clone(), fs, spec.inode_cache, spec.max_outstanding);
        let (_, ops) = run(&mut p, seed);
        (p, ops)
    }

    fn is_inode(geo: &Geometry, sector: u64) -> bool {
        let b = sector / 8;
        let g = (b / geo.group_blocks) as u32;
        b >= geo.itable_start(g) && b < geo.data_start(g)
    }

    #[test]
    fn three_phases_make_the_right_requests() {
        let spec = PostmarkSpec::default();
        let (p, ops) = drive(&spec, 42);
        let geo = p.fs.geometry().clone();
        let c = p.counts();
        assert_eq!(c.transactions, 500);
        assert_eq!(c.created, c.deleted, "every file is deleted at the end");
        // Phase 1: 500 creates, each a data write, an inode write and a
        // directory write; the directory grows twice (170 entries a block).
        let create: Vec<&IoOp> = ops.iter().filter(|o| o.0 == 1).map(|o| &o.1).collect();
        assert!(create.iter().all(|o| o.dir == Dir::Write && !o.sync));
        assert_eq!(create.iter().filter(|o| is_inode(&geo, o.sector)).count(), 500 + 2);
        assert_eq!(create.len(), 3 * 500 + 2);
        // Phase 2: every read is synchronous, every write asynchronous.
        let tx: Vec<&IoOp> = ops.iter().filter(|o| o.0 == 2).map(|o| &o.1).collect();
        assert!(tx.iter().all(|o| o.sync == (o.dir == Dir::Read)));
        assert!(tx.iter().filter(|o| o.dir == Dir::Read && !is_inode(&geo, o.sector)).count() as u64 >= c.read);
        // Phase 3: metadata only: two block writes per file, inode reads
        // for the files whose inodes were evicted.
        let del: Vec<&IoOp> = ops.iter().filter(|o| o.0 == 3).map(|o| &o.1).collect();
        let left = c.deleted_at_end;
        assert!(left > 0);
        assert!(del.iter().all(|o| o.nr_sectors == 8));
        assert!(del.iter().filter(|o| o.dir == Dir::Read).all(|o| is_inode(&geo, o.sector) && o.sync));
        assert_eq!(del.iter().filter(|o| o.dir == Dir::Write).count() as u64, 2 * left);
        assert!(del.iter().filter(|o| o.dir == Dir::Read).count() as u64 >= left.saturating_sub(128));
    }

    #[test]
    fn transaction_mix_follows_the_biases() {
        for (read_bias, create_bias) in [(5, 5), (8, 5), (2, 6)] {
            let spec = PostmarkSpec {
                transactions: 20_000,
                read_bias,
                create_bias,
                delete_phase: false,
                ..PostmarkSpec::default()
            };
            let (p, _) = drive(&spec, 7);
            let c = p.counts();
            assert_eq!(c.transactions, 20_000);
            let reads = c.read as f64 / (c.read + c.appended + c.append_full) as f64;
            let creates =
                (c.created - 500 + c.create_full) as f64 / (c.created - 500 + c.create_full + c.deleted) as f64;
            assert!((reads - read_bias as f64 / 10.0).abs() < 0.02, "read share {reads} for bias {read_bias}");
            assert!(
                (creates - create_bias as f64 / 10.0).abs() < 0.02,
                "create share {creates} for bias {create_bias}"
            );
        }
        // -1 turns a pair off.
        let spec = PostmarkSpec { read_bias: -1, ..PostmarkSpec::default() };
        let (p, _) = drive(&spec, 1);
        assert_eq!((p.counts().read, p.counts().appended), (0, 0));
    }

    #[test]
    fn sizes_stay_within_bounds_and_subdirectories_are_used() {
        let spec =
            PostmarkSpec { transactions: 3000, subdirectories: 5, delete_phase: false, ..PostmarkSpec::default() };
        let (p, _) = drive(&spec, 3);
        let live: Vec<_> = p.fs.files().iter().filter(|f| f.live).collect();
        assert!(live.iter().all(|f| (500..=10_000).contains(&f.size_bytes)));
        assert!(p.counts().appended > 500);
        let dirs: std::collections::BTreeSet<u32> = live.iter().map(|f| f.dir).collect();
        assert_eq!(dirs.len(), 5);
        assert!(!dirs.contains(&0), "no file in the top directory");
    }

    #[test]
    fn direct_io_and_sync_metadata() {
        let spec =
            PostmarkSpec { io: IoMode::Direct, sync_metadata: true, transactions: 200, ..PostmarkSpec::default() };
        let (_, ops) = drive(&spec, 5);
        assert!(ops.iter().all(|o| o.1.sync));
        assert!(ops.iter().filter(|o| o.1.nr_sectors == 1).count() > 1000, "512-byte application blocks");
    }

    #[test]
    fn pacing_spaces_transactions_out() {
        let pacing = ArrivalSpec { rate_per_s: 100.0, burst_every_s: 0.0, ..ArrivalSpec::default() };
        let spec =
            PostmarkSpec { create_phase: false, pacing: Some(pacing), transactions: 1000, ..PostmarkSpec::default() };
        let cfg = config(&spec).unwrap();
        let geo = Geometry::new(&spec.fs, 1 << 22, "fs").unwrap();
        let fs = FsLayout::new(geo.clone(), 0, 1);
        let mut p = PostmarkProcess::new(0, cfg, ThinkTime::Constant(0), spec.pacing.clone(), fs, 16, 8);
        let (now, _) = run(&mut p, 2);
        // 1000 transactions at 100/s: about 10 s.
        assert!((now.as_ms_f64() - 10_000.0).abs() < 1_000.0, "{now:?}");
    }

    #[test]
    fn build_checks_fields_and_space() {
        let err = |spec: PostmarkSpec| build(&spec, 1 << 22).err().expect("an error").to_string();
        assert!(err(PostmarkSpec { read_bias: 11, ..PostmarkSpec::default() }).starts_with("workload.read_bias"));
        assert!(
            err(PostmarkSpec { size_max_bytes: 10, ..PostmarkSpec::default() }).starts_with("workload.size_max_bytes")
        );
        assert!(err(PostmarkSpec { processes: 17, ..PostmarkSpec::default() }).starts_with("workload.processes"));
        assert!(err(PostmarkSpec { files: 200_000, ..PostmarkSpec::default() }).starts_with("workload.files"));
        let w = build(&PostmarkSpec { processes: 4, ..PostmarkSpec::default() }, 1 << 22).unwrap();
        assert_eq!(w.classes.len(), 4);
    }
}

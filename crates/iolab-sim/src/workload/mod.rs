//! Workloads: the simulated processes that submit requests.
//!
//! Brief overview: a workload spec ([`WorkloadSpec`], the `[workload]`
//! table) is built into processes ([`Process`]), each with its own file
//! region on the disk and its own random stream. The engine asks a process
//! what it does next ([`Process::next`] → [`Step`]) whenever it is
//! runnable: at its start time, after a think, and after one of its
//! requests completes.

use crate::error::{Error, Result};
use crate::request::{Dir, IoPrio, Request, SECTOR_BYTES};
use crate::field::{FieldError, FieldPath};
use crate::rng::SimRng;
use crate::time::SimTime;
use serde::{Deserialize, Serialize};

pub mod arrivals;
pub mod fileops;
pub mod fs_layout;
pub mod group;
pub mod inode_cache;
pub mod iozone;
pub mod pattern;
pub mod postmark;
pub mod process;
pub mod think;
pub mod trace;
pub mod web;

/// One request a process wants to submit. No sectors: a cache flush
/// (`REQ_OP_FLUSH` with `REQ_PREFLUSH`, what `fsync(2)` ends with).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct IoOp {
    pub sector: u64,
    pub nr_sectors: u32,
    pub dir: Dir,
    pub sync: bool,
}

impl IoOp {
    /// An empty flush (`blkdev_issue_flush`).
    pub fn flush() -> IoOp {
        IoOp { sector: 0, nr_sectors: 0, dir: Dir::Write, sync: true }
    }

    /// A cache flush rather than data.
    pub fn is_flush(&self) -> bool {
        self.nr_sectors == 0
    }
}

/// What a process does next.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Submit this request now, bypassing the page cache (direct I/O;
    /// then the engine asks again at once).
    Issue(IoOp),
    /// Submit this request now, then block until one of its requests
    /// completes: `Issue` followed by the `Wait` that asking again at once
    /// would give. A closed-loop process says so with its request, which
    /// spares the engine a second call per request.
    IssueThenWait(IoOp),
    /// Read or write pages of one of its files through the page cache
    /// (buffered I/O). The process is blocked until the operation is done,
    /// then asked again.
    File(crate::fileop::FileOp),
    /// Compute for this many ns, then ask again.
    Think(u64),
    /// Run on a CPU for `cpu` ns, then sleep for `sleep` ns, then ask
    /// again. Without `[host] cpus` the same as `Think(cpu + sleep)`; with
    /// it, the CPU part waits for a free CPU (`engine::cpu`).
    Compute { cpu: u64, sleep: u64 },
    /// Block until one of its requests completes.
    Wait,
    /// Wait until `parties` processes of barrier group `group` have
    /// reached point `key`, then go on (IOzone's children start each test
    /// together).
    Barrier { group: u32, key: u32, parties: u32 },
    /// The process is done.
    Exit,
}

/// A simulated process.
pub trait Process: Send {
    /// Index into the workload's class names.
    fn class(&self) -> u32;
    /// Called whenever the process is runnable.
    fn next(&mut self, now: SimTime, rng: &mut SimRng) -> Step;
    /// One of its requests completed (the engine then calls `next` unless
    /// the process is thinking).
    fn completed(&mut self, rq: &Request, now: SimTime);
    /// Optional, for processes that use `Step::File`: the first sector of
    /// page (4 KiB) `page` of its file `file`.
    fn file_sector(&self, _file: u32, _page: u64) -> u64 {
        0
    }
    /// Optional, for processes that use `Step::File`: the size of its file
    /// `file` in pages.
    fn file_pages(&self, _file: u32) -> u64 {
        0
    }
    /// Optional: when each of its phases started and ended, and the bytes
    /// it moved in each (for IOzone-style throughput).
    fn timings(&self) -> &[process::PhaseTiming] {
        &[]
    }
    /// Its I/O priority (`ionice`); best effort 4 unless set.
    fn ioprio(&self) -> IoPrio {
        IoPrio::default()
    }
}

/// A process ready to run, with its name and start time.
pub struct ProcessEntry {
    pub name: String,
    pub start: SimTime,
    pub process: Box<dyn Process>,
}

/// The processes of a workload and the names of their classes.
pub struct BuiltWorkload {
    pub classes: Vec<String>,
    pub processes: Vec<ProcessEntry>,
    /// Some process does buffered I/O (`Step::File`): the run needs the
    /// page cache and its flusher.
    pub page_cache: bool,
}

/// The `[workload]` table of an experiment spec.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum WorkloadSpec {
    /// The paper's IOzone runs (`iozone -i 0 -i 1` or `-i 2`, `-t N`).
    Iozone(iozone::IozoneSpec),
    /// Groups of processes described field by field.
    Processes(group::ProcessesSpec),
    /// Postmark's three phases through an ext2-like file-system layout.
    Postmark(postmark::PostmarkSpec),
    /// Web-server workers reading files: Zipf popularity, hot-news bursts.
    Web(web::WebSpec),
    /// Replay of a block trace (blkparse, MSR, SPC, FIU, DiskSim).
    Trace(trace::TraceSpec),
}

/// Find the field at fault in a `[workload]` table (`path` names the
/// table): serde reads an internally tagged enum as a whole and would name
/// only the table. Each kind's own table is read here on its own, so the
/// error names the field (`workload.group[0].count`). Unknown kinds are
/// left to serde's own message, which lists the known ones.
pub fn check_value(value: &serde_json::Value, path: &FieldPath) -> std::result::Result<(), FieldError> {
    use serde_json::Value;
    fn read<T: serde::de::DeserializeOwned>(v: Value, path: &FieldPath) -> std::result::Result<(), FieldError> {
        serde_path_to_error::deserialize::<_, T>(v).map(|_| ()).map_err(|e| FieldError::from_serde(path, e))
    }
    let Some(obj) = value.as_object() else {
        return Err(FieldError::new(path.clone(), "expected a table with a `kind`"));
    };
    let kind = match obj.get("kind") {
        Some(Value::String(k)) => k.clone(),
        Some(_) => return Err(FieldError::new(path.clone().key("kind"), "expected a workload kind (a string)")),
        None => return Err(FieldError::new(path.clone(), "missing field `kind` (iozone, processes, postmark, web or trace)")),
    };
    let mut rest = obj.clone();
    rest.remove("kind");
    let rest = Value::Object(rest);
    match kind.as_str() {
        "iozone" => read::<iozone::IozoneSpec>(rest, path),
        "processes" => read::<group::ProcessesSpec>(rest, path),
        "postmark" => read::<postmark::PostmarkSpec>(rest, path),
        "web" => read::<web::WebSpec>(rest, path),
        "trace" => read::<trace::TraceSpec>(rest, path),
        _ => Ok(()),
    }
}

/// How process files are laid out on the disk.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// File i of n starts at i/n of the disk (files in different block
    /// groups, far apart: the case where anticipation pays).
    #[default]
    Spread,
    /// Files one after the other from the start of the disk.
    Packed,
    /// Every process works in the same sectors, one file from the start of
    /// the disk (many processes reading one database or disk image, or
    /// random I/O over the whole device as fio's `filename=/dev/sdX` and
    /// DiskSim's synthetic generators do). Direct I/O only: the page cache
    /// would keep each process's view of the sectors apart.
    Shared,
    /// Files created one after the other in one directory of an ext2/3
    /// layout (`fs_layout`): in the directory's block group, first fit
    /// after its metadata, spilling to the next groups.
    Directory,
    /// As `directory`, with ext3's block goal for each writer
    /// (`ext3_find_near`: the group's start plus `(pid % 16)` sixteenths
    /// of the group): files written by different processes start up to
    /// 15/16 of a group apart, files of the same colour follow each other.
    Ext3,
}

/// Build the processes of a workload on a disk of `capacity_sectors`.
pub fn build(spec: &WorkloadSpec, capacity_sectors: u64) -> Result<BuiltWorkload> {
    match spec {
        WorkloadSpec::Iozone(s) => iozone::build(s, capacity_sectors),
        WorkloadSpec::Processes(s) => group::build(s, capacity_sectors),
        WorkloadSpec::Postmark(s) => postmark::build(s, capacity_sectors),
        WorkloadSpec::Web(s) => web::build(s, capacity_sectors),
        WorkloadSpec::Trace(s) => trace::build(s, capacity_sectors),
    }
}

/// Named workloads for `iolab compare --workload NAME`, with a summary.
pub fn presets() -> Vec<(&'static str, &'static str, WorkloadSpec)> {
    vec![
        (
            "iozone",
            "IOzone -i 0 -i 1 -I: N processes, each writes then reads its own file sequentially",
            WorkloadSpec::Iozone(iozone::IozoneSpec::default()),
        ),
        (
            "iozone-random",
            "IOzone -i 2 -I: N processes, random reads then random writes of their own file",
            WorkloadSpec::Iozone(iozone::IozoneSpec { mode: iozone::IozoneMode::Random, ..Default::default() }),
        ),
        (
            "deceptive-idleness",
            "Iyer & Druschel's scenario: sequential synchronous readers with short think times",
            WorkloadSpec::Processes(group::ProcessesSpec::deceptive_idleness()),
        ),
        (
            "postmark",
            "Postmark 1.5 defaults: 500 files of 500 B-10 KB, 500 transactions, one process",
            WorkloadSpec::Postmark(postmark::PostmarkSpec::default()),
        ),
        (
            "postmark-web",
            "the WPCAS paper's web-server load: 8 closed-loop Postmark instances, read-mostly, hot/cold pauses",
            WorkloadSpec::Postmark(postmark::PostmarkSpec::web()),
        ),
        (
            "web",
            "a web server: 8 workers, 10,000 files, Zipf popularity, hot-news bursts that cool",
            WorkloadSpec::Web(web::WebSpec::default()),
        ),
    ]
}

/// Look a named workload up.
pub fn preset(name: &str) -> Result<WorkloadSpec> {
    let all = presets();
    let names: Vec<&str> = all.iter().map(|p| p.0).collect();
    all.iter()
        .find(|p| p.0 == name)
        .map(|p| p.2.clone())
        .ok_or_else(|| Error::unknown("workload", name, &names))
}

/// Kilobytes (KiB, as IOzone's -r and -s count them) to whole sectors.
pub(crate) fn kib_to_sectors(field: &str, kib: f64) -> Result<u64> {
    let sectors = (kib * 1024.0 / SECTOR_BYTES as f64).round();
    if !(kib.is_finite() && sectors >= 1.0) {
        return Err(Error::invalid(field, format!("expected at least 0.5 KiB, got {kib}")));
    }
    Ok(sectors as u64)
}

/// Start sectors for `files` regions of `sizes[i]` sectors each.
pub(crate) fn place(placement: Placement, sizes: &[u64], capacity: u64, field: &str) -> Result<Vec<u64>> {
    const ALIGN: u64 = 8; // 4 KiB, a file-system block
    if matches!(placement, Placement::Directory | Placement::Ext3) {
        return fs_layout::place_in_directory(sizes, capacity, placement == Placement::Ext3, field);
    }
    // Shared files overlap from the disk's start: only the largest must fit.
    let shared = placement == Placement::Shared;
    let need = if shared { sizes.iter().copied().max().unwrap_or(0) } else { sizes.iter().sum() };
    if need > capacity {
        let mib = |sectors: u64| (sectors * SECTOR_BYTES) >> 20;
        let why = if shared {
            format!("a shared file of {} MiB does not fit the disk's {} MiB", mib(need), mib(capacity))
        } else {
            format!("the files need {} MiB but the disk holds {} MiB", mib(need), mib(capacity))
        };
        return Err(Error::invalid(field, why));
    }
    if shared {
        return Ok(vec![0; sizes.len()]);
    }
    let n = sizes.len() as u64;
    let mut starts = Vec::with_capacity(sizes.len());
    let mut next_free = 0u64;
    for (i, &size) in sizes.iter().enumerate() {
        let wanted = match placement {
            Placement::Spread => (capacity / n.max(1) * i as u64) / ALIGN * ALIGN,
            _ => next_free,
        };
        let start = wanted.max(next_free).min(capacity - size);
        starts.push(start);
        next_free = (start + size).div_ceil(ALIGN) * ALIGN;
    }
    Ok(starts)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spread_and_packed_placement() {
        let s = place(Placement::Spread, &[16, 16, 16, 16], 4000, "w").unwrap();
        assert_eq!(s, [0, 1000, 2000, 3000]);
        let p = place(Placement::Packed, &[10, 16, 16], 4000, "w").unwrap();
        assert_eq!(p, [0, 16, 32]);
        // Shared: every file at the start, each only as large as the disk.
        assert_eq!(place(Placement::Shared, &[4000, 4000, 16], 4000, "w").unwrap(), [0, 0, 0]);
        let e = place(Placement::Shared, &[4008], 4000, "w").unwrap_err().to_string();
        assert!(e.contains("shared file") && e.contains("does not fit"), "{e}");
        assert!(place(Placement::Packed, &[3000, 3000], 4000, "w").is_err());
    }

    #[test]
    fn directory_placement_goes_through_the_file_system_layout() {
        let cap = 1 << 22; // 2 GiB: 16 groups of 128 MiB
        let d = place(Placement::Directory, &[1024, 1024, 1024], cap, "w").unwrap();
        // One group's metadata (3 + 256 blocks), the directory's block, then
        // the files back to back.
        let first = (3 + 256 + 1) * 8;
        assert_eq!(d, [first, first + 1024, first + 2048]);
        // ext3's colours: process i's goal is i/16 of the group.
        let e = place(Placement::Ext3, &[1024, 1024, 1024], cap, "w").unwrap();
        let sixteenth = 32768 / 16 * 8;
        assert_eq!(e[0], first);
        assert_eq!(e[1], sixteenth);
        assert_eq!(e[2], 2 * sixteenth);
        let err = place(Placement::Directory, &[1 << 23], cap, "workload").unwrap_err().to_string();
        assert!(err.starts_with("workload"), "{err}");
    }

    #[test]
    fn every_preset_builds() {
        for (name, _, spec) in presets() {
            let w = build(&spec, 1 << 22).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!w.processes.is_empty());
        }
    }

    #[test]
    fn every_preset_survives_json() {
        // The Python layer gets presets as JSON and puts them in specs.
        for (name, _, spec) in presets() {
            let text = serde_json::to_string(&spec).unwrap();
            let back: WorkloadSpec = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(serde_json::to_string(&back).unwrap(), text, "{name}");
        }
    }
}

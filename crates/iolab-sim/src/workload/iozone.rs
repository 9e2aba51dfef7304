//! IOzone in throughput mode, as the WPCAS paper ran it (section 4.4):
//! `iozone -i 0 -i 1 -r 4096 -t 40 -s 100 -I` (sequential) and
//! `iozone -i 2 -r 4096 -t 40 -I` (random). Each of the `-t` processes
//! works on its own file.
//!
//! Test order within a process, as IOzone runs them: `-i 0` = write then
//! re-write, `-i 1` = read then re-read, `-i 2` = random read then random
//! write (one operation per record of the file in each test). In
//! throughput mode IOzone starts every test for all its children at once
//! and waits for all of them before the next test: the processes meet at a
//! barrier at the end of each test. Each test's throughput is reported as
//! IOzone reports it ("Children see" and "Parent sees", `metrics::
//! phase_results`). The paper says the files are 512 KB while its command
//! line says `-s 100` and `-r 4096`; both record and file size are
//! parameters here.
//!
//! `-I` (`direct`, the paper's setting) is `O_DIRECT`: every record is a
//! request, and the process waits for it; a write is `WRITE_SYNC` (2.6.20's
//! fs/direct-io.c turns every O_DIRECT write into one), a read is sync to
//! the schedulers as every read is. Without `-I` the records go through the
//! page cache (read-ahead, dirty pages written back by pdflush).
//!
//! Files are placed by `placement`: `spread` over the disk, `packed` back
//! to back, or through the file-system layout as files of one directory
//! (`directory`, or `ext3` with ext3's per-process block goals), which is
//! where IOzone's `-t` files of one working directory would be. `cpu` adds
//! CPU time per operation (IOzone's own is next to none).

use super::pattern::Pattern;
use super::process::{Barrier, OpKind, PatternProcess, Phase};
use super::think::{ThinkSpec, ThinkTime};
use super::{kib_to_sectors, place, BuiltWorkload, Placement, ProcessEntry};
use crate::error::{Error, Result};
use crate::time::SimTime;
use serde::{Deserialize, Serialize};

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IozoneMode {
    /// `-i 0 -i 1`: write, re-write, read, re-read.
    #[default]
    Sequential,
    /// `-i 2`: random read, then random write.
    Random,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IozoneSpec {
    /// `-t`: processes, each its own class.
    pub processes: u32,
    pub mode: IozoneMode,
    /// `-r`, in KiB.
    pub record_kb: f64,
    /// `-s`, in KiB.
    pub file_kb: f64,
    /// `-I`: O_DIRECT. Without it, buffered through the page cache.
    pub direct: bool,
    /// Time between two operations of a process (IOzone itself has none).
    pub think: ThinkSpec,
    /// CPU time per operation, added to `think`.
    pub cpu: ThinkSpec,
    pub placement: Placement,
}

impl Default for IozoneSpec {
    fn default() -> Self {
        IozoneSpec {
            processes: 10,
            mode: IozoneMode::Sequential,
            record_kb: 4.0,
            file_kb: 512.0,
            direct: true,
            think: ThinkSpec::default(),
            cpu: ThinkSpec::default(),
            placement: Placement::Spread,
        }
    }
}

/// The first sector of each process's file on a disk of `capacity` sectors:
/// what `build` places, for anyone who must put the same files on a real
/// device (`iolab paper wpcas --kernel` writes them into fio jobs).
pub fn file_starts(spec: &IozoneSpec, capacity: u64) -> Result<Vec<u64>> {
    if spec.processes == 0 {
        return Err(Error::invalid("workload.processes", "must be at least 1"));
    }
    let file = kib_to_sectors("workload.file_kb", spec.file_kb)?;
    if spec.placement == Placement::Shared {
        // IOzone's -t processes each write and read a file of their own.
        return Err(Error::invalid("workload.placement", "\"shared\" is for process groups: IOzone's processes each have their own file"));
    }
    place(spec.placement, &vec![file; spec.processes as usize], capacity, "workload")
}

pub fn build(spec: &IozoneSpec, capacity: u64) -> Result<BuiltWorkload> {
    if spec.processes == 0 {
        return Err(Error::invalid("workload.processes", "must be at least 1"));
    }
    let record = kib_to_sectors("workload.record_kb", spec.record_kb)?;
    let file = kib_to_sectors("workload.file_kb", spec.file_kb)?;
    if record > file {
        return Err(Error::invalid("workload.record_kb", "must not exceed file_kb"));
    }
    if record > u32::MAX as u64 {
        return Err(Error::invalid("workload.record_kb", "is too large"));
    }
    let think = ThinkTime::from_spec(&spec.think, "workload.think")?;
    let cpu = ThinkTime::from_spec(&spec.cpu, "workload.cpu")?;
    let ops = file / record;
    let phase = |name, pattern, op| Phase {
        name,
        pattern,
        op,
        direct: spec.direct,
        // O_DIRECT: the process waits for every record; writes are WRITE_SYNC.
        sync: true,
        rq_sync: true,
        fsync: false,
        max_outstanding: 1,
        record_sectors: record as u32,
        stride_records: 1,
        ops: Some(ops),
        think: think.clone(),
        cpu: cpu.clone(),
    };
    let phases = match spec.mode {
        IozoneMode::Sequential => vec![
            phase("initial write", Pattern::Sequential, OpKind::Write),
            phase("rewrite", Pattern::Sequential, OpKind::Write),
            phase("read", Pattern::Sequential, OpKind::Read),
            phase("re-read", Pattern::Sequential, OpKind::Read),
        ],
        IozoneMode::Random => vec![
            phase("random read", Pattern::Random, OpKind::Read),
            phase("random write", Pattern::Random, OpKind::Write),
        ],
    };
    let starts = file_starts(spec, capacity)?;
    let n = starts.len();
    let classes = (0..n).map(|i| format!("iozone.{i}")).collect();
    let processes = starts
        .iter()
        .enumerate()
        .map(|(i, &start)| ProcessEntry {
            name: format!("iozone.{i}"),
            start: SimTime::ZERO,
            process: Box::new(
                PatternProcess::new(i as u32, start, file, SimTime::NEVER, phases.clone())
                    .with_barrier(Barrier { group: 0, parties: n as u32 }),
            ),
        })
        .collect();
    Ok(BuiltWorkload { classes, processes, page_cache: !spec.direct })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_starts_are_the_placement_build_uses() {
        let spec = IozoneSpec { processes: 3, placement: Placement::Packed, ..IozoneSpec::default() };
        // 512 KiB files back to back
        assert_eq!(file_starts(&spec, 1 << 24).unwrap(), [0, 1024, 2048]);
        let spread = IozoneSpec { placement: Placement::Spread, ..spec.clone() };
        assert_eq!(file_starts(&spread, 3000 * 8).unwrap(), [0, 8000, 16000]);
        assert!(file_starts(&IozoneSpec { processes: 0, ..spec }, 1 << 24).is_err());
    }

    #[test]
    fn shared_placement_is_refused_for_iozone() {
        let spec = IozoneSpec { placement: Placement::Shared, ..IozoneSpec::default() };
        let e = build(&spec, 1 << 24).err().expect("IOzone's files are each process's own").to_string();
        assert!(e.contains("workload.placement") && e.contains("process groups"), "{e}");
    }
}

//! IOzone in throughput mode, as the WPCAS paper ran it (section 4.4):
//! `iozone -i 0 -i 1 -r 4096 -t 40 -s 100 -I` (sequential) and
//! `iozone -i 2 -r 4096 -t 40 -I` (random). Each of the `-t` processes
//! works on its own file; `-I` is direct I/O, so every request reaches the
//! disk and the process waits for it (writes are synchronous too).
//!
//! Test order within a process, as IOzone runs them: `-i 0` = write then
//! re-write, `-i 1` = read then re-read, `-i 2` = random read then random
//! write (one operation per record of the file in each test). The paper
//! says the files are 512 KB while its command line says `-s 100` and
//! `-r 4096`; both record and file size are parameters here.

use super::pattern::Pattern;
use super::process::{OpKind, PatternProcess, Phase};
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
    /// `-I` (direct I/O): synchronous writes. Without it, writes are
    /// write-back: issued asynchronously, `max_outstanding` at a time.
    pub direct: bool,
    pub max_outstanding: u32,
    /// Time between two operations of a process (IOzone itself has none).
    pub think: ThinkSpec,
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
            max_outstanding: 16,
            think: ThinkSpec::default(),
            placement: Placement::Spread,
        }
    }
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
    let ops = file / record;
    let phase = |pattern, op, sync| Phase {
        pattern,
        op,
        sync,
        max_outstanding: spec.max_outstanding.max(1),
        record_sectors: record as u32,
        stride_records: 1,
        ops: Some(ops),
        think: think.clone(),
    };
    let write_sync = spec.direct;
    let phases = match spec.mode {
        IozoneMode::Sequential => vec![
            phase(Pattern::Sequential, OpKind::Write, write_sync),
            phase(Pattern::Sequential, OpKind::Write, write_sync),
            phase(Pattern::Sequential, OpKind::Read, true),
            phase(Pattern::Sequential, OpKind::Read, true),
        ],
        IozoneMode::Random => vec![
            phase(Pattern::Random, OpKind::Read, true),
            phase(Pattern::Random, OpKind::Write, write_sync),
        ],
    };
    let n = spec.processes as usize;
    let starts = place(spec.placement, &vec![file; n], capacity, "workload")?;
    let classes = (0..n).map(|i| format!("iozone.{i}")).collect();
    let processes = starts
        .iter()
        .enumerate()
        .map(|(i, &start)| ProcessEntry {
            name: format!("iozone.{i}"),
            start: SimTime::ZERO,
            process: Box::new(PatternProcess::new(i as u32, start, file, SimTime::NEVER, phases.clone())),
        })
        .collect();
    Ok(BuiltWorkload { classes, processes, page_cache: false })
}

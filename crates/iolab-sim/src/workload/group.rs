//! Workloads written field by field: groups of identical processes.
//!
//! ```toml
//! [workload]
//! kind = "processes"
//! placement = "spread"
//!
//! [[workload.group]]
//! name = "readers"            # the class of these processes
//! count = 4
//! pattern = "sequential"      # sequential | random | strided | backward
//! op = "read"                 # read | write | mix (read_fraction)
//! direct = true               # false: buffered, through the page cache
//! sync = true                 # direct only; false: max_outstanding in flight
//! rq_sync = true              # direct: REQ_SYNC even with sync = false (libaio)
//! fsync = false               # direct sync writes: each followed by a flush
//! request_kb = 16
//! file_mb = 64
//! think = { dist = "constant", ms = 1 }
//! cpu = { dist = "constant", ms = 0.05 }   # CPU per operation
//! ioprio = "be/4"             # rt/N, be/N or idle, as ionice sets it
//! start_interval_ms = 0       # process i starts at start_ms + i * this
//! ```

use super::pattern::Pattern;
use super::process::{OpKind, PatternProcess, Phase};
use super::think::{ThinkSpec, ThinkTime};
use super::{kib_to_sectors, place, BuiltWorkload, Placement, ProcessEntry};
use crate::error::{Error, Result};
use crate::limits;
use crate::request::IoPrio;
use crate::time::{ms_to_ns, SimTime};
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessesSpec {
    #[serde(default)]
    pub placement: Placement,
    pub group: Vec<GroupSpec>,
}

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OpSpec {
    #[default]
    Read,
    Write,
    Mix,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GroupSpec {
    /// Class name (defaults to `group<i>`).
    pub name: Option<String>,
    pub count: u32,
    pub pattern: Pattern,
    pub op: OpSpec,
    /// For `op = "mix"`: the probability that an operation is a read.
    pub read_fraction: f64,
    /// Direct I/O (`O_DIRECT`, each operation a request) or buffered
    /// through the page cache (read-ahead, write-back).
    pub direct: bool,
    /// Direct I/O: each request waited for (true) or up to
    /// `max_outstanding` in flight. A direct write with `sync` is
    /// `WRITE_SYNC`, as 2.6.20's O_DIRECT writes are; a read is sync to
    /// the schedulers either way.
    pub sync: bool,
    /// Requests in flight at most for `sync = false`.
    pub max_outstanding: u32,
    /// Direct I/O: the requests' `REQ_SYNC` flag, if not `sync`. An
    /// O_DIRECT write is `REQ_SYNC` in 2.6.20 and 6.1 alike, waited for or
    /// not (`dio_bio_write_op`): `rq_sync = true` with `sync = false` is a
    /// libaio writer; `sync = false` alone is an asynchronous writer whose
    /// requests the schedulers treat as write-back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rq_sync: Option<bool>,
    /// Direct writes: each is followed by a cache flush the process waits
    /// for (`fsync(2)` after a write: the data as a sync write, then
    /// `blkdev_issue_flush`). Needs `sync = true`.
    #[serde(skip_serializing_if = "is_false")]
    pub fsync: bool,
    pub request_kb: f64,
    pub file_mb: f64,
    /// For `pattern = "strided"`: the stride in records.
    pub stride: u64,
    pub think: ThinkSpec,
    /// CPU time per operation, spent before the think time (on a CPU of
    /// the run's `[host] cpus` when it has fewer than its processes).
    pub cpu: ThinkSpec,
    pub start_ms: f64,
    /// Process i of the group starts at `start_ms + i * start_interval_ms`.
    #[serde(skip_serializing_if = "is_zero")]
    pub start_interval_ms: f64,
    /// The process stops issuing at this time (default: never).
    pub stop_ms: Option<f64>,
    /// Passes over the file; 0 = keep going until `stop_ms` or the run ends.
    pub passes: u32,
    /// I/O priority of the group's processes (`ionice`): `rt/N`, `be/N`
    /// or `idle`; best effort 4 when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ioprio: Option<IoPrio>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

impl Default for GroupSpec {
    fn default() -> Self {
        GroupSpec {
            name: None,
            count: 1,
            pattern: Pattern::Sequential,
            op: OpSpec::Read,
            read_fraction: 0.5,
            direct: true,
            sync: true,
            max_outstanding: 8,
            rq_sync: None,
            fsync: false,
            request_kb: 4.0,
            file_mb: 64.0,
            stride: 2,
            think: ThinkSpec::default(),
            cpu: ThinkSpec::default(),
            start_ms: 0.0,
            start_interval_ms: 0.0,
            stop_ms: None,
            passes: 0,
            ioprio: None,
        }
    }
}

impl ProcessesSpec {
    /// Iyer & Druschel's deceptive-idleness scenario: processes that each
    /// read their own file sequentially and synchronously with a short
    /// think time, files far apart on the disk.
    pub fn deceptive_idleness() -> ProcessesSpec {
        ProcessesSpec {
            placement: Placement::Spread,
            group: vec![GroupSpec {
                name: Some("seqreader".into()),
                count: 4,
                request_kb: 16.0,
                file_mb: 64.0,
                think: ThinkSpec::Constant { ms: 1.0 },
                ..GroupSpec::default()
            }],
        }
    }
}

fn phase_for(g: &GroupSpec, field: &str) -> Result<Phase> {
    let record = kib_to_sectors(&format!("{field}.request_kb"), g.request_kb)?;
    let file = kib_to_sectors(&format!("{field}.file_mb"), g.file_mb * 1024.0)?;
    if record > file || record > u32::MAX as u64 {
        return Err(Error::invalid(format!("{field}.request_kb"), "must not exceed the file size"));
    }
    let op = match g.op {
        OpSpec::Read => OpKind::Read,
        OpSpec::Write => OpKind::Write,
        OpSpec::Mix => {
            if !(0.0..=1.0).contains(&g.read_fraction) {
                return Err(Error::invalid(format!("{field}.read_fraction"), "must be within [0, 1]"));
            }
            OpKind::Mix { read_fraction: g.read_fraction }
        }
    };
    if g.direct && !g.sync && g.max_outstanding == 0 {
        return Err(Error::invalid(format!("{field}.max_outstanding"), "must be at least 1"));
    }
    if g.fsync && !(g.direct && g.sync && g.op != OpSpec::Read) {
        return Err(Error::invalid(
            format!("{field}.fsync"),
            "needs direct = true, sync = true and writes (op = \"write\" or \"mix\")",
        ));
    }
    if g.stride == 0 {
        return Err(Error::invalid(format!("{field}.stride"), "must be at least 1 record"));
    }
    if g.pattern == Pattern::Strided && g.stride > file / record {
        return Err(Error::invalid(
            format!("{field}.stride"),
            format!("{} records is longer than the file ({} records of {} KiB)", g.stride, file / record, g.request_kb),
        ));
    }
    Ok(Phase {
        name: "run",
        pattern: g.pattern,
        op,
        direct: g.direct,
        sync: g.sync,
        rq_sync: g.rq_sync.unwrap_or(g.sync),
        fsync: g.fsync,
        max_outstanding: g.max_outstanding,
        record_sectors: record as u32,
        stride_records: g.stride,
        ops: (g.passes > 0).then(|| (file / record) * g.passes as u64),
        think: ThinkTime::from_spec(&g.think, &format!("{field}.think"))?,
        cpu: ThinkTime::from_spec(&g.cpu, &format!("{field}.cpu"))?,
    })
}

fn time_field(field: String, ms: f64) -> Result<SimTime> {
    limits::check_ms(&field, ms, false)?;
    Ok(SimTime(ms_to_ns(ms)))
}

pub fn build(spec: &ProcessesSpec, capacity: u64) -> Result<BuiltWorkload> {
    if spec.group.is_empty() {
        return Err(Error::invalid("workload.group", "needs at least one [[workload.group]]"));
    }
    let mut classes = Vec::new();
    let mut pending = Vec::new(); // (class, name, start, stop, file sectors, phase, ioprio)
    for (gi, g) in spec.group.iter().enumerate() {
        let field = format!("workload.group[{gi}]");
        if g.count == 0 {
            return Err(Error::invalid(format!("{field}.count"), "must be at least 1"));
        }
        let phase = phase_for(g, &field)?;
        let file = kib_to_sectors(&format!("{field}.file_mb"), g.file_mb * 1024.0)?;
        let start = time_field(format!("{field}.start_ms"), g.start_ms)?;
        limits::check_ms(&format!("{field}.start_interval_ms"), g.start_interval_ms, false)?;
        let interval = ms_to_ns(g.start_interval_ms);
        let stop = match g.stop_ms {
            Some(ms) => time_field(format!("{field}.stop_ms"), ms)?,
            None => SimTime::NEVER,
        };
        if stop <= start {
            return Err(Error::invalid(
                format!("{field}.stop_ms"),
                format!("{} ms is not after start_ms ({} ms): the group would issue nothing", stop.as_ms_f64(), start.as_ms_f64()),
            ));
        }
        let class_name = g.name.clone().unwrap_or_else(|| format!("group{gi}"));
        let class = classes.len() as u32;
        classes.push(class_name.clone());
        for i in 0..g.count {
            let prio = g.ioprio.unwrap_or_default();
            let at = SimTime(start.ns().saturating_add(interval.saturating_mul(i as u64)));
            pending.push((class, format!("{class_name}.{i}"), at, stop, file, phase.clone(), prio));
        }
    }
    let page_cache = spec.group.iter().any(|g| !g.direct);
    if spec.placement == Placement::Shared && page_cache {
        // The page cache keys pages by file: processes that share sectors
        // under different files would each cache their own copy.
        return Err(Error::invalid("workload.placement", "\"shared\" needs direct = true in every group"));
    }
    let sizes: Vec<u64> = pending.iter().map(|p| p.4).collect();
    let starts = place(spec.placement, &sizes, capacity, "workload")?;
    let processes = pending
        .into_iter()
        .zip(starts)
        .map(|((class, name, start, stop, file, phase, ioprio), region)| {
            let mut p = PatternProcess::new(class, region, file, stop, vec![phase]);
            p.ioprio = ioprio;
            ProcessEntry { name, start, process: Box::new(p) }
        })
        .collect();
    Ok(BuiltWorkload { classes, processes, page_cache })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shared(direct: bool, file_mb: f64) -> ProcessesSpec {
        ProcessesSpec {
            placement: Placement::Shared,
            group: vec![GroupSpec { count: 3, pattern: Pattern::Random, direct, file_mb, ..GroupSpec::default() }],
        }
    }

    /// `start_interval_ms` staggers a group's starts; `rq_sync` sets the
    /// requests' sync flag apart from waiting; `fsync` needs sync writes.
    #[test]
    fn starts_are_staggered_and_the_sync_flag_can_be_set_apart() {
        let spec = ProcessesSpec {
            placement: Placement::Shared,
            group: vec![GroupSpec {
                count: 4,
                start_ms: 10.0,
                start_interval_ms: 250.0,
                op: OpSpec::Write,
                sync: false,
                rq_sync: Some(true),
                ..GroupSpec::default()
            }],
        };
        let mut built = build(&spec, 1 << 20).unwrap();
        let starts: Vec<_> = built.processes.iter().map(|p| p.start).collect();
        assert_eq!(starts, [10, 260, 510, 760].map(|ms| SimTime(ms * 1_000_000)));
        let mut rng = crate::rng::SimRng::new(1);
        match built.processes[0].process.next(SimTime::ZERO, &mut rng) {
            crate::workload::Step::Issue(op) => assert!(op.sync, "REQ_SYNC though not waited for"),
            other => panic!("{other:?}"),
        }
        let bad = ProcessesSpec {
            placement: Placement::Spread,
            group: vec![GroupSpec { fsync: true, op: OpSpec::Read, ..GroupSpec::default() }],
        };
        let e = build(&bad, 1 << 20).err().unwrap().to_string();
        assert!(e.contains("fsync"), "{e}");
    }

    #[test]
    fn shared_placement_builds_one_file_for_every_process_and_refuses_the_page_cache() {
        // 64 MiB = 131,072 sectors: fits a 131,072-sector disk three times over
        // only because the processes share it.
        let built = build(&shared(true, 64.0), 131_072).expect("three processes share one file");
        assert_eq!(built.processes.len(), 3);
        let e = build(&shared(true, 65.0), 131_072).err().expect("larger than the disk").to_string();
        assert!(e.contains("shared file") && e.contains("does not fit"), "{e}");
        let e = build(&shared(false, 64.0), 131_072).err().expect("buffered I/O refused").to_string();
        assert!(e.contains("workload.placement") && e.contains("direct = true"), "{e}");
    }
}

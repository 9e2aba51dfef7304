//! Block traces: reading the formats people have (`reference/DISKS.md`)
//! into one record type, for replay by the `trace` workload.
//!
//! Brief overview: [`read_file`] (or [`parse`] for text in memory) turns a
//! trace in one of the [`TraceFormat`]s into a [`Trace`]: records sorted by
//! time, times from the first record, sectors of 512 bytes, and a stream
//! key per record (the pid where the format has one) so a replay can give
//! each stream its own process. Every malformed line is an error naming
//! `file:line` and what was expected; lines that are not requests (blkparse
//! headers and summaries, events other than the issue action, requests
//! without data) are skipped.

pub mod disksim_validation;
mod formats;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use crate::error::{Error, Result};
use crate::limits::MAX_SIM_NS;
use crate::request::Dir;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A trace format (the `format` field of a `trace` workload).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TraceFormat {
    /// blkparse's default text output:
    /// `maj,min cpu seq sec.nsec pid action RWBS sector + nblocks [process]`.
    /// Stream = pid. Issue events are the `Q` action (see [`ParseOptions`]).
    Blkparse,
    /// MSR Cambridge (SNIA IOTTA):
    /// `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`, time
    /// in Windows filetime (100 ns), offset and size in bytes.
    /// Stream = disk number.
    Msr,
    /// SPC (UMass Financial, WebSearch): `ASU,LBA,Size,Opcode,Timestamp`,
    /// LBA in 512-byte blocks, size in bytes, time in seconds. Stream = ASU.
    Spc,
    /// FIU (SNIA IOTTA 391):
    /// `ts_ns pid process lba size_512B W|R major minor md5`. Stream = pid.
    Fiu,
    /// DiskSim ASCII input: `time_ms devno blkno blocks flags`, flags bit 0
    /// set = read. Stream = device number.
    Disksim,
}

/// How lines are read, for formats that have a choice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseOptions {
    /// blkparse: the action that counts as the request's issue (`Q` when
    /// the process queued it, `D` when the driver got it).
    pub blkparse_action: String,
    /// Stop after this many requests of the file (then put them in time
    /// order): a trace of 10^7 lines was read whole to replay its first
    /// thousand requests (issue 27).
    pub max_records: Option<u64>,
}

impl Default for ParseOptions {
    fn default() -> Self {
        ParseOptions { blkparse_action: "Q".into(), max_records: None }
    }
}

/// One request of a trace.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TraceRecord {
    /// Since the first record of the trace.
    pub time_ns: u64,
    pub stream: u32,
    pub sector: u64,
    pub nr_sectors: u32,
    pub dir: Dir,
    /// Reads, and writes the trace marks synchronous (blkparse `S`).
    pub sync: bool,
    /// Line in the file, for messages.
    pub line: u32,
}

/// A parsed trace.
#[derive(Clone, Debug)]
pub struct Trace {
    /// The file name, for messages.
    pub name: String,
    pub records: Vec<TraceRecord>,
}

/// Where a long read reports its progress and hears a stop: the bytes read
/// so far (a progress bar polls them from another thread) and Ctrl-C's flag.
#[derive(Clone, Copy)]
pub struct ReadControl<'a> {
    pub bytes: &'a AtomicU64,
    pub cancel: &'a AtomicBool,
}

/// Read a trace file, line by line (memory holds the records, not the text).
pub fn read_file(path: &Path, format: TraceFormat, opts: &ParseOptions) -> Result<Trace> {
    let (bytes, cancel) = (AtomicU64::new(0), AtomicBool::new(false));
    read_file_with(path, format, opts, ReadControl { bytes: &bytes, cancel: &cancel })
}

/// [`read_file`], counting the bytes read into `ctl.bytes` and stopping with
/// [`Error::Interrupted`] when `ctl.cancel` is set.
pub fn read_file_with(path: &Path, format: TraceFormat, opts: &ParseOptions, ctl: ReadControl) -> Result<Trace> {
    use std::io::BufRead;
    let io = |source| Error::Io { path: path.to_path_buf(), source };
    let file = std::fs::File::open(path).map_err(io)?;
    // A FIFO would block and /dev/zero would never end: only regular files.
    if !file.metadata().map_err(io)?.is_file() {
        return Err(Error::Spec { file: path.display().to_string(), message: "is not a regular file".into() });
    }
    let name = path.display().to_string();
    let mut lines = std::io::BufReader::new(file).lines().enumerate().map(|(i, l)| {
        if i % 4096 == 0 && ctl.cancel.load(Ordering::Relaxed) {
            return Err(Error::Interrupted);
        }
        if let Ok(text) = &l {
            ctl.bytes.fetch_add(text.len() as u64 + 1, Ordering::Relaxed);
        }
        l.map_err(|e| match e.kind() {
            std::io::ErrorKind::InvalidData => {
                Error::Line { file: name.clone(), line: i + 1, message: "not UTF-8 text".into() }
            }
            _ => io(e),
        })
    });
    parse_lines(&mut lines, &name, format, opts)
}

/// Parse trace text; `name` names it in errors.
pub fn parse(text: &str, name: &str, format: TraceFormat, opts: &ParseOptions) -> Result<Trace> {
    parse_lines(&mut text.lines().map(|l| Ok(l.to_string())), name, format, opts)
}

fn parse_lines(
    lines: &mut dyn Iterator<Item = Result<String>>,
    name: &str,
    format: TraceFormat,
    opts: &ParseOptions,
) -> Result<Trace> {
    let mut records = Vec::new();
    let max = opts.max_records.unwrap_or(u64::MAX);
    for (i, raw) in lines.enumerate() {
        let raw = raw?;
        let line = Line { file: name, number: i + 1 };
        let t = raw.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let rec = match format {
            TraceFormat::Blkparse => formats::blkparse(t, &line, &opts.blkparse_action)?,
            TraceFormat::Msr => formats::msr(t, &line)?,
            TraceFormat::Spc => formats::spc(t, &line)?,
            TraceFormat::Fiu => formats::fiu(t, &line)?,
            TraceFormat::Disksim => formats::disksim(t, &line)?,
        };
        records.extend(rec);
        if records.len() as u64 >= max {
            // Not one line more: the rest of the file is never read.
            break;
        }
    }
    if records.is_empty() {
        return Err(Error::Spec { file: name.to_string(), message: format!("no requests in this {format:?} trace") });
    }
    // Stable: records with equal times keep the file's order.
    records.sort_by_key(|r| r.time_ns);
    let t0 = records[0].time_ns;
    records.iter_mut().for_each(|r| r.time_ns -= t0);
    let last = records[records.len() - 1];
    if last.time_ns > MAX_SIM_NS {
        return Err(Error::Line {
            file: name.to_string(),
            line: last.line as usize,
            message: format!(
                "{} s after the first request, beyond the simulated-time horizon of {:e} s",
                last.time_ns / 1_000_000_000,
                MAX_SIM_NS as f64 / 1e9
            ),
        });
    }
    Ok(Trace { name: name.to_string(), records })
}

/// Where a line is, for errors.
pub(crate) struct Line<'a> {
    pub file: &'a str,
    pub number: usize,
}

impl Line<'_> {
    pub fn error(&self, message: impl Into<String>) -> Error {
        Error::Line { file: self.file.to_string(), line: self.number, message: message.into() }
    }

    /// Parse one field, naming it in the error.
    pub fn field<T: std::str::FromStr>(&self, what: &str, s: &str) -> Result<T> {
        s.trim().parse().map_err(|_| self.error(format!("{what}: expected a number, got '{s}'")))
    }

    pub fn number_u32(&self) -> u32 {
        self.number.min(u32::MAX as usize) as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_stops_at_max_records_counts_its_bytes_and_hears_a_cancel() {
        // Three requests, then a line no reader accepts: with max_records =
        // 3 the file is read no further (issue 27: the whole trace was read
        // to replay its first thousand requests).
        let dir = std::env::temp_dir().join(format!("iolab-trace-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.ascii");
        std::fs::write(&path, "2.0 0 300 8 1\n1.0 0 200 8 1\n0.5 0 100 8 1\nnot a record\n").unwrap();
        let opts = |max| ParseOptions { max_records: max, ..ParseOptions::default() };
        let (bytes, cancel) = (AtomicU64::new(0), AtomicBool::new(false));
        let ctl = ReadControl { bytes: &bytes, cancel: &cancel };
        let t = read_file_with(&path, TraceFormat::Disksim, &opts(Some(3)), ctl).unwrap();
        let sectors: Vec<u64> = t.records.iter().map(|r| r.sector).collect();
        assert_eq!(sectors, [100, 200, 300], "the first three of the file, in time order");
        assert_eq!(bytes.load(Ordering::Relaxed), 3 * 14, "three lines read, not the fourth");
        let e = read_file(&path, TraceFormat::Disksim, &opts(None)).unwrap_err().to_string();
        assert!(e.contains(":4:"), "{e}");
        cancel.store(true, Ordering::Relaxed);
        let e = read_file_with(&path, TraceFormat::Disksim, &opts(None), ctl).unwrap_err();
        assert!(matches!(e, Error::Interrupted), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn records_are_sorted_and_start_at_zero() {
        let text = "# t devno blkno blocks flags\n10.5 0 100 8 1\n10.0 0 50 8 0\n";
        let t = parse(text, "x.ascii", TraceFormat::Disksim, &ParseOptions::default()).unwrap();
        assert_eq!(t.records.len(), 2);
        assert_eq!((t.records[0].time_ns, t.records[0].sector, t.records[0].dir), (0, 50, Dir::Write));
        assert_eq!((t.records[1].time_ns, t.records[1].line), (500_000, 2));
        let err = parse("# nothing\n", "e.ascii", TraceFormat::Disksim, &ParseOptions::default()).unwrap_err();
        assert!(err.to_string().starts_with("e.ascii: no requests"), "{err}");
    }

    #[test]
    fn sample_traces_parse() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/traces");
        for (file, format) in [
            ("sample.blkparse.txt", TraceFormat::Blkparse),
            ("sample.msr.csv", TraceFormat::Msr),
            ("sample.spc.csv", TraceFormat::Spc),
            ("sample.fiu.txt", TraceFormat::Fiu),
            ("sample.disksim.ascii", TraceFormat::Disksim),
        ] {
            let t = read_file(&dir.join(file), format, &ParseOptions::default()).unwrap_or_else(|e| panic!("{e}"));
            assert!(t.records.len() >= 20, "{file}: {} records", t.records.len());
            assert!(t.records.iter().any(|r| r.dir == Dir::Read) && t.records.iter().any(|r| r.dir == Dir::Write));
        }
    }
}

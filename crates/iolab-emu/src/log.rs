//! The request log: one CSV line per request, in the order the disk took
//! them, so a run can be compared request by request with a simulation.
//!
//! Format (docs/emu.md gives it in full): a first line
//! `# iolab-emu-log 1 {JSON}` with the disk spec, the timing mode and the
//! clock's origin, then a CSV header and the rows. Times are integer ns on
//! the model clock (0 = the emulator's start). `pandas.read_csv(path,
//! comment="#")` reads the rows; `iolab.emu.read_log` reads both parts.

use crate::model::{cache_name, Op};
use iolab_sim::disk::{DiskSpec, Service};
use serde::Serialize;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// The log format's version, in its first line.
pub const FORMAT_VERSION: u32 = 1;
/// The first word of the first line.
pub const MAGIC: &str = "iolab-emu-log";

/// The CSV columns, in order.
pub const COLUMNS: [&str; 20] = [
    "seq",
    "conn",
    "op",
    "flags",
    "offset",
    "length",
    "sector",
    "nr_sectors",
    "arrival_ns",
    "start_ns",
    "complete_ns",
    "reply_ns",
    "service_ns",
    "seek_ns",
    "rotation_ns",
    "transfer_ns",
    "overhead_ns",
    "seek_cylinders",
    "cache",
    "error",
];

/// What the log's first line records about the run.
#[derive(Clone, Debug, Serialize)]
pub struct Header {
    pub version: u32,
    pub iolab_version: &'static str,
    /// The disk model, as `[disk]` in an experiment spec; a DiskSim file's
    /// path is absolute.
    pub disk: DiskSpec,
    pub describe: String,
    pub zero_latency: bool,
    pub capacity_bytes: u64,
    pub image: String,
    /// `CLOCK_REALTIME` (ns since the Unix epoch) at model time 0.
    pub origin_unix_ns: u64,
    pub clock: &'static str,
    /// Whether the drive ran at real-time priority.
    pub realtime: bool,
}

/// One served request. An `error` request was answered with that NBD
/// error without reaching the model (its service is 0, `start_ns` is when
/// the disk took it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub seq: u64,
    pub conn: u64,
    /// The operation, or `cmdN` for a command type the server does not know.
    pub op: String,
    pub fua: bool,
    pub no_hole: bool,
    pub offset: u64,
    pub length: u64,
    pub arrival_ns: u64,
    pub start_ns: u64,
    /// `start_ns + service.total_ns`: when the model completes it.
    pub complete_ns: u64,
    /// When the reply had been written to the client.
    pub reply_ns: u64,
    pub service: Service,
    /// Whether the model charged it (reads, writes, write zeroes, flush,
    /// trim that were not refused); decides whether `cache` is printed.
    pub charged: bool,
    pub error: Option<&'static str>,
}

impl Record {
    pub fn op_name(op: Option<Op>, code: u16) -> String {
        op.map_or_else(|| format!("cmd{code}"), |o| o.name().to_string())
    }
}

/// Writes the log. Lines are buffered; [`RequestLog::flush`] pushes them
/// to the file (the server does so when it has nothing to serve and at
/// stop).
pub struct RequestLog {
    out: BufWriter<File>,
}

impl RequestLog {
    /// Creates (or truncates) `path` and writes the first line and header.
    pub fn create(path: &Path, header: &Header) -> io::Result<RequestLog> {
        let mut out = BufWriter::with_capacity(1 << 16, File::create(path)?);
        let meta = serde_json::to_string(header).expect("headers always serialize");
        writeln!(out, "# {MAGIC} {FORMAT_VERSION} {meta}")?;
        writeln!(out, "{}", COLUMNS.join(","))?;
        out.flush()?;
        Ok(RequestLog { out })
    }

    pub fn write(&mut self, r: &Record) -> io::Result<()> {
        let (sector, nr) = crate::model::sectors(r.offset, r.length);
        let flags = match (r.fua, r.no_hole) {
            (false, false) => "",
            (true, false) => "fua",
            (false, true) => "no_hole",
            (true, true) => "fua|no_hole",
        };
        let s = &r.service;
        let cache = if r.charged && s.total_ns > 0 {
            cache_name(s.cache)
        } else {
            ""
        };
        writeln!(
            self.out,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.seq,
            r.conn,
            r.op,
            flags,
            r.offset,
            r.length,
            sector,
            nr,
            r.arrival_ns,
            r.start_ns,
            r.complete_ns,
            r.reply_ns,
            s.total_ns,
            s.seek_ns,
            s.rotation_ns,
            s.transfer_ns,
            s.overhead_ns,
            s.seek_cylinders,
            cache,
            r.error.unwrap_or(""),
        )
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_rows() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log.csv");
        let header = Header {
            version: FORMAT_VERSION,
            iolab_version: "0",
            disk: DiskSpec::default(),
            describe: "d".into(),
            zero_latency: false,
            capacity_bytes: 1024,
            image: "i".into(),
            origin_unix_ns: 5,
            clock: "CLOCK_MONOTONIC",
            realtime: false,
        };
        let mut log = RequestLog::create(&p, &header).unwrap();
        let rec = Record {
            seq: 0,
            conn: 1,
            op: "read".into(),
            fua: true,
            no_hole: false,
            offset: 1000,
            length: 100,
            arrival_ns: 10,
            start_ns: 11,
            complete_ns: 20,
            reply_ns: 21,
            service: Service {
                total_ns: 9,
                seek_ns: 4,
                ..Service::default()
            },
            charged: true,
            error: None,
        };
        log.write(&rec).unwrap();
        log.write(&Record {
            op: Record::op_name(None, 9),
            error: Some("EINVAL"),
            charged: false,
            ..rec.clone()
        })
        .unwrap();
        log.flush().unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("# iolab-emu-log 1 {"));
        assert_eq!(lines[1].split(',').count(), COLUMNS.len());
        assert_eq!(
            lines[2],
            "0,1,read,fua,1000,100,1,2,10,11,20,21,9,4,0,0,0,0,miss,"
        );
        assert_eq!(
            lines[3],
            "0,1,cmd9,fua,1000,100,1,2,10,11,20,21,9,4,0,0,0,0,,EINVAL"
        );
    }
}

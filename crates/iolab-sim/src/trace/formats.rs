//! One line parser per trace format. Each returns `Ok(None)` for a line
//! that is not a request (headers, other events, requests without data)
//! and an error naming the line for a request line it cannot read. Field
//! layouts are those of `reference/DISKS.md`.

use super::{Line, TraceRecord};
use crate::error::Result;
use crate::request::{Dir, SECTOR_BYTES};

fn record(
    line: &Line,
    time_ns: u64,
    stream: u32,
    sector: u64,
    nr_sectors: u64,
    dir: Dir,
    sync: bool,
) -> Result<Option<TraceRecord>> {
    if nr_sectors == 0 {
        return Ok(None);
    }
    if nr_sectors > u32::MAX as u64 {
        return Err(line.error(format!("request of {nr_sectors} sectors is too large")));
    }
    // The last sector must exist: sector + size past 2^64 would wrap to
    // the start of the disk and pass every later bound check.
    if sector.checked_add(nr_sectors).is_none() {
        return Err(line.error(format!(
            "sector {sector} + {nr_sectors} sectors runs past the last 64-bit sector number"
        )));
    }

    Ok(Some(TraceRecord { time_ns, stream, sector, nr_sectors: nr_sectors as u32, dir, sync, line: line.number_u32() }))
}

/// Seconds as a decimal string ("12.000345678") to ns, exactly.
fn decimal_seconds(line: &Line, what: &str, s: &str) -> Result<u64> {
    let (sec, frac) = s.split_once('.').unwrap_or((s, ""));
    let bad = || line.error(format!("{what}: expected seconds like 12.000345678, got '{s}'"));
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let sec: u64 = sec.parse().map_err(|_| bad())?;
    let ns: u64 = if frac.is_empty() { 0 } else { format!("{frac:0<9}").parse().map_err(|_| bad())? };
    sec.checked_mul(1_000_000_000).and_then(|x| x.checked_add(ns)).ok_or_else(bad)
}

/// Milliseconds or seconds as a float to ns.
fn float_time(line: &Line, what: &str, s: &str, ns_per_unit: f64) -> Result<u64> {
    let v: f64 = line.field(what, s)?;
    if !(v.is_finite() && v >= 0.0) {
        return Err(line.error(format!("{what}: expected a non-negative time, got '{s}'")));
    }
    let ns = (v * ns_per_unit).round();
    // Checked here, before the cast would saturate to 2^64 - 1.
    if ns >= u64::MAX as f64 {
        return Err(line.error(format!("{what}: '{s}' is too large for a time in 64-bit nanoseconds")));
    }
    Ok(ns as u64)
}

/// Byte offset and length to (first sector, sectors), rounded out.
fn byte_range(line: &Line, offset: u64, size: u64) -> Result<(u64, u64)> {
    let first = offset / SECTOR_BYTES;
    let end = offset
        .checked_add(size)
        .ok_or_else(|| line.error(format!("Offset {offset} + Size {size} bytes runs past 2^64 bytes")))?;
    Ok((first, end.div_ceil(SECTOR_BYTES) - first))
}

fn read_or_write(line: &Line, what: &str, s: &str) -> Result<Dir> {
    match s.trim() {
        "R" | "r" | "Read" | "read" | "READ" => Ok(Dir::Read),
        "W" | "w" | "Write" | "write" | "WRITE" => Ok(Dir::Write),
        other => Err(line.error(format!("{what}: expected R or W (Read or Write), got '{other}'"))),
    }
}

/// `maj,min cpu seq sec.nsec pid action RWBS sector + nblocks [process]`.
pub(super) fn blkparse(t: &str, line: &Line, action: &str) -> Result<Option<TraceRecord>> {
    let f: Vec<&str> = t.split_whitespace().collect();
    // Headers and summaries ("CPU0 (8,0):", "Total (8,0):", ...) do not
    // start with a device number.
    let is_dev = f
        .first()
        .and_then(|d| d.split_once(','))
        .is_some_and(|(a, b)| !a.is_empty() && !b.is_empty() && a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit()));
    if !is_dev || f.len() < 7 || f[5] != action {
        return Ok(None);
    }
    let rwbs = f[6];
    // No data (N), discards (D) and bare flushes move nothing.
    if rwbs.contains('N') || rwbs.contains('D') || !(rwbs.contains('R') || rwbs.contains('W')) {
        return Ok(None);
    }
    if f.len() < 10 || f[8] != "+" {
        return Err(line.error(format!("expected 'sector + nblocks' after the RWBS field '{rwbs}'")));
    }
    let time = decimal_seconds(line, "time", f[3])?;
    let pid: u32 = line.field("pid", f[4])?;
    let sector: u64 = line.field("sector", f[7])?;
    let blocks: u64 = line.field("nblocks", f[9])?;
    let dir = if rwbs.contains('R') { Dir::Read } else { Dir::Write };
    record(line, time, pid, sector, blocks, dir, dir == Dir::Read || rwbs.contains('S'))
}

/// `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`.
pub(super) fn msr(t: &str, line: &Line) -> Result<Option<TraceRecord>> {
    let f: Vec<&str> = t.split(',').collect();
    if f[0].trim().eq_ignore_ascii_case("timestamp") {
        return Ok(None); // a header
    }
    if f.len() < 6 {
        return Err(line.error(format!(
            "expected Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime; got {} fields",
            f.len()
        )));
    }
    let filetime: u64 = line.field("Timestamp", f[0])?;
    let disk: u32 = line.field("DiskNumber", f[2])?;
    let dir = read_or_write(line, "Type", f[3])?;
    let (sector, n) = byte_range(line, line.field("Offset", f[4])?, line.field("Size", f[5])?)?;
    let time = filetime
        .checked_mul(100)
        .ok_or_else(|| line.error(format!("Timestamp: {filetime} is too large for 64-bit nanoseconds")))?;
    record(line, time, disk, sector, n, dir, dir == Dir::Read)
}

/// `ASU,LBA,Size,Opcode,Timestamp[,...]`.
pub(super) fn spc(t: &str, line: &Line) -> Result<Option<TraceRecord>> {
    let f: Vec<&str> = t.split(',').collect();
    if f.len() < 5 {
        return Err(line.error(format!("expected ASU,LBA,Size,Opcode,Timestamp; got {} fields", f.len())));
    }
    let asu: u32 = line.field("ASU", f[0])?;
    let lba: u64 = line.field("LBA", f[1])?;
    let size: u64 = line.field("Size", f[2])?;
    let dir = read_or_write(line, "Opcode", f[3])?;
    let time = float_time(line, "Timestamp", f[4], 1e9)?;
    record(line, time, asu, lba, size.div_ceil(SECTOR_BYTES), dir, dir == Dir::Read)
}

/// `ts_ns pid process lba size_512B W|R major minor md5`.
pub(super) fn fiu(t: &str, line: &Line) -> Result<Option<TraceRecord>> {
    let f: Vec<&str> = t.split_whitespace().collect();
    if f.len() < 6 {
        return Err(
            line.error(format!("expected ts_ns pid process lba size op major minor md5; got {} fields", f.len()))
        );
    }
    let time: u64 = line.field("ts", f[0])?;
    let pid: u32 = line.field("pid", f[1])?;
    let lba: u64 = line.field("lba", f[3])?;
    let size: u64 = line.field("size", f[4])?;
    let dir = read_or_write(line, "op", f[5])?;
    record(line, time, pid, lba, size, dir, dir == Dir::Read)
}

/// `time_ms devno blkno blocks flags`.
pub(super) fn disksim(t: &str, line: &Line) -> Result<Option<TraceRecord>> {
    let f: Vec<&str> = t.split_whitespace().collect();
    if f.len() < 5 {
        return Err(line.error(format!("expected time_ms devno blkno blocks flags; got {} fields", f.len())));
    }
    let time = float_time(line, "time_ms", f[0], 1e6)?;
    let dev: u32 = line.field("devno", f[1])?;
    let blkno: u64 = line.field("blkno", f[2])?;
    let blocks: u64 = line.field("blocks", f[3])?;
    let flags: u32 = line.field("flags", f[4])?;
    let dir = if flags & 1 == 1 { Dir::Read } else { Dir::Write };
    record(line, time, dev, blkno, blocks, dir, dir == Dir::Read)
}

#[cfg(test)]
mod tests {
    use super::super::{parse, ParseOptions, TraceFormat};
    use super::*;

    fn one(text: &str, format: TraceFormat) -> Result<Vec<TraceRecord>> {
        parse(text, "t", format, &ParseOptions::default()).map(|t| t.records)
    }

    #[test]
    fn blkparse_reads_issue_events_only() {
        let text = "  8,0    1        1     0.000000000  4162  Q   R 223490 + 8 [cat]\n\
                    8,0    1        2     0.000001500  4162  D   R 223490 + 8 [cat]\n\
                    8,0    1        3     0.002000000  4162  C   R 223490 + 8 [0]\n\
                    8,0    0        4     0.010000001   99  Q  WS 500 + 16 [jbd2]\n\
                    8,0    0        5     0.011000000   99  Q  FN [jbd2]\n\
                    CPU0 (8,0):\n Reads Queued:           1,        4KiB\n";
        let r = one(text, TraceFormat::Blkparse).unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(
            (r[0].stream, r[0].sector, r[0].nr_sectors, r[0].dir, r[0].sync),
            (4162, 223490, 8, Dir::Read, true)
        );
        assert_eq!((r[1].time_ns, r[1].dir, r[1].sync, r[1].line), (10_000_001, Dir::Write, true, 4));
        let err = one("8,0 1 1 0.5 7 Q R 12 - 8 [x]\n", TraceFormat::Blkparse).unwrap_err().to_string();
        assert!(err.starts_with("t:1: expected 'sector + nblocks'"), "{err}");
        let err = one("8,0 1 1 0.5x 7 Q R 12 + 8 [x]\n", TraceFormat::Blkparse).unwrap_err().to_string();
        assert!(err.starts_with("t:1: time"), "{err}");
    }

    #[test]
    fn msr_spc_fiu_disksim_units() {
        let msr = one(
            "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n\
                       128166372000000000,hm,1,Read,1024,4096,100\n128166372000010000,hm,1,Write,1536,100,50\n",
            TraceFormat::Msr,
        )
        .unwrap();
        assert_eq!((msr[0].sector, msr[0].nr_sectors, msr[0].stream), (2, 8, 1));
        assert_eq!((msr[1].time_ns, msr[1].sector, msr[1].nr_sectors, msr[1].dir), (1_000_000, 3, 1, Dir::Write));
        let spc = one("0,20941264,8192,W,0.551706\n1,3436288,15872,r,0.554041,extra\n", TraceFormat::Spc).unwrap();
        assert_eq!((spc[1].stream, spc[1].nr_sectors, spc[1].time_ns, spc[1].dir), (1, 31, 2_335_000, Dir::Read));
        let fiu = one("89566814440625 4892 syslogd 904265560 8 W 6 0 531e779\n", TraceFormat::Fiu).unwrap();
        assert_eq!((fiu[0].stream, fiu[0].sector, fiu[0].nr_sectors, fiu[0].dir), (4892, 904265560, 8, Dir::Write));
        let ds = one("0.000 0 1000 16 1\n2.5 0 2000 8 0\n", TraceFormat::Disksim).unwrap();
        assert_eq!((ds[1].time_ns, ds[1].dir, ds[0].dir), (2_500_000, Dir::Write, Dir::Read));
    }

    #[test]
    fn bad_lines_name_file_and_line() {
        let cases = [
            ("1,2,3\n", TraceFormat::Msr, "t:1: expected Timestamp"),
            ("0,1,512,X,0.1\n", TraceFormat::Spc, "t:1: Opcode"),
            ("0,1,512,R,-3\n", TraceFormat::Spc, "t:1: Timestamp"),
            ("1 2 p 3 8 W\nx 2 p 3 8 W\n", TraceFormat::Fiu, "t:2: ts"),
            ("0.5 0 10\n", TraceFormat::Disksim, "t:1: expected time_ms"),
        ];
        for (text, format, want) in cases {
            let err = one(text, format).unwrap_err().to_string();
            assert!(err.starts_with(want), "{format:?}: {err}");
        }
    }
}

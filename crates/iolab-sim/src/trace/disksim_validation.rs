//! DiskSim's validation traces (`valid/*.trace`): requests measured on a
//! real drive, one per line,
//!
//! ```text
//! R|W  Miss|Hit|Doub|Trip  LBN  blocks  measured_access_us  delay_us
//! ```
//!
//! Only one request was outstanding at a time. `delay_us` is the idle gap
//! after this request completed before the next was issued (DiskSim's
//! reader issues the next request at the completion plus the delay read
//! on the previous line). Column 2 is what the drive did: for reads a
//! cache `Hit` or `Miss`; for writes how many times it disconnected from
//! the bus, `Doub` (twice) or `Trip` (three times, an extra disconnect).

use crate::error::{Error, Result};
use crate::input::TextLines;
use serde::Serialize;
use std::io::BufRead;
use std::path::Path;

/// Largest trace file read (1 GiB, some 20 million requests).
pub const MAX_TRACE_FILE: u64 = 1 << 30;

/// What the real drive did with a request (column 2).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Outcome {
    Miss,
    Hit,
    Doub,
    Trip,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Miss => "Miss",
            Outcome::Hit => "Hit",
            Outcome::Doub => "Doub",
            Outcome::Trip => "Trip",
        }
    }
}

/// One measured request.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Record {
    /// Line of the trace it came from (1-based).
    pub line: usize,
    pub write: bool,
    pub outcome: Outcome,
    pub lbn: u64,
    pub blocks: u32,
    pub access_us: f64,
    pub delay_us: f64,
}

/// Parses one line (`n` is its 1-based number); None for a blank line.
fn parse_line(line: &str, n: usize, name: &str) -> Option<Result<Record>> {
    let bad = |m: String| Error::Line { file: name.to_string(), line: n, message: m };
    // The first six fields and how many there are: no allocation per line
    // (a replay reads millions of lines).
    let mut f = [""; 6];
    let mut count = 0usize;
    for w in line.split_whitespace() {
        if let Some(slot) = f.get_mut(count) {
            *slot = w;
        }
        count += 1;
    }
    if count == 0 {
        return None;
    }
    Some((|| {
        if count != 6 {
            return Err(bad(format!(
                "expected 6 fields 'R|W Miss|Hit|Doub|Trip LBN blocks access_us delay_us', found {count}"
            )));
        }
        let write = match f[0] {
            "R" => false,
            "W" => true,
            x => return Err(bad(format!("field 1 must be R or W, not '{x}'"))),
        };
        let outcome = match f[1] {
            "Miss" => Outcome::Miss,
            "Hit" => Outcome::Hit,
            "Doub" => Outcome::Doub,
            "Trip" => Outcome::Trip,
            x => return Err(bad(format!("field 2 must be Miss, Hit, Doub or Trip, not '{x}'"))),
        };
        let lbn =
            f[2].parse::<u64>().map_err(|_| bad(format!("field 3 (LBN) must be a whole number, not '{}'", f[2])))?;
        let blocks = match f[3].parse::<u32>() {
            Ok(b) if b > 0 => b,
            _ => return Err(bad(format!("field 4 (blocks) must be a positive whole number, not '{}'", f[3]))),
        };
        let us = |k: usize, what: &str| match f[k].parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
            _ => Err(bad(format!("field {} ({what}) must be a non-negative number of µs, not '{}'", k + 1, f[k]))),
        };
        Ok(Record { line: n, write, outcome, lbn, blocks, access_us: us(4, "access time")?, delay_us: us(5, "delay")? })
    })())
}

/// The records of a trace read line by line; `name` is used in errors
/// (`name:line: ...`).
pub fn records<'a>(reader: impl BufRead + 'a, name: &'a str) -> impl Iterator<Item = Result<Record>> + 'a {
    reader.lines().enumerate().filter_map(move |(i, line)| match line {
        Ok(l) => parse_line(&l, i + 1, name),
        Err(e) => Some(Err(Error::Line { file: name.to_string(), line: i + 1, message: format!("unreadable: {e}") })),
    })
}

/// A trace read record by record, one line held at a time (a replay of
/// any length holds no more of it); errors as [`records`]'s, and text that
/// is not UTF-8 refused as [`read`] refuses it.
pub struct RecordReader<R> {
    lines: TextLines<R>,
    line: usize,
    name: String,
}

impl<R: BufRead> RecordReader<R> {
    pub fn new(reader: R, name: &str) -> Self {
        RecordReader { lines: TextLines::new(reader, name), line: 0, name: name.to_string() }
    }

    /// The next record, None at the end of the trace.
    pub fn next_record(&mut self) -> Result<Option<Record>> {
        while let Some(l) = self.lines.next_line()? {
            self.line += 1;
            if let Some(r) = parse_line(l, self.line, &self.name) {
                return r.map(Some);
            }
        }
        Ok(None)
    }
}

/// Opens a trace file for reading record by record (checked as [`read`]
/// checks it: a regular file of at most [`MAX_TRACE_FILE`] bytes).
pub fn open(path: &Path) -> Result<RecordReader<std::io::BufReader<std::fs::File>>> {
    let file = crate::input::open_text_file(path, MAX_TRACE_FILE)?;
    Ok(RecordReader::new(std::io::BufReader::with_capacity(1 << 16, file), &path.display().to_string()))
}

/// Parses a whole trace; `name` is used in errors (`name:line: ...`).
pub fn parse(text: &str, name: &str) -> Result<Vec<Record>> {
    let out = records(text.as_bytes(), name).collect::<Result<Vec<_>>>()?;
    if out.is_empty() {
        return Err(Error::Spec { file: name.to_string(), message: "the trace has no requests".into() });
    }
    Ok(out)
}

/// Reads and parses a trace file.
pub fn read(path: &Path) -> Result<Vec<Record>> {
    let text = crate::input::read_text_file(path, MAX_TRACE_FILE)?;
    parse(&text, &path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lines() {
        let r = parse("R Miss  564347     2     14095.370     13876.270\n\nW Trip 5 1 10.5 0\n", "t").unwrap();
        assert_eq!(r.len(), 2);
        assert_eq!(r[0], Record { line: 1, write: false, outcome: Outcome::Miss, lbn: 564347, blocks: 2, access_us: 14095.37, delay_us: 13876.27 });
        assert_eq!(r[1].line, 3);
        assert!(r[1].write && r[1].outcome == Outcome::Trip);
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = parse("R Miss 1 2 3 4\nX Miss 1 2 3 4\n", "v.trace").unwrap_err();
        assert_eq!(e.to_string(), "v.trace:2: field 1 must be R or W, not 'X'");
        let e = parse("R Miss 1 0 3 4\n", "v.trace").unwrap_err();
        assert!(e.to_string().starts_with("v.trace:1: field 4"), "{e}");
        let e = parse("R Miss 1 2 3\n", "v.trace").unwrap_err();
        assert!(e.to_string().starts_with("v.trace:1: expected 6 fields"), "{e}");
        assert!(parse("\n", "e").is_err());
    }

    #[test]
    fn the_record_reader_reads_what_parse_reads() {
        let text = "R Miss  564347     2     14095.370     13876.270\r\n\n  \nW Trip 5 1 10.5 0\nR Hit 1 2 3 4";
        let mut r = RecordReader::new(text.as_bytes(), "t");
        let mut got = Vec::new();
        while let Some(rec) = r.next_record().unwrap() {
            got.push(rec);
        }
        assert_eq!(got, parse(text, "t").unwrap());
        assert_eq!(got[1].line, 4);
        let mut r = RecordReader::new("R Miss 1 2 3 4\nR Miss 1 2 3 4 5\n".as_bytes(), "v.trace");
        assert!(r.next_record().unwrap().is_some());
        let e = r.next_record().unwrap_err().to_string();
        assert_eq!(e, "v.trace:2: expected 6 fields 'R|W Miss|Hit|Doub|Trip LBN blocks access_us delay_us', found 7");
    }
}

//! Reading a queue directory back: the scan that rebuilds the Message
//! Index Node table on open, `check` and `repair`.
//!
//! Called from `FastQueue::open_with()` (mode [`ScanMode::Open`]),
//! [`check()`] and [`repair()`] (mode [`ScanMode::Check`]).
//!
//! How the end of the log is told apart from damage. Records are written
//! in batches, one write call each, and a batch is written only after the
//! previous one was synced; the last record of each batch carries
//! `FLAG_BATCH_END`, and batch numbers only grow. So after a crash only the
//! last batch can be incomplete. When the scan of a segment stops (zero
//! bytes, a record of an older generation, or a bad record), the rest of
//! the log is searched for valid records: any record of a later batch
//! proves the stop is damage in the middle, an error naming segment and
//! offset. Otherwise the stop is the torn tail of the last batch, which
//! was never acknowledged: it is dropped (the whole batch) and its bytes
//! are zeroed on open.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::format::*;
use crate::storage::{read_full, Storage, StorageFile};

/// Name of the segment file with sequence number `seq`.
pub(crate) fn seg_name(seq: u64) -> String {
    format!("seg-{seq:016x}.fq")
}

fn parse_name(name: &str, prefix: &str) -> Option<u64> {
    let hex = name.strip_prefix(prefix)?.strip_suffix(".fq")?;
    u64::from_str_radix(hex, 16).ok()
}

/// Name of a free (recyclable) segment file.
pub(crate) fn free_name(n: u64) -> String {
    format!("free-{n:016x}.fq")
}

/// Whether the scan stops at the first damage (open) or records every
/// problem and goes on (check, repair).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScanMode {
    Open,
    Check,
}

/// One segment in use.
pub(crate) struct ScannedSegment {
    pub name: String,
    pub seq: u64,
    pub file: Arc<dyn StorageFile>,
    /// Whether it ends with a seal: nothing more may be written to it.
    pub sealed: bool,
    /// Where the valid records end (after the torn tail is dropped).
    pub end: u64,
}

/// A live message record found by the scan.
pub(crate) struct FoundRecord {
    /// Index into [`Scan::segments`].
    pub seg: usize,
    pub offset: u64,
    pub header: RecordHeader,
}

/// What kind of damage a [`Problem`] is, which decides how `repair` mends
/// it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProblemKind {
    /// Bytes that are not valid records, before later valid records.
    Region,
    /// A record whose only fault is its delete flag.
    DeleteFlag,
    /// A segment header that cannot be read; its records are unknown.
    SegmentHeader,
}

/// Damage found by the scan.
#[derive(Clone, Debug)]
pub struct Problem {
    /// Segment file.
    pub segment: PathBuf,
    /// File name of the segment.
    pub name: String,
    /// Byte offset of the damage.
    pub offset: u64,
    /// Where valid records resume in the same segment (`None`: not in this
    /// segment).
    pub resume: Option<u64>,
    /// What is wrong.
    pub reason: String,
    /// How `repair` mends it.
    pub kind: ProblemKind,
    /// Batch and batch-end flag of the padding record that covers a
    /// damaged region, so that batch order holds after the repair.
    pub(crate) pad_batch: u64,
    pub(crate) pad_end: bool,
}

impl Problem {
    /// The problem as the library's error.
    pub fn to_error(&self) -> Error {
        Error::corrupt(&self.segment, self.offset, &self.reason)
    }
}

/// The torn end of the log, dropped on open.
#[derive(Clone, Debug)]
pub struct TornTail {
    /// Segment file.
    pub segment: PathBuf,
    /// Index into the segment list.
    pub(crate) seg: usize,
    /// Offset from which bytes are dropped (zeroed on open): the start of
    /// the incomplete batch.
    pub offset: u64,
    /// End of the bytes zeroed on open (the last stale record of the
    /// batch).
    pub zero_to: u64,
    /// Valid records of the incomplete batch that are dropped with it.
    pub dropped_records: u64,
    /// Why the scan stopped there.
    pub reason: String,
}

/// Everything the scan learnt.
pub(crate) struct Scan {
    pub segments: Vec<ScannedSegment>,
    pub free: Vec<String>,
    pub temporary: Vec<String>,
    pub records: Vec<FoundRecord>,
    pub problems: Vec<Problem>,
    pub torn: Option<TornTail>,
    pub next_seq: u64,
    pub next_id: u64,
    pub next_batch: u64,
    pub next_free: u64,
    pub deleted_records: u64,
    pub bytes_scanned: u64,
}

/// What is at one record position of a segment image.
enum Slot {
    /// A valid record of this segment's generation.
    Record(RecordHeader),
    /// Zero bytes, the end of the file, or a record of an older
    /// generation: nothing was written here since the segment was set up.
    End,
    /// Neither.
    Bad(&'static str),
}

fn slot_at(buf: &[u8], off: usize, seq: u64) -> Slot {
    if off + RECORD_HEADER_LEN > buf.len() {
        return Slot::End;
    }
    match RecordHeader::decode(&buf[off..]) {
        HeaderCheck::Zero => Slot::End,
        HeaderCheck::Bad(reason) => Slot::Bad(reason),
        HeaderCheck::Valid(h) if h.segment_seq != seq => {
            if h.segment_seq > seq {
                Slot::Bad("record from a later segment generation")
            } else {
                Slot::End
            }
        }
        HeaderCheck::Valid(h) => {
            let end = off + h.record_len();
            if end > buf.len() {
                Slot::Bad("record runs past the end of the segment")
            } else if !h.payload_ok(&buf[off + RECORD_HEADER_LEN..][..h.payload_len as usize]) {
                Slot::Bad("payload checksum mismatch")
            } else {
                Slot::Record(h)
            }
        }
    }
}

/// A record whose delete flag alone is damaged, taken as live.
fn with_flag_mended(buf: &[u8], off: usize, seq: u64) -> Option<RecordHeader> {
    if off + RECORD_HEADER_LEN > buf.len() {
        return None;
    }
    let mut copy = buf[off..(off + RECORD_HEADER_LEN)].to_vec();
    copy[DELETE_FLAG_OFFSET as usize] = LIVE;
    let HeaderCheck::Valid(h) = RecordHeader::decode(&copy) else {
        return None;
    };
    let end = off + h.record_len();
    (h.segment_seq == seq
        && end <= buf.len()
        && h.payload_ok(&buf[off + RECORD_HEADER_LEN..][..h.payload_len as usize]))
    .then_some(h)
}

/// The next valid record of generation `seq` at or after `from`.
fn next_valid(buf: &[u8], from: usize, seq: u64) -> Option<(usize, RecordHeader)> {
    let mut p = from.next_multiple_of(RECORD_ALIGN);
    while p + RECORD_HEADER_LEN <= buf.len() {
        if buf[p..p + 4] == RECORD_MAGIC {
            if let Slot::Record(h) = slot_at(buf, p, seq) {
                return Some((p, h));
            }
        }
        p += RECORD_ALIGN;
    }
    None
}

fn read_image(file: &dyn StorageFile, buf: &mut Vec<u8>) -> std::io::Result<()> {
    let len = file.len()? as usize;
    buf.clear();
    buf.resize(len, 0);
    let n = read_full(file, buf, 0)?;
    buf.truncate(n);
    Ok(())
}

/// Scans the queue in `storage`. In [`ScanMode::Open`] the first damage
/// is returned as [`Error::Corrupt`]; in [`ScanMode::Check`] it goes into
/// [`Scan::problems`] and the scan resumes after it.
pub(crate) fn scan(storage: &dyn Storage, mode: ScanMode) -> Result<Scan> {
    let dir = storage.path("");
    let names = storage.list().map_err(|e| Error::io(&dir, "list", e))?;
    let mut out = Scan {
        segments: Vec::new(),
        free: Vec::new(),
        temporary: Vec::new(),
        records: Vec::new(),
        problems: Vec::new(),
        torn: None,
        next_seq: 1,
        next_id: 1,
        next_batch: 1,
        next_free: 1,
        deleted_records: 0,
        bytes_scanned: 0,
    };
    let mut hdr = [0u8; SEGMENT_HEADER_USED];
    let mut found = Vec::new();
    for name in names {
        let path = storage.path(&name);
        if let Some(n) = parse_name(&name, "free-") {
            out.next_free = out.next_free.max(n + 1);
            let file = storage.open(&name).map_err(|e| Error::io(&path, "open", e))?;
            let n = read_full(&*file, &mut hdr, 0).map_err(|e| Error::io(&path, "read", e))?;
            // A free segment's header only matters for the sequence
            // numbers already used; a torn one belongs to a segment that
            // never held a durable record.
            if let Ok(h) = SegmentHeader::decode(&hdr[..n]) {
                out.next_seq = out.next_seq.max(h.seq + 1);
            }
            out.free.push(name);
        } else if name.starts_with("tmp-") {
            out.temporary.push(name);
        } else if let Some(seq) = parse_name(&name, "seg-") {
            let file = storage.open(&name).map_err(|e| Error::io(&path, "open", e))?;
            let n = read_full(&*file, &mut hdr, 0).map_err(|e| Error::io(&path, "read", e))?;
            let header = SegmentHeader::decode(&hdr[..n]).and_then(|h| {
                if h.seq == seq {
                    Ok(h)
                } else {
                    Err("segment header sequence number differs from the file name")
                }
            });
            out.next_seq = out.next_seq.max(seq + 1);
            match header {
                Ok(h) => {
                    out.next_id = out.next_id.max(h.id_floor);
                    found.push((seq, name, file));
                }
                Err(reason) => {
                    let p = Problem {
                        segment: path,
                        name,
                        offset: 0,
                        resume: None,
                        reason: reason.to_string(),
                        kind: ProblemKind::SegmentHeader,
                        pad_batch: 0,
                        pad_end: false,
                    };
                    if mode == ScanMode::Open {
                        return Err(p.to_error());
                    }
                    out.problems.push(p);
                }
            }
        }
    }
    found.sort_by_key(|(seq, _, _)| *seq);

    let mut buf = Vec::new();
    let mut last_batch = 0u64;
    let mut last_end = true;
    let mut max_batch = 0u64;
    let count = found.len();
    for (i, (seq, name, file)) in found.into_iter().enumerate() {
        let path = storage.path(&name);
        read_image(&*file, &mut buf).map_err(|e| Error::io(&path, "read", e))?;
        out.bytes_scanned += buf.len() as u64;
        let seg_records_start = out.records.len();
        let mut off = SEGMENT_HEADER_LEN as usize;
        let mut end = off;
        let mut sealed = false;
        let problem = |offset: usize, resume: Option<usize>, reason: &str, kind, batch, batch_end| Problem {
            segment: path.clone(),
            name: name.clone(),
            offset: offset as u64,
            resume: resume.map(|r| r as u64),
            reason: reason.to_string(),
            kind,
            pad_batch: batch,
            pad_end: batch_end,
        };
        loop {
            let mut slot = slot_at(&buf, off, seq);
            if matches!(&slot, Slot::Record(h) if h.batch_seq < last_batch) {
                // Batch numbers only grow: an older one is left-over debris.
                slot = Slot::End;
            }
            if matches!(slot, Slot::Bad(_)) {
                if let Some(h) = with_flag_mended(&buf, off, seq) {
                    let p = problem(off, None, "delete flag is neither live nor deleted", ProblemKind::DeleteFlag, 0, false);
                    if mode == ScanMode::Open {
                        return Err(p.to_error());
                    }
                    out.problems.push(p);
                    // Taken as live: a message is redelivered, never lost.
                    slot = Slot::Record(RecordHeader { delete_flag: LIVE, ..h });
                }
            }
            if let Slot::Record(h) = slot {
                max_batch = max_batch.max(h.batch_seq);
                last_batch = h.batch_seq;
                last_end = h.flags & FLAG_BATCH_END != 0;
                out.next_id = out.next_id.max(h.id + 1);
                let at = off;
                off += h.record_len();
                end = off;
                if h.flags & FLAG_SEAL != 0 {
                    sealed = true;
                    break;
                }
                if !h.is_message() {
                } else if h.delete_flag == DELETED {
                    out.deleted_records += 1;
                } else {
                    out.records.push(FoundRecord { seg: i, offset: at as u64, header: h });
                }
                continue;
            }
            let bad = match slot {
                Slot::Bad(reason) => Some(reason),
                _ => None,
            };
            // The scan of this segment stops at `off`. Valid records of a
            // later batch further on prove damage in the middle.
            let incomplete = if last_end { last_batch + 1 } else { last_batch };
            let mut stale_end = None;
            let mut later = None;
            let mut p = off + RECORD_ALIGN;
            while let Some((at, h)) = next_valid(&buf, p, seq) {
                max_batch = max_batch.max(h.batch_seq);
                if h.batch_seq > incomplete {
                    later = Some((at, h.batch_seq));
                    break;
                }
                stale_end = Some(at + h.record_len());
                p = at + RECORD_ALIGN;
            }
            if let Some((resume, batch)) = later {
                let reason = bad.unwrap_or("unwritten bytes before later records");
                let p = problem(off, Some(resume), reason, ProblemKind::Region, last_batch, batch > last_batch);
                if mode == ScanMode::Open {
                    return Err(p.to_error());
                }
                out.problems.push(p);
                off = resume;
                continue;
            }
            if i + 1 < count {
                // Only the newest segment can end in a torn batch: a
                // segment is sealed, and the seal synced, before the next
                // one is set up.
                if buf.len() - off < RECORD_HEADER_LEN && last_end && bad.is_none() {
                    break;
                }
                let reason = bad.unwrap_or("segment ends without its seal (records are missing)");
                let p = problem(off, None, reason, ProblemKind::Region, last_batch, true);
                if mode == ScanMode::Open {
                    return Err(p.to_error());
                }
                out.problems.push(p);
                break;
            }
            let torn_record = matches!(
                RecordHeader::decode(buf.get(off..).unwrap_or_default()),
                HeaderCheck::Valid(h) if h.segment_seq == seq
            );
            if stale_end.is_some() || !last_end || torn_record {
                // The last batch is incomplete: it was never synced, so
                // none of its messages was acknowledged. Drop it whole.
                let from = if last_end { off as u64 } else { batch_start(&buf, seq, last_batch) };
                let before = out.records.len();
                while out.records.len() > seg_records_start && out.records.last().unwrap().offset >= from {
                    out.records.pop();
                }
                out.torn = Some(TornTail {
                    segment: path.clone(),
                    seg: i,
                    offset: from,
                    zero_to: stale_end.unwrap_or(off).max(off) as u64,
                    dropped_records: (before - out.records.len()) as u64,
                    reason: bad.unwrap_or("incomplete last batch").to_string(),
                });
                end = from as usize;
                last_batch = incomplete;
            }
            break;
        }
        out.segments.push(ScannedSegment { name, seq, file, sealed, end: end as u64 });
    }
    out.next_batch = max_batch.max(last_batch) + 1;
    Ok(out)
}

/// Offset of the first record of batch `batch` in a segment image.
fn batch_start(buf: &[u8], seq: u64, batch: u64) -> u64 {
    let mut off = SEGMENT_HEADER_LEN as usize;
    while let Slot::Record(h) = slot_at(buf, off, seq) {
        if h.batch_seq == batch {
            return off as u64;
        }
        off += h.record_len();
    }
    off as u64
}

/// What [`check()`] found.
#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    /// Segment files in use.
    pub segments: usize,
    /// Free segment files ready for reuse.
    pub free_segments: usize,
    /// Live messages.
    pub live_messages: u64,
    /// Deleted (acknowledged) records not yet reclaimed.
    pub deleted_records: u64,
    /// Payload bytes of live messages.
    pub live_bytes: u64,
    /// Bytes read.
    pub bytes_scanned: u64,
    /// Damage, each naming segment and offset.
    pub problems: Vec<Problem>,
    /// The torn end that the next open drops, if any.
    pub torn_tail: Option<TornTail>,
}

/// Reads the whole queue in `storage` and reports its state and every
/// problem, changing nothing.
pub fn check(storage: &dyn Storage) -> Result<CheckReport> {
    let s = scan(storage, ScanMode::Check)?;
    Ok(CheckReport {
        segments: s.segments.len(),
        free_segments: s.free.len(),
        live_messages: s.records.len() as u64,
        deleted_records: s.deleted_records,
        live_bytes: s.records.iter().map(|r| r.header.payload_len as u64).sum(),
        bytes_scanned: s.bytes_scanned,
        problems: s.problems,
        torn_tail: s.torn,
    })
}

/// What [`repair()`] did.
#[derive(Clone, Debug, Default)]
pub struct RepairReport {
    /// The problems mended.
    pub mended: Vec<Problem>,
    /// Files where the damaged bytes were saved, one per region.
    pub quarantined: Vec<PathBuf>,
}

/// Mends every problem [`check()`] finds, keeping every valid record: a
/// damaged delete flag is reset to live (the message is delivered again
/// rather than lost); damaged bytes are copied to a `quarantine-*.bin`
/// file and covered by a padding record (or zeroed at the end of a
/// segment); an unreadable segment header is rewritten from the file name.
/// The queue must not be open elsewhere.
pub fn repair(storage: &dyn Storage) -> Result<RepairReport> {
    let mut report = RepairReport::default();
    let mut seen = BTreeSet::new();
    loop {
        let s = scan(storage, ScanMode::Check)?;
        let Some(p) = s.problems.into_iter().next() else {
            return Ok(report);
        };
        if !seen.insert((p.name.clone(), p.offset, p.kind as u8)) {
            return Err(p.to_error());
        }
        let file = storage.open(&p.name).map_err(|e| Error::io(&p.segment, "open", e))?;
        let io = |op, e| Error::io(&p.segment, op, e);
        match p.kind {
            ProblemKind::DeleteFlag => {
                file.write_at(&[LIVE], p.offset + DELETE_FLAG_OFFSET).map_err(|e| io("write", e))?;
            }
            ProblemKind::SegmentHeader => {
                let seq = parse_name(&p.name, "seg-").unwrap_or(0);
                let size = file.len().map_err(|e| io("stat", e))?;
                let h = SegmentHeader { segment_size: size, seq, id_floor: 0, created_ns: 0 };
                file.write_at(&h.encode(), 0).map_err(|e| io("write", e))?;
            }
            ProblemKind::Region => {
                let size = file.len().map_err(|e| io("stat", e))?;
                let end = p.resume.unwrap_or(size);
                let mut bad = vec![0u8; (end - p.offset) as usize];
                let n = read_full(&*file, &mut bad, p.offset).map_err(|e| io("read", e))?;
                bad.truncate(n);
                let used = bad.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
                let qname = format!(
                    "quarantine-{}-{}.bin",
                    p.name.trim_end_matches(".fq"),
                    p.offset
                );
                let qpath = storage.path(&qname);
                let q = storage.create(&qname).map_err(|e| Error::io(&qpath, "create", e))?;
                q.write_at(&bad[..used], 0)
                    .and_then(|_| q.sync_data())
                    .map_err(|e| Error::io(&qpath, "write", e))?;
                report.quarantined.push(qpath);
                // A padding record over the damage keeps the batch order
                // the scan relies on; the bytes stay in it as they were.
                let mut cover = Vec::with_capacity(bad.len());
                if bad.len() >= RECORD_HEADER_LEN {
                    let seq = parse_name(&p.name, "seg-").unwrap_or(0);
                    let flags = if p.pad_end { FLAG_BATCH_END } else { 0 }
                        | if p.resume.is_none() { FLAG_SEAL } else { 0 };
                    let pad = RecordHeader::padding(flags, seq, p.pad_batch);
                    let body = (bad.len() - RECORD_HEADER_LEN) / RECORD_ALIGN * RECORD_ALIGN;
                    pad.encode(&bad[RECORD_HEADER_LEN..RECORD_HEADER_LEN + body], &mut cover);
                }
                cover.resize(bad.len(), 0);
                file.write_at(&cover, p.offset).map_err(|e| io("write", e))?;
            }
        }
        file.sync_data().map_err(|e| io("fdatasync", e))?;
        storage.sync_dir().map_err(|e| Error::io(storage.path(""), "fsync", e))?;
        report.mended.push(p);
    }
}

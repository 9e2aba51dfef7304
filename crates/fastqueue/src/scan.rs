//! Reading a queue directory back: the scan that rebuilds the Message
//! Index Node table on open, `check` and `repair`.
//!
//! Called from `FastQueue::open_with()` (mode [`ScanMode::Open`]),
//! `check()` and `repair()` (mode [`ScanMode::Check`], in `repair.rs`).
//!
//! How the end of the log is told apart from damage. Records are written
//! in batches, one write call each, in batch order; the last record of
//! each batch carries `FLAG_BATCH_END`, and batch numbers only grow. The
//! writer starts a batch's write while the previous batch's sync runs,
//! but never has more than [`PIPELINE_DEPTH`] batches written and not
//! synced, and never opens a segment while any is. So after a crash only
//! the last `PIPELINE_DEPTH` batches of the newest segment can be
//! incomplete, and none of their messages was acknowledged. When the scan
//! of a segment stops (zero bytes, a record of an older generation, or a
//! bad record), the rest of the log is searched for valid records: a
//! record of a batch beyond those proves the stop is damage in the middle,
//! an error naming segment and offset. Otherwise the stop is the torn tail:
//! the incomplete batches are dropped whole and their bytes zeroed on open.
//!
//! What else is checked: each segment file's name against its header, its
//! size against the size its header records, and the segments against the
//! manifest (`manifest.rs`): a listed segment that is gone (its messages
//! are lost), a segment nobody listed, and a log that ends before where
//! the last clean close left it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::format::*;
use crate::manifest::{self, Manifest, MANIFEST, MANIFEST_TMP};
use crate::storage::{read_full, Storage, StorageFile};

/// Name of the segment file with sequence number `seq`.
pub(crate) fn seg_name(seq: u64) -> String {
    format!("seg-{seq:016x}.fq")
}

pub(crate) fn parse_name(name: &str, prefix: &str) -> Option<u64> {
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
    /// Smallest and largest id of the main-queue records in it (deleted
    /// ones included), to name the ids lost with a missing neighbour.
    pub main_ids: Option<(u64, u64)>,
    /// The id floor of its header.
    pub id_floor: u64,
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
    /// A segment file whose size differs from the one its header records
    /// (cut short: the records beyond the cut are lost).
    Size,
    /// A segment file whose name is not the one its header says (renamed
    /// or swapped by hand; or recycled with live messages in it).
    Misnamed,
    /// A second file holding the same segment.
    Duplicate,
    /// A segment the manifest lists is gone: its messages are lost.
    MissingSegment,
    /// A segment the manifest does not list, older than the newest listed.
    Unlisted,
    /// The log ends before where the last clean close left it.
    TailLost,
    /// The manifest itself cannot be read.
    Manifest,
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
    /// [`ProblemKind::Misnamed`]: the segment the file holds;
    /// [`ProblemKind::Size`]: the size its header records.
    pub(crate) target: u64,
}

impl Problem {
    fn new(segment: PathBuf, name: &str, offset: u64, kind: ProblemKind, reason: impl Into<String>) -> Problem {
        Problem {
            segment,
            name: name.to_string(),
            offset,
            resume: None,
            reason: reason.into(),
            kind,
            pad_batch: 0,
            pad_end: false,
            target: 0,
        }
    }

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
    /// The manifest, if there is a readable one.
    pub manifest: Option<Manifest>,
    /// Listed segments already renamed to free files (a crash came before
    /// the manifest dropped them): the open rewrites the manifest.
    pub retired: Vec<u64>,
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

/// Reads a segment file into `buf`, at most `max` bytes: a segment's own
/// size (its header's), so that bytes added past it (a file extended, even
/// sparse, to a terabyte) are never read: the size problem reports them.
/// The memory is reserved first, so that a size beyond what the machine
/// can give is an error naming the file, not an abort.
fn read_image(file: &dyn StorageFile, buf: &mut Vec<u8>, max: u64) -> std::io::Result<()> {
    let len = file.len()?.min(max);
    let len = usize::try_from(len).map_err(|_| std::io::Error::other("segment too large to scan"))?;
    buf.clear();
    buf.try_reserve_exact(len).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::OutOfMemory,
            format!("cannot hold its {len} bytes in memory to scan it (the scan reads one segment at a time)"),
        )
    })?;
    buf.resize(len, 0);
    let n = read_full(file, buf, 0)?;
    buf.truncate(n);
    Ok(())
}

/// Live message records of generation `seq` in a segment image, read from
/// the start as the scan does.
fn live_records(buf: &[u8], seq: u64) -> usize {
    let mut off = SEGMENT_HEADER_LEN as usize;
    let mut live = 0;
    while let Slot::Record(h) = slot_at(buf, off, seq) {
        live += usize::from(h.is_message() && h.delete_flag == LIVE);
        if h.flags & FLAG_SEAL != 0 {
            break;
        }
        off += h.record_len();
    }
    live
}

/// A segment file whose header could be read.
struct Candidate {
    seq: u64,
    name: String,
    file: Arc<dyn StorageFile>,
    header: SegmentHeader,
}

/// Scans the queue in `storage`. In [`ScanMode::Open`] the first damage
/// is returned as [`Error::Corrupt`]; in [`ScanMode::Check`] it goes into
/// [`Scan::problems`] and the scan resumes after it. Check mode opens
/// every file read-only.
pub(crate) fn scan(storage: &dyn Storage, mode: ScanMode) -> Result<Scan> {
    let dir = storage.path("");
    let names = storage.list().map_err(|e| Error::io(&dir, "list", e))?;
    let readonly = mode == ScanMode::Check;
    let open = |name: &str| {
        let f = if readonly { storage.open_read(name) } else { storage.open(name) };
        f.map_err(|e| Error::io(storage.path(name), "open", e))
    };
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
        manifest: None,
        retired: Vec::new(),
    };
    let report = |out: &mut Scan, p: Problem| -> Result<()> {
        if mode == ScanMode::Open {
            return Err(p.to_error());
        }
        out.problems.push(p);
        Ok(())
    };
    match manifest::read(storage, readonly).map_err(|e| Error::io(storage.path(MANIFEST), "read", e))? {
        Ok(m) => out.manifest = m,
        Err(reason) => {
            let p = Problem::new(storage.path(MANIFEST), MANIFEST, 0, ProblemKind::Manifest, reason);
            report(&mut out, p)?;
        }
    }

    let mut hdr = [0u8; SEGMENT_HEADER_USED];
    let mut found: Vec<Candidate> = Vec::new();
    // Free files by the segment number in their header.
    let mut free_by_seq = BTreeMap::new();
    // Segments present, even with an unreadable header (by file name).
    let mut present = BTreeSet::new();
    for name in names {
        let path = storage.path(&name);
        if let Some(n) = parse_name(&name, "free-") {
            out.next_free = out.next_free.max(n + 1);
            let file = open(&name)?;
            let n = read_full(&*file, &mut hdr, 0).map_err(|e| Error::io(&path, "read", e))?;
            // A free segment's header only matters for the sequence
            // numbers already used; a torn one belongs to a segment that
            // never held a durable record.
            if let Ok(h) = SegmentHeader::decode(&hdr[..n]) {
                out.next_seq = out.next_seq.max(h.seq + 1);
                free_by_seq.insert(h.seq, (name.clone(), file, h.segment_size));
            }
            out.free.push(name);
        } else if name.starts_with("tmp-") || name == MANIFEST_TMP {
            out.temporary.push(name);
        } else if let Some(name_seq) = parse_name(&name, "seg-") {
            let file = open(&name)?;
            let n = read_full(&*file, &mut hdr, 0).map_err(|e| Error::io(&path, "read", e))?;
            out.next_seq = out.next_seq.max(name_seq.saturating_add(1));
            present.insert(name_seq);
            let h = match SegmentHeader::decode(&hdr[..n]) {
                Ok(h) => h,
                Err(reason) => {
                    let p = Problem::new(path, &name, 0, ProblemKind::SegmentHeader, reason);
                    report(&mut out, p)?;
                    continue;
                }
            };
            out.next_seq = out.next_seq.max(h.seq.saturating_add(1));
            out.next_id = out.next_id.max(h.id_floor);
            present.insert(h.seq);
            if h.seq != name_seq {
                let mut p = Problem::new(
                    path.clone(),
                    &name,
                    0,
                    ProblemKind::Misnamed,
                    format!("the file holds segment {} (its header says so), not {name_seq}: renamed by hand?", h.seq),
                );
                p.target = h.seq;
                report(&mut out, p)?;
            }
            let len = file.len().map_err(|e| Error::io(&path, "stat", e))?;
            if len != h.segment_size {
                let reason = if len < h.segment_size {
                    format!(
                        "segment file is {len} bytes but its header says {}: cut short, the records after byte {len} are lost",
                        h.segment_size
                    )
                } else {
                    format!("segment file is {len} bytes but its header says {}: bytes were added", h.segment_size)
                };
                let mut p = Problem::new(path, &name, len.min(h.segment_size), ProblemKind::Size, reason);
                p.target = h.segment_size;
                report(&mut out, p)?;
            }
            found.push(Candidate { seq: h.seq, name, file, header: h });
        }
    }
    // The file whose name matches its header first: a second file holding
    // the same segment is set aside.
    found.sort_by_key(|c| (c.seq, c.name != seg_name(c.seq)));
    let mut kept: Vec<Candidate> = Vec::new();
    for c in found {
        if let Some(first) = kept.last().filter(|k| k.seq == c.seq) {
            let reason = format!("a second file holding segment {} (the first is {})", c.seq, first.name);
            let p = Problem::new(storage.path(&c.name), &c.name, 0, ProblemKind::Duplicate, reason);
            report(&mut out, p)?;
            continue;
        }
        kept.push(c);
    }

    let mut buf = Vec::new();
    let mut last_batch = 0u64;
    let mut last_end = true;
    let mut max_batch = 0u64;
    let count = kept.len();
    for (i, Candidate { seq, name, file, header }) in kept.into_iter().enumerate() {
        let path = storage.path(&name);
        read_image(&*file, &mut buf, header.segment_size).map_err(|e| Error::io(&path, "read", e))?;
        out.bytes_scanned += buf.len() as u64;
        let seg_records_start = out.records.len();
        let mut main_ids: Option<(u64, u64)> = None;
        let mut off = SEGMENT_HEADER_LEN as usize;
        let mut end = off;
        let mut sealed = false;
        let problem = |offset: usize, resume: Option<usize>, reason: &str, kind, batch, batch_end| Problem {
            resume: resume.map(|r| r as u64),
            pad_batch: batch,
            pad_end: batch_end,
            ..Problem::new(path.clone(), &name, offset as u64, kind, reason)
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
                    report(&mut out, p)?;
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
                if h.is_message() && h.kind == QueueKind::Main {
                    main_ids = Some(main_ids.map_or((h.id, h.id), |(lo, hi)| (lo.min(h.id), hi.max(h.id))));
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
            // batch beyond those that may be incomplete (the pipeline's
            // depth) prove damage in the middle.
            let incomplete = if last_end { last_batch + 1 } else { last_batch };
            let newest_unsynced = incomplete + (PIPELINE_DEPTH as u64 - 1);
            let mut stale_end = None;
            let mut stale_messages = 0;
            let mut first_valid = None;
            let mut later = false;
            let mut p = off + RECORD_ALIGN;
            while let Some((at, h)) = next_valid(&buf, p, seq) {
                max_batch = max_batch.max(h.batch_seq);
                first_valid.get_or_insert((at, h.batch_seq));
                if h.batch_seq > newest_unsynced {
                    later = true;
                    break;
                }
                stale_end = Some(at + h.record_len());
                stale_messages += u64::from(h.is_message());
                p = at + RECORD_ALIGN;
            }
            if let (true, Some((resume, batch))) = (later, first_valid) {
                // Damage proven: every valid record after it is real
                // data, the first one included.
                let reason = bad.unwrap_or("unwritten bytes before later records");
                let p = problem(off, Some(resume), reason, ProblemKind::Region, last_batch, batch > last_batch);
                report(&mut out, p)?;
                off = resume;
                continue;
            }
            if i + 1 < count {
                // Only the newest segment can end in a torn batch: a
                // segment is sealed, and the seal synced, before the next
                // one is set up.
                if buf.len() - off.min(buf.len()) < RECORD_HEADER_LEN && last_end && bad.is_none() {
                    break;
                }
                let reason = bad.unwrap_or("segment ends without its seal (records are missing)");
                let p = problem(off, None, reason, ProblemKind::Region, last_batch, true);
                report(&mut out, p)?;
                break;
            }
            let torn_record = matches!(
                RecordHeader::decode(buf.get(off..).unwrap_or_default()),
                HeaderCheck::Valid(h) if h.segment_seq == seq
            );
            if stale_end.is_some() || !last_end || torn_record {
                // The last batches are incomplete: never synced, so none
                // of their messages was acknowledged. Drop them whole.
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
                    dropped_records: (before - out.records.len()) as u64 + stale_messages,
                    reason: bad.unwrap_or("incomplete last batch").to_string(),
                });
                end = from as usize;
                last_batch = incomplete;
            }
            break;
        }
        out.segments.push(ScannedSegment { name, seq, file, sealed, end: end as u64, main_ids, id_floor: header.id_floor });
    }
    out.next_batch = max_batch.max(last_batch) + 1;
    name_lost_ids(&mut out);
    if let Some(m) = out.manifest.clone() {
        check_manifest(storage, mode, &m, &present, &free_by_seq, &mut out)?;
    }
    Ok(out)
}

/// Names the message ids that were between segments `before` and `after`
/// (main-queue ids grow along the log), for a segment lost or cut between
/// them.
fn id_gap(before: Option<&ScannedSegment>, after: Option<&ScannedSegment>) -> String {
    let from = before.and_then(|s| s.main_ids).map_or(1, |(_, hi)| hi + 1);
    let Some(s) = after else {
        return format!("message ids from {from} on went with it (those not acknowledged are lost)");
    };
    // Up to the first id of the next segment, or its floor: ids issued
    // before it was set up (a repaired header has none).
    let floor = match (s.main_ids, s.id_floor) {
        (Some((lo, _)), 0) => lo,
        (Some((lo, _)), f) => lo.min(f),
        (None, f) => f,
    };
    let to = floor.saturating_sub(1);
    if to >= from {
        format!("message ids {from} to {to} went with it (those not acknowledged are lost)")
    } else {
        "no message id is unaccounted for around it".to_string()
    }
}

/// Adds to each problem that lost the end of a segment (cut short, or
/// ending without its seal) the message ids that went with it.
fn name_lost_ids(out: &mut Scan) {
    for p in &mut out.problems {
        let cut = match p.kind {
            ProblemKind::Size => p.offset < p.target,
            ProblemKind::Region => p.resume.is_none(),
            _ => false,
        };
        let Some(i) = out.segments.iter().position(|s| s.name == p.name) else { continue };
        if !cut {
            continue;
        }
        let this = &out.segments[i];
        let before = if this.main_ids.is_some() { Some(this) } else { out.segments[..i].last() };
        p.reason = format!("{}: {}", p.reason, id_gap(before, out.segments.get(i + 1)));
    }
}

/// The segments against the manifest `m`; see `manifest.rs`.
fn check_manifest(
    storage: &dyn Storage,
    mode: ScanMode,
    m: &Manifest,
    present: &BTreeSet<u64>,
    free_by_seq: &BTreeMap<u64, (String, Arc<dyn StorageFile>, u64)>,
    out: &mut Scan,
) -> Result<()> {
    let mut problems = Vec::new();
    let listed: BTreeSet<u64> = m.segments.iter().copied().collect();
    let mut buf = Vec::new();
    for &seq in &m.segments {
        if present.contains(&seq) {
            continue;
        }
        if let Some((name, file, size)) = free_by_seq.get(&seq) {
            read_image(&**file, &mut buf, *size).map_err(|e| Error::io(storage.path(name), "read", e))?;
            let live = live_records(&buf, seq);
            if live == 0 {
                // Recycled; the crash came before the manifest dropped it.
                out.retired.push(seq);
                continue;
            }
            let mut p = Problem::new(
                storage.path(name),
                name,
                0,
                ProblemKind::Misnamed,
                format!("segment {seq} was renamed to a free file but holds {live} live messages"),
            );
            p.target = seq;
            problems.push(p);
            continue;
        }
        let before = out.segments.iter().rev().find(|s| s.seq < seq);
        let after = out.segments.iter().find(|s| s.seq > seq);
        let ids = id_gap(before, after);
        let name = seg_name(seq);
        let reason = format!("segment {seq} is listed in the manifest but its file is missing: {ids}");
        problems.push(Problem::new(storage.path(&name), &name, 0, ProblemKind::MissingSegment, reason));
    }
    let newest_listed = m.segments.last().copied().unwrap_or(0);
    for s in &out.segments {
        if s.seq < newest_listed && !listed.contains(&s.seq) {
            let reason = format!(
                "segment {} is not in the manifest (which lists {} segments up to {newest_listed}): copied in by hand?",
                s.seq,
                m.segments.len()
            );
            problems.push(Problem::new(storage.path(&s.name), &s.name, 0, ProblemKind::Unlisted, reason));
        }
    }
    if let Some(tail) = m.clean {
        let newest = out.segments.last();
        let (seq, end) = newest.map_or((0, 0), |s| (s.seq, s.end));
        if (seq, end) != (tail.seq, tail.end) {
            let name = seg_name(tail.seq);
            let reason = format!(
                "the queue was closed cleanly with its log ending in segment {} at byte {}, \
                 but it now ends in segment {seq} at byte {end}: records were lost or zeroed",
                tail.seq, tail.end
            );
            problems.push(Problem::new(storage.path(&name), &name, end.min(tail.end), ProblemKind::TailLost, reason));
        }
    }
    for p in problems {
        if mode == ScanMode::Open {
            return Err(p.to_error());
        }
        out.problems.push(p);
    }
    Ok(())
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


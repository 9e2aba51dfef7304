//! `check` (read everything, change nothing) and `repair` (mend what check
//! finds, keeping every valid record). Both read the queue with the scan of
//! `scan.rs`; the problems it can prove are listed in
//! `docs/fastqueue-format.md`.

use std::collections::BTreeSet;
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::format::*;
use crate::manifest::{self, Manifest};
use crate::scan::{parse_name, scan, seg_name, Problem, ProblemKind, Scan, ScanMode, TornTail};
use crate::storage::{read_full, Storage, StorageFile};

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
    /// Whether the queue has a manifest. Without one (a queue last opened
    /// by a version that had none) a missing segment or a cut tail cannot
    /// be told from a recycled segment or the end of the log.
    pub manifest: bool,
    /// Whether the manifest says the queue was closed cleanly (then a lost
    /// tail is detected too).
    pub closed_cleanly: bool,
}

/// Reads the whole queue in `storage` and reports its state and every
/// problem, changing nothing (every file is opened read-only).
pub fn check(storage: &dyn Storage) -> Result<CheckReport> {
    let s = scan(storage, ScanMode::Check)?;
    Ok(CheckReport {
        segments: s.segments.len(),
        free_segments: s.free.len(),
        live_messages: s.records.len() as u64,
        deleted_records: s.deleted_records,
        live_bytes: s.records.iter().map(|r| r.header.payload_len as u64).sum(),
        bytes_scanned: s.bytes_scanned,
        manifest: s.manifest.is_some(),
        closed_cleanly: s.manifest.as_ref().is_some_and(|m| m.clean.is_some()),
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

/// Mends every problem [`check()`] finds, one at a time, scanning again
/// after each, keeping every valid record:
/// - a damaged delete flag is reset to live (the message is delivered
///   again rather than lost);
/// - damaged bytes are copied to a `quarantine-*.bin` file and covered by a
///   padding record (or zeroed at the end of a segment);
/// - an unreadable segment header is rewritten from the file name; a file
///   too short to hold a record is moved aside whole;
/// - a segment file cut short is extended with zeros to its size (what was
///   cut is lost; the report says so), one grown is cut back (non-zero
///   extra bytes saved first);
/// - a file whose name is not the segment its header holds (renamed or
///   swapped by hand) is renamed back; a second copy of a segment is moved
///   aside;
/// - a missing segment, an unlisted one, a lost tail or a damaged manifest:
///   the manifest is rewritten to list what is there (accepting the loss,
///   which the problem's text names).
///
/// The queue must not be open elsewhere.
pub fn repair(storage: &dyn Storage) -> Result<RepairReport> {
    let mut report = RepairReport::default();
    let mut seen = BTreeSet::new();
    loop {
        let s = scan(storage, ScanMode::Check)?;
        let Some(p) = s.problems.first().cloned() else {
            return Ok(report);
        };
        if !seen.insert((p.name.clone(), p.offset, p.kind as u8)) {
            return Err(p.to_error());
        }
        let io = |op, e| Error::io(&p.segment, op, e);
        match p.kind {
            ProblemKind::MissingSegment | ProblemKind::Unlisted | ProblemKind::TailLost | ProblemKind::Manifest => {
                rewrite_manifest(storage, &s)?;
            }
            ProblemKind::Misnamed => rename_to(storage, &p.name, &seg_name(p.target), &s)?,
            ProblemKind::Duplicate => {
                let q = set_aside(storage, &p.name)?;
                report.quarantined.push(q);
            }
            ProblemKind::SegmentHeader => {
                let file = storage.open(&p.name).map_err(|e| io("open", e))?;
                let len = file.len().map_err(|e| io("stat", e))?;
                if len < SEGMENT_HEADER_LEN + RECORD_HEADER_LEN as u64 {
                    // Nothing in it can be a record: its messages are gone.
                    // Moved aside; the manifest then reports them missing.
                    drop(file);
                    let q = set_aside(storage, &p.name)?;
                    report.quarantined.push(q);
                } else {
                    let seq = parse_name(&p.name, "seg-").unwrap_or(0);
                    // A size that is not a whole segment is mended next
                    // (as a `Size` problem).
                    let size = len.next_multiple_of(4096).max(4 * SEGMENT_HEADER_LEN);
                    let h = SegmentHeader { segment_size: size, seq, id_floor: 0, created_ns: 0 };
                    file.write_at(&h.encode(), 0).map_err(|e| io("write", e))?;
                    file.sync_data().map_err(|e| io("fdatasync", e))?;
                }
            }
            ProblemKind::Size => {
                let file = storage.open(&p.name).map_err(|e| io("open", e))?;
                let len = file.len().map_err(|e| io("stat", e))?;
                if len > p.target {
                    if let Some(q) = save_extra(storage, &p, &*file, len)? {
                        report.quarantined.push(q);
                    }
                }
                file.set_len(p.target).map_err(|e| io("truncate", e))?;
                file.sync_data().map_err(|e| io("fdatasync", e))?;
            }
            ProblemKind::DeleteFlag => {
                let file = storage.open(&p.name).map_err(|e| io("open", e))?;
                file.write_at(&[LIVE], p.offset + DELETE_FLAG_OFFSET).map_err(|e| io("write", e))?;
                file.sync_data().map_err(|e| io("fdatasync", e))?;
            }
            ProblemKind::Region => {
                let file = storage.open(&p.name).map_err(|e| io("open", e))?;
                let size = file.len().map_err(|e| io("stat", e))?;
                let end = p.resume.unwrap_or(size).max(p.offset);
                let mut bad = Vec::new();
                bad.try_reserve_exact((end - p.offset) as usize).map_err(|_| {
                    io("read", std::io::Error::new(std::io::ErrorKind::OutOfMemory, "damaged region too large to hold in memory"))
                })?;
                bad.resize((end - p.offset) as usize, 0);
                let n = read_full(&*file, &mut bad, p.offset).map_err(|e| io("read", e))?;
                bad.truncate(n);
                let used = bad.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
                report.quarantined.push(quarantine(storage, &p, &bad[..used])?);
                cover(&*file, &p, &bad).map_err(|e| io("write", e))?;
                file.sync_data().map_err(|e| io("fdatasync", e))?;
            }
        }
        storage.sync_dir().map_err(|e| Error::io(storage.path(""), "fsync", e))?;
        report.mended.push(p);
    }
}

/// A name for a new quarantine file, `quarantine-<stem>.bin` or, if taken
/// (an earlier repair's, or anything else), `quarantine-<stem>.<n>.bin`:
/// saved bytes never overwrite a file.
fn quarantine_name(storage: &dyn Storage, stem: &str) -> Result<String> {
    let names = storage.list().map_err(|e| Error::io(storage.path(""), "list", e))?;
    let mut qname = format!("quarantine-{stem}.bin");
    let mut n = 1;
    while names.contains(&qname) {
        qname = format!("quarantine-{stem}.{n}.bin");
        n += 1;
    }
    Ok(qname)
}

/// Saves `bytes` (damaged, or cut off) to a new
/// `quarantine-<segment>-<offset>.bin` (created, never opened: a file or
/// link planted under that name is not written through).
fn quarantine(storage: &dyn Storage, p: &Problem, bytes: &[u8]) -> Result<PathBuf> {
    let qname = quarantine_name(storage, &format!("{}-{}", p.name.trim_end_matches(".fq"), p.offset))?;
    let qpath = storage.path(&qname);
    let q = storage.create_new(&qname).map_err(|e| Error::io(&qpath, "create", e))?;
    q.write_at(bytes, 0)
        .and_then(|_| q.sync_data())
        .map_err(|e| Error::io(&qpath, "write", e))?;
    Ok(qpath)
}

/// Saves the non-zero bytes of `file` past its segment size (`p.target`)
/// to a new quarantine file, at the same offsets from its start, reading
/// 1 MiB at a time and skipping holes: a segment extended (sparse) to a
/// terabyte is mended without holding, or reading, the terabyte. Returns
/// the quarantine file, if any byte was non-zero.
fn save_extra(storage: &dyn Storage, p: &Problem, file: &dyn StorageFile, len: u64) -> Result<Option<PathBuf>> {
    let io = |op, e| Error::io(&p.segment, op, e);
    let mut block = vec![0u8; 1 << 20];
    let mut saved: Option<(PathBuf, std::sync::Arc<dyn StorageFile>)> = None;
    let mut at = p.target;
    while at < len {
        let Some(data) = file.next_data(at).map_err(|e| io("seek", e))? else { break };
        if data >= len {
            break;
        }
        // Blocks aligned to 1 MiB from the segment's end.
        at = p.target + (data - p.target) / block.len() as u64 * block.len() as u64;
        let want = ((len - at) as usize).min(block.len());
        let n = read_full(file, &mut block[..want], at).map_err(|e| io("read", e))?;
        if n == 0 {
            break;
        }
        if block[..n].iter().any(|&b| b != 0) {
            if saved.is_none() {
                let qname = quarantine_name(storage, &format!("{}-{}", p.name.trim_end_matches(".fq"), p.offset))?;
                let qpath = storage.path(&qname);
                let q = storage.create_new(&qname).map_err(|e| Error::io(&qpath, "create", e))?;
                saved = Some((qpath, q));
            }
            let (qpath, q) = saved.as_ref().unwrap();
            q.write_at(&block[..n], at - p.target).map_err(|e| Error::io(qpath, "write", e))?;
        }
        at += n as u64;
    }
    match saved {
        Some((qpath, q)) => {
            q.sync_data().map_err(|e| Error::io(&qpath, "fdatasync", e))?;
            Ok(Some(qpath))
        }
        None => Ok(None),
    }
}

/// Covers a damaged region with a padding record, which keeps the batch
/// order the scan relies on (the bytes stay inside it as they were); a
/// region shorter than a record header is zeroed.
fn cover(file: &dyn StorageFile, p: &Problem, bad: &[u8]) -> std::io::Result<()> {
    let mut cover = Vec::with_capacity(bad.len());
    if bad.len() >= RECORD_HEADER_LEN {
        let seq = parse_name(&p.name, "seg-").unwrap_or(0);
        let flags = if p.pad_end { FLAG_BATCH_END } else { 0 } | if p.resume.is_none() { FLAG_SEAL } else { 0 };
        let pad = RecordHeader::padding(flags, seq, p.pad_batch);
        let body = (bad.len() - RECORD_HEADER_LEN) / RECORD_ALIGN * RECORD_ALIGN;
        pad.encode(&bad[RECORD_HEADER_LEN..RECORD_HEADER_LEN + body], &mut cover);
    }
    cover.resize(bad.len(), 0);
    file.write_at(&cover, p.offset)
}

/// Moves a whole file aside as `quarantine-<name>.bin` (kept, never read).
fn set_aside(storage: &dyn Storage, name: &str) -> Result<PathBuf> {
    let qname = quarantine_name(storage, name.trim_end_matches(".fq"))?;
    storage.rename(name, &qname).map_err(|e| Error::io(storage.path(name), "rename", e))?;
    Ok(storage.path(&qname))
}

/// Renames `from` to `to`; if `to` is taken (two names swapped), its file
/// is first moved to a free segment name: its header still says which
/// segment it holds, so the next round of the repair renames it back.
fn rename_to(storage: &dyn Storage, from: &str, to: &str, s: &Scan) -> Result<()> {
    let names = storage.list().map_err(|e| Error::io(storage.path(""), "list", e))?;
    if names.iter().any(|n| n == to) {
        let mut park = s.next_seq;
        while names.contains(&seg_name(park)) {
            park += 1;
        }
        storage.rename(to, &seg_name(park)).map_err(|e| Error::io(storage.path(to), "rename", e))?;
    }
    storage.rename(from, to).map_err(|e| Error::io(storage.path(from), "rename", e))
}

/// Writes a manifest listing the segments the scan found.
fn rewrite_manifest(storage: &dyn Storage, s: &Scan) -> Result<()> {
    let m = Manifest {
        generation: s.manifest.as_ref().map_or(0, |m| m.generation) + 1,
        clean: None,
        segments: s.segments.iter().map(|g| g.seq).collect(),
    };
    manifest::write(storage, &m).map_err(|e| Error::io(storage.path(manifest::MANIFEST), "write", e))
}

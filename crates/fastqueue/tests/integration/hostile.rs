//! The cases of issue 11, part 4, found by using the queue as a hostile
//! user would: files cut, deleted, renamed or grown by hand, absurd
//! arguments, a deleted directory. Each is reproduced as the issue
//! describes it and must give a clear error or a repair that keeps every
//! intact message, never a panic.

use std::collections::BTreeSet;
use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use fastqueue::sim::SimStorage;
use fastqueue::{Config, Error, FastQueue, ProblemKind};

use super::drain;

/// The issue's queue: 200 messages of 1,000 bytes in 64 KiB segments
/// (four segments, 57 messages in a full one).
fn issue_queue(dir: &Path) -> Vec<u64> {
    let q = FastQueue::open(dir, cfg()).unwrap();
    let ids = (0..200u32).map(|i| q.enqueue(&[(i % 251) as u8; 1000]).unwrap()).collect();
    q.close().unwrap();
    ids
}

fn cfg() -> Config {
    Config { segment_size: 65536, batch_delay: Duration::ZERO, ..Config::default() }
}

fn seg(dir: &Path, n: u64) -> PathBuf {
    dir.join(format!("seg-{n:016x}.fq"))
}

fn truncate(path: &Path, len: u64) {
    OpenOptions::new().write(true).open(path).unwrap().set_len(len).unwrap();
}

fn ids_in(dir: &Path) -> BTreeSet<u64> {
    let q = FastQueue::open(dir, cfg()).unwrap();
    drain(&q).iter().map(|m| m.id).collect()
}

fn kinds(dir: &Path) -> Vec<ProblemKind> {
    fastqueue::check(dir).unwrap().problems.iter().map(|p| p.kind).collect()
}

/// `truncate -s 0` (and other lengths under 4 KiB) of a middle segment:
/// repair used to panic ("capacity overflow") and leave the queue
/// unopenable. Now check names the lost ids, repair moves the empty file
/// aside, a second repair has nothing to do, and the other segments'
/// messages are all there.
#[test]
fn repair_of_a_segment_cut_under_4_kib() {
    for len in [0u64, 40, 1000, 4095] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let ids = issue_queue(dir);
        let seg2: BTreeSet<u64> = ids[57..114].iter().copied().collect();
        truncate(&seg(dir, 2), len);
        assert!(FastQueue::open(dir, cfg()).is_err(), "len {len}: opened a damaged queue");
        assert!(!kinds(dir).is_empty());
        let r = fastqueue::repair(dir).unwrap_or_else(|e| panic!("len {len}: repair failed: {e}"));
        let text: Vec<String> = r.mended.iter().map(|p| p.reason.clone()).collect();
        assert!(
            text.iter().any(|t| t.contains("message ids 58 to 114")),
            "len {len}: the lost ids are not named: {text:?}"
        );
        // A second repair: nothing left to do.
        assert!(fastqueue::repair(dir).unwrap().mended.is_empty(), "len {len}");
        assert!(kinds(dir).is_empty());
        let want: BTreeSet<u64> = ids.iter().copied().filter(|id| !seg2.contains(id)).collect();
        assert_eq!(ids_in(dir), want, "len {len}");
    }
}

/// `truncate -s 32768` of the newest segment: three durable messages gone;
/// check used to call it a torn tail of 0 records and say ok.
#[test]
fn check_reports_a_cut_newest_segment() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let ids = issue_queue(dir);
    truncate(&seg(dir, 4), 32768);
    let report = fastqueue::check(dir).unwrap();
    let kinds: Vec<ProblemKind> = report.problems.iter().map(|p| p.kind).collect();
    assert!(kinds.contains(&ProblemKind::Size), "{:?}", report.problems);
    assert!(kinds.contains(&ProblemKind::TailLost), "{:?}", report.problems);
    let size = &report.problems.iter().find(|p| p.kind == ProblemKind::Size).unwrap();
    assert!(size.reason.contains("32768") && size.reason.contains("65536"), "{}", size.reason);
    let err = FastQueue::open(dir, cfg()).err().unwrap();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    fastqueue::repair(dir).unwrap();
    assert!(fastqueue::check(dir).unwrap().problems.is_empty());
    // Segment 4 starts with message 172; records up to byte 32768 survive.
    let got = ids_in(dir);
    assert!(got.len() < 200 && ids[..171].iter().all(|id| got.contains(id)), "{}", got.len());
}

/// A zeroed tail, the file size kept: only the clean-close mark of the
/// manifest can tell (the same bytes a crash before the sync leaves).
#[test]
fn check_reports_a_zeroed_tail_after_a_clean_close() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    issue_queue(dir);
    truncate(&seg(dir, 4), 32768);
    truncate(&seg(dir, 4), 65536);
    assert_eq!(kinds(dir), [ProblemKind::TailLost]);
    assert!(FastQueue::open(dir, cfg()).is_err());
}

/// Deleting a middle segment lost 57 messages and check said "ok".
#[test]
fn check_reports_a_deleted_middle_segment_and_its_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let ids = issue_queue(dir);
    std::fs::remove_file(seg(dir, 2)).unwrap();
    let report = fastqueue::check(dir).unwrap();
    assert_eq!(report.problems.len(), 1, "{:?}", report.problems);
    let p = &report.problems[0];
    assert_eq!(p.kind, ProblemKind::MissingSegment);
    assert!(p.reason.contains("message ids 58 to 114"), "{}", p.reason);
    let err = FastQueue::open(dir, cfg()).err().unwrap();
    assert!(err.to_string().contains("missing"), "{err}");
    fastqueue::repair(dir).unwrap();
    let want: BTreeSet<u64> = ids[..57].iter().chain(&ids[114..]).copied().collect();
    assert_eq!(ids_in(dir), want);
}

/// Swapped segment names: repair used to quarantine 94 intact messages.
#[test]
fn repair_of_swapped_names_keeps_every_message() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let ids = issue_queue(dir);
    let tmpname = dir.join("x");
    std::fs::rename(seg(dir, 2), &tmpname).unwrap();
    std::fs::rename(seg(dir, 3), seg(dir, 2)).unwrap();
    std::fs::rename(&tmpname, seg(dir, 3)).unwrap();
    assert!(kinds(dir).iter().all(|k| *k == ProblemKind::Misnamed), "{:?}", kinds(dir));
    assert!(FastQueue::open(dir, cfg()).err().unwrap().to_string().contains("renamed"));
    let r = fastqueue::repair(dir).unwrap();
    assert!(r.quarantined.is_empty(), "{:?}", r.quarantined);
    assert_eq!(ids_in(dir), ids.iter().copied().collect());
}

/// A segment file grown by hand, and one whose grown part holds data.
#[test]
fn a_segment_file_of_the_wrong_size_is_refused_and_repaired() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let ids = issue_queue(dir);
    truncate(&seg(dir, 1), 100_000);
    let err = FastQueue::open(dir, cfg()).err().unwrap();
    assert!(err.to_string().contains("100000 bytes but its header says 65536"), "{err}");
    std::fs::write(dir.join("junk"), b"").unwrap();
    {
        use std::os::unix::fs::FileExt;
        let f = OpenOptions::new().write(true).open(seg(dir, 1)).unwrap();
        f.write_all_at(b"extra", 70_000).unwrap();
    }
    let r = fastqueue::repair(dir).unwrap();
    assert_eq!(r.quarantined.len(), 1, "non-zero extra bytes are saved");
    assert_eq!(std::fs::metadata(seg(dir, 1)).unwrap().len(), 65536);
    assert_eq!(ids_in(dir), ids.iter().copied().collect());
}

/// A segment file the manifest does not list, older than the newest: kept
/// (repair lists it), never silently taken or dropped.
#[test]
fn an_unlisted_segment_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let ids = issue_queue(dir);
    let manifest = std::fs::read(dir.join("MANIFEST")).unwrap();
    std::fs::remove_file(seg(dir, 2)).unwrap();
    fastqueue::repair(dir).unwrap();
    // The file comes back (from a backup, say) after the repair.
    let again = tempfile::tempdir().unwrap();
    issue_queue(again.path());
    std::fs::copy(seg(again.path(), 2), seg(dir, 2)).unwrap();
    assert_eq!(kinds(dir), [ProblemKind::Unlisted]);
    fastqueue::repair(dir).unwrap();
    assert_eq!(ids_in(dir), ids.iter().copied().collect());
    // A damaged manifest is reported, and rebuilt by repair.
    let mut bad = manifest;
    bad[20] ^= 1;
    std::fs::write(dir.join("MANIFEST"), bad).unwrap();
    assert_eq!(kinds(dir), [ProblemKind::Manifest]);
    fastqueue::repair(dir).unwrap();
    assert!(kinds(dir).is_empty());
}

/// The queue directory deleted while open: enqueue used to return success
/// for messages written into deleted files.
#[test]
fn enqueue_into_a_deleted_directory_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("q");
    // No spare segments: the background allocator would race with
    // remove_dir_all.
    let q = FastQueue::open(&dir, Config { spare_segments: 0, ..cfg() }).unwrap();
    q.enqueue(b"before").unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let err = q.enqueue(b"after").expect_err("enqueue into a deleted queue succeeded");
    assert!(err.to_string().contains("deleted while the queue was open"), "{err}");
    assert!(q.enqueue(b"again").is_err());
}

/// An empty path, absurd reservations and spare counts.
#[test]
fn absurd_arguments_get_clear_errors() {
    let cwd_lock = Path::new("LOCK").exists();
    let err = FastQueue::open("", cfg()).err().unwrap();
    assert!(matches!(err, Error::Invalid { field: "path", .. }), "{err}");
    assert!(matches!(fastqueue::check(Path::new("")), Err(Error::Invalid { field: "path", .. })));
    assert_eq!(Path::new("LOCK").exists(), cwd_lock, "a LOCK file appeared in the current directory");

    let tmp = tempfile::tempdir().unwrap();
    let err = FastQueue::open(tmp.path(), Config { spare_segments: 1_000_000_000, ..cfg() }).err().unwrap();
    assert!(matches!(err, Error::Invalid { field: "spare_segments", .. }), "{err}");
    // Within the limits but more than the disk holds (a simulated disk
    // with 10 MiB free: never try this on a real one): refused before a
    // byte is written.
    let sim = SimStorage::new();
    sim.set_available(Some(10 << 20));
    let spares = Config { spare_segments: 1000, ..cfg() };
    let err = FastQueue::open_with(Arc::new(sim.clone()), spares).err().unwrap();
    assert!(matches!(err, Error::Invalid { field: "spare_segments", .. }), "{err}");
    assert!(err.to_string().contains("free"), "{err}");
    let huge = Config { segment_size: 1 << 30, ..cfg() };
    let err = FastQueue::open_with(Arc::new(sim.clone()), huge).err().unwrap();
    assert!(matches!(err, Error::Invalid { field: "segment_size", .. }), "{err}");
    assert!(sim.read_file("seg-0000000000000001.fq").is_none() && sim.steps() < 10, "{}", sim.steps());

    let q = FastQueue::open(tmp.path(), cfg()).unwrap();
    for count in [1_000_000_000_000usize, usize::MAX] {
        let err = q.reserve_segments(count).err().unwrap();
        assert!(matches!(err, Error::Invalid { field: "count", .. }), "{err}");
    }
    q.reserve_segments(3).unwrap();
    assert_eq!(q.stats().free_segments, 3);
    let err = Config { visibility_timeout: Some(Duration::ZERO), ..cfg() }.validate().err().unwrap();
    assert!(err.to_string().contains("visibility_timeout"), "{err}");
}

// --- issue 27: the queue directory damaged as a file system allows ------

/// Runs `f` on a thread of its own; panics if it has not returned after
/// 20 s (a guard against the hangs these tests pin, not a measure).
fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20)).unwrap_or_else(|_| panic!("{what} never returned"))
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string; no memory is kept.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// `repair` used to follow a `quarantine-*.bin` symlink planted under the
/// name it was about to use and overwrite the file it pointed to (any
/// file, as root). Now the saved bytes go to a new file of another name;
/// the link and its target are left alone.
#[test]
fn r27_repair_does_not_write_through_a_planted_quarantine_link() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("q");
    issue_queue(&dir);
    let mut seg1 = std::fs::read(seg(&dir, 1)).unwrap();
    seg1[4096 + 3 * 1064 + 100] ^= 0xFF; // a payload byte of the 4th record
    std::fs::write(seg(&dir, 1), &seg1).unwrap();
    let p = fastqueue::check(&dir).unwrap().problems.remove(0);
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let planted = dir.join(format!("quarantine-seg-0000000000000001-{}.bin", p.offset));
    std::os::unix::fs::symlink(&victim, &planted).unwrap();
    let r = fastqueue::repair(&dir).unwrap();
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    assert!(std::fs::symlink_metadata(&planted).unwrap().file_type().is_symlink());
    assert_eq!(r.quarantined.len(), 1);
    assert_ne!(r.quarantined[0], planted);
    assert!(fastqueue::check(&dir).unwrap().problems.is_empty());
}

/// `check`, `repair` and the open used to wait forever on a FIFO used as
/// the manifest or as a segment; now each refuses it at once, naming it.
#[test]
fn r27_a_fifo_in_the_queue_is_refused_at_once() {
    for name in ["MANIFEST", "seg-0000000000000002.fq", "LOCK"] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        issue_queue(&dir);
        let path = dir.join(name);
        std::fs::remove_file(&path).unwrap();
        mkfifo(&path);
        let d = dir.clone();
        let e = within("check", move || fastqueue::check(&d)).unwrap_err().to_string();
        assert!(e.contains(name) && e.contains("FIFO"), "{name}: {e}");
        let d = dir.clone();
        let e = within("repair", move || fastqueue::repair(&d)).unwrap_err().to_string();
        assert!(e.contains(name) && e.contains("FIFO"), "{name}: {e}");
        let d = dir.clone();
        let e = within("open", move || FastQueue::open(&d, cfg()).err().unwrap()).to_string();
        assert!(e.contains(name) && e.contains("FIFO"), "{name}: {e}");
    }
}

/// A symbolic link as a segment is refused, not followed.
#[test]
fn r27_a_segment_that_is_a_link_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("q");
    issue_queue(&dir);
    let outside = tmp.path().join("outside.fq");
    std::fs::rename(seg(&dir, 2), &outside).unwrap();
    std::os::unix::fs::symlink(&outside, seg(&dir, 2)).unwrap();
    let e = fastqueue::check(&dir).unwrap_err().to_string();
    assert!(e.contains("seg-0000000000000002.fq") && e.contains("symbolic link"), "{e}");
    let e = FastQueue::open(&dir, cfg()).err().unwrap().to_string();
    assert!(e.contains("symbolic link"), "{e}");
}

/// A segment extended (sparse) to 1 TiB: `check` used to abort
/// ("memory allocation of 1099511627776 bytes failed"). Now it reads the
/// segment's own 64 KiB and reports the added bytes; repair cuts them off,
/// saving the one non-zero byte at its offset (the holes are skipped, not
/// read), and every message is kept.
#[test]
fn r27_a_segment_extended_to_a_tebibyte() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("q");
    let ids = issue_queue(&dir);
    let f = OpenOptions::new().write(true).open(seg(&dir, 2)).unwrap();
    f.set_len(1 << 40).unwrap();
    std::os::unix::fs::FileExt::write_at(&f, b"!", (1 << 40) - 1).unwrap();
    drop(f);
    let r = fastqueue::check(&dir).unwrap();
    assert_eq!(kinds(&dir), vec![ProblemKind::Size]);
    assert!(r.problems[0].reason.contains("bytes were added"), "{}", r.problems[0].reason);
    let done = fastqueue::repair(&dir).unwrap();
    assert_eq!(done.quarantined.len(), 1);
    let q = std::fs::File::open(&done.quarantined[0]).unwrap();
    let mut b = [0u8; 1];
    std::os::unix::fs::FileExt::read_exact_at(&q, &mut b, (1 << 40) - 1 - 65536).unwrap();
    assert_eq!(&b, b"!");
    assert_eq!(std::fs::metadata(seg(&dir, 2)).unwrap().len(), 65536);
    assert_eq!(ids_in(&dir), ids.into_iter().collect());
}

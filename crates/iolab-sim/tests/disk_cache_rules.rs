//! The drive's buffer and controller rules, one at a time, on the HP 97560
//! preset (72 sectors per track, 19 tracks per cylinder, 4002 rpm: a
//! sector passes in 0.208 ms, a revolution in 15 ms) with one parameter
//! changed per test. Each test sets up the situation a rule is about and
//! checks the outcome (hit or miss) or a time difference the rule makes.

use iolab_sim::disk::cache::{FastWrite, ReadAhead};
use iolab_sim::disk::hdd::{Hdd, HddParams};
use iolab_sim::disk::{presets, CacheOutcome, Disk, Service};
use iolab_sim::request::{Dir, Request};
use iolab_sim::time::SimTime;

const TRACK: u64 = 72;
const CYLINDER: u64 = 72 * 19;
const MS: u64 = 1_000_000;

/// A drive and a clock: each request starts when the previous one ended
/// plus an idle gap.
struct Bench {
    d: Hdd,
    now: u64,
}

impl Bench {
    fn new(change: impl FnOnce(&mut HddParams)) -> Bench {
        let mut p = presets::hp97560_params();
        change(&mut p);
        Bench { d: Hdd::new(p).unwrap(), now: 0 }
    }
    fn go(&mut self, dir: Dir, lbn: u64, n: u32, idle_ms: u64) -> Service {
        self.now += idle_ms * MS;
        let rq = Request { id: 0, pid: 0, sector: lbn, nr_sectors: n, dir, sync: true, arrival: SimTime(self.now) };
        let s = self.d.service(&rq, SimTime(self.now));
        self.now += s.total_ns;
        s
    }
    fn read(&mut self, lbn: u64, n: u32, idle_ms: u64) -> Service {
        self.go(Dir::Read, lbn, n, idle_ms)
    }
    fn write(&mut self, lbn: u64, n: u32, idle_ms: u64) -> Service {
        self.go(Dir::Write, lbn, n, idle_ms)
    }
}

/// After a read of 8 sectors at LBN 10 and a second of idle time, what a
/// one-sector read at `probe` finds, under read-ahead policy `policy`.
fn after_read_ahead(policy: ReadAhead, max_read_ahead: u32, probe: u64) -> CacheOutcome {
    let mut b = Bench::new(|p| {
        p.cache.segments = 1;
        p.cache.segment_sectors = 4096;
        p.cache.read_ahead = policy;
        p.cache.max_read_ahead = max_read_ahead;
    });
    assert_eq!(b.read(10, 8, 0).cache, CacheOutcome::Miss);
    b.read(probe, 1, 1000).cache
}

#[test]
fn read_ahead_stops_where_the_policy_says() {
    use CacheOutcome::{Hit, Miss};
    assert_eq!(after_read_ahead(ReadAhead::Off, 0, 18), Miss, "no read-ahead");
    assert_eq!(after_read_ahead(ReadAhead::TrackEnd, 0, TRACK - 1), Hit);
    assert_eq!(after_read_ahead(ReadAhead::TrackEnd, 0, TRACK), Miss, "the next track is not read");
    assert_eq!(after_read_ahead(ReadAhead::CylinderEnd, 0, CYLINDER - 1), Hit);
    assert_eq!(after_read_ahead(ReadAhead::CylinderEnd, 0, CYLINDER), Miss, "the next cylinder is not read");
    // Segment-full with "Maximum read-ahead" 200: 200 sectors past the
    // request's end (LBN 18), over track boundaries.
    assert_eq!(after_read_ahead(ReadAhead::SegmentFull, 200, 217), Hit);
    assert_eq!(after_read_ahead(ReadAhead::SegmentFull, 200, 218), Miss);
    // DEC's scheme: to the end of the request's track, no further.
    assert_eq!(after_read_ahead(ReadAhead::DecTrackAhead, 0, TRACK - 1), Hit);
    assert_eq!(after_read_ahead(ReadAhead::DecTrackAhead, 0, TRACK), Miss);
}

#[test]
fn a_sequential_stream_keeps_dec_read_ahead_a_track_ahead() {
    // (A probe that hits restarts the read-ahead, so each probe gets a
    // fresh drive.)
    let stream_then = |probe: u64| {
        let mut b = Bench::new(|p| {
            p.cache.segments = 1;
            p.cache.segment_sectors = 4096;
            p.cache.read_ahead = ReadAhead::DecTrackAhead;
        });
        b.read(60, 8, 0); // ends on track 0; read-ahead to the end of track 0
        // Crossing into track 1 (a partial hit): the segment now reaches
        // back before the request's track, a stream, so the read-ahead
        // goes one track beyond it, to the end of track 2.
        assert_eq!(b.read(68, 8, 1000).cache, CacheOutcome::Partial);
        b.read(probe, 1, 1000).cache
    };
    assert_eq!(stream_then(3 * TRACK - 1), CacheOutcome::Hit);
    assert_eq!(stream_then(3 * TRACK), CacheOutcome::Miss);
}

#[test]
fn minimum_read_ahead_delays_the_next_request() {
    // A read elsewhere right after a read miss stops the read-ahead at
    // once, unless "Minimum read-ahead" sectors must be read first.
    let cost = |min: u32| {
        let mut b = Bench::new(|p| p.cache.min_read_ahead = min);
        b.read(10, 8, 0);
        b.read(500_000, 8, 0).total_ns
    };
    let (free, held) = (cost(0), cost(2 * TRACK as u32));
    // Reading 144 sectors takes two revolutions (30 ms); the far request
    // may lose part of it to its own rotational wait, not all.
    assert!(held > free + 10 * MS, "min read-ahead 144: {held} ns vs none: {free} ns");
}

#[test]
fn write_back_reports_at_once_and_the_flush_waits_for_the_media() {
    let mut wb = Bench::new(|p| p.cache.fast_write = FastWrite::Full);
    let mut wt = Bench::new(|_| {});
    let fast = wb.write(300_000, 64, 0);
    let slow = wt.write(300_000, 64, 0);
    assert_eq!((fast.cache, slow.cache), (CacheOutcome::Hit, CacheOutcome::Miss));
    // Write-back: overhead plus 64 blocks over the bus, no seek or media.
    assert!(fast.total_ns < slow.total_ns - 10 * MS, "{fast:?} vs {slow:?}");
    // The media pass goes on after the report: a flush waits for it, a
    // read elsewhere too (it needs the arm); later flushes are free.
    let mut wb2 = Bench::new(|p| p.cache.fast_write = FastWrite::Full);
    wb2.write(300_000, 64, 0);
    let f = wb2.d.flush(SimTime(wb2.now));
    assert!(f.total_ns > 5 * MS, "{f:?}");
    assert_eq!(wb2.d.flush(SimTime(wb2.now + f.total_ns)).total_ns, 0);
    let after_write = wb.read(1_000_000, 8, 0).total_ns;
    let mut idle = Bench::new(|p| p.cache.fast_write = FastWrite::Full);
    idle.write(300_000, 64, 0);
    let after_idle = idle.read(1_000_000, 8, 1000).total_ns;
    assert!(after_write > after_idle, "{after_write} vs {after_idle}");
    // Write-through: a flush has nothing to wait for.
    assert_eq!(wt.d.flush(SimTime(wt.now)).total_ns, 0);
}

#[test]
fn sequential_writes_append_to_the_segment_being_written_back() {
    let mut b = Bench::new(|p| p.cache.fast_write = FastWrite::Full);
    b.write(300_000, 16, 0);
    // The next write follows on: it joins the write-back in the same
    // segment without waiting for it (no seek, reported at once).
    let s = b.write(300_016, 16, 0);
    assert_eq!(s.cache, CacheOutcome::Hit);
    assert_eq!(s.seek_ns, 0);
    assert!(s.total_ns < 5 * MS, "{s:?}");
    // A write elsewhere waits for the write-back to end first.
    let far = b.write(900_000, 16, 0);
    assert!(far.total_ns > s.total_ns + 2 * MS, "{far:?} vs {s:?}");
}

#[test]
fn reads_hit_written_data_only_when_allowed() {
    for (allowed, want) in [(true, CacheOutcome::Hit), (false, CacheOutcome::Miss)] {
        let mut b = Bench::new(|p| p.cache.read_hits_on_write_data = allowed);
        b.write(200_000, 16, 0);
        assert_eq!(b.read(200_004, 4, 10).cache, want, "read hits on write data = {allowed}");
    }
}

#[test]
fn read_any_free_keeps_what_passes_under_the_head() {
    // Reading the last sector of a track after a seek, the head lands
    // somewhere on the track and waits for it; with "Read any free blocks"
    // the sectors passing meanwhile are buffered, so the one before it
    // hits. Several start times, so that the landing point varies; when
    // the head lands right on the sector (no wait), nothing passed.
    for any_free in [true, false] {
        let (mut waited, mut hits) = (0, 0);
        for k in 0..6u64 {
            let mut b = Bench::new(|p| {
                p.cache.read_any_free = any_free;
                p.cache.read_ahead = ReadAhead::Off;
            });
            b.now = k * 3 * MS;
            let lbn = 200 * CYLINDER + 5 * TRACK + TRACK - 1;
            let first = b.read(lbn, 1, 0);
            waited += (first.rotation_ns > 300_000) as u32;
            hits += (b.read(lbn - 1, 1, 1).cache == CacheOutcome::Hit) as u32;
        }
        assert!(waited >= 4);
        assert_eq!(hits, if any_free { waited } else { 0 }, "read any free = {any_free}");
    }
}

#[test]
fn segments_keep_separate_streams() {
    // Two interleaved sequential streams, 20 ms apart (time for a track
    // of read-ahead): two segments keep both read ahead; one segment is
    // taken by each stream in turn.
    let hits = |segments: u32| {
        let mut b = Bench::new(|p| p.cache.segments = segments);
        let mut hits = 0;
        for i in 0..10u64 {
            for base in [100_000u64, 900_000] {
                hits += (b.read(base + 8 * i, 8, 20).cache == CacheOutcome::Hit) as u32;
            }
        }
        hits
    };
    assert!(hits(2) >= 18, "{}", hits(2));
    assert_eq!(hits(1), 0);
}

#[test]
fn a_dedicated_write_segment_spares_the_read_segment() {
    let reread = |dedicated: bool, segments: u32| {
        let mut b = Bench::new(|p| {
            p.cache.segments = segments;
            p.cache.dedicated_write_segment = dedicated;
        });
        b.read(100_000, 8, 0);
        b.write(700_000, 8, 100);
        b.read(100_008, 8, 0).cache
    };
    assert_eq!(reread(true, 2), CacheOutcome::Hit);
    assert_eq!(reread(false, 1), CacheOutcome::Miss, "the write took the only segment");
}

#[test]
fn a_drive_that_disconnects_pays_the_reselection() {
    // A one-sector read miss: the drive disconnects during the seek and
    // reselects (1 ms here) once the sector is read, to send it; a drive
    // that never disconnects sends it at once.
    let cost = |never: bool| {
        let mut b = Bench::new(|p| {
            p.controller.reselect_first_ms = 1.0;
            p.controller.never_disconnect = never;
        });
        b.read(500_000, 1, 0).total_ns
    };
    let (stay, leave) = (cost(true), cost(false));
    assert!(leave >= stay + MS - 1000 && leave <= stay + MS + 1000, "disconnecting {leave} vs never {stay}");
}

#[test]
fn the_read_watermark_sets_when_the_drive_reconnects() {
    // Bus slower than the media (0.5 ms a block against 0.208 ms a
    // sector), drive not holding the bus: it reconnects once the watermark
    // is buffered. A high watermark reconnects later but sends in one
    // burst; both end no earlier than the media and the bus allow.
    let end = |watermark: f64| {
        let mut b = Bench::new(|p| {
            p.controller.bus_read_block_ms = 0.5;
            p.controller.read_watermark = watermark;
            p.controller.watermark_by_request = true;
            p.controller.reselect_first_ms = 0.3;
        });
        b.read(500_000, 64, 0).total_ns
    };
    let (low, high) = (end(0.1), end(1.0));
    // High: reconnect after the media is done, then 64 blocks at 0.5 ms.
    assert!(high as f64 >= 64.0 * 0.5e6 + 64.0 * 0.208e6, "{high}");
    // Low: the bus follows the media from early on, so the transfer
    // overlaps the media and ends sooner.
    assert!(low + 10 * MS < high, "low watermark {low} vs full {high}");
}

#[test]
fn a_prefetch_stops_mid_sector_only_when_allowed() {
    // A read elsewhere arrives while the read-ahead is reading a sector:
    // with "Stop prefetch in sector" it stops at once; without, it first
    // finishes that sector (at most one sector time, 0.208 ms): the seek
    // starts that much later, which the rotational wait then absorbs.
    let start = |in_sector: bool, idle_us: u64| {
        let mut b = Bench::new(|p| p.cache.stop_prefetch_in_sector = in_sector);
        b.read(10, 8, 0);
        b.now += idle_us * 1000;
        let s = b.read(500_000, 8, 0);
        (s.rotation_ns as i64, s.total_ns)
    };
    let sector = (60e9 / 4002.0 / 72.0) as i64;
    let mut later = 0;
    for idle_us in (2_000..6_000).step_by(370) {
        let ((rot_finish, total_finish), (rot_stop, total_stop)) = (start(false, idle_us), start(true, idle_us));
        let d = rot_stop - rot_finish;
        assert!((0..=sector + 1).contains(&d), "idle {idle_us} us: {d} ns");
        assert_eq!(total_finish, total_stop, "the same sector comes round");
        later += (d > 0) as u32;
    }
    assert!(later >= 8, "{later}");
}

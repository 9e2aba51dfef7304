//! The heads over the platters: when each sector of a transfer passes
//! under the head, track by track.
//!
//! The platters turn from time 0 at a fixed speed, so the angle under the
//! heads at any instant is known; a head that reaches a track waits until
//! the sector it wants comes round (`layout.rs` gives each sector's angle).
//! A transfer is worked out a run of consecutive sectors at a time, not
//! sector by sector, so a request costs a few steps per track.
//!
//! Reads fill the buffer in LBN order: the "frontier" is the first sector
//! not yet buffered, and the bus may send only sectors before it. With
//! zero-latency reads ("Immediate buffer read", or "Read any free blocks"
//! on a request's first track) a head that lands in the middle of the
//! sectors it wants reads from there to their end first, comes round to
//! the first wanted sector, and reads up to where it landed: the frontier
//! then jumps over the part read early. This is DiskSim 4.0's behaviour.
//!
//! Writes take data from the buffer: a sector can be written only if its
//! data has arrived when the head reaches it; if not, the head comes
//! round a revolution later.

use super::layout::{Layout, Loc, RunMemo};
use std::cell::Cell;
use super::seek::Mechanics;

/// Rotations closer than this to a full turn count as no wait: the next
/// sector of a stream is exactly under the head (float rounding aside).
const SAME_ANGLE_REVS: f64 = 1e-7;

use crate::time::{fmax, fmin, frac, to_f64, trunc_u64};

/// Where the head is: on track (cylinder, head) at time `t` (absolute ns),
/// free to move or transfer.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Head {
    pub pos: (u32, u32),
    pub t: f64,
}

/// `count` sectors from LBN `first` become available (reads: buffered in
/// order; writes: on the media) at `t0 + (k+1)·st` for the k-th. A
/// frontier jump is a run with `st` = 0.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Run {
    pub first: u64,
    pub count: u64,
    pub t0: f64,
    pub st: f64,
}

impl Run {
    #[inline]
    pub fn at(&self, lbn: u64) -> f64 {
        self.t0 + to_f64(lbn - self.first + 1) * self.st
    }
    pub fn end(&self) -> u64 {
        self.first + self.count
    }
    pub fn last_time(&self) -> f64 {
        self.at(self.end() - 1)
    }
}

/// One track's read: the head after its last sector, the first LBN after
/// what was read, and when the head started passing sector after sector
/// (the landing boundary for a zero-latency read, else the first sector
/// read).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct TrackRead {
    pub head: Head,
    pub end: u64,
    pub stepping_from: f64,
}

/// What the head is doing at some instant, for deciding how a prefetch
/// stops when a new request arrives.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Phase {
    /// Moving to another track until `until`.
    Seeking { until: f64 },
    /// On the track, waiting for the first sector it wants, due at `until`.
    Waiting { until: f64 },
    /// Passing over a sector that ends at `until`.
    InSector { until: f64 },
}

/// What limits a read-ahead beyond its sector count ("Buffer continuous
/// read" 1 and 2).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Reach {
    Anywhere,
    Track,
    Cylinder,
}

/// Times the heads of one drive.
pub struct Media<'a> {
    pub layout: &'a Layout,
    /// The drive's memo of the last run located ([`Layout::locate_memo`]).
    pub memo: &'a Cell<Option<RunMemo>>,
    pub mech: &'a Mechanics,
    pub period_ns: f64,
}

impl Media<'_> {
    /// Where `lbn` is ([`Layout::locate`], through the drive's memo).
    #[inline]
    pub fn locate(&self, lbn: u64) -> Loc {
        self.layout.locate_memo(lbn, self.memo)
    }

    /// Time until the sector starting at `angle` (revolutions) comes under
    /// the head, for a head that is on the track at `t_ns`.
    #[inline]
    pub fn rot_wait(&self, t_ns: f64, angle: f64) -> f64 {
        let now = frac(t_ns / self.period_ns);
        let mut d = angle - now;
        if d < 0.0 {
            d += 1.0;
        }
        if d > 1.0 - SAME_ANGLE_REVS {
            d = 0.0;
        }
        d * self.period_ns
    }

    #[inline]
    fn sector_ns(&self, loc: &Loc) -> f64 {
        self.period_ns / loc.sectors_per_track as f64
    }

    /// Reads the sectors `from..want` that lie on the track holding `from`
    /// (the caller goes on with the next track). The head lands with a
    /// seek from where it is, unless it is `stepping`: already on this
    /// track passing sector after sector (a stream going on, so there is no
    /// new landing). `immed` asks for a zero-latency read. Pushes the
    /// frontier runs.
    pub fn read_track(&self, head: Head, from: u64, want: u64, immed: bool, stepping: bool, out: &mut Vec<Run>) -> TrackRead {
        let loc = self.locate(from);
        let arrive = head.t + self.mech.move_ns(head.pos, (loc.cyl, loc.head), false);
        self.read_track_at(head, from, loc, arrive, want, immed, stepping, out)
    }

    /// [`Media::read_track`] with `loc`, where `from` is, already known,
    /// and `arrive`, when the head is on its track: `head.t` plus
    /// `move_ns(head.pos, loc's track)`, which every caller has already
    /// worked out (a request's read for its seek time, the read-ahead's
    /// progress for its phase), so it is not worked out again here.
    ///
    /// Always inlined into its three callers: a request's read takes it
    /// once per request with most arguments known there (the first track,
    /// not stepping), and inline the call, its copies of `loc` and of the
    /// run list and the branches on those arguments go (all three
    /// schedulers on the closed C3323A load: about 70 instructions per
    /// request fewer).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn read_track_at(
        &self,
        head: Head,
        from: u64,
        loc: Loc,
        arrive: f64,
        want: u64,
        immed: bool,
        stepping: bool,
        out: &mut Vec<Run>,
    ) -> TrackRead {
        let to = (loc.cyl, loc.head);
        let stepping = stepping && head.pos == to;
        let st = self.sector_ns(&loc);
        let spt = loc.sectors_per_track as f64;
        // The sectors wanted on this track, as runs of consecutive
        // physical sectors (usually one).
        let mut runs: [(u64, u64, f64); 4] = [(0, 0, 0.0); 4];
        let mut nruns = 0;
        let mut l = from;
        let mut lc = loc;
        loop {
            let k = (lc.run as u64).min(want - l);
            runs[nruns] = (l, k, lc.angle);
            nruns += 1;
            l += k;
            if l >= want || nruns == runs.len() {
                break;
            }
            let next = self.locate(l);
            if (next.cyl, next.head) != to {
                break;
            }
            lc = next;
        }
        let end = l;
        if immed && !stepping && nruns == 1 && runs[0].1 > 1 {
            // Where does the head land, in sectors from the run's first?
            let now = (arrive / self.period_ns).fract();
            let mut off = (now - runs[0].2) * spt;
            if off < 0.0 {
                off += spt;
            }
            if off - off.floor() < 1e-6 {
                off = off.floor();
            }
            let boundary = off.ceil();
            if boundary > 0.0 && (boundary as u64) < runs[0].1 {
                // Zero latency: read from the landing boundary to the end
                // of the run, then round to the run's start and up to the
                // landing point; the frontier moves only then.
                let b = boundary as u64;
                let tb = arrive + (boundary - off) * st;
                let early_end = tb + (runs[0].1 - b) as f64 * st;
                let t_first = early_end + (spt - runs[0].1 as f64) * st;
                out.push(Run { first: from, count: b, t0: t_first, st });
                let jump_at = t_first + b as f64 * st;
                out.push(Run { first: from + b, count: runs[0].1 - b, t0: jump_at, st: 0.0 });
                return TrackRead { head: Head { pos: to, t: jump_at }, end, stepping_from: tb };
            }
        }
        let mut t = arrive;
        let mut stepping_from = if stepping { head.t } else { f64::INFINITY };
        for &(first, count, angle) in &runs[..nruns] {
            let start = t + self.rot_wait(t, angle);
            stepping_from = fmin(stepping_from, start);
            out.push(Run { first, count, t0: start, st });
            t = start + to_f64(count) * st;
        }
        TrackRead { head: Head { pos: to, t }, end, stepping_from }
    }

    /// Reads `from..want` track by track from `head`, pushing frontier
    /// runs; the first track may be read with zero latency (`immed_first`),
    /// later ones with `immed`. `stepping` as for [`Media::read_track`].
    /// Stops early when `reach` forbids leaving the track or cylinder.
    /// Returns the head and the new frontier.
    #[allow(clippy::too_many_arguments)]
    pub fn read(
        &self,
        head: Head,
        from: u64,
        want: u64,
        immed_first: bool,
        immed: bool,
        stepping: bool,
        reach: Reach,
        out: &mut Vec<Run>,
    ) -> (Head, u64) {
        if from >= want {
            return (head, from);
        }
        let loc = self.locate(from);
        let seek_ns = self.mech.move_ns(head.pos, (loc.cyl, loc.head), false);
        self.read_at(head, from, loc, seek_ns, want, immed_first, immed, stepping, reach, out)
    }

    /// [`Media::read`] of `from..want` (not empty) with `loc`, where `from`
    /// is, and `seek_ns`, the move there from `head.pos`
    /// (`move_ns(head.pos, loc's track, false)`), already known: a
    /// request's read has just located its first sector and timed the seek.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn read_at(
        &self,
        head: Head,
        from: u64,
        loc: Loc,
        seek_ns: f64,
        want: u64,
        immed_first: bool,
        immed: bool,
        stepping: bool,
        reach: Reach,
        out: &mut Vec<Run>,
    ) -> (Head, u64) {
        let r = self.read_track_at(head, from, loc, head.t + seek_ns, want, immed_first, stepping, out);
        let (mut head, mut from) = (r.head, r.end);
        while from < want {
            if self.leaves(head, from, reach) {
                break;
            }
            let r = self.read_track(head, from, want, immed, false, out);
            head = r.head;
            from = r.end;
        }
        (head, from)
    }

    /// Whether reading `lbn` next takes the head off its track or
    /// cylinder when `reach` forbids it.
    fn leaves(&self, head: Head, lbn: u64, reach: Reach) -> bool {
        if reach == Reach::Anywhere {
            return false;
        }
        let loc = self.locate(lbn);
        match reach {
            Reach::Track => (loc.cyl, loc.head) != head.pos,
            _ => loc.cyl != head.pos.0,
        }
    }

    /// Where a read stream of `from..want` (read as [`Media::read`] with
    /// `immed` on every track) has got to by `until`: the head as of the
    /// last sector read (or at `until`), the frontier, and what the head is
    /// doing at `until` (None: the stream had ended before).
    #[allow(clippy::too_many_arguments)]
    pub fn progress(
        &self,
        head: Head,
        from: u64,
        want: u64,
        immed: bool,
        stepping: bool,
        reach: Reach,
        until: f64,
        scratch: &mut Vec<Run>,
    ) -> (Head, u64, Option<Phase>) {
        let mut head = head;
        let mut from = from;
        let mut stepping = stepping;
        while from < want {
            let loc = self.locate(from);
            let to = (loc.cyl, loc.head);
            let leaves = match reach {
                Reach::Anywhere => false,
                Reach::Track => to != head.pos,
                Reach::Cylinder => loc.cyl != head.pos.0,
            };
            if leaves {
                break;
            }
            let arrive = head.t + self.mech.move_ns(head.pos, to, false);
            if until < arrive {
                return (head, from, Some(Phase::Seeking { until: arrive }));
            }
            // Usually `until` falls within the first run the head reads on
            // this track (a request arrives while the read-ahead is still on
            // the track it started on). The frontier and the phase then
            // follow from that run alone: the track's later runs start after
            // it ends, so they could move neither. Working them out would
            // cost a full locate of the next track's first sector (the run
            // list's end) on every request. The run is timed by the same
            // expressions as in `read_track_at`, so the answer is the same to
            // the bit. Not for a zero-latency read, where the order the
            // sectors come in depends on all the runs.
            let stepping_here = stepping && head.pos == to;
            if !immed || stepping_here {
                let st = self.sector_ns(&loc);
                let count = (loc.run as u64).min(want - from);
                let start = arrive + self.rot_wait(arrive, loc.angle);
                if start + to_f64(count) * st > until {
                    let frontier =
                        if start + st <= until { from + trunc_u64((until - start) / st).min(count) } else { from };
                    let stepping_from = if stepping_here { fmin(head.t, start) } else { start };
                    let phase = if until < stepping_from {
                        Phase::Waiting { until: stepping_from }
                    } else {
                        let k = to_f64(trunc_u64((until - stepping_from) / st)) + 1.0;
                        Phase::InSector { until: stepping_from + k * st }
                    };
                    return (Head { pos: to, t: until }, frontier, Some(phase));
                }
            }
            scratch.clear();
            let r = self.read_track_at(head, from, loc, arrive, want, immed, stepping, scratch);
            stepping = false;
            if r.head.t <= until {
                head = r.head;
                from = r.end;
                continue;
            }
            // Within the track: the frontier at `until`, and the phase.
            let mut frontier = from;
            for run in scratch.iter() {
                if run.first != frontier {
                    continue;
                }
                if run.st == 0.0 {
                    if run.t0 <= until {
                        frontier = run.end();
                    }
                } else if run.t0 + run.st <= until {
                    frontier = run.first + trunc_u64((until - run.t0) / run.st).min(run.count);
                }
            }
            let phase = if until < r.stepping_from {
                Phase::Waiting { until: r.stepping_from }
            } else {
                let st = self.sector_ns(&loc);
                let k = to_f64(trunc_u64((until - r.stepping_from) / st)) + 1.0;
                Phase::InSector { until: r.stepping_from + k * st }
            };
            return (Head { pos: to, t: until }, frontier, Some(phase));
        }
        (head, from, None)
    }

    /// Writes `from..want` from `head`, the data of sector `lbn` arriving
    /// in the buffer at `data(lbn)`; the first positioning takes at least
    /// `mintime_ns`. Pushes the runs as written and returns the head after
    /// the last sector.
    // Each argument is a distinct input of one write (where the head is,
    // what to write, when its data arrives, where the runs go); a struct
    // holding them would only rename them.
    #[allow(clippy::too_many_arguments)]
    pub fn write(
        &self,
        mut head: Head,
        mut from: u64,
        want: u64,
        mintime_ns: f64,
        immed: bool,
        data: &dyn Fn(u64) -> f64,
        out: &mut Vec<Run>,
    ) -> Head {
        let mut first = true;
        while from < want {
            let loc = self.locate(from);
            let to = (loc.cyl, loc.head);
            let mut mv = self.mech.move_ns(head.pos, to, true);
            if first {
                mv = mv.max(mintime_ns);
            }
            first = false;
            let mut t = head.t + mv;
            let st = self.sector_ns(&loc);
            let k = (loc.run as u64).min(want - from);
            if immed && k > 1 && data(from + k - 1) <= t {
                // All this run's data is in the buffer: write from where
                // the head lands, as for a zero-latency read.
                let spt = loc.sectors_per_track as f64;
                let now = (t / self.period_ns).fract();
                let mut off = (now - loc.angle) * spt;
                if off < 0.0 {
                    off += spt;
                }
                let boundary = off.ceil();
                if boundary > 0.0 && (boundary as u64) < k {
                    let b = boundary as u64;
                    let tb = t + (boundary - off) * st;
                    out.push(Run { first: from + b, count: k - b, t0: tb, st });
                    let t_first = tb + (k - b) as f64 * st + (spt - k as f64) * st;
                    out.push(Run { first: from, count: b, t0: t_first, st });
                    head = Head { pos: to, t: t_first + b as f64 * st };
                    from += k;
                    continue;
                }
            }
            t += self.rot_wait(t, loc.angle);
            // Sector by sector as far as the data allows; a sector whose
            // data is late costs whole revolutions.
            let mut j = 0;
            while j < k {
                let avail = data(from + j);
                if avail > t {
                    t += ((avail - t) / self.period_ns).ceil() * self.period_ns;
                }
                // Sectors j.. that can follow without waiting.
                let mut m = 1;
                while j + m < k && data(from + j + m) <= t + m as f64 * st {
                    m += 1;
                }
                out.push(Run { first: from + j, count: m, t0: t, st });
                t += m as f64 * st;
                j += m;
            }
            head = Head { pos: to, t };
            from += k;
        }
        head
    }
}

/// When sector `lbn` is available, from runs pushed in order (`before`:
/// the time for sectors before the first run, already buffered).
pub fn avail_at(runs: &[Run], lbn: u64, before: f64) -> f64 {
    let mut t = before;
    for r in runs {
        if lbn < r.first {
            continue;
        }
        if lbn < r.end() {
            return fmax(r.at(lbn), t);
        }
        t = fmax(t, r.last_time());
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::seek::SeekCurve;

    fn setup() -> (Layout, Mechanics) {
        // 10 sectors per track, 2 surfaces, no skew; 1 ms head switch.
        let l = Layout::uniform("t", 2, 10, 10, 0.0, 0.0).unwrap();
        let m = Mechanics { seek: SeekCurve::Constant(3.0), head_switch_ms: 1.0, write_settle_ms: 0.5 };
        (l, m)
    }

    const P: f64 = 10e6; // 10 ms per revolution: 1 ms per sector

    #[test]
    fn reads_wait_for_the_first_sector_then_stream() {
        let (l, m) = setup();
        let md = Media { layout: &l, memo: &Cell::new(None), mech: &m, period_ns: P };
        let mut runs = Vec::new();
        // On track (0,0) at t = 2.5 ms; sectors 5..8 start at 5 ms.
        let (h, f) = md.read(Head { pos: (0, 0), t: 2.5e6 }, 5, 8, false, false, false, Reach::Anywhere, &mut runs);
        assert_eq!(f, 8);
        assert_eq!(runs, vec![Run { first: 5, count: 3, t0: 5e6, st: 1e6 }]);
        assert_eq!(h, Head { pos: (0, 0), t: 8e6 });
        assert_eq!(avail_at(&runs, 7, 0.0), 8e6);
        // Across a track: a head switch (1 ms) to (0,1), then sector 0
        // of that track at the next revolution boundary.
        runs.clear();
        let (h, f) = md.read(Head { pos: (0, 0), t: 0.0 }, 8, 12, false, false, false, Reach::Anywhere, &mut runs);
        assert_eq!(f, 12);
        assert_eq!(runs[1], Run { first: 10, count: 2, t0: 20e6, st: 1e6 });
        assert_eq!(h.pos, (0, 1));
        // Read-ahead limited to the track stops at its end.
        runs.clear();
        let (_, f) = md.read(Head { pos: (0, 0), t: 0.0 }, 8, 12, false, false, false, Reach::Track, &mut runs);
        assert_eq!(f, 10);
    }

    #[test]
    fn zero_latency_reads_start_where_the_head_lands() {
        let (l, m) = setup();
        let md = Media { layout: &l, memo: &Cell::new(None), mech: &m, period_ns: P };
        let mut runs = Vec::new();
        // Wants sectors 2..9 of track 0; lands at 5.3 ms: reads 6, 7, 8
        // first (done by 9 ms), comes round to 2 at 12 ms, reads 2..5 by
        // 16 ms, when the frontier jumps to 9.
        let (h, f) = md.read(Head { pos: (0, 0), t: 5.3e6 }, 2, 9, true, true, false, Reach::Anywhere, &mut runs);
        assert_eq!(f, 9);
        assert_eq!(runs[0], Run { first: 2, count: 4, t0: 12e6, st: 1e6 });
        assert_eq!(runs[1], Run { first: 6, count: 3, t0: 16e6, st: 0.0 });
        assert_eq!(avail_at(&runs, 5, 0.0), 16e6);
        assert_eq!(avail_at(&runs, 8, 0.0), 16e6, "in order: only once 2..5 are in");
        assert_eq!(h.t, 16e6);
        // Landing before the wanted sectors: as usual.
        runs.clear();
        md.read(Head { pos: (0, 0), t: 1.0e6 }, 2, 9, true, true, false, Reach::Anywhere, &mut runs);
        assert_eq!(runs, vec![Run { first: 2, count: 7, t0: 2e6, st: 1e6 }]);
    }

    #[test]
    fn progress_reports_the_phase() {
        let (l, m) = setup();
        let md = Media { layout: &l, memo: &Cell::new(None), mech: &m, period_ns: P };
        let mut s = Vec::new();
        let h = Head { pos: (0, 0), t: 2.5e6 };
        let (_, f, ph) = md.progress(h, 5, 15, false, false, Reach::Anywhere, 4.0e6, &mut s);
        assert_eq!((f, ph), (5, Some(Phase::Waiting { until: 5e6 })));
        let (_, f, ph) = md.progress(h, 5, 15, false, false, Reach::Anywhere, 6.5e6, &mut s);
        assert_eq!((f, ph), (6, Some(Phase::InSector { until: 7e6 })));
        // Track 0 ends at 10 ms; the head switch to (0,1) ends at 11 ms.
        let (_, f, ph) = md.progress(h, 5, 15, false, false, Reach::Anywhere, 10.5e6, &mut s);
        assert_eq!((f, ph), (10, Some(Phase::Seeking { until: 11e6 })));
        let (hd, f, ph) = md.progress(h, 5, 15, false, false, Reach::Anywhere, 99e6, &mut s);
        assert_eq!((f, ph), (15, None));
        assert_eq!(hd, Head { pos: (0, 1), t: 25e6 });
    }

    /// Progress answered from the track's first run (the shortcut) agrees
    /// with the whole read's runs: at instants between sector ends, over a
    /// stream across three tracks, the frontier is the sectors read by then.
    #[test]
    fn progress_frontier_agrees_with_the_read() {
        let (l, m) = setup();
        let md = Media { layout: &l, memo: &Cell::new(None), mech: &m, period_ns: P };
        for stepping in [false, true] {
            let h = Head { pos: (0, 0), t: 2.5e6 };
            let mut runs = Vec::new();
            md.read(h, 5, 25, false, false, stepping, Reach::Anywhere, &mut runs);
            let mut s = Vec::new();
            for k in 0..400 {
                let until = 2.5e6 + k as f64 * 0.1e6 + 0.05e6;
                let (_, f, _) = md.progress(h, 5, 25, false, stepping, Reach::Anywhere, until, &mut s);
                let read = (5..25u64).take_while(|&b| avail_at(&runs, b, 0.0) <= until).count() as u64;
                assert_eq!(f, 5 + read, "until {until}, stepping {stepping}");
            }
        }
    }

    #[test]
    fn writes_wait_a_revolution_for_late_data() {
        let (l, m) = setup();
        let md = Media { layout: &l, memo: &Cell::new(None), mech: &m, period_ns: P };
        let mut runs = Vec::new();
        // Writes 2..5 on the track the head is on, at least 0.6 ms of
        // positioning: sector 2 comes at 2 ms. Data for 2 and 3 is there,
        // 4's arrives at 5.5 ms: one revolution lost.
        let data = |lbn: u64| if lbn < 4 { 0.0 } else { 5.5e6 };
        let h = md.write(Head { pos: (0, 0), t: 0.0 }, 2, 5, 0.6e6, false, &data, &mut runs);
        let near = |a: f64, b: f64| (a - b).abs() < 1.0;
        assert_eq!((runs[0].first, runs[0].count), (2, 2));
        assert!(near(runs[0].t0, 2e6), "{runs:?}");
        assert_eq!((runs[1].first, runs[1].count), (4, 1));
        assert!(near(runs[1].t0, 14e6), "{runs:?}");
        assert!(near(h.t, 15e6));
    }
}

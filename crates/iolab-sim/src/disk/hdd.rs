//! A mechanical disk drive: controller, buffer, arm, spinning platters.
//!
//! Each request is served in three coupled parts, as DiskSim 4.0's disk
//! model serves it (its manual's parameters; see `controller.rs`,
//! `cache.rs`, `media.rs`):
//!
//! 1. the buffer: which segment the request uses and whether it hits;
//!    what the mechanism was doing (a read-ahead, a write-back) and
//!    whether and when that stops;
//! 2. the media: command overhead, then seek (or head switch, plus write
//!    settle), rotational latency and sector transfers, track by track;
//! 3. the bus: when the drive connects to send or take data, how it
//!    follows the media (watermarks, holding the bus or reconnecting), and
//!    the completion.
//!
//! Between requests the mechanism may go on reading ahead into the buffer
//! or writing back buffered writes; that background work is worked out
//! lazily when the next request arrives. Times are absolute f64
//! nanoseconds (exact to well under a nanosecond for runs of days);
//! results are rounded to whole ns. Scratch buffers are reused, so a
//! request allocates nothing.

use super::cache::{CacheParams, FastWrite, Hit, OverRequested, ReadAhead, SegState, SegmentTable};
use super::controller::Controller;
use super::layout::{Layout, Loc, RunMemo};
use std::cell::Cell;
use super::media::{avail_at, Head, Media, Phase, Reach, Run};
use super::seek::Mechanics;
use super::{CacheOutcome, Disk, Service};
use crate::cost::{ModuleSeekCurve, PositionCost};
use crate::error::{Error, Result};
use crate::request::{Dir, Request};
use crate::time::{fmax, frac, round_u64, to_f64, SimTime};
use std::sync::Arc;

/// Everything that describes a drive.
#[derive(Clone, Debug)]
pub struct HddParams {
    pub name: String,
    pub rpm: f64,
    pub layout: Layout,
    pub mechanics: Mechanics,
    pub controller: Controller,
    pub cache: CacheParams,
}

/// A read-ahead going on into segment `seg`: the stream's head as of
/// sector `next` (the first not yet read), reading on up to `limit`; it
/// may not be stopped before `min`. `stepping`: the head is already on
/// its track passing sector after sector (no new landing).
#[derive(Copy, Clone, Debug, PartialEq)]
struct Prefetch {
    seg: usize,
    head: Head,
    next: u64,
    limit: u64,
    min: u64,
    stepping: bool,
}

/// What the mechanism does between requests.
#[derive(Copy, Clone, Debug, PartialEq)]
enum Activity {
    Idle,
    Prefetch(Prefetch),
    /// Writing back segment `seg` until `head.t` (the written sectors are
    /// in `Hdd::flush_runs`).
    Flush { seg: usize, head: Head },
}

pub struct Hdd {
    name: String,
    layout: Arc<Layout>,
    mech: Arc<Mechanics>,
    ctrl: Controller,
    period_ns: f64,
    table: SegmentTable,
    /// The arm: where it is and when it is free, when no activity runs.
    arm: Head,
    activity: Activity,
    /// The previous request was a write (overheads depend on it).
    last_write: bool,
    runs: Vec<Run>,
    flush_runs: Vec<Run>,
    scratch: Vec<Run>,
    /// The last run of sectors located ([`Layout::locate_memo`]).
    loc_memo: Cell<Option<RunMemo>>,
    /// What limits a read-ahead, from the buffer's parameters, and the
    /// read path's controller times in ns: worked out once per drive, not
    /// on every request (the same values: the same products).
    reach: Reach,
    read_ns: ReadNs,
}

/// The controller's read-path overheads in ns (`ms` of the parameters);
/// the arrays are indexed by whether the previous request was a write.
#[derive(Copy, Clone, Debug)]
struct ReadNs {
    per_request: f64,
    bus_block: f64,
    data_prep: f64,
    hit: [f64; 2],
    miss: [f64; 2],
    disconnect: [f64; 2],
    reselect_first: f64,
    complete: f64,
}

impl ReadNs {
    fn new(c: &Controller) -> ReadNs {
        ReadNs {
            per_request: ms(c.per_request_ms),
            bus_block: ms(c.bus_read_block_ms),
            data_prep: ms(c.data_prep_ms),
            hit: c.read_hit_ms.map(ms),
            miss: c.read_miss_ms.map(ms),
            disconnect: c.read_disconnect_ms.map(ms),
            reselect_first: ms(c.reselect_first_ms),
            complete: ms(c.read_complete_ms),
        }
    }
}

/// A read-ahead's progress at some instant: the head, the frontier and
/// what the head is doing ([`Media::progress`]).
type Progress = (Head, u64, Option<Phase>);

/// Where a request's media time went, for [`Service`].
#[derive(Copy, Clone, Debug, Default)]
struct Walk {
    seek_ns: f64,
    rot_ns: f64,
    xfer_ns: f64,
    cylinders: u32,
}

#[inline]
fn ms(v: f64) -> f64 {
    v * 1e6
}

impl Hdd {
    pub fn new(p: HddParams) -> Result<Hdd> {
        if !(p.rpm.is_finite() && p.rpm > 0.0) {
            return Err(Error::invalid(format!("{}: rpm", p.name), "must be a positive number"));
        }
        p.mechanics.check(&format!("{}: mechanics", p.name))?;
        p.controller.check(&format!("{}: controller", p.name))?;
        if p.cache.segment_sectors == 0 || p.cache.segments == 0 {
            return Err(Error::invalid(format!("{}: cache", p.name), "needs at least one segment of at least one sector"));
        }
        // Every seek of this drive is shorter than its cylinder count: its
        // curve worked out once per distance (SeekCurve::tabulated).
        let mech = Mechanics { seek: p.mechanics.seek.tabulated(p.layout.cylinders), ..p.mechanics };
        let reach = match p.cache.read_ahead {
            ReadAhead::TrackEnd => Reach::Track,
            ReadAhead::CylinderEnd => Reach::Cylinder,
            _ => Reach::Anywhere,
        };
        Ok(Hdd {
            reach,
            read_ns: ReadNs::new(&p.controller),
            period_ns: 60e9 / p.rpm,
            layout: Arc::new(p.layout),
            mech: Arc::new(mech),
            ctrl: p.controller,
            table: SegmentTable::new(p.cache),
            arm: Head { pos: (0, 0), t: 0.0 },
            activity: Activity::Idle,
            last_write: false,
            runs: Vec::new(),
            flush_runs: Vec::new(),
            scratch: Vec::new(),
            loc_memo: Cell::new(None),
            name: p.name,
        })
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Where `lbn` is, through the memo of the last run located.
    fn locate(&self, lbn: u64) -> Loc {
        self.layout.locate_memo(lbn, &self.loc_memo)
    }

    fn reach(&self) -> Reach {
        self.reach
    }

    /// The read-ahead limit for a read of `start..end` into `seg`.
    fn ra_limit(&self, seg: usize, start: u64, end: u64) -> u64 {
        let l = &self.layout;
        let cap = l.mapped();
        self.table.read_ahead_limit(seg, start, end, cap, |lbn| {
            let (first, last) = l.track_span(lbn);
            (first, last + 1, l.locate(lbn).sectors_per_track as u64)
        })
    }

    /// Brings background work up to `t`: a finished read-ahead or write-back
    /// ends; a running read-ahead's buffered sectors are noted. Returns the
    /// progress of a read-ahead that goes on (it is unchanged, so a read
    /// arriving at `t` stops it from there without working it out again).
    #[inline(always)]
    fn catch_up(&mut self, t: f64) -> Option<Progress> {
        match self.activity {
            Activity::Idle => None,
            Activity::Flush { seg, head } => {
                if head.t <= t {
                    self.end_flush(seg, head);
                }
                None
            }
            Activity::Prefetch(p) => {
                let (head, frontier, phase) = self.progress(p, t);
                let s = &mut self.table.segs[p.seg];
                s.end = s.end.max(frontier);
                self.table.wrap(p.seg);
                if phase.is_none() {
                    self.table.segs[p.seg].state = SegState::Clean;
                    self.arm = head;
                    self.activity = Activity::Idle;
                    return None;
                }
                Some((head, frontier, phase))
            }
        }
    }

    /// Where read-ahead `p` has got to at `t` (see [`Media::progress`]).
    fn progress(&mut self, p: Prefetch, t: f64) -> Progress {
        let md = Media { layout: &self.layout, memo: &self.loc_memo, mech: &self.mech, period_ns: self.period_ns };
        let immed = self.table.params.immediate_read;
        md.progress(p.head, p.next, p.limit, immed, p.stepping, self.reach(), t, &mut self.scratch)
    }

    fn end_flush(&mut self, seg: usize, head: Head) {
        let p = &self.table.params;
        let keep = p.enabled && p.read_hits_on_write_data;
        self.table.segs[seg].state = if keep { SegState::Clean } else { SegState::Empty };
        self.arm = head;
        self.activity = Activity::Idle;
    }

    /// Stops the read-ahead at `t` for a new request: returns when the arm
    /// is free, where it is, and whether the remaining step adds to the
    /// new request's command overhead (DiskSim adds the two) rather than
    /// overlapping it. `known`: its progress at `t`, if already worked out
    /// (by `catch_up`, for this `p` at this `t`).
    #[inline(always)]
    fn stop_prefetch(&mut self, p: Prefetch, t: f64, known: Option<Progress>) -> (Head, bool) {
        let (head, frontier, phase) = match known {
            Some(k) => k,
            None => self.progress(p, t),
        };
        let md = Media { layout: &self.layout, memo: &self.loc_memo, mech: &self.mech, period_ns: self.period_ns };
        let immed = self.table.params.immediate_read;
        let reach = self.reach();
        let s = &mut self.table.segs[p.seg];
        s.end = s.end.max(frontier);
        s.state = SegState::Clean;
        self.activity = Activity::Idle;
        if frontier < p.min {
            // Not stoppable before the minimum read-ahead: it goes on to
            // there and the request waits for the arm.
            let (h, f, _) = md.progress(p.head, p.next, p.min, immed, p.stepping, reach, f64::INFINITY, &mut self.scratch);
            self.table.segs[p.seg].end = self.table.segs[p.seg].end.max(f);
            self.table.wrap(p.seg);
            return (h, false);
        }
        self.table.wrap(p.seg);
        let stop_in_sector = self.table.params.stop_prefetch_in_sector;
        let additive = !self.ctrl.wait_for_prefetch_step;
        match phase {
            None => (head, false),
            Some(Phase::Seeking { until }) => {
                let loc = self.locate(frontier);
                (Head { pos: (loc.cyl, loc.head), t: until }, additive)
            }
            // Waiting for its first sector after a seek, the prefetch holds
            // no sector: it stops at once whatever "Stop prefetch in
            // sector" says (DiskSim 4.0 lets it wait for that sector).
            Some(Phase::Waiting { .. }) => (Head { pos: head.pos, t }, false),
            Some(Phase::InSector { until }) => {
                if stop_in_sector {
                    (Head { pos: head.pos, t }, false)
                } else {
                    (Head { pos: head.pos, t: until }, additive)
                }
            }
        }
    }

    /// When the mechanism can start on a new access for a request whose
    /// command overhead ends at `overhead_done`: DiskSim adds the time to
    /// finish a stopped prefetch's step to that overhead.
    fn media_start(overhead_done: f64, now: f64, arm: Head, additive: bool) -> f64 {
        if additive {
            overhead_done + (arm.t - now).max(0.0)
        } else {
            fmax(overhead_done, arm.t)
        }
    }

    /// `caught`: what `catch_up(t0)` returned.
    fn read(&mut self, lbn: u64, n: u64, t0: f64, caught: Option<Progress>) -> (f64, Walk, CacheOutcome) {
        let prev = self.last_write as usize;
        let end = lbn + n;
        let size = self.table.params.segment_sectors;
        let c = &self.ctrl;
        let r_ns = &self.read_ns;
        let bt = r_ns.bus_block;
        let prep = r_ns.data_prep;
        let overhead_done = t0 + r_ns.miss[prev];
        let hold = c.hold_bus_read || c.never_disconnect;
        let (read_hit, read_miss, disc) = (r_ns.hit[prev], r_ns.miss[prev], r_ns.disconnect[prev]);
        let (reselect, complete) = (r_ns.reselect_first, r_ns.complete);
        let (never_disconnect, sneaky_full, sneaky_partial) =
            (c.never_disconnect, c.sneaky_full_read_hits, c.sneaky_partial_read_hits);
        let wm = CacheParams::watermark(c.read_watermark, c.watermark_by_request, size, n);

        // 1. The buffer, and what the mechanism is doing.
        let prefetch = match self.activity {
            Activity::Prefetch(p) => Some(p),
            _ => None,
        };
        let busy = prefetch.map(|p| p.seg);
        let (mut seg, mut hit) = self.table.select_read(lbn, end, busy);
        let mut hda_at = t0; // when this request may use the mechanism
        let mut additive = false;
        let mut swap = None; // the read-ahead this read takes over
        let flushing = matches!(self.activity, Activity::Flush { .. }) || hit == Hit::Collision;
        let enough = match hit {
            Hit::Whole => true,
            Hit::Partial => {
                let s = &self.table.segs[seg.unwrap_or(0)];
                self.table.params.immediate_partial_transfer || s.end.saturating_sub(lbn) >= wm.min(n)
            }
            _ => false,
        };
        let ready;
        if flushing {
            // The mechanism is writing back dirty data: a read waits for
            // it (and for overlapping dirty data to reach the media),
            // unless it may sneak its data out of the buffer meanwhile.
            ready = never_disconnect
                || (enough && ((hit == Hit::Whole && sneaky_full) || (hit == Hit::Partial && sneaky_partial)));
            if let Activity::Flush { seg: fs, head } = self.activity {
                hda_at = fmax(head.t, t0);
                self.end_flush(fs, head);
            }
            if !ready {
                (seg, hit) = self.table.select_read(lbn, end, None);
            }
        } else {
            ready = never_disconnect || enough;
            if let Some(p) = prefetch {
                if seg == Some(p.seg) && matches!(hit, Hit::Whole | Hit::Partial) {
                    swap = Some(p);
                } else {
                    let (arm, add) = self.stop_prefetch(p, t0, caught);
                    self.arm = arm;
                    additive = add;
                }
            }
        }
        let seg = match seg {
            Some(s) => s,
            // No segment fits (a prefetch that cannot be stopped holds the
            // only one): wait for the arm, then take the prefetched one.
            None => {
                if let Some(p) = prefetch {
                    let (arm, _) = self.stop_prefetch(p, t0, caught);
                    self.arm = arm;
                    hda_at = fmax(hda_at, arm.t);
                    p.seg
                } else {
                    self.table.select_read(lbn, end, None).0.unwrap_or(0)
                }
            }
        };

        // 2. The media: the sectors not yet buffered, then read-ahead.
        self.runs.clear();
        let s = self.table.segs[seg];
        let buffered_to = match hit {
            Hit::Whole => end,
            Hit::Partial => s.end.min(end),
            _ => lbn,
        };
        if hit != Hit::Whole && hit != Hit::Partial {
            let st = &mut self.table.segs[seg];
            st.start = lbn;
            st.end = lbn;
            st.min_ra = 0;
            st.max_ra = 0;
        }
        let cap = self.layout.mapped();
        let min_ra = (end + self.table.params.min_read_ahead as u64).min(cap);
        let limit = self.ra_limit(seg, self.table.segs[seg].start.min(lbn), end).max(end);
        {
            let st = &mut self.table.segs[seg];
            st.min_ra = st.min_ra.max(min_ra);
            st.max_ra = st.max_ra.max(limit);
        }
        let max_ra = self.table.segs[seg].max_ra;
        let params = &self.table.params;
        let read_ahead = params.enabled && params.read_ahead != ReadAhead::Off;
        let immed = params.immediate_read;
        let read_any_free = params.read_any_free;
        let md = Media { layout: &self.layout, memo: &self.loc_memo, mech: &self.mech, period_ns: self.period_ns };
        let mut walk = Walk::default();
        let mut next_activity = Activity::Idle;
        let mut arm = self.arm;
        let mut start_back = None;
        if let Some(p) = swap {
            // The read-ahead goes on as this request's access, further now.
            let lim = p.limit.max(max_ra);
            let (h, f) = md.read(p.head, p.next, end.max(p.next), false, immed, p.stepping, Reach::Anywhere, &mut self.runs);
            arm = h;
            if read_ahead && lim > f {
                next_activity = Activity::Prefetch(Prefetch { seg, head: h, next: f, limit: lim, min: min_ra.max(p.min), stepping: true });
            }
            self.table.segs[seg].end = self.table.segs[seg].end.max(f.min(p.next.max(end)));
        } else if buffered_to < end {
            let t = Hdd::media_start(fmax(overhead_done, hda_at), hda_at, self.arm, additive);
            let head = Head { pos: self.arm.pos, t };
            let first = self.locate(buffered_to);
            walk.cylinders = head.pos.0.abs_diff(first.cyl);
            walk.seek_ns = self.mech.move_ns(head.pos, (first.cyl, first.head), false);
            let track_first = if read_any_free { self.layout.track_span(buffered_to).0 } else { buffered_to };
            if read_any_free && hit != Hit::Partial && buffered_to != track_first {
                start_back = Some(read_any_free_start(&md, head, buffered_to, track_first));
            }
            let (h, f) =
                md.read_at(head, buffered_to, first, walk.seek_ns, end, immed, immed, false, Reach::Anywhere, &mut self.runs);
            if let Some(r) = self.runs.first() {
                walk.rot_ns = (r.t0 - t - walk.seek_ns).max(0.0);
            }
            walk.xfer_ns = to_f64(end - buffered_to) * md.period_ns / first.sectors_per_track as f64;
            arm = h;
            self.table.segs[seg].end = f;
            if read_ahead && max_ra > f {
                next_activity = Activity::Prefetch(Prefetch { seg, head: h, next: f, limit: max_ra, min: min_ra, stepping: true });
            }
        } else if read_ahead && self.table.params.read_ahead_on_idle_hit && s.end < max_ra {
            // A whole hit restarts the read-ahead from the segment's end,
            // once the command overhead is done.
            let t = Hdd::media_start(fmax(overhead_done, hda_at), hda_at, self.arm, additive);
            next_activity = Activity::Prefetch(Prefetch {
                seg,
                head: Head { pos: self.arm.pos, t },
                next: s.end,
                limit: max_ra,
                min: min_ra,
                stepping: false,
            });
        }

        // 3. The bus.
        let before = hda_at;
        let avail = |b: u64, runs: &[Run]| if b < buffered_to { before } else { avail_at(runs, b, before) };
        let r = if ready {
            let ovh = if hit == Hit::Whole || hit == Hit::Partial { read_hit } else { read_miss };
            t0 + ovh + prep
        } else {
            let t_disc = t0 + read_miss + disc;
            let t_wm = avail(lbn + wm.min(n) - 1, &self.runs);
            fmax(t_disc, t_wm) + reselect + prep
        };
        let xfer_end = if hold {
            let mut e = r + to_f64(n) * bt;
            for run in &self.runs {
                let lo = run.first.max(lbn);
                let hi = run.end().min(end);
                if lo < hi {
                    for b in [lo, hi - 1] {
                        e = fmax(e, fmax(run.at(b), before) + to_f64(end - b) * bt);
                    }
                }
            }
            e
        } else {
            // Bursts of whatever is buffered; with nothing buffered the
            // drive disconnects and reconnects at the watermark, which
            // always has more to send.
            let (mut out, mut t) = (lbn, r);
            while out < end {
                let mut a = out;
                while a < end && avail(a, &self.runs) <= t {
                    a += 1;
                }
                if a > out {
                    t += to_f64(a - out) * bt;
                    out = a;
                    continue;
                }
                let need = wm.min(end - out);
                t = fmax(t + disc, avail(out + need - 1, &self.runs)) + reselect + prep;
            }
            t
        };
        let done = xfer_end + complete;

        // 4. What stays behind.
        let s = &mut self.table.segs[seg];
        if let Some(b) = start_back {
            s.start = s.start.min(b);
        }
        s.last_write = false;
        s.state = match next_activity {
            Activity::Prefetch(_) => SegState::Reading,
            _ if self.table.params.enabled => SegState::Clean,
            _ => SegState::Empty,
        };
        if self.table.params.over_requested == OverRequested::Drop {
            s.start = s.start.max(end.min(s.end));
        }
        self.table.wrap(seg);
        self.table.touch(seg);
        if matches!(next_activity, Activity::Idle) && swap.is_none() {
            if buffered_to < end {
                self.arm = arm;
            }
        } else if let Activity::Idle = next_activity {
            self.arm = arm;
        }
        self.activity = next_activity;
        let outcome = match hit {
            Hit::Whole => CacheOutcome::Hit,
            Hit::Partial => CacheOutcome::Partial,
            _ => CacheOutcome::Miss,
        };
        (done, walk, outcome)
    }

    fn write(&mut self, lbn: u64, n: u64, t0: f64) -> (f64, Walk, CacheOutcome) {
        let prev = self.last_write as usize;
        let end = lbn + n;
        let size = self.table.params.segment_sectors as u64;
        let fast = self.table.params.fast_write != FastWrite::Off;
        let c = self.ctrl.clone();
        let ovh = ms(if fast { c.write_hit_ms[prev] } else { c.write_miss_ms[prev] });
        let bt = ms(c.bus_write_block_ms);
        let prep = ms(c.data_prep_ms);

        // 1. The buffer, and what the mechanism is doing.
        let mut prefetch = match self.activity {
            Activity::Prefetch(p) => Some(p),
            _ => None,
        };
        if let Some(p) = &mut prefetch {
            let s = self.table.segs[p.seg];
            if self.table.params.write_hit_stops_prefetch && s.overlaps(lbn, end) {
                // A write into the data being read ahead stops it where it is.
                p.limit = s.end.max(p.next);
                p.min = p.min.min(p.limit);
            }
        }
        let (flush_seg, flush_head) = match self.activity {
            Activity::Flush { seg, head } => (Some(seg), head),
            _ => (None, self.arm),
        };
        let owner_in = match flush_seg {
            Some(fs) => flushed_to(&self.flush_runs, t0, self.table.segs[fs].start),
            None => lbn,
        };
        let (mut seg, mut hit) = self.table.select_write(lbn, end, owner_in, prefetch.map(|p| p.seg));
        let append = flush_seg.is_some() && seg == flush_seg && hit == Hit::Append;
        let mut hda_at = t0;
        let mut additive = false;
        let hda_free = flush_seg.is_none() || append;
        let start_now = (seg.is_some() && (hda_free || c.write_prebuffering)) || c.never_disconnect;
        if let Some(p) = prefetch {
            // `p` may have been cut short above: its progress anew.
            let (arm, add) = self.stop_prefetch(p, t0, None);
            self.arm = arm;
            additive = add;
            if seg.is_none() {
                (seg, hit) = self.table.select_write(lbn, end, lbn, None);
            }
        }
        if let (Some(fs), false) = (flush_seg, append) {
            // Wait for the write-back to finish, then pick again.
            hda_at = flush_head.t.max(t0);
            self.end_flush(fs, flush_head);
            if !start_now || seg.is_none() {
                (seg, hit) = self.table.select_write(lbn, end, lbn, None);
            }
        }
        let seg = seg.unwrap_or_else(|| self.table.select_write(lbn, end, lbn, None).0.unwrap_or(0));
        let s = self.table.segs[seg];
        let extra = c
            .extra_disconnect
            .as_ref()
            .filter(|_| start_now && !c.never_disconnect && self.table.is_mru(seg) && s.last_write && lbn != s.end);

        // 2. The bus: when the data comes in.
        let (overhead_done, r) = match (start_now, extra) {
            (true, Some(e)) => (
                t0 + ms(e.command_ms + e.seek_delta_ms),
                t0 + ms(e.command_ms + e.disconnect_ms + e.inter_disconnect_ms + c.reselect_first_ms) + prep,
            ),
            (true, None) => (t0 + ovh, t0 + ovh + prep),
            (false, _) => {
                let t_disc = t0 + ovh + ms(c.write_disconnect_ms);
                (t0 + ovh, t_disc.max(hda_at) + ms(c.reselect_first_ms) + prep)
            }
        };
        // "Extra write disconnect" drives (the HP C2247A) start writing
        // the media only once enough of the request is buffered: 10
        // sectors (or all of a shorter one), 15 for requests of 45 or more
        // (DiskSim's disk_buffer_block_available).
        let threshold = if c.extra_disconnect.is_some() { if n < 45 { n.min(10) } else { 15 } } else { 1 };
        let room = if append { size.saturating_sub(lbn - owner_in).max(1) } else { size };

        // 3. The media, burst by burst when the request is bigger than
        // the room in the segment.
        let md = Media { layout: &self.layout, memo: &self.loc_memo, mech: &self.mech, period_ns: self.period_ns };
        let immed = self.table.params.immediate_write;
        // "Minimum seek delay" is for nonsequential writes: a write that
        // joins one the media is still writing is not repositioned.
        let mintime = if append { 0.0 } else { ms(c.min_write_seek_ms) };
        let mut head = if append {
            flush_head
        } else {
            Head { pos: self.arm.pos, t: Hdd::media_start(overhead_done.max(hda_at), hda_at, self.arm, additive) }
        };
        let first = self.locate(lbn);
        let mut walk = Walk { cylinders: head.pos.0.abs_diff(first.cyl), ..Walk::default() };
        walk.seek_ns = self.mech.move_ns(head.pos, (first.cyl, first.head), true).max(mintime);
        if !append {
            self.runs.clear();
        } else {
            std::mem::swap(&mut self.runs, &mut self.flush_runs);
        }
        let mark = self.runs.len();
        let (mut burst_start, mut delivered, mut xfer_end) = (r, lbn, r);
        let hold = c.hold_bus_write || c.never_disconnect;
        let wwm = CacheParams::watermark(c.write_watermark, c.watermark_by_request, size as u32, n);
        let mut first_burst = true;
        while delivered < end {
            let k = if first_burst { room.min(end - delivered) } else { (end - delivered).min(size) };
            let (b0, from) = (burst_start, delivered);
            let thr_at = b0 + (threshold.min(k).max(1)) as f64 * bt;
            let data = move |x: u64| {
                let t = b0 + (x - from + 1) as f64 * bt;
                if x - lbn < threshold { t.max(thr_at) } else { t }
            };
            head = md.write(head, from, from + k, if first_burst { mintime } else { 0.0 }, immed, &data, &mut self.runs);
            delivered += k;
            xfer_end = b0 + k as f64 * bt;
            if delivered >= end {
                break;
            }
            // Room for more once the media has written what is buffered.
            let freed = |j: u64, runs: &[Run]| avail_at(&runs[mark..], j, b0);
            burst_start = if hold {
                xfer_end.max(freed(delivered - size.min(delivered - lbn), &self.runs))
            } else {
                let low = delivered - wwm.min(delivered - lbn).max(1);
                (xfer_end + ms(c.write_disconnect_ms)).max(freed(low, &self.runs)) + ms(c.reselect_first_ms) + prep
            };
            first_burst = false;
        }
        if let Some(r0) = self.runs.get(mark) {
            walk.rot_ns = (r0.t0 - walk.seek_ns - if append { flush_head.t } else { overhead_done }).max(0.0);
        }
        walk.xfer_ns = n as f64 * self.period_ns / first.sectors_per_track as f64;
        let media_end = head.t;

        // 4. Completion.
        let done = if fast {
            xfer_end + ms(c.write_complete_ms)
        } else {
            let second = extra.map_or(c.write_disconnect_ms, |e| e.second_disconnect_ms);
            let reselect = if extra.is_some() { c.reselect_other_ms } else { c.reselect_first_ms };
            media_end.max(xfer_end + ms(second)) + ms(reselect) + ms(c.write_complete_ms)
        };

        // 5. What stays behind.
        self.table.drop_stale(seg, lbn, end);
        let keep = self.table.params.enabled && self.table.params.read_hits_on_write_data;
        let st = &mut self.table.segs[seg];
        if append {
            st.end = end;
        } else {
            st.start = lbn;
            st.end = end;
        }
        st.last_write = true;
        st.min_ra = 0;
        st.max_ra = 0;
        self.table.touch(seg);
        if fast {
            self.table.segs[seg].state = SegState::Writing;
            if append {
                std::mem::swap(&mut self.runs, &mut self.flush_runs);
            } else {
                self.flush_runs.clear();
                self.flush_runs.extend_from_slice(&self.runs);
            }
            self.activity = Activity::Flush { seg, head };
        } else {
            self.table.segs[seg].state = if keep { SegState::Clean } else { SegState::Empty };
            self.arm = head;
            self.activity = Activity::Idle;
        }
        let outcome = if fast { CacheOutcome::Hit } else { CacheOutcome::Miss };
        let _ = hit;
        (done, walk, outcome)
    }

    /// The arm position at `t` without changing anything.
    fn peek_arm(&self, t: f64) -> (u32, u32) {
        match self.activity {
            Activity::Idle => self.arm.pos,
            Activity::Flush { head, .. } => head.pos,
            Activity::Prefetch(p) => {
                let md = Media { layout: &self.layout, memo: &self.loc_memo, mech: &self.mech, period_ns: self.period_ns };
                let mut scratch = Vec::new();
                let (h, _, _) = md.progress(p.head, p.next, p.limit, self.table.params.immediate_read, p.stepping, self.reach(), t, &mut scratch);
                h.pos
            }
        }
    }
}


/// The segment start after a read miss with "Read any free blocks": the
/// sectors of `from`'s track before it that pass under the head while it
/// waits for `from` are buffered too — from where the head lands if that
/// is before `from`, else from the track's first LBN, which comes round
/// first.
fn read_any_free_start(md: &Media, head: Head, from: u64, track_first: u64) -> u64 {
    let loc = md.locate(from);
    let first = md.locate(track_first);
    let arrive = head.t + md.mech.move_ns(head.pos, (loc.cyl, loc.head), false);
    let spt = loc.sectors_per_track as f64;
    let mut off = (frac(arrive / md.period_ns) - first.angle) * spt;
    if off < 0.0 {
        off += spt;
    }
    let landing = track_first + off.ceil() as u64 % loc.sectors_per_track as u64;
    if landing <= from {
        landing
    } else {
        track_first
    }
}

/// The first sector of a write-back not yet on the media at `t`.
fn flushed_to(runs: &[Run], t: f64, start: u64) -> u64 {
    let mut f = start;
    for r in runs {
        if r.t0 + r.st > t {
            break;
        }
        let k = (((t - r.t0) / r.st) as u64).min(r.count);
        f = f.max(r.first + k);
    }
    f
}

/// Scheduler-facing costs: the seek curve over this layout's cylinders.
struct HddCost {
    layout: Arc<Layout>,
    mech: Arc<Mechanics>,
    period_ns: f64,
}

impl PositionCost for HddCost {
    fn seek_ns(&self, from_sector: u64, to_sector: u64) -> u64 {
        let d = self.layout.cylinder_of(from_sector).abs_diff(self.layout.cylinder_of(to_sector));
        round_u64(self.mech.seek.ms(d) * 1e6)
    }
    fn seeks_from(&self, from_sector: u64, a: u64, b: u64) -> (u64, u64) {
        let c = self.layout.cylinder_of(from_sector);
        let seek = |to: u64| round_u64(self.mech.seek.ms(c.abs_diff(self.layout.cylinder_of(to))) * 1e6);
        (seek(a), seek(b))
    }
    fn mean_rotation_ns(&self) -> u64 {
        (self.period_ns / 2.0).round() as u64
    }
    /// The two-piece curve in ns (ps for the linear slope), rounded, with
    /// the mean cylinder size: what `iolab kernel compare` writes into the
    /// guest's `wpcas` and `kernel:wpcas` takes by default.
    fn module_seek(&self) -> Option<ModuleSeekCurve> {
        let (linear_from, sqrt_a, sqrt_b, lin_a, lin_b) = self.mech.seek.two_piece()?;
        let ns = |ms: f64| round_u64(ms * 1e6);
        Some(ModuleSeekCurve {
            cyl_sectors: self.layout.capacity().div_ceil(u64::from(self.layout.cylinders).max(1)),
            linear_cyl: u64::from(linear_from),
            sqrt_a_ns: ns(sqrt_a),
            sqrt_b_ns: ns(sqrt_b),
            lin_a_ns: ns(lin_a),
            lin_b_ps: round_u64(lin_b * 1e9),
        })
    }
}

impl Disk for Hdd {
    fn describe(&self) -> String {
        let l = &self.layout;
        format!(
            "{}: {} cylinders x {} surfaces, {} zone(s), {:.0} rpm, {} sectors ({:.1} MiB)",
            self.name,
            l.cylinders,
            l.surfaces,
            l.zones.len(),
            60e9 / self.period_ns,
            l.capacity(),
            l.capacity() as f64 / 2048.0
        )
    }

    fn capacity_sectors(&self) -> u64 {
        self.layout.capacity()
    }

    fn service(&mut self, rq: &Request, now: SimTime) -> Service {
        let cap = self.layout.capacity();
        let lbn = rq.sector.min(cap - 1);
        let n = (rq.nr_sectors.max(1) as u64).min(cap - lbn);
        let t_now = to_f64(now.ns());
        let t0 = t_now + self.read_ns.per_request;
        let caught = self.catch_up(t0);
        let (end, w, outcome) = match rq.dir {
            Dir::Read => self.read(lbn, n, t0, caught),
            Dir::Write => self.write(lbn, n, t0),
        };
        self.last_write = rq.dir == Dir::Write;
        let total_ns = round_u64(end - t_now);
        let (seek_ns, rotation_ns, transfer_ns) =
            (round_u64(w.seek_ns), round_u64(w.rot_ns), round_u64(w.xfer_ns));
        Service {
            total_ns,
            seek_ns,
            rotation_ns,
            transfer_ns,
            overhead_ns: total_ns.saturating_sub(seek_ns + rotation_ns + transfer_ns),
            seek_cylinders: w.cylinders as u64,
            cache: outcome,
        }
    }

    /// With write-back on, the flush lasts until the buffered write the
    /// mechanism is writing back is on the media (there is at most one: a
    /// later write waits for it or appends to it). The controller overhead
    /// of the command itself is not modelled (no source gives a figure);
    /// with write-back off every reported write is already on the media.
    fn flush(&mut self, now: SimTime) -> Service {
        let t = now.ns() as f64;
        self.catch_up(t);
        let Activity::Flush { seg, head } = self.activity else {
            return Service::default();
        };
        self.end_flush(seg, head);
        let wait_ns = (head.t - t).max(0.0).round() as u64;
        Service { total_ns: wait_ns, overhead_ns: wait_ns, cache: CacheOutcome::Miss, ..Service::default() }
    }

    fn positioning_ns(&self, rq: &Request, now: SimTime) -> u64 {
        let t = now.ns() as f64;
        let pos = self.peek_arm(t);
        let md = Media { layout: &self.layout, memo: &self.loc_memo, mech: &self.mech, period_ns: self.period_ns };
        let loc = self.locate(rq.sector);
        let arrive = t + self.mech.move_ns(pos, (loc.cyl, loc.head), rq.dir == Dir::Write);
        round_u64(arrive - t + md.rot_wait(arrive, loc.angle))
    }

    fn position_cost(&self) -> Arc<dyn PositionCost> {
        Arc::new(HddCost { layout: self.layout.clone(), mech: self.mech.clone(), period_ns: self.period_ns })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::presets;

    fn rq(sector: u64, n: u32, dir: Dir) -> Request {
        Request { id: 0, pid: 0, sector, nr_sectors: n, dir, sync: true, arrival: SimTime::ZERO }
    }

    fn hp() -> Hdd {
        Hdd::new(presets::hp97560_params()).unwrap()
    }

    #[test]
    fn same_angle_one_revolution_later_costs_the_same() {
        // Two drives in the same state serve the same request, one a whole
        // revolution later: the platter is at the same angle, so the cost
        // is identical.
        let period: f64 = 60e9 / 4002.0;
        let (mut a, mut b) = (hp(), hp());
        let t = SimTime(3_000_000);
        let r = rq(500_000, 8, Dir::Read);
        let sa = a.service(&r, t);
        let sb = b.service(&r, SimTime(t.ns() + period.round() as u64));
        assert!(sa.total_ns.abs_diff(sb.total_ns) <= 1, "{sa:?} vs {sb:?}");
        assert!(sa.rotation_ns < period as u64);
    }

    #[test]
    fn rotational_latency_follows_the_clock() {
        // Reading sector 0 of track 0 from the start position: the wait is
        // the time for angle 0 to come round after the overhead.
        let mut d = hp();
        let period: f64 = 60e9 / 4002.0;
        let s = d.service(&rq(0, 1, Dir::Read), SimTime::ZERO);
        let overhead = 2.2e6;
        let expect = (period - overhead % period) % period;
        assert!((s.rotation_ns as f64 - expect).abs() < 2.0, "{s:?}");
        assert_eq!(s.seek_ns, 0);
        assert_eq!(s.transfer_ns, (period / 72.0).round() as u64);
    }

    #[test]
    fn sequential_reads_hit_the_read_ahead() {
        let mut d = hp();
        let mut t = SimTime::ZERO;
        let s = d.service(&rq(10_000, 8, Dir::Read), t);
        assert_eq!(s.cache, CacheOutcome::Miss);
        t += s.total_ns + 10_000_000; // 10 ms idle: read-ahead runs
        let s2 = d.service(&rq(10_008, 8, Dir::Read), t);
        assert_eq!(s2.cache, CacheOutcome::Hit);
        assert!(s2.total_ns < s.total_ns);
        assert_eq!(s2.seek_ns + s2.rotation_ns, 0);
        // Immediately after: still streaming (partial) or a hit, never a miss.
        t += s2.total_ns;
        let s3 = d.service(&rq(10_016, 64, Dir::Read), t);
        assert_ne!(s3.cache, CacheOutcome::Miss);
        // A random read elsewhere misses.
        t += s3.total_ns;
        assert_eq!(d.service(&rq(2_000_000, 8, Dir::Read), t).cache, CacheOutcome::Miss);
    }

    #[test]
    fn seek_cost_and_positioning() {
        let d = hp();
        let pc = d.position_cost();
        let per_cyl = 19 * 72;
        assert_eq!(pc.seek_ns(0, 0), 0);
        assert!((pc.seek_ns(0, 383 * per_cyl) as i64 - 11_068_000).abs() < 500);
        assert!((pc.seek_ns(0, 384 * per_cyl) as i64 - 11_072_000).abs() <= 1);
        assert_eq!(pc.mean_rotation_ns(), (60e9 / 4002.0 / 2.0_f64).round() as u64);
        // The pair is each seek on its own.
        for (from, a, b) in [(0, 0, 383 * per_cyl), (200 * per_cyl + 5, 17, 1_000_000), (1_000_000, 1_000_000, 3)] {
            assert_eq!(pc.seeks_from(from, a, b), (pc.seek_ns(from, a), pc.seek_ns(from, b)));
        }
        let p = d.positioning_ns(&rq(384 * per_cyl, 1, Dir::Read), SimTime::ZERO);
        assert!(p >= 11_072_000 && p < 11_072_000 + (60e9 / 4002.0) as u64);
    }

    #[test]
    fn write_back_runs_one_write_ahead_of_the_media() {
        let mut d = Hdd::new(presets::modern7200_params()).unwrap();
        let (mut now, n, sz) = (SimTime::ZERO, 100u64, 2048u32);
        let mut fast = 0;
        for i in 0..n {
            let s = d.service(&rq(i * sz as u64, sz, Dir::Write), now);
            fast += (s.cache == CacheOutcome::Hit) as u32;
            now += s.total_ns;
        }
        assert_eq!(fast, n as u32);
        // Sustained: no faster than the outer zone's media rate (220 MB/s).
        let mb_s = (n * sz as u64 * 512) as f64 / (now.ns() as f64 / 1e9) / 1e6;
        assert!(mb_s < 221.0 && mb_s > 150.0, "{mb_s}");
    }

    #[test]
    fn flush_waits_for_the_write_back() {
        // Write-back on: the write is reported at once, the flush then
        // lasts until its media pass ends; a second flush costs nothing.
        let mut d = Hdd::new(presets::modern7200_params()).unwrap();
        let w = d.service(&rq(1_000_000_000, 2048, Dir::Write), SimTime::ZERO);
        assert_eq!(w.cache, CacheOutcome::Hit);
        let f = d.flush(SimTime(w.total_ns));
        assert!(f.total_ns > 1_000_000, "{f:?}");
        assert_eq!(f.total_ns, f.overhead_ns);
        assert_eq!(d.flush(SimTime(w.total_ns + f.total_ns)).total_ns, 0);
        // Write-through (the HP 97560): nothing to flush.
        let mut h = hp();
        let w = h.service(&rq(100_000, 16, Dir::Write), SimTime::ZERO);
        assert_eq!(h.flush(SimTime(w.total_ns)).total_ns, 0);
    }

    #[test]
    fn writes_wait_for_the_mechanism() {
        let mut d = hp();
        let s = d.service(&rq(100_000, 16, Dir::Write), SimTime::ZERO);
        assert_eq!(s.cache, CacheOutcome::Miss);
        assert!(s.total_ns > s.seek_ns + s.transfer_ns);
        // A read of what was just written hits the write segment.
        let s2 = d.service(&rq(100_004, 4, Dir::Read), SimTime(s.total_ns + 1_000));
        assert_eq!(s2.cache, CacheOutcome::Hit);
    }
}

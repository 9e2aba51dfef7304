//! A mechanical disk drive: controller, arm, spinning platters, buffer.
//!
//! Service of one request = controller overhead + seek (or head switch,
//! plus write settle) + rotational latency + media transfer, with the bus
//! transfer overlapped as the controller allows (`controller.rs`), and
//! the buffer's hits and read-ahead (`cache.rs`). The platters turn from
//! time 0 at a fixed speed, so the angle under the heads at any instant is
//! known: a request that reaches its track at angle a waits until its
//! first sector's angle comes round (`layout.rs` gives that angle).
//!
//! Internally times are absolute f64 nanoseconds (exact to well under a
//! nanosecond for runs of days); results are rounded to whole ns. No
//! allocation happens per request.

use super::cache::{Cache, CacheParams, ReadAhead};
use super::controller::Controller;
use super::layout::Layout;
use super::seek::Mechanics;
use super::{CacheOutcome, Disk, PositionCost, Service};
use crate::error::{Error, Result};
use crate::request::{Dir, Request};
use crate::time::SimTime;
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

/// Rotations closer than this to a full turn count as no wait: the next
/// sector of a stream is exactly under the head (float rounding aside).
const SAME_ANGLE_REVS: f64 = 1e-7;

pub struct Hdd {
    name: String,
    layout: Arc<Layout>,
    mech: Arc<Mechanics>,
    ctrl: Controller,
    period_ns: f64,
    /// Cylinder and head the arm is on (as of the last request's end, or
    /// of the read-ahead's origin while one runs).
    pos: (u32, u32),
    /// The mechanism is busy (writing back) until then.
    mech_free_ns: f64,
    /// When the write-back media pass of the last write began.
    destage_start_ns: f64,
    /// Direction of the previous request: 0 read, 1 write.
    last_dir: usize,
    /// End sector of the previous request if it was a write.
    last_write_end: Option<u64>,
    cache: Cache,
}

/// What a pass of the head over some sectors cost.
#[derive(Copy, Clone, Debug, Default)]
struct Walk {
    /// When the first sector started under the head.
    start_ns: f64,
    end_ns: f64,
    pos: (u32, u32),
    seek_ns: f64,
    rot_ns: f64,
    xfer_ns: f64,
    cylinders: u32,
}

impl Hdd {
    pub fn new(p: HddParams) -> Result<Hdd> {
        if !(p.rpm.is_finite() && p.rpm > 0.0) {
            return Err(Error::invalid(format!("{}: rpm", p.name), "must be a positive number"));
        }
        p.mechanics.seek.check(&format!("{}: seek curve", p.name))?;
        p.controller.check(&format!("{}: controller", p.name))?;
        Ok(Hdd {
            period_ns: 60e9 / p.rpm,
            layout: Arc::new(p.layout),
            mech: Arc::new(p.mechanics),
            ctrl: p.controller,
            pos: (0, 0),
            mech_free_ns: 0.0,
            destage_start_ns: 0.0,
            last_dir: 0,
            last_write_end: None,
            cache: Cache::new(p.cache),
            name: p.name,
        })
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Time until the sector starting at `angle` (revolutions) comes under
    /// the head, for a head that is on the track at `t_ns`.
    #[inline]
    fn rot_wait(&self, t_ns: f64, angle: f64) -> f64 {
        let now = (t_ns / self.period_ns).fract();
        let mut d = angle - now;
        if d < 0.0 {
            d += 1.0;
        }
        if d > 1.0 - SAME_ANGLE_REVS {
            d = 0.0;
        }
        d * self.period_ns
    }

    /// Passes over sectors `lbn..lbn+n` starting from `pos` at `t`, track
    /// by track; `on_run(i, k, start, sector_ns)` is told when each run of
    /// `k` sectors from the i-th starts. A write gives `data` = (instant
    /// its data starts crossing the bus, ns per block): sector i can be
    /// written only once block i is in the buffer, checked sector by
    /// sector ("Calc sector by sector"); when the head reaches a sector
    /// whose data has not arrived it has to wait for it to come round
    /// again, a whole revolution later.
    fn walk(
        &self,
        mut pos: (u32, u32),
        mut t: f64,
        lbn: u64,
        n: u64,
        data: Option<(f64, f64)>,
        min_first_move: f64,
        mut on_run: impl FnMut(u64, u64, f64, f64),
    ) -> Walk {
        let mut w = Walk { pos, ..Walk::default() };
        let mut done = 0;
        while done < n {
            let loc = self.layout.locate(lbn + done);
            let k = (loc.run as u64).min(n - done);
            let to = (loc.cyl, loc.head);
            if done == 0 {
                w.cylinders = pos.0.abs_diff(loc.cyl);
            }
            let mut mv = self.mech.move_ns(pos, to, data.is_some());
            if done == 0 {
                mv = mv.max(min_first_move);
            }
            let arrive = t + mv;
            let st = self.period_ns / loc.sectors_per_track as f64;
            let wait = self.rot_wait(arrive, loc.angle);
            let start = arrive + wait;
            if done == 0 {
                w.start_ns = start;
            }
            on_run(done, k, start, st);
            w.seek_ns += mv;
            w.rot_ns += wait;
            w.xfer_ns += k as f64 * st;
            t = match data {
                None => start + k as f64 * st,
                Some((bus, bw)) => {
                    let (end, lost) = self.write_run(start, done, k, st, bus, bw);
                    w.rot_ns += lost;
                    end
                }
            };
            pos = to;
            done += k;
        }
        w.end_ns = t;
        w.pos = pos;
        w
    }

    /// Writes `k` sectors from the i-th, the head over the first at
    /// `start`, block g arriving at `bus + (g+1)·bw`. Returns the end and
    /// the revolutions lost waiting for data.
    fn write_run(&self, start: f64, i: u64, k: u64, st: f64, bus: f64, bw: f64) -> (f64, f64) {
        let (mut s, mut j, mut lost) = (start, 0u64, 0.0);
        while j < k {
            let g = i + j;
            let avail = bus + (g + 1) as f64 * bw;
            if avail > s {
                let turns = ((avail - s) / self.period_ns).ceil() * self.period_ns;
                s += turns;
                lost += turns;
            }
            // Sectors g, g+1, ... writable without waiting: block g+m
            // arrives by the time the head reaches its sector.
            let m = if bw > st { ((s - avail) / (bw - st)).floor() as u64 + 1 } else { k - j };
            let m = m.clamp(1, k - j);
            j += m;
            s += m as f64 * st;
        }
        (s, lost)
    }

    /// Where the read-ahead `a` has got to by `until`: the stream re-based
    /// at its frontier (next unread sector, when and where the head stands
    /// ready for it). The stream reads whole sectors; it stops at `limit`.
    fn ahead_at(&self, a: &ReadAhead, until: f64) -> ReadAhead {
        let mut r = *a;
        while r.next < r.limit {
            let loc = self.layout.locate(r.next);
            let k = (loc.run as u64).min(r.limit - r.next);
            let to = (loc.cyl, loc.head);
            let arrive = r.from_ns + self.mech.move_ns(r.pos, to, false);
            let start = arrive + self.rot_wait(arrive, loc.angle);
            if start >= until {
                break;
            }
            let st = self.period_ns / loc.sectors_per_track as f64;
            let got = (((until - start) / st).floor() as u64).min(k);
            r.next += got;
            r.from_ns = start + got as f64 * st;
            r.pos = to;
            if got < k {
                break;
            }
        }
        r
    }

    /// The arm position and read-ahead frontier at `t`, without changing
    /// anything.
    fn peek(&self, t: f64) -> ((u32, u32), Option<ReadAhead>) {
        match &self.cache.ahead {
            Some(a) => {
                let r = self.ahead_at(a, t);
                (r.pos, Some(r))
            }
            None => (self.pos, None),
        }
    }

    fn ms(v: f64) -> f64 {
        v * 1e6
    }

    fn read(&mut self, lbn: u64, n: u64, t0: f64) -> (f64, Walk, CacheOutcome) {
        let prev = self.last_dir;
        let c = &self.ctrl;
        let b = Self::ms(c.bus_read_block_ms);
        let complete = Self::ms(c.read_complete_ms);
        let frontier = self.cache.ahead.map_or(self.cache.read.map_or(0, |r| r.end), |a| a.next);
        let cap = self.layout.capacity();
        if self.cache.holds(lbn, lbn + n, frontier) {
            let end = t0 + Self::ms(c.read_hit_ms[prev] + c.data_prep_ms) + n as f64 * b + complete;
            self.cache.after_hit(lbn + n, t0, self.pos, cap);
            return (end, Walk::default(), CacheOutcome::Hit);
        }
        if self.cache.continues_stream(lbn, frontier) {
            // The rest of the request is still coming off the media: send
            // what is buffered, then each block as the read-ahead reads it.
            let bus = t0 + Self::ms(c.read_hit_ms[prev] + c.data_prep_ms);
            self.cache.after_hit(lbn + n, t0, self.pos, cap);
            let a = self.cache.ahead.expect("stream continues");
            let mut latest = bus + n as f64 * b;
            let (first, last) = (lbn.max(a.next), lbn + n);
            let base = first - a.next;
            let off = first - lbn;
            let w = self.walk(a.pos, a.from_ns, a.next, last - a.next, None, 0.0, |i, k, start, st| {
                // Blocks of this run that belong to the request.
                let lo = i.max(base);
                let hi = i + k;
                if lo < hi {
                    for j in [lo, hi - 1] {
                        let avail = start + (j - i + 1) as f64 * st;
                        let idx = j - base + off;
                        latest = latest.max(avail + (n - idx) as f64 * b);
                    }
                }
            });
            let _ = w;
            return (latest + complete, Walk::default(), CacheOutcome::Partial);
        }
        // Miss: the read-ahead stops, the arm goes to the data.
        self.cache.ahead = None;
        let ovh = Self::ms(c.read_miss_ms[prev]);
        let disconnect = t0 + ovh + Self::ms(c.read_disconnect_ms[prev]);
        let wm = ((c.read_watermark * n as f64).ceil() as u64).clamp(1, n);
        let (mut t_wm, mut latest) = (0.0f64, 0.0f64);
        let start = (t0 + ovh).max(self.mech_free_ns);
        let w = self.walk(self.pos, start, lbn, n, None, 0.0, |i, k, start, st| {
            for j in [i, i + k - 1] {
                latest = latest.max(start + (j - i + 1) as f64 * st + (n - j) as f64 * b);
            }
            if wm > i && wm <= i + k {
                t_wm = start + (wm - i) as f64 * st;
            }
        });
        let bus = t_wm.max(disconnect) + Self::ms(self.ctrl.reselect_first_ms);
        let end = (bus + n as f64 * b).max(latest) + complete;
        self.pos = w.pos;
        self.cache.after_miss(lbn, lbn + n, w.end_ns, w.pos, cap);
        (end, w, CacheOutcome::Miss)
    }

    fn write(&mut self, lbn: u64, n: u64, t0: f64) -> (f64, Walk, CacheOutcome) {
        let prev = self.last_dir;
        let c = &self.ctrl;
        let sequential = self.last_write_end == Some(lbn);
        let extra = c.extra_disconnect.as_ref().filter(|_| self.last_write_end.is_some() && !sequential);
        // When the data starts to cross the bus, when the arm may move,
        // what the disconnect after the data costs, and the reconnect
        // before completion.
        let (bus, arm, disconnect, reselect) = match extra {
            Some(e) => (
                t0 + Self::ms(e.command_ms + e.disconnect_ms + e.inter_disconnect_ms + c.reselect_first_ms),
                t0 + Self::ms(e.command_ms + e.seek_delta_ms),
                Self::ms(e.second_disconnect_ms),
                Self::ms(c.reselect_other_ms),
            ),
            None => {
                let ovh = Self::ms(if sequential { c.write_hit_ms[prev] } else { c.write_miss_ms[prev] });
                (t0 + ovh + Self::ms(c.data_prep_ms), t0 + ovh, Self::ms(c.write_disconnect_ms), Self::ms(c.reselect_first_ms))
            }
        };
        let bw = Self::ms(c.bus_write_block_ms);
        let complete = Self::ms(c.write_complete_ms);
        // With write-back, buffering is double: a write's data may come in
        // once the previous write's media pass has begun, so sustained
        // writes go at media speed, one write ahead of the mechanism.
        let bus = if self.cache.params.write_back { bus.max(self.destage_start_ns) } else { bus };
        let bus_end = bus + n as f64 * bw;
        let min_seek = Self::ms(self.ctrl.min_write_seek_ms);
        self.cache.on_write(lbn, lbn + n);
        let w = self.walk(self.pos, arm.max(self.mech_free_ns), lbn, n, Some((bus, bw)), min_seek, |_, _, _, _| {});
        self.pos = w.pos;
        if self.cache.params.write_back {
            self.mech_free_ns = w.end_ns;
            self.destage_start_ns = w.start_ns;
            return (bus_end + complete, w, CacheOutcome::Hit);
        }
        let end = w.end_ns.max(bus_end + disconnect) + reselect + complete;
        (end, w, CacheOutcome::Miss)
    }
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
        (self.mech.seek.ms(d) * 1e6).round() as u64
    }
    fn mean_rotation_ns(&self) -> u64 {
        (self.period_ns / 2.0).round() as u64
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
        let t0 = now.ns() as f64;
        // Bring the read-ahead up to now: what it has read is buffered.
        if let Some(a) = self.cache.ahead {
            let r = self.ahead_at(&a, t0);
            self.cache.advance(r.next);
            self.pos = r.pos;
            self.cache.ahead = (r.next < r.limit).then_some(r);
        }
        let (end, w, outcome) = match rq.dir {
            Dir::Read => self.read(lbn, n, t0),
            Dir::Write => self.write(lbn, n, t0),
        };
        self.last_dir = rq.dir.index();
        self.last_write_end = (rq.dir == Dir::Write).then_some(lbn + n);
        let total_ns = (end - t0).round().max(0.0) as u64;
        let (seek_ns, rotation_ns, transfer_ns) =
            (w.seek_ns.round() as u64, w.rot_ns.round() as u64, w.xfer_ns.round() as u64);
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

    /// With write-back on, the flush waits for the media pass of the last
    /// write (`mech_free_ns`); writes are destaged in arrival order, so
    /// that pass ends after every earlier one. The controller overhead of
    /// the command itself is not modelled (no source gives a figure); with
    /// write-back off every reported write is already on the media.
    fn flush(&mut self, now: SimTime) -> Service {
        if !self.cache.params.write_back {
            return Service::default();
        }
        let wait_ns = (self.mech_free_ns - now.ns() as f64).max(0.0).round() as u64;
        Service { total_ns: wait_ns, overhead_ns: wait_ns, cache: CacheOutcome::Miss, ..Service::default() }
    }

    fn positioning_ns(&self, rq: &Request, now: SimTime) -> u64 {
        let t = (now.ns() as f64).max(self.mech_free_ns);
        let (pos, _) = self.peek(t);
        let loc = self.layout.locate(rq.sector);
        let arrive = t + self.mech.move_ns(pos, (loc.cyl, loc.head), rq.dir == Dir::Write);
        (arrive - now.ns() as f64 + self.rot_wait(arrive, loc.angle)).round() as u64
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

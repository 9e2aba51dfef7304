//! Zoned geometry: where a logical block (LBN, a 512-byte sector) lives.
//!
//! The model is DiskSim 4.0's first-generation ("g1") layout, with the
//! meaning its manual gives each parameter (facts, not code). Cylinders
//! are grouped in zones with a fixed number of sectors per track. Within a
//! zone the physical sectors are numbered in "logical track order": track
//! after track of a cylinder, cylinder after cylinder, where the tracks of
//! a cylinder run over the heads in order (mapping 0) or backwards on odd
//! cylinders (mappings 1 and 2, so that a cylinder switch needs no head
//! switch). A zone may begin with reserved space ("Empty space at zone
//! front", counted in LBN slots). Spare space and defects follow the
//! sparing scheme:
//!
//! | scheme | spares ("Number of spares") | slipped defects |
//! |---|---|---|
//! | 0 | none | none allowed |
//! | 1 | whole tracks at the end of the zone | tracks, each uses one spare track |
//! | 2 | sectors at the end of each cylinder | use the cylinder's spares |
//! | 3 | sectors at the end of each track | use the track's spares |
//! | 4 | sectors at the end of each cylinder | slide every later LBN of the zone on |
//! | 5 | sectors at the front of each cylinder | use the cylinder's spares |
//! | 6 | sectors at the front of each cylinder | slide every later LBN of the zone on |
//! | 7 | at the end of the disk (none in the zone) | slide every later LBN of the zone on |
//! | 8 | sectors at the end of each range of cylinders | use the range's spares |
//! | 9 | sectors at the end of the zone | use the zone's spares |
//! | 10 | sectors at the end of the zone | slide every later LBN of the zone on |
//!
//! Slips are zone-relative physical positions (tracks for scheme 1,
//! sectors otherwise); "defects" are pairs (defective position, spare it is
//! remapped to). A zone holds as many LBNs as DiskSim counts for it.
//!
//! Angles: the first LBN of each physical track is rotated by a skew so
//! that a sequential transfer crossing a track or cylinder boundary finds
//! its next sector just arriving under the head. On zone-relative track T
//! (cylinder c' = T / S, logical head h' = T % S), physical sector s starts
//! at angle
//!   (offset + (h' + (S-1)·c')·track_skew + c'·cyl_skew + k + s) / spt
//! revolutions, where k counts the slipped sectors before the cylinder
//! (schemes 2, 4, 5, 6) or before the track (scheme 3): in those schemes
//! DiskSim's layout lets slips push the skew on too.

use crate::error::{Error, Result};
use crate::time::{frac, to_f64};
use std::cell::Cell;

/// Where spare space is and how slipped defects are absorbed (DiskSim's
/// "Sparing scheme used", 0..=10; see the module table).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Sparing {
    /// 0.
    None,
    /// 1: spare tracks at the end of each zone.
    Tracks,
    /// 2, 4 (slip to end), 5 (spares at front), 6 (front, slip to end).
    SectorsPerCylinder { front: bool, slip_to_end: bool },
    /// 3.
    SectorsPerTrack,
    /// 7: spares at the end of the disk; slips slide the zone's LBNs on.
    SectorsAtDiskEnd,
    /// 8: spares at the end of each range of `cylinders` cylinders.
    SectorsPerRange { cylinders: u32 },
    /// 9, 10 (slip to end).
    SectorsPerZone { slip_to_end: bool },
}

impl Sparing {
    /// DiskSim's scheme number; `range` is its "Rangesize for sparing".
    pub fn from_scheme(n: i64, range: u32) -> Option<Sparing> {
        Some(match n {
            0 => Sparing::None,
            1 => Sparing::Tracks,
            2 => Sparing::SectorsPerCylinder { front: false, slip_to_end: false },
            3 => Sparing::SectorsPerTrack,
            4 => Sparing::SectorsPerCylinder { front: false, slip_to_end: true },
            5 => Sparing::SectorsPerCylinder { front: true, slip_to_end: false },
            6 => Sparing::SectorsPerCylinder { front: true, slip_to_end: true },
            7 => Sparing::SectorsAtDiskEnd,
            8 => Sparing::SectorsPerRange { cylinders: range.max(1) },
            9 => Sparing::SectorsPerZone { slip_to_end: false },
            10 => Sparing::SectorsPerZone { slip_to_end: true },
            _ => return None,
        })
    }

    /// One line describing the scheme, for reports.
    pub fn describe(&self) -> String {
        match self {
            Sparing::None => "no spares".into(),
            Sparing::Tracks => "spare tracks at the end of each zone".into(),
            Sparing::SectorsPerCylinder { front, slip_to_end } => format!(
                "spare sectors at the {} of each cylinder{}",
                if *front { "front" } else { "end" },
                if *slip_to_end { ", slips slide to the zone's end" } else { "" }
            ),
            Sparing::SectorsPerTrack => "spare sectors at the end of each track".into(),
            Sparing::SectorsAtDiskEnd => "spares at the end of the disk, slips slide to the zone's end".into(),
            Sparing::SectorsPerRange { cylinders } => {
                format!("spare sectors at the end of each range of {cylinders} cylinders")
            }
            Sparing::SectorsPerZone { slip_to_end } => format!(
                "spare sectors at the end of each zone{}",
                if *slip_to_end { ", slips slide to the zone's end" } else { "" }
            ),
        }
    }

    /// Slipped defects push every later LBN of the zone on (rather than
    /// being absorbed by the spares of their own cylinder, track or range).
    fn slides(&self) -> bool {
        matches!(
            self,
            Sparing::SectorsPerCylinder { slip_to_end: true, .. }
                | Sparing::SectorsAtDiskEnd
                | Sparing::SectorsPerZone { slip_to_end: true }
        )
    }

    /// Whether slips before a cylinder (or track) rotate its skew on.
    fn slips_push_skew(&self) -> bool {
        matches!(self, Sparing::SectorsPerCylinder { .. } | Sparing::SectorsPerTrack)
    }
}

/// One zone (band) of cylinders with the same number of sectors per track.
#[derive(Clone, Debug, PartialEq)]
pub struct Zone {
    pub first_cyl: u32,
    pub last_cyl: u32,
    pub sectors_per_track: u32,
    /// Angle of physical sector 0 of the zone's first track, in sectors.
    pub offset: f64,
    /// Reserved LBN slots at the front of the zone (not mapped).
    pub deadspace: u64,
    /// Skews in sectors.
    pub track_skew: f64,
    pub cyl_skew: f64,
    /// "Number of spares": tracks (scheme 1) or sectors per cylinder,
    /// track, range or zone.
    pub spares: u64,
    /// Slipped positions (zone-relative, in logical track order): tracks
    /// for scheme 1, sectors otherwise. Sorted by `Layout::new`.
    pub slips: Vec<u64>,
    /// Remapped defects: (defective position, spare position it moved to).
    pub defects: Vec<(u64, u64)>,
    /// First LBN and number of LBNs; filled in by [`Layout::new`].
    pub first_lbn: u64,
    pub lbns: u64,
}

impl Zone {
    /// A zone without spares, slips or reserved space.
    pub fn plain(first_cyl: u32, last_cyl: u32, sectors_per_track: u32, track_skew: f64, cyl_skew: f64) -> Zone {
        Zone {
            first_cyl,
            last_cyl,
            sectors_per_track,
            offset: 0.0,
            deadspace: 0,
            track_skew,
            cyl_skew,
            spares: 0,
            slips: Vec::new(),
            defects: Vec::new(),
            first_lbn: 0,
            lbns: 0,
        }
    }

    fn cylinders(&self) -> u64 {
        (self.last_cyl - self.first_cyl + 1) as u64
    }
}

/// Where one LBN is, and how many LBNs follow it on consecutive sectors of
/// the same track.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Loc {
    pub cyl: u32,
    pub head: u32,
    pub sectors_per_track: u32,
    /// Physical sector index on the track (0 = the track's reference
    /// sector, before skew).
    pub sector: u32,
    /// LBNs from this one on consecutive physical sectors of this track
    /// (at least 1).
    pub run: u32,
    /// Angle at which the sector starts, in revolutions, in [0, 1).
    pub angle: f64,
}

/// A run of sectors located by [`Layout::locate_memo`]: LBN `lbn` is at
/// `loc`, on a track whose physical sector 0 is at angle `start` (sectors).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct RunMemo {
    lbn: u64,
    loc: Loc,
    start: f64,
}

/// Order of tracks within a cylinder (DiskSim's "LBN-to-PBN mapping scheme").
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mapping {
    /// 0: heads in order 0..S on every cylinder.
    Conventional,
    /// 1: reversed on odd cylinders counted from the zone's start.
    SerpentineZone,
    /// 2: reversed on odd cylinders counted from cylinder 0.
    SerpentineDisk,
}

/// How a zone's physical positions carry LBNs, derived from its sparing.
#[derive(Clone, Debug, PartialEq)]
struct ZoneMap {
    /// Physical sectors in the zone.
    sectors: u64,
    /// Sparing unit (track, cylinder, range, zone) in sectors, and the
    /// spare sectors in each full unit; a trailing partial unit (a last
    /// range shorter than the others) has no spares.
    unit: u64,
    unit_spares: u64,
    front: bool,
    slide: bool,
    /// Slide schemes: each slip's index among the zone's data positions,
    /// minus its rank (non-decreasing), so that the number of slips before
    /// LBN slot x is the number of entries <= x.
    slide_thresholds: Vec<u64>,
    /// Defective positions, sorted, with their remapped positions.
    defects: Vec<(u64, u64)>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    pub surfaces: u32,
    pub cylinders: u32,
    pub mapping: Mapping,
    pub sparing: Sparing,
    pub zones: Vec<Zone>,
    maps: Vec<ZoneMap>,
    capacity: u64,
    /// LBNs the zones map (the last zone's end), kept: every locate
    /// clamps to it.
    mapped: u64,
    /// Which zone holds an LBN, without a binary search over the zones on
    /// every locate: the LBN space is cut into slices of `1 << zone_shift`
    /// LBNs, and `zone_at[k]` is the zone of slice `k`'s first LBN; a zone
    /// boundary inside the slice is found by stepping on to the next zones
    /// (the slices are many times finer than the zones, so that is rare).
    /// Derived from `zones` in `new`.
    zone_at: Vec<u32>,
    zone_shift: u32,
}

impl Layout {
    /// Checks the zones and numbers their LBNs. `what` names the source (a
    /// preset or a file) in errors; remarks worth telling the user (a zone
    /// beyond the cylinder count, a block count below what the zones map)
    /// are pushed to `notes`. `block_count`, when given, must not exceed
    /// what the zones map; the device is then that big.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        what: &str,
        surfaces: u32,
        cylinders: u32,
        mapping: Mapping,
        sparing: Sparing,
        mut zones: Vec<Zone>,
        block_count: Option<u64>,
        notes: &mut Vec<String>,
    ) -> Result<Layout> {
        let bad = |m: String| Err(Error::invalid(what, m));
        if surfaces == 0 || cylinders == 0 || zones.is_empty() {
            return bad("a disk needs surfaces, cylinders and at least one zone".into());
        }
        // Zones may leave cylinders out (spare or servo cylinders between
        // zones, as in DiskSim's Seagate models) but must not overlap.
        let mut by_cyl: Vec<(u32, u32, usize)> =
            zones.iter().enumerate().map(|(i, z)| (z.first_cyl, z.last_cyl, i)).collect();
        by_cyl.sort_unstable();
        for (i, z) in zones.iter().enumerate() {
            if z.last_cyl < z.first_cyl {
                return bad(format!("zone {i}: last cylinder {} is before its first, {}", z.last_cyl, z.first_cyl));
            }
        }
        for w in by_cyl.windows(2) {
            if w[1].0 <= w[0].1 {
                return bad(format!(
                    "zone {}: cylinders {}..={} overlap zone {} ({}..={})",
                    w[1].2, w[1].0, w[1].1, w[0].2, w[0].0, w[0].1
                ));
            }
        }
        let top = by_cyl.last().map_or(0, |z| z.1);
        let mut cylinders = cylinders;
        if top >= cylinders {
            notes.push(format!(
                "{what}: zone {} ends at cylinder {top}, beyond the {cylinders} cylinders declared \
                 (0..={}); the layout has {} cylinders, as DiskSim's does",
                by_cyl.last().map_or(0, |z| z.2),
                cylinders - 1,
                top + 1
            ));
            cylinders = top + 1;
        }
        let s = surfaces as u64;
        let mut maps = Vec::with_capacity(zones.len());
        let mut lbn = 0u64;
        for (i, z) in zones.iter_mut().enumerate() {
            if z.sectors_per_track == 0 {
                return bad(format!("zone {i}: sectors per track must be positive"));
            }
            for (name, v) in [("offset", z.offset), ("track skew", z.track_skew), ("cylinder skew", z.cyl_skew)] {
                if !(v.is_finite() && v >= 0.0) {
                    return bad(format!("zone {i}: {name} must be a finite number >= 0, not {v}"));
                }
            }
            z.slips.sort_unstable();
            if z.slips.windows(2).any(|w| w[0] == w[1]) {
                return bad(format!("zone {i}: a slip is listed twice"));
            }
            z.defects.sort_unstable();
            let before = z.defects.len();
            z.defects.retain(|d| d.0 != d.1);
            if z.defects.len() < before {
                notes.push(format!(
                    "{what}: zone {i}: {} defect(s) remapped to themselves (a defective spare) change nothing, as in DiskSim",
                    before - z.defects.len()
                ));
            }
            let spt = z.sectors_per_track as u64;
            let tracks = z.cylinders() * s;
            let sectors = tracks * spt;
            let zm = match zone_map(i, z, sparing, s, sectors) {
                Ok(m) => m,
                Err(m) => return bad(m),
            };
            let data = zm.data_positions();
            let slid = if zm.slide { z.slips.len() as u64 } else { 0 };
            let usable = data.saturating_sub(slid);
            if z.deadspace >= usable {
                return bad(format!(
                    "zone {i}: empty space at zone front ({}) fills the zone's {usable} LBN slots",
                    z.deadspace
                ));
            }
            z.first_lbn = lbn;
            z.lbns = usable - z.deadspace;
            lbn += z.lbns;
            maps.push(zm);
        }
        let capacity = match block_count {
            Some(n) if n > lbn => {
                return bad(format!("block count {n} exceeds the {lbn} sectors the zones map"));
            }
            Some(n) => {
                if n < lbn {
                    notes.push(format!(
                        "{what}: the zones map {lbn} sectors; the disk exports its block count, {n} \
                         (DiskSim simulates all {lbn})"
                    ));
                }
                n
            }
            None => lbn,
        };
        if capacity == 0 {
            return bad("the disk holds no sectors".into());
        }
        let mapped = lbn;
        // Slices of 2^shift LBNs, at most 16 per zone.
        let most = 16 * zones.len() as u64;
        let mut zone_shift = 0;
        while (mapped - 1) >> zone_shift >= most {
            zone_shift += 1;
        }
        let zone_at = (0..=(mapped - 1) >> zone_shift)
            .map(|k| zones.partition_point(|z| z.first_lbn + z.lbns <= k << zone_shift) as u32)
            .collect();
        Ok(Layout { surfaces, cylinders, mapping, sparing, zones, maps, capacity, mapped, zone_at, zone_shift })
    }

    /// A single-zone disk, no reserved or spare space (e.g. the HP 97560
    /// as Ruemmler & Wilkes describe it).
    pub fn uniform(
        what: &str,
        surfaces: u32,
        cylinders: u32,
        sectors_per_track: u32,
        track_skew: f64,
        cyl_skew: f64,
    ) -> Result<Layout> {
        let zone = Zone::plain(0, cylinders.saturating_sub(1), sectors_per_track, track_skew, cyl_skew);
        Layout::new(what, surfaces, cylinders, Mapping::Conventional, Sparing::None, vec![zone], None, &mut Vec::new())
    }

    /// Size in sectors (the block count the disk exports).
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// LBNs the zones map (at least the capacity).
    pub fn mapped(&self) -> u64 {
        self.mapped
    }

    /// Index of the zone holding `lbn` (`lbn` < mapped): the first zone
    /// ending after it, as a binary search over the zones would find it.
    #[inline]
    fn zone_of(&self, lbn: u64) -> usize {
        let last = self.zones.len() - 1;
        let k = ((lbn >> self.zone_shift) as usize).min(self.zone_at.len() - 1);
        let mut zi = self.zone_at[k] as usize;
        while zi < last && self.zones[zi].first_lbn + self.zones[zi].lbns <= lbn {
            zi += 1;
        }
        zi
    }

    /// Cylinder holding `lbn` (clamped to the last sector).
    #[inline]
    pub fn cylinder_of(&self, lbn: u64) -> u32 {
        // locate's first steps only: schedulers ask this of every request
        // they weigh (WPCAS twice per decision), and need no angle or run.
        let lbn = lbn.min(self.mapped() - 1);
        let zi = self.zone_of(lbn);
        let z = &self.zones[zi];
        let track = self.position(zi, lbn).0 / z.sectors_per_track as u64;
        z.first_cyl + (track / self.surfaces as u64) as u32
    }

    /// The zone-relative physical position of `lbn` (in logical track
    /// order), and whether it was reached by a remapped defect.
    #[inline(always)]
    fn position(&self, zi: usize, lbn: u64) -> (u64, bool) {
        let z = &self.zones[zi];
        let m = &self.maps[zi];
        let x = lbn - z.first_lbn + z.deadspace;
        let p = if self.sparing == Sparing::Tracks {
            let spt = z.sectors_per_track as u64;
            let t = x / spt;
            let t = t + m.slide_thresholds.partition_point(|&th| th <= t) as u64;
            t * spt + x % spt
        } else if m.slide {
            let d = x + m.slide_thresholds.partition_point(|&th| th <= x) as u64;
            m.data_to_position(d)
        } else if m.unit_spares == 0 && z.slips.is_empty() {
            // No spares and no slips (most drives' zones, every preset's):
            // `unit_position` is the identity, without its divisions.
            x
        } else {
            m.unit_position(x, &z.slips)
        };
        if m.defects.is_empty() {
            return (p, false);
        }
        let key = if self.sparing == Sparing::Tracks { p / z.sectors_per_track as u64 } else { p };
        match m.defects.binary_search_by_key(&key, |d| d.0) {
            Ok(i) if self.sparing == Sparing::Tracks => {
                (m.defects[i].1 * z.sectors_per_track as u64 + p % z.sectors_per_track as u64, true)
            }
            Ok(i) => (m.defects[i].1, true),
            Err(_) => (p, false),
        }
    }

    /// Where `lbn` is (clamped to the last mapped sector).
    #[inline]
    pub fn locate(&self, lbn: u64) -> Loc {
        self.locate_run(lbn).0
    }

    /// [`Layout::locate`], answered from `memo` when `lbn` lies in the run
    /// of consecutive sectors located last, and remembering the run
    /// otherwise. A drive locates the same few tracks many times per
    /// request (the read-ahead's progress, the request's own sectors, the
    /// next track's), almost always within one run, where the answer
    /// follows from the run's first sector: the same track, `d` sectors on,
    /// `d` fewer left in the run, and the angle computed by the same
    /// expression from the same track start, so it is bit for bit what
    /// `locate` gives (checked over whole drives by a test).
    #[inline]
    pub fn locate_memo(&self, lbn: u64, memo: &Cell<Option<RunMemo>>) -> Loc {
        if let Some(m) = memo.get() {
            let d = lbn.wrapping_sub(m.lbn);
            if d < m.loc.run as u64 {
                let sector = m.loc.sector + d as u32;
                let revs = (m.start + sector as f64) / m.loc.sectors_per_track as f64;
                return Loc { sector, run: m.loc.run - d as u32, angle: frac(revs), ..m.loc };
            }
        }
        let (loc, start) = self.locate_run(lbn);
        // A clamped LBN (beyond the mapped ones) is not remembered: its run
        // belongs to the last sector.
        if lbn < self.mapped() {
            memo.set(Some(RunMemo { lbn, loc, start }));
        }
        loc
    }

    /// Where `lbn` is, and the angle of its track's physical sector 0 (in
    /// sectors, not reduced).
    #[inline]
    fn locate_run(&self, lbn: u64) -> (Loc, f64) {
        let lbn = lbn.min(self.mapped() - 1);
        let zi = self.zone_of(lbn);
        let z = &self.zones[zi];
        let (p, remapped) = self.position(zi, lbn);
        let spt = z.sectors_per_track as u64;
        let s = self.surfaces as u64;
        let track = p / spt;
        let sector = p % spt;
        let cyl_rel = track / s;
        let surf = (track % s) as u32;
        let cyl = z.first_cyl + cyl_rel as u32;
        let odd = match self.mapping {
            Mapping::Conventional => false,
            Mapping::SerpentineZone => cyl_rel % 2 == 1,
            Mapping::SerpentineDisk => cyl % 2 == 1,
        };
        let head = if odd { self.surfaces - 1 - surf } else { surf };
        let start = self.track_start(zi, track, surf as u64, cyl_rel);
        let revs = (start + to_f64(sector)) / to_f64(spt);
        let run = if remapped { 1 } else { self.run_from(zi, lbn, p) };
        let loc = Loc {
            cyl,
            head,
            sectors_per_track: z.sectors_per_track,
            sector: sector as u32,
            run: run as u32,
            // revs >= 0 (offsets and skews are): the fractional part by
            // conversion, which is cheaper than floor().
            angle: frac(revs),
        };
        (loc, start)
    }

    /// Angle (in sectors, not reduced) of physical sector 0 of zone track
    /// `track` (cylinder `cyl_rel`, logical head `surf`).
    #[inline]
    fn track_start(&self, zi: usize, track: u64, surf: u64, cyl_rel: u64) -> f64 {
        let z = &self.zones[zi];
        let switches = to_f64(surf) + (self.surfaces - 1) as f64 * to_f64(cyl_rel);
        let mut start = z.offset + switches * z.track_skew + to_f64(cyl_rel) * z.cyl_skew;
        if self.sparing.slips_push_skew() && !z.slips.is_empty() {
            let spt = z.sectors_per_track as u64;
            let cutoff = match self.sparing {
                Sparing::SectorsPerTrack => track * spt,
                _ => cyl_rel * self.surfaces as u64 * spt,
            };
            start += z.slips.partition_point(|&sl| sl < cutoff) as f64;
        }
        start
    }

    /// LBNs from `lbn` (at position `p`) on consecutive physical sectors of
    /// one track: up to the track's end, a slipped or spare sector, a
    /// remapped defect, or the end of the device.
    #[inline]
    fn run_from(&self, zi: usize, lbn: u64, p: u64) -> u64 {
        let z = &self.zones[zi];
        let m = &self.maps[zi];
        let spt = z.sectors_per_track as u64;
        let mut run = (spt - p % spt).min(z.first_lbn + z.lbns - lbn);
        if self.sparing == Sparing::Tracks {
            // Slips and defects are whole tracks: a track is all or nothing.
        } else {
            run = run.min(m.data_end_after(p, &z.slips) - p);
            let i = z.slips.partition_point(|&sl| sl <= p);
            if let Some(&next) = z.slips.get(i) {
                run = run.min(next - p);
            }
        }
        if !m.defects.is_empty() {
            let key = if self.sparing == Sparing::Tracks { p / spt } else { p };
            let i = m.defects.partition_point(|d| d.0 <= key);
            if let Some(&(next, _)) = m.defects.get(i) {
                let next = if self.sparing == Sparing::Tracks { next * spt } else { next };
                run = run.min(next - p);
            }
        }
        run.max(1)
    }

    /// The first and the last LBN on the track holding `lbn`. A track's
    /// LBNs are consecutive (remapped defects aside) and lie in one zone, so
    /// two binary searches over the track's width find them, comparing
    /// zone positions (cheaper than locating each probe). A zone with
    /// remapped defects is walked run by run instead: a remapped LBN sits
    /// on another track and ends the span.
    pub fn track_span(&self, lbn: u64) -> (u64, u64) {
        let lbn = lbn.min(self.mapped() - 1);
        let zi = self.zone_of(lbn);
        let z = &self.zones[zi];
        let spt = z.sectors_per_track as u64;
        let (zone_first, zone_end) = (z.first_lbn, z.first_lbn + z.lbns);
        let track = self.position(zi, lbn).0 / spt;
        let on = |x: u64| self.position(zi, x).0 / spt == track;
        // First: smallest x in [lbn - spt, lbn] on the track.
        let (mut lo, mut hi) = (lbn.saturating_sub(spt).max(zone_first), lbn);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if on(mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let first = lo;
        if self.maps[zi].defects.is_empty() {
            // Last: largest x in [lbn, lbn + spt] on the track.
            let (mut lo, mut hi) = (lbn, (lbn + spt).min(zone_end - 1));
            while lo < hi {
                let mid = hi - (hi - lo) / 2;
                if on(mid) {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            return (first, lo);
        }
        let here = self.locate(lbn);
        let mut end = lbn + here.run as u64;
        while end < zone_end && on(end) {
            end += self.locate(end).run as u64;
        }
        (first, end - 1)
    }

    /// The last LBN on the track holding `lbn`.
    pub fn track_last_lbn(&self, lbn: u64) -> u64 {
        self.track_span(lbn).1
    }
}

/// Builds the mapping of zone `i`, or says why its spares do not fit.
fn zone_map(i: usize, z: &Zone, sparing: Sparing, s: u64, sectors: u64) -> Result<ZoneMap, String> {
    let spt = z.sectors_per_track as u64;
    let cyl = s * spt;
    let (unit, unit_spares, front) = match sparing {
        Sparing::None | Sparing::SectorsAtDiskEnd => (sectors, 0, false),
        Sparing::Tracks => (sectors, z.spares * spt, false),
        Sparing::SectorsPerCylinder { front, .. } => (cyl, z.spares, front),
        Sparing::SectorsPerTrack => (spt, z.spares, false),
        Sparing::SectorsPerRange { cylinders } => (cylinders as u64 * cyl, z.spares, false),
        Sparing::SectorsPerZone { .. } => (sectors, z.spares, false),
    };
    let what = match sparing {
        Sparing::Tracks => "tracks",
        _ => "sectors",
    };
    if sparing == Sparing::None && (!z.slips.is_empty() || !z.defects.is_empty()) {
        return Err(format!("zone {i}: slips or defects need a sparing scheme other than 0 (none)"));
    }
    if sparing == Sparing::SectorsAtDiskEnd && z.spares != 0 {
        return Err(format!(
            "zone {i}: sparing scheme 7 keeps its spares at the end of the disk; 'Number of spares' must be 0 \
             (DiskSim 4.0 would map LBNs past the zone's end), not {}",
            z.spares
        ));
    }
    if unit_spares >= unit.min(sectors) && sparing != Sparing::None {
        return Err(format!(
            "zone {i}: {} spare {what} leave no room for data in each {} {what}",
            z.spares,
            if sparing == Sparing::Tracks { unit / spt } else { unit }
        ));
    }
    let mut m = ZoneMap {
        sectors,
        unit,
        unit_spares,
        front,
        slide: sparing.slides(),
        slide_thresholds: Vec::new(),
        defects: z.defects.clone(),
    };
    let limit = if sparing == Sparing::Tracks { sectors / spt } else { sectors };
    for p in z.slips.iter().copied().chain(z.defects.iter().flat_map(|d| [d.0, d.1])) {
        if p >= limit {
            return Err(format!(
                "zone {i}: slip or defect at {what} {p} lies outside the zone (0..{limit} zone-relative {what})"
            ));
        }
    }
    if sparing == Sparing::Tracks {
        // Every slipped or remapped track uses one spare track (DiskSim
        // checks the same).
        let used = (z.slips.len() + z.defects.len()) as u64;
        if used > z.spares {
            return Err(format!(
                "zone {i}: {} slipped and {} remapped tracks need as many spare tracks, the zone has {}",
                z.slips.len(),
                z.defects.len(),
                z.spares
            ));
        }
        m.slide_thresholds = z.slips.iter().enumerate().map(|(k, &t)| t - k as u64).collect();
    } else if m.slide {
        // Slips must lie in data areas; the zone then holds that many fewer
        // LBNs, every later one sliding on.
        let mut th = Vec::with_capacity(z.slips.len());
        for (k, &p) in z.slips.iter().enumerate() {
            match m.position_to_data(p) {
                Some(d) => th.push(d - k as u64),
                None => {
                    return Err(format!("zone {i}: slipped sector {p} lies in a spare area (sparing scheme slides slips on)"))
                }
            }
        }
        m.slide_thresholds = th;
    } else {
        // Slips use the spares of their own unit: no more than it has.
        let mut k = 0;
        while k < z.slips.len() {
            let u = z.slips[k] / unit;
            let n = z.slips[k..].iter().take_while(|&&p| p / unit == u).count();
            let spares_here = if (u + 1) * unit <= sectors { unit_spares } else { 0 };
            if n as u64 > spares_here {
                return Err(format!(
                    "zone {i}: {n} slipped sectors in {} {u} need as many spare sectors, it has {spares_here}",
                    match sparing {
                        Sparing::SectorsPerTrack => "track",
                        Sparing::SectorsPerCylinder { .. } => "cylinder",
                        Sparing::SectorsPerRange { .. } => "range",
                        _ => "zone",
                    }
                ));
            }
            for &p in &z.slips[k..k + n] {
                if m.position_to_data(p).is_none() {
                    return Err(format!("zone {i}: slipped sector {p} lies in a spare area"));
                }
            }
            k += n;
        }
    }
    for &(from, to) in &z.defects {
        if !m.holds_data(sparing, &z.slips, from, spt) {
            return Err(format!("zone {i}: remapped defect {from} is not a data {}", &what[..what.len() - 1]));
        }
        if m.holds_data(sparing, &z.slips, to, spt) {
            return Err(format!("zone {i}: defect {from} is remapped to {to}, which holds data, not a spare"));
        }
    }
    Ok(m)
}

impl ZoneMap {
    fn full_units(&self) -> u64 {
        self.sectors / self.unit
    }
    fn unit_data(&self) -> u64 {
        self.unit - self.unit_spares
    }
    fn tail(&self) -> u64 {
        self.sectors % self.unit
    }
    /// Data positions in the zone before slips.
    fn data_positions(&self) -> u64 {
        self.full_units() * self.unit_data() + self.tail()
    }

    /// Index of position `p` among the zone's data positions (slips
    /// included), or None in a spare area.
    fn position_to_data(&self, p: u64) -> Option<u64> {
        let u = p / self.unit;
        let off = p % self.unit;
        if u >= self.full_units() {
            return Some(u * self.unit_data() + off);
        }
        let d = if self.front { off.checked_sub(self.unit_spares)? } else { (off < self.unit_data()).then_some(off)? };
        Some(u * self.unit_data() + d)
    }

    /// Whether position `p` (a track for scheme 1) carries an LBN, slips
    /// and the spares they use taken into account.
    fn holds_data(&self, sparing: Sparing, slips: &[u64], p: u64, spt: u64) -> bool {
        if slips.binary_search(&p).is_ok() {
            return false;
        }
        if sparing == Sparing::Tracks {
            // The first `tracks - spares` unslipped tracks carry data.
            let before = slips.partition_point(|&s| s < p) as u64;
            return p - before < (self.sectors - self.unit_spares) / spt;
        }
        if self.slide {
            return self.position_to_data(p).is_some();
        }
        let u = p / self.unit;
        if u >= self.full_units() {
            return true;
        }
        let base = u * self.unit;
        let n = (slips.partition_point(|&s| s < base + self.unit) - slips.partition_point(|&s| s < base)) as u64;
        let off = p - base;
        if self.front {
            off + n >= self.unit_spares
        } else {
            off < self.unit_data() + n
        }
    }

    /// Position of the `d`-th data position (slide schemes).
    #[inline]
    fn data_to_position(&self, d: u64) -> u64 {
        let ud = self.unit_data();
        let u = d / ud;
        if u >= self.full_units() {
            return self.full_units() * self.unit + (d - self.full_units() * ud);
        }
        u * self.unit + if self.front { self.unit_spares } else { 0 } + d % ud
    }

    /// Position of LBN slot `x` when slips use their own unit's spares.
    #[inline]
    fn unit_position(&self, x: u64, slips: &[u64]) -> u64 {
        let ud = self.unit_data();
        let (u, r, data) = if x / ud >= self.full_units() {
            (self.full_units(), x - self.full_units() * ud, self.tail())
        } else {
            (x / ud, x % ud, ud)
        };
        let base = u * self.unit;
        let size = if u >= self.full_units() { self.tail() } else { self.unit };
        if slips.is_empty() {
            return base + if self.front && size == self.unit { self.unit_spares } else { 0 } + r;
        }
        let lo = slips.partition_point(|&p| p < base);
        let hi = slips.partition_point(|&p| p < base + size);
        let here = &slips[lo..hi];
        if self.front && size == self.unit {
            // The data are the last `data` unslipped positions of the unit:
            // count from its end.
            let from_end = data - 1 - r;
            let mut k = 0u64;
            for &sl in here.iter().rev() {
                if base + size - 1 - sl <= from_end + k {
                    k += 1;
                } else {
                    break;
                }
            }
            base + size - 1 - (from_end + k)
        } else {
            let mut k = 0u64;
            for &sl in here {
                if sl - base <= r + k {
                    k += 1;
                } else {
                    break;
                }
            }
            base + r + k
        }
    }

    /// The first position after `p` that is not in `p`'s data area (the
    /// start of the unit's spares, pushed on by the unit's own slips when
    /// they use its spares, or the end of the unit).
    #[inline]
    fn data_end_after(&self, p: u64, slips: &[u64]) -> u64 {
        let u = p / self.unit;
        let base = u * self.unit;
        if u >= self.full_units() {
            return self.sectors;
        }
        if self.front {
            return base + self.unit;
        }
        let mut end = base + self.unit_data();
        if !self.slide && !slips.is_empty() {
            let n = slips.partition_point(|&s| s < base + self.unit) - slips.partition_point(|&s| s < base);
            end += n as u64;
        }
        end
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hp() -> Layout {
        Layout::uniform("hp97560", 19, 1962, 72, 8.0, 18.0).unwrap()
    }

    /// (cylinder, head, sector) of an LBN.
    fn chs(l: &Layout, lbn: u64) -> (u32, u32, u32) {
        let loc = l.locate(lbn);
        (loc.cyl, loc.head, loc.sector)
    }

    fn zone(first: u32, last: u32, spt: u32, spares: u64, slips: Vec<u64>, dead: u64) -> Zone {
        Zone { spares, slips, deadspace: dead, ..Zone::plain(first, last, spt, 1.0, 2.0) }
    }

    fn layout(s: u32, cyls: u32, sparing: Sparing, zones: Vec<Zone>) -> Layout {
        Layout::new("t", s, cyls, Mapping::Conventional, sparing, zones, None, &mut Vec::new()).unwrap()
    }

    /// The slice index finds the zone a binary search over the zones
    /// finds, around every zone and slice boundary, for zones of very
    /// different sizes (a one-cylinder zone inside a slice too) and for
    /// one zone.
    #[test]
    fn zone_index_agrees_with_a_binary_search() {
        let mut first = 0;
        let many: Vec<Zone> = (0..40u32)
            .map(|i| {
                let len = if i % 3 == 0 { 1 } else { 1 + i * i };
                first += len;
                zone(first - len, first - 1, 40 + (i * 7) % 50, 0, vec![], 0)
            })
            .collect();
        let cyls = many.last().map(|z| z.last_cyl + 1).unwrap();
        for l in [hp(), layout(4, cyls, Sparing::None, many)] {
            let mapped = l.mapped();
            assert_eq!(mapped, l.zones.last().map(|z| z.first_lbn + z.lbns).unwrap());
            let mut visit: Vec<u64> = Vec::new();
            for z in &l.zones {
                visit.extend(z.first_lbn.saturating_sub(3)..z.first_lbn + 3);
            }
            for k in 0..l.zone_at.len() as u64 {
                let b = k << l.zone_shift;
                visit.extend(b.saturating_sub(2)..b + 2);
            }
            visit.extend((0..1000).map(|i| i * (mapped / 1000)));
            for lbn in visit.into_iter().filter(|&x| x < mapped) {
                let want = l.zones.partition_point(|z| z.first_lbn + z.lbns <= lbn).min(l.zones.len() - 1);
                assert_eq!(l.zone_of(lbn), want, "LBN {lbn}");
            }
        }
    }

    /// The shortcut in `position` for zones without spares or slips is
    /// what `unit_position` computes there.
    #[test]
    fn zones_without_spares_or_slips_map_lbn_slots_to_themselves() {
        for sparing in [Sparing::None, Sparing::SectorsAtDiskEnd, Sparing::SectorsPerTrack,
                        Sparing::SectorsPerCylinder { front: true, slip_to_end: false }] {
            let l = layout(2, 4, sparing, vec![zone(0, 1, 5, 0, vec![], 0), zone(2, 3, 7, 0, vec![], 2)]);
            for (zi, z) in l.zones.iter().enumerate() {
                let m = &l.maps[zi];
                assert_eq!(m.unit_spares, 0);
                for x in 0..m.sectors {
                    assert_eq!(m.unit_position(x, &z.slips), x, "{sparing:?} zone {zi} slot {x}");
                }
                for lbn in z.first_lbn..z.first_lbn + z.lbns {
                    assert_eq!(l.position(zi, lbn).0, lbn - z.first_lbn + z.deadspace);
                }
            }
        }
    }

    #[test]
    fn uniform_mapping_round_trips() {
        let l = hp();
        assert_eq!(l.capacity(), 1962 * 19 * 72);
        for lbn in [0u64, 1, 71, 72, 72 * 19 - 1, 72 * 19, 1_000_003, l.capacity() - 1] {
            let loc = l.locate(lbn);
            let back = (loc.cyl as u64 * 19 + loc.head as u64) * 72 + loc.sector as u64;
            assert_eq!(back, lbn, "{loc:?}");
        }
        assert_eq!(l.locate(0).run, 72);
        assert_eq!(l.locate(70).run, 2);
        assert_eq!(l.track_last_lbn(100), 143);
        assert_eq!(l.track_span(100), (72, 143));
        assert_eq!(l.track_span(0), (0, 71));
    }

    #[test]
    fn skews_rotate_the_first_sector_of_each_track() {
        let l = hp();
        let a = |lbn: u64| (l.locate(lbn).angle * 72.0).round() as u64 % 72;
        assert_eq!(a(0), 0);
        assert_eq!(a(72), 8, "one head switch: one track skew");
        assert_eq!(a(72 * 2), 16);
        // First track of cylinder 1: 18 track switches within cylinder 0's
        // 19 tracks, then one cylinder skew.
        assert_eq!(a(72 * 19), (18 * 8 + 18) % 72);
        assert_eq!(a(72 * 19 + 5), (18 * 8 + 18 + 5) % 72);
    }

    #[test]
    fn track_sparing_slips_deadspace_and_spares() {
        // Scheme 1. 2 surfaces; zone 0: cylinders 0..=2 (6 tracks) of 10
        // sectors, 2 spare tracks, track 1 slipped, 10 slots reserved.
        let zs = vec![zone(0, 2, 10, 2, vec![1], 10), zone(3, 4, 8, 0, vec![], 0)];
        let l = layout(2, 5, Sparing::Tracks, zs);
        assert_eq!(l.zones[0].lbns, 6 * 10 - 2 * 10 - 10);
        assert_eq!(l.capacity(), 30 + 4 * 8);
        // LBN 0 is slot 10: logical track 1, which is slipped: physical
        // track 2 = cylinder 1, head 0.
        assert_eq!(chs(&l, 0), (1, 0, 0));
        assert_eq!(chs(&l, 10), (1, 1, 0));
        assert_eq!(chs(&l, 29), (2, 0, 9));
        assert_eq!(l.locate(29).run, 1);
        // Zone 1 starts at cylinder 3.
        assert_eq!(chs(&l, 30), (3, 0, 0));
        assert_eq!(l.locate(30).sectors_per_track, 8);
    }

    #[test]
    fn sectors_per_track_sparing() {
        // Scheme 3 (the DEC RZ26's): 10 sectors per track, 2 spares each:
        // 8 LBNs per track; a slip at zone sector 13 (track 1, sector 3)
        // moves track 1's LBNs 3.. one sector on.
        let l = layout(2, 2, Sparing::SectorsPerTrack, vec![zone(0, 1, 10, 2, vec![13], 0)]);
        assert_eq!(l.capacity(), 4 * 8);
        assert_eq!(chs(&l, 7), (0, 0, 7));
        assert_eq!(chs(&l, 8), (0, 1, 0));
        assert_eq!(chs(&l, 10), (0, 1, 2));
        assert_eq!(chs(&l, 11), (0, 1, 4), "sector 3 is slipped");
        assert_eq!(chs(&l, 15), (0, 1, 8));
        assert_eq!(chs(&l, 16), (1, 0, 0));
        assert_eq!(l.locate(8).run, 3, "the run stops at the slip");
        assert_eq!(l.locate(11).run, 5, "and at the track's spares");
        // Slips push the skew of later tracks on (DiskSim's g1 layout):
        // track 2 starts 2 + 1 switches... one track skew (1) per head
        // switch, one cylinder skew (2) per cylinder, plus the slip.
        let a = |lbn: u64| l.locate(lbn).angle * 10.0;
        assert!((a(16) - (1.0 + 2.0 + 1.0)).abs() < 1e-9, "{}", a(16));
        assert!((a(8) - 1.0).abs() < 1e-9, "no slip before track 1");
        let e = Layout::new("t", 2, 2, Mapping::Conventional, Sparing::SectorsPerTrack,
            vec![zone(0, 1, 10, 1, vec![12, 13], 0)], None, &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("2 slipped sectors in track 1 need as many spare sectors, it has 1"), "{e}");
    }

    #[test]
    fn sectors_per_cylinder_sparing_end_and_front() {
        // 2 surfaces x 5 sectors = 10 per cylinder, 2 spares: 8 LBNs each.
        let end = layout(2, 2, Sparing::SectorsPerCylinder { front: false, slip_to_end: false },
            vec![zone(0, 1, 5, 2, vec![3], 0)]);
        assert_eq!(end.capacity(), 16);
        assert_eq!(chs(&end, 2), (0, 0, 2));
        assert_eq!(chs(&end, 3), (0, 0, 4), "slip at 3 uses one of the cylinder's spares");
        assert_eq!(chs(&end, 7), (0, 1, 3));
        assert_eq!(chs(&end, 8), (1, 0, 0), "the cylinder's last sector stays spare");
        // Front: spares at positions 0 and 1 of each cylinder; the slip at
        // 3 moves the data start one sector earlier (using a spare).
        let front = layout(2, 2, Sparing::SectorsPerCylinder { front: true, slip_to_end: false },
            vec![zone(0, 1, 5, 2, vec![3], 0)]);
        assert_eq!(front.capacity(), 16);
        assert_eq!(chs(&front, 0), (0, 0, 1));
        assert_eq!(chs(&front, 1), (0, 0, 2));
        assert_eq!(chs(&front, 2), (0, 0, 4));
        assert_eq!(chs(&front, 7), (0, 1, 4));
        assert_eq!(chs(&front, 8), (1, 0, 2));
    }

    #[test]
    fn slip_to_end_schemes_slide_later_lbns() {
        // Scheme 4: cylinder spares are kept; the slip at 3 pushes every
        // later LBN on, over cylinder boundaries, skipping the spares.
        let l = layout(2, 2, Sparing::SectorsPerCylinder { front: false, slip_to_end: true },
            vec![zone(0, 1, 5, 2, vec![3], 0)]);
        assert_eq!(l.capacity(), 16 - 1);
        assert_eq!(chs(&l, 3), (0, 0, 4));
        assert_eq!(chs(&l, 7), (1, 0, 0), "LBN 7 slid past the cylinder's spares");
        assert_eq!(chs(&l, 14), (1, 1, 2));
        // Scheme 7 (IBM 18ES, Atlas III): no spares in the zone; each slip
        // costs the zone one LBN.
        let l = layout(2, 2, Sparing::SectorsAtDiskEnd, vec![zone(0, 1, 5, 0, vec![0, 6], 0)]);
        assert_eq!(l.capacity(), 18);
        assert_eq!(chs(&l, 0), (0, 0, 1));
        assert_eq!(chs(&l, 4), (0, 1, 0));
        assert_eq!(chs(&l, 5), (0, 1, 2), "slip at 6 (head 1 sector 1)");
        assert_eq!(chs(&l, 17), (1, 1, 4));
        // Scheme 10: zone spares plus the slips.
        let l = layout(2, 2, Sparing::SectorsPerZone { slip_to_end: true }, vec![zone(0, 1, 5, 3, vec![6], 0)]);
        assert_eq!(l.capacity(), 20 - 3 - 1);
        assert_eq!(chs(&l, 6), (0, 1, 2));
        assert_eq!(chs(&l, 15), (1, 1, 1));
        assert!(Layout::new("t", 2, 2, Mapping::Conventional, Sparing::SectorsAtDiskEnd,
            vec![zone(0, 1, 5, 4, vec![], 0)], None, &mut Vec::new()).is_err(), "scheme 7 takes no zone spares");
    }

    #[test]
    fn sectors_per_range_and_per_zone() {
        // Scheme 8 (Seagate Barracuda: ranges of 6 cylinders): 3 cylinders
        // of 2 x 4 sectors, ranges of 2 cylinders with 3 spares; the last
        // cylinder is a partial range without spares.
        let l = layout(2, 3, Sparing::SectorsPerRange { cylinders: 2 }, vec![zone(0, 2, 4, 3, vec![2], 0)]);
        assert_eq!(l.capacity(), 24 - 3);
        assert_eq!(chs(&l, 1), (0, 0, 1));
        assert_eq!(chs(&l, 2), (0, 0, 3), "slip at 2 uses the range's spares");
        assert_eq!(chs(&l, 12), (1, 1, 1), "the range's last 3 sectors stay spare");
        assert_eq!(chs(&l, 13), (2, 0, 0), "next range");
        assert_eq!(chs(&l, 20), (2, 1, 3));
        // Scheme 9 (Atlas 10K, Cheetah 9LP): spares at the zone's end.
        let l = layout(2, 2, Sparing::SectorsPerZone { slip_to_end: false }, vec![zone(0, 1, 5, 3, vec![4], 2)]);
        assert_eq!(l.capacity(), 20 - 3 - 2);
        assert_eq!(chs(&l, 0), (0, 0, 2), "2 reserved slots up front");
        assert_eq!(chs(&l, 2), (0, 1, 0), "slip at 4");
        assert_eq!(chs(&l, 14), (1, 1, 2));
    }

    #[test]
    fn remapped_defects() {
        // Scheme 9 with sector 1 remapped to spare 18.
        let mut z = zone(0, 1, 5, 3, vec![], 0);
        z.defects = vec![(1, 18)];
        let l = layout(2, 2, Sparing::SectorsPerZone { slip_to_end: false }, vec![z]);
        assert_eq!(chs(&l, 1), (1, 1, 3));
        assert_eq!(l.locate(1).run, 1);
        assert_eq!(l.locate(0).run, 1, "the run stops before the defect");
        assert_eq!(chs(&l, 2), (0, 0, 2));
        // Scheme 1: track 0 remapped to spare track 3.
        let mut z = zone(0, 1, 5, 1, vec![], 0);
        z.defects = vec![(0, 3)];
        let l = layout(2, 2, Sparing::Tracks, vec![z]);
        assert_eq!(chs(&l, 0), (1, 1, 0));
        assert_eq!(chs(&l, 4), (1, 1, 4));
        assert_eq!(chs(&l, 5), (0, 1, 0));
        let mut z = zone(0, 1, 5, 3, vec![], 0);
        z.defects = vec![(1, 2)];
        let e = Layout::new("t", 2, 2, Mapping::Conventional, Sparing::SectorsPerZone { slip_to_end: false },
            vec![z], None, &mut Vec::new()).unwrap_err();
        assert!(e.to_string().contains("which holds data"), "{e}");
    }

    #[test]
    fn zone_tables_as_disksim_accepts_them() {
        // Gaps between zones (the Barracuda skips a cylinder between
        // zones), zones beyond the declared cylinders (the HP C2490A's
        // last zone ends at cylinder 2629 of 2629), and overlaps refused.
        let mut notes = Vec::new();
        let zs = vec![zone(0, 1, 4, 0, vec![], 0), zone(3, 5, 4, 0, vec![], 0)];
        let l = Layout::new("t", 1, 5, Mapping::Conventional, Sparing::None, zs, None, &mut notes).unwrap();
        assert_eq!(l.cylinders, 6);
        assert_eq!(chs(&l, 8), (3, 0, 0), "cylinder 2 holds no data");
        assert!(notes[0].contains("zone 1 ends at cylinder 5, beyond the 5 cylinders declared"), "{notes:?}");
        let zs = vec![zone(0, 2, 4, 0, vec![], 0), zone(2, 5, 4, 0, vec![], 0)];
        let e = Layout::new("t", 1, 6, Mapping::Conventional, Sparing::None, zs, None, &mut notes).unwrap_err();
        assert!(e.to_string().contains("zone 1: cylinders 2..=5 overlap zone 0"), "{e}");
        let e = Layout::new("t", 1, 6, Mapping::Conventional, Sparing::Tracks, vec![zone(0, 2, 4, 1, vec![7], 0)],
            None, &mut notes).unwrap_err();
        assert!(e.to_string().contains("outside the zone"), "{e}");
        let mut z = zone(0, 2, 4, 0, vec![], 0);
        z.track_skew = -3.0;
        let e = Layout::new("t", 1, 6, Mapping::Conventional, Sparing::None, vec![z], None, &mut notes).unwrap_err();
        assert!(e.to_string().contains("track skew must be a finite number >= 0, not -3"), "{e}");
    }

    #[test]
    fn serpentine_reverses_heads_on_odd_cylinders() {
        let l = Layout::new("t", 3, 4, Mapping::SerpentineZone, Sparing::None, vec![zone(0, 3, 4, 0, vec![], 0)],
            None, &mut Vec::new()).unwrap();
        assert_eq!(l.locate(2 * 4).head, 2);
        assert_eq!(l.locate(3 * 4).head, 2, "cylinder 1 starts on the last head");
        assert_eq!(l.locate(5 * 4).head, 0);
    }
}

//! Zoned geometry: where a logical block (LBN, a 512-byte sector) lives.
//!
//! The model is DiskSim 4.0's "g1" layout as its parameter documentation
//! describes it (facts, not code): cylinders are grouped in zones with a
//! fixed number of sectors per track; LBNs run along track 0 of the zone's
//! first cylinder, then track 1, ... (mapping 0), or serpentine on odd
//! cylinders (mappings 1 and 2); a zone may begin with reserved space
//! ("empty space at zone front", in sectors); whole spare tracks sit at its
//! end (sparing scheme 1) and defective tracks listed as "slips" are
//! skipped, each using up one spare. The first LBN of each physical track
//! is rotated by a skew so that a sequential transfer crossing a track or
//! cylinder boundary finds its next sector just arriving under the head:
//! on physical track (c, h) of a zone, relative cylinder c' = c - first,
//! sector s starts at angle
//!   (offset + (h + (S-1)·c')·track_skew + c'·cyl_skew + s) / spt
//! revolutions (S surfaces): every head switch adds a track skew, every
//! cylinder switch a cylinder skew instead.

use crate::error::{Error, Result};

/// One zone (band) of cylinders with the same number of sectors per track.
#[derive(Clone, Debug, PartialEq)]
pub struct Zone {
    pub first_cyl: u32,
    pub last_cyl: u32,
    pub sectors_per_track: u32,
    /// Angle of physical sector 0 of the zone's first track, in sectors.
    pub offset: f64,
    /// Reserved sectors at the front of the zone (not mapped).
    pub deadspace: u32,
    /// Skews in sectors.
    pub track_skew: f64,
    pub cyl_skew: f64,
    /// Spare tracks at the end of the zone (sparing scheme 1).
    pub spare_tracks: u32,
    /// Slipped (skipped) physical tracks, numbered from the zone's first
    /// track (cylinder-major), sorted.
    pub slips: Vec<u32>,
    /// First LBN and number of LBNs; filled in by [`Layout::new`].
    pub first_lbn: u64,
    pub lbns: u64,
}

/// Where one LBN is, and how many LBNs follow it on the same track.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Loc {
    pub cyl: u32,
    pub head: u32,
    pub sectors_per_track: u32,
    /// Sector index on the track, in LBN order (0 = first mapped sector).
    pub sector: u32,
    /// LBNs from this one to the end of the track (at least 1).
    pub run: u32,
    /// Angle at which the sector starts, in revolutions, in [0, 1).
    pub angle: f64,
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

#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    pub surfaces: u32,
    pub cylinders: u32,
    pub mapping: Mapping,
    pub zones: Vec<Zone>,
    capacity: u64,
}

impl Layout {
    /// Checks the zones and numbers their LBNs. `what` names the source
    /// (a preset or a file) in errors. `block_count`, when given, must not
    /// exceed what the zones hold; the device is then that big.
    pub fn new(
        what: &str,
        surfaces: u32,
        cylinders: u32,
        mapping: Mapping,
        mut zones: Vec<Zone>,
        block_count: Option<u64>,
    ) -> Result<Layout> {
        let bad = |m: String| Err(Error::invalid(what, m));
        if surfaces == 0 || cylinders == 0 || zones.is_empty() {
            return bad("a disk needs surfaces, cylinders and at least one zone".into());
        }
        let mut next_cyl = 0;
        let mut lbn = 0u64;
        for (i, z) in zones.iter_mut().enumerate() {
            if z.first_cyl != next_cyl || z.last_cyl < z.first_cyl || z.last_cyl >= cylinders {
                return bad(format!(
                    "zone {i}: cylinders {}..={} do not follow on from {next_cyl} within 0..{cylinders}",
                    z.first_cyl, z.last_cyl
                ));
            }
            next_cyl = z.last_cyl + 1;
            if z.sectors_per_track == 0 {
                return bad(format!("zone {i}: sectors per track must be positive"));
            }
            z.slips.sort_unstable();
            let tracks = (z.last_cyl - z.first_cyl + 1) as u64 * surfaces as u64;
            let spare = z.spare_tracks as u64;
            if spare < z.slips.len() as u64 || spare >= tracks {
                return bad(format!(
                    "zone {i}: {} slipped tracks need as many spares (have {spare} of {tracks} tracks)",
                    z.slips.len()
                ));
            }
            let sectors = (tracks - spare) * z.sectors_per_track as u64;
            if (z.deadspace as u64) >= sectors {
                return bad(format!("zone {i}: empty space at zone front fills the zone"));
            }
            z.first_lbn = lbn;
            z.lbns = sectors - z.deadspace as u64;
            lbn += z.lbns;
        }
        if next_cyl != cylinders {
            return bad(format!("zones end at cylinder {next_cyl}, the disk has {cylinders}"));
        }
        let capacity = match block_count {
            Some(n) if n > lbn => {
                return bad(format!("block count {n} exceeds the {lbn} sectors the zones map"))
            }
            Some(n) => n,
            None => lbn,
        };
        Ok(Layout { surfaces, cylinders, mapping, zones, capacity })
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
        let zone = Zone {
            first_cyl: 0,
            last_cyl: cylinders.saturating_sub(1),
            sectors_per_track,
            offset: 0.0,
            deadspace: 0,
            track_skew,
            cyl_skew,
            spare_tracks: 0,
            slips: Vec::new(),
            first_lbn: 0,
            lbns: 0,
        };
        Layout::new(what, surfaces, cylinders, Mapping::Conventional, vec![zone], None)
    }

    /// Size in sectors.
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Index of the zone holding `lbn` (binary search; `lbn` < capacity).
    #[inline]
    fn zone_of(&self, lbn: u64) -> usize {
        self.zones.partition_point(|z| z.first_lbn + z.lbns <= lbn).min(self.zones.len() - 1)
    }

    /// Physical track within its zone (cylinder-major) of a zone-relative
    /// logical track, skipping slipped tracks.
    #[inline]
    fn physical_track(z: &Zone, logical: u64) -> u64 {
        let mut t = logical;
        for &s in &z.slips {
            if (s as u64) <= t {
                t += 1;
            } else {
                break;
            }
        }
        t
    }

    /// Cylinder holding `lbn` (clamped to the last sector).
    #[inline]
    pub fn cylinder_of(&self, lbn: u64) -> u32 {
        self.locate(lbn).cyl
    }

    /// Where `lbn` is (clamped to the last sector of the device).
    #[inline]
    pub fn locate(&self, lbn: u64) -> Loc {
        let lbn = lbn.min(self.capacity - 1);
        let z = &self.zones[self.zone_of(lbn)];
        let spt = z.sectors_per_track as u64;
        let rel = lbn - z.first_lbn + z.deadspace as u64;
        let sector = (rel % spt) as u32;
        let track = Self::physical_track(z, rel / spt);
        let s = self.surfaces as u64;
        let cyl_rel = (track / s) as u32;
        let surf = (track % s) as u32;
        let cyl = z.first_cyl + cyl_rel;
        let odd = match self.mapping {
            Mapping::Conventional => false,
            Mapping::SerpentineZone => cyl_rel % 2 == 1,
            Mapping::SerpentineDisk => cyl % 2 == 1,
        };
        let head = if odd { self.surfaces - 1 - surf } else { surf };
        let switches = surf as f64 + (self.surfaces - 1) as f64 * cyl_rel as f64;
        let start = z.offset + switches * z.track_skew + cyl_rel as f64 * z.cyl_skew;
        let revs = (start + sector as f64) / spt as f64;
        let left_in_zone = z.first_lbn + z.lbns - lbn;
        let left_on_track = (spt - sector as u64).min(left_in_zone).min(self.capacity - lbn);
        Loc {
            cyl,
            head,
            sectors_per_track: z.sectors_per_track,
            sector,
            run: left_on_track as u32,
            angle: revs - revs.floor(),
        }
    }

    /// Zone-relative physical track of a location, for tests.
    #[cfg(test)]
    fn track_in_zone(&self, loc: &Loc) -> u64 {
        let z = &self.zones[self.zones.iter().position(|z| z.last_cyl >= loc.cyl).unwrap()];
        (loc.cyl - z.first_cyl) as u64 * self.surfaces as u64 + loc.head as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hp() -> Layout {
        Layout::uniform("hp97560", 19, 1962, 72, 8.0, 18.0).unwrap()
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
    }

    #[test]
    fn skews_rotate_the_first_sector_of_each_track() {
        let l = hp();
        let a = |lbn: u64| (l.locate(lbn).angle * 72.0).round() as u64 % 72;
        assert_eq!(a(0), 0);
        assert_eq!(a(72), 8, "one head switch: one track skew");
        assert_eq!(a(72 * 2), 16);
        // First track of cylinder 1: 18 head switches... no: 18 track
        // switches within cylinder 0's 19 tracks, then one cylinder skew.
        assert_eq!(a(72 * 19), (18 * 8 + 18) % 72);
        assert_eq!(a(72 * 19 + 5), (18 * 8 + 18 + 5) % 72);
    }

    fn zone(first: u32, last: u32, spt: u32, spares: u32, slips: Vec<u32>, dead: u32) -> Zone {
        Zone {
            first_cyl: first,
            last_cyl: last,
            sectors_per_track: spt,
            offset: 0.0,
            deadspace: dead,
            track_skew: 1.0,
            cyl_skew: 2.0,
            spare_tracks: spares,
            slips,
            first_lbn: 0,
            lbns: 0,
        }
    }

    #[test]
    fn slips_deadspace_and_spares() {
        // 2 surfaces; zone 0: cylinders 0..=2 (6 tracks) of 10 sectors, 2
        // spare tracks, track 1 slipped, 10 sectors reserved up front.
        let zs = vec![zone(0, 2, 10, 2, vec![1], 10), zone(3, 4, 8, 0, vec![], 0)];
        let l = Layout::new("t", 2, 5, Mapping::Conventional, zs, None).unwrap();
        assert_eq!(l.zones[0].lbns, 4 * 10 - 10);
        assert_eq!(l.capacity(), 30 + 4 * 8);
        // LBN 0 is on logical track 1 (after the reserved track), which is
        // physical track 2 because track 1 is slipped: cylinder 1, head 0.
        let loc = l.locate(0);
        assert_eq!((loc.cyl, loc.head, loc.sector), (1, 0, 0));
        assert_eq!(l.track_in_zone(&loc), 2);
        let loc = l.locate(10);
        assert_eq!((loc.cyl, loc.head), (1, 1));
        let loc = l.locate(29);
        assert_eq!((loc.cyl, loc.head, loc.sector, loc.run), (2, 0, 9, 1));
        // Zone 1 starts at cylinder 3.
        let loc = l.locate(30);
        assert_eq!((loc.cyl, loc.head, loc.sector, loc.sectors_per_track), (3, 0, 0, 8));
        assert!(Layout::new("t", 2, 5, Mapping::Conventional, vec![zone(0, 3, 8, 0, vec![], 0)], None)
            .is_err());
    }

    #[test]
    fn serpentine_reverses_heads_on_odd_cylinders() {
        let l = Layout::new("t", 3, 4, Mapping::SerpentineZone, vec![zone(0, 3, 4, 0, vec![], 0)], None)
            .unwrap();
        assert_eq!(l.locate(2 * 4).head, 2);
        assert_eq!(l.locate(3 * 4).head, 2, "cylinder 1 starts on the last head");
        assert_eq!(l.locate(5 * 4).head, 0);
    }
}

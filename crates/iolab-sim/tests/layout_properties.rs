//! The LBN mapping against a deliberately naive reference.
//!
//! `Layout` finds an LBN's sector in closed form (binary searches over slip
//! thresholds, per-unit arithmetic) because it is on the simulator's hot
//! path. The reference here instead walks a zone's physical sectors one by
//! one and hands out LBNs in order, straight from the rules of DiskSim 4.0's
//! manual for each sparing scheme (the table in `disk/layout.rs`):
//!
//! - spare space is at the end (or the front) of each track, cylinder,
//!   range or zone, or whole tracks at the end of the zone;
//! - a slipped sector (or track) carries no LBN; in the schemes that absorb
//!   slips in their own unit, the unit's data are its first (for front
//!   spares: last) `unit - spares` unslipped positions; in the sliding
//!   schemes every later LBN of the zone moves on by one;
//! - the first `deadspace` LBN slots of a zone are reserved;
//! - a remapped defect's LBN lives in the spare it was remapped to.
//!
//! Two properties: random zone tables of every scheme map exactly as the
//! reference does (sector, head with serpentine mappings, angle with the
//! skews, runs of consecutive sectors, track spans), and every drive in
//! `data/disksim/` maps its LBNs one-to-one onto the sectors the reference
//! calls data — a bijection onto the non-spare sectors.

use iolab_sim::disk::diskspecs;
use iolab_sim::disk::layout::{Layout, Mapping, Sparing, Zone};
use iolab_sim::disk::presets;
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::HashSet;
use std::path::PathBuf;

/// Geometry of one zone as the reference sees it.
struct Geo {
    surfaces: u64,
    spt: u64,
    cylinders: u64,
}

impl Geo {
    fn of(l: &Layout, z: &Zone) -> Geo {
        Geo { surfaces: l.surfaces as u64, spt: z.sectors_per_track as u64, cylinders: (z.last_cyl - z.first_cyl + 1) as u64 }
    }
    fn tracks(&self) -> u64 {
        self.surfaces * self.cylinders
    }
    fn sectors(&self) -> u64 {
        self.tracks() * self.spt
    }
    /// The sparing unit in sectors and whether spares sit at its front
    /// (None: scheme 1, whole tracks; scheme 0 and 7: the zone, no spares).
    fn unit(&self, sparing: Sparing) -> Option<(u64, bool)> {
        let cyl = self.surfaces * self.spt;
        match sparing {
            Sparing::Tracks => None,
            Sparing::None | Sparing::SectorsAtDiskEnd | Sparing::SectorsPerZone { .. } => Some((self.sectors(), false)),
            Sparing::SectorsPerTrack => Some((self.spt, false)),
            Sparing::SectorsPerCylinder { front, .. } => Some((cyl, front)),
            Sparing::SectorsPerRange { cylinders } => Some((cylinders as u64 * cyl, false)),
        }
    }
}

fn slides(s: Sparing) -> bool {
    matches!(
        s,
        Sparing::SectorsPerCylinder { slip_to_end: true, .. }
            | Sparing::SectorsAtDiskEnd
            | Sparing::SectorsPerZone { slip_to_end: true }
    )
}

/// Whether zone position `p` is spare space before any slip (sector
/// schemes): in its unit's first or last `spares` positions; a trailing
/// partial unit (a short last range) has none.
fn base_spare(g: &Geo, sparing: Sparing, spares: u64, p: u64) -> bool {
    let (unit, front) = g.unit(sparing).expect("sector scheme");
    let u = p / unit;
    if (u + 1) * unit > g.sectors() {
        return false;
    }
    let off = p % unit;
    if front {
        off < spares
    } else {
        off >= unit - spares
    }
}

/// The zone-relative sector of each of the zone's LBN slots, in order
/// (before reserved space is taken off and defects are remapped).
fn reference_slots(g: &Geo, sparing: Sparing, z: &Zone) -> Vec<u64> {
    let slipped: HashSet<u64> = z.slips.iter().copied().collect();
    if sparing == Sparing::Tracks {
        let data_tracks = g.tracks() - z.spares;
        return (0..g.tracks())
            .filter(|t| !slipped.contains(t))
            .take(data_tracks as usize)
            .flat_map(|t| (0..g.spt).map(move |s| t * g.spt + s))
            .collect();
    }
    if slides(sparing) {
        return (0..g.sectors()).filter(|&p| !base_spare(g, sparing, z.spares, p) && !slipped.contains(&p)).collect();
    }
    let (unit, front) = g.unit(sparing).unwrap();
    let mut out = Vec::new();
    let mut base = 0;
    while base < g.sectors() {
        let end = (base + unit).min(g.sectors());
        let spares = if end - base == unit { z.spares } else { 0 };
        let free: Vec<u64> = (base..end).filter(|p| !slipped.contains(p)).collect();
        let keep = (end - base - spares) as usize;
        if front {
            out.extend_from_slice(&free[free.len() - keep..]);
        } else {
            out.extend_from_slice(&free[..keep]);
        }
        base = end;
    }
    out
}

/// The zone-relative sector of each LBN of the zone.
fn reference_zone(g: &Geo, sparing: Sparing, z: &Zone) -> Vec<u64> {
    let mut slots = reference_slots(g, sparing, z);
    slots.drain(..z.deadspace as usize);
    for p in &mut slots {
        let key = if sparing == Sparing::Tracks { *p / g.spt } else { *p };
        if let Some(&(_, to)) = z.defects.iter().find(|d| d.0 == key) {
            *p = if sparing == Sparing::Tracks { to * g.spt + *p % g.spt } else { to };
        }
    }
    slots
}

/// (cylinder, head, sector, angle in revolutions) of zone position `p`.
fn reference_place(l: &Layout, z: &Zone, g: &Geo, p: u64) -> (u32, u32, u32, f64) {
    let track = p / g.spt;
    let sector = p % g.spt;
    let (cyl_rel, surf) = (track / g.surfaces, track % g.surfaces);
    let cyl = z.first_cyl + cyl_rel as u32;
    let odd = match l.mapping {
        Mapping::Conventional => false,
        Mapping::SerpentineZone => cyl_rel % 2 == 1,
        Mapping::SerpentineDisk => cyl % 2 == 1,
    };
    let head = if odd { g.surfaces - 1 - surf } else { surf };
    // Skew: one track skew per head switch, one cylinder skew per cylinder
    // switch, and (schemes 2-6) one sector per slip before the cylinder or
    // (scheme 3) the track.
    let cutoff = match l.sparing {
        Sparing::SectorsPerTrack => Some(track * g.spt),
        Sparing::SectorsPerCylinder { .. } => Some(cyl_rel * g.surfaces * g.spt),
        _ => None,
    };
    let pushed = cutoff.map_or(0, |c| z.slips.iter().filter(|&&s| s < c).count()) as f64;
    let switches = (surf + (g.surfaces - 1) * cyl_rel) as f64;
    let start = z.offset + switches * z.track_skew + cyl_rel as f64 * z.cyl_skew + pushed;
    let revs = (start + sector as f64) / g.spt as f64;
    (cyl, head as u32, sector as u32, revs - revs.floor())
}

/// Checks every LBN of `l` against the reference; returns how many.
fn check_against_reference(l: &Layout, what: &str) -> u64 {
    let mut lbn = 0u64;
    for (zi, z) in l.zones.iter().enumerate() {
        let g = Geo::of(l, z);
        let expect = reference_zone(&g, l.sparing, z);
        assert_eq!(z.first_lbn, lbn, "{what}: zone {zi} first LBN");
        assert_eq!(z.lbns, expect.len() as u64, "{what}: zone {zi} LBN count");
        // One-to-one: no two LBNs on one sector.
        let mut seen = vec![false; g.sectors() as usize];
        let track_of = |p: u64| p / g.spt;
        // Reference runs: LBNs from here on consecutive sectors of a track.
        let mut runs = vec![1u64; expect.len()];
        for i in (0..expect.len().saturating_sub(1)).rev() {
            if expect[i + 1] == expect[i] + 1 && track_of(expect[i + 1]) == track_of(expect[i]) {
                runs[i] = runs[i + 1] + 1;
            }
        }
        let remapped = !z.defects.is_empty();
        for (i, &p) in expect.iter().enumerate() {
            assert!(!seen[p as usize], "{what}: zone {zi} sector {p} carries two LBNs");
            seen[p as usize] = true;
            let x = lbn + i as u64;
            let loc = l.locate(x);
            let (cyl, head, sector, angle) = reference_place(l, z, &g, p);
            assert_eq!((loc.cyl, loc.head, loc.sector), (cyl, head, sector), "{what}: LBN {x} (zone {zi} position {p})");
            assert_eq!(loc.sectors_per_track as u64, g.spt);
            let d = (loc.angle - angle).abs();
            assert!(d < 1e-9 || (1.0 - d) < 1e-9, "{what}: LBN {x} angle {} vs {angle}", loc.angle);
            let run = loc.run as u64;
            if remapped {
                assert!(run >= 1 && run <= runs[i], "{what}: LBN {x} run {run} > {}", runs[i]);
            } else {
                assert_eq!(run, runs[i], "{what}: LBN {x} run");
            }
        }
        lbn += expect.len() as u64;
    }
    assert_eq!(l.mapped(), lbn, "{what}: mapped LBNs");
    lbn
}

/// Track spans (first and last LBN of an LBN's track) against a scan.
fn check_track_spans(l: &Layout, lbns: impl Iterator<Item = u64>) {
    let on = |x: u64, t: (u32, u32)| {
        let loc = l.locate(x);
        (loc.cyl, loc.head) == t
    };
    for x in lbns {
        let loc = l.locate(x);
        let t = (loc.cyl, loc.head);
        let mut first = x;
        while first > 0 && on(first - 1, t) {
            first -= 1;
        }
        let mut last = x;
        while last + 1 < l.mapped() && on(last + 1, t) {
            last += 1;
        }
        assert_eq!(l.track_span(x), (first, last), "LBN {x}");
    }
}

/// A random valid zone table for `sparing`: slips and remapped defects are
/// drawn (with `rng`) only where the scheme allows them.
#[allow(clippy::too_many_arguments)]
fn random_layout(
    sparing: Sparing,
    mapping: Mapping,
    surfaces: u32,
    zones: &[(u32, u32, u32, f64, f64, f64)],
    spares_frac: f64,
    slips: usize,
    defects: usize,
    seed: u64,
) -> Layout {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut next_cyl = 0;
    let mut table = Vec::new();
    for &(cyls, spt, gap, offset, tskew, cskew) in zones {
        let first = next_cyl + gap;
        let mut z = Zone::plain(first, first + cyls - 1, spt, tskew, cskew);
        z.offset = offset;
        next_cyl = first + cyls;
        let g = Geo { surfaces: surfaces as u64, spt: spt as u64, cylinders: cyls as u64 };
        // Spares: a fraction of the unit, leaving room for data.
        let unit = match g.unit(sparing) {
            None => g.tracks(),
            Some((u, _)) => u.min(g.sectors()),
        };
        z.spares = match sparing {
            Sparing::None | Sparing::SectorsAtDiskEnd => 0,
            Sparing::SectorsPerRange { cylinders } if cylinders as u64 > g.cylinders => 0,
            _ => ((unit - 1) as f64 * spares_frac) as u64,
        };
        // Slips where the scheme takes them.
        let mut chosen: Vec<u64> = Vec::new();
        let base_data = match sparing {
            Sparing::Tracks | Sparing::None => 0,
            _ => (0..g.sectors()).filter(|&p| !base_spare(&g, sparing, z.spares, p)).count(),
        };
        for _ in 0..slips {
            if slides(sparing) && chosen.len() + 2 > base_data {
                break; // leave the zone an LBN
            }
            let p = if sparing == Sparing::Tracks {
                if chosen.len() as u64 >= z.spares {
                    break;
                }
                rng.gen_range(0..g.tracks())
            } else if sparing == Sparing::None {
                break;
            } else {
                rng.gen_range(0..g.sectors())
            };
            if chosen.contains(&p) {
                continue;
            }
            if sparing != Sparing::Tracks {
                if base_spare(&g, sparing, z.spares, p) {
                    continue;
                }
                if !slides(sparing) {
                    // No more slips in a unit than it has spares.
                    let (u, _) = g.unit(sparing).unwrap();
                    let full = (p / u + 1) * u <= g.sectors();
                    let here = chosen.iter().filter(|&&c| c / u == p / u).count() as u64;
                    if !full || here >= z.spares {
                        continue;
                    }
                }
            }
            chosen.push(p);
        }
        chosen.sort_unstable();
        z.slips = chosen;
        // Remapped defects: from a data position to a free spare one.
        let slots = reference_slots(&g, sparing, &z);
        let slipped: HashSet<u64> = z.slips.iter().copied().collect();
        let (data, spare): (Vec<u64>, Vec<u64>) = if sparing == Sparing::Tracks {
            let tracks: Vec<u64> = slots.iter().map(|p| p / g.spt).collect::<HashSet<_>>().into_iter().collect();
            let last = tracks.iter().copied().max().unwrap_or(0);
            let room = z.spares - z.slips.len() as u64;
            (tracks, (last + 1..g.tracks()).filter(|t| !slipped.contains(t)).take(room as usize).collect())
        } else {
            let set: HashSet<u64> = slots.iter().copied().collect();
            (slots.clone(), (0..g.sectors()).filter(|p| !set.contains(p) && !slipped.contains(p)).collect())
        };
        let (mut data, mut spare) = (data, spare);
        data.sort_unstable();
        for _ in 0..defects {
            if data.is_empty() || spare.is_empty() {
                break;
            }
            let from = data.swap_remove(rng.gen_range(0..data.len()));
            let to = spare.swap_remove(rng.gen_range(0..spare.len()));
            z.defects.push((from, to));
        }
        let usable = reference_slots(&g, sparing, &z).len() as u64;
        z.deadspace = rng.gen_range(0..usable.min(3));
        table.push(z);
    }
    let cylinders = next_cyl;
    Layout::new("random", surfaces, cylinders, mapping, sparing, table, None, &mut Vec::new())
        .unwrap_or_else(|e| panic!("a valid random table was refused: {e}"))
}

fn sparing_strategy() -> impl Strategy<Value = Sparing> {
    (0i64..=10, 1u32..4).prop_map(|(n, range)| Sparing::from_scheme(n, range).unwrap())
}

fn mapping_strategy() -> impl Strategy<Value = Mapping> {
    prop_oneof![Just(Mapping::Conventional), Just(Mapping::SerpentineZone), Just(Mapping::SerpentineDisk)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn every_scheme_maps_as_the_reference_does(
        sparing in sparing_strategy(),
        mapping in mapping_strategy(),
        surfaces in 1u32..4,
        zones in prop::collection::vec(
            (1u32..6, 3u32..13, 0u32..3, 0.0f64..20.0, 0.0f64..6.0, 0.0f64..9.0), 1..4),
        spares_frac in 0.0f64..0.6,
        slips in 0usize..6,
        defects in 0usize..3,
        seed in any::<u64>(),
    ) {
        let l = random_layout(sparing, mapping, surfaces, &zones, spares_frac, slips, defects, seed);
        let n = check_against_reference(&l, &format!("{sparing:?} {mapping:?}"));
        prop_assert_eq!(n, l.capacity());
        if l.zones.iter().all(|z| z.defects.is_empty()) {
            check_track_spans(&l, 0..n);
        }
    }
}

#[test]
fn every_data_disksim_drive_maps_one_to_one_onto_its_data_sectors() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/disksim");
    let mut drives: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "parv"))
        .collect();
    drives.sort();
    assert!(drives.len() >= 6, "{drives:?}");
    for parv in drives {
        let l = diskspecs::load(&parv).unwrap_or_else(|e| panic!("{e}")).layout;
        let n = check_against_reference(&l, &parv.display().to_string());
        assert!(n >= l.capacity());
        // Track spans at a sample of LBNs (every track of the first and
        // last cylinders, and a stride through the rest).
        let step = (n / 997).max(1);
        check_track_spans(&l, (0..n).step_by(step as usize).chain((n.saturating_sub(5000)..n).step_by(7)));
        println!("{}: {n} LBNs, each on its own data sector", parv.display());
    }
    check_against_reference(&presets::hp97560_params().layout, "hp97560");
}

//! Built-in drives. Every constant names its source; estimates say so.

use super::cache::CacheParams;
use super::controller::Controller;
use super::hdd::HddParams;
use super::layout::{Layout, Mapping, Sparing, Zone};
use super::seek::{Mechanics, SeekCurve};

pub const HP97560: &str = "hp97560";
pub const MODERN7200: &str = "modern7200";

/// The HP 97560 of Ruemmler & Wilkes, "An Introduction to Disk Drive
/// Modeling" (IEEE Computer 27(3), 1994), the disk behind the WPCAS
/// paper's seek equation (2). Parameters as reported by Kotz, Toh &
/// Radhakrishnan (Dartmouth PCS-TR94-220, 1994), see DISKS.md.
pub fn hp97560_params() -> HddParams {
    // 1,962 cylinders, 19 tracks per cylinder, 72 sectors per track,
    // track skew 8 sectors, cylinder skew 18 sectors (DISKS.md).
    let layout = Layout::uniform(HP97560, 19, 1962, 72, 8.0, 18.0).expect("valid preset");
    HddParams {
        name: HP97560.into(),
        // 4,002 RPM (DISKS.md).
        rpm: 4002.0,
        layout,
        mechanics: Mechanics {
            // Equation (2): 3.24 + 0.400·√d ms (d ≤ 383), 8.00 + 0.008·d.
            seek: SeekCurve::hp97560(),
            // Head/track switch 1.6 ms (DISKS.md).
            head_switch_ms: 1.6,
            // Not given separately by the sources: the model folds write
            // settling into the seek curve.
            write_settle_ms: 0.0,
        },
        // Controller overhead 2.2 ms per request (DISKS.md). The bus is
        // SCSI-II; 10 MB/s (0.0512 ms per 512-byte block) is an estimate
        // for its synchronous rate. It is faster than the media (0.208 ms
        // per sector), so transfers end one block after the media does.
        controller: Controller::simple(2.2, 0.0512),
        // 128 KB cache (DISKS.md) as two 64 KB segments (an assumption:
        // the sources do not say how it is divided); 64 KB read fence:
        // read ahead up to 64 KB past a read. Writes are reported when on
        // the media (immediate reporting off), as in Ruemmler & Wilkes's
        // traces: an assumption.
        cache: CacheParams { segments: 2, ..CacheParams::single_segment(128, 128, false) },
    }
}

/// Total 512-byte LBAs of a 2 TB drive by the IDEMA LBA1-03 rule
/// (97,696,368 + 1,953,504 × (GB − 50)): 3,907,029,168.
const MODERN_LBAS: u64 = 3_907_029_168;
/// Surfaces: 2 platters × 2 heads (estimate for a 2 TB drive of 2017).
const MODERN_SURFACES: u32 = 4;
/// Zones: 16 of equal radial width (estimate; drives have 16–30).
const MODERN_ZONES: u32 = 16;
/// Outer-zone sectors per track: the datasheet's 220 MB/s maximum
/// sustained rate at 7200 rpm is 220e6 · (60/7200) / 512 = 3,581 sectors
/// per revolution, rounded to whole 4 KiB physical sectors (3,584).
const MODERN_OUTER_SPT: u32 = 3584;
/// Inner-zone sectors per track: half the outer (estimate: inner/outer
/// radius ratio of about 0.5 at constant linear density).
const MODERN_INNER_SPT: u32 = 1792;

/// Datasheets of the class give write seeks 1 ms slower than read seeks
/// (e.g. 8.5 vs 9.5 ms): the extra write settle (estimate).
const WRITE_SETTLE_MS: f64 = 1.0;

/// A 7200 rpm 3.5-inch SATA desktop drive of the 4 KiB-sector era, of the
/// class of the Seagate BarraCuda ST2000DM008 (2 TB, 7200 rpm, 256 MB
/// cache, 220 MB/s maximum sustained: its datasheet). What the datasheet
/// does not give is an estimate, marked as such; docs/disks.md lists them.
pub fn modern7200_params() -> HddParams {
    let rpm = 7200.0; // datasheet
    let sector_ns = |spt: u32| 60e9 / rpm / spt as f64;
    let head_switch_ms = 1.0; // estimate (typical of the class)
    let seek = SeekCurve::TwoPiece {
        // Estimates fitted to the class's published averages: 0.8 ms
        // track-to-track, 8.5 ms average read seek over random pairs,
        // 16 ms full stroke; square root for the first half of the
        // stroke, then linear with the same slope.
        linear_from: 181_696,
        sqrt_a: 0.776,
        sqrt_b: 0.02381,
        lin_a: 5.851,
        lin_b: 0.000_027_93,
        first_ten: None,
    };
    let one_cyl_ms = seek.ms(1);
    let mut spts = Vec::new();
    for i in 0..MODERN_ZONES {
        let step = (MODERN_OUTER_SPT - MODERN_INNER_SPT) as f64 / (MODERN_ZONES - 1) as f64;
        // Linear in zone number, in whole 4 KiB sectors (8 × 512 bytes).
        let spt = ((MODERN_OUTER_SPT as f64 - i as f64 * step) / 8.0).round() as u32 * 8;
        spts.push(spt);
    }
    let per_cyl_round: u64 = spts.iter().map(|&s| s as u64).sum::<u64>() * MODERN_SURFACES as u64;
    let cyls_per_zone = MODERN_LBAS.div_ceil(per_cyl_round) as u32;
    let zones = spts
        .iter()
        .enumerate()
        .map(|(i, &spt)| {
            // Skews: whole sectors covering the switch time of a write
            // (switch + write settle), plus one sector of margin, so that
            // neither sequential reads nor writes lose a revolution at a
            // boundary (reads wait the settle time instead): an estimate
            // of how manufacturers choose them.
            let skew = |ms: f64| ((ms + WRITE_SETTLE_MS) * 1e6 / sector_ns(spt)).ceil() + 1.0;
            Zone {
                ..Zone::plain(
                    i as u32 * cyls_per_zone,
                    (i as u32 + 1) * cyls_per_zone - 1,
                    spt,
                    skew(head_switch_ms),
                    skew(one_cyl_ms.max(head_switch_ms)),
                )
            }
        })
        .collect();
    let layout = Layout::new(
        MODERN7200,
        MODERN_SURFACES,
        cyls_per_zone * MODERN_ZONES,
        Mapping::Conventional,
        Sparing::None,
        zones,
        Some(MODERN_LBAS),
        &mut Vec::new(),
    )
    .expect("valid preset");
    HddParams {
        name: MODERN7200.into(),
        rpm,
        layout,
        mechanics: Mechanics {
            seek,
            head_switch_ms,
            write_settle_ms: WRITE_SETTLE_MS,
        },
        // 0.1 ms command overhead (estimate); SATA 6 Gb/s carries 600 MB/s,
        // 0.000853 ms per 512-byte block.
        controller: Controller::simple(0.1, 512.0 / 600e6 * 1e3),
        // The 256 MB buffer (datasheet): 16 segments of 2 MiB, up to 8 of
        // them dirty, and up to 1 MiB of read-ahead per stream are
        // estimates. SATA drives ship with the write cache on.
        cache: CacheParams {
            segments: 16,
            write_segments: 8,
            ..CacheParams::single_segment(4096, 2048, true)
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disk::hdd::Hdd;
    use crate::disk::Disk;

    #[test]
    fn hp97560_geometry() {
        let p = hp97560_params();
        assert_eq!(p.layout.capacity(), 1962 * 19 * 72);
        let d = Hdd::new(p).unwrap();
        assert!(d.describe().contains("1962 cylinders x 19 surfaces"));
    }

    #[test]
    fn modern7200_matches_its_datasheet_figures() {
        let p = modern7200_params();
        assert_eq!(p.layout.capacity(), MODERN_LBAS);
        let outer = p.layout.zones[0].sectors_per_track as f64;
        let mb_s = outer * 512.0 * 7200.0 / 60.0 / 1e6;
        assert!((mb_s - 220.0).abs() < 1.0, "{mb_s}");
        // Mean seek over uniformly random pairs of cylinders: 8.5 ms.
        let n = p.layout.cylinders as f64;
        let steps = 10_000;
        let mut mean = 0.0;
        for i in 0..steps {
            let d = (i as f64 + 0.5) / steps as f64 * n;
            mean += p.mechanics.seek.ms(d as u32) * 2.0 * (n - d) / (n * n) * (n / steps as f64);
        }
        assert!((mean - 8.5).abs() < 0.1, "{mean}");
        assert!((p.mechanics.seek.ms(1) - 0.8).abs() < 0.01);
        let full = p.mechanics.seek.ms(p.layout.cylinders - 1);
        assert!((full - 16.0).abs() < 0.1, "{full}");
    }
}

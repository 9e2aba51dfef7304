//! The validation table as a regression check: every drive in
//! `data/disksim/` loads from its `.parv`, replays its measured trace, and
//! stays within a small bound of DiskSim 4.0's own demerit on it. The
//! figures themselves are in docs/validation.md (`iolab validate --all
//! data/disksim/`); the replay is deterministic, so these bounds are not
//! statistical: a model change that moves a drive past one is a real
//! change to look at.

use iolab_sim::validate::{validate_files, Options, DISKSIM_DEMERITS};
use std::path::PathBuf;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/disksim").join(name)
}

/// (file stem, requests in the trace, measured mean in ms).
const DRIVES: &[(&str, usize, f64)] = &[
    ("hp_c2247a", 9999, 15.298),
    ("dec_rz26", 7980, 15.809),
    ("ibm18es", 10000, 5.2605),
    ("barracuda", 10000, 6.6274),
    ("atlas10k", 10000, 3.8931),
    ("hp_c2490a", 9984, 12.5497),
    ("hp_c3323a", 9074, 15.7649),
];

#[test]
fn every_drive_stays_within_a_hair_of_disksim_or_below() {
    for &(stem, requests, mean) in DRIVES {
        let r = validate_files(&data(&format!("{stem}.parv")), &data(&format!("{stem}.trace")), &Options::default())
            .unwrap_or_else(|e| panic!("{stem}: {e}"));
        println!("{stem}: demerit {:.6} ms (exact {:.6}), DiskSim {:?}", r.demerit_ms, r.demerit_exact_ms, r.disksim_demerit_ms);
        assert_eq!(r.requests, requests, "{stem}");
        assert!((r.measured.mean_ms - mean).abs() < 0.001, "{stem}: measured mean {}", r.measured.mean_ms);
        let disksim = DISKSIM_DEMERITS.iter().find(|d| d.0 == r.disk_name).map(|d| d.1);
        let disksim = disksim.unwrap_or_else(|| panic!("{stem}: {} is not in DISKSIM_DEMERITS", r.disk_name));
        assert_eq!(r.disksim_demerit_ms, Some(disksim));
        // Within 1% of DiskSim's figure at worst (the model follows its
        // rules; what remains is arithmetic: DiskSim keeps angles in 32-bit
        // fixed point), and under 1 ms in any case.
        assert!(r.demerit_ms <= disksim * 1.01, "{stem}: demerit {} ms against DiskSim's {disksim}", r.demerit_ms);
        assert!(r.demerit_exact_ms < 1.0, "{stem}");
        assert!(r.build.bus.contains("bus1"), "{stem}: {}", r.build.bus);
    }
}

#[test]
fn the_c2247a_matches_disksims_simulated_moments() {
    // DiskSim's own run on this trace (data/disksim/README.md): simulated
    // mean 15.315 ms, sd 8.286 ms.
    let r = validate_files(&data("hp_c2247a.parv"), &data("hp_c2247a.trace"), &Options::default()).unwrap();
    assert!((r.simulated.mean_ms - 15.315).abs() < 0.0005, "{}", r.simulated.mean_ms);
    assert!((r.simulated.sd_ms - 8.286).abs() < 0.0005, "{}", r.simulated.sd_ms);
    // The drive's own cache outcome (trace column 2) against the model's.
    let hits = r.classes.iter().find(|c| c.class == "R Hit").unwrap();
    assert!(hits.model_hits + hits.model_partial_hits >= 1555, "{hits:?}");
}

#[test]
fn trace_requests_beyond_the_disk_are_refused_with_their_line() {
    let dir = std::env::temp_dir().join(format!("iolab-vt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let t = dir.join("x.trace");
    for (line, want) in [
        ("R Miss 2054864 1 100.0 5.0", "x.trace:2: LBN 2054864 + 1 blocks ends past the disk's 2054864 sectors"),
        ("R Miss 10 4000000000 100.0 5.0", "x.trace:2: LBN 10 + 4000000000 blocks ends past the disk's 2054864 sectors"),
    ] {
        std::fs::write(&t, format!("R Miss 0 2 100.0 5.0\n{line}\n")).unwrap();
        let e = validate_files(&data("hp_c2247a.parv"), &t, &Options::default()).unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_empty_diskspecs_path_is_named_as_such() {
    use iolab_sim::disk::{build, report, DiskSpec};
    let spec = DiskSpec { preset: None, diskspecs: Some(String::new()), ..DiskSpec::default() };
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let e = build(&spec, &here).err().expect("an empty path must be refused").to_string();
    assert!(e.contains("disk.diskspecs") && e.contains("is empty"), "{e}");
    // What `iolab run` prints about the disk says where each part came from.
    let spec = DiskSpec { preset: None, diskspecs: Some("../../data/disksim/hp_c2247a.parv".into()), ..DiskSpec::default() };
    let lines = report(&spec, &here).unwrap();
    assert!(lines[0].contains("hp_c2247a.parv") && lines[0].contains("HP_C2247A_validate"), "{lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("bus") && l.contains("bus1")), "{lines:?}");
}

//! Replays the HP C2247A's measured trace against its DiskSim parameters.

use iolab_sim::validate::validate_files;
use std::path::PathBuf;

fn data(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/disksim").join(name)
}

#[test]
fn c2247a_demerit_stays_small() {
    let r = validate_files(&data("hp_c2247a.parv"), &data("hp_c2247a.trace")).unwrap();
    println!("{}", serde_json::to_string_pretty(&r).unwrap());
    assert_eq!(r.requests, 9999);
    assert!((r.measured.mean_ms - 15.298).abs() < 0.01, "measured mean {}", r.measured.mean_ms);
    assert!(r.demerit_ms < 1.0, "demerit {} ms", r.demerit_ms);
}

use iolab_sim::disk::{hdd::Hdd, diskspecs, CacheOutcome};
use iolab_sim::trace::disksim_validation::{read, Outcome};
use iolab_sim::validate::replay;
use std::path::PathBuf;
#[test]
fn dbg() {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/disksim");
    let mut disk = Hdd::new(diskspecs::load(&d.join("hp_c2247a.parv")).unwrap()).unwrap();
    let tr = read(&d.join("hp_c2247a.trace")).unwrap();
    let s = replay(&mut disk, &tr);
    let mut k = 0;
    for i in 1..tr.len() {
        if tr[i].outcome == Outcome::Hit && s[i].cache == CacheOutcome::Miss && k < 15 {
            k += 1;
            let p = &tr[i-1];
            println!("prev {} {} {} {} | delay {:.0} | {} {} meas {:.2} sim {:.2}", if p.write {"W"} else {"R"}, p.lbn, p.blocks, p.outcome.name(), p.delay_us, tr[i].lbn, tr[i].blocks, tr[i].access_us/1e3, s[i].total_ns as f64/1e6);
        }
    }
    // write doub error by size buckets
    for (lo, hi) in [(1,2),(2,5),(5,10),(10,20),(20,40),(40,80),(80,1000)] {
        for oc in [Outcome::Doub, Outcome::Trip, Outcome::Miss, Outcome::Hit] {
        let idx: Vec<usize> = (0..tr.len()).filter(|&i| tr[i].outcome==oc && tr[i].blocks>=lo && tr[i].blocks<hi).collect();
        if idx.is_empty() {continue}
        let m: f64 = idx.iter().map(|&i| tr[i].access_us/1e3).sum::<f64>()/idx.len() as f64;
        let sm: f64 = idx.iter().map(|&i| s[i].total_ns as f64/1e6).sum::<f64>()/idx.len() as f64;
        println!("{:?} [{lo},{hi}) n={} meas {:.3} sim {:.3}", oc, idx.len(), m, sm);
        }
    }
    // sequential doub writes
    let idx: Vec<usize> = (1..tr.len()).filter(|&i| tr[i].outcome==Outcome::Doub && tr[i-1].write).collect();
    let m: f64 = idx.iter().map(|&i| tr[i].access_us/1e3).sum::<f64>()/idx.len() as f64;
    let sm: f64 = idx.iter().map(|&i| s[i].total_ns as f64/1e6).sum::<f64>()/idx.len() as f64;
    println!("seq doub n={} meas {:.3} sim {:.3}", idx.len(), m, sm);
    let idx: Vec<usize> = (1..tr.len()).filter(|&i| tr[i].outcome==Outcome::Doub && !tr[i-1].write).collect();
    let m: f64 = idx.iter().map(|&i| tr[i].access_us/1e3).sum::<f64>()/idx.len() as f64;
    let sm: f64 = idx.iter().map(|&i| s[i].total_ns as f64/1e6).sum::<f64>()/idx.len() as f64;
    println!("doub after read n={} meas {:.3} sim {:.3}", idx.len(), m, sm);
}

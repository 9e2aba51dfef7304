//! The kernel elevators behind the trait: their sysfs files, parsed by the
//! module, and the declaration of their tunables kept equal to the module.

use super::*;
use crate::sched::{build, find, resolve_tunables};
use crate::sched::testutil::{ms, read, NoCost};
use std::sync::Arc;

fn ctx() -> SchedContext {
    SchedContext::new(Arc::new(NoCost))
}

fn given(pairs: &[(&str, f64)]) -> BTreeMap<String, f64> {
    pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// Every declared tunable is a writable sysfs file of the module, every
/// writable file is declared, and the declared default is what the module
/// shows on a new instance.
#[test]
fn declared_tunables_are_the_modules_files_and_defaults() {
    for (info, module) in [(&AS_INFO, "anticipatory"), (&WPCAS_INFO, "wpcas")] {
        let inst = Instance::new(module, 1).expect("registered");
        let writable: Vec<String> = inst.attrs().into_iter().filter(|a| a.1).map(|a| a.0).collect();
        let declared: Vec<String> = info.tunables.iter().map(|t| t.name.to_string()).collect();
        assert_eq!(writable, declared, "{module}");
        for t in info.tunables {
            let shown: f64 = inst.show(t.name).unwrap().trim().parse().unwrap();
            assert_eq!(shown, t.default, "{module} {}", t.name);
        }
    }
}

#[test]
fn both_elevators_are_registered_under_their_names() {
    let names = registered();
    assert!(names.contains(&("anticipatory".into(), Some("as".into()))), "{names:?}");
    assert!(names.iter().any(|(n, _)| n == "wpcas"));
    assert!(find("kernel:as").is_ok() && find("kernel:wpcas").is_ok());
}

/// What the module's store refuses, the simulator refuses, naming the
/// field; what it clamps is clamped.
#[test]
fn tunables_go_through_the_modules_parser() {
    let info = find("kernel:anticipatory").unwrap();
    let e = resolve_tunables(info, &given(&[("antic_expire", 1.5)]), "scheduler[0]").unwrap_err().to_string();
    assert!(e.contains("scheduler[0].antic_expire") && e.contains("EINVAL") && e.contains("1.5"), "{e}");
    let e = resolve_tunables(info, &given(&[("read_expire", -3.0)]), "s").unwrap_err().to_string();
    assert!(e.contains("s.read_expire") && e.contains("'-3'"), "{e}");
    let v = resolve_tunables(info, &given(&[("antic_expire", 700.0)]), "s").unwrap();
    assert_eq!(v.get("antic_expire"), 600.0, "as_store_u64 clamps to 600 ms");
    let e = resolve_tunables(info, &given(&[("nonsense", 1.0)]), "s").unwrap_err().to_string();
    assert!(e.contains("has no tunable 'nonsense'"), "{e}");
    let w = find("kernel:wpcas").unwrap();
    let v = resolve_tunables(w, &given(&[("gamma", 0.25), ("hist_len", 9999.0)]), "s").unwrap();
    assert_eq!((v.get("gamma"), v.get("hist_len")), (0.25, 256.0));
    assert!(resolve_tunables(w, &given(&[("gamma", 0.0001)]), "s").is_ok(), "three decimals: 0.000");
}

#[test]
fn a_lone_read_is_dispatched_and_completed() {
    let (mut e, _) = build("kernel:anticipatory", &BTreeMap::new(), &ctx()).unwrap();
    e.insert(read(0, 0, 100), ms(1));
    assert_eq!(e.queued(), 1);
    let Dispatch::Request(rq) = e.dispatch(ms(1)) else { panic!("no request") };
    assert_eq!((rq.id, rq.sector), (0, 100));
    assert_eq!(e.queued(), 0);
    e.completed(&rq, ms(5));
    // The reader is waited for: the timer runs to 5 + 6 ms.
    assert_eq!(e.dispatch(ms(5)), Dispatch::Nothing);
    let a = e.anticipation().unwrap();
    assert_eq!(a.started, 0, "a wait still running is not reported");
}

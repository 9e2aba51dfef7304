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
            if t.name == SEEK_FROM_DISK {
                // the simulator's 0: the disk's curve; the module's own: the HP 97560's
                assert_eq!((t.default, shown), (0.0, 1368.0), "{module} {}", t.name);
                continue;
            }
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

// ---- the module's defects (issue 23), in the harness ----

use crate::request::Dir;

fn rq(id: u32, pid: u32, sector: u64, write: bool, sync: bool) -> Request {
    Request { id, pid, sector, nr_sectors: 8, dir: if write { Dir::Write } else { Dir::Read }, sync, arrival: ms(0) }
}

fn take(e: &mut Instance, now: SimTime) -> Option<Request> {
    e.dispatch(now)
}

/// A request that the driver gives back with RQF_DONTPREP (a SCSI or NVMe
/// retry) goes to the hardware queue's list, past the elevator; blk-mq
/// calls requeue_request only. A direction change that waited for it to
/// drain must not wait for ever (it did: changed_batch stayed set, has_work
/// said yes and dispatch_request said no, every 3 ms, for good).
#[test]
fn a_dontprep_requeue_does_not_stall_a_direction_change() {
    let mut e = Instance::new("anticipatory", 2).unwrap();
    e.insert(&rq(0, 1, 1000, true, false), ms(0));
    let w = take(&mut e, ms(0)).expect("the write");
    e.insert(&rq(1, 2, 0, false, false), ms(1));
    assert_eq!(take(&mut e, ms(1)), None, "reads wait for the write batch to drain");
    e.requeue(w.id, true, ms(2));
    assert_eq!(take(&mut e, ms(2)).map(|r| r.id), Some(w.id), "the requeued write goes past the elevator");
    e.completed(w.id, ms(3));
    let mut now = ms(3);
    let mut got = None;
    while got.is_none() && now < ms(1000) {
        e.fire(now);
        got = take(&mut e, now);
        now = e.next_timer().unwrap_or(now + 3_000_000).max(now + 1);
    }
    assert_eq!(got.map(|r| r.id), Some(1), "the read is served");
    assert_eq!(e.warnings().0, 0, "{:?}", e.warnings());
}

/// The awaited process's request comes back with RQF_DONTPREP and
/// completes past the elevator: the wait must still end (it stayed in
/// WAIT_REQ with no timer).
#[test]
fn a_dontprep_requeue_of_the_awaited_request_ends_the_wait() {
    let mut e = Instance::new("anticipatory", 2).unwrap();
    e.insert(&rq(0, 1, 0, false, false), ms(0));
    let r = take(&mut e, ms(0)).unwrap();
    e.insert(&rq(1, 2, 50_000_000, false, false), ms(1));
    assert_eq!(take(&mut e, ms(1)), None, "AS waits for process 1 (WAIT_REQ)");
    e.requeue(r.id, true, ms(2));
    assert_eq!(take(&mut e, ms(2)).map(|x| x.id), Some(0));
    e.completed(0, ms(3));
    let mut now = ms(3);
    let mut got = None;
    while got.is_none() && now < ms(1000) {
        e.fire(now);
        got = take(&mut e, now);
        now = e.next_timer().unwrap_or(now + 3_000_000).max(now + 1);
    }
    assert_eq!(got.map(|x| x.id), Some(1), "the other reader is served once the wait ends");
    assert!(now < ms(20), "within antic_expire of the requeue, not later: {now:?}");
}

/// blk-mq's insert merge (elv_attempt_insert_merge -> attempt_merge)
/// checks no sync class: a sync write merged into the async write before
/// it, leaving a sync request in the async FIFO and tree. The module no
/// longer merges on insert (2.6.20 did not either; bio merges, which
/// allow_merge checks, still happen).
#[test]
fn insert_merges_do_not_mix_sync_and_async() {
    let mut e = Instance::new("anticipatory", 1).unwrap();
    e.set_insert_merges(true);
    e.insert(&rq(0, 1, 0, true, false), ms(0));
    e.insert(&rq(1, 2, 8, true, true), ms(0));
    assert_eq!(e.insert_merged(), 0, "a sync write joined an async one");
    assert_eq!(e.queued(), 2);
    let mut seen = vec![];
    let mut now = ms(0);
    while seen.len() < 2 && now < ms(2000) {
        e.fire(now);
        if let Some(r) = take(&mut e, now) {
            e.completed(r.id, now);
            seen.push(r.id);
        }
        now += 1_000_000;
    }
    assert_eq!(seen.len(), 2);
    assert_eq!(e.warnings().0, 0, "{:?}", e.warnings());
}

/// WPCAS's STE decides on the sign of ok·gain − failed·P (n·Δ, equation
/// 12 times the process's finished anticipations). With the seek tunables
/// within the module's ranges, gain reaches 2^52 ns; `(s64)ok * gain`
/// overflowed once ok passed about 2,150 successes and the decision
/// flipped: the module served the far request where Δ > 0 says wait.
#[test]
fn wpcas_ste_does_not_overflow_with_many_successes() {
    let mut e = Instance::new("wpcas", 1).unwrap();
    // B never expires: only A runs while its successes pile up.
    e.store("read_expire", "2147483647").unwrap();
    let far = 4_300_000_000u64;
    let mut now = ms(0);
    let (mut id, mut pos) = (0u32, 0u64);
    // A first: a read batch starts at the FIFO's head
    e.insert(&rq(id, 1, pos, false, false), now);
    e.insert(&rq(1_000_000, 2, far, false, false), now);
    for _ in 0..2300 {
        let r = take(&mut e, now).expect("A's request");
        assert_eq!(r.pid, 1, "A is served while B waits far away");
        now += 1_000_000;
        e.completed(r.id, now);
        assert_eq!(take(&mut e, now), None, "WPCAS waits for A");
        now += 100_000;
        id += 1;
        pos += 8;
        e.insert(&rq(id, 1, pos, false, false), now);
    }
    let succeeded: u64 = e.show("antic_succeeded").unwrap().trim().parse().unwrap();
    assert!(succeeded >= 2299, "{succeeded} successes");
    // The steepest seek curve the module's files take: B is 2^32 sectors
    // (cylinders of one sector) away, 4.3e15 ns; 2300 successes times that
    // passes 2^63.
    for (k, v) in [
        ("seek_cyl_sectors", "1"),
        ("seek_linear_cyl", "0"),
        ("seek_lin_a_ns", "10000000000"),
        ("seek_lin_b_ps", "1000000000"),
    ] {
        e.store(k, v).unwrap();
    }
    let r = take(&mut e, now).expect("A's request");
    assert_eq!(r.pid, 1);
    now += 1_000_000;
    e.completed(r.id, now);
    // failed = 0: any gain > 0 says wait.
    assert_eq!(take(&mut e, now), None, "Δ > 0: WPCAS must wait for A, not serve B");
    assert_eq!(e.warnings().0, 0, "{:?}", e.warnings());
}

/// The same comparison where bounding the gain (the first fix, ±2^32 ns)
/// decides wrongly: p_s = 0.001 before any record (min_samples 0), P =
/// antic_expire = 600 ms, so failed·P = 999 · 0.6 s, more than 2^32 ns;
/// B is 2 s of seek away, so Δ > 0 and WPCAS waits.
#[test]
fn wpcas_ste_decides_exactly_with_large_in_range_gains() {
    let mut e = Instance::new("wpcas", 1).unwrap();
    for (k, v) in [
        ("min_samples", "0"),
        ("prior_ps", "0.001"),
        ("antic_expire", "600"),
        ("max_wait_ms", "1000"),
        ("seek_cyl_sectors", "1"),
        ("seek_linear_cyl", "0"),
        ("seek_lin_a_ns", "10000000000"),
        ("seek_lin_b_ps", "1000000000"),
    ] {
        e.store(k, v).unwrap();
    }
    e.insert(&rq(0, 1, 0, false, false), ms(0));
    let a = take(&mut e, ms(0)).unwrap();
    e.insert(&rq(1, 2, 2_000_000, false, false), ms(1));
    e.completed(a.id, ms(5));
    // ok = 1, failed = 999, P = 6e8 ns: 1 · 2.0e12 > 999 · 6e8 = 6.0e11.
    assert_eq!(take(&mut e, ms(5)), None, "Δ > 0: WPCAS must wait for A");
    // And with B near, Δ < 0: B is served (the test can fail both ways).
    let mut e2 = Instance::new("wpcas", 1).unwrap();
    for (k, v) in [("min_samples", "0"), ("prior_ps", "0.001"), ("antic_expire", "600"), ("max_wait_ms", "1000")] {
        e2.store(k, v).unwrap();
    }
    e2.insert(&rq(0, 1, 0, false, false), ms(0));
    let a = take(&mut e2, ms(0)).unwrap();
    e2.insert(&rq(1, 2, 2_000_000, false, false), ms(1));
    e2.completed(a.id, ms(5));
    assert_eq!(take(&mut e2, ms(5)).map(|r| r.pid), Some(2), "Δ < 0 on the HP 97560's curve: B is served");
}

// ---- defaults equal in both homes (issue 23) ----

/// merge_by_class 0 (the default, 2.6.20's as_merge): a read bio looks
/// for its front merge in the async tree, so a queued read is never its
/// candidate; a sync write bio may join an async write (no allow_merge in
/// 2.6.20's AS). With 1: the read finds the read, the classes stay apart.
#[test]
fn merge_by_class_switches_the_lookup_and_allow_merge() {
    for by_class in [false, true] {
        let mut e = Instance::new("anticipatory", 1).unwrap();
        e.store("merge_by_class", if by_class { "1" } else { "0" }).unwrap();
        e.insert(&rq(0, 1, 100, false, true), ms(0));
        e.insert(&rq(1, 2, 500, true, false), ms(0));
        let read_bio = Request { sector: 92, ..rq(9, 3, 0, false, true) };
        assert_eq!(e.front_merge(&read_bio).map(|r| r.id), by_class.then_some(0), "by class: {by_class}");
        let sync_write_bio = rq(9, 3, 508, true, true);
        assert_eq!(e.allow_merge(1, &sync_write_bio), !by_class, "by class: {by_class}");
    }
}

/// kernel:wpcas takes the drive's seek curve by default (seek_cyl_sectors
/// 0), as `iolab kernel compare` writes it into the guest; a curve given
/// explicitly is written as given.
#[test]
fn kernel_wpcas_takes_the_drives_seek_curve_by_default() {
    use crate::cost::{ModuleSeekCurve, PositionCost};
    struct Curve;
    impl PositionCost for Curve {
        fn seek_ns(&self, _: u64, _: u64) -> u64 {
            0
        }
        fn mean_rotation_ns(&self) -> u64 {
            0
        }
        fn module_seek(&self) -> Option<ModuleSeekCurve> {
            Some(ModuleSeekCurve { cyl_sectors: 999, linear_cyl: 7, sqrt_a_ns: 1, sqrt_b_ns: 2, lin_a_ns: 3, lin_b_ps: 4 })
        }
    }
    let ctx = SchedContext::new(Arc::new(Curve));
    let v = resolve_tunables(&WPCAS_INFO, &BTreeMap::new(), "s").unwrap();
    assert_eq!(v.get("seek_cyl_sectors"), 0.0);
    let e = KernelElevator::new("kernel:wpcas", "wpcas", &v, &ctx);
    let shown = |k: &str| e.instance().show(k).unwrap().trim().to_string();
    assert_eq!((shown("seek_cyl_sectors"), shown("seek_linear_cyl"), shown("seek_lin_b_ps")), ("999".into(), "7".into(), "4".into()));
    let v = resolve_tunables(&WPCAS_INFO, &given(&[("seek_cyl_sectors", 5000.0)]), "s").unwrap();
    let e = KernelElevator::new("kernel:wpcas", "wpcas", &v, &ctx);
    assert_eq!(e.instance().show("seek_cyl_sectors").unwrap().trim(), "5000");
    assert_eq!(e.instance().show("seek_linear_cyl").unwrap().trim(), "384", "the module's own default");
}

/// blk-mq gives a queue nr_requests = 2 * min(depth, 128) scheduler tags:
/// 2 on a device of depth 1. Without limit_depth write-back could take
/// both, and the reader AS waits for then blocks in tag allocation until
/// the wait times out (2.6.20's as_may_queue let it allocate regardless;
/// blk-mq cannot). Async requests get at most 3/4 of the tags and never the
/// last; sync requests all of them.
#[test]
fn async_requests_leave_a_scheduler_tag_for_sync_ones() {
    for module in ["anticipatory", "wpcas"] {
        let mut e = Instance::new(module, 1).unwrap();
        assert_eq!((e.tags_for(true, false), e.tags_for(true, true), e.tags_for(false, false)), (1, 2, 2), "{module}: 2 tags");
        assert!(e.show("stats").unwrap().contains("async_depth 1\n"));
        e.set_nr_requests(64);
        assert_eq!((e.tags_for(true, false), e.tags_for(false, true)), (48, 64), "{module}: 64 tags (words of 16)");
        e.set_nr_requests(256);
        assert_eq!(e.tags_for(true, false), 192);
        // one-bit words (4 to 7 tags): sbitmap's shallow depth cannot limit
        e.set_nr_requests(6);
        assert_eq!(e.tags_for(true, false), 6);
    }
}

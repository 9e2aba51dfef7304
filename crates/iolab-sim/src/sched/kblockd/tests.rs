use super::*;
use crate::sched::testutil::{ctx, ms, read};
use std::collections::BTreeMap;

fn us(x: u64) -> SimTime {
    SimTime(x * 1000)
}

fn wrapped(name: &str, spec: QueueRunSpec) -> Box<dyn Elevator> {
    let (e, _) = crate::sched::build(name, &BTreeMap::new(), &ctx()).unwrap();
    Kblockd::wrap(e, &spec, 1).unwrap()
}

fn spec(insert: &[f64], completion: &[f64]) -> QueueRunSpec {
    QueueRunSpec { insert: insert.to_vec(), completion: completion.to_vec(), timer: vec![] }
}

#[test]
fn an_insertion_is_dispatched_when_the_worker_runs() {
    let mut e = wrapped("noop", spec(&[500.0], &[]));
    e.insert(read(1, 0, 0), SimTime::ZERO);
    assert_eq!(e.dispatch(SimTime::ZERO), Dispatch::Nothing);
    assert_eq!(e.armed_timer(), Some(us(500)));
    assert_eq!(e.dispatch(us(499)), Dispatch::Nothing);
    e.timer(us(500));
    assert!(matches!(e.dispatch(us(500)), Dispatch::Request(rq) if rq.id == 1));
    assert_eq!(e.armed_timer(), None);
}

#[test]
fn queued_work_keeps_the_earlier_instant() {
    let mut e = wrapped("noop", spec(&[500.0], &[100.0]));
    e.insert(read(1, 0, 0), SimTime::ZERO);
    e.completed(&read(9, 1, 80), us(50));
    assert_eq!(e.armed_timer(), Some(us(150)));
    e.insert(read(2, 0, 8), us(120));
    assert_eq!(e.armed_timer(), Some(us(150)), "a later ask does not move the queued run");
    assert!(matches!(e.dispatch(us(150)), Dispatch::Request(rq) if rq.id == 1));
    // The run lasts its instant: the device may take more at once.
    assert!(matches!(e.dispatch(us(150)), Dispatch::Request(rq) if rq.id == 2));
    // The insertion's ask found the work queued: that run was its run.
    assert_eq!(e.armed_timer(), None);
    e.insert(read(3, 0, 16), us(200));
    assert_eq!(e.dispatch(us(200)), Dispatch::Nothing);
    assert_eq!(e.armed_timer(), Some(us(700)));
    assert!(matches!(e.dispatch(us(700)), Dispatch::Request(rq) if rq.id == 3));
}

#[test]
fn a_cause_without_values_runs_the_queue_at_once() {
    let mut e = wrapped("noop", spec(&[500.0], &[]));
    e.insert(read(1, 0, 0), SimTime::ZERO);
    e.completed(&read(9, 1, 80), us(10));
    assert!(matches!(e.dispatch(us(10)), Dispatch::Request(rq) if rq.id == 1));
}

#[test]
fn delays_are_drawn_from_the_values_and_repeat_with_the_seed() {
    let draws = |seed| {
        let (e, _) = crate::sched::build("noop", &BTreeMap::new(), &ctx()).unwrap();
        let mut e = Kblockd::wrap(e, &spec(&[100.0, 900.0], &[]), seed).unwrap();
        (0..400u64)
            .map(|i| {
                let t = ms(10 * i);
                e.insert(read(i as u32 + 1, 0, 8 * i), t);
                let at = e.armed_timer().unwrap();
                assert!(matches!(e.dispatch(at), Dispatch::Request(_)));
                at.since(t) / 1000
            })
            .collect::<Vec<u64>>()
    };
    let a = draws(1);
    assert!(a.iter().all(|&d| d == 100 || d == 900), "{a:?}");
    let slow = a.iter().filter(|&&d| d == 900).count();
    assert!((150..250).contains(&slow), "{slow} of 400 draws were 900 µs");
    assert_eq!(a, draws(1));
    assert_ne!(a, draws(2));
}

#[test]
fn an_anticipation_is_decided_when_the_worker_runs() {
    // Process 0's request completes at 5 ms while process 1's waits. AS
    // decides when it is asked; the wait's deadline counts from the
    // completion (antic_start) either way, so a run that comes after it
    // finds the wait over and serves process 1.
    let ask = |delay: &[f64]| {
        let mut e = wrapped("as", spec(&[], delay));
        e.insert(read(1, 0, 0), SimTime::ZERO);
        assert!(matches!(e.dispatch(SimTime::ZERO), Dispatch::Request(rq) if rq.id == 1));
        // (At queue depth 1 the engine does not ask while one is in flight.)
        e.insert(read(2, 1, 1 << 30), ms(1));
        e.completed(&read(1, 0, 0), ms(5));
        if !delay.is_empty() {
            assert_eq!(e.dispatch(ms(5)), Dispatch::Nothing, "no run at the completion");
        }
        let at = e.armed_timer().filter(|&t| t > ms(5)).unwrap_or(ms(5));
        (at, e.dispatch(at))
    };
    let (now, d_now) = ask(&[]);
    let (later, d_later) = ask(&[700.0]);
    assert_eq!((now, later), (ms(5), ms(5) + 700_000));
    let (Dispatch::IdleUntil(a), Dispatch::IdleUntil(b)) = (d_now, d_later) else {
        panic!("AS did not anticipate: {d_now:?} {d_later:?}");
    };
    assert_eq!(a, b, "the deadline counts from the completion");
    let (late, d_late) = ask(&[20_000.0]);
    assert_eq!(late, ms(25));
    assert!(matches!(d_late, Dispatch::Request(rq) if rq.id == 2), "{d_late:?}");
}

#[test]
fn values_that_cannot_be_delays_are_refused_by_field() {
    for (bad, field) in [
        (spec(&[-1.0], &[]), "host.queue_run_us.insert[0]"),
        (spec(&[1.0], &[2.0, f64::NAN]), "host.queue_run_us.completion[1]"),
        (QueueRunSpec { timer: vec![2e6], ..Default::default() }, "host.queue_run_us.timer[0]"),
        (spec(&vec![1.0; MAX_VALUES + 1], &[]), "host.queue_run_us.insert"),
    ] {
        let e = bad.check().unwrap_err().to_string();
        assert!(e.contains(field), "{e}");
    }
    assert!(spec(&[0.0, MAX_US], &[]).check().is_ok());
}

#[test]
fn a_blk_mq_elevator_is_refused_with_the_reason() {
    let (e, _) = crate::sched::build("mq-deadline", &BTreeMap::new(), &ctx()).unwrap();
    let err = Kblockd::wrap(e, &spec(&[500.0], &[]), 1).err().expect("refused").to_string();
    assert!(err.contains("host.queue_run_us") && err.contains("blk-mq"), "{err}");
}

#[test]
fn a_run_while_the_device_is_full_is_not_carried_to_the_completion() {
    // Process 1 inserts while process 0's request is served: the worker
    // runs 500 µs later and finds the device full (the engine does not ask);
    // the completion after it waits for its own run.
    let mut e = wrapped("noop", spec(&[500.0], &[700.0]));
    e.insert(read(1, 0, 0), SimTime::ZERO);
    e.timer(us(500));
    assert!(matches!(e.dispatch(us(500)), Dispatch::Request(rq) if rq.id == 1));
    e.insert(read(2, 1, 8), ms(1));
    assert_eq!(e.armed_timer(), Some(ms(1) + 500_000));
    e.timer(ms(1) + 500_000);
    e.completed(&read(1, 0, 0), ms(3));
    assert_eq!(e.dispatch(ms(3)), Dispatch::Nothing);
    assert_eq!(e.armed_timer(), Some(ms(3) + 700_000));
}

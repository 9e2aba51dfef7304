//! BFQ's rules, each pinned by a test (ELEVATORS.md 5; the functions of
//! bfq-iosched.c and bfq-wf2q.c named in each test).
// Expected values are written as the kernel computes them (`x * y >> 16`,
// `min(8, 9 * seq / n)` with the test's constants), not folded by hand.
#![allow(clippy::precedence, clippy::unnecessary_min_or_max, clippy::explicit_counter_loop)]

use super::budget::Reason;
use super::*;
use crate::sched::testutil::{ms, read, write, LEN};

fn bfq() -> Bfq {
    Bfq::new(default_params(), false, 64)
}

#[test]
fn runs_in_the_engine() {
    use crate::experiment::{self, Format};
    let spec = |preset: &str, qd: u32| {
        format!(
            "[disk]\npreset = \"{preset}\"\nqueue_depth = {qd}\n[[scheduler]]\nname = \"bfq\"\n\
             [workload]\nkind = \"processes\"\n[[workload.group]]\ncount = 3\nfile_mb = 2\nrequest_kb = 16\npasses = 1\n\
             think = {{ dist = \"constant\", ms = 1 }}\n\
             [[workload.group]]\ncount = 2\nop = \"write\"\nsync = false\nfile_mb = 2\npasses = 1\n\
             [[workload.group]]\ncount = 1\npattern = \"random\"\nfile_mb = 2\npasses = 1\nioprio = \"idle\"\n"
        )
    };
    for (preset, qd) in [("hp97560", 1), ("modern7200", 4), ("ssd", 32)] {
        let e = experiment::parse(&spec(preset, qd), "t.toml", Format::Toml, &[]).unwrap();
        let r = e.run_job(experiment::Job { scheduler: 0, seed: 1 }, &Default::default()).unwrap();
        assert_eq!(r.requests.inserted, r.requests.completed, "{preset}");
        assert!(r.requests.completed > 0);
    }
}


impl Bfq {
    fn dump(&self) -> String {
        let mut out = format!(
            "in_service {:?} next {:?} busy {:?} queued {} in_driver {} timer {:?} wr_busy {}\n",
            self.in_service, self.sd.next_in_service, self.busy_queues, self.queued, self.rq_in_driver, self.idle_timer,
            self.wr_busy_queues
        );
        for (i, q) in self.queues.iter().enumerate() {
            out += &format!(
                "  q{i} owner {:?} sync {} busy {} rqs {} disp {} budget {} service {} S {} F {} tree {:?} on_st {} wait {} nbw {} class {:?} w {}\n",
                q.owner, q.sync, q.busy, q.rqs.len(), q.dispatched, q.e.budget, q.e.service, q.e.start, q.e.finish, q.e.tree,
                q.e.on_st_or_in_serv, q.wait_request, q.non_blocking_wait_rq, q.ioprio_class, q.e.weight
            );
        }
        for (c, st) in self.sd.st.iter().enumerate() {
            out += &format!("  st{c} vtime {} wsum {} active {:?} idle {:?}\n", st.vtime, st.wsum, st.active, st.idle);
        }
        out
    }
}

/// A small closed-loop harness: `readers` sync sequential readers (and
/// `writers` async writers with 4 in flight) on a device that serves one
/// request in `svc_ms`; readers think `think_ms`. Returns the BFQ and the
/// completions per process, after `until_ms`.
fn harness(b: &mut Bfq, readers: u32, writers: u32, svc_ms: u64, think_ms: u64, until_ms: u64) -> Vec<u32> {
    harness_log(b, readers, writers, svc_ms, think_ms, until_ms, &mut Vec::new())
}

fn harness_log(
    b: &mut Bfq,
    readers: u32,
    writers: u32,
    svc_ms: u64,
    think_ms: u64,
    until_ms: u64,
    log: &mut Vec<(u64, Option<QueueId>)>,
) -> Vec<u32> {
    let n = (readers + writers) as usize;
    let mut done = vec![0u32; n];
    let mut next_sector: Vec<u64> = (0..n as u64).map(|i| 1_000_000 * (i + 1)).collect();
    let mut in_flight: Option<(Request, SimTime)> = None;
    let mut wake: Vec<Option<SimTime>> = vec![Some(ms(0)); n];
    let mut outstanding = vec![0u32; n];
    let mut id = 0u32;
    let mut now = ms(0);
    let end = ms(until_ms);
    while now < end {
        // Wake processes.
        for p in 0..n {
            if wake[p].is_some_and(|t| t <= now) {
                wake[p] = None;
                let is_writer = p >= readers as usize;
                let k = if is_writer { 4 - outstanding[p] } else { 1 };
                for _ in 0..k {
                    let rq = if is_writer { write(id, p as u32, next_sector[p]) } else { read(id, p as u32, next_sector[p]) };
                    id += 1;
                    next_sector[p] += LEN as u64;
                    outstanding[p] += 1;
                    b.insert(rq, now);
                }
            }
        }
        if in_flight.is_none() {
            let d = b.dispatch(now);
            if let Dispatch::Request(rq) = d {
                if log.last().map(|l| l.1) != Some(Some(rq.pid as usize * 1000 + b.in_service.map_or(999, |x| x))) {
                    log.push((now.ns() / 1_000_000, Some(rq.pid as usize * 1000 + b.in_service.map_or(999, |x| x))));
                }
            }
            if let Dispatch::Request(rq) = d {
                in_flight = Some((rq, SimTime(now.ns() + svc_ms * 1_000_000)));
            }
        }
        // Next event.
        let mut t = end;
        if let Some((_, d)) = in_flight {
            t = t.min(d);
        }
        for w in wake.iter().flatten() {
            t = t.min(*w);
        }
        if let Some(x) = b.armed_timer() {
            t = t.min(x);
        }
        if t == end && in_flight.is_none() && b.queued() > 0 {
            panic!("stalled at {now:?}\n{}", b.dump());
        }
        now = t.max(now);
        if let Some((rq, d)) = in_flight {
            if d <= now {
                in_flight = None;
                b.completed(&rq, now);
                let p = rq.pid as usize;
                done[p] += 1;
                outstanding[p] -= 1;
                let is_writer = p >= readers as usize;
                if !is_writer {
                    wake[p] = Some(SimTime(now.ns() + think_ms * 1_000_000));
                } else if wake[p].is_none() {
                    wake[p] = Some(now);
                }
                continue;
            }
        }
        if b.armed_timer().is_some_and(|x| x <= now) {
            b.timer(now);
        }
    }
    done
}

fn take(b: &mut Bfq, now: SimTime) -> Request {
    match b.dispatch(now) {
        Dispatch::Request(rq) => rq,
        d => panic!("expected a request at {now:?}, got {d:?}\n{}", b.dump()),
    }
}

fn at_us(us: u64) -> SimTime {
    SimTime(us * 1000)
}

// ---- B-WF2Q+ (bfq-wf2q.c) ----

#[test]
fn weights_follow_ioprio_levels() {
    // bfq_ioprio_to_weight: (8 - level) * 10.
    assert_eq!(ioprio_to_weight(4), 40);
    assert_eq!(ioprio_to_weight(0), 80);
    assert_eq!(ioprio_to_weight(7), 10);
    assert_eq!(super::wf2q::tests_support::weight_to_ioprio_of(40), 4);
    // An idle-class queue gets level 7 (bfq_set_next_ioprio_data).
    let mut b = bfq();
    b.set_ioprio(0, IoPrio { class: IoClass::Idle, level: 0 });
    b.insert(read(0, 0, 100), ms(0));
    assert_eq!((b.queues[0].e.weight, b.queues[0].ioprio_class), (10, IoClass::Idle));
}

#[test]
fn activation_sets_start_to_vtime_and_finish_by_budget_over_weight() {
    // __bfq_activate_entity, bfq_calc_finish: F = S + budget << 22 / weight.
    let mut b = bfq();
    b.insert(read(0, 0, 100), ms(0));
    let q = &b.queues[0];
    assert_eq!(q.e.start, 0);
    assert_eq!(q.max_budget, 2 * 16384 / 3, "bfq_init_bfqq: 2/3 of the default maximum");
    // Weight raised at its first request (interactive): 40 * 30; the
    // budget is cut to 2 * min_budget (bfq_update_bfqq_wr_on_rq_arrival).
    assert_eq!(q.wr_coeff, 30);
    assert_eq!(q.e.budget, 2 * (16384 / 32));
    assert_eq!(q.e.finish, super::wf2q::delta(1024, 1200));
    assert_eq!(b.sd.st[1].wsum, 1200);
}

#[test]
fn the_eligible_queue_with_the_smallest_finish_is_served_first() {
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0)]), false, 64);
    // Two queues, budgets 10922 each at weight 40: equal finish times;
    // then serve one and check vtime advance: served << 22 / wsum.
    b.insert(read(0, 0, 100), ms(0));
    b.insert(read(1, 1, 900_000), ms(0));
    let first = take(&mut b, ms(0));
    assert_eq!(first.pid, 0, "equal finish: the first activated");
    assert_eq!(b.in_service, Some(0));
    assert_eq!(b.sd.st[1].vtime, super::wf2q::delta(LEN as u64, 80), "bfq_bfqq_served: 8 sectors over wsum 80");
}

#[test]
fn a_requeued_queue_restarts_from_the_finish_of_the_service_it_got() {
    // __bfq_requeue_entity of the in-service entity: F from the service
    // received, then S = F and F again from the new budget.
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0)]), false, 64);
    for i in 0..4 {
        b.insert(read(i, 0, 100 + 8 * i as u64), ms(0));
    }
    b.insert(read(9, 1, 900_000), ms(0));
    let rq = take(&mut b, ms(0));
    assert_eq!(rq.pid, 0);
    let start = b.queues[0].e.start;
    b.requeue_bfqq(0, true);
    let f = start + super::wf2q::delta(8, 40);
    assert_eq!(b.queues[0].e.start, f);
    assert_eq!(b.queues[0].e.finish, f + super::wf2q::delta(b.queues[0].e.budget as u64, 40));
}

#[test]
fn a_deactivated_queue_is_remembered_in_the_idle_tree_while_its_finish_is_ahead() {
    // __bfq_deactivate_entity: idle tree iff F > vtime; a reactivation
    // from it starts at max(vtime, F) (__bfq_activate_entity).
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0), ("slice_idle", 0.0)]), false, 64);
    b.insert(read(0, 0, 100), ms(0));
    b.insert(read(1, 1, 900_000), ms(0));
    let r0 = take(&mut b, ms(0));
    b.completed(&r0, ms(1));
    // Queue 0 had no more requests: expired (no idling), off the busy set
    // with F > vtime: idle tree.
    assert!(!b.queues[0].busy);
    assert_eq!(b.queues[0].e.tree, super::wf2q::Tree::Idle);
    let f0 = b.queues[0].e.finish;
    assert!(f0 > b.sd.st[1].vtime);
    b.insert(read(2, 0, 108), ms(2));
    assert_eq!(b.queues[0].e.start, f0, "S = max(vtime, old F)");
}

#[test]
fn higher_classes_go_first_and_the_idle_class_gets_a_turn_every_200_ms() {
    // bfq_lookup_next_entity: RT, then BE, then IDLE; but the idle class
    // is looked at first once BFQ_CL_IDLE_TIMEOUT (HZ/5) has passed.
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0), ("slice_idle", 0.0)]), false, 64);
    b.set_ioprio(0, IoPrio { class: IoClass::Idle, level: 0 });
    b.set_ioprio(1, IoPrio { class: IoClass::Rt, level: 4 });
    // The lookup at the idle queue's activation uses up the idle class's
    // turn (class_idle_last_service was long ago: it is set to now).
    b.insert(read(0, 0, 100), ms(0));
    b.insert(read(1, 2, 500_000), ms(0)); // BE
    b.insert(read(2, 1, 900_000), ms(0)); // RT
    assert_eq!(take(&mut b, ms(0)).pid, 1, "RT first");
    b.completed(&read(2, 1, 900_000), ms(1));
    assert_eq!(take(&mut b, ms(1)).pid, 2, "then BE");
    b.completed(&read(1, 2, 500_000), ms(2));
    assert_eq!(take(&mut b, ms(2)).pid, 0, "then IDLE");
    b.completed(&read(0, 0, 100), ms(3));
    // 200 ms (50 jiffies) later the idle class is looked at first, even
    // with an RT queue busy.
    b.insert(read(3, 0, 108), ms(10));
    b.insert(read(4, 1, 900_008), ms(300));
    assert_eq!(take(&mut b, ms(300)).pid, 0);
}

// ---- requests of a queue (bfq-iosched.c) ----

#[test]
fn choose_req_prefers_forward_then_penalised_backward_then_wraps() {
    let mut b = bfq();
    for (i, s) in [(0u32, 1000u64), (1, 1200), (2, 950)].into_iter() {
        b.insert(read(i, 0, s), ms(0));
    }
    let q = &b.queues[0];
    let slot = |sector: u64| (0..q.rqs.len() as u32 + 3).find(|&s| s < 16 && q.rqs.rq(s).sector == sector).unwrap();
    let (s1000, s1200, s950) = (slot(1000), slot(1200), slot(950));
    // From 1000: 1200 is 200 ahead; 950 is 50 behind, counted 100.
    assert_eq!(b.choose_req(0, Some(s1200), Some(s950), 1000), Some(s950));
    // From 1100: 1200 is 100 ahead, 950 is 150 behind = 300.
    assert_eq!(b.choose_req(0, Some(s1200), Some(s950), 1100), Some(s1200));
    // More than back_seek_max (16384 KiB = 32768 sectors) behind: wraps.
    assert_eq!(b.choose_req(0, Some(s1000), Some(s1200), 40_000), Some(s1000), "both wrap: the lower");
    assert_eq!(b.choose_req(0, Some(s1200), Some(s1000), 1150), Some(s1200));
}

#[test]
fn think_time_samples_are_capped_and_the_first_is_the_cap() {
    // bfq_update_io_thinktime: (7S+256)/8 samples, capped at 2*slice_idle;
    // a new queue's last_end_request is "minus infinity".
    let mut b = bfq();
    b.insert(read(0, 0, 100), ms(0));
    let q = &b.queues[0];
    // (256 * 16 ms / 8 + 128) / 32.
    assert_eq!((q.ttime_samples, q.ttime_mean), (32, 16_000_004));
    let rq = take(&mut b, ms(0));
    b.completed(&rq, ms(1));
    b.timer(ms(50)); // the idle wait ends; the queue expires
    b.insert(read(1, 0, 108), ms(100)); // 99 ms later: capped at 16 ms
    let q = &b.queues[0];
    assert_eq!(q.ttime_samples, 60);
    assert_eq!(q.ttime_mean, (((7 * 256 * 16_000_000 / 8) + 256 * 16_000_000) / 8 + 128) / 60);
    assert!(super::queue::sample_valid(84) && !super::queue::sample_valid(80));
}

#[test]
fn seeky_means_more_than_19_of_the_last_32_requests_far_away() {
    // BFQ_RQ_SEEKY: > 800 sectors from the last position (on SSDs only
    // for requests under 64 sectors); BFQQ_SEEKY: hweight32 > 19.
    let r = |sector, n| Request { nr_sectors: n, ..read(0, 0, sector) };
    assert!(!super::queue::rq_seeky(false, 1000, &r(1800, 8)));
    assert!(super::queue::rq_seeky(false, 1000, &r(1801, 8)));
    assert!(super::queue::rq_seeky(true, 1000, &r(5000, 8)));
    assert!(!super::queue::rq_seeky(true, 1000, &r(5000, 64)), "large requests are not seeky on SSDs");
    assert!(!super::queue::rq_seeky(false, 0, &r(5000, 8)), "no last position: distance 0");
    let mut b = bfq();
    b.insert(read(0, 0, 100), ms(0));
    b.queues[0].seek_history = (1 << 20) - 1; // 20 seeky
    assert!(b.queues[0].seeky());
    b.queues[0].seek_history = (1 << 19) - 1;
    assert!(!b.queues[0].seeky());
}

#[test]
fn async_requests_are_charged_three_times_their_size() {
    // bfq_serv_to_charge (bfq_async_charge_factor 3), not when weight
    // raised or in an asymmetric scenario.
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0)]), false, 64);
    b.set_ioprio(0, IoPrio { class: IoClass::Be, level: 2 });
    b.insert(write(0, 0, 100), ms(0)); // async queue of BE 2: weight 60
    b.insert(read(1, 1, 900), ms(0));
    let w = b.next_request(0).unwrap();
    let r = b.next_request(1).unwrap();
    assert_eq!(b.serv_to_charge(1, &r), LEN as i64);
    // Weights 60 and 40 are busy: asymmetric for the heavier queue.
    assert_eq!(b.serv_to_charge(0, &w), LEN as i64);
    // The smallest weight does not see an asymmetric scenario
    // (bfq_asymmetric_scenario's smallest_weight); nor do equal weights.
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0)]), false, 64);
    b.insert(write(0, 0, 100), ms(0));
    b.insert(read(1, 1, 900), ms(0));
    let w = b.next_request(0).unwrap();
    assert_eq!(b.serv_to_charge(0, &w), 3 * LEN as i64);
}

#[test]
fn the_fifo_is_checked_once_per_service_slot() {
    // bfq_check_fifo: the bfqq_fifo_expire flag, cleared when the queue
    // is set in service.
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0)]), false, 64);
    b.insert(read(0, 0, 9000), ms(0)); // oldest: expires at 125 ms
    b.insert(read(5, 0, 50), ms(0)); // also expired by 200 ms
    for i in 1..5u32 {
        b.insert(read(i, 0, 100 * i as u64), ms(1));
    }
    // next_rq was chosen at each insert by distance from position 0: 50.
    assert_eq!(take(&mut b, ms(200)).sector, 50);
    // Removing it looked at the FIFO: 9000 expired, and goes next.
    assert_eq!(take(&mut b, ms(200)).sector, 9000);
    // The FIFO was looked at once in this slot: from 9000 the better of
    // its neighbours: 400 behind (penalty 2) against a wrap to 100.
    assert_eq!(take(&mut b, ms(200)).sector, 400);
    assert_eq!(take(&mut b, ms(200)).sector, 300);
}

// ---- budgets and expiration ----

#[test]
fn a_queue_whose_next_request_exceeds_its_budget_expires_exhausted_and_quadruples() {
    // bfq_select_queue → BFQQE_BUDGET_EXHAUSTED; __bfq_bfqq_recalc_budget:
    // x4, capped at bfq_max_budget.
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0)]), false, 64);
    for i in 0..3 {
        b.insert(Request { nr_sectors: 4096, ..read(i, 0, 4096 * i as u64) }, ms(0));
    }
    b.insert(read(9, 1, 9_000_000), ms(0));
    b.queues[0].e.budget = 5000;
    b.queues[0].max_budget = 3000;
    assert_eq!(take(&mut b, ms(0)).pid, 0);
    let rq = take(&mut b, ms(0)); // 4096 + 4096 > 5000: expired, other queue
    assert_eq!(rq.pid, 1);
    assert_eq!(b.queues[0].max_budget, (4 * 3000).min(16384));
    assert_eq!(b.queues[0].e.budget, 12000);
}

#[test]
fn budget_feedback_per_expiry_reason() {
    // __bfq_bfqq_recalc_budget for a sync, not raised queue.
    let case = |reason: Reason, max_budget: i64, service: i64, dispatched: u32| {
        let mut b = Bfq::new(params_with(&[("low_latency", 0.0)]), false, 64);
        b.insert(read(0, 0, 100), ms(0));
        b.insert(read(1, 0, 108), ms(0));
        b.insert(read(9, 1, 9_000_000), ms(0));
        take(&mut b, ms(0));
        let q = &mut b.queues[0];
        q.max_budget = max_budget;
        q.e.service = service;
        q.dispatched = dispatched;
        b.bfqq_expire(0, false, reason);
        b.queues[0].max_budget
    };
    let min = 16384 / 32;
    assert_eq!(case(Reason::BudgetTimeout, 3000, 0, 0), 6000);
    assert_eq!(case(Reason::BudgetTimeout, 10000, 0, 0), 16384, "capped");
    assert_eq!(case(Reason::BudgetExhausted, 3000, 0, 0), 12000);
    assert_eq!(case(Reason::TooIdle, 3000, 0, 1), 6000, "requests still in flight: x2");
    assert_eq!(case(Reason::TooIdle, 3000, 0, 0), 3000 - 4 * min);
    assert_eq!(case(Reason::TooIdle, 2000, 0, 0), min, "<= 5 min: the minimum");
    assert_eq!(case(Reason::NoMoreRequests, 3000, 700, 0), 700, "what it used");
    assert_eq!(case(Reason::NoMoreRequests, 3000, 100, 0), min);
    assert_eq!(case(Reason::Preempted, 3000, 0, 0), 3000, "unchanged");
}

#[test]
fn timeout_sync_is_kept_in_jiffies() {
    // bfq_timeout_sync_store: msecs_to_jiffies; the default is HZ/8 = 31
    // jiffies (124 ms). Seed 004's 160 ms is 40 jiffies.
    assert_eq!(default_params().timeout_j, 31);
    assert_eq!(params_with(&[("timeout_sync", 160.0)]).timeout_j, 40);
    assert_eq!(params_with(&[("timeout_sync", 1.0)]).timeout_j, 1);
    // bfq_set_budget_timeout: jiffies + timeout * (weight / orig_weight).
    let mut b = Bfq::new(params_with(&[("timeout_sync", 160.0)]), false, 64);
    b.insert(read(0, 0, 100), ms(0));
    take(&mut b, ms(8));
    assert_eq!(b.queues[0].budget_timeout, 2 + 40 * 30, "raised x30: 30 timeouts");
}

#[test]
fn a_timed_out_queue_with_budget_left_is_charged_for_its_time() {
    // bfq_bfqq_expire: BUDGET_TIMEOUT with >= 1/3 of the budget left →
    // bfq_bfqq_charge_time: max_budget * min(t, 124 ms) / 124 ms.
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0)]), false, 64);
    for i in 0..3 {
        b.insert(read(i, 0, 100 + 8 * i as u64), ms(0));
    }
    b.insert(read(9, 1, 9_000_000), ms(0));
    let rq = take(&mut b, ms(0));
    b.completed(&rq, ms(62)); // 62 ms: half the timeout
    b.queues[0].budget_timeout = 0; // timed out
    let vt = b.sd.st[1].vtime;
    let rq2 = take(&mut b, ms(62));
    assert_eq!(rq2.pid, 1, "expired for the timeout");
    // Charged 16384 * 62 / 124 = 8192 sectors in all (8 were served).
    let charged = b.sd.st[1].vtime - vt;
    assert!(charged >= super::wf2q::delta(8192 - 8, 80), "{charged}");
}

#[test]
fn slow_means_less_than_half_the_maximum_budget_in_over_20_ms() {
    // bfq_bfqq_is_slow.
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0)]), false, 64);
    b.insert(read(0, 0, 100), ms(0));
    take(&mut b, ms(0));
    b.queues[0].e.service = 100;
    b.t = ms(30);
    let (slow, ms_held) = b.is_slow_for_test(0);
    assert!(slow);
    assert_eq!(ms_held, 30);
    b.queues[0].e.service = 9000;
    assert!(!b.is_slow_for_test(0).0);
    // Under 1 ms: seekiness decides, and one seek (8 ms) is charged.
    b.t = at_us(500);
    b.queues[0].seek_history = u32::MAX;
    assert_eq!(b.is_slow_for_test(0), (true, 8));
}

// ---- peak rate (bfq_update_peak_rate, bfq_update_rate_reset) ----

#[test]
fn peak_rate_starts_at_two_thirds_of_the_reference_and_sets_max_budget() {
    let b = bfq();
    assert_eq!(b.peak_rate, 14000 * 2 / 3);
    assert_eq!(Bfq::new(default_params(), true, 64).peak_rate, 33000 * 2 / 3);
    // bfq_calc_max_budget: rate * 1000 * 124 ms >> 16.
    assert_eq!(b.calc_max_budget(), (9333u64 * 1000 * 124 >> 16) as i64);
    // bfq_wr_duration: 14000 * 1750 / 9333 jiffies, within [750, 6250].
    assert_eq!(b.wr_duration(), (14000 * 1750 / 9333) as i64);
}

#[test]
fn a_sequential_window_of_a_second_updates_the_peak_rate() {
    // 100 MB/s sequential, 1 MiB requests each 10 ms, always one in the
    // device: after 1 s the window closes; weight min(8, 9*seq/n * 1) = 8
    // → divisor 2: peak = peak/2 + rate/2.
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0)]), false, 64);
    let mut t = 0;
    let mut id = 0;
    let mut sector = 0;
    let old = b.peak_rate as u64;
    for _ in 0..102 {
        b.insert(Request { nr_sectors: 2048, ..read(id, 0, sector) }, ms(t));
        let rq = take(&mut b, ms(t));
        id += 1;
        sector += 2048;
        t += 10;
        b.completed(&rq, ms(t));
    }
    // The first completion closed the first window (a completion rate far
    // below the largest request's: last_completion was long ago); the next
    // opened at 10 ms and closed at the dispatch at 1010 ms: 101 requests
    // of 2048 sectors in 1 s, 100 of them sequential after the first.
    let rate = ((101 * 2048u64) << 16) / 1_000_000;
    let weight = 8u64.min(9 * 100 / 101);
    let divisor = 10 - weight;
    assert_eq!(b.peak_rate as u64, old * (divisor - 1) / divisor + rate / divisor);
    assert_eq!(b.max_budget, b.calc_max_budget());
}

// ---- idling ----

#[test]
fn idling_rules_for_throughput_and_guarantees() {
    // bfq_better_to_idle, idling_boosts_thr_without_issues,
    // idling_needed_for_service_guarantees.
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0)]), false, 64);
    b.insert(read(0, 0, 100), ms(0));
    b.insert(write(1, 1, 900), ms(0));
    // Rotational, hw_tag unknown (-1, counted as queueing): a seeky queue
    // gives no throughput reason; it is not alone (the async queue is
    // busy) and the scenario is symmetric: no guarantee reason either.
    b.queues[0].seek_history = u32::MAX;
    assert!(!b.idling_boosts_thr_without_issues(0));
    assert!(!b.better_to_idle(0));
    // A sequential, I/O-bound queue with a short think time does give one
    // on a rotational disk, queueing or not.
    b.queues[0].seek_history = 0;
    assert!(b.better_to_idle(0));
    b.queues[0].io_bound = false;
    assert!(!b.better_to_idle(0), "not I/O bound: no");
    b.queues[0].io_bound = true;
    b.queues[0].seek_history = u32::MAX;
    b.hw_tag = 0; // rotational without queueing: idling boosts throughput
    assert!(b.better_to_idle(0));
    assert!(!b.better_to_idle(1), "async queues never idle");
    b.hw_tag = 1;
    b.queues[0].seek_history = 0; // sequential, I/O bound, short think time
    assert!(b.idling_boosts_thr_without_issues(0));
    let mut ssd = Bfq::new(params_with(&[("low_latency", 0.0)]), true, 64);
    ssd.insert(read(0, 0, 100), ms(0));
    ssd.insert(write(1, 1, 900), ms(0));
    ssd.hw_tag = 1;
    ssd.queues[0].seek_history = 0;
    assert!(!ssd.better_to_idle(0), "an SSD with command queueing does not idle for throughput");
    // Different weights busy: the heavier queue is idled for (its
    // guarantee), the lightest is not (bfq_asymmetric_scenario).
    let mut ssd = Bfq::new(params_with(&[("low_latency", 0.0)]), true, 64);
    ssd.set_ioprio(0, IoPrio { class: IoClass::Be, level: 0 });
    ssd.insert(read(0, 0, 100), ms(0));
    ssd.insert(read(1, 1, 900_000), ms(0));
    ssd.hw_tag = 1;
    assert!(ssd.better_to_idle(0));
    assert!(!ssd.better_to_idle(1));
}

#[test]
fn a_lone_queue_is_idled_for() {
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0)]), true, 64);
    b.insert(read(0, 0, 100), ms(0));
    b.hw_tag = 1;
    assert!(b.idling_needed_for_service_guarantees(0), "tot_busy_queues == 1");
    let mut off = Bfq::new(params_with(&[("slice_idle", 0.0)]), false, 64);
    off.insert(read(0, 0, 100), ms(0));
    assert!(!off.better_to_idle(0), "slice_idle 0: never");
    let mut strict = Bfq::new(params_with(&[("strict_guarantees", 1.0), ("slice_idle", 0.0)]), true, 64);
    strict.insert(read(0, 0, 100), ms(0));
    assert!(strict.better_to_idle(0));
    assert_eq!(strict.p.slice_idle_ns, 8_000_000, "strict_guarantees raises slice_idle to 8 ms");
}

#[test]
fn the_idle_timer_is_slice_idle_two_ms_if_seeky_twenty_if_raised() {
    // bfq_arm_slice_timer.
    let arm = |seeky: bool, wr: bool, asym: bool| {
        let mut b = Bfq::new(params_with(&[("low_latency", wr as u8 as f64)]), false, 64);
        if asym {
            // This queue is the heavier one (the lightest sees no asymmetry).
            b.set_ioprio(0, IoPrio { class: IoClass::Be, level: 0 });
            b.insert(read(3, 3, 9000), ms(0));
        }
        b.insert(read(0, 0, 100), ms(0));
        let id = b.bics[0].sync_q.unwrap();
        b.hw_tag = 0;
        if seeky {
            b.queues[id].seek_history = u32::MAX;
        }
        b.t = ms(10);
        b.arm_slice_timer(id);
        b.idle_timer.unwrap().ns() - ms(10).ns()
    };
    assert_eq!(arm(false, false, false), 8_000_000);
    assert_eq!(arm(true, false, false), 2_000_000);
    assert_eq!(arm(true, false, true), 8_000_000, "asymmetric: the full slice");
    assert_eq!(arm(false, true, false), 20_000_000, "weight raised: at least 20 ms");
    assert_eq!(
        Bfq::new(params_with(&[("slice_idle", 20.0)]), false, 64).p.slice_idle_ns,
        20_000_000,
        "seed 004's slice_idle"
    );
}

#[test]
fn an_emptied_queue_idles_and_its_next_request_ends_the_wait() {
    // bfq_completed_request arms the timer; bfq_rq_enqueued cancels it.
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0)]), false, 64);
    b.hw_tag = 0;
    b.insert(read(0, 0, 100), ms(0));
    b.insert(read(9, 1, 900_000), ms(0));
    let rq = take(&mut b, ms(0));
    assert_eq!(rq.pid, 0);
    b.completed(&rq, ms(5));
    assert_eq!(b.idle_timer, Some(ms(13)));
    assert!(b.queues[0].wait_request);
    assert_eq!(b.dispatch(ms(6)), Dispatch::Nothing, "idling: the other queue waits");
    b.insert(Request { nr_sectors: 64, ..read(1, 0, 108) }, ms(7));
    assert_eq!(b.idle_timer, None);
    assert_eq!(take(&mut b, ms(7)).pid, 0);
}

#[test]
fn the_idle_timer_expires_the_queue_too_idle() {
    // bfq_idle_slice_timer_body → BFQQE_TOO_IDLE; the other queue goes.
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0)]), false, 64);
    b.hw_tag = 0;
    b.insert(read(0, 0, 100), ms(0));
    b.insert(read(9, 1, 900_000), ms(0));
    let rq = take(&mut b, ms(0));
    b.completed(&rq, ms(5));
    b.timer(ms(13));
    assert_eq!(b.in_service, None);
    assert!(b.queues[0].non_blocking_wait_rq, "expired while its process thinks");
    assert_eq!(take(&mut b, ms(13)).pid, 1);
}

#[test]
fn hw_tag_is_learned_from_32_samples() {
    // bfq_update_hw_tag: hw_tag = max in driver > 3, once 32 samples saw
    // more than 3 requests available.
    let mut b = bfq();
    for i in 0..8 {
        b.insert(read(i, i, 1000 * i as u64), ms(0));
    }
    b.rq_in_driver = 5;
    for _ in 0..33 {
        b.update_hw_tag();
    }
    assert_eq!(b.hw_tag, 1);
    let mut b = bfq();
    for i in 0..8 {
        b.insert(read(i, i, 1000 * i as u64), ms(0));
    }
    b.rq_in_driver = 1;
    for _ in 0..33 {
        b.update_hw_tag();
    }
    assert_eq!(b.hw_tag, 0, "never more than 3 in the driver");
}

// ---- weight raising and bursts ----

#[test]
fn a_new_sync_queue_is_raised_as_interactive() {
    // bfq_bfqq_handle_idle_busy_switch: idle for long (its budget timeout
    // is long ago), default weight → wr_coeff 30 for bfq_wr_duration.
    let mut b = bfq();
    b.insert(read(0, 0, 100), ms(0));
    let q = &b.queues[0];
    assert_eq!((q.wr_coeff, q.e.weight, q.wr_cur_max_time), (30, 1200, b.wr_duration()));
    assert_eq!(b.wr_busy_queues, 1);
    // Not with low_latency off, not for async queues.
    let mut off = Bfq::new(params_with(&[("low_latency", 0.0)]), false, 64);
    off.insert(read(0, 0, 100), ms(0));
    assert_eq!(off.queues[0].wr_coeff, 1);
    let mut b = bfq();
    b.insert(write(0, 0, 100), ms(0));
    assert_eq!(b.queues[0].wr_coeff, 1);
}

#[test]
fn interactive_raising_ends_after_its_service_budget() {
    // bfq_update_wr_data: max_service_from_wr (120000 sectors).
    let mut b = bfq();
    b.insert(read(0, 0, 100), ms(0));
    b.queues[0].service_from_wr = 120_001;
    b.insert(read(1, 0, 108), ms(0));
    take(&mut b, ms(1));
    assert_eq!(b.queues[0].wr_coeff, 1);
    assert_eq!(b.queues[0].e.weight, 40);
}

#[test]
fn eight_queues_in_180_ms_are_a_large_burst_and_get_no_raising() {
    // bfq_handle_burst, bfq_add_to_burst (bfq_large_burst_thresh 8,
    // bfq_burst_interval 180 ms).
    let mut b = bfq();
    for p in 0..8u32 {
        b.insert(read(p, p, 100_000 * p as u64), ms(10 * p as u64));
    }
    assert!(b.large_burst);
    assert!((0..8).all(|q| b.queues[q].in_large_burst));
    // The queues raised before the burst was known lose it at their next
    // dispatch (bfq_update_wr_data); new members are never raised.
    b.insert(read(8, 8, 900_000), ms(75));
    assert!(b.queues[8].in_large_burst);
    assert_eq!(b.queues[8].wr_coeff, 1);
    // Queues 190 ms apart are not a burst.
    let mut b = bfq();
    for p in 0..8u32 {
        b.insert(read(p, p, 100_000 * p as u64), ms(190 * p as u64));
        let rq = take(&mut b, ms(190 * p as u64));
        b.completed(&rq, ms(190 * p as u64 + 1));
    }
    assert!(!b.large_burst);
}

#[test]
fn a_periodic_low_rate_queue_becomes_soft_real_time() {
    // soft_rt in bfq_bfqq_handle_idle_busy_switch: not totally seeky,
    // now > soft_rt_next_start, nothing in flight, default weight → x3000
    // for bfq_wr_rt_max_time (300 ms).
    let mut b = bfq();
    b.insert(read(0, 0, 100), ms(0));
    let rq = take(&mut b, ms(0));
    b.completed(&rq, ms(1));
    b.timer(ms(30)); // raised: idles 20 ms, then expires too idle
    // Next request 100 ms later: 8 sectors in 1 ms of backlog is far
    // under 7000 sectors/s.
    b.insert(read(1, 0, 108), ms(100));
    let q = &b.queues[0];
    assert_eq!(q.wr_coeff, 30 * 100);
    assert_eq!(q.wr_cur_max_time, b.p.wr_rt_max_time_j);
    assert_eq!(b.p.wr_rt_max_time_j, 75);
}

#[test]
fn a_raised_newcomer_preempts_the_queue_in_service() {
    // The end of bfq_bfqq_handle_idle_busy_switch: a queue that may
    // preempt (in time, budget left) with at least the in-service
    // weight raising, a higher weight, or an in-service queue not worth
    // idling for, expires it with BFQQE_PREEMPTED.
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0)]), false, 64);
    for i in 0..4 {
        b.insert(read(i, 0, 100 + 8 * i as u64), ms(0));
    }
    take(&mut b, ms(0));
    assert_eq!(b.in_service, Some(0));
    b.set_ioprio(1, IoPrio { class: IoClass::Be, level: 0 });
    b.insert(read(9, 1, 900_000), ms(1)); // weight 80 > 40
    assert_eq!(b.in_service, None, "preempted");
    assert_eq!(take(&mut b, ms(1)).pid, 1);
}

// ---- injection ----

#[test]
fn a_queue_woken_three_times_by_another_learns_its_waker() {
    // bfq_check_waker: within 4 ms of the other queue's completion, three
    // times within 128 * slice_idle.
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0)]), false, 64);
    b.insert(read(0, 0, 100), ms(0));
    b.insert(read(1, 1, 900_000), ms(0));
    b.queues[1].has_short_ttime = false;
    for k in 0..3u64 {
        b.last_completed_rq_bfqq = Some(0);
        b.last_completion = ms(10 * k + 10).ns() as i64;
        b.check_waker(1, ms(10 * k + 12).ns() as i64);
    }
    assert_eq!(b.queues[1].waker, Some(0));
    assert_eq!(b.queues[0].woken, vec![1]);
}

#[test]
fn while_idling_the_same_process_async_queue_is_served_first() {
    // bfq_select_queue, idling branch: bic->bfqq[0] with this process's
    // own next request goes before anything else.
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0)]), false, 64);
    b.hw_tag = 0;
    b.insert(read(0, 0, 100), ms(0));
    b.insert(read(5, 1, 5000), ms(0));
    let rq = take(&mut b, ms(0));
    b.completed(&rq, ms(1)); // idling for pid 0
    b.insert(write(1, 0, 900), ms(2));
    let w = take(&mut b, ms(2));
    assert_eq!((w.pid, w.dir), (0, crate::request::Dir::Write));
    assert_eq!(b.in_service, Some(0), "still in service: injected, not switched");
}

#[test]
fn the_inject_limit_grows_while_injection_does_not_slow_the_queue() {
    // bfq_update_inject_limit: below 3/2 of the baseline service time and
    // the limit not above max_rq_in_driver → +1; at or above → −1.
    let mut b = bfq();
    b.insert(read(0, 0, 100), ms(0));
    b.queues[0].last_serv_time_ns = 1_000_000;
    b.queues[0].inject_limit = 1;
    b.max_rq_in_driver = 4;
    b.rqs_injected = true;
    b.rq_in_driver = 2;
    b.last_empty_occupied_ns = 0;
    b.t = at_us(1200);
    b.update_inject_limit(0, b.t);
    assert_eq!(b.queues[0].inject_limit, 2);
    b.rqs_injected = true;
    b.t = at_us(1600);
    b.update_inject_limit(0, b.t);
    assert_eq!(b.queues[0].inject_limit, 1);
    assert!(!b.rqs_injected && b.waited_rq.is_none());
}

// ---- tags (bfq_limit_depth, bfq_update_depths) ----

#[test]
fn async_and_sync_write_tags_are_limited() {
    let b = Bfq::new(default_params(), false, 256); // shift 6: 64 bits a word
    assert_eq!(b.word_depths, [[32, 48], [12, 24]]);
    let tags = Sbitmap::new(256);
    assert_eq!(b.limit_depth(&read(0, 0, 0), &tags), None, "sync reads: full depth");
    assert_eq!(b.limit_depth(&write(0, 0, 0), &tags), Some(32));
    assert_eq!(b.limit_depth(&Request { sync: true, ..write(0, 0, 0) }, &tags), Some(48));
}

#[test]
fn a_queue_over_its_share_of_tags_is_cut_to_one_bit_per_word() {
    // bfqq_request_over_limit: allocated >= nr_requests * weight / wsum.
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0)]), false, 64);
    let tags = Sbitmap::new(64);
    b.insert(read(0, 0, 100), ms(0));
    b.insert(read(1, 1, 9000), ms(0));
    // Two queues of weight 40: each may hold 32 of 64 tags.
    b.queues[0].allocated = 31;
    assert_eq!(b.limit_depth(&read(2, 0, 0), &tags), None);
    b.queues[0].allocated = 32;
    assert_eq!(b.limit_depth(&read(2, 0, 0), &tags), Some(1));
}

#[test]
fn exit_of_the_in_service_process_ends_its_turn() {
    // bfq_exit_icq → bfq_exit_bfqq: __bfq_bfqq_expire if in service.
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0)]), false, 64);
    b.hw_tag = 0;
    b.insert(read(0, 0, 100), ms(0));
    b.insert(read(5, 1, 5000), ms(0));
    let rq = take(&mut b, ms(0));
    b.completed(&rq, ms(1));
    assert!(b.idle_timer.is_some());
    b.exit_process(0, ms(2));
    assert_eq!((b.in_service, b.idle_timer), (None, None));
    assert_eq!(b.queues[0].process_refs, 0);
    assert!(!b.better_to_idle(0), "bfqq_process_refs 0: no idling");
    assert_eq!(take(&mut b, ms(2)).pid, 1);
}

#[test]
fn readers_share_the_disk_and_a_writer_is_not_starved_forever() {
    let mut b = bfq();
    let done = harness(&mut b, 3, 1, 1, 1, 5000);
    assert!(done[..3].iter().all(|&d| d > 1000), "{done:?}");
    assert!(done[3] > 0, "{done:?}");
    // I/O-bound sequential readers (no think time) are idled for: each
    // gets turns of timeout_sync, charged for their time: equal shares.
    // (hw_tag is never learned here: the in-service queue holds fewer
    // than 3 requests, so bfq_update_hw_tag takes no sample.)
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0)]), false, 64);
    let done = harness(&mut b, 4, 0, 1, 0, 5000);
    assert_eq!(b.hw_tag, -1);
    let (lo, hi) = (done.iter().min().unwrap(), done.iter().max().unwrap());
    assert!(*hi as f64 / *lo as f64 <= 1.1, "{done:?}");
}

#[test]
fn three_lockstep_readers_started_together_end_in_one_shared_queue() {
    // Three readers whose think time equals the service time: at most 3
    // requests are ever available, so hw_tag stays unknown and the device
    // counts as queueing; the readers are not I/O bound (idle half the
    // time), so idling does not pay (idling_boosts_thr_without_issues) —
    // and the queues, created together, are stably merged after 600 ms
    // (merge.rs). The shared queue serves them by position
    // (bfq_choose_req): none starves. (Before stable merging was modelled,
    // each request was a turn and two readers in step got about twice the
    // third's share.)
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0)]), false, 64);
    let done = harness(&mut b, 3, 0, 1, 1, 2000);
    assert_eq!(b.hw_tag, -1);
    let shared = b.bics[0].sync_q;
    assert!(shared.is_some() && (0..3).all(|p| b.bics[p].sync_q == shared), "{}", b.dump());
    let (lo, hi) = (done.iter().min().unwrap(), done.iter().max().unwrap());
    assert!(*lo as f64 >= 0.5 * *hi as f64, "{done:?}");
}


// ---- Stable merging (bfq_do_or_sched_stable_merge, bfq_setup_cooperator,
// bfq_setup_merge, bfq_merge_bfqqs) ----

/// Serves one request at a time for `pids` closed-loop sync readers, each
/// in its own region, until `until_ms`; every process issues its next
/// request 1 ms after a completion. Returns the completions per process.
fn closed_readers(b: &mut Bfq, pids: &[u32], start_ms: &[u64], svc_ms: u64, until_ms: u64) -> Vec<u32> {
    let mut done = vec![0u32; pids.len()];
    let mut next_id = 1000u32;
    let mut pos: Vec<u64> = pids.iter().map(|&p| 2_000_000 * (p as u64 + 1)).collect();
    let mut wake: Vec<Option<u64>> = start_ms.iter().map(|&s| Some(s)).collect();
    let mut now = 0u64;
    while now < until_ms {
        for (i, &p) in pids.iter().enumerate() {
            if wake[i].is_some_and(|w| w <= now) {
                b.insert(read(next_id, p, pos[i]), ms(now));
                next_id += 1;
                pos[i] += 8;
                wake[i] = None;
            }
        }
        b.timer(ms(now));
        if let Dispatch::Request(rq) = b.dispatch(ms(now)) {
            now += svc_ms;
            b.completed(&rq, ms(now));
            let i = pids.iter().position(|&p| p == rq.pid).unwrap();
            done[i] += 1;
            wake[i] = Some(now + 1);
        } else {
            now += 1;
        }
    }
    done
}

#[test]
fn queues_created_within_the_burst_interval_are_merged_late() {
    // bfq_do_or_sched_stable_merge: queues 1-3 come within 180 ms of queue
    // 0 and schedule a merge with it; bfq_setup_cooperator does it after
    // bfq_late_stable_merging (600 ms), while raised queues are busy (so
    // idling does not pay, idling_boosts_thr_without_issues).
    let mut b = bfq();
    closed_readers(&mut b, &[0, 1, 2, 3], &[0, 20, 40, 60], 10, 500);
    assert_eq!(b.last_bfqq_created, Some(0));
    assert_eq!(b.queues[0].stable_ref + b.queues.iter().filter(|q| q.new_bfqq == Some(0)).count() as u32, 3);
    assert!((1..4).all(|p| b.bics[p].sync_q != Some(0)), "no merge before 600 ms");
    let done = closed_readers(&mut b, &[0, 1, 2, 3], &[500; 4], 10, 1500);
    assert!((0..4).all(|p| b.bics[p].sync_q == Some(0)), "all in queue 0\n{}", b.dump());
    assert!((0..4).all(|p| b.bics[p].stably_merged));
    assert_eq!(b.queues[0].process_refs, 4);
    assert!(!b.queues[0].bic_set, "a shared queue belongs to no one process");
    assert!((1..4).all(|q| b.queues[q].freed && b.queues[q].process_refs == 0));
    // The shared queue keeps the weight raising it had.
    assert!(b.queues[0].wr_coeff > 1);
    assert!(done.iter().all(|&d| d > 0));
}

#[test]
fn a_queue_created_after_the_burst_interval_is_not_merged() {
    // Created 200 ms after the last one: it only becomes the last created
    // if that one is older than 600 ms; between 180 and 600 ms it is left
    // alone.
    let mut b = bfq();
    closed_readers(&mut b, &[0, 1], &[0, 200], 10, 2000);
    assert_eq!(b.bics[1].sync_q, Some(1));
    assert_eq!(b.bics[1].stable_merge, None);
    assert_eq!(b.last_bfqq_created, Some(0));
    closed_readers(&mut b, &[2], &[2100], 10, 2200);
    assert_eq!(b.last_bfqq_created, Some(2), "queue 0 is older than 600 ms");
}

#[test]
fn a_scheduled_merge_is_dropped_when_idling_pays_for_throughput() {
    // Without low_latency nothing is raised: on a rotational disk without
    // command queueing idling boosts throughput, so bfq_setup_cooperator
    // drops the merge (and its stable reference).
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0)]), false, 64);
    b.hw_tag = 0;
    closed_readers(&mut b, &[0, 1], &[0, 20], 10, 1500);
    assert_eq!(b.bics[1].sync_q, Some(1));
    assert_eq!(b.bics[1].stable_merge, None);
    assert_eq!(b.queues[0].stable_ref, 0);
    assert!(!b.bics[1].stably_merged);
}

#[test]
fn non_rotational_queues_with_queueing_merge_at_once() {
    // bfq_do_early_stable_merge: nonrot_with_queueing starts as
    // blk_queue_nonrot (bfq_init_queue), so an SSD's second queue within
    // the burst interval is merged when it is created.
    let mut b = Bfq::new(default_params(), true, 64);
    b.insert(read(0, 0, 100), ms(0));
    b.insert(read(1, 1, 900_000), ms(10));
    assert_eq!(b.bics[1].sync_q, Some(0));
    assert_eq!(b.rq_queue[&1], 0);
    assert_eq!(b.queues[0].process_refs, 2);
    assert!(b.bics[0].stably_merged && b.bics[1].stably_merged);
}

#[test]
fn a_merged_process_that_exits_leaves_the_shared_queue_to_the_others() {
    // bfq_exit_bfqq → bfq_release_process_ref on the shared queue; a
    // process that exits before its redirection gives back the reference
    // bfq_setup_merge took (bfq_put_cooperator).
    let mut b = Bfq::new(default_params(), true, 64);
    b.insert(read(0, 0, 100), ms(0));
    b.insert(read(1, 1, 900_000), ms(10));
    for rq in [take(&mut b, ms(11)), take(&mut b, ms(12))] {
        b.completed(&rq, ms(20));
    }
    b.exit_process(1, ms(30));
    assert_eq!(b.queues[0].process_refs, 1);
    assert!(!b.queues[0].freed);
    b.insert(read(2, 0, 108), ms(31));
    assert_eq!(b.rq_queue[&2], 0);
    // Set up but not yet done: the target loses the reference again.
    let mut b = bfq();
    b.insert(read(0, 0, 100), ms(0));
    b.insert(read(1, 1, 900_000), ms(10));
    assert_eq!(b.setup_merge(1, 0), Some(0));
    assert_eq!(b.queues[0].process_refs, 2);
    b.exit_process(1, ms(20));
    assert_eq!(b.queues[0].process_refs, 1);
    assert_eq!(b.queues[0].stable_ref, 0, "the scheduled merge's reference is given back too");
}

// ---- close cooperators (issue 25) ----

/// Queue 0 in service (its first request just dispatched) and queue 2
/// busy far away; `pid`'s first request comes at `sector`.
fn cooperator_setup(at_ms: u64, sector: u64) -> Bfq {
    let mut b = Bfq::new(params_with(&[("low_latency", 0.0)]), false, 64);
    b.insert(read(0, 0, 1000), ms(0));
    b.insert(read(1, 2, 5_000_000), ms(0));
    let rq = take(&mut b, ms(0));
    assert_eq!(rq.pid, 0);
    b.insert(read(2, 1, sector), ms(at_ms));
    b
}

#[test]
fn a_new_queue_near_the_in_service_queue_joins_it() {
    // bfq_setup_cooperator: a request within BFQQ_CLOSE_THR (8192 sectors)
    // of where the in-service queue's last request ended (in_serv_last_pos)
    // redirects its process to that queue at insertion, both being sync,
    // not seeky, of one class, and early in their lives.
    let b = cooperator_setup(1, 1008 + 8000);
    assert_eq!(b.bics[1].sync_q, Some(0), "{}", b.dump());
    assert_eq!(b.rq_queue[&2], 0);
    assert!(b.queues[0].coop && !b.bics[1].stably_merged);
    // Farther than the threshold: a queue of its own.
    let b = cooperator_setup(1, 1008 + 9000);
    assert_eq!(b.bics[1].sync_q, Some(b.rq_queue[&2]));
    assert_ne!(b.rq_queue[&2], 0);
}

#[test]
fn a_queue_served_for_more_than_a_tenth_of_a_second_takes_no_cooperator() {
    // bfq_too_late_for_merging: service since it last became backlogged,
    // the first of it more than HZ/10 (25 jiffies) ago.
    let b = cooperator_setup(96, 1016);
    assert_eq!(b.rq_queue[&2], 0, "tick 24: still early");
    let b = cooperator_setup(104, 1016);
    assert_ne!(b.rq_queue[&2], 0, "tick 26: too late");
}

#[test]
fn a_cooperator_is_found_by_its_next_request_in_the_position_tree() {
    // bfq_find_close_cooperator: not the in-service queue but queue 2,
    // whose next request (in the rq_pos_tree) is within 8192 sectors.
    let b = cooperator_setup(1, 5_000_000 - 4000);
    let far = b.bics[2].sync_q.unwrap();
    assert_eq!(b.bics[1].sync_q, Some(far), "{}", b.dump());
    assert!(b.queues[far].coop);
    assert_eq!(b.queues[far].pos_key, Some(5_000_000 - 4000), "keyed by its new next request");
}

#[test]
fn a_shared_queue_never_becomes_a_waker_and_is_split_once_seeky() {
    // bfq_completed_request: a coop queue's completion leaves
    // last_completed_rq_bfqq empty. __bfq_bfqq_expire marks a seeky coop
    // queue split_coop; bfq_init_rq then gives the next request's process
    // a queue of its own again (bfq_split_bfqq).
    let mut b = cooperator_setup(1, 1016);
    assert!(b.queues[0].coop);
    let rq = *b.queues[0].rqs.rq(b.queues[0].next_rq.unwrap());
    b.completed(&read(0, 0, 1000), ms(2));
    assert_eq!(b.last_completed_rq_bfqq, None, "a shared queue is not a waker");
    let rq = take_pid(&mut b, ms(2), rq.pid);
    b.completed(&rq, ms(3));
    b.queues[0].seek_history = u32::MAX;
    b.expire_inner(0, Reason::NoMoreRequests);
    assert!(b.queues[0].split_coop);
    b.insert(read(9, 1, 900_000), ms(4));
    let q = b.rq_queue[&9];
    assert_ne!(q, 0, "split off");
    assert_eq!(b.bics[1].sync_q, Some(q));
    assert_eq!(b.queues[0].process_refs, 1);
}

/// Dispatch until `pid`'s request comes out.
fn take_pid(b: &mut Bfq, now: SimTime, pid: u32) -> Request {
    loop {
        let rq = take(b, now);
        if rq.pid == pid {
            return rq;
        }
        b.completed(&rq, now);
    }
}
